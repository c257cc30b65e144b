#!/usr/bin/env bash
# Large-state streaming WordCount, issue 18: 4 M distinct words (10 a
# line) counted at p = 1 by examples/wordcount --mode streaming, with the
# hashmap and pebble backends, without checkpoints and with one every 2 s
# into file storage. Prints per configuration the median (min-max) of
# RUNS runs: wall time, words/s by the clock and per core (user + sys CPU
# time), and peak resident memory (from GNU time, which reads the
# kernel's rusage).
#
#	bench/largestate.sh [WORDS] [RUNS] [DIR]
set -euo pipefail
words=${1:-4000000}
runs=${2:-5}
dir=${3:-$(mktemp -d /tmp/weir-largestate-XXXX)}
mkdir -p "$dir"
cd "$(dirname "$0")/.."
go build -o "$dir/wordcount" ./examples/wordcount
input="$dir/words-$words.txt"
if [ ! -f "$input" ]; then
	awk -v n="$words" 'BEGIN { for (i = 0; i < n; i += 10) { line = ""; for (j = i; j < i + 10 && j < n; j++) line = line (j > i ? " " : "") sprintf("w%07d", j); print line } }' > "$input"
fi
for backend in hashmap pebble; do
	for interval in 0 2s; do
		rm -f "$dir/runs.txt"
		for _ in $(seq "$runs"); do
			rm -rf "$dir/chk" "$dir/tmp"
			mkdir -p "$dir/tmp"
			/usr/bin/time -f "%e %U %S %M" -o "$dir/time.txt" "$dir/wordcount" --mode streaming --input "$input" -p 1 \
				--state-backend "$backend" --checkpoint-interval "$interval" --checkpoint-dir "$dir/chk" \
				-D io.tmp.dirs="$dir/tmp" > /dev/null 2> "$dir/stderr.txt" || { cat "$dir/stderr.txt"; exit 1; }
			cat "$dir/time.txt" >> "$dir/runs.txt"
		done
		python3 - "$backend" "$interval" "$words" "$dir/runs.txt" <<'PY'
import statistics, sys
backend, interval, words, path = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
rows = [list(map(float, l.split())) for l in open(path) if l.strip()]
def fmt(vals, f):
    return "%s (%s-%s)" % (f(statistics.median(vals)), f(min(vals)), f(max(vals)))
wall = [r[0] for r in rows]
rate = [words / r[0] for r in rows]
core = [words / (r[1] + r[2]) for r in rows]
rss = [r[3] / 1024 for r in rows]
print("%-7s checkpoints %-3s wall %s s, %s words/s, per core %s, peak RSS %s MiB" % (
    backend, interval if interval != "0" else "off", fmt(wall, lambda v: "%.2f" % v),
    fmt(rate, lambda v: "{:,.0f}".format(v)), fmt(core, lambda v: "{:,.0f}".format(v)), fmt(rss, lambda v: "%.0f" % v)))
PY
	done
done
