#!/usr/bin/env bash
# The project's whole test suite, as CI runs it: installs the real servers the tests use
# (Redis, etcd, haproxy from Debian; a MongoDB-wire server built from the Go module proxy;
# Node's packages for the JavaScript SDK), builds the yorkie binary, then runs the Go tests
# and the end-to-end suite of the real JS SDK. Every suite must find its servers: a missing
# one fails the run instead of being skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

step() { printf '\n== %s (at %ss)\n' "$*" "$SECONDS"; }

step "system packages"
need=()
command -v redis-server >/dev/null || need+=(redis-server)
command -v etcd >/dev/null || need+=(etcd-server)
command -v haproxy >/dev/null || need+=(haproxy)
# The dashboard test drives Yorkie's web dashboard in headless Chromium.
command -v chromium >/dev/null || need+=(chromium)
if [ ${#need[@]} -gt 0 ]; then
	if [ "$(id -u)" -ne 0 ]; then
		echo "missing ${need[*]}: install them (apt-get install ${need[*]}) or run this as root" >&2
		exit 1
	fi
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
for tool in go node npm; do
	command -v "$tool" >/dev/null || { echo "$tool is required" >&2; exit 1; }
done
node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 20 ? 0 : 1)' ||
	{ echo "Node.js 20 or newer is required, found $(node --version)" >&2; exit 1; }
redis-server --version
etcd --version | sed -n 1p
haproxy -v | sed -n 1p
chromium --version
node --version

step "build"
go build -ldflags "-X main.version=$(git describe --tags --always --dirty 2>/dev/null || echo dev)" -o bin/yorkie ./cmd/yorkie
(cd test/ferretdb && go build -o "$root/bin/ferretdb" .)
go vet ./...

step "static checks"
unformatted=$(gofmt -l $(git ls-files '*.go'))
[ -z "$unformatted" ] || { printf 'not gofmt-formatted:\n%s\n' "$unformatted" >&2; exit 1; }
go tool -modfile=tools/go.mod staticcheck ./...
unreachable=$(go tool -modfile=tools/go.mod deadcode -test ./...)
[ -z "$unreachable" ] || { printf 'dead code:\n%s\n' "$unreachable" >&2; exit 1; }

export YORKIE_TEST_REQUIRE_SERVERS=1
export YORKIE_BIN="$root/bin/yorkie"
export YORKIE_FERRETDB_BIN="$root/bin/ferretdb"

# The Go tests drive the JS SDK too (server/document/sdkdiff): install it first.
step "Node packages of the JavaScript SDK"
(cd test/e2e && npm ci --no-audit --no-fund --loglevel=error)

step "go test"
go test -count=1 -timeout 15m ./...

# The RPC port's fast paths (server/rpc/http1, server/rpc/jsoncodec) can be
# switched off; the protocol-level tests run again on net/http and protojson.
step "Go integration tests on the stock RPC paths (net/http alone, protojson)"
YORKIE_TEST_STOCK_RPC=1 go test -count=1 -timeout 10m ./test/integration/

step "benchmarks compile and run once"
go test -count=1 -run '^$' -bench . -benchtime 1x -timeout 10m ./...

step "fuzz targets, time-boxed, from the committed corpora"
./scripts/fuzz.sh

step "JavaScript SDK end-to-end"
(cd test/e2e && npm test)

step "JavaScript SDK end-to-end on the stock RPC paths (--rpc-fast-http1=false --rpc-fast-json=false)"
(cd test/e2e && npm run test:stock)

step "JavaScript SDK end-to-end on the MongoDB backend"
(cd test/e2e && npm run test:mongo)

step "JavaScript SDK against multi-process clusters (etcd and Redis stores, haproxy, failover)"
(cd test/e2e && npm run test:cluster)

step "done"
