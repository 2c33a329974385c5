#!/usr/bin/env bash
# shellcheck disable=SC2154 # the NAME_* variables of a cluster are set by rp_cluster_start (lib.sh)
# regress/t/mirror_canary.sh: the mirror fails closed on what the destination rejects and on
# destructive schema changes, and never shows a row value while doing so.
#
# Proves G3 (fail-closed: exit 3 with a named reason, nothing past the last committed batch
# acknowledged, the rerun resumes where the last batch ended) and G4 (value-free: the
# canary value is in no log) for the PostgreSQL mirror sink:
#   (a) the destination's copy of canary_t has CHECK constraint no_canary that rejects the
#       canary row (md5(v) <> md5 of the canary, so our own DDL never spells the canary).
#       A run reaching that row exits 3 naming SQLSTATE 23514, the table and the constraint;
#       the destination holds nothing of the halting batch, its replicant.checkpoint did not
#       move and the slot's confirmed_flush_lsn is at or behind it. A second run halts the
#       same way. After ALTER TABLE ... DROP CONSTRAINT the rerun completes and source and
#       destination are equal.
#   (b) a destination unique index that the source does not have: exit 3 naming SQLSTATE
#       23505 and the index (the server's DETAIL, "Key (...)=(value)", is dropped).
#   (c) ALTER TABLE canary_t DROP COLUMN on the source: exit 3 naming the table and the
#       column, twice, with nothing acknowledged; --on-destructive=apply drops the column on
#       the destination and completes, source == destination.
# The canary is in text, jsonb and bytea columns and in a text primary key of every row.
#
# The logs searched: every consumer run's stderr (with -v), the source server log
# (log_min_messages = debug1), the consumer's state files and the destination server log.
# The destination runs with log_statement = 'all' and log_parameter_max_length = 0: every
# SQL text the consumer sends is logged (a value spliced into SQL would show), while bind
# parameters and COPY data, which carry the values by design, are not. It also runs with
# log_error_verbosity = terse: by default the server itself adds DETAIL ("Failing row
# contains (...)") and CONTEXT ("COPY canary_t, line 1: ...") with the row to its own error
# reports; that is the destination DBA's setting, outside the consumer's control (the
# consumer cannot change it without superuser), so it is switched off here and the test
# checks what the consumer controls: its SQL text, its stderr and its state.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=regress/lib.sh
. "$here/../lib.sh"
export PATH="$RP_ROOT/consumer:$RP_BINDIR:$PATH"  # the consumer as built here, then the server's tools

CANARY='CANARY-9f86d081'
CANARY_SQL="'CANARY-' || '9f86d081'"
CANARY_MD5=$(printf '%s' "$CANARY" | md5sum | cut -d' ' -f1)
SLOT=canary_mirror
work=$(mktemp -d /tmp/rp-mirror-canary.XXXXXX)
status=1
cleanup() { rp_e2e_cleanup $?; }
trap cleanup EXIT
fail() { rp_e2e_fail mirror_canary '' 0 "$*"; }

started=$SECONDS
rp_cluster_start src "log_min_messages = debug1"
rp_cluster_start dst "log_statement = 'all'" "log_parameter_max_length = 0" "log_error_verbosity = terse"

rp_psql src <<SQL >/dev/null
CREATE FUNCTION canary() RETURNS text IMMUTABLE LANGUAGE sql AS \$\$ SELECT $CANARY_SQL \$\$;
CREATE TABLE canary_t (id int PRIMARY KEY, v text, doc jsonb, blob bytea, dropme numeric, tag int);
CREATE TABLE canary_k (k text PRIMARY KEY, secret text, n int);
CREATE TABLE fence (id serial PRIMARY KEY);
SQL
# the destination's canary_t: as the source's, plus the constraint that rejects the canary
rp_psql dst <<SQL >/dev/null
CREATE TABLE public.canary_t (id int PRIMARY KEY, v text, doc jsonb, blob bytea, dropme numeric, tag int,
                              CONSTRAINT no_canary CHECK (md5(coalesce(v, '')) <> '$CANARY_MD5'));
SQL
replicant -d "$src_CONNSTR" -S "$SLOT" --create-slot

dropme_col=", dropme" dropme_val=", g * 1.5"
# rows first..last: the canary inside the values (v is the canary itself when $3 is "bare")
insert_rows() {
	local v="canary() || '-' || g"
	[[ ${3:-} == bare ]] && v="canary()"
	rp_psql src -c "INSERT INTO canary_t (id, v, doc, blob, tag$dropme_col)
	                SELECT g, $v, jsonb_build_object('s', canary(), 'g', g), convert_to(canary(), 'UTF8'), 0$dropme_val
	                FROM generate_series($1, $2) g" \
		-c "INSERT INTO canary_k SELECT canary() || '-' || g, canary(), g FROM generate_series($1, $2) g" >/dev/null
}
# a committed transaction after everything else; prints a position past its start
fence() { rp_psql src -Atc "INSERT INTO fence DEFAULT VALUES" -c "SELECT pg_current_wal_lsn()"; }

runs=0
# consumer EXPECTED_STATUS ARG...: run replicant to the sink, stderr kept in $work/run-N.err
consumer() {
	local expect=$1 rc=0
	shift
	runs=$((runs + 1))
	err=$work/run-$runs.err
	replicant -v -d "$src_CONNSTR" -S "$SLOT" --start -n --sink "postgres:$dst_CONNSTR" --create-tables \
		--state-dir "$work/state" "$@" 2>"$err" || rc=$?
	if ((rc != expect)); then
		cat "$err"
		fail "run $runs (replicant $*) exited with $rc, expected $expect"
	fi
}
err_has() {
	grep -qF -- "$1" "$err" || { cat "$err"; fail "run $runs: stderr does not say: $1"; }
}
dst_ckpt() { rp_psql dst -Atc "SELECT end_lsn FROM replicant.checkpoint WHERE slot = '$SLOT'"; }
# G2/G3: the slot is at or behind the destination's checkpoint
acked_within() {
	local ok
	ok=$(rp_psql src -Atc "SELECT confirmed_flush_lsn <= '$1' FROM pg_replication_slots WHERE slot_name = '$SLOT'")
	[[ $ok == t ]] || fail "$2: the slot acknowledged past the destination checkpoint $1"
}
same() {
	local t=$1 q a b
	q="SELECT count(*) || ' ' || md5(coalesce(string_agg(x::text, E'\\n' ORDER BY x::text COLLATE \"C\"), '')) FROM public.$t x"
	a=$(rp_psql src -Atc "$q")
	b=$(rp_psql dst -Atc "$q")
	[[ $a == "$b" ]] || fail "$2: table $t differs (source $a, destination $b)"
}

# ---- a clean start: rows with the canary inside their values go through
insert_rows 1 20
end=$(fence)
consumer 0 -E "$end"
same canary_t "clean run"
same canary_k "clean run"
[[ $(rp_psql dst -Atc "SELECT count(*) FROM canary_k WHERE md5(secret) = '$CANARY_MD5'") == 20 ]] ||
	fail "the canary did not reach the destination: the log search below would prove nothing"

# ---- (a) the CHECK constraint rejects the canary row
insert_rows 21 30                 # a transaction before it, in the same batch
insert_rows 31 31 bare            # v is the canary: rejected
insert_rows 32 40                 # and transactions after it
rp_psql src -c "UPDATE canary_k SET n = -n" -c "DELETE FROM canary_k WHERE k LIKE '%-1_'" >/dev/null
end=$(fence)
ck_before=$(dst_ckpt)
for attempt in 1 2; do
	consumer 3 -E "$end"
	err_has 'SQLSTATE 23514 (check_violation)'
	err_has 'canary_t'
	err_has 'constraint "no_canary"'
	err_has 'halted (sink)'
	[[ $(dst_ckpt) == "$ck_before" ]] || fail "(a) attempt $attempt: the destination checkpoint moved from $ck_before"
	acked_within "$ck_before" "(a) attempt $attempt"
	n=$(rp_psql dst -Atc "SELECT count(*) FROM canary_t WHERE id > 20")
	((n == 0)) || fail "(a) attempt $attempt: $n rows of the halting batch are in the destination"
	[[ $(rp_psql dst -Atc "SELECT count(*) FROM canary_k WHERE n < 0") == 0 ]] ||
		fail "(a) attempt $attempt: a later transaction of the halting batch is in the destination"
	[[ $attempt == 1 ]] && first_halt=$(grep 'error:' "$err")
done
[[ $(grep 'error:' "$err") == "$first_halt" ]] || fail "(a) the second run halted differently: $(grep 'error:' "$err")"
rp_psql dst -c "ALTER TABLE public.canary_t DROP CONSTRAINT no_canary" >/dev/null
consumer 0 -E "$end"
same canary_t "(a) after DROP CONSTRAINT"
same canary_k "(a) after DROP CONSTRAINT"
ck_a=$(dst_ckpt)
[[ $(rp_psql dst -Atc "SELECT '$ck_a'::pg_lsn >= '$end'") == t ]] || fail "(a) checkpoint $ck_a is not past $end"

# ---- (b) a destination unique index the source does not have
rp_psql dst -c "CREATE UNIQUE INDEX canary_k_n_uniq ON public.canary_k (n)" >/dev/null
rp_psql src -c "INSERT INTO canary_k SELECT canary() || '-dup-' || g, canary(), 7 FROM generate_series(1, 2) g" >/dev/null
end=$(fence)
ck_before=$(dst_ckpt)
consumer 3 -E "$end"
err_has 'SQLSTATE 23505 (unique_violation)'
err_has 'canary_k'
err_has 'canary_k_n_uniq'
[[ $(dst_ckpt) == "$ck_before" ]] || fail "(b) the destination checkpoint moved"
acked_within "$ck_before" "(b)"
rp_psql dst -c "DROP INDEX public.canary_k_n_uniq" >/dev/null
consumer 0 -E "$end"
same canary_k "(b) after DROP INDEX"

# ---- (c) a destructive schema change: DROP COLUMN on the source
rp_psql src -c "ALTER TABLE canary_t DROP COLUMN dropme" >/dev/null
dropme_col='' dropme_val=''
insert_rows 1000 1010
rp_psql src -c "UPDATE canary_t SET tag = tag + 1 WHERE id <= 5" >/dev/null
end=$(fence)
ck_before=$(dst_ckpt)
for attempt in 1 2; do
	consumer 3 -E "$end"
	err_has 'destructive schema change of table "public"."canary_t"'
	err_has 'column "dropme" dropped'
	err_has 'halted (schema_change)'
	[[ $(dst_ckpt) == "$ck_before" ]] || fail "(c) attempt $attempt: the destination checkpoint moved"
	acked_within "$ck_before" "(c) attempt $attempt"
	[[ $(rp_psql dst -Atc "SELECT count(*) FROM canary_t WHERE id >= 1000") == 0 ]] ||
		fail "(c) attempt $attempt: rows after the schema change are in the destination"
done
[[ $(rp_psql dst -Atc "SELECT count(*) FROM pg_attribute WHERE attrelid = 'public.canary_t'::regclass AND attname = 'dropme' AND NOT attisdropped") == 1 ]] ||
	fail "(c) the halted runs dropped the destination's column"
consumer 0 -E "$end" --on-destructive=apply
[[ $(rp_psql dst -Atc "SELECT count(*) FROM pg_attribute WHERE attrelid = 'public.canary_t'::regclass AND attname = 'dropme' AND NOT attisdropped") == 0 ]] ||
	fail "(c) --on-destructive=apply did not drop the column on the destination"
same canary_t "(c) after --on-destructive=apply"
same canary_k "(c) after --on-destructive=apply"
ck=$(dst_ckpt)
acked_within "$ck" "the end"

# ---- the search
rp_psql src -c "SELECT pg_sleep(0.3)" >/dev/null # let the walsenders' last words reach the log
searched=("$work"/run-*.err "$src_LOG" "$dst_LOG")
while IFS= read -r -d '' f; do searched+=("$f"); done < <(find "$work/state" -type f -print0)
# the search is not vacuous: the destination log has the consumer's statements and the error
grep -q 'statement: COPY' "$dst_LOG" || fail "the destination log has no statements (log_statement = 'all' is off?)"
grep -q 'violates check constraint "no_canary"' "$dst_LOG" || fail "the destination log lacks the check violation"
leaks=$(grep -alF -- "$CANARY" "${searched[@]}" || true)
[[ -z $leaks ]] || { grep -aF -- "$CANARY" "${searched[@]}" | cut -c 1-300 | head -n 5; fail "the canary leaked into: $leaks"; }
leaks=$(grep -alF -- "9f86d081" "${searched[@]}" || true)
[[ -z $leaks ]] || fail "part of the canary leaked into: $leaks"
# bytea and jsonb spellings of the canary
hex=$(printf '%s' "$CANARY" | od -An -tx1 | tr -d ' \n')
leaks=$(grep -ailF -- "$hex" "${searched[@]}" || true)
[[ -z $leaks ]] || fail "the canary's hex leaked into: $leaks"

status=0
printf 'PASS mirror_canary: %d runs; check and unique violations and DROP COLUMN halt with exit 3 naming SQLSTATE, table, constraint or column; checkpoint and slot held; reruns complete equal; canary in none of %d files searched (%d destination log lines) (%ds)\n' \
	"$runs" "${#searched[@]}" "$(wc -l <"$dst_LOG")" "$((SECONDS - started))"
