#!/usr/bin/env bash
# Nexmark tables for docs/benchmarks.md.
#
#   bench/nexmark/table.sh [EVENTS] [QUERIES...]
#       every query at parallelism 1 and 2, hashmap and pebble state,
#       checkpoints every 10 s, against its hand-written loop; both sides
#       hash every result and the run fails unless they agree.
#   bench/nexmark/table.sh --flink [EVENTS] [QUERIES...]
#       at the reference suite's settings (10 M events/s of event time,
#       Pebble state, checkpoints on), parallelism 2, no loop: the table
#       set beside Flink's published figures.
#
# EVENTS defaults to 1000000; QUERIES to all of them; RUNS (environment,
# default 5) is the number of runs behind every median and min–max. The
# weir binary is built first; each query runs niced up (autogroup -10) as
# in the other benchmarks when the shell may do so.
set -euo pipefail
cd "$(dirname "$0")/../.."
flink=false
if [ "${1:-}" = "--flink" ]; then
	flink=true
	shift
fi
events=${1:-1000000}
shift || true
queries=("$@")
runs=${RUNS:-5}
if [ ${#queries[@]} -eq 0 ]; then
	queries=(q0 q1 q2 q3 q4 q5 q6 q7 q8 q9 q10 q11 q12 q13 q14 q15 q16 q17 q18 q19 q20 q21 q22)
fi
bin=$(mktemp -d)/weir
go build -o "$bin" ./cmd/weir
run() {
	setsid bash -c 'echo -10 > /proc/self/autogroup 2>/dev/null; exec "$@"' _ "$@"
}
field() { # field NAME: the rest of the line after NAME in weir nexmark's report
	awk -v n="$1" '$1 == n { $1 = ""; print substr($0, 2); exit }'
}
# Flink 1.13's published throughput per core (K events/s), from the
# nexmark/nexmark README (100 M events, 8 TaskManagers of 1 slot on 3
# machines of 8 cores, RocksDB, checkpoints every 3 min). q6 is not in it.
declare -A flinkK=([q0]=155.02 [q1]=157.94 [q2]=175.21 [q3]=152.12 [q4]=34.33 [q5]=22.14 [q7]=12.33
	[q8]=146.14 [q9]=14.24 [q10]=57.81 [q11]=39.7 [q12]=75.67 [q13]=130.73 [q14]=161.23 [q15]=72.42
	[q16]=18.65 [q17]=116.8 [q18]=53.7 [q19]=44.04 [q20]=18.98 [q21]=98.49 [q22]=129.96)

if $flink; then
	echo "| query | weir events/s (p = 2) | weir events/s per core | Flink 1.13 events/s per core | weir/Flink per core |"
	echo "|---|---:|---:|---:|---:|"
	for q in "${queries[@]}"; do
		echo "$q" >&2
		out=$(run "$bin" nexmark --query "$q" --events "$events" -p 2 --rate 10000000 --state-backend pebble \
			--checkpoint-interval 10s --runs "$runs" 2>&1) || { echo "| $q | failed | | | |"; echo "$out" >&2; continue; }
		tput=$(echo "$out" | field throughput | sed 's/ events\/s$//')
		core=$(echo "$out" | field cpu | sed -E 's/.*cores\), //; s/ events\/s per core$//')
		f=${flinkK[$q]:-}
		if [ -z "$f" ]; then
			echo "| $q | $tput | $core | not published | |"
			continue
		fi
		med=$(echo "$core" | awk '{gsub(",", "", $1); print $1}')
		lo=$(echo "$core" | sed -E 's/.*\(([0-9,]+)–.*/\1/; s/,//g')
		hi=$(echo "$core" | sed -E 's/.*–([0-9,]+)\).*/\1/; s/,//g')
		ratio=$(awk -v m="$med" -v l="$lo" -v h="$hi" -v f="$f" 'BEGIN { printf "%.1f (%.1f–%.1f)", m/(f*1000), l/(f*1000), h/(f*1000) }')
		echo "| $q | $tput | $core | $(awk -v f="$f" 'BEGIN { printf "%.0f", f*1000 }') | $ratio |"
	done
	exit 0
fi

echo "| query | backend | p | events/s | events/s per core | loop events/s | loop events/s per core | engine/loop | engine/loop per core |"
echo "|---|---|---|---:|---:|---:|---:|---:|---:|"
for q in "${queries[@]}"; do
	for backend in hashmap pebble; do
		for p in 1 2; do
			echo "$q $backend p=$p" >&2
			out=$(run "$bin" nexmark --query "$q" --events "$events" -p "$p" --state-backend "$backend" \
				--checkpoint-interval 10s --baseline --runs "$runs" 2>&1) || { echo "| $q | $backend | $p | failed | | | | | |"; echo "$out" >&2; continue; }
			tput=$(echo "$out" | field throughput | sed 's/ events\/s$//')
			core=$(echo "$out" | field cpu | sed -E 's/.*cores\), //; s/ events\/s per core$//')
			loop=$(echo "$out" | field loop | sed -E 's/^.* s, (.*) events\/s, .*events\/s per core.*/\1/')
			loopcore=$(echo "$out" | field loop | sed -E 's/.* events\/s, (.*) events\/s per core.*/\1/')
			ratio=$(echo "$out" | field engine/loop | sed -E 's/^throughput (.*), per core (.*)$/\1|\2/')
			echo "| $q | $backend | $p | $tput | $core | $loop | $loopcore | ${ratio%|*} | ${ratio#*|} |"
		done
	done
done
