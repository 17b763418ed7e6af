// Package edte2e tests delay, jitter and shaping by earliest departure
// time (impaird/edt + bpf/edt) with real UDP traffic between two network
// namespaces over veth: the sender stamps each packet with its send time,
// the receiver takes the kernel's receive timestamp (both CLOCK_REALTIME
// in one kernel, so one clock), and the difference is the delay.
//
// fq and netem exist only in the full-kernel VM (make test-vm; listed in
// tests/vm/suite.txt): on the host these tests skip via kernelcap. TCG
// emulation makes timers coarse and noisy, so the assertions are
// generous (every packet delayed at least the configured delay, the
// median within a few ms, shaping at most the rate and at least 80% of
// it) and the precise figures are logged, side by side with netem
// configured the same way in the same VM, for docs/edt.md.
package edte2e
