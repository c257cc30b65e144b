#!/usr/bin/env bash
# The project's test command: formatting, vet, the whole test suite, the
# race detector on the packages that run goroutines, and every fuzzer for
# 10 s. CI runs exactly this (.ci/run). Needs only Go.
set -euo pipefail
cd "$(dirname "$0")"

# Systems the tests need run for real: a missing one fails its tests
# instead of skipping them.
export WEIR_REQUIRE_SYSTEMS=1
# Kafka: kcat (librdkafka) reads the Kafka sink's committed output as a
# read_committed consumer that is not franz-go.
if ! command -v kcat >/dev/null; then
	sudo=""; [ "$(id -u)" -eq 0 ] || sudo=sudo
	$sudo apt-get update
	$sudo apt-get install -y --no-install-recommends kcat
fi

echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
	echo "gofmt would change:" $unformatted >&2
	exit 1
fi

echo "== go vet"
go vet ./...

echo "== go test"
go test -count=1 -timeout 20m ./...

echo "== go test -race (runtime packages)"
go test -count=1 -race -timeout 20m ./internal/... ./stream/... ./connector/... ./codec/... ./state/... ./window/... ./nexmark/... ./config/...

echo "== fuzz: every fuzzer for a bounded time (bench/fuzz/run.sh)"
bench/fuzz/run.sh 10s

echo "== all tests passed"
