#!/usr/bin/env bash
# The state-heavy Nexmark table of docs/benchmarks.md ("State backends"):
# each query whose every event touches keyed state, at parallelism 1, on
# the heap, on Pebble with the default 64 MiB cache of decoded values
# (the state fits), and on Pebble with a cache of a tenth of the state's
# peak (split over the query's keyed stores).
#
#   bench/nexmark/state.sh [EVENTS] [QUERIES...]
#
# EVENTS defaults to 1000000, QUERIES to q4 q6 q9 q18 q19 q20, RUNS
# (environment, default 5) is the number of runs behind each median and
# min–max, after one warm-up run that is not counted. Figures are
# events/s per core (CPU time); "of hashmap" divides the medians.
set -euo pipefail
cd "$(dirname "$0")/../.."
events=${1:-1000000}
shift || true
queries=("$@")
if [ ${#queries[@]} -eq 0 ]; then
	queries=(q4 q6 q9 q18 q19 q20)
fi
runs=${RUNS:-5}
bin=$(mktemp -d)/weir
go build -o "$bin" ./cmd/weir
run() {
	setsid bash -c 'echo -10 > /proc/self/autogroup 2>/dev/null; exec "$@"' _ "$@"
}
# percore REPORT: "median (min–max)" of the events/s per core.
percore() { sed -n 's/^cpu .*, \([0-9,]* ([0-9,]*–[0-9,]*)\) events\/s per core$/\1/p' <<<"$1"; }
median() { sed 's/ .*//; s/,//g' <<<"$1"; }
# stores QUERY: the keyed stores the query keeps (the cache is per store).
stores() {
	case $1 in
	q4 | q6) echo 2 ;;
	*) echo 1 ;;
	esac
}
echo "| query | hashmap | pebble, 64 MiB cache | of hashmap | state (cache peak) | pebble, cache ≤ state/10 | of hashmap |"
echo "|---|---:|---:|---:|---:|---:|---:|"
for q in "${queries[@]}"; do
	nx=("$bin" nexmark --query "$q" --events "$events" -p 1 --runs "$runs" --warmup 1)
	heap=$(run "${nx[@]}" --state-backend hashmap 2>&1)
	big=$(run "${nx[@]}" --state-backend pebble 2>&1)
	peak=$(sed -n 's/^state cache  peak \([0-9.]*\) MiB.*/\1/p' <<<"$big")
	small_kib=$(awk -v p="$peak" -v s="$(stores "$q")" 'BEGIN { printf "%d", p * 1024 / 10 / s }')
	small=$(run "${nx[@]}" --state-backend pebble -D "state.backend.pebble.cache-size=${small_kib}KiB" 2>&1)
	h=$(percore "$heap")
	b=$(percore "$big")
	s=$(percore "$small")
	ratio() { awk -v a="$(median "$1")" -v b="$(median "$2")" 'BEGIN { printf "%.2f", a / b }'; }
	cache="${small_kib} KiB"
	if [ "$(stores "$q")" != 1 ]; then
		cache="$(stores "$q") × $cache"
	fi
	echo "| $q | $h | $b | $(ratio "$b" "$h") | $peak MiB | $s, $cache | $(ratio "$s" "$h") |"
done
