#!/usr/bin/env bash
# Issue 12's three reproductions of exactly-once violations on a cluster,
# run with weir verify: streaming WordCount at parallelism 2 on a JobManager
# and three 2-slot TaskManagers (processes on 127.0.0.1), checkpoints every
# 300 ms, a fault every 3-5 s while the job runs (about 30 s a round):
#
#   kill   SIGKILL of a TaskManager (a replacement starts at once)
#   stop   SIGSTOP of a TaskManager for 8 s (heartbeat timeout 5 s), SIGCONT
#   mix    both, and SIGKILL of worker processes
#   ha     mix, and SIGKILL of the leading JobManager on a highly available
#          cluster (etcd, two JobManagers; needs Debian's etcd-server)
#
# Usage: [SCENARIOS="kill stop mix ha"] bench/verify/repro.sh [ROUNDS] [WORDS] [OUT]
#   ROUNDS rounds per scenario (default 20), WORDS words of input (default
#   3000000, as in the issue), OUT where reports and evidence go.
# Exits non-zero if any round lost or duplicated a line; the summary of
# each scenario is printed and its JSON report kept in OUT/<scenario>.json.
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds=${1:-20}
words=${2:-3000000}
out=${3:-$(mktemp -d /tmp/weir-repro-XXXX)}
mkdir -p "$out"
go build -o "$out/weir" ./cmd/weir
go build -o "$out/wordcount" ./examples/wordcount
# Ten words a line from a 5,000-word vocabulary; a line rate that makes a
# round last about 30 s.
lines=$((words / 10))
rate=$((lines / 30))
[ -f "$out/words-$words.txt" ] || bench/verify/words.sh "$words" "$out/words-$words.txt"
status=0
scenarios=${SCENARIOS:-kill stop mix ha}
for scenario in $scenarios; do
	case $scenario in
	kill) faults=kill-taskmanager ;;
	stop) faults=stop-taskmanager ;;
	mix) faults=kill-taskmanager,kill-worker,stop-taskmanager ;;
	ha) faults=kill-jobmanager,kill-taskmanager,kill-worker,stop-taskmanager ;;
	esac
	echo "== $scenario: $rounds rounds of $words words, faults $faults"
	"$out/weir" verify -p 2 --taskmanagers 3 --slots 2 --rounds "$rounds" --faults "$faults" \
		--min-interval 3s --max-interval 5s --stop-for 8s --heartbeat-interval 1s --heartbeat-timeout 5s \
		--dir "$out/$scenario" --report "$out/$scenario.json" \
		-D restart-strategy.type=fixed-delay -D restart-strategy.fixed-delay.attempts=1000 \
		-D restart-strategy.fixed-delay.delay=200ms \
		"$out/wordcount" --mode streaming --input "$out/words-$words.txt" --output '{output}' \
		--checkpoint-dir 'file://{checkpoints}' --checkpoint-interval 300ms --rate "$rate" \
		2> "$out/$scenario.log" || status=1
done
echo "reports in $out"
exit $status
