#!/usr/bin/env bash
# Runs every shell block of README.md and docs/*.md as a newcomer would,
# on a fresh clone of this checkout's HEAD, and fails on the first block
# that does not do what its text says (docs/rundocs says how markers in
# the markdown skip a block, start a cluster for it or check its output).
# Not part of ./test.sh: it builds and runs the examples, a cluster and the
# SQL client, which takes minutes. Uses 127.0.0.1 and weir's default ports
# (8081, 6123), so no other weir cluster may run on this machine meanwhile.
#
#   docs/run-docs.sh                      all blocks
#   docs/run-docs.sh --uncommitted        with the working tree's uncommitted changes applied
#   docs/run-docs.sh -only docs/cluster.md[:LINE]   one file's blocks, or one block
#   docs/run-docs.sh -list                the blocks and how each would run
#
# Other flags go to rundocs (go run ./docs/rundocs -h).
set -euo pipefail

src=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
uncommitted=0
if [ "${1:-}" = "--uncommitted" ]; then
	uncommitted=1
	shift
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/weir-rundocs.XXXXXX")
rundocs_pid=""
cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	if [ -n "$rundocs_pid" ] && kill -0 "$rundocs_pid" 2>/dev/null; then
		kill -TERM "$rundocs_pid" 2>/dev/null || true
		wait "$rundocs_pid" 2>/dev/null || true
	fi
	# rundocs stops what the blocks leave running; this is the last word
	# if it could not (killed itself): the cluster, then anything with the
	# session's mark in its environment.
	if [ -x "$work/bin/weir" ] && ls "$work/run/weir/cluster/"*.pid >/dev/null 2>&1; then
		"$work/bin/weir" cluster stop --dir "$work/run/weir/cluster" >/dev/null 2>&1 || true
	fi
	if [ -n "${RUNDOCS_MARK:-}" ]; then
		for env in /proc/[0-9]*/environ; do
			if grep -qz "^RUNDOCS_MARK=$RUNDOCS_MARK\$" "$env" 2>/dev/null; then
				pid=${env#/proc/}
				pid=${pid%/environ}
				[ "$pid" != $$ ] && kill -KILL "$pid" 2>/dev/null || true
			fi
		done
	fi
	chmod -R u+w "$work" 2>/dev/null || true
	rm -rf "$work"
	exit "$rc"
}
trap cleanup EXIT INT TERM

# Every process below carries this mark, so that cleanup finds it even
# if it left its process group.
export RUNDOCS_MARK=$(basename "$work")

head=$(git -C "$src" rev-parse HEAD)
git clone -q --no-checkout "$src" "$work/weir"
git -C "$work/weir" checkout -q --detach "$head"
if [ $uncommitted = 1 ]; then
	git -C "$src" diff HEAD --binary | git -C "$work/weir" apply --allow-empty --whitespace=nowarn
	git -C "$src" ls-files --others --exclude-standard -z | (cd "$src" && xargs -0 -r cp --parents -t "$work/weir")
fi
echo "rundocs: a fresh clone of $head$([ $uncommitted = 1 ] && echo ' with uncommitted changes') in $work/weir"

# A fresh clone lives in a new directory, and without -trimpath the
# build cache keys on it: every run would compile weir and the examples
# from scratch (minutes on 2 busy cores). With it, the cache is shared.
export GOFLAGS="${GOFLAGS:+$GOFLAGS }-trimpath"
mkdir -p "$work/bin" "$work/tmp" "$work/run"
chmod 0700 "$work/run"
(cd "$work/weir" && go build -o "$work/bin/weir" ./cmd/weir && go build -o "$work/bin/rundocs" ./docs/rundocs)

export PATH="$work/bin:$PATH"
export XDG_RUNTIME_DIR="$work/run"
"$work/bin/rundocs" -root "$work/weir" -tmp "$work/tmp" "$@" &
rundocs_pid=$!
wait "$rundocs_pid"
