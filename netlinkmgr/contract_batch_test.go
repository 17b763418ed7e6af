package netlinkmgr

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// Batched writes (batch.go): every request answered on its own, failures
// in the middle not stopping the rest, more than one sendmsg's worth.
func init() { contractScenarios = append(contractScenarios, batchScenarios...) }

var batchScenarios = []scenario{
	{"address add batch", func(t *testing.T, e env) {
		e.port("Ethernet0")
		A := e.k.Addrs()
		must(t, A.Add(AddrInfo{Link: "Ethernet0", Prefix: pfx("10.9.9.1/24")})) // by hand: no protocol
		// 1,200 requests of 56 bytes: more than one 64 KiB sendmsg.
		var as []AddrInfo
		for i := 0; i < 1200; i++ {
			a := AddrInfo{Link: "Ethernet0", Prefix: pfx(fmt.Sprintf("10.%d.%d.1/24", 100+i/250, i%250)),
				Protocol: ProtoSwitchyard, Create: true}
			switch i {
			case 5:
				a.Link = "nope"
			case 7:
				a.Prefix = pfx("10.9.9.1/24") // someone else's
			case 9:
				a.Prefix = netip.Prefix{}
			case 1100:
				a.Create = false // replace semantics: fine twice
				as = append(as, a)
			}
			as = append(as, a)
		}
		errs := A.AddBatch(as)
		if len(errs) != len(as) {
			t.Fatalf("%d errors for %d addresses", len(errs), len(as))
		}
		for i, err := range errs {
			switch i {
			case 5:
				mustNotFound(t, "address on an absent link", err)
			case 7:
				if !errors.Is(err, unix.EEXIST) || !strings.Contains(err.Error(), "already exists") ||
					!strings.Contains(err.Error(), "10.9.9.1/24") {
					t.Fatalf("create-only add over a hand-made address: %v, want EEXIST naming it", err)
				}
			case 9:
				if !errors.Is(err, unix.EINVAL) {
					t.Fatalf("invalid prefix: %v, want EINVAL", err)
				}
			default:
				must(t, err)
			}
		}
		got, err := A.List("Ethernet0")
		must(t, err)
		ours := 0
		for _, a := range globalAddrs(got) {
			switch {
			case a.Prefix == pfx("10.9.9.1/24"):
				if a.Protocol != 0 {
					t.Fatalf("hand-made address got protocol %d", a.Protocol)
				}
			case a.Protocol == ProtoSwitchyard:
				ours++
			default:
				t.Fatalf("unexpected address %+v", a)
			}
		}
		if ours != 1197 {
			t.Fatalf("%d proto %d addresses, want 1197", ours, ProtoSwitchyard)
		}
		if errs := A.AddBatch(nil); len(errs) != 0 {
			t.Fatalf("empty batch: %v", errs)
		}
	}},
	{"bridge vlan add batch", func(t *testing.T, e env) {
		bridgeWithPort(t, e)
		err := e.k.Links().Set(LinkInfo{Name: "Bridge", Bridge: &BridgeOptions{VlanFiltering: ptr(true)}})
		skipIfMissing(t, err)
		must(t, err)
		e.port("Ethernet9") // not a bridge port
		vs := []BridgeVlanInfo{
			{Link: "Ethernet0", VID: 100, PVID: true, Untagged: true},
			{Link: "Ethernet9", VID: 300},
			{Link: "nope", VID: 5},
			{Link: "Ethernet0", VID: 5000},
			{Link: "Bridge", VID: 100, Self: true},
			{Link: "Ethernet9", VID: 301},          // a refused group of two: each says why
			{Link: "Bridge", VID: 101, Self: true}, // one request with vid 100 (real kernel)
		}
		for v := 200; v < 1698; v++ { // more than one sendmsg, more than one request per link
			vs = append(vs, BridgeVlanInfo{Link: "Ethernet0", VID: uint16(v)})
		}
		errs := e.k.BridgeVlans().AddBatch(vs)
		if len(errs) != len(vs) {
			t.Fatalf("%d errors for %d vlans", len(errs), len(vs))
		}
		for i, err := range errs {
			switch i {
			case 1, 5:
				if err == nil || !strings.Contains(err.Error(), "not a bridge port") {
					t.Fatalf("vlan on a non-port: %v, want it named not a bridge port", err)
				}
			case 2:
				mustNotFound(t, "vlan on an absent link", err)
			case 3:
				if !errors.Is(err, unix.EINVAL) || !strings.Contains(err.Error(), "out of range") {
					t.Fatalf("vid 5000: %v, want EINVAL out of range", err)
				}
			default:
				must(t, err)
			}
		}
		got, err := e.k.BridgeVlans().List("Ethernet0")
		must(t, err)
		n, pvid := 0, false
		for _, v := range got {
			if v.VID == 100 {
				pvid = v.PVID && v.Untagged
			}
			if v.VID >= 200 {
				n++
			}
		}
		if n != 1498 || !pvid {
			t.Fatalf("Ethernet0 has %d vids ≥ 200 (want 1498), vid 100 pvid untagged %v", n, pvid)
		}
		self, err := e.k.BridgeVlans().List("Bridge")
		must(t, err)
		selfVids := map[uint16]bool{}
		for _, v := range self {
			selfVids[v.VID] = v.Self
		}
		if !selfVids[100] || !selfVids[101] {
			t.Fatalf("Bridge's own vids %v, want 100 and 101 self", self)
		}
	}},
	{"vlan device add batch", func(t *testing.T, e env) {
		bridgeWithPort(t, e)
		vlan := func(name string, id int, parent string) LinkInfo {
			return LinkInfo{Name: name, Kind: "vlan", AdminUp: ptr(true), Vlan: &VlanOptions{ID: id, Parent: parent}}
		}
		ls := []LinkInfo{vlan("Vlan10", 10, "Bridge"), vlan("Vlan11", 11, "nope"), vlan("Vlan12", 12, "Bridge"),
			vlan("Vlan10", 10, "Bridge"), vlan("Vlan14", 14, "Bridge"), vlan("Vlan15", 15, "Bridge")}
		ls[0].MTU = ptr(1400)
		ls[2].Alias = ptr("twelve") // not plain: the single Add, in its place
		ls[4].AdminUp = ptr(false)
		ls[5].MAC = mac("02:00:00:00:00:15")
		for v := 100; v < 140; v++ {
			ls = append(ls, vlan(fmt.Sprintf("Vlan%d", v), v, "Bridge"))
		}
		errs := e.k.Links().AddBatch(ls)
		if len(errs) != len(ls) {
			t.Fatalf("%d errors for %d links", len(errs), len(ls))
		}
		skipIfMissing(t, errs[0])
		for i, err := range errs {
			switch i {
			case 1:
				mustNotFound(t, "vlan on an absent parent", err)
			case 3:
				if !errors.Is(err, unix.EEXIST) || !strings.Contains(err.Error(), "Vlan10") {
					t.Fatalf("Vlan10 twice: %v, want EEXIST naming it", err)
				}
			default:
				must(t, err)
			}
		}
		br := getLink(t, e.k, "Bridge")
		for i, want := range ls {
			if i == 1 || i == 3 {
				continue
			}
			l := getLink(t, e.k, want.Name)
			if l.Kind != "vlan" || l.Vlan == nil || l.Vlan.ID != want.Vlan.ID || l.ParentIdx != br.Index ||
				*l.AdminUp != *want.AdminUp {
				t.Fatalf("%s: %+v (vlan %+v), want vlan %d on Bridge up %v", want.Name, l, l.Vlan, want.Vlan.ID, *want.AdminUp)
			}
			if want.MTU != nil && *l.MTU != *want.MTU {
				t.Fatalf("%s: mtu %d, want %d", want.Name, *l.MTU, *want.MTU)
			}
			if want.MAC != nil && l.MAC.String() != want.MAC.String() {
				t.Fatalf("%s: address %s, want %s", want.Name, l.MAC, want.MAC)
			}
			if want.Alias != nil && *l.Alias != *want.Alias {
				t.Fatalf("%s: alias %q, want %q", want.Name, *l.Alias, *want.Alias)
			}
		}
		if _, err := e.k.Links().Get("Vlan11"); !IsNotFound(err) {
			t.Fatalf("Vlan11 on an absent parent: %v, want not found", err)
		}
		if errs := e.k.Links().AddBatch(nil); len(errs) != 0 {
			t.Fatalf("empty batch: %v", errs)
		}
	}},
}
