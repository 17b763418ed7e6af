# switchyard: one image holding every binary (orchagent, syncd, impaird,
# trafficd, swctl), static (CGO_ENABLED=0), in a runtime with no shell.
# docker-compose.yml runs one daemon per container from it.
#
# The base images are build arguments, so the same file builds with a
# registry (the defaults) and without one (make test-compose):
#   GO_IMAGE       the Go toolchain of the compile stage
#   RUNTIME_IMAGE  the runtime (distroless; scratch works: the binaries are static)
#   BINARIES       compile = build in the Go stage; prebuilt = copy bin/ from
#                  the context (make build), with BuildKit the Go stage is skipped
ARG GO_IMAGE=golang:1.26-bookworm
ARG RUNTIME_IMAGE=gcr.io/distroless/static-debian12
ARG BINARIES=compile

FROM ${GO_IMAGE} AS compile
WORKDIR /src
# Modules first, so a source change does not download them again.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# The eBPF objects are generated and committed (bpf/*_bpfel.o): no clang needed.
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/ ./cmd/...

FROM scratch AS prebuilt
COPY bin/orchagent bin/syncd bin/impaird bin/trafficd bin/swctl /out/

FROM ${BINARIES} AS build

FROM ${RUNTIME_IMAGE}
COPY --from=build /out/ /usr/local/bin/
# Daemons need root inside the container for netlink and BPF (the compose
# file grants only the capabilities each one uses).
USER 0:0
ENV SWITCHYARD_REDIS=unix:///run/switchyard/redis.sock
ENTRYPOINT []
CMD ["/usr/local/bin/swctl", "--help"]
