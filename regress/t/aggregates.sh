#!/usr/bin/env bash
# shellcheck disable=SC2154 # the NAME_* variables of a cluster are set by rp_cluster_start (lib.sh)
# regress/t/aggregates.sh: live aggregates stay equal to GROUP BY on the source across
# kill -9 and restarts, a TRUNCATE and rebuilds forced by a collision and by a missing old row.
#
# Proves G1 for aggregate outputs (each table output, written in the mirror's destination
# transaction with the checkpoint, equals the same GROUP BY run on the source at the end: no
# change folded twice or lost) and the at-least-once edit stream (replayed from its last
# "reset" line per binding, it ends with the same cells). G4: the consumer's stderr never
# shows a canary value.
#
# Source tables (REPLICA IDENTITY FULL):
#   sales   (region text, month date) dimensions, NULL ones included; amount numeric (NaN and
#           +-Infinity in region AF only), qty int, price float8 (NaN in AF), customer int,
#           ts timestamp (no zone: taken as UTC); rows exist before the slot (seeded only)
#   latest  (k1 int, k2 text) coordinate of a binding without aggregate, kept unique by the
#           workload; one transaction puts a second row on a coordinate and deletes the first
#           (the binding must rebuild, counted as reason "collision", and show the new value)
#   plain   default replica identity: an update without its old row must rebuild sum(v) by g
#           (reason "no_old_row") and tell the user to set REPLICA IDENTITY FULL on it
# Bindings on sales: sum(amount), avg(qty), min(amount), max(price), count(customer),
# count_distinct(customer) as tables; sum(amount) and min(ts) as an edit stream to a file;
# none(v) on latest as a table. The mirror runs too (--create-tables): sales is compared.
# A random workload of small transactions (inserts, updates within and across coordinates,
# deletes) runs while the consumer is killed ROUNDS times and restarted; one round TRUNCATEs
# sales mid-stream.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=regress/lib.sh
. "$here/../lib.sh"
export PATH="$RP_ROOT/consumer:$RP_BINDIR:$PATH"  # the consumer as built here, then the server's tools

ROUNDS=${ROUNDS:-6}
work=$(mktemp -d /tmp/rp-aggregates.XXXXXX)
chmod 755 "$work"
STATE=$work/state
SLOT=aggregates
EDITS=$work/edits.jsonl
CANARY=canary_7f3a9c
consumer_pid=
workload_pid=
status=1

cleanup() { rp_e2e_cleanup $? consumer_pid workload_pid; }
trap cleanup EXIT

fail() { rp_e2e_fail aggregates "$work/consumer-*.err" 5 "$*"; }

started=$SECONDS
rp_cluster_start src
rp_cluster_start dst

rp_psql src <<'SQL' >/dev/null
CREATE TABLE sales (id bigint PRIMARY KEY, region text, month date, amount numeric, qty int,
                    price float8, customer int, ts timestamp, note text);
ALTER TABLE sales REPLICA IDENTITY FULL;
CREATE TABLE latest (id bigint PRIMARY KEY, k1 int, k2 text, v numeric);
ALTER TABLE latest REPLICA IDENTITY FULL;
CREATE TABLE plain (id int PRIMARY KEY, g int, v int);	-- default replica identity: key only
INSERT INTO plain SELECT x, x % 5, x FROM generate_series(1, 50) x;
CREATE TABLE ctl (one int PRIMARY KEY, stop bool NOT NULL);
INSERT INTO ctl VALUES (1, false);
CREATE TABLE fence (at timestamptz);
CREATE SEQUENCE ids;

CREATE FUNCTION ri(n int) RETURNS int LANGUAGE sql VOLATILE AS $$ SELECT floor(random() * n)::int $$;
CREATE FUNCTION r_region() RETURNS text LANGUAGE sql VOLATILE AS
$$ SELECT CASE ri(12) WHEN 0 THEN NULL ELSE (ARRAY['EU', 'US', 'APAC', 'LATAM', 'AF'])[1 + ri(5)] END $$;
CREATE FUNCTION r_month() RETURNS date LANGUAGE sql VOLATILE AS
$$ SELECT CASE ri(15) WHEN 0 THEN NULL ELSE (date '2024-01-01' + ri(6) * interval '1 month')::date END $$;
-- a new row's measures; the awkward values only in region AF
CREATE FUNCTION r_sale(id bigint) RETURNS sales LANGUAGE plpgsql VOLATILE AS $$
DECLARE s sales;
BEGIN
	s.id := id; s.region := r_region(); s.month := r_month();
	s.amount := CASE WHEN ri(20) = 0 THEN NULL ELSE round((random() * 1000)::numeric, ri(4)) END;
	s.qty := CASE WHEN ri(20) = 0 THEN NULL ELSE ri(100) - 20 END;
	s.price := CASE WHEN ri(20) = 0 THEN NULL ELSE random() * 100 END;
	s.customer := CASE WHEN ri(25) = 0 THEN NULL ELSE ri(60) END;
	s.ts := CASE WHEN ri(25) = 0 THEN NULL ELSE timestamp '2024-01-01' + random() * interval '365 days' END;
	s.note := 'canary_7f3a9c';
	IF s.region = 'AF' AND ri(15) = 0 THEN
		s.amount := (ARRAY['NaN', 'Infinity', '-Infinity'])[1 + ri(3)]::numeric;
		s.price := 'NaN';
		s.ts := 'infinity';
	END IF;
	RETURN s;
END $$;

CREATE PROCEDURE workload(n int) LANGUAGE plpgsql AS $$
DECLARE
	k int;
	target bigint;
BEGIN
	FOR i IN 1..n LOOP
		k := ri(12);
		SELECT id INTO target FROM sales WHERE id >= (random() * (SELECT last_value FROM ids))::bigint ORDER BY id LIMIT 1;
		IF k < 4 OR target IS NULL THEN
			INSERT INTO sales SELECT (r_sale(nextval('ids'))).* FROM generate_series(1, 1 + ri(4));
		ELSIF k < 6 THEN	-- within a coordinate
			UPDATE sales SET amount = (r_sale(id)).amount, qty = (r_sale(id)).qty, price = (r_sale(id)).price,
			                 customer = (r_sale(id)).customer, ts = (r_sale(id)).ts WHERE id = target;
		ELSIF k < 8 THEN	-- across coordinates
			UPDATE sales SET region = r_region(), month = r_month(), customer = ri(60) WHERE id = target;
		ELSIF k < 9 THEN	-- many rows of one coordinate at once
			UPDATE sales SET qty = qty + 1 WHERE (region, month) = (SELECT region, month FROM sales WHERE id = target);
		ELSE
			DELETE FROM sales WHERE id = target OR id = target + 1;
		END IF;
		k := ri(6);
		IF k = 0 THEN
			INSERT INTO latest SELECT x, x, 'k' || (x % 7), round((random() * 100)::numeric, 2)
			FROM nextval('ids') x;
		ELSIF k = 1 THEN
			UPDATE latest SET v = round((random() * 100)::numeric, 2)
			WHERE id = (SELECT id FROM latest WHERE id > 0 ORDER BY random() LIMIT 1);
		ELSIF k = 2 THEN
			DELETE FROM latest WHERE id = (SELECT id FROM latest WHERE id > 0 ORDER BY random() LIMIT 1);
		END IF;
		COMMIT;
	END LOOP;
END $$;

-- rows before the slot: only the seed knows them
INSERT INTO sales SELECT (r_sale(nextval('ids'))).* FROM generate_series(1, 3000);
INSERT INTO latest SELECT x, x, 'k' || (x % 7), x FROM (SELECT nextval('ids') FROM generate_series(1, 200)) s(x);
INSERT INTO latest VALUES (-1, -1, 'collide', 1);	-- the workload leaves ids below 1 alone
SQL

cat >"$work/bindings.conf" <<CONF
# aggregate bindings of regress/t/aggregates.sh
name=s_sum source=public.sales dims=region,month measure=amount agg=sum output=table:agg.s_sum
name=s_avg source=public.sales dims=region,month measure=qty agg=avg output=table:agg.s_avg
name=s_min source=public.sales dims=region,month measure=amount agg=min output=table:agg.s_min
name=s_max source=public.sales dims=region,month measure=price agg=max output=table:agg.s_max
name=s_cnt source=public.sales dims=region,month measure=customer agg=count output=table:agg.s_cnt
name=s_cd  source=public.sales dims=region,month measure=customer agg=count_distinct output=table:agg.s_cd
name=e_sum source=public.sales dims=region,month measure=amount agg=sum output=file:$EDITS
name=e_min source=public.sales dims=region,month measure=ts agg=min output=file:$EDITS
CONF

replicant -d "$src_CONNSTR" -S "$SLOT" --create-slot

runs=0
metrics_port=
start_consumer() {
	runs=$((runs + 1))
	ck_at_start=$(dst_ckpt)
	metrics_port=$(rp_free_port)
	replicant -d "$src_CONNSTR" -S "$SLOT" --start -s 1 --sink "postgres:$dst_CONNSTR" --create-tables \
		--state-dir "$STATE" --batch-txns 50 --batch-ms 100 --metrics-port "$metrics_port" \
		--aggregates "$work/bindings.conf" \
		--aggregate "name=n_v source=public.latest dims=k1,k2 measure=v agg=none output=table:agg.n_v" \
		--aggregate "name=p_sum source=public.plain dims=g measure=v agg=sum output=table:agg.p_sum" \
		"$@" 2>"$work/consumer-$runs.err" &
	consumer_pid=$!
}

kill_consumer() {
	rp_kill9_alive consumer_pid || fail "consumer run $runs exited by itself (status $RP_EXIT_STATUS) before $1"
}

dst_ckpt() { rp_dst_checkpoint dst "$SLOT"; }

# wait_progress CK WHAT: wait until the destination checkpoint is no longer CK (the deadline
# only guards against a hang)
wait_progress() {
	local deadline=$((SECONDS + 600))
	while [[ $(dst_ckpt) == "$1" ]]; do
		kill -0 "$consumer_pid" 2>/dev/null || fail "$2: the consumer exited"
		((SECONDS < deadline)) || fail "$2: the destination checkpoint stayed at ${1:-none} for 600 s"
		sleep 0.1
	done
}

# wait until the destination holds everything committed on the source up to now (the
# deadline only guards against a hang)
caught_up() {
	local lsn deadline=$((SECONDS + 600)) ok
	lsn=$(rp_psql src -Atc "INSERT INTO fence VALUES (now())" -c "SELECT pg_current_wal_insert_lsn()")
	while ((SECONDS < deadline)); do
		ok=$(rp_psql dst -Atc "SELECT end_lsn >= '$lsn' FROM replicant.checkpoint WHERE slot = '$SLOT'" 2>/dev/null || true)
		[[ $ok == t ]] && return 0
		kill -0 "$consumer_pid" 2>/dev/null || fail "$1: the consumer exited"
		sleep 0.2
	done
	fail "$1: the destination did not reach $lsn within 600 s"
}

command -v curl >/dev/null || fail "curl is not installed (regress/install_deps.sh installs it): the metrics cannot be read"
# a counter of the running consumer (its endpoint may take a moment to come up)
metric() {
	local page deadline=$((SECONDS + 120))
	while ((SECONDS < deadline)); do
		if page=$(curl -sf "http://127.0.0.1:$metrics_port/metrics"); then
			grep -F "$1" <<<"$page" | awk '{print $2}'
			return 0
		fi
		kill -0 "$consumer_pid" 2>/dev/null || fail "the consumer exited before its metrics could be read"
		sleep 0.1
	done
	fail "no metrics from the consumer on port $metrics_port"
}

workload_loop() {
	while [[ $(rp_psql src -Atc "SELECT stop FROM ctl" 2>/dev/null || echo f) != t ]]; do
		rp_psql src -c "CALL workload(100)" >>"$work/workload.out" 2>&1 || sleep 0.3
	done
}

start_consumer
caught_up "the first run"
[[ $(metric 'replicant_aggregate_rebuilds_total{reason="seed"}') == 10 ]] ||
	fail "the first run did not seed each of the 10 bindings once"
workload_loop &
workload_pid=$!

kills=0
for ((round = 1; round <= ROUNDS + 2; round++)); do
	case $round in
	3)	# TRUNCATE mid-stream: every cell of sales goes, later rows start afresh
		rp_psql src -c "TRUNCATE sales" >/dev/null
		caught_up "round $round (truncate)"
		n=$(rp_psql dst -Atc "SELECT count(*) FROM agg.s_sum")
		printf 'round %2d: TRUNCATE sales; %s cells of s_sum after the workload went on\n' "$round" "$n"
		continue ;;
	5)	# a second row on a coordinate of the binding without aggregate, the first deleted
		# (after this run's seed: a seed that already holds the transaction skips it, rightly)
		caught_up "round $round (seeded)"
		before=$(metric 'replicant_aggregate_rebuilds_total{reason="collision"}')
		rp_psql src >/dev/null <<'SQL'
BEGIN;
INSERT INTO latest VALUES (-2, -1, 'collide', 4242);
DELETE FROM latest WHERE id = -1;
COMMIT;
SQL
		caught_up "round $round (collision)"
		after=$(metric 'replicant_aggregate_rebuilds_total{reason="collision"}')
		((after == before + 1)) || fail "round $round: collision rebuilds went from $before to $after, not by one"
		grep -q 'aggregate binding "n_v" rebuilt from the source (reason: collision)' "$work/consumer-$runs.err" ||
			fail "round $round: the rebuild was not reported"
		[[ $(rp_psql dst -Atc "SELECT string_agg(v::text, ',') FROM agg.n_v WHERE k2 = 'collide'") == 4242 ]] ||
			fail "round $round: the moved coordinate does not show its new row's value"
		printf 'round %2d: collision on n_v rebuilt the binding (collision rebuilds %s -> %s)\n' "$round" "$before" "$after"
		# an update whose old row is not replicated (default identity, key unchanged)
		before=$(metric 'replicant_aggregate_rebuilds_total{reason="no_old_row"}')
		rp_psql src -c "UPDATE plain SET v = v + 1000, g = g + 1 WHERE id % 7 = 0" >/dev/null
		caught_up "round $round (no old row)"
		after=$(metric 'replicant_aggregate_rebuilds_total{reason="no_old_row"}')
		((after > before)) || fail "round $round: an update without its old row did not rebuild p_sum"
		grep -q 'aggregate binding "p_sum": an update or delete of table "public"."plain" did not carry its old row; set REPLICA IDENTITY FULL on that table' \
			"$work/consumer-$runs.err" || fail "round $round: the user was not told to set REPLICA IDENTITY FULL on public.plain"
		printf 'round %2d: an update without its old row rebuilt p_sum (no_old_row rebuilds %s -> %s)\n' "$round" "$before" "$after"
		continue ;;
	esac
	# odd rounds: once this run has committed a batch (its checkpoint moved), so the
	# backlog cannot grow without bound on a machine where a run needs longer than the
	# random delay to seed and commit; even rounds: at a random moment, seeds included
	if ((round % 2)); then
		wait_progress "$ck_at_start" "round $round"
	fi
	ms=$((300 + RANDOM % 1500))
	sleep "$((ms / 1000)).$(printf '%03d' $((ms % 1000)))"
	kill_consumer "round $round's kill"
	kills=$((kills + 1))
	printf 'round %2d: killed after %dms; destination checkpoint %s\n' "$round" "$ms" "$(dst_ckpt)"
	kill -0 "$workload_pid" 2>/dev/null || fail "the workload stopped early: $(tail -n 3 "$work/workload.out")"
	start_consumer
done

rp_psql src -c "UPDATE ctl SET stop = true" >/dev/null
wait "$workload_pid" || true
workload_pid=
grep -q 'ERROR:' "$work/workload.out" && fail "the workload failed: $(grep -m 3 'ERROR:' "$work/workload.out")"
kill_consumer "the final run"

endpos=$(rp_psql src -Atc "INSERT INTO fence VALUES (now())" -c "SELECT pg_current_wal_insert_lsn()")
start_consumer -E "$endpos" -n
rc=0
wait "$consumer_pid" || rc=$?
consumer_pid=
((rc == 0)) || fail "the final consumer run to $endpos exited with status $rc"

# ---- compare: each output against the same GROUP BY on the source
export PGOPTIONS='-c TimeZone=UTC -c DateStyle=ISO,YMD -c extra_float_digits=3'
digest() {
	# $1 cluster, $2 query returning (text) rows
	rp_psql "$1" -Atc "SELECT count(*) || ' ' || md5(coalesce(string_agg(r, E'\\n' ORDER BY r COLLATE \"C\"), '')) FROM ($2) s(r)"
}
check() {
	local name=$1 src_q=$2 dst_q=$3 a b
	a=$(digest src "$src_q")
	b=$(digest "${4:-dst}" "$dst_q")
	if [[ $a != "$b" ]]; then
		rp_psql src -Atc "$src_q" | sort >"$work/$name.src"
		rp_psql "${4:-dst}" -Atc "$dst_q" | sort >"$work/$name.dst"
		diff "$work/$name.src" "$work/$name.dst" | head -n 10 || true  # (diff exits 1: the reason follows)
		fail "binding $name differs from the source: source $a, output $b"
	fi
	summary+=("$name ${a%% *}")
}
summary=()
key="coalesce(region, '~') || '|' || coalesce(month::text, '~')"
check s_sum "SELECT $key || '|' || coalesce(trim_scale(sum(amount))::text, '~') FROM sales GROUP BY region, month" \
	"SELECT $key || '|' || coalesce(trim_scale(sum_amount)::text, '~') FROM agg.s_sum"
check s_avg "SELECT $key || '|' || coalesce(round(avg(qty), 10)::text, '~') FROM sales GROUP BY region, month" \
	"SELECT $key || '|' || coalesce(round(avg_qty, 10)::text, '~') FROM agg.s_avg"
check s_min "SELECT $key || '|' || coalesce(trim_scale(min(amount))::text, '~') FROM sales GROUP BY region, month" \
	"SELECT $key || '|' || coalesce(trim_scale(min_amount)::text, '~') FROM agg.s_min"
check s_max "SELECT $key || '|' || coalesce(max(price)::text, '~') FROM sales GROUP BY region, month" \
	"SELECT $key || '|' || coalesce(max_price::text, '~') FROM agg.s_max"
check s_cnt "SELECT $key || '|' || count(customer) FROM sales GROUP BY region, month" \
	"SELECT $key || '|' || count_customer FROM agg.s_cnt"
check s_cd "SELECT $key || '|' || count(DISTINCT customer) FROM sales GROUP BY region, month" \
	"SELECT $key || '|' || count_distinct_customer FROM agg.s_cd"
check n_v "SELECT k1 || '|' || k2 || '|' || trim_scale(min(v)) FROM latest GROUP BY k1, k2 HAVING count(*) = 1" \
	"SELECT k1 || '|' || k2 || '|' || trim_scale(v) FROM agg.n_v"
# the edit stream, replayed: per binding, the lines after its last reset, last edit per key wins
replay="WITH l AS (SELECT n, line::jsonb AS j FROM regexp_split_to_table(pg_read_file('$EDITS'), E'\\n') WITH ORDINALITY t(line, n) WHERE line <> ''),
             r AS (SELECT j->>'binding' AS b, max(n) AS at FROM l WHERE j->>'op' = 'reset' GROUP BY 1),
             e AS (SELECT DISTINCT ON (j->>'binding', j->'key') j FROM l JOIN r ON r.b = l.j->>'binding' AND l.n > r.at
                   WHERE j->>'op' <> 'reset' ORDER BY j->>'binding', j->'key', n DESC)
        SELECT coalesce(j->'key'->>'region', '~') || '|' || coalesce(j->'key'->>'month', '~') || '|' || coalesce(%s, '~')
        FROM e WHERE j->>'op' = 'set' AND j->>'binding' = '%s'"
# shellcheck disable=SC2059 # the replay query is a template
check e_sum "SELECT $key || '|' || coalesce(trim_scale(sum(amount))::text, '~') FROM sales GROUP BY region, month" \
	"$(printf "$replay" "trim_scale((j->>'value')::numeric)::text" e_sum)" src
# shellcheck disable=SC2059
check e_min "SELECT $key || '|' || coalesce(min(ts)::text, '~') FROM sales GROUP BY region, month" \
	"$(printf "$replay" "(j->>'value')::timestamp::text" e_min)" src
check p_sum "SELECT g || '|' || sum(v) FROM plain GROUP BY g" "SELECT g || '|' || sum_v FROM agg.p_sum"
# the mirror beside the aggregates
q="SELECT x::text FROM public.sales x"
check mirror_sales "$q" "$q"
unset PGOPTIONS

# rebuilds happen for the reasons the test causes, never because the fold lost its way
unexpected=$(grep -h 'rebuilt from the source' "$work"/consumer-*.err | grep -v -e 'reason: collision' -e '"p_sum" rebuilt from the source (reason: no_old_row)' || true)
[[ -z $unexpected ]] || fail "unexpected rebuilds: $(head -n 3 <<<"$unexpected")"
# every run that committed a batch wrote a reset per edit binding first; the first and the last did
for b in e_sum e_min; do
	resets=$(grep -c "\"binding\":\"$b\",\"op\":\"reset\"" "$EDITS" || true)
	((resets >= 2)) || fail "only $resets resets of $b in the edit stream"
done
if grep -l "$CANARY" "$work"/consumer-*.err >/dev/null 2>&1; then
	fail "a row value reached the consumer's log (G4)"
fi
status=0
printf 'PASS aggregates: %d consumer runs, %d SIGKILLs, a TRUNCATE, a collision and a no-old-row rebuild; outputs equal GROUP BY on the source (cells: %s) (%ds)\n' \
	"$runs" "$kills" "$(IFS=,; echo "${summary[*]}")" "$((SECONDS - started))"
