#!/usr/bin/env bash
# regress/t/verify_snapshot.sh: `replicant verify-snapshot` on generated envelope files.
#
# Proves the backfill promise of DESIGN.md ("let the receiver tell a complete dump from a
# truncated one") at the CLI, and G4 (value-free) for its messages. No server is needed:
# the frames are generated here in the envelope's format (docs/sinks.md), each record
# carrying a canary value.
#   1. A complete dump of 2000 rows, its frames shuffled, about a third of them delivered
#      twice, spread over two files and mixed with change, checkpoint and flush lines:
#      "complete rows=2000", exit 0; --rows prints the 2000 records in seq order, once each,
#      with the oversize stubs (every 100th row) left out.
#   2. The same with one row frame lost: "truncated ... missing=1 (first missing seq S)",
#      exit 4; --rows refuses it (exit 4, nothing on stdout).
#   3. Without the end frame: "open rows_seen=N", exit 5; with a truncated dump beside it,
#      exit 4 (truncated wins).
#   4. A duplicate of one seq with another record: "conflict seq=S", exit 4.
#   5. An empty table (begin, end): "complete rows=0", exit 0.
#   6. Usage (2), an unreadable file (1), a malformed line (warned with file:line, skipped).
#   7. A dump whose records hold json values nested 5,000 and 100,000 deep (PostgreSQL's json
#      accepts such nesting): "complete rows=3", exit 0; --rows prints the records unchanged.
# stderr of every run is searched for the canary: it must never appear.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=regress/lib.sh
. "$here/../lib.sh"
export PATH="$RP_ROOT/consumer:$RP_BINDIR:$PATH"  # the consumer as built here, then the server's tools

CANARY='CANARY-77c2f0b1'
ROWS=2000
ID=0190b9b2-6a1f-7c3d-8e4f-5a6b7c8d9e0f
ID_EMPTY=0190b9b2-6a1f-7c3d-8e4f-5a6b7c8d9e10
AT=2026-11-30T01:02:03.456Z
work=$(mktemp -d /tmp/rp-verify.XXXXXX)
status=1
cleanup() {
	local rc=$?
	if ((status == 0)); then rm -rf "$work"; else printf 'kept %s for inspection\n' "$work"; fi
	return "$rc"
}
trap cleanup EXIT
fail() {
	printf 'FAIL verify_snapshot: %s\n' "$*"
	exit 1
}
started=$SECONDS

# frame KIND ID STORE SEQ REST: one frame line (REST: the kind's own fields, leading comma)
frame() {
	printf '{"kind":"%s","snapshot_id":"%s","snapshot_at":"%s","timestamp":"%s","store":"%s","seq":%s%s}\n' \
		"$1" "$2" "$AT" "$AT" "$3" "$4" "$5"
}
# the records of the dump, in seq order (stubs left out): what --rows must print
awk -v n="$ROWS" -v c="$CANARY" 'BEGIN {
	for (i = 0; i < n; i++) if (i % 100 != 99) printf "{\"id\":%d,\"secret\":\"%s-%d\",\"t\":\"\\u00e9\"}\n", i, c, i
}' >"$work/expected_rows"
# the frames: begin, rows (every 100th an oversize stub), end
{
	frame begin "$ID" public.item 0 ",\"total\":$ROWS"
	awk -v n="$ROWS" -v c="$CANARY" -v id="$ID" -v at="$AT" 'BEGIN {
		for (i = 0; i < n; i++) {
			head = sprintf("{\"kind\":\"%s\",\"snapshot_id\":\"%s\",\"snapshot_at\":\"%s\",\"timestamp\":\"%s\",\"store\":\"public.item\",\"seq\":%d",
			               (i % 100 == 99) ? "oversize" : "row", id, at, at, i)
			if (i % 100 == 99)
				printf "%s,\"bytes\":123456,\"row_key\":{\"id\":%d}}\n", head, i
			else
				printf "%s,\"record\":{\"id\":%d,\"secret\":\"%s-%d\",\"t\":\"\\u00e9\"}}\n", head, i, c, i
		}
	}'
	frame end "$ID" public.item "$ROWS" ",\"row_count\":$ROWS,\"completed_at\":\"2026-11-30T01:02:09.001Z\""
} >"$work/frames"
[[ $(wc -l <"$work/frames") -eq $((ROWS + 2)) ]] || fail "generated $(wc -l <"$work/frames") frames"

# deliver FRAMES OUT1 OUT2: shuffled, a third repeated, split over two files, mixed with
# lines of the change stream
deliver() {
	{
		cat "$1"
		awk 'NR % 3 == 0' "$1"
		for i in $(seq 1 50); do
			printf '{"kind":"insert","commit_lsn":"0/%X","end_lsn":"0/%X","xid":%d,"commit_time":"%s","schema":"public","table":"item","new":{"id":%d,"secret":"%s"}}\n' \
				$((i * 4096)) $((i * 4096 + 40)) $((700 + i)) "$AT" "$i" "$CANARY"
			printf '{"kind":"checkpoint","system_id":"7713770514009019979","timeline":1,"slot":"s","commit_lsn":"0/%X","end_lsn":"0/%X"}\n' \
				$((i * 4096)) $((i * 4096 + 40))
			printf '{"kind":"flush","seq":%d,"end_lsn":"0/%X"}\n' "$i" $((i * 4096 + 40))
		done
	} | shuf --random-source=<(yes) >"$work/all"
	local half
	half=$(($(wc -l <"$work/all") / 2))
	head -n "$half" "$work/all" >"$2"
	tail -n +"$((half + 1))" "$work/all" >"$3"
}

# verify ARG...: run verify-snapshot; sets rc, out, err; checks stderr for the canary
verify() {
	rc=0
	replicant verify-snapshot "$@" >"$work/out" 2>"$work/err" || rc=$?
	out=$(cat "$work/out")
	err=$(cat "$work/err")
	if grep -q "$CANARY" "$work/err"; then fail "a value reached stderr: $err"; fi
}
expect() { # STATUS DESCRIPTION
	((rc == $1)) || fail "$2: exit $rc, expected $1 (stdout: $out; stderr: $err)"
}

# ---- 1. complete
deliver "$work/frames" "$work/log.1" "$work/log.2"
verify "$work/log.1" "$work/log.2"
expect 0 "complete dump"
[[ $out == "$ID public.item complete rows=$ROWS" ]] || fail "complete report: $out"
verify --rows "$ID" "$work/log.2" "$work/log.1"
expect 0 "--rows of a complete dump"
cmp -s "$work/out" "$work/expected_rows" || fail "--rows output differs from the records in seq order"
[[ $(wc -l <"$work/out") -eq $((ROWS - ROWS / 100)) ]] || fail "--rows printed $(wc -l <"$work/out") lines"
# either file alone is not complete
verify "$work/log.1"
((rc == 4 || rc == 5)) || fail "half the frames: exit $rc"
printf 'ok 1: complete dump over two files, shuffled, duplicated, mixed (%ss)\n' $((SECONDS - started))

# ---- 2. one row lost
lost=1234
grep -v "\"seq\":$lost," "$work/frames" >"$work/frames_lost"
deliver "$work/frames_lost" "$work/lost.1" "$work/lost.2"
verify "$work/lost.1" "$work/lost.2"
expect 4 "a lost row"
[[ $out == "$ID public.item truncated rows=$ROWS missing=1 (first missing seq $lost)" ]] ||
	fail "truncated report: $out"
verify --rows "$ID" "$work/lost.1" "$work/lost.2"
expect 4 "--rows of a truncated dump"
[[ -z $out ]] || fail "--rows printed rows of a truncated dump"
printf 'ok 2: a lost row is reported truncated\n'

# ---- 3. no end frame
grep -v '"kind":"end"' "$work/frames" >"$work/frames_open"
verify "$work/frames_open"
expect 5 "no end frame"
[[ $out == "$ID public.item open rows_seen=$ROWS" ]] || fail "open report: $out"
verify --rows "$ID" "$work/frames_open"
expect 5 "--rows of an open dump"
# an open dump beside a truncated one: 4 wins
sed "s/$ID/${ID%?}1/" "$work/frames_lost" >"$work/frames_lost_other"
verify "$work/frames_open" "$work/frames_lost_other"
expect 4 "open and truncated"
[[ $(grep -c ' open ' <<<"$out") -eq 1 && $(grep -c ' truncated ' <<<"$out") -eq 1 ]] ||
	fail "open and truncated report: $out"
printf 'ok 3: a dump without end is open\n'

# ---- 4. conflicting duplicate
{
	cat "$work/frames"
	grep "\"seq\":77," "$work/frames" | sed 's/"id":77,/"id":7777,/'
} >"$work/frames_conflict"
verify "$work/frames_conflict"
expect 4 "a conflicting duplicate"
[[ $out == "$ID public.item conflict seq=77" ]] || fail "conflict report: $out"
printf 'ok 4: a conflicting duplicate is reported\n'

# ---- 5. empty table
{
	frame begin "$ID_EMPTY" public.empty 0 ',"total":0'
	frame end "$ID_EMPTY" public.empty 0 ',"row_count":0,"completed_at":"2026-11-30T01:02:03.500Z"'
} >"$work/empty"
verify "$work/empty" "$work/log.1" "$work/log.2"
expect 0 "an empty table beside a complete dump"
[[ $(sed -n 2p <<<"$out") == "$ID_EMPTY public.empty complete rows=0" ]] || fail "empty report: $out"
verify --rows "$ID_EMPTY" "$work/empty"
expect 0 "--rows of an empty table"
[[ -z $out ]] || fail "--rows of an empty table printed something"
printf 'ok 5: an empty table is complete with 0 rows\n'

# ---- 6. usage, I/O, malformed lines
verify
expect 2 "no file"
verify --no-such-option "$work/empty"
expect 2 "unknown option"
verify --rows not-an-id "$work/empty"
expect 2 "bad --rows id"
verify "$work/empty" "$work/does-not-exist"
expect 1 "missing file"
[[ $err == *does-not-exist* ]] || fail "the missing file is not named: $err"
verify --help
expect 0 "--help"
[[ $out == *"Exit status:"* && $out == *"  4  "* && $out == *"  5  "* ]] || fail "--help lacks the exit statuses"
# a torn frame (cut mid-record, with the canary in it) is skipped with file:line named
{
	cat "$work/empty"
	grep '"seq":5,' "$work/frames" | head -c 225
	printf '\n'
} >"$work/torn"
verify "$work/torn"
expect 0 "a torn foreign frame"
[[ $err == *"torn:3: invalid JSON at byte"* ]] || fail "the torn line is not named: $err"
printf 'ok 6: usage, I/O errors, malformed lines\n'

# ---- 7. deeply nested values
ID_DEEP=0190b9b2-6a1f-7c3d-8e4f-5a6b7c8d9e11
deep() { # N: a json value nested N deep, objects and arrays in turn
	local opens closes
	opens=$(printf '{"k":[%.0s' $(seq 1 $(($1 / 2))))
	closes=$(printf ']}%.0s' $(seq 1 $(($1 / 2))))
	printf '%s"%s"%s' "$opens" "$CANARY" "$closes"
}
{
	printf '{"id":0,"doc":%s}\n' "$(deep 5000)"
	printf '{"id":1,"doc":%s}\n' "$(deep 100000)"
	printf '{"id":2,"doc":[]}\n'
} >"$work/deep_rows"
{
	frame begin "$ID_DEEP" public.deep 0 ',"total":3'
	seq=0
	while IFS= read -r rec; do
		frame row "$ID_DEEP" public.deep "$seq" ",\"record\":$rec"
		seq=$((seq + 1))
	done <"$work/deep_rows"
	frame end "$ID_DEEP" public.deep 3 ',"row_count":3,"completed_at":"2026-11-30T01:02:04.000Z"'
} >"$work/deep"
verify "$work/deep"
expect 0 "a dump with deeply nested values"
[[ $out == "$ID_DEEP public.deep complete rows=3" ]] || fail "deep report: $out"
verify --rows "$ID_DEEP" "$work/deep"
expect 0 "--rows of a dump with deeply nested values"
cmp -s "$work/out" "$work/deep_rows" || fail "--rows output differs from the deeply nested records"
printf 'ok 7: values nested 5,000 and 100,000 deep are read\n'

status=0
printf 'PASS verify_snapshot (%ss)\n' $((SECONDS - started))
