package bpf

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

const (
	tcActShot   = 2
	tcActUnspec = 0xffffffff // -1: next filter
)

func pfx(s string) netip.Prefix { return netip.MustParsePrefix(s) }
func addr(s string) netip.Addr  { return netip.MustParseAddr(s) }

func applyACL(t testing.TB, p *Port, stage ACLStage, rules ...ACLRule) {
	t.Helper()
	plan, err := CompileACL(rules)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.ApplyACL(stage, plan); err != nil {
		t.Fatal(err)
	}
}

func aclCounters(t testing.TB, p *Port, stage ACLStage) map[string]ACLCounter {
	t.Helper()
	c, err := p.ACLCounters(stage)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func unmatched(t testing.TB, p *Port, stage ACLStage) uint64 {
	t.Helper()
	c, err := p.ACLUnmatched(stage)
	if err != nil {
		t.Fatal(err)
	}
	return c.Packets
}

func tcp4(src, dst string, sport, dport uint16, flags uint8) frame {
	return frame{src: addr(src), dst: addr(dst), proto: 6, sport: sport, dport: dport, tcpFlags: flags}
}

// TestACLFields: each field, alone in one DROP rule, drops the packets it
// matches and passes the others (IPv4, IPv6, 802.1Q tagged, port range
// boundaries, TCP flags, ICMP type/code, DSCP, ETHER_TYPE on ARP).
func TestACLFields(t *testing.T) {
	p := loadPort(t)
	v6 := func(src, dst string, proto uint8, sport, dport uint16) frame {
		return frame{src: addr(src), dst: addr(dst), proto: proto, sport: sport, dport: dport}
	}
	u4 := func(src, dst string, sport, dport uint16) frame {
		return frame{src: addr(src), dst: addr(dst), proto: 17, sport: sport, dport: dport}
	}
	tagged := func(f frame, vids ...uint16) frame { f.vlans = vids; return f }
	withDSCP := func(f frame, d uint8) frame { f.dscp = d; return f }
	icmp := func(src string, typ, code uint8) frame {
		f := frame{src: addr(src), dst: addr(src), proto: 1, icmpType: typ, icmpCode: code}
		if addr(src).Is6() {
			f.proto = 58
		}
		return f
	}
	base := u4("192.0.2.1", "198.51.100.1", 40000, 53)
	for _, tc := range []struct {
		name string
		rule ACLRule
		drop []frame
		pass []frame
	}{
		{"src ipv4 /24", ACLRule{Match: Match{Src: pfx("192.0.2.0/24")}},
			[]frame{base, u4("192.0.2.255", "10.0.0.1", 1, 1)}, []frame{u4("192.0.3.1", "198.51.100.1", 1, 53), v6("2001:db8::1", "2001:db8::2", 17, 1, 1)}},
		{"dst ipv4 /32", ACLRule{Match: Match{Dst: pfx("198.51.100.1/32")}},
			[]frame{base}, []frame{u4("192.0.2.1", "198.51.100.2", 1, 53)}},
		{"src ipv6 /64", ACLRule{Match: Match{Src: pfx("2001:db8:1::/64")}},
			[]frame{v6("2001:db8:1::5", "2001:db8::2", 17, 1, 1), tagged(v6("2001:db8:1::ffff", "::1", 6, 1, 1), 7)},
			[]frame{v6("2001:db8:2::5", "2001:db8::2", 17, 1, 1), base}},
		{"dst ipv6 /128", ACLRule{Match: Match{Dst: pfx("2001:db8::2/128")}},
			[]frame{v6("2001:db8:1::5", "2001:db8::2", 17, 1, 1)}, []frame{v6("2001:db8:1::5", "2001:db8::3", 17, 1, 1)}},
		{"proto udp", ACLRule{Match: Match{Proto: 17, ProtoSet: true}},
			[]frame{base, v6("::1", "::2", 17, 1, 1)}, []frame{tcp4("192.0.2.1", "198.51.100.1", 1, 53, 0x10)}},
		{"dport range 1000-2000", ACLRule{Match: Match{Proto: 17, ProtoSet: true, Dport: ports(1000, 2000)}},
			[]frame{u4("192.0.2.1", "10.0.0.1", 1, 1000), u4("192.0.2.1", "10.0.0.1", 1, 1500), u4("192.0.2.1", "10.0.0.1", 1, 2000), v6("::1", "::2", 17, 5, 2000)},
			[]frame{u4("192.0.2.1", "10.0.0.1", 1, 999), u4("192.0.2.1", "10.0.0.1", 1, 2001), v6("::1", "::2", 17, 5, 999)}},
		{"sport range 1-65535", ACLRule{Match: Match{Proto: 6, ProtoSet: true, Sport: ports(1, 65535)}},
			[]frame{tcp4("192.0.2.1", "10.0.0.1", 1, 80, 2), tcp4("192.0.2.1", "10.0.0.1", 65535, 80, 2)},
			[]frame{tcp4("192.0.2.1", "10.0.0.1", 0, 80, 2)}},
		{"dscp 46", ACLRule{Match: Match{DSCP: 46, DSCPSet: true}},
			[]frame{withDSCP(base, 46), withDSCP(v6("::1", "::2", 17, 1, 1), 46)}, []frame{base, withDSCP(base, 45)}},
		{"vlan 100", ACLRule{Match: Match{VLAN: 100}},
			[]frame{tagged(base, 100), tagged(frame{etherType: 0x0806}, 100), tagged(base, 100, 5)},
			[]frame{base, tagged(base, 101), tagged(base, 5, 100)}},
		{"tcp flags syn without ack", ACLRule{TCPFlags: 0x02, TCPFlagsMask: 0x12},
			[]frame{tcp4("192.0.2.1", "10.0.0.1", 1, 22, 0x02), tcp4("192.0.2.1", "10.0.0.1", 1, 22, 0x02|0x08)},
			[]frame{tcp4("192.0.2.1", "10.0.0.1", 1, 22, 0x12), tcp4("192.0.2.1", "10.0.0.1", 1, 22, 0x10), base}},
		{"icmp echo request", ACLRule{ICMPType: 8, ICMPTypeSet: true, Match: Match{Proto: 1, ProtoSet: true}},
			[]frame{icmp("192.0.2.1", 8, 0)}, []frame{icmp("192.0.2.1", 0, 0), icmp("2001:db8::1", 8, 0), base}},
		{"icmpv6 type 128 code 0", ACLRule{ICMPType: 128, ICMPTypeSet: true, ICMPCode: 0, ICMPCodeSet: true, Match: Match{Src: pfx("2001:db8::/32")}},
			[]frame{icmp("2001:db8::1", 128, 0)}, []frame{icmp("2001:db8::1", 129, 0), icmp("2001:db8::1", 128, 1), icmp("192.0.2.1", 128, 0)}},
		{"icmp code without proto: both families", ACLRule{ICMPCode: 3, ICMPCodeSet: true},
			[]frame{icmp("192.0.2.1", 3, 3), icmp("2001:db8::1", 1, 3)}, []frame{icmp("192.0.2.1", 3, 1), u4("192.0.2.1", "10.0.0.1", 3, 3)}},
		{"ether type arp", ACLRule{EtherType: 0x0806, EtherTypeSet: true},
			[]frame{{etherType: 0x0806}, tagged(frame{etherType: 0x0806}, 3)}, []frame{{etherType: 0x88cc}, base, v6("::1", "::2", 17, 1, 1)}},
		{"ether type ipv4", ACLRule{EtherType: 0x0800, EtherTypeSet: true},
			[]frame{base, tagged(base, 9)}, []frame{{etherType: 0x0806}, v6("::1", "::2", 17, 1, 1)}},
		{"ether type ipv6 and udp", ACLRule{EtherType: 0x86dd, EtherTypeSet: true, Match: Match{Proto: 17, ProtoSet: true}},
			[]frame{v6("::1", "::2", 17, 1, 1)}, []frame{base, v6("::1", "::2", 6, 1, 1)}},
		{"src 0.0.0.0/0: IPv4 only", ACLRule{Match: Match{Src: pfx("0.0.0.0/0")}},
			[]frame{base, tagged(base, 7)}, []frame{{etherType: 0x0806}, v6("::1", "::2", 17, 1, 1)}},
		{"dst ::/0: IPv6 only", ACLRule{Match: Match{Dst: pfx("::/0")}},
			[]frame{v6("::1", "::2", 17, 1, 1)}, []frame{{etherType: 0x0806}, base}},
		{"match all", ACLRule{},
			[]frame{base, {etherType: 0x0806}, v6("::1", "::2", 17, 1, 1)}, nil},
	} {
		r := tc.rule
		r.Name, r.Action = "t|r", ACLDrop
		applyACL(t, p, ACLIngress, r)
		for _, f := range tc.drop {
			if got := run(t, p, f.bytes()); got != xdpDrop {
				t.Errorf("%s: %+v: verdict %d, want drop", tc.name, f, got)
			}
		}
		for _, f := range tc.pass {
			if got := run(t, p, f.bytes()); got != xdpPass {
				t.Errorf("%s: %+v: verdict %d, want pass", tc.name, f, got)
			}
		}
		c := aclCounters(t, p, ACLIngress)
		if c["t|r"].Packets != uint64(len(tc.drop)) {
			t.Errorf("%s: counted %d drops, want %d", tc.name, c["t|r"].Packets, len(tc.drop))
		}
		if err := p.ApplyACL(ACLIngress, nil); err != nil { // the rule's counter starts again at 0
			t.Fatal(err)
		}
	}
}

// TestACLSeed003: seed 003's SYN filter: TCP SYN without ACK (0x02/0x12)
// to a port other than 80/443 is dropped; SYN to 80/443 and packets of
// established connections pass.
func TestACLSeed003(t *testing.T) {
	p := loadPort(t)
	web := func(name string, port uint16) ACLRule {
		return ACLRule{Name: name, Priority: 20, Action: ACLForward, Match: Match{Proto: 6, ProtoSet: true, Dport: ports(port, port)}}
	}
	applyACL(t, p, ACLIngress, web("SYN|HTTP", 80), web("SYN|HTTPS", 443),
		ACLRule{Name: "SYN|DROP_SYN", Priority: 10, Action: ACLDrop, TCPFlags: 0x02, TCPFlagsMask: 0x12})
	for _, tc := range []struct {
		port  uint16
		flags uint8
		want  uint32
	}{{22, 0x02, xdpDrop}, {8080, 0x02, xdpDrop}, {80, 0x02, xdpPass}, {443, 0x02, xdpPass},
		{22, 0x10, xdpPass}, {22, 0x12, xdpPass}, {22, 0x18, xdpPass}, {22, 0x11, xdpPass}} {
		if got := run(t, p, tcp4("192.0.2.1", "10.0.0.1", 40000, tc.port, tc.flags).bytes()); got != tc.want {
			t.Errorf("tcp to %d flags %#x: verdict %d, want %d", tc.port, tc.flags, got, tc.want)
		}
	}
	c := aclCounters(t, p, ACLIngress)
	if c["SYN|DROP_SYN"].Packets != 2 || c["SYN|HTTP"].Packets != 1 || c["SYN|HTTPS"].Packets != 1 || unmatched(t, p, ACLIngress) != 4 {
		t.Errorf("counters %v: want 2 dropped, 1 HTTP, 1 HTTPS, 4 unmatched", c)
	}
}

// TestACLPriority: the highest priority matching rule decides, whatever
// its shape; a tie goes to the smaller name.
func TestACLPriority(t *testing.T) {
	p := loadPort(t)
	f := udp4("10.1.2.3", 53)
	for _, tc := range []struct {
		name  string
		rules []ACLRule
		want  uint32
		won   string
	}{
		{"wide forward above narrow drop", []ACLRule{
			{Name: "a", Priority: 10, Action: ACLForward, Match: Match{Dst: pfx("10.0.0.0/8")}},
			{Name: "b", Priority: 5, Action: ACLDrop, Match: Match{Dst: pfx("10.1.2.3/32"), Proto: 17, ProtoSet: true, Dport: ports(53, 53)}},
		}, xdpPass, "a"},
		{"narrow drop above wide forward", []ACLRule{
			{Name: "a", Priority: 5, Action: ACLForward, Match: Match{Dst: pfx("10.0.0.0/8")}},
			{Name: "b", Priority: 10, Action: ACLDrop, Match: Match{Dst: pfx("10.1.2.3/32"), Proto: 17, ProtoSet: true, Dport: ports(53, 53)}},
		}, xdpDrop, "b"},
		{"tie: smaller name drops", []ACLRule{
			{Name: "b", Priority: 7, Action: ACLForward, Match: Match{Dst: pfx("10.1.0.0/16")}},
			{Name: "a", Priority: 7, Action: ACLDrop, Match: Match{Proto: 17, ProtoSet: true, Dport: ports(0, 1023)}},
		}, xdpDrop, "a"},
		{"tie: smaller name forwards", []ACLRule{
			{Name: "a", Priority: 7, Action: ACLForward, Match: Match{Dst: pfx("10.1.0.0/16")}},
			{Name: "b", Priority: 7, Action: ACLDrop, Match: Match{Proto: 17, ProtoSet: true, Dport: ports(0, 1023)}},
		}, xdpPass, "a"},
		{"default rule (ETHER_TYPE 0x0800) below a forward", []ACLRule{
			{Name: "DEFAULT_RULE", Priority: 1, Action: ACLDrop, EtherType: 0x0800, EtherTypeSet: true},
			{Name: "a", Priority: 10, Action: ACLForward, Match: Match{Dst: pfx("10.1.0.0/16")}},
		}, xdpPass, "a"},
		{"default rule (ETHER_TYPE 0x0800) above a forward", []ACLRule{
			{Name: "DEFAULT_RULE", Priority: 20, Action: ACLDrop, EtherType: 0x0800, EtherTypeSet: true},
			{Name: "a", Priority: 10, Action: ACLForward, Match: Match{Dst: pfx("10.1.0.0/16")}},
		}, xdpDrop, "DEFAULT_RULE"},
		{"match-all below a drop, IPv6 default rule ignored", []ACLRule{
			{Name: "all", Priority: 1, Action: ACLForward},
			{Name: "v6", Priority: 30, Action: ACLDrop, EtherType: 0x86dd, EtherTypeSet: true},
			{Name: "b", Priority: 10, Action: ACLDrop, Match: Match{Proto: 17, ProtoSet: true, Dport: ports(53, 53)}},
		}, xdpDrop, "b"},
		{"same match, two priorities", []ACLRule{
			{Name: "lo", Priority: 1, Action: ACLForward, Match: Match{Dst: pfx("10.1.2.3/32")}},
			{Name: "hi", Priority: 2, Action: ACLDrop, Match: Match{Dst: pfx("10.1.2.3/32")}},
		}, xdpDrop, "hi"},
	} {
		applyACL(t, p, ACLIngress, tc.rules...)
		before := aclCounters(t, p, ACLIngress)
		if got := run(t, p, f.bytes()); got != tc.want {
			t.Errorf("%s: verdict %d, want %d", tc.name, got, tc.want)
		}
		after := aclCounters(t, p, ACLIngress)
		if after[tc.won].Packets != before[tc.won].Packets+1 {
			t.Errorf("%s: rule %s not counted: %v -> %v", tc.name, tc.won, before, after)
		}
	}
}

// TestACLCounters: packets and bytes per rule are exact; a rule kept
// across a swap keeps its counts, a new rule starts at zero, and a rule
// removed and added back starts again.
func TestACLCounters(t *testing.T) {
	p := loadPort(t)
	a := ACLRule{Name: "T|a", Priority: 2, Action: ACLDrop, Match: Match{Src: pfx("192.0.2.0/24")}}
	b := ACLRule{Name: "T|b", Priority: 1, Action: ACLForward, Match: Match{Proto: 17, ProtoSet: true}}
	applyACL(t, p, ACLIngress, a, b)
	fa := udp4("10.0.0.1", 9).bytes() // src 192.0.2.1: a
	fb := frame{src: addr("198.51.100.7"), dst: addr("10.0.0.1"), proto: 17, sport: 1, dport: 2, payloadLen: 100}.bytes()
	runRepeat(t, p, fa, 1000)
	runRepeat(t, p, fb, 700)
	want := map[string]ACLCounter{"T|a": {1000, 1000 * uint64(len(fa))}, "T|b": {700, 700 * uint64(len(fb))}}
	if c := aclCounters(t, p, ACLIngress); fmt.Sprint(c) != fmt.Sprint(want) {
		t.Fatalf("counters %v, want %v", c, want)
	}
	c := ACLRule{Name: "T|c", Priority: 3, Action: ACLForward, Match: Match{Dst: pfx("10.9.0.0/16")}}
	applyACL(t, p, ACLIngress, b, c, a) // a and b kept: counts survive
	run(t, p, fa)
	want["T|a"] = ACLCounter{1001, 1001 * uint64(len(fa))}
	want["T|c"] = ACLCounter{}
	if got := aclCounters(t, p, ACLIngress); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after swap: counters %v, want %v", got, want)
	}
	applyACL(t, p, ACLIngress, b)
	applyACL(t, p, ACLIngress, a, b)
	got := aclCounters(t, p, ACLIngress)
	if got["T|a"] != (ACLCounter{}) || got["T|b"].Packets != 700 {
		t.Fatalf("a removed and re-added: %v; want a at 0 and b at 700", got)
	}
	if _, ok := got["T|c"]; ok {
		t.Fatalf("removed rule T|c still has a counter: %v", got)
	}
}

// TestACLEgress: the tc program runs the egress rule set on an skb
// (BPF_PROG_TEST_RUN): drop = TC_ACT_SHOT, else TC_ACT_UNSPEC so the next
// filter (EDT) still runs; the ingress set does not apply there.
func TestACLEgress(t *testing.T) {
	p := loadPort(t)
	runTC := func(f frame) uint32 {
		t.Helper()
		ret, err := p.objs.AclEgress.Run(&ebpf.RunOptions{Data: f.bytes()})
		if err != nil {
			t.Fatalf("acl_egress run: %v", err)
		}
		return ret
	}
	syn := tcp4("192.0.2.1", "10.0.0.1", 1, 22, 2)
	if got := runTC(syn); got != tcActUnspec {
		t.Fatalf("no egress ACL: %#x, want TC_ACT_UNSPEC", got)
	}
	applyACL(t, p, ACLIngress, ACLRule{Name: "in", Action: ACLDrop})
	if got := runTC(syn); got != tcActUnspec {
		t.Fatalf("ingress ACL only: %#x, want TC_ACT_UNSPEC", got)
	}
	applyACL(t, p, ACLEgress,
		ACLRule{Name: "E|syn", Priority: 1, Action: ACLDrop, TCPFlags: 2, TCPFlagsMask: 0x12},
		ACLRule{Name: "E|v6", Priority: 2, Action: ACLDrop, Match: Match{Dst: pfx("2001:db8::/32"), Proto: 17, ProtoSet: true, Dport: ports(5000, 6000)}},
		ACLRule{Name: "E|arp", Priority: 3, Action: ACLDrop, EtherType: 0x0806, EtherTypeSet: true, Match: Match{VLAN: 12}})
	for _, tc := range []struct {
		f    frame
		want uint32
	}{
		{syn, tcActShot},
		{tcp4("192.0.2.1", "10.0.0.1", 1, 22, 0x10), tcActUnspec},
		{frame{src: addr("2001:db8:1::1"), dst: addr("2001:db8::9"), proto: 17, sport: 1, dport: 6000}, tcActShot},
		{frame{src: addr("2001:db8:1::1"), dst: addr("2001:db8::9"), proto: 17, sport: 1, dport: 6001}, tcActUnspec},
		{frame{etherType: 0x0806, vlans: []uint16{12}}, tcActShot},
		{frame{etherType: 0x0806}, tcActUnspec},
	} {
		if got := runTC(tc.f); got != tc.want {
			t.Errorf("%+v: %#x, want %#x", tc.f, got, tc.want)
		}
	}
	c := aclCounters(t, p, ACLEgress)
	if c["E|syn"].Packets != 1 || c["E|v6"].Packets != 1 || c["E|arp"].Packets != 1 || unmatched(t, p, ACLEgress) != 3 {
		t.Errorf("egress counters %v", c)
	}
	if ci := aclCounters(t, p, ACLIngress); ci["in"].Packets != 0 {
		t.Errorf("ingress counters moved by egress packets: %v", ci)
	}
	if got := run(t, p, syn.bytes()); got != xdpDrop {
		t.Errorf("ingress: %d, want drop by rule in", got)
	}
}

// TestACLWithImpairment: on one port, an ACL drop is counted by the ACL
// only, and forwarded packets still go through the impairment stage
// (periodic loss: every 2nd packet of the port profile).
func TestACLWithImpairment(t *testing.T) {
	p := loadPort(t)
	apply(t, p, &Spec{LossModel: LossPeriodic, Period: 2})
	applyACL(t, p, ACLIngress, ACLRule{Name: "A|x", Action: ACLDrop, Match: Match{Src: pfx("203.0.113.0/24")}})
	x := frame{src: addr("203.0.113.5"), dst: addr("10.0.0.1"), proto: 17, sport: 1, dport: 9}.bytes()
	y := udp4("10.0.0.1", 9).bytes()
	var yDrops int
	for i := 0; i < 10; i++ {
		if got := run(t, p, x); got != xdpDrop {
			t.Fatalf("blocked source: verdict %d, want drop", got)
		}
		if run(t, p, y) == xdpDrop {
			yDrops++
		}
	}
	imp := counters(t, p, "")
	acl := aclCounters(t, p, ACLIngress)
	if yDrops != 5 || imp.RxPackets != 10 || imp.DroppedLoss != 5 {
		t.Errorf("forwarded packets: %d of 10 dropped, impairment counters %+v; want every 2nd (5) by the impairment", yDrops, imp)
	}
	if acl["A|x"].Packets != 10 || unmatched(t, p, ACLIngress) != 10 {
		t.Errorf("ACL counters %v; want 10 on A|x, 10 unmatched", acl)
	}
	// Without the impairment, the ACL still runs.
	if err := p.Apply(&Plan{}); err != nil {
		t.Fatal(err)
	}
	if got := run(t, p, x); got != xdpDrop {
		t.Errorf("ACL without impairment: verdict %d, want drop", got)
	}
	if got := run(t, p, y); got != xdpPass {
		t.Errorf("ACL without impairment, forwarded: verdict %d, want pass", got)
	}
}

// TestACLAtomicSwap: rule sets A and B both drop sources X and Y, through
// different shapes (A: /32 and /24; B: /16 and a port range), and are
// swapped in a loop while another goroutine runs packets of X and Y. A
// packet seeing A's header with B's hashes (or the reverse) would find no
// rule and pass: every packet must be dropped, and counted by A's or B's
// rule of its source.
func TestACLAtomicSwap(t *testing.T) {
	p := loadPort(t)
	setA := []ACLRule{
		{Name: "A|x", Priority: 2, Action: ACLDrop, Match: Match{Src: pfx("192.0.2.1/32")}},
		{Name: "A|y", Priority: 1, Action: ACLDrop, Match: Match{Src: pfx("198.51.100.0/24"), Proto: 17, ProtoSet: true}},
		{Name: "A|fwd", Priority: 0, Action: ACLForward},
	}
	setB := []ACLRule{
		{Name: "B|y", Priority: 2, Action: ACLDrop, Match: Match{Src: pfx("198.51.0.0/16")}},
		{Name: "B|x", Priority: 1, Action: ACLDrop, Match: Match{Src: pfx("192.0.0.0/16"), Proto: 17, ProtoSet: true, Dport: ports(8, 15)}},
		{Name: "B|fwd", Priority: 0, Action: ACLForward},
	}
	plans := []*ACLPlan{}
	for _, s := range [][]ACLRule{setA, setB} {
		plan, err := CompileACL(s)
		if err != nil {
			t.Fatal(err)
		}
		plans = append(plans, plan)
	}
	if err := p.ApplyACL(ACLIngress, plans[0]); err != nil {
		t.Fatal(err)
	}
	x := udp4("10.0.0.1", 9).bytes() // src 192.0.2.1
	y := frame{src: addr("198.51.100.7"), dst: addr("10.0.0.1"), proto: 17, sport: 1, dport: 9}.bytes()
	var (
		stop   atomic.Bool
		swaps  atomic.Int64
		wg     sync.WaitGroup
		runErr error
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 1; !stop.Load(); i++ {
			if err := p.ApplyACL(ACLIngress, plans[i%2]); err != nil {
				runErr = err
				return
			}
			swaps.Add(1)
		}
	}()
	var packets, passed int
	for swaps.Load() < 100 && runErr == nil {
		for _, d := range [][]byte{x, y} {
			ret, err := p.objs.Impair.Run(&ebpf.RunOptions{Data: d, Repeat: 50})
			if err != nil {
				stop.Store(true)
				wg.Wait()
				t.Fatal(err)
			}
			packets += 50
			if ret != xdpDrop {
				passed++
			}
		}
	}
	stop.Store(true)
	wg.Wait()
	if runErr != nil {
		t.Fatal(runErr)
	}
	t.Logf("%d swaps while %d packets ran", swaps.Load(), packets)
	if passed != 0 {
		t.Fatalf("%d runs passed: a packet saw a mix of rule sets A and B", passed)
	}
	c := aclCounters(t, p, ACLIngress)
	var dropped uint64
	for _, n := range []string{"A|x", "A|y", "B|x", "B|y"} {
		dropped += c[n].Packets
	}
	// rules of the set not published last have no counter any more; the
	// last set's counters are at least what ran since its last publish
	if c["A|fwd"].Packets+c["B|fwd"].Packets != 0 || unmatched(t, p, ACLIngress) != 0 {
		t.Fatalf("counters %v: a packet was forwarded or unmatched", c)
	}
}

// TestACLRuleErrors: a rule set the data plane cannot hold is refused
// with an *ACLRuleError naming the rule.
func TestACLRuleErrors(t *testing.T) {
	shapes := []ACLRule{}
	for i := 0; i <= ACLMaxShapes; i++ {
		shapes = append(shapes, ACLRule{Name: fmt.Sprintf("T|s%02d", i), Priority: 100 - i, Match: Match{Src: netip.PrefixFrom(addr("10.0.0.0"), i%33), Dst: netip.PrefixFrom(addr("10.0.0.0"), i/33)}})
	}
	for _, tc := range []struct {
		rules []ACLRule
		name  string
		why   string
	}{
		{shapes, fmt.Sprintf("T|s%02d", ACLMaxShapes), "distinct IPv4 match shape"},
		{[]ACLRule{{Name: "T|arp", EtherType: 0x0806, EtherTypeSet: true, Match: Match{Proto: 6, ProtoSet: true}}}, "T|arp", "not IP"},
		{[]ACLRule{{Name: "T|v", EtherType: 0x86dd, EtherTypeSet: true, Match: Match{Src: pfx("10.0.0.0/8")}}}, "T|v", "IPv6"},
		{[]ACLRule{{Name: "T|icmp", ICMPType: 8, ICMPTypeSet: true, Match: Match{Proto: 6, ProtoSet: true}}}, "T|icmp", "IP_PROTOCOL 6"},
		{[]ACLRule{{Name: "T|flags", TCPFlags: 2, TCPFlagsMask: 2, Match: Match{Proto: 17, ProtoSet: true}}}, "T|flags", "not TCP"},
		{[]ACLRule{{Name: "T|" + strings.Repeat("x", 70)}}, "T|" + strings.Repeat("x", 70), "longer"},
		{[]ACLRule{{Name: "T|d"}, {Name: "T|d", Priority: 3}}, "T|d", "two rules"},
		{[]ACLRule{{Name: "T|fam", Match: Match{Src: pfx("10.0.0.0/8"), Dst: pfx("2001:db8::/32")}}}, "T|fam", "families"},
	} {
		_, err := CompileACL(tc.rules)
		var re *ACLRuleError
		if !errors.As(err, &re) || re.Name != tc.name || !strings.Contains(re.Reason, tc.why) {
			t.Errorf("CompileACL: %v; want an *ACLRuleError naming %s (%q)", err, tc.name, tc.why)
		}
	}
	if _, err := CompileACL(shapes[:ACLMaxShapes]); err != nil {
		t.Errorf("%d shapes: %v", ACLMaxShapes, err)
	}
}

// TestACLPins: counters and rule indexes survive a restart (a new Load
// on the same pins), and the published rule set keeps working.
func TestACLPins(t *testing.T) {
	loadPort(t) // skips without root or BPF
	mnt := filepath.Join(t.TempDir(), "bpffs")
	if err := os.Mkdir(mnt, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("bpf", mnt, "bpf", 0, "mode=0700"); err != nil {
		t.Skipf("cannot mount a private bpffs (needed for pinning): %v", err)
	}
	t.Cleanup(func() { unix.Unmount(mnt, unix.MNT_DETACH) })
	dir := filepath.Join(mnt, "port")
	p1, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	applyACL(t, p1, ACLIngress, ACLRule{Name: "P|x", Action: ACLDrop, Match: Match{Proto: 17, ProtoSet: true}})
	runRepeat(t, p1, udp4("10.0.0.1", 9).bytes(), 10)
	p1.Close()
	p2, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer p2.Close()
	if c := aclCounters(t, p2, ACLIngress); c["P|x"].Packets != 10 {
		t.Fatalf("after reload: %v, want P|x at 10", c)
	}
	applyACL(t, p2, ACLIngress, ACLRule{Name: "P|x", Action: ACLDrop, Match: Match{Proto: 17, ProtoSet: true}}, ACLRule{Name: "P|y"})
	if got := run(t, p2, udp4("10.0.0.1", 9).bytes()); got != xdpDrop {
		t.Fatalf("after reload: verdict %d, want drop", got)
	}
	if c := aclCounters(t, p2, ACLIngress); c["P|x"].Packets != 11 {
		t.Fatalf("after reload and re-apply: %v, want P|x at 11", c)
	}
	if err := p2.Remove(); err != nil {
		t.Fatal(err)
	}
}

// TestACLVerifierStats: both programs stay far below the verifier's
// budget (see TestVerifierStats).
func TestACLVerifierStats(t *testing.T) {
	loadPort(t) // skips without root or BPF
	spec, err := loadImpair()
	if err != nil {
		t.Fatal(err)
	}
	coll, err := ebpf.NewCollectionWithOptions(spec, ebpf.CollectionOptions{Programs: ebpf.ProgramOptions{LogLevel: ebpf.LogLevelStats}})
	if err != nil {
		t.Fatal(err)
	}
	defer coll.Close()
	for _, name := range []string{"impair", "acl_egress"} {
		m := regexp.MustCompile(`processed (\d+) insns.*`).FindStringSubmatch(coll.Programs[name].VerifierLog)
		if m == nil {
			t.Fatalf("%s: no statistics in the verifier log", name)
		}
		t.Logf("%s: %s", name, m[0])
		if n, _ := strconv.Atoi(m[1]); n > 250000 {
			t.Errorf("%s: the verifier walked %d instructions, more than a quarter of its 1M limit", name, n)
		}
	}
}
