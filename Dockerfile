# switchyard: one image holding every binary (orchagent, syncd, impaird,
# swctl), built static (CGO_ENABLED=0) in a Go stage and copied into a
# distroless runtime with no shell. docker-compose.yml runs one daemon per
# container from it. Untested here (no Docker engine): see docs/deploy.md.

FROM golang:1.26-bookworm AS build
WORKDIR /src
# Modules first, so a source change does not download them again.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# The eBPF objects are generated and committed (bpf/*_bpfel.o): no clang needed.
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/ ./cmd/...

FROM gcr.io/distroless/static-debian12
COPY --from=build /out/ /usr/local/bin/
# Daemons need root inside the container for netlink and BPF (the compose
# file grants only the capabilities each one uses).
USER 0:0
ENV SWITCHYARD_REDIS=unix:///run/switchyard/redis.sock
ENTRYPOINT []
CMD ["/usr/local/bin/swctl", "--help"]
