#!/usr/bin/env bash
# regress/packaging.sh: the packaging, as a user installs it (as root; called by .ci/run after
# regress/run_tests.sh; not one of run_tests.sh's unprivileged suites, since it installs
# packages and replaces what `make install` put in the system's PostgreSQL).
#
#   deps      apt-get installs what it needs (pgxnclient, debhelper, dpkg-dev,
#             postgresql-server-dev-all, systemd, unzip, man-db) when missing
#   unit      systemd-analyze verify of packaging/replicant@.service (offline: no running
#             systemd needed), the lines the service relies on, and its hardening
#             (systemd-analyze security --offline: an exposure of at most 4.5, "OK")
#   dist      make dist: replicant-VERSION.zip holds the committed tree and no build output,
#             and its META.json passes regress/tools/check_meta.py
#   pgxn      pgxn install ./replicant-VERSION.zip (from the zip, not the tree; without the
#             consumer's optional libraries, as with only the server headers and libpq; the man
#             page installed into pg_config --mandir), then in a
#             temporary cluster: pgxn load (CREATE EXTENSION), a decoding session through the
#             installed plugin (replicant.peek_changes) and the installed consumer run to
#             --endpos into a file sink, with --config
#   deb       dpkg-buildpackage -us -uc -b in a copy of the committed tree: both packages,
#             with the files each must hold
#   deb-run   the .debs installed (apt-get), the unit verified where it is installed, the
#             same session with /usr/bin/replicant and the packaged plugin (no tree build on
#             PATH), the demo on the installed files (regress/demo.sh --installed: a mirror
#             and a log), then apt-get purge: no file of either package left
# At the end the tree's build is installed again (make install in RP_RESTORE_TREE, the tree
# by default). Logs in regress/log/packaging-*.log. The last line is "N passed, N failed".
#
# usage: bash regress/packaging.sh            (as root)
#        regress/packaging.sh --phase-session CONSUMER [ZIP]   (internal, unprivileged)
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=regress/lib.sh
. "$here/lib.sh"

VERSION=$(sed -n "s/^default_version *= *'\(.*\)'/\1/p" "$RP_ROOT/replicant.control")
ZIPNAME=replicant-$VERSION.zip

# ---------------------------------------------------------------- the session, unprivileged
# A throwaway cluster; the extension created (pgxn load ZIP, or CREATE EXTENSION); a slot of
# the installed plugin; a workload read through the extension's SQL API, then by CONSUMER to
# --endpos into a file sink, configured by a --config file. Fails unless the log holds exactly
# the workload's changes and ends with a checkpoint line.
if [[ ${1:-} == --phase-session ]]; then
	set -e
	consumer=$2 zip=${3:-}
	trap rp_cluster_cleanup_all EXIT
	rp_cluster_start src
	work=$(mktemp -d /tmp/rp-pkgsession.XXXXXX)
	if [[ -n $zip ]]; then
		pgxn load --yes --unstable --pg_config "$PG_CONFIG" -h "$src_HOST" -p "$src_PORT" \
			-U "$src_USER" -d postgres "$zip"
	else
		rp_psql src -c 'CREATE EXTENSION replicant'
	fi
	[[ $(rp_psql src -Atc "SELECT extversion FROM pg_extension WHERE extname = 'replicant'") == "$VERSION" ]] ||
		rp_die "extension replicant $VERSION is not in the database"
	cat >"$work/session.conf" <<-CONF
		# written by regress/packaging.sh
		dbname = $(rp_conninfo src)
		slot = pkg
		sink = file:$work/changes.jsonl
		state-dir = $work/state
		no-loop
	CONF
	"$consumer" --config "$work/session.conf" --create-slot
	rp_psql src <<-'SQL'
		CREATE TABLE pkg_t (id int PRIMARY KEY, v text);
		INSERT INTO pkg_t SELECT g, 'v' || g FROM generate_series(1, 100) g;
		UPDATE pkg_t SET v = 'u' || id WHERE id <= 10;
		DELETE FROM pkg_t WHERE id > 95;
	SQL
	endpos=$(rp_psql src -Atc 'SELECT pg_current_wal_lsn()')
	peeked=$(rp_psql src -Atc "SELECT count(*) FROM replicant.peek_changes('pkg') r
		WHERE r->>'kind' IN ('insert', 'update', 'delete')")
	[[ $peeked == 115 ]] || rp_die "replicant.peek_changes returned $peeked changes, not 115"
	# the command line wins over the file (start is not in it; -E neither)
	"$consumer" --config "$work/session.conf" --start -E "$endpos"
	python3 - "$work/changes.jsonl" <<-'PY'
		import collections, json, sys
		kinds = collections.Counter()
		last = None
		for line in open(sys.argv[1]):
		    rec = json.loads(line)
		    last = rec["kind"]
		    if rec.get("table") == "pkg_t":
		        kinds[rec["kind"]] += 1
		want = {"insert": 100, "update": 10, "delete": 5}
		if dict(kinds) != want or last != "checkpoint":
		    sys.exit(f"file sink log: {dict(kinds)} (want {want}), last line {last}")
		print("file sink log: 100 inserts, 10 updates, 5 deletes, then a checkpoint")
	PY
	# what the service unit does: SIGHUP (ExecReload) reopens the log after a rotation,
	# SIGTERM stops cleanly (exit 0)
	mv "$work/changes.jsonl" "$work/changes.jsonl.1"
	"$consumer" --config "$work/session.conf" --start &
	pid=$!
	for _ in $(seq 600); do
		[[ $(rp_psql src -Atc "SELECT active_pid IS NOT NULL FROM pg_replication_slots WHERE slot_name = 'pkg'") == t ]] && break
		kill -0 "$pid" || rp_die "the consumer ended before it streamed"
		sleep 0.1
	done
	rp_psql src -c "INSERT INTO pkg_t VALUES (1001, 'before the rotation')"
	for _ in $(seq 600); do
		grep -q '"id":1001' "$work/changes.jsonl" 2>/dev/null && break
		sleep 0.1
	done
	grep -q '"id":1001' "$work/changes.jsonl" || rp_die "row 1001 never reached the log"
	mv "$work/changes.jsonl" "$work/changes.jsonl.2"
	kill -HUP "$pid"
	rp_psql src -c "INSERT INTO pkg_t VALUES (1002, 'after the rotation')"
	for _ in $(seq 600); do
		grep -q '"id":1002' "$work/changes.jsonl" 2>/dev/null && break
		sleep 0.1
	done
	grep -q '"id":1002' "$work/changes.jsonl" || rp_die "after SIGHUP, row 1002 is not in the reopened log"
	! grep -q '"id":1002' "$work/changes.jsonl.2" || rp_die "after SIGHUP, row 1002 went to the rotated log"
	kill -TERM "$pid"
	rc=0
	wait "$pid" || rc=$?
	[[ $rc == 0 ]] || rp_die "SIGTERM: the consumer exited $rc, not 0"
	echo "SIGHUP reopened the log, SIGTERM stopped the consumer with exit 0"
	rm -rf "$work"
	exit 0
fi

# ---------------------------------------------------------------- as root
[[ $(id -u) -eq 0 ]] || rp_die "regress/packaging.sh installs packages: run it as root"
cd "$RP_ROOT"
logdir=$RP_ROOT/regress/log
mkdir -p "$logdir"
RP_RESTORE_TREE=${RP_RESTORE_TREE:-$RP_ROOT}
passed=0
failed=0
scratch=$(mktemp -d /tmp/rp-packaging.XXXXXX)
chmod 0755 "$scratch"

pass() { passed=$((passed + 1)); printf 'ok      packaging/%s (%ss)\n' "$1" "$2"; }
fail() {
	failed=$((failed + 1))
	printf 'FAILED  packaging/%s (%ss)\n' "$1" "$2"
	printf '  --- last 40 lines of %s ---\n' "$3"
	tail -n 40 "$3" | sed 's/^/  | /'
}
# step NAME FUNCTION: FUNCTION (in a subshell, set -e) with its output into its log, passed
# or failed
step() {
	local name=$1 log=$logdir/packaging-$1.log start=$SECONDS rc
	(
		set -e
		"$2"
	) >"$log" 2>&1 </dev/null
	rc=$?
	if ((rc == 0)); then pass "$name" $((SECONDS - start)); else fail "$name" $((SECONDS - start)) "$log"; fi
	return "$rc"
}

restore() {
	rp_say "restoring the tree's build: make -C $RP_RESTORE_TREE install"
	make -C "$RP_RESTORE_TREE" -j2 >"$logdir/packaging-restore.log" 2>&1 &&
		make -C "$RP_RESTORE_TREE" install >>"$logdir/packaging-restore.log" 2>&1 ||
		{ echo "error: make install in $RP_RESTORE_TREE failed (log: $logdir/packaging-restore.log)" >&2; return 1; }
}

deps() {
	local want=(pgxnclient debhelper dpkg-dev postgresql-server-dev-all systemd unzip libpq-dev
		pkg-config libmicrohttpd-dev libnats-dev python3 man-db) missing=() p
	for p in "${want[@]}"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
	done
	if ((${#missing[@]})); then
		apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
	fi
	make -j2
}

# verify_unit DIR NAME [--man=no]: systemd-analyze verify of DIR's replicant@NAME.service;
# it exits 0 on some problems it only prints, so any output fails too
verify_unit() {
	local out rc=0
	out=$(cd "$1" && systemd-analyze verify ${3:+"$3"} "./replicant@$2.service" 2>&1) || rc=$?
	printf '%s\n' "$out"
	((rc == 0)) && [[ -z $out ]]
}

unit() {
	local u=packaging/replicant@.service line
	for line in 'User=replicant' 'Restart=on-failure' 'RestartPreventExitStatus=2 3 4' \
		'ExecReload=/bin/kill -HUP $MAINPID' 'KillSignal=SIGTERM' \
		'ExecStart=/usr/bin/replicant --config /etc/replicant/%i.conf'; do
		grep -qxF "$line" "$u" || { echo "$u: no line $line"; return 1; }
	done
	mkdir -p "$scratch/unit"
	sed "s#^ExecStart=/usr/bin/replicant #ExecStart=$RP_ROOT/consumer/replicant #" "$u" >"$scratch/unit/replicant@.service"
	# the man page is not installed yet: deb-run verifies with it
	verify_unit "$scratch/unit" demo --man=no || return 1
	# hardened: an exposure of at most 4.5 ("OK"), scored without a running systemd
	(cd "$scratch/unit" && systemd-analyze security --offline=true --threshold=45 ./replicant@demo.service) \
		|| { echo "systemd-analyze security: the unit's exposure is above 4.5 (above)"; return 1; }
	# and the check does fail on a broken unit
	sed 's/^Type=exec/Type=nonsense/' "$scratch/unit/replicant@.service" >"$scratch/unit/broken@.service"
	mv "$scratch/unit/broken@.service" "$scratch/unit/replicant@.service"
	if verify_unit "$scratch/unit" demo --man=no; then
		echo "systemd-analyze verify passed a unit with Type=nonsense"
		return 1
	fi
	echo "unit verified"
}

dist() {
	local listing
	make dist || return 1
	listing=$(unzip -Z1 "$ZIPNAME")
	grep -qx "replicant-$VERSION/META.json" <<<"$listing" || { echo "no META.json in $ZIPNAME"; return 1; }
	grep -qx "replicant-$VERSION/doc/replicant.1" <<<"$listing" || { echo "no man page in $ZIPNAME"; return 1; }
	if grep -E '\.(o|so|a|bc|deb)$|/consumer/replicant$|/regress/log/|/tmp_check/' <<<"$listing"; then
		echo "build outputs in $ZIPNAME (above)"
		return 1
	fi
	rm -rf "$scratch/unzip"
	unzip -q "$ZIPNAME" -d "$scratch/unzip"
	python3 "$scratch/unzip/replicant-$VERSION/regress/tools/check_meta.py" "$scratch/unzip/replicant-$VERSION/META.json"
	cp "$ZIPNAME" "$scratch/$ZIPNAME"
	chmod 0644 "$scratch/$ZIPNAME"
}

pgxn_install() {
	# from the zip, in a folder of its own: nothing of the tree is used; built as on a
	# machine with only the server headers and libpq (MHD=no NATS=no: the consumer's optional
	# libraries left out even where they are installed)
	(cd "$scratch" && MHD=no NATS=no pgxn install --yes --unstable --pg_config "$(command -v "$PG_CONFIG")" "./$ZIPNAME") || return 1
	[[ -f $("$PG_CONFIG" --pkglibdir)/replicant.so ]] || { echo "no replicant.so installed"; return 1; }
	# the man page the README promises, beside PostgreSQL's own
	man -M "$("$PG_CONFIG" --mandir)" -w replicant || { echo "pgxn install: no man page in $("$PG_CONFIG" --mandir)"; return 1; }
	if ldd "$RP_BINDIR/replicant" | grep -E 'libnats|libmicrohttpd'; then
		echo "the PGXN build linked an optional library (above) despite MHD=no NATS=no"
		return 1
	fi
	rp_run_unprivileged regress/packaging.sh --phase-session "$RP_BINDIR/replicant" "$scratch/$ZIPNAME"
}

deb_build() {
	rm -rf "$scratch/deb"
	mkdir -p "$scratch/deb"
	git archive --prefix="replicant-$VERSION/" HEAD | tar -x -C "$scratch/deb"
	(cd "$scratch/deb/replicant-$VERSION" && dpkg-buildpackage -us -uc -b -j2) || return 1
	local ext cli f
	ext=$(ls "$scratch"/deb/postgresql-*-replicant_"$VERSION"-1_*.deb | head -n 1)
	cli=$(ls "$scratch"/deb/replicant_"$VERSION"-1_*.deb | head -n 1)
	for f in ./usr/lib/postgresql/15/lib/replicant.so ./usr/share/postgresql/15/extension/replicant.control \
		"./usr/share/postgresql/15/extension/replicant--$VERSION.sql"; do
		dpkg-deb -c "$ext" | awk '{ print $6 }' | grep -qxF "$f" || { echo "$ext lacks $f"; return 1; }
	done
	for f in ./usr/bin/replicant ./usr/share/man/man1/replicant.1.gz ./lib/systemd/system/replicant@.service \
		./usr/share/doc/replicant/examples/replicant.rules.yml; do
		dpkg-deb -c "$cli" | awk '{ print $6 }' | grep -qxF "$f" || { echo "$cli lacks $f"; return 1; }
	done
	if dpkg-deb -c "$ext" | awk '{ print $6 }' | grep -q '/bin/replicant$'; then
		echo "$ext holds the consumer too"
		return 1
	fi
	echo "built: $(basename "$ext") $(basename "$cli")"
}

deb_run() {
	local ext cli rc=0 f
	ext=$(ls "$scratch"/deb/postgresql-*-replicant_"$VERSION"-1_*.deb | head -n 1)
	cli=$(ls "$scratch"/deb/replicant_"$VERSION"-1_*.deb | head -n 1)
	# the tree's files out of the way first, so that only the packages' are there
	rm -f "$("$PG_CONFIG" --pkglibdir)/replicant.so" "$RP_BINDIR/replicant" \
		"$("$PG_CONFIG" --sharedir)"/extension/replicant*
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$ext" "$cli" || return 1
	dpkg -L replicant "$(dpkg-deb -f "$ext" Package)" >"$scratch/deb-files"
	id replicant || { echo "no user replicant"; rc=1; }
	[[ $(stat -c '%U:%G %a' /etc/replicant) == "root:replicant 750" ]] || { echo "/etc/replicant: $(stat -c '%U:%G %a' /etc/replicant)"; rc=1; }
	man -w replicant || { echo "man replicant: no page"; rc=1; }
	verify_unit /lib/systemd/system demo || rc=1
	((rc == 0)) && { rp_run_unprivileged regress/packaging.sh --phase-session /usr/bin/replicant || rc=1; }
	((rc == 0)) && { bash "$RP_ROOT/regress/demo.sh" --installed || { echo "the demo on the installed files failed"; rc=1; }; }
	DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq replicant "$(dpkg-deb -f "$ext" Package)" || return 1
	while read -r f; do
		# folders the system shares (/usr/bin) stay; no file may
		if [[ -e $f && ! -d $f ]]; then echo "left after purge: $f"; rc=1; fi
	done <"$scratch/deb-files"
	[[ ! -e /etc/replicant && ! -e /var/lib/replicant ]] || { echo "/etc/replicant or /var/lib/replicant left after purge"; rc=1; }
	return "$rc"
}

rp_say "packaging tests (logs: regress/log/packaging-*.log)"
step deps deps || { restore; printf '%d passed, %d failed\n' "$passed" "$((failed + 1))"; exit 1; }
step unit unit
if step dist dist; then
	step pgxn pgxn_install
fi
if step deb deb_build; then
	step deb-run deb_run
fi
restore || failed=$((failed + 1))
rm -rf "$scratch"
printf '%d passed, %d failed\n' "$passed" "$failed"
((failed == 0))
