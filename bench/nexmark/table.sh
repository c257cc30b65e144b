#!/usr/bin/env bash
# Runs every Nexmark query at parallelism 1 and 2 with the hashmap and the
# pebble state backend, checkpoints every 10 s, against its hand-written
# loop, and prints a markdown table for docs/benchmarks.md.
#
#   bench/nexmark/table.sh [EVENTS] [QUERIES...]
#
# EVENTS defaults to 1000000; QUERIES to all of them. The weir binary is
# built first; each run is niced up (autogroup -10) as in the other
# benchmarks when the shell may do so.
set -euo pipefail
cd "$(dirname "$0")/../.."
events=${1:-1000000}
shift || true
queries=("$@")
if [ ${#queries[@]} -eq 0 ]; then
	queries=(q0 q1 q2 q3 q4 q5 q6 q7 q8 q9 q10 q11 q12 q13 q14 q15 q16 q17 q18 q19 q20 q21 q22)
fi
bin=$(mktemp -d)/weir
go build -o "$bin" ./cmd/weir
run() {
	setsid bash -c 'echo -10 > /proc/self/autogroup 2>/dev/null; exec "$@"' _ "$@"
}
field() { # field NAME: the value after NAME in weir nexmark's report
	awk -v n="$1" '$1 == n { $1 = ""; print substr($0, 2); exit }'
}
echo "| query | backend | p | events/s | events/s per core | loop events/s | engine/loop | engine/loop per core |"
echo "|---|---|---|---:|---:|---:|---:|---:|"
for q in "${queries[@]}"; do
	for backend in hashmap pebble; do
		for p in 1 2; do
			out=$(run "$bin" nexmark --query "$q" --events "$events" -p "$p" --state-backend "$backend" \
				--checkpoint-interval 10s --baseline 2>&1) || { echo "| $q | $backend | $p | failed | | | | |"; continue; }
			tput=$(echo "$out" | field throughput | awk '{print $1}')
			core=$(echo "$out" | field cpu | sed -E 's/.*\), ([0-9,]+) events\/s per core/\1/')
			loop=$(echo "$out" | field loop | sed -E 's/^[^,]*, ([0-9,]+) events\/s.*/\1/')
			ratio=$(echo "$out" | field engine/loop | sed -E 's/throughput ([0-9.]+), per core ([0-9.]+).*/\1 \2/')
			echo "| $q | $backend | $p | $tput | $core | $loop | ${ratio% *} | ${ratio#* } |"
		done
	done
done
