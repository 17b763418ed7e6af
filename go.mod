module github.com/switchyard-net/switchyard

go 1.26.8

require github.com/sirupsen/logrus v1.10.2

require (
	github.com/cilium/ebpf v0.22.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
)

tool github.com/cilium/ebpf/cmd/bpf2go
