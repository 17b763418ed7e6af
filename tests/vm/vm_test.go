package vm

import (
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-net/switchyard/tests/e2eutil"
	"github.com/switchyard-net/switchyard/tests/kernelcap"
	"github.com/switchyard-net/switchyard/tests/testns"
	"github.com/switchyard-net/switchyard/tests/testredis"
)

// TestVMHasFullKernel asserts that the VM provides everything the host
// kernel lacks; outside the VM it skips (the host may legitimately lack
// them).
func TestVMHasFullKernel(t *testing.T) {
	if !kernelcap.InVM() {
		t.Skip("checks the VM environment; runs in the VM suite (make test-vm)")
	}
	for _, f := range []kernelcap.Feature{
		kernelcap.VLAN8021Q, kernelcap.VlanFiltering, kernelcap.Dummy,
		kernelcap.VRF, kernelcap.Netem, kernelcap.FQ, kernelcap.Clsact, kernelcap.Bonding,
	} {
		if ok, reason := kernelcap.Has(f); !ok {
			t.Errorf("VM kernel lacks %s: %s", f, reason)
		}
	}
	// The host root is read-only; these must be writable for the tests.
	for _, dir := range []string{os.TempDir(), "/run/netns"} {
		f, err := os.CreateTemp(dir, "vmcheck")
		if err != nil {
			t.Errorf("%s is not writable in the VM: %v", dir, err)
			continue
		}
		f.Close()
		os.Remove(f.Name())
	}
}

// TestVMRedis proves a real redis-server runs in the VM (writable /tmp).
func TestVMRedis(t *testing.T) {
	if !kernelcap.InVM() {
		t.Skip("checks the VM environment; runs in the VM suite (make test-vm)")
	}
	s := testredis.Start(t)
	c := s.Client(4)
	if err := c.Set(t.Context(), "vmcheck", "1", 0).Err(); err != nil {
		t.Fatalf("redis SET in the VM: %v", err)
	}
}

// TestVLANBridgeTraffic builds, with iproute2, the kernel model switchyard
// programs — a bridge with vlan_filtering, an untagged and a tagged member
// of VLAN 100, an untagged member of VLAN 200 — with each host in its own
// namespace, and checks that the VLAN 100 hosts reach each other through
// the bridge and the VLAN 200 host reaches neither.
//
//	h1 eth0 (10.100.0.1) ── p1 untagged vid 100 ┐
//	h2 eth0.100 (10.100.0.2) ── p2 tagged vid 100 ├─ br0 (vlan_filtering 1) in sw
//	h3 eth0 (10.100.0.3) ── p3 untagged vid 200 ┘
func TestVLANBridgeTraffic(t *testing.T) {
	kernelcap.Require(t, kernelcap.VLAN8021Q, kernelcap.VlanFiltering)
	sw, h1, h2, h3 := testns.New(t), testns.New(t), testns.New(t), testns.New(t)

	sw.IP("link", "add", "br0", "type", "bridge", "vlan_filtering", "1")
	sw.IP("link", "set", "br0", "up")
	for i, h := range []*testns.NS{h1, h2, h3} {
		port := []string{"p1", "p2", "p3"}[i]
		sw.Veth(port, h, "eth0")
		sw.IP("link", "set", port, "master", "br0")
		sw.Bridge("vlan", "del", "dev", port, "vid", "1")
	}
	sw.Bridge("vlan", "add", "dev", "p1", "vid", "100", "pvid", "untagged")
	sw.Bridge("vlan", "add", "dev", "p2", "vid", "100")
	sw.Bridge("vlan", "add", "dev", "p3", "vid", "200", "pvid", "untagged")

	h1.IP("addr", "add", "10.100.0.1/24", "dev", "eth0")
	h2.IP("link", "add", "link", "eth0", "name", "eth0.100", "type", "vlan", "id", "100")
	h2.IP("addr", "add", "10.100.0.2/24", "dev", "eth0.100")
	h2.IP("link", "set", "eth0.100", "up")
	h3.IP("addr", "add", "10.100.0.3/24", "dev", "eth0")

	// iproute2 as the judge: the bridge holds what we configured.
	got := map[string]string{}
	for port, vids := range e2eutil.BridgeVlans(sw) {
		for _, v := range slices.Sorted(maps.Keys(vids)) {
			got[port] += strings.TrimSpace(strings.Join(append([]string{strconv.Itoa(v)}, vids[v]...), ",")) + " "
		}
	}
	want := map[string]string{"p1": "100,PVID,Egress Untagged ", "p2": "100 ", "p3": "200,PVID,Egress Untagged "}
	for port, w := range want {
		if got[port] != w {
			t.Errorf("bridge vlan show %s = %q, want %q (all: %v)", port, got[port], w, got)
		}
	}

	ping(t, h1, "10.100.0.2", true) // untagged -> tagged, same VLAN
	ping(t, h2, "10.100.0.1", true) // and back
	ping(t, h3, "10.100.0.1", false)
	ping(t, h1, "10.100.0.3", false)

	var fdb []struct {
		MAC    string `json:"mac"`
		Ifname string `json:"ifname"`
		Vlan   int    `json:"vlan"`
	}
	sw.JSON(&fdb, "bridge", "fdb", "show", "br", "br0")
	learned := map[string]bool{}
	for _, e := range fdb {
		if e.Vlan != 0 {
			learned[e.Ifname+"/"+strconv.Itoa(e.Vlan)] = true
		}
	}
	if !learned["p1/100"] || !learned["p2/100"] {
		t.Errorf("bridge fdb: want entries learned on p1 and p2 in vlan 100, got %+v", fdb)
	}
}

// ping checks reachability from h to addr. Under emulation the first
// packets wait for ARP, so a reachable address gets a few tries; an
// unreachable one must fail every one of 2 pings.
func ping(t *testing.T, h *testns.NS, addr string, reachable bool) {
	t.Helper()
	if !reachable {
		if out, err := h.Exec("ping", "-c", "2", "-W", "1", addr); err == nil {
			t.Errorf("%s reached %s across VLANs; want no reply:\n%s", h.Name, addr, out)
		}
		return
	}
	var out string
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); {
		var err error
		if out, err = h.Exec("ping", "-c", "1", "-W", "2", addr); err == nil {
			return
		}
	}
	t.Errorf("%s cannot ping %s through the VLAN bridge:\n%s", h.Name, addr, out)
}
