package e2eutil

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/switchyard-net/switchyard/tests/testns"
)

// Sysctl sets kernel parameters ("net.ipv4.ip_forward=1") inside ns and
// fails the test on error. Equivalent to: ip netns exec NS sysctl -qw K=V...
func Sysctl(t testing.TB, ns *testns.NS, settings ...string) {
	t.Helper()
	if out, err := ns.Exec("sysctl", append([]string{"-qw"}, settings...)...); err != nil {
		t.Fatalf("sysctl %s in %s: %v: %s", strings.Join(settings, " "), ns.Name, err, out)
	}
}

// DisableIPv6 turns IPv6 off in ns, for the devices there and those made
// or moved there later: no background traffic (router solicitations, DAD,
// MLD) reaches counters or FDBs.
func DisableIPv6(t testing.TB, ns *testns.NS) {
	t.Helper()
	Sysctl(t, ns, "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1")
}

// IPLink is the part of "ip -j link show" the tests judge.
type IPLink struct {
	Index   int      `json:"ifindex"`
	Name    string   `json:"ifname"`
	Flags   []string `json:"flags"`
	MTU     int      `json:"mtu"`
	Address string   `json:"address"`
	Alias   string   `json:"ifalias"`
	Master  string   `json:"master"`
}

// Up reports whether the link is administratively up.
func (l IPLink) Up() bool { return slices.Contains(l.Flags, "UP") }

// Link returns dev in ns, or ok=false when it does not exist.
// Equivalent to: ip -n NS -j link show dev DEV
func Link(ns *testns.NS, dev string) (IPLink, bool) {
	out, err := ns.TryIP("-j", "link", "show", "dev", dev)
	if err != nil {
		return IPLink{}, false
	}
	var ls []IPLink
	if json.Unmarshal([]byte(out), &ls) != nil || len(ls) != 1 {
		return IPLink{}, false
	}
	return ls[0], true
}

// MAC is dev's MAC address in lower case; it fails the test when dev does
// not exist in ns.
func MAC(t testing.TB, ns *testns.NS, dev string) string {
	t.Helper()
	l, ok := Link(ns, dev)
	if !ok {
		t.Fatalf("ip -n %s link show dev %s: no such link", ns.Name, dev)
	}
	return strings.ToLower(l.Address)
}

// IPRoute is the part of "ip -j route show" the tests judge.
type IPRoute struct {
	Type     string `json:"type"`
	Dst      string `json:"dst"`
	Gateway  string `json:"gateway"`
	Dev      string `json:"dev"`
	Protocol any    `json:"protocol"`
	Metric   int    `json:"metric"`
	Nexthops []struct {
		Gateway string `json:"gateway"`
		Dev     string `json:"dev"`
	} `json:"nexthops"`
}

// Proto is the route's protocol as ip prints it ("static", "kernel", "201").
func (r IPRoute) Proto() string { return fmt.Sprint(r.Protocol) }

// Routes returns the routes to exactly dst in the main table.
// Equivalent to: ip -n NS -j [-6] route show exact DST
func Routes(ns *testns.NS, dst string) []IPRoute {
	fam := "-4"
	if strings.Contains(dst, ":") {
		fam = "-6"
	}
	var rs []IPRoute
	ns.JSON(&rs, fam, "route", "show", "exact", dst)
	return rs
}

// Addrs returns the addresses on dev as "addr/len" strings.
// Equivalent to: ip -n NS -j addr show dev DEV
func Addrs(ns *testns.NS, dev string) []string {
	var ls []struct {
		AddrInfo []struct {
			Local     string `json:"local"`
			PrefixLen int    `json:"prefixlen"`
		} `json:"addr_info"`
	}
	ns.JSON(&ls, "addr", "show", "dev", dev)
	var out []string
	for _, l := range ls {
		for _, a := range l.AddrInfo {
			out = append(out, fmt.Sprintf("%s/%d", a.Local, a.PrefixLen))
		}
	}
	return out
}

// XDPProg is the id and attach mode ("native", "generic", "offload") of
// the XDP program on dev; id 0 when there is none.
// Equivalent to: ip -n NS -j -d link show dev DEV
func XDPProg(ns *testns.NS, dev string) (id int, mode string) {
	var links []struct {
		Xdp *struct {
			Mode int `json:"mode"`
			Prog *struct {
				ID int `json:"id"`
			} `json:"prog"`
		} `json:"xdp"`
	}
	ns.JSON(&links, "-d", "link", "show", "dev", dev)
	if len(links) == 0 || links[0].Xdp == nil || links[0].Xdp.Prog == nil {
		return 0, ""
	}
	m := map[int]string{1: "native", 2: "generic", 3: "offload"}[links[0].Xdp.Mode]
	return links[0].Xdp.Prog.ID, m
}

// BridgeVlans returns port → vid → flags ("PVID", "Egress Untagged") of
// every bridge port and bridge in ns.
// Equivalent to: bridge -n NS -j vlan show
func BridgeVlans(ns *testns.NS) map[string]map[int][]string {
	var out []struct {
		Ifname string `json:"ifname"`
		Vlans  []struct {
			Vlan  int      `json:"vlan"`
			Flags []string `json:"flags"`
		} `json:"vlans"`
	}
	ns.JSON(&out, "bridge", "vlan", "show")
	m := map[string]map[int][]string{}
	for _, p := range out {
		m[p.Ifname] = map[int][]string{}
		for _, v := range p.Vlans {
			m[p.Ifname][v.Vlan] = v.Flags
		}
	}
	return m
}

// SysFile reads a sysfs or procfs file as a process inside ns sees it
// (ip netns exec mounts the namespace's own sysfs). Equivalent to:
// ip netns exec NS cat PATH.
func SysFile(t testing.TB, ns *testns.NS, path string) string {
	t.Helper()
	out, err := ns.Exec("cat", path)
	if err != nil {
		t.Fatalf("cat %s in %s: %v: %s", path, ns.Name, err, out)
	}
	return strings.TrimSpace(out)
}

// RxPackets is the frames dev in ns has received (the receiver's count of
// a traffic test). Equivalent to: ip -n NS -j -s link show dev DEV
func RxPackets(t testing.TB, ns *testns.NS, dev string) uint64 {
	t.Helper()
	var ls []struct {
		Stats64 struct {
			Rx struct {
				Packets uint64 `json:"packets"`
			} `json:"rx"`
		} `json:"stats64"`
	}
	ns.JSON(&ls, "-s", "link", "show", "dev", dev)
	if len(ls) != 1 {
		t.Fatalf("ip -s link show dev %s in %s: %d links", dev, ns.Name, len(ls))
	}
	return ls[0].Stats64.Rx.Packets
}
