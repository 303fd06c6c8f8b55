# Developer shortcuts. The README's two commands do not need make.

.PHONY: build proto test

# build: the yorkie binary into bin/.
build:
	go build -o bin/yorkie ./cmd/yorkie

# proto: regenerate api/yorkie/v1 from its .proto files with the generators pinned in tools/go.mod.
proto:
	cd api && go tool -modfile=../tools/go.mod buf generate

# test: everything, with the real servers (what CI runs).
test:
	./scripts/test.sh
