#!/usr/bin/env bash
# Runs every fuzz target for a while (FUZZTIME, default 5s each), starting from the corpora
# committed under each package's testdata/fuzz. With -update, the inputs the fuzzer found
# interesting are copied back into those corpora (to be committed).
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${FUZZTIME:-5s}
update=false
[ "${1:-}" = "-update" ] && update=true

targets=(
	"./server/rpc/http1 FuzzHTTP1Head"
	"./server/rpc/jsoncodec FuzzJSONCodec"
	"./server/backend FuzzPushPullPack"
	"./server/affinity FuzzParseSessionKey"
	"./test/integration FuzzRequestDecoding"
	"./server/document FuzzApplyChanges"
	"./server/document FuzzTextOps"
	"./server/document FuzzTextSnapshot"
	"./server/document FuzzTreeOps"
	"./server/webhook/authwebhook FuzzDecodeAnswer"
	"./server/schema FuzzCheckBody"
	"./server/yson FuzzParseObject"
)
cache=$(go env GOCACHE)/fuzz
module=$(go list -m)
for t in "${targets[@]}"; do
	read -r pkg name <<<"$t"
	echo "fuzz $pkg $name for $fuzztime"
	# Minimising a new input is bounded by runs, not time: a minimisation still
	# under way when -fuzztime ends fails the run with "context deadline
	# exceeded", which a busy machine makes likely.
	# The time box can also end while a worker is still busy with an input it
	# found interesting, with the same error and no input written: that is no
	# finding. A real one writes its input under testdata/fuzz and fails.
	out=$(mktemp)
	if ! go test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" -fuzzminimizetime 50x "$pkg" 2>&1 | tee "$out"; then
		if grep -q 'context deadline exceeded' "$out" && ! grep -q 'Failing input written to' "$out"; then
			echo "fuzz $pkg $name: the time box ended while the fuzzer was busy; no failing input"
		else
			rm -f "$out"
			exit 1
		fi
	fi
	rm -f "$out"
	if $update; then
		found="$cache/$module/${pkg#./}/$name"
		mkdir -p "$pkg/testdata/fuzz/$name"
		[ -d "$found" ] && cp -n "$found"/* "$pkg/testdata/fuzz/$name/" 2>/dev/null || true
	fi
done
