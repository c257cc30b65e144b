#!/usr/bin/env bash
# Issue 8's fault injection against the exactly-once JDBC sink: the
# streaming WordCount at parallelism 2 writes a row (word, n) per
# occurrence through XA transactions into a MariaDB server started for the
# run, on a JobManager and three 2-slot TaskManagers (processes on
# 127.0.0.1), checkpoints every 300 ms, a fault every 3-5 s (SIGKILL of a
# TaskManager or a worker, SIGSTOP of a TaskManager for 8 s). Each round's
# table must equal the failure-free run's, and no XA transaction may be
# left prepared. Needs Debian's mariadb-server.
#
# Usage: bench/verify/jdbc.sh [ROUNDS] [WORDS] [OUT]
#   ROUNDS rounds (default 3), WORDS words of input (default 600000: a
#   round of about 30 s at 2,000 lines a second), OUT where reports go.
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds=${1:-3}
words=${2:-600000}
out=${3:-$(mktemp -d /tmp/weir-repro-jdbc-XXXX)}
mkdir -p "$out"
go build -o "$out/weir" ./cmd/weir
go build -o "$out/wordcount" ./examples/wordcount
go build -o "$out/verify-jdbc" ./bench/verify/jdbc
lines=$((words / 10))
rate=$((lines / 30))
[ -f "$out/words-$words.txt" ] || bench/verify/words.sh "$words" "$out/words-$words.txt"
"$out/verify-jdbc" --weir "$out/weir" --program "$out/wordcount" --input "$out/words-$words.txt" \
	--rate "$rate" --rounds "$rounds" --dir "$out/run" --report "$out/jdbc.json" 2> "$out/jdbc.log"
