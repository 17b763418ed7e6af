// Package kernelcap tells tests whether the running kernel has the
// networking features switchyard needs beyond a minimal kernel (802.1Q VLAN
// devices, bridge VLAN filtering, dummy, VRF, netem, fq, clsact), so a test
// can skip with a reason on a kernel without them and run for real in the
// full-kernel VM suite (make test-vm, see docs/vm.md).
//
// A feature is probed at most once per process, as root, by creating a
// device or qdisc of that kind in a throwaway network namespace (after a
// best-effort modprobe of its module). The probe never touches the
// caller's namespace and leaves nothing behind.
//
// It owns nothing else: it must not configure the host. Missing features
// and missing privileges are skips — except inside the test VM (InVM),
// where a missing feature fails the test, since the VM exists to have it.
package kernelcap
