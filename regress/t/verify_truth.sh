#!/usr/bin/env bash
# shellcheck disable=SC2154 # the NAME_* variables of a cluster are set by rp_cluster_start (lib.sh)
# regress/t/verify_truth.sh: `replicant verify` tells the truth (G1 checked from the outside):
# every row of both sides lies in exactly one chunk, every table is read alone, and a chunk it
# cannot settle is "not compared", never "different".
#
# A running mirror (--create-slot --snapshot --start --create-tables) of:
#   nk    (id int key), 2 rows; on the destination its key is made nullable and a row with a
#         NULL key is added
#   nk2   (k1 int, k2 text key), 2 rows; on the destination a row (3, NULL) is added: past the
#         source's last key, so a row comparison alone would count it in the last chunk too
#   par   (id int key) with an inheritance child kid (its own key): 3 rows in par, 2 in kid,
#         the destination's tables made by hand with the same inheritance
#   kpar  (no key, REPLICA IDENTITY FULL) with a child kkid: 2 rows in kpar, 3 in kkid, also
#         inherited on the destination
#   app   (bigserial key), appended to continuously by a background psql during part 3
#   1. --chunk-rows 1 over nk and nk2: exit 1, "different" for both, each NULL-keyed row in
#      exactly one range ("rows with a NULL key": source 0 rows, destination 1 rows); the keys
#      file names them as extra.
#   2. par, kid, kpar, kkid: each compared as its own table, each equal with its own row count
#      (3, 2, 2, 3: a parent read without ONLY would count its child's rows), exit 0.
#   3. app appended to while verify runs (three runs, --recheck-timeout 3): never "different",
#      exit 0 (equal) or 4 (not compared, the reason named).
#   4. every selected table has one verdict line, and the summary counts them.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=regress/lib.sh
. "$here/../lib.sh"
export PATH="$RP_ROOT/consumer:$RP_BINDIR:$PATH"

work=$(mktemp -d /tmp/rp-verify-truth.XXXXXX)
SLOT=verify_truth
consumer_pid=
appender_pid=
status=1

cleanup() { rp_e2e_cleanup $? consumer_pid appender_pid; }
trap cleanup EXIT

fail() { rp_e2e_fail verify_truth "$work/*.err $work/*.verr" 10 "$*"; }

started=$SECONDS
rp_cluster_start src
rp_cluster_start dst

rp_psql src <<'SQL' >/dev/null
CREATE TABLE nk (id int PRIMARY KEY, v text);
CREATE TABLE nk2 (k1 int, k2 text, v text, PRIMARY KEY (k1, k2));
CREATE TABLE par (id int PRIMARY KEY, v text);
CREATE TABLE kid (CONSTRAINT kid_pkey PRIMARY KEY (id)) INHERITS (par);
CREATE TABLE kpar (a int, b text);
ALTER TABLE kpar REPLICA IDENTITY FULL;
CREATE TABLE kkid () INHERITS (kpar);
ALTER TABLE kkid REPLICA IDENTITY FULL;
CREATE TABLE app (id bigserial PRIMARY KEY, v text NOT NULL);
CREATE TABLE fence (at timestamptz);
INSERT INTO nk VALUES (1, 'one'), (2, 'two');
INSERT INTO nk2 VALUES (1, 'a', 'x'), (2, 'b', 'y');
INSERT INTO par VALUES (1, 'p1'), (2, 'p2'), (3, 'p3');
INSERT INTO kid VALUES (11, 'k11'), (12, 'k12');
INSERT INTO kpar VALUES (1, 'kp1'), (2, 'kp2');
INSERT INTO kkid VALUES (1, 'kk1'), (2, 'kk2'), (3, 'kk3');
INSERT INTO app (v) SELECT 'r' || i FROM generate_series(1, 3000) i;
SQL
# the inherited tables as they are on the source (the mirror would make them plain tables)
rp_psql dst <<'SQL' >/dev/null
CREATE TABLE par (id int PRIMARY KEY, v text);
CREATE TABLE kid (CONSTRAINT kid_pkey PRIMARY KEY (id)) INHERITS (par);
CREATE TABLE kpar (a int, b text);
ALTER TABLE kpar REPLICA IDENTITY FULL;
CREATE TABLE kkid () INHERITS (kpar);
ALTER TABLE kkid REPLICA IDENTITY FULL;
SQL

replicant -d "$src_CONNSTR" -S "$SLOT" --create-slot --snapshot --start --create-tables \
	--sink "postgres:$dst_CONNSTR" --state-dir "$work/state" -s 1 >"$work/consumer.out" 2>"$work/consumer.err" &
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

# run_verify NAME ARGS...: verify's exit status in $vrc, its output in $work/NAME.out/.verr
run_verify() {
	local name=$1
	shift
	vrc=0
	replicant verify -d "$src_CONNSTR" --sink "postgres:$dst_CONNSTR" --duty 100 "$@" \
		>"$work/$name.out" 2>"$work/$name.verr" || vrc=$?
}

# verdicts NAME TABLE...: each table has exactly one verdict line (equal, different or not
# compared), and the summary counts the tables
verdicts() {
	local name=$1 t n
	shift
	for t in "$@"; do
		n=$(grep -Ec "^public\.$t: (equal \(|different \(|different: missing|different: column|not compared[ :(])" "$work/$name.out" || true)
		[[ $n == 1 ]] || fail "$name: $n verdict lines for public.$t: $(cat "$work/$name.out")"
	done
	grep -Eq "^$# tables: [0-9]+ equal, [0-9]+ different, [0-9]+ not compared$" "$work/$name.out" ||
		fail "$name: summary: $(tail -n 1 "$work/$name.out")"
}

caught_up
# the snapshot copied each inherited table alone
[[ $(rp_psql dst -Atc "SELECT (SELECT count(*) FROM ONLY par) || ' ' || (SELECT count(*) FROM ONLY kpar)") == "3 2" ]] ||
	fail "the mirror's copy of the parents: $(rp_psql dst -Atc "SELECT count(*) FROM ONLY par")"

# ---- 1. NULL keys on the destination
rp_psql dst <<'SQL' >/dev/null
ALTER TABLE public.nk DROP CONSTRAINT nk_pkey;
ALTER TABLE public.nk ALTER COLUMN id DROP NOT NULL;
INSERT INTO public.nk VALUES (NULL, 'CANARYNULL');
ALTER TABLE public.nk2 DROP CONSTRAINT nk2_pkey;
ALTER TABLE public.nk2 ALTER COLUMN k2 DROP NOT NULL;
INSERT INTO public.nk2 VALUES (3, NULL, 'CANARYNULL2');
SQL
run_verify nullkey --chunk-rows 1 --recheck-timeout 10 -o include_tables=public.nk,public.nk2 \
	--keys-file "$work/keys.tsv"
((vrc == 1)) || { cat "$work/nullkey.out"; fail "a destination row with a NULL key: exit $vrc, not 1"; }
for t in nk nk2; do
	[[ $(grep -c "^public\.$t: different: " "$work/nullkey.out") == 1 ]] ||
		fail "$t's differing ranges: $(grep "^public.$t" "$work/nullkey.out")"
	grep -qx "public\.$t: different: rows with a NULL key: source 0 rows, destination 1 rows" "$work/nullkey.out" ||
		fail "$t's NULL-key rows: $(grep "^public.$t" "$work/nullkey.out")"
done
verdicts nullkey nk nk2
grep -qx '2 tables: 0 equal, 2 different, 0 not compared' "$work/nullkey.out" ||
	fail "nullkey summary: $(tail -n 1 "$work/nullkey.out")"
grep '^key' "$work/keys.tsv" | sort >"$work/keys.got"
printf 'key\tpublic.nk\textra\t()\nkey\tpublic.nk2\textra\t(3,)\n' | sort >"$work/keys.want"
diff "$work/keys.want" "$work/keys.got" >/dev/null || fail "keys file: $(tr '\t\n' ' |' <"$work/keys.got")"
grep -q "$(printf '^range\tpublic.nk\t[0-9]*\tNULL\tNULL$')" "$work/keys.tsv" ||
	fail "keys file ranges: $(grep '^range' "$work/keys.tsv" | tr '\t\n' ' |')"
for f in "$work"/nullkey.out "$work"/nullkey.verr; do
	if grep -q 'CANARY' "$f"; then fail "a row value in $(basename "$f")"; fi
done
# without the extra rows (the keys still nullable), both are equal
rp_psql dst -c "DELETE FROM public.nk WHERE id IS NULL; DELETE FROM public.nk2 WHERE k2 IS NULL" >/dev/null
run_verify nullkey_equal --chunk-rows 1 -o include_tables=public.nk,public.nk2
((vrc == 0)) || { cat "$work/nullkey_equal.out"; fail "nullable keys, no NULL: exit $vrc, not 0"; }
grep -qx 'public.nk: equal (2 rows, 3 chunks)' "$work/nullkey_equal.out" ||
	fail "nk: $(grep '^public.nk:' "$work/nullkey_equal.out")"

# ---- 2. inheritance: each table alone
run_verify inherit --chunk-rows 2 -o include_tables=public.par,public.kid,public.kpar,public.kkid
((vrc == 0)) || { cat "$work/inherit.out"; fail "inherited tables: exit $vrc, not 0"; }
grep -qx 'public.par: equal (3 rows, 2 chunks)' "$work/inherit.out" || fail "par: $(grep '^public.par' "$work/inherit.out")"
grep -qx 'public.kid: equal (2 rows, 2 chunks)' "$work/inherit.out" || fail "kid: $(grep '^public.kid' "$work/inherit.out")"
grep -qx 'public.kpar: equal (2 rows, 1 chunks)' "$work/inherit.out" || fail "kpar: $(grep '^public.kpar' "$work/inherit.out")"
grep -qx 'public.kkid: equal (3 rows, 1 chunks)' "$work/inherit.out" || fail "kkid: $(grep '^public.kkid' "$work/inherit.out")"
verdicts inherit par kid kpar kkid
grep -qx '4 tables: 4 equal, 0 different, 0 not compared' "$work/inherit.out" ||
	fail "inherit summary: $(tail -n 1 "$work/inherit.out")"

# ---- 3. a table appended to while verify runs, the mirror running and exact
# the appender: one session inserting a row per transaction, a few hundred a second, until
# its backend is terminated
PGAPPNAME=vt_appender rp_psql src -c "DO \$\$ BEGIN
	FOR i IN 1..10000000 LOOP
		INSERT INTO app (v) VALUES ('a' || i);
		COMMIT;
		PERFORM pg_sleep(0.003);
	END LOOP;
END \$\$" >/dev/null 2>"$work/appender.err" &
appender_pid=$!
n0=$(rp_psql src -Atc "SELECT count(*) FROM app")
for _ in $(seq 1 300); do
	(($(rp_psql src -Atc "SELECT count(*) FROM app") > n0 + 50)) && break
	sleep 0.1
done
(($(rp_psql src -Atc "SELECT count(*) FROM app") > n0 + 50)) || fail "the appender did not get going"
for round in 1 2 3; do
	run_verify "append$round" --chunk-rows 500 --recheck-timeout 3 -o include_tables=public.app,public.par
	kill -0 "$appender_pid" 2>/dev/null || fail "the appender stopped during verify round $round"
	if grep -q ': different' "$work/append$round.out"; then
		cat "$work/append$round.out"
		fail "verify called an exact mirror of an appended table different (round $round)"
	fi
	((vrc == 0 || vrc == 4)) || { cat "$work/append$round.out"; fail "round $round: exit $vrc, not 0 or 4"; }
	if ((vrc == 4)); then
		grep -Eq '^public\.app: chunk [0-9]+ not compared: the source kept changing it|^public\.app: chunk [0-9]+ not compared: the mirror' "$work/append$round.out" ||
			fail "round $round: not compared without a reason: $(cat "$work/append$round.out")"
		grep -Eq '^2 tables: 1 equal, 0 different, 1 not compared$' "$work/append$round.out" ||
			fail "round $round summary: $(tail -n 1 "$work/append$round.out")"
	else
		grep -qx '2 tables: 2 equal, 0 different, 0 not compared' "$work/append$round.out" ||
			fail "round $round summary: $(tail -n 1 "$work/append$round.out")"
	fi
	verdicts "append$round" app par
	printf 'append round %d: exit %d: %s\n' "$round" "$vrc" "$(grep '^public.app: ' "$work/append$round.out" | tail -n 1)"
done
rp_psql src -Atc "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'vt_appender'" >/dev/null
wait "$appender_pid" || true
appender_pid=
# stopped and caught up, the appended table is equal
caught_up
run_verify append_done --chunk-rows 500 -o include_tables=public.app
((vrc == 0)) || { cat "$work/append_done.out"; fail "the appended table after the appender stopped: exit $vrc"; }

# ---- 4. every table of a full run has its verdict
run_verify all --chunk-rows 1000
((vrc == 0)) || { cat "$work/all.out"; fail "the whole mirror: exit $vrc"; }
verdicts all nk nk2 par kid kpar kkid app fence

kill -0 "$consumer_pid" 2>/dev/null || fail "the mirror exited during the test"
status=0
printf 'PASS verify_truth: NULL keys found, inherited tables alone, an appended table never different, every table listed (%ss)\n' \
	$((SECONDS - started))
