#!/usr/bin/env bash
# The project's test command: formatting, vet, the whole test suite, the
# race detector on the packages that run goroutines, and every fuzzer for
# 10 s. CI runs exactly this (.ci/run). Needs Go; installs the Debian
# packages that tests need (MariaDB, kcat, SQLite, etcd, chromium) when they are missing.
set -euo pipefail
cd "$(dirname "$0")"

# Systems the tests need run for real, installed from Debian when missing
# (one apt-get update for all): MariaDB for the JDBC connector's tests
# (connector/jdbc, examples/wordcount; they start their own server) and
# kcat, which reads the Kafka sink's committed output as a read_committed
# consumer that is not franz-go; SQLite, the independent engine the batch
# SQL suite (table) compares its results with; etcd (etcd-server), which
# internal/ha runs as a separate process next to its embedded-server tests
# (Debian starts no service in a container; the test runs its own);
# chromium, headless, which cmd/weir's dashboard test drives. With
# WEIR_REQUIRE_SYSTEMS=1 a test that misses a system fails instead of
# skipping.
missing=()
if ! command -v mariadbd >/dev/null 2>&1 && [ ! -x /usr/sbin/mariadbd ]; then
	missing+=(mariadb-server)
fi
if ! command -v kcat >/dev/null 2>&1; then
	missing+=(kcat)
fi
if ! command -v sqlite3 >/dev/null 2>&1; then
	missing+=(sqlite3)
fi
if ! command -v etcd >/dev/null 2>&1 && [ ! -x /usr/bin/etcd ]; then
	missing+=(etcd-server)
fi
if ! command -v chromium >/dev/null 2>&1; then
	missing+=(chromium)
fi
# promtool (Debian's prometheus) parses the Prometheus endpoints of a
# JobManager and a TaskManager in cmd/weir's TestPrometheusEndpoints, and
# prometheus scrapes one with a token and mutual TLS in internal/cluster's
# TestPrometheusScrapesWithTheToken.
if ! command -v promtool >/dev/null 2>&1 || ! command -v prometheus >/dev/null 2>&1; then
	missing+=(prometheus)
fi
if [ ${#missing[@]} -gt 0 ]; then
	sudo=""
	[ "$(id -u)" -ne 0 ] && sudo=sudo
	$sudo apt-get update
	$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
fi
export WEIR_REQUIRE_SYSTEMS=1

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

echo "== deploy/kubernetes (a module of its own, so that client-go stays out of the core's go.mod)"
(cd deploy/kubernetes && go vet ./... && go test -count=1 -timeout 15m ./...)

echo "== go test -race (runtime packages)"
go test -count=1 -race -timeout 20m ./internal/... ./stream/... ./connector/... ./codec/... ./state/... ./window/... ./nexmark/... ./config/... ./table/... \
	./examples/pagerank/... ./examples/components/... ./examples/kmeans/...

echo "== fuzz: every fuzzer for a bounded time (bench/fuzz/run.sh)"
bench/fuzz/run.sh 10s

echo "== all tests passed"
