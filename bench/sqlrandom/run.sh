#!/usr/bin/env bash
# Runs the random SQL generator (internal/sql/sqlgen) against SQLite for a
# given time: seed after seed, 100 batch queries and 13 streaming-only ones
# each, through table's TestRandomSQLAgainstSQLite. Prints the counts
# (generated, matched SQLite, refused cleanly by error class, mismatches,
# panics, hangs, errors without a position) and writes every failing query
# with its seed and index, and the command that replays it, to OUT.
#
# usage: bench/sqlrandom/run.sh [DURATION] [FIRST_SEED] [OUT]
#        DURATION 30m (default), FIRST_SEED 1000 (default; the CI run uses
#        seed 1), OUT a directory (default: a new one under /tmp)
#
# The test bounds its own time (DURATION, and 90 s for any one query), so
# go test runs without its timeout. Exit status 0 when there was no
# finding. Needs sqlite3 (./test.sh installs it).
set -euo pipefail
cd "$(dirname "$0")/../.."

duration=${1:-30m}
seed=${2:-1000}
out=${3:-$(mktemp -d /tmp/weir-sqlrandom.XXXXXX)}
mkdir -p "$out"
if ! command -v sqlite3 >/dev/null 2>&1; then
	echo "sqlite3 is not installed (apt-get install sqlite3)" >&2
	exit 2
fi
echo "sqlrandom: $duration from seed $seed; findings go to $out"
log="$out/run.log"
status=0
WEIR_SQLGEN_SEED=$seed WEIR_SQLGEN_QUERIES=100 WEIR_SQLGEN_DURATION=$duration WEIR_SQLGEN_OUT=$out \
	go test -count=1 -timeout 0 -run '^TestRandomSQLAgainstSQLite$' -v ./table >"$log" 2>&1 || status=$?
# The counts, as the test logs them.
sed -n '/sqlgen: seeds/,/^--- /p' "$log" | sed '$d' | sed 's/^    //'
n=$(find "$out" -name 'seed-*.txt' | wc -l)
echo "findings written: $n (in $out); full log: $log"
exit $status
