package bpf

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"

	"github.com/switchyard-net/switchyard/tests/testns"
)

// tcEgress lists the egress filters of dev in ns (tc -j, the judge).
func tcEgress(t *testing.T, ns *testns.NS, dev string) []map[string]any {
	t.Helper()
	out := ns.Run("tc", "-n", ns.Name, "-j", "filter", "show", "dev", dev, "egress")
	var fs []map[string]any
	if strings.TrimSpace(out) != "" {
		if err := json.Unmarshal([]byte(out), &fs); err != nil {
			t.Fatalf("tc -j filter show: %v\n%s", err, out)
		}
	}
	var named []map[string]any
	for _, f := range fs {
		if _, ok := f["options"]; ok {
			named = append(named, f)
		}
	}
	return named
}

func hasQdisc(t *testing.T, ns *testns.NS, dev, kind string) bool {
	t.Helper()
	return strings.Contains(ns.Run("tc", "-n", ns.Name, "-j", "qdisc", "show", "dev", dev), `"kind":"`+kind+`"`)
}

// TestACLAttachEgress: on veth, AttachEgress adds clsact and the named
// filter (twice is once), the egress ACL drops pings leaving the port
// and counts them, and DetachEgress removes the filter and the clsact it
// made, but keeps a clsact another owner's filter still uses.
func TestACLAttachEgress(t *testing.T) {
	p := loadPort(t)
	a, b := testns.New(t), testns.New(t)
	a.Veth("acl0", b, "acl1")
	a.IP("addr", "add", "192.0.2.1/24", "dev", "acl0")
	a.IP("link", "set", "acl0", "up")
	b.IP("addr", "add", "192.0.2.2/24", "dev", "acl1")
	var idx int
	attach := func() {
		t.Helper()
		if err := a.Do(func() error {
			l, err := netlink.LinkByName("acl0")
			if err != nil {
				return err
			}
			idx = l.Attrs().Index
			return p.AttachEgress(idx)
		}); err != nil {
			t.Fatal(err)
		}
	}
	attach()
	attach()
	fs := tcEgress(t, a, "acl0")
	if len(fs) != 1 || !strings.Contains(mustJSON(fs[0]), ACLFilterName) || !strings.Contains(mustJSON(fs[0]), `"direct-action":true`) {
		t.Fatalf("egress filters %v: want one %s filter in direct-action mode", fs, ACLFilterName)
	}
	ping := func() bool {
		_, err := a.Exec("ping", "-c1", "-W1", "192.0.2.2")
		return err == nil
	}
	if !ping() {
		t.Fatal("ping fails with an empty egress ACL")
	}
	applyACL(t, p, ACLEgress, ACLRule{Name: "E|ping", Action: ACLDrop, ICMPType: 8, ICMPTypeSet: true})
	if ping() {
		t.Fatal("ping passes an egress ACL dropping ICMP echo requests")
	}
	if c := aclCounters(t, p, ACLEgress); c["E|ping"].Packets == 0 {
		t.Fatalf("egress counters %v: the dropped ping is not counted", c)
	}
	// another owner's filter (as EDT's, prio 0xed) keeps clsact
	other := aclFilter(idx, p.objs.AclEgress.FD())
	other.Priority, other.Name = 0xed, "other"
	if err := a.Do(func() error { return netlink.FilterAdd(other) }); err != nil {
		t.Fatal(err)
	}
	if err := a.Do(p.DetachEgress); err != nil {
		t.Fatal(err)
	}
	if fs := tcEgress(t, a, "acl0"); len(fs) != 1 || strings.Contains(mustJSON(fs[0]), ACLFilterName) {
		t.Fatalf("after DetachEgress: egress filters %v, want only the other owner's", fs)
	}
	if !hasQdisc(t, a, "acl0", "clsact") {
		t.Fatal("DetachEgress removed a clsact another filter uses")
	}
	other.Fd = -1
	if err := a.Do(func() error { return netlink.FilterDel(other) }); err != nil {
		t.Fatal(err)
	}
	attach()
	if err := a.Do(p.DetachEgress); err != nil {
		t.Fatal(err)
	}
	if hasQdisc(t, a, "acl0", "clsact") {
		t.Fatal("DetachEgress left clsact with no filter on it")
	}
	if err := a.Do(p.DetachEgress); err != nil {
		t.Fatalf("second DetachEgress: %v", err)
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestACLIngressVeth: the ingress ACL in the port's XDP program on veth,
// with no impairment configured: pings arriving are dropped and counted
// while the rule is there, and pass again once the ACL is removed.
func TestACLIngressVeth(t *testing.T) {
	p := loadPort(t)
	a, b := testns.New(t), testns.New(t)
	a.Veth("acl0", b, "acl1")
	a.IP("addr", "add", "192.0.2.1/24", "dev", "acl0")
	a.IP("link", "set", "acl0", "up")
	b.IP("addr", "add", "192.0.2.2/24", "dev", "acl1")
	if err := b.Do(func() error {
		l, err := netlink.LinkByName("acl1")
		if err != nil {
			return err
		}
		return p.Attach(l.Attrs().Index, ModeAuto)
	}); err != nil {
		t.Fatal(err)
	}
	ping := func() bool {
		_, err := a.Exec("ping", "-c1", "-W1", "192.0.2.2")
		return err == nil
	}
	if !ping() {
		t.Fatal("ping fails through the program with nothing configured")
	}
	applyACL(t, p, ACLIngress,
		ACLRule{Name: "I|ping", Priority: 2, Action: ACLDrop, Match: Match{Src: pfx("192.0.2.1/32"), Proto: 1, ProtoSet: true}},
		ACLRule{Name: "I|arp", Priority: 1, Action: ACLForward, EtherType: 0x0806, EtherTypeSet: true})
	if ping() {
		t.Fatal("ping passes an ingress ACL dropping ICMP from 192.0.2.1")
	}
	if c := aclCounters(t, p, ACLIngress); c["I|ping"].Packets == 0 {
		t.Fatalf("ingress counters %v: the dropped ping is not counted", c)
	}
	if err := p.ApplyACL(ACLIngress, nil); err != nil {
		t.Fatal(err)
	}
	if !ping() {
		t.Fatal("ping fails after the ACL is removed")
	}
}
