#!/usr/bin/env bash
# shellcheck disable=SC2154 # the NAME_* variables of a cluster are set by rp_cluster_start (lib.sh)
# regress/t/verify_mirror.sh: `replicant verify` compares a streaming mirror with its source.
#
# A mirror (--create-slot --snapshot --start --create-tables) of five tables: a, b (int keys),
# c (a two-column key), d (untouched throughout) and n (no key, REPLICA IDENTITY FULL, rows in
# duplicate pairs), plus w, the workload's table, whose apply on the destination waits behind a
# SHARE lock (reads pass it) so that the mirror lags behind it until verify waits.
#   1. caught up: verify exits 0, every table "equal".
#   2. verify started while the mirror lags under a running workload on w (proved: the source's
#      WAL position verify printed at its start is past the checkpoint it printed, verify -v says
#      w's chunk differed on the first read, and the workload still runs then) exits 0 once the
#      mirror caught up: the lock is released, the mirror catches up while the workload goes on,
#      then the workload stops.
#   3. planted on the destination: a changed value in a, a deleted row in b, an extra row in c
#      (past the source's last key), one of n's duplicate pairs halved: verify exits 1 naming
#      exactly a, b, c (with the right chunk numbers and row counts) and n, not d or w; the
#      --keys-file holds exactly the three planted keys (a tab in c's escaped); no planted value or key is in
#      verify's output (G4: the canary).
#   4. exit statuses: 2 for usage errors, 3 when the destination cannot be reached or the slot has
#      no checkpoint row, 4 when the mirror is held back past --recheck-timeout (the chunk and
#      the table "not compared"), 1 with the table named when a table is missing on the
#      destination (also under a --schema-prefix the mirror did not use).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=regress/lib.sh
. "$here/../lib.sh"
export PATH="$RP_ROOT/consumer:$RP_BINDIR:$PATH"

work=$(mktemp -d /tmp/rp-verify-mirror.XXXXXX)
SLOT=verify_mirror
consumer_pid=
workload_pid=
verify_pid=
locker_pid=
status=1

cleanup() { rp_e2e_cleanup $? consumer_pid workload_pid verify_pid locker_pid; }
trap cleanup EXIT

fail() { rp_e2e_fail verify_mirror "$work/*.err $work/*.verr" 10 "$*"; }

started=$SECONDS
rp_cluster_start src
rp_cluster_start dst

rp_psql src <<'SQL' >/dev/null
CREATE TABLE a (id int PRIMARY KEY, v text, at timestamptz, f float8);
CREATE TABLE b (id int PRIMARY KEY, v int, by bytea);
CREATE TABLE c (k1 int, k2 text, v numeric, PRIMARY KEY (k1, k2));
CREATE TABLE d (id bigint PRIMARY KEY, v text, iv interval);
CREATE TABLE n (a int, b text);
ALTER TABLE n REPLICA IDENTITY FULL;
CREATE TABLE w (id int PRIMARY KEY, v int NOT NULL);
CREATE TABLE fence (at timestamptz);
INSERT INTO a SELECT i, 'a' || i, '2020-01-01'::timestamptz + i * interval '1 minute', i / 7.0 FROM generate_series(1, 5000) i;
INSERT INTO b SELECT i, i * 3, decode(md5(i::text), 'hex') FROM generate_series(1, 5000) i;
INSERT INTO c SELECT i % 30, 'k' || i, i * 1.5 FROM generate_series(1, 3000) i;
INSERT INTO d SELECT i, 'd' || i, i * interval '1 second' FROM generate_series(1, 4000) i;
INSERT INTO n SELECT i, 'n' || i FROM generate_series(1, 300) i, generate_series(1, 2);
INSERT INTO w SELECT i, 0 FROM generate_series(1, 2000) i;
SQL

replicant -d "$src_CONNSTR" -S "$SLOT" --create-slot --snapshot --start --create-tables \
	--sink "postgres:$dst_CONNSTR" --state-dir "$work/state" -s 1 -v >"$work/consumer.out" 2>"$work/consumer.err" &
consumer_pid=$!

# caught_up: a fence transaction on the source, then wait until the mirror's checkpoint passed it
caught_up() {
	local fence ck
	fence=$(rp_psql src -Atc "INSERT INTO fence VALUES (now())" -c "SELECT pg_current_wal_insert_lsn()")
	for _ in $(seq 1 3000); do
		ck=$(rp_dst_checkpoint dst "$SLOT")
		[[ -n $ck && $(rp_psql src -Atc "SELECT '$ck'::pg_lsn >= '$fence'") == t ]] && return 0
		kill -0 "$consumer_pid" 2>/dev/null || fail "the mirror exited"
		sleep 0.1
	done
	fail "the mirror did not catch up with the fence at $fence in 300 s"
}

# run_verify NAME ARGS...: verify's exit status in $vrc, its output in $work/NAME.out/.err
run_verify() {
	local name=$1
	shift
	vrc=0
	replicant verify -d "$src_CONNSTR" --sink "postgres:$dst_CONNSTR" "$@" \
		>"$work/$name.out" 2>"$work/$name.verr" || vrc=$?
}

# ---- 1. caught up: equal
caught_up
run_verify equal --chunk-rows 1000
((vrc == 0)) || { cat "$work/equal.out" "$work/equal.verr"; fail "verify of a caught-up mirror exited $vrc"; }
for t in a b c d n w; do
	grep -q "^public\.$t: equal" "$work/equal.out" || fail "no \"public.$t: equal\" line"
done
# --duty: the rests are (100 - duty) / duty times the statements' time (the default 10: 9 times)
for duty in 20 100; do
	run_verify "duty$duty" --chunk-rows 500 --duty "$duty" -v
	((vrc == 0)) || fail "verify --duty $duty exited $vrc"
	line=$(grep -E '^replicant verify: statements took [0-9]+ ms, rests [0-9]+ ms \(--duty '"$duty"'\)$' "$work/duty$duty.verr") ||
		fail "verify -v --duty $duty: no statements/rests line"
	busy=$(sed -E 's/.*took ([0-9]+) ms.*/\1/' <<<"$line")
	rest=$(sed -E 's/.*rests ([0-9]+) ms.*/\1/' <<<"$line")
	if ((duty == 100)); then
		((rest == 0)) || fail "--duty 100 rested $rest ms"
	else
		((rest * 100 >= busy * (100 - duty) * 100 / duty * 95 / 100)) ||
			fail "--duty $duty: statements $busy ms, rests only $rest ms (want about $((busy * (100 - duty) / duty)))"
	fi
	printf 'verify --duty %d: statements %d ms, rests %d ms\n' "$duty" "$busy" "$rest"
done
grep -q '^7 tables: 7 equal, 0 different, 0 not compared$' "$work/equal.out" ||
	fail "unexpected summary: $(tail -n 1 "$work/equal.out")"
grep -q '^public\.a: equal (5000 rows, 6 chunks)$' "$work/equal.out" ||
	fail "a's line: $(grep '^public.a' "$work/equal.out")"
# -S names the slot the same way
run_verify equal_s --chunk-rows 1000 -S "$SLOT" -q --max-rate 200000
((vrc == 0)) || fail "verify -S $SLOT exited $vrc"
[[ $(wc -l <"$work/equal_s.out") == 1 ]] || fail "-q printed more than the summary"

# ---- 2. a lagging mirror under a running workload
# The mirror's apply of w waits behind a SHARE lock on the destination (reads pass it), so it
# lags for as long as the script says, however fast the machine is.
PGAPPNAME=vm_locker rp_psql dst -c "BEGIN; LOCK TABLE public.w IN SHARE MODE; SELECT pg_sleep(900);" \
	>/dev/null 2>&1 &
locker_pid=$!
for _ in $(seq 1 600); do
	[[ $(rp_psql dst -Atc "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a USING (pid)
	     WHERE a.application_name = 'vm_locker' AND l.mode = 'ShareLock' AND l.granted") == 1 ]] && break
	sleep 0.1
done
[[ $(rp_psql dst -Atc "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a USING (pid)
     WHERE a.application_name = 'vm_locker' AND l.mode = 'ShareLock' AND l.granted") == 1 ]] ||
	fail "the SHARE lock on the destination's w was not granted"
# the workload runs until $work/stop exists
(
	for i in $(seq 1 100000); do
		[[ -e $work/stop ]] && break
		rp_psql src -c "UPDATE w SET v = v + 1 WHERE id = $(((i * 37) % 2000 + 1))" >/dev/null 2>>"$work/workload.err" || break
	done
) &
workload_pid=$!
# the workload is under way and the mirror behind it
for _ in $(seq 1 600); do
	ck=$(rp_dst_checkpoint dst "$SLOT")
	lag=$(rp_psql src -Atc "SELECT pg_current_wal_lsn() - '$ck'::pg_lsn")
	((lag > 2000)) && break
	sleep 0.1
done
((lag > 2000)) || fail "the mirror never lagged"
replicant verify -d "$src_CONNSTR" --sink "postgres:$dst_CONNSTR" --chunk-rows 1000 --recheck-timeout 300 -v \
	>"$work/lag.out" 2>"$work/lag.verr" &
verify_pid=$!
# verify found w's first chunk different and waits for the checkpoint: let the mirror go on
for _ in $(seq 1 3000); do
	grep -q '^replicant verify: public\.w: chunk [0-9]* differs on the first read' "$work/lag.verr" && break
	kill -0 "$verify_pid" 2>/dev/null || break
	sleep 0.1
done
grep -q '^replicant verify: public\.w: chunk [0-9]* differs on the first read' "$work/lag.verr" ||
	fail "verify did not find w different while the mirror was held back"
kill -0 "$workload_pid" 2>/dev/null || fail "the workload ended before verify waited"
held=$(rp_psql src -Atc "SELECT pg_current_wal_lsn()")
rp_psql dst -Atc "SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE application_name = 'vm_locker'" >/dev/null
wait "$locker_pid" || true
locker_pid=
# the mirror applies what it was held from while the workload goes on, then the workload stops
for _ in $(seq 1 3000); do
	ck=$(rp_dst_checkpoint dst "$SLOT")
	[[ $(rp_psql src -Atc "SELECT '$ck'::pg_lsn >= '$held'") == t ]] && break
	sleep 0.1
done
touch "$work/stop"
wait "$workload_pid" || true
workload_pid=
vrc=0
wait "$verify_pid" || vrc=$?
verify_pid=
((vrc == 0)) || { cat "$work/lag.out"; fail "verify of a lagging mirror exited $vrc"; }
start_line=$(grep '^replicant verify: source WAL at ' "$work/lag.verr") || fail "no start line"
read -r src_at ck_at < <(sed -E 's/.* at ([0-9A-F]+\/[0-9A-F]+), mirror .* at ([0-9A-F]+\/[0-9A-F]+)$/\1 \2/' <<<"$start_line")
[[ $(rp_psql src -Atc "SELECT '$src_at'::pg_lsn > '$ck_at'::pg_lsn") == t ]] ||
	fail "the mirror did not lag when verify started ($start_line)"
grep -Eq '^public\.w: equal \(2000 rows, 3 chunks, [1-3] re-read after the mirror caught up\)$' "$work/lag.out" ||
	fail "w's chunks did not differ on the first read: $(grep '^public.w' "$work/lag.out")"
grep -q '^7 tables: 7 equal, 0 different, 0 not compared$' "$work/lag.out" ||
	fail "unexpected summary after lag: $(tail -n 1 "$work/lag.out")"

# ---- 3. planted differences (the mirror keeps running: the source does not touch these rows)
caught_up
rp_psql dst <<'SQL' >/dev/null
UPDATE public.a SET v = 'CANARYVALUE' WHERE id = 1234;
DELETE FROM public.b WHERE id = 3500;
INSERT INTO public.c VALUES (99, E'CANARY\tKEY', 1);
DELETE FROM public.n WHERE ctid = (SELECT min(ctid) FROM public.n WHERE a = 77);
SQL
run_verify plant --chunk-rows 1000 --keys-file "$work/keys.tsv" --recheck-timeout 120
((vrc == 1)) || { cat "$work/plant.out"; fail "verify with planted differences exited $vrc"; }
grep ': different' "$work/plant.out" | sed -E 's/: different.*//' | sort -u >"$work/diff.tables"
printf '%s\n' public.a public.b public.c public.n >"$work/want.tables"
diff "$work/want.tables" "$work/diff.tables" >/dev/null ||
	fail "differing tables: $(tr '\n' ' ' <"$work/diff.tables"), expected a b c n"
grep -qx 'public.a: different: chunk 2 (rows 1001-2000 of the source): source 1000 rows, destination 1000 rows' "$work/plant.out" ||
	fail "a's range: $(grep '^public.a' "$work/plant.out")"
grep -qx 'public.b: different: chunk 4 (rows 3001-4000 of the source): source 1000 rows, destination 999 rows' "$work/plant.out" ||
	fail "b's range: $(grep '^public.b' "$work/plant.out")"
grep -qx 'public.c: different: chunk 4 (after row 3000 of the source): source 0 rows, destination 1 rows' "$work/plant.out" ||
	fail "c's range: $(grep '^public.c' "$work/plant.out")"
[[ $(grep -c '^public.n: different: rows hashing to [0-9a-f][0-9a-f]: source 2 rows, destination 1 rows$' "$work/plant.out") == 1 ]] ||
	fail "n's bucket: $(grep '^public.n' "$work/plant.out")"
[[ $(grep -c ': different: ' "$work/plant.out") == 4 ]] || fail "more than the four planted ranges: $(cat "$work/plant.out")"
# each table's verdict after its ranges
for v in 'a: different (5000 rows, 6 chunks, 1 different)' 'b: different (5000 rows, 6 chunks, 1 different)' \
	'c: different (3000 rows, 4 chunks, 1 different)' 'n: different (600 rows, 1 hash buckets different)' \
	'd: equal (4000 rows, 5 chunks)' 'w: equal (2000 rows, 3 chunks)'; do
	grep -qxF "public.$v" "$work/plant.out" || fail "no verdict \"public.$v\": $(cat "$work/plant.out")"
done
grep -qx '7 tables: 3 equal, 4 different, 0 not compared' "$work/plant.out" ||
	fail "unexpected summary: $(tail -n 1 "$work/plant.out")"
grep '^key' "$work/keys.tsv" | sort >"$work/keys.got"
printf 'key\tpublic.a\tchanged\t(1234)\nkey\tpublic.b\tmissing\t(3500)\nkey\tpublic.c\textra\t(99,"CANARY\\tKEY")\n' |
	sort >"$work/keys.want"
diff "$work/keys.want" "$work/keys.got" >/dev/null ||
	fail "keys file: $(tr '\t\n' ' |' <"$work/keys.got")"
[[ $(grep -c '^range' "$work/keys.tsv") == 3 ]] || fail "keys file ranges: $(grep '^range' "$work/keys.tsv" | tr '\t\n' ' |')"
grep -qx "$(printf 'range\tpublic.b\t4\t(3000)\t(4000)')" "$work/keys.tsv" || fail "b's bounds in the keys file"
# the canary: no planted value or key in what verify prints
for f in "$work"/*.verr "$work"/*.out; do
	if grep -q 'CANARY' "$f"; then fail "a row value in $(basename "$f")"; fi
done

# ---- 4. exit statuses
run_verify usage --chunk-rows 0
((vrc == 2)) || fail "--chunk-rows 0 exited $vrc, not 2"
run_verify usage2 -o nonsense=1
((vrc == 2)) || fail "-o nonsense=1 exited $vrc, not 2"
run_verify usage3 --bogus
((vrc == 2)) || fail "--bogus exited $vrc, not 2"
# --schema-prefix maps the names as the mirror's does: a prefix the mirror did not use finds nothing
run_verify prefix --schema-prefix nope_ -o include_tables=public.a
((vrc == 1)) || fail "a wrong --schema-prefix exited $vrc, not 1"
grep -qx 'public.a: different: missing on the destination (nope_public.a)' "$work/prefix.out" ||
	fail "the prefixed name: $(cat "$work/prefix.out")"
vrc=0
replicant verify --sink "postgres:$dst_CONNSTR" >/dev/null 2>&1 || vrc=$?
((vrc == 2)) || fail "no -d exited $vrc, not 2"
vrc=0
replicant verify -d "$src_CONNSTR" --sink "postgres:host=$dst_HOST port=1 dbname=postgres" >/dev/null 2>"$work/noconn.verr" || vrc=$?
((vrc == 3)) || fail "an unreachable destination exited $vrc, not 3"
run_verify noslot -S no_such_slot
((vrc == 3)) || fail "an unknown slot exited $vrc, not 3"
# a mirror held back (the SHARE lock again) past --recheck-timeout: not compared, exit 4
PGAPPNAME=vm_locker rp_psql dst -c "BEGIN; LOCK TABLE public.w IN SHARE MODE; SELECT pg_sleep(900);" \
	>/dev/null 2>&1 &
locker_pid=$!
for _ in $(seq 1 600); do
	[[ $(rp_psql dst -Atc "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a USING (pid)
	     WHERE a.application_name = 'vm_locker' AND l.mode = 'ShareLock' AND l.granted") == 1 ]] && break
	sleep 0.1
done
rp_psql src -c "UPDATE w SET v = v + 1 WHERE id = 7" >/dev/null
run_verify held --chunk-rows 1000 --recheck-timeout 1 -o include_tables=public.w
((vrc == 4)) || { cat "$work/held.out"; fail "verify of a held-back mirror exited $vrc, not 4"; }
grep -qx 'public.w: chunk 1 not compared: the mirror.s checkpoint did not reach the source.s WAL position within 1 s' "$work/held.out" ||
	fail "the chunk not compared: $(cat "$work/held.out")"
grep -qx 'public.w: not compared (2000 rows, 3 chunks, 1 not compared)' "$work/held.out" ||
	fail "the table not compared: $(cat "$work/held.out")"
grep -qx '1 tables: 0 equal, 0 different, 1 not compared' "$work/held.out" || fail "held summary: $(tail -n 1 "$work/held.out")"
rp_psql dst -Atc "SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE application_name = 'vm_locker'" >/dev/null
wait "$locker_pid" || true
locker_pid=
caught_up
rp_psql dst -c "DROP TABLE public.d" >/dev/null
run_verify missing --chunk-rows 1000 -o include_tables=public.d,public.w
((vrc == 1)) || fail "a table missing on the destination exited $vrc, not 1"
grep -q '^public\.d: different: missing on the destination' "$work/missing.out" ||
	fail "the missing table is not named: $(cat "$work/missing.out")"
grep -q '^2 tables: 1 equal, 1 different' "$work/missing.out" ||
	fail "include_tables did not select d and w: $(tail -n 1 "$work/missing.out")"

kill -0 "$consumer_pid" 2>/dev/null || fail "the mirror exited during the test"
status=0
printf 'PASS verify_mirror: equal, lagging-then-equal, planted differences found exactly, exit statuses (%ss)\n' \
	$((SECONDS - started))
