package netlinkmgr

import (
	"errors"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"testing"

	"github.com/switchyard-net/switchyard/tests/kernelcap"
	"github.com/switchyard-net/switchyard/tests/testns"
)

func ptr[T any](v T) *T { return &v }

// openReal gives t a fresh named namespace and a Kernel opened in it.
func openReal(t *testing.T) (*testns.NS, Kernel) {
	t.Helper()
	ns := testns.New(t)
	k, err := Open(Options{NetNS: ns.Name})
	if err != nil {
		t.Fatalf("Open(%s): %v", ns.Name, err)
	}
	t.Cleanup(func() { k.Close() })
	return ns, k
}

// skipIfMissing skips t when err says the kernel lacks a feature (the CI
// host kernel); the VM harness with a full kernel runs these for real, so
// there a missing feature fails t — except in TestContractFakeHostKernel,
// whose Fake imitates the host kernel on purpose.
func skipIfMissing(t *testing.T, err error) {
	t.Helper()
	if f, ok := MissingFeature(err); ok {
		if kernelcap.InVM() && !strings.HasPrefix(t.Name(), "TestContractFakeHostKernel/") {
			t.Fatalf("the test VM's kernel lacks %s: %v", f, err)
		}
		t.Skipf("kernel lacks %s (needs the full-kernel VM): %v", f, err)
	}
}

// skipIfLacks is skipIfMissing for an error that may only name feature:
// a kernel lacking something else is a failure.
func skipIfLacks(t *testing.T, err error, feature string) {
	t.Helper()
	if f, ok := MissingFeature(err); ok && f != feature {
		t.Fatalf("want a missing %s, got %v", feature, err)
	}
	skipIfMissing(t, err)
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func mustNotFound(t *testing.T, what string, err error) {
	t.Helper()
	if !IsNotFound(err) {
		t.Fatalf("%s: got %v, want a not-found error", what, err)
	}
	var oe *OpError
	if !errors.As(err, &oe) {
		t.Fatalf("%s: %v is not an *OpError", what, err)
	}
}

func mac(s string) net.HardwareAddr {
	m, err := net.ParseMAC(s)
	if err != nil {
		panic(err)
	}
	return m
}

func pfx(s string) netip.Prefix { return netip.MustParsePrefix(s) }
func ip(s string) netip.Addr    { return netip.MustParseAddr(s) }

// ipLink is the part of "ip -j -d link show" the tests judge with.
type ipLink struct {
	Ifname    string   `json:"ifname"`
	Mtu       int      `json:"mtu"`
	Address   string   `json:"address"`
	Flags     []string `json:"flags"`
	Master    string   `json:"master"`
	Ifalias   string   `json:"ifalias"`
	Operstate string   `json:"operstate"`
	Linkinfo  struct {
		InfoKind string         `json:"info_kind"`
		InfoData map[string]any `json:"info_data"`
	} `json:"linkinfo"`
}

func (l ipLink) up() bool {
	for _, f := range l.Flags {
		if f == "UP" {
			return true
		}
	}
	return false
}

func judgeLink(t *testing.T, ns *testns.NS, name string) ipLink {
	t.Helper()
	var ls []ipLink
	ns.JSON(&ls, "-d", "link", "show", "dev", name)
	if len(ls) != 1 {
		t.Fatalf("ip link show %s: %d entries", name, len(ls))
	}
	return ls[0]
}

type ipAddr struct {
	Ifname   string `json:"ifname"`
	AddrInfo []struct {
		Family    string `json:"family"`
		Local     string `json:"local"`
		Prefixlen int    `json:"prefixlen"`
		Scope     string `json:"scope"`
	} `json:"addr_info"`
}

// judgeAddrs returns "local/len" of global addresses on dev per ip -j.
func judgeAddrs(t *testing.T, ns *testns.NS, dev string) map[string]bool {
	t.Helper()
	var as []ipAddr
	ns.JSON(&as, "addr", "show", "dev", dev)
	out := map[string]bool{}
	for _, a := range as {
		for _, ai := range a.AddrInfo {
			if ai.Scope == "global" {
				out[pfx(ai.Local+"/"+strconv.Itoa(ai.Prefixlen)).String()] = true
			}
		}
	}
	return out
}

type ipRoute struct {
	Type     string `json:"type"`
	Dst      string `json:"dst"`
	Gateway  string `json:"gateway"`
	Dev      string `json:"dev"`
	Protocol string `json:"protocol"`
	Metric   int    `json:"metric"`
	Nexthops []struct {
		Gateway string `json:"gateway"`
		Dev     string `json:"dev"`
		Weight  int    `json:"weight"`
	} `json:"nexthops"`
}

type bridgeFdb struct {
	Mac    string   `json:"mac"`
	Ifname string   `json:"ifname"`
	Master string   `json:"master"`
	Vlan   int      `json:"vlan"`
	Flags  []string `json:"flags"`
	State  string   `json:"state"`
}
