# switchyard — build, test, benchmark, demo.
GO      ?= go
BIN     := bin
CMDS    := $(notdir $(wildcard cmd/*))
export PATH := /usr/local/go/bin:$(PATH)

.PHONY: all build test test-host test-race test-vm test-compose bench generate check-generate demo demo-clean deps fuzz clean

all: build

build:
	@mkdir -p $(BIN)
	CGO_ENABLED=0 $(GO) build -o $(BIN)/ ./cmd/...

deps:
	@./scripts/install-deps.sh

# All tests: host suite, race detector on the concurrent parts, then the
# full-kernel VM suite. Installs what it needs when run as root.
test: deps build check-generate test-host test-race test-compose test-vm

test-host:
	$(GO) vet ./...
	$(GO) test -count=1 -timeout 20m ./...

test-race:
	$(GO) test -race -count=1 -timeout 20m ./internal/... ./orchagent/... ./syncd/... ./impaird/...

# docker-compose.yml for real: images built without a registry, the stack
# managing a test namespace (tests/composee2e; skips without a Docker engine,
# which make deps installs and starts).
test-compose: build
	SWITCHYARD_TEST_COMPOSE=1 $(GO) test -count=1 -timeout 10m -v ./tests/composee2e

test-vm:
	@if [ -x tests/vm/run-suite.sh ]; then tests/vm/run-suite.sh; else echo "test-vm: VM harness not present yet"; fi

bench:
	@./scripts/bench.sh

generate:
	$(GO) generate ./bpf/...

# Fails when the committed bpf2go output is stale (only where clang exists).
check-generate:
	@if command -v clang >/dev/null 2>&1 && ls bpf/*.c >/dev/null 2>&1; then \
		$(GO) generate ./bpf/... && git diff --exit-code -- bpf/ || \
		{ echo "check-generate: bpf/ generated files are stale; run make generate and commit" >&2; exit 1; }; \
	fi

fuzz:
	@./scripts/fuzz.sh

demo: deps build
	@./scripts/demo.sh

demo-clean:
	@./scripts/demo.sh clean

clean:
	rm -rf $(BIN)
