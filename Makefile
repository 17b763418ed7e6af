# switchyard — build, test, benchmark, demo.
GO      ?= go
BIN     := bin
CMDS    := $(notdir $(wildcard cmd/*))
export PATH := /usr/local/go/bin:$(PATH)

.PHONY: all build install uninstall deb test test-host test-race test-vm test-compose bench generate check-generate demo demo-clean deps fuzz clean

all: build

build:
	@mkdir -p $(BIN)
	CGO_ENABLED=0 $(GO) build -o $(BIN)/ ./cmd/...

# make install [PREFIX=/usr/local] [DESTDIR=]: the binaries and the systemd
# units (deploy/systemd; enable with systemctl enable --now switchyard.target)
# and swctl's bash, zsh and fish completions.
PREFIX  ?= /usr/local
DESTDIR ?=
BINDIR  := $(PREFIX)/bin
UNITDIR ?= $(PREFIX)/lib/systemd/system
SHAREDIR := $(PREFIX)/share
COMPLETIONS := bash-completion/completions/swctl zsh/vendor-completions/_swctl fish/vendor_completions.d/swctl.fish
UNITS   := switchyard.target switchyard-orchagent.service switchyard-syncd.service switchyard-impaird.service \
	switchyard-trafficd.service

install: build
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(UNITDIR)
	install -m 0755 $(BIN)/orchagent $(BIN)/syncd $(BIN)/impaird $(BIN)/trafficd $(BIN)/swctl $(DESTDIR)$(BINDIR)/
	install -m 0644 deploy/systemd/switchyard.target $(DESTDIR)$(UNITDIR)/
	install -d $(DESTDIR)$(SHAREDIR)/bash-completion/completions $(DESTDIR)$(SHAREDIR)/zsh/vendor-completions \
		$(DESTDIR)$(SHAREDIR)/fish/vendor_completions.d
	$(BIN)/swctl completion bash >$(DESTDIR)$(SHAREDIR)/bash-completion/completions/swctl
	$(BIN)/swctl completion zsh >$(DESTDIR)$(SHAREDIR)/zsh/vendor-completions/_swctl
	$(BIN)/swctl completion fish >$(DESTDIR)$(SHAREDIR)/fish/vendor_completions.d/swctl.fish
	for u in orchagent syncd impaird trafficd; do \
		sed 's|@BINDIR@|$(BINDIR)|g' deploy/systemd/switchyard-$$u.service.in >$(DESTDIR)$(UNITDIR)/switchyard-$$u.service && \
		chmod 0644 $(DESTDIR)$(UNITDIR)/switchyard-$$u.service || exit 1; \
	done

uninstall:
	rm -f $(addprefix $(DESTDIR)$(BINDIR)/,orchagent syncd impaird trafficd swctl) $(addprefix $(DESTDIR)$(UNITDIR)/,$(UNITS)) \
		$(addprefix $(DESTDIR)$(SHAREDIR)/,$(COMPLETIONS))

# make deb: bin/switchyard_VERSION_ARCH.deb from make install PREFIX=/usr,
# packaged by nfpm (fetched through the Go module proxy, pinned).
NFPM        := github.com/goreleaser/nfpm/v2/cmd/nfpm@v2.45.2
DEB_VERSION ?= 0.1.0+git$(shell git rev-parse --short HEAD 2>/dev/null || echo 0)
DEB_ARCH    ?= $(shell $(GO) env GOARCH)

deb: build
	rm -rf $(BIN)/deb-root
	$(MAKE) --no-print-directory install PREFIX=/usr DESTDIR=$(abspath $(BIN))/deb-root
	cd $(BIN)/deb-root && DEB_VERSION=$(DEB_VERSION) DEB_ARCH=$(DEB_ARCH) \
		$(GO) run $(NFPM) package --config $(CURDIR)/deploy/nfpm.yaml --packager deb --target $(abspath $(BIN))/
	rm -rf $(BIN)/deb-root

deps:
	@./scripts/install-deps.sh

# All tests: host suite, race detector on the concurrent parts, then the
# full-kernel VM suite. Installs what it needs when run as root.
test: deps build check-generate test-host test-race test-compose test-vm

test-host:
	$(GO) vet ./...
	$(GO) test -count=1 -timeout 20m ./...

test-race:
	$(GO) test -race -count=1 -timeout 20m ./internal/... ./orchagent/... ./syncd/... ./impaird/... ./trafficd/...

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
