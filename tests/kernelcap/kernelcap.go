package kernelcap

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// Feature is a kernel capability a test may need; its value is the
// human-readable name printed in skip messages.
type Feature string

// The features switchyard's kernel-dependent tests use.
const (
	VLAN8021Q     Feature = "802.1Q VLAN devices"
	VlanFiltering Feature = "bridge VLAN filtering"
	Dummy         Feature = "dummy devices"
	VRF           Feature = "VRF devices"
	Netem         Feature = "netem qdisc"
	FQ            Feature = "fq qdisc"
	Clsact        Feature = "clsact qdisc"
	Bonding       Feature = "bonding"
)

// All lists every known feature, in a stable order.
var All = []Feature{VLAN8021Q, VlanFiltering, Dummy, VRF, Netem, FQ, Clsact, Bonding}

// modules are loaded (best effort) before a feature is probed; the kernel
// autoloads most of them on first use too, but not from inside every
// namespace or container.
var modules = map[Feature][]string{
	VLAN8021Q:     {"veth", "8021q"},
	VlanFiltering: {"bridge"},
	Dummy:         {"dummy"},
	VRF:           {"vrf"},
	Netem:         {"sch_netem"},
	FQ:            {"sch_fq"},
	Clsact:        {"sch_ingress"},
	Bonding:       {"bonding"},
}

type result struct {
	ok     bool
	reason string
}

var (
	mu    sync.Mutex
	cache = map[Feature]*result{}
)

// InVM reports whether the process runs inside the full-kernel test VM
// (tests/vm sets SWITCHYARD_VM=1 there).
func InVM() bool { return os.Getenv("SWITCHYARD_VM") == "1" }

// Has reports whether the kernel supports f; when not, reason says why
// (the kernel's answer, or that the probe needs root). The answer is
// probed once per process and cached.
func Has(f Feature) (ok bool, reason string) {
	mu.Lock()
	defer mu.Unlock()
	if r, found := cache[f]; found {
		return r.ok, r.reason
	}
	r := &result{}
	if err := probe(f); err != nil {
		r.reason = err.Error()
	} else {
		r.ok = true
	}
	cache[f] = r
	return r.ok, r.reason
}

// Require skips t unless running as root on a kernel with every feature in
// fs. The skip message names the feature, the reason and where the test
// does run (the VM suite). Inside the VM a missing feature fails t instead:
// the VM suite must run these tests, not skip them.
func Require(t testing.TB, fs ...Feature) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root (network namespaces, netlink writes): run with sudo / make test as root")
	}
	for _, f := range fs {
		if ok, reason := Has(f); !ok {
			if InVM() { // the VM exists to have them: a harness bug, not a skip
				t.Fatalf("the test VM's kernel lacks %s: %s", f, reason)
			}
			t.Skipf("needs %s: %s (runs in the VM suite: make test-vm)", f, reason)
		}
	}
}

// probe tries f in a fresh network namespace on a dedicated OS thread. The
// thread is never unlocked, so the Go runtime discards it (and with it the
// namespace) when the goroutine ends.
func probe(f Feature) error {
	if _, known := modules[f]; !known {
		return fmt.Errorf("unknown feature %q", f)
	}
	if os.Geteuid() != 0 {
		return errors.New("probing needs root")
	}
	modprobe(modules[f]...)
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		done <- probeInNewNS(f)
	}()
	return <-done
}

func probeInNewNS(f Feature) error {
	ns, err := netns.New() // unshare(CLONE_NEWNET) for this thread only
	if err != nil {
		return fmt.Errorf("create probe network namespace: %w", err)
	}
	defer ns.Close()
	// Route family only: the default set includes XFRM and netfilter,
	// whose modules a stock kernel does not load by itself.
	h, err := netlink.NewHandleAt(ns, unix.NETLINK_ROUTE)
	if err != nil {
		return fmt.Errorf("netlink handle in probe namespace: %w", err)
	}
	defer h.Close()
	switch f {
	case VLAN8021Q:
		return probeVLAN(h)
	case VlanFiltering:
		return probeVlanFiltering(h)
	case Dummy:
		return addLink(h, &netlink.Dummy{LinkAttrs: netlink.LinkAttrs{Name: "kcap0"}}, "dummy", "dummy")
	case VRF:
		return addLink(h, &netlink.Vrf{LinkAttrs: netlink.LinkAttrs{Name: "kcap0"}, Table: 1001}, "vrf", "vrf")
	case Netem, FQ, Clsact:
		return probeQdisc(h, f)
	case Bonding:
		return addLink(h, netlink.NewLinkBond(netlink.LinkAttrs{Name: "kcap0"}), "bond", "bonding")
	}
	return fmt.Errorf("unknown feature %q", f)
}

// addLink is "ip link add NAME type KIND"; the error names the module.
func addLink(h *netlink.Handle, l netlink.Link, kind, module string) error {
	if err := h.LinkAdd(l); err != nil {
		return fmt.Errorf("ip link add type %s: %v (kernel module %s missing or not built)", kind, err, module)
	}
	return nil
}

// probeVLAN is "ip link add link kcapv0 name kcapv0.10 type vlan id 10" on a
// veth (the only parent kind every test kernel has).
func probeVLAN(h *netlink.Handle) error {
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "kcapv0"}, PeerName: "kcapv1"}
	if err := addLink(h, veth, "veth", "veth"); err != nil {
		return fmt.Errorf("no parent for the VLAN probe: %w", err)
	}
	parent, err := h.LinkByName("kcapv0")
	if err != nil {
		return fmt.Errorf("find probe veth kcapv0: %w", err)
	}
	vlan := &netlink.Vlan{
		LinkAttrs: netlink.LinkAttrs{Name: "kcapv0.10", ParentIndex: parent.Attrs().Index},
		VlanId:    10,
	}
	return addLink(h, vlan, "vlan", "8021q")
}

// probeVlanFiltering is "ip link add kcapbr0 type bridge vlan_filtering 1",
// read back, since a kernel may accept the bridge and not the option.
func probeVlanFiltering(h *netlink.Handle) error {
	on := true
	br := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: "kcapbr0"}, VlanFiltering: &on}
	if err := h.LinkAdd(br); err != nil {
		return fmt.Errorf("ip link add type bridge vlan_filtering 1: %v (kernel built without CONFIG_BRIDGE_VLAN_FILTERING, or no bridge module)", err)
	}
	l, err := h.LinkByName("kcapbr0")
	if err != nil {
		return fmt.Errorf("find probe bridge kcapbr0: %w", err)
	}
	b, isBridge := l.(*netlink.Bridge)
	if !isBridge || b.VlanFiltering == nil || !*b.VlanFiltering {
		return errors.New("bridge created but vlan_filtering reads back as off")
	}
	return nil
}

// probeQdisc is "tc qdisc add dev lo root netem|fq" or "tc qdisc add dev lo
// clsact" in the probe namespace.
func probeQdisc(h *netlink.Handle, f Feature) error {
	lo, err := h.LinkByName("lo")
	if err != nil {
		return fmt.Errorf("find lo in probe namespace: %w", err)
	}
	if err := h.LinkSetUp(lo); err != nil {
		return fmt.Errorf("set lo up in probe namespace: %w", err)
	}
	root := netlink.QdiscAttrs{LinkIndex: lo.Attrs().Index, Handle: netlink.MakeHandle(1, 0), Parent: netlink.HANDLE_ROOT}
	var q netlink.Qdisc
	var module string
	switch f {
	case Netem:
		q, module = netlink.NewNetem(root, netlink.NetemQdiscAttrs{Latency: 1000}), "sch_netem"
	case FQ:
		q, module = netlink.NewFq(root), "sch_fq"
	default:
		q = &netlink.Clsact{QdiscAttrs: netlink.QdiscAttrs{
			LinkIndex: lo.Attrs().Index,
			Handle:    netlink.MakeHandle(0xffff, 0),
			Parent:    netlink.HANDLE_CLSACT,
		}}
		module = "sch_ingress"
	}
	if err := h.QdiscAdd(q); err != nil {
		return fmt.Errorf("tc qdisc add %s: %v (kernel module %s missing or not built)", q.Type(), err, module)
	}
	return nil
}

// modprobe loads modules, ignoring every failure: the module may be
// built in, already loaded, absent, or modprobe may not exist; the probe
// itself decides.
func modprobe(mods ...string) {
	path, err := exec.LookPath("modprobe")
	if err != nil {
		for _, p := range []string{"/usr/sbin/modprobe", "/sbin/modprobe"} {
			if _, err := os.Stat(p); err == nil {
				path = p
			}
		}
	}
	if path == "" {
		return
	}
	for _, m := range mods {
		_ = exec.Command(path, "-q", m).Run()
	}
}

// Summary is one line per feature, "name: yes" or "name: no (reason)", for
// logs and for tests/vm's boot report.
func Summary() string {
	var b strings.Builder
	for _, f := range All {
		if ok, reason := Has(f); ok {
			fmt.Fprintf(&b, "%s: yes\n", f)
		} else {
			fmt.Fprintf(&b, "%s: no (%s)\n", f, reason)
		}
	}
	return b.String()
}
