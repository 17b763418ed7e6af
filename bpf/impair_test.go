package bpf

import (
	"encoding/binary"
	"math"
	"net/netip"
	"runtime"
	"syscall"
	"testing"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// runRepeat runs the program n times in one BPF_PROG_TEST_RUN, exactly n
// times. The kernel ends a repeated run early with EINTR when a signal is
// pending, and cilium/ebpf then starts the whole run again, so a run
// interrupted after k packets counts n+k (CI once saw 701 of 700: the Go
// runtime's preemption signal, SIGURG, sent just as the thread entered the
// syscall). The run therefore happens on a locked thread with the
// asynchronous signals blocked; they are delivered when it ends.
func runRepeat(t testing.TB, p *Port, data []byte, n int) {
	t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var block, old unix.Sigset_t
	for sig := 1; sig <= 64; sig++ {
		switch syscall.Signal(sig) {
		case unix.SIGSEGV, unix.SIGBUS, unix.SIGFPE, unix.SIGILL, unix.SIGTRAP:
			continue // synchronous: the runtime needs them
		}
		block.Val[(sig-1)/64] |= 1 << ((sig - 1) % 64)
	}
	if err := unix.PthreadSigmask(unix.SIG_BLOCK, &block, &old); err != nil {
		t.Fatalf("pthread_sigmask: %v", err)
	}
	_, err := p.objs.Impair.Run(&ebpf.RunOptions{Data: data, Repeat: uint32(n)})
	if err := unix.PthreadSigmask(unix.SIG_SETMASK, &old, nil); err != nil {
		t.Fatalf("pthread_sigmask restore: %v", err)
	}
	if err != nil {
		t.Fatalf("prog.Run repeat %d: %v", n, err)
	}
}

// TestRandomLoss: 1,000,000 packets at loss 10 with a seed: measured loss
// within 0.1 percentage points (3.3 sigma; the seed makes it repeatable).
func TestRandomLoss(t *testing.T) {
	p := loadPort(t)
	pinCPU(t)
	apply(t, p, &Spec{Loss: 10, Seed: seed(7)})
	const n = 1000000
	runRepeat(t, p, udp4("10.0.0.1", 9).bytes(), n)
	c := counters(t, p, "")
	checkInvariant(t, "", c)
	if c.RxPackets != n {
		t.Fatalf("rx_packets %d, want %d", c.RxPackets, n)
	}
	loss := 100 * float64(c.DroppedLoss) / n
	t.Logf("loss 10%%: measured %.4f%% over %d packets", loss, n)
	if math.Abs(loss-10) > 0.1 {
		t.Errorf("measured loss %.4f%%, want 10 +- 0.1", loss)
	}
}

// TestGilbertElliott: mean loss-burst length within 3% of 1/r (300,000
// packets one by one, ~12,500 bursts: 3.9 sigma) and overall loss within
// 0.2 points of (r*lg + p*lb)/(p+r) over 10,000,000 packets (bursts make
// neighbouring packets correlated: one sigma is 0.03 points there, but
// 0.16 points over 300,000 packets, too close to the bound).
func TestGilbertElliott(t *testing.T) {
	pinCPU(t)
	const gp, gr = 0.05, 0.25
	spec := &Spec{LossModel: LossGilbert, GEP: 5, GER: 25, GELossBad: 100, Seed: seed(11)}
	data := udp4("10.0.0.1", 9).bytes()

	p := loadPort(t)
	apply(t, p, spec)
	const n = 300000
	drops, bursts, run0 := 0, 0, 0
	for i := 0; i < n; i++ {
		if run(t, p, data) == xdpDrop {
			drops++
			run0++
			continue
		}
		if run0 > 0 {
			bursts++
			run0 = 0
		}
	}
	meanBurst := float64(drops) / float64(bursts)
	t.Logf("gilbert p=5%% r=25%%: mean burst %.3f (want %.3f) over %d bursts", meanBurst, 1/gr, bursts)
	if math.Abs(meanBurst-1/gr)/(1/gr) > 0.03 {
		t.Errorf("mean burst length %.3f, want %.3f +- 3%%", meanBurst, 1/gr)
	}
	checkInvariant(t, "", counters(t, p, ""))

	p = loadPort(t)
	apply(t, p, spec)
	const many = 10000000
	runRepeat(t, p, data, many)
	c := counters(t, p, "")
	checkInvariant(t, "", c)
	loss := 100 * float64(c.DroppedLoss) / float64(c.RxPackets)
	want := 100 * (gr*0 + gp*1) / (gp + gr)
	t.Logf("gilbert p=5%% r=25%%: loss %.3f%% (want %.3f%%) over %d packets", loss, want, c.RxPackets)
	if c.RxPackets != many || math.Abs(loss-want) > 0.2 {
		t.Errorf("loss %.3f%% over %d packets, want %.3f +- 0.2", loss, c.RxPackets, want)
	}
}

// TestPeriodic: every 7th packet is dropped, exactly.
func TestPeriodic(t *testing.T) {
	p := loadPort(t)
	apply(t, p, &Spec{LossModel: LossPeriodic, Period: 7})
	data := udp4("10.0.0.1", 9).bytes()
	for i := 1; i <= 70; i++ {
		want := uint32(xdpPass)
		if i%7 == 0 {
			want = xdpDrop
		}
		if got := run(t, p, data); got != want {
			t.Fatalf("packet %d: verdict %d, want %d", i, got, want)
		}
	}
	runRepeat(t, p, data, 7000)
	c := counters(t, p, "")
	if c.RxPackets != 7070 || c.DroppedLoss != 1010 {
		t.Errorf("counters %+v: want 7070 rx, 1010 dropped", c)
	}
	checkInvariant(t, "", c)
}

// TestSameSeedSamePattern: two fresh instances with the same seed drop
// the same packets of the same sequence; another seed does not.
func TestSameSeedSamePattern(t *testing.T) {
	pinCPU(t)
	pattern := func(s uint64) []bool {
		p := loadPort(t)
		apply(t, p, &Spec{Loss: 30, Corrupt: 5, Seed: seed(s)})
		var out []bool
		for i := 0; i < 5000; i++ {
			out = append(out, run(t, p, udp4("10.0.0.1", uint16(i)).bytes()) == xdpDrop)
		}
		return out
	}
	a, b, c := pattern(42), pattern(42), pattern(43)
	same, diff := true, false
	for i := range a {
		same = same && a[i] == b[i]
		diff = diff || a[i] != c[i]
	}
	if !same {
		t.Error("seed 42 twice gave different drop patterns")
	}
	if !diff {
		t.Error("seeds 42 and 43 gave the same drop pattern")
	}
}

// TestRuleMatching covers IPv4, IPv6 (with an extension header), 802.1Q
// and QinQ, protocol, port ranges, DSCP, priority order, the port profile
// for unmatched packets and non-IP frames passing untouched.
func TestRuleMatching(t *testing.T) {
	p := loadPort(t)
	drop := Spec{Loss: 100}
	net10 := netip.MustParsePrefix("10.0.0.0/8")
	apply(t, p, &Spec{LossModel: LossPeriodic, Period: 1}, // port: drop all
		RuleSpec{Name: "v4range", Spec: drop, Priority: 5, Match: Match{Dst: net10, Proto: 17, ProtoSet: true, Dport: ports(1000, 2000)}},
		RuleSpec{Name: "v4pass", Priority: 6, Match: Match{Dst: net10, Proto: 17, ProtoSet: true, Dport: ports(1500, 1500)}},
		RuleSpec{Name: "v6", Match: Match{Src: netip.MustParsePrefix("2001:db8::/32"), Proto: 6, ProtoSet: true, Sport: ports(443, 443)}},
		RuleSpec{Name: "vlan", Match: Match{VLAN: 100}},
		RuleSpec{Name: "dscp", Match: Match{DSCP: 46, DSCPSet: true, Proto: 17, ProtoSet: true}},
		RuleSpec{Name: "icmp", Match: Match{Proto: 1, ProtoSet: true, Dst: netip.MustParsePrefix("198.51.100.0/24")}},
	)
	v6a, v6b := netip.MustParseAddr("2001:db8::1"), netip.MustParseAddr("2001:db9::1")
	dst6 := netip.MustParseAddr("2001:db8:ffff::2")
	for _, tc := range []struct {
		name string
		f    frame
		want uint32
		rule string // counter that must count it; "-" = none
	}{
		{"v4 udp in range (lo)", udp4("10.1.2.3", 1000), xdpDrop, "v4range"},
		{"v4 udp in range (hi)", udp4("10.1.2.3", 2000), xdpDrop, "v4range"},
		{"v4 udp in range, higher priority exempts", udp4("10.1.2.3", 1500), xdpPass, "v4pass"},
		{"v4 udp below range: port profile", udp4("10.1.2.3", 999), xdpDrop, ""},
		{"v4 udp above range: port profile", udp4("10.1.2.3", 2001), xdpDrop, ""},
		{"v4 other dst: port profile", udp4("11.0.0.1", 1500), xdpDrop, ""},
		{"v4 with options", func() frame { f := udp4("10.9.9.9", 1234); f.ipOptions = true; return f }(), xdpDrop, "v4range"},
		{"v6 tcp sport 443", frame{src: v6a, dst: dst6, proto: 6, sport: 443, dport: 5555}, xdpPass, "v6"},
		{"v6 tcp sport 443 hop-by-hop", frame{src: v6a, dst: dst6, proto: 6, sport: 443, dport: 5555, hopByHop: true}, xdpPass, "v6"},
		{"v6 other src", frame{src: v6b, dst: dst6, proto: 6, sport: 443, dport: 5555}, xdpDrop, ""},
		{"v6 udp sport 443", frame{src: v6a, dst: dst6, proto: 17, sport: 443, dport: 5555}, xdpDrop, ""},
		{"tagged 100", func() frame { f := udp4("11.0.0.1", 1); f.vlans = []uint16{100}; return f }(), xdpPass, "vlan"},
		{"tagged 200", func() frame { f := udp4("11.0.0.1", 1); f.vlans = []uint16{200}; return f }(), xdpDrop, ""},
		{"qinq outer 100", func() frame { f := udp4("11.0.0.1", 1); f.vlans = []uint16{100, 7}; return f }(), xdpPass, "vlan"},
		{"qinq inner 100", func() frame { f := udp4("11.0.0.1", 1); f.vlans = []uint16{7, 100}; return f }(), xdpDrop, ""},
		{"dscp 46 udp", func() frame { f := udp4("11.0.0.1", 1); f.dscp = 46; return f }(), xdpPass, "dscp"},
		{"dscp 46 v6 udp", frame{src: v6b, dst: dst6, proto: 17, dscp: 46}, xdpPass, "dscp"},
		{"dscp 10", func() frame { f := udp4("11.0.0.1", 1); f.dscp = 10; return f }(), xdpDrop, ""},
		{"icmp", frame{src: netip.MustParseAddr("192.0.2.1"), dst: netip.MustParseAddr("198.51.100.9"), proto: 1}, xdpPass, "icmp"},
		{"arp untouched", frame{etherType: 0x0806}, xdpPass, "-"},
		{"lldp untouched", frame{etherType: 0x88cc}, xdpPass, "-"},
		{"truncated ipv4 untouched", frame{etherType: 0x0800}, xdpPass, "-"},
	} {
		before, err := p.Counters()
		if err != nil {
			t.Fatal(err)
		}
		if got := run(t, p, tc.f.bytes()); got != tc.want {
			t.Errorf("%s: verdict %d, want %d", tc.name, got, tc.want)
		}
		after, _ := p.Counters()
		for name, c := range after {
			delta := c.RxPackets - before[name].RxPackets
			if name == tc.rule && delta != 1 || name != tc.rule && delta != 0 {
				t.Errorf("%s: counter %q counted %d packets", tc.name, name, delta)
			}
		}
	}
	all, _ := p.Counters()
	for name, c := range all {
		checkInvariant(t, name, c)
	}
}

// TestApplyUpdates: re-applying is a no-op (state kept), changing a rule
// takes effect, removing rules frees their slots and entries.
func TestApplyUpdates(t *testing.T) {
	p := loadPort(t)
	a := RuleSpec{Name: "a", Match: Match{Dst: netip.MustParsePrefix("10.0.0.0/8")}, Spec: Spec{Loss: 100}}
	b := RuleSpec{Name: "b", Match: Match{Proto: 6, ProtoSet: true, Dport: ports(1, 1023)}, Spec: Spec{Loss: 100}}
	apply(t, p, nil, a, b)
	if got := run(t, p, udp4("10.0.0.1", 1).bytes()); got != xdpDrop {
		t.Fatalf("rule a: verdict %d", got)
	}
	before, err := p.Profiles()
	if err != nil {
		t.Fatal(err)
	}
	apply(t, p, nil, a, b)
	if c := counters(t, p, "a"); c.RxPackets != 1 {
		t.Fatalf("re-apply reset counters: %+v", c)
	}
	if after, err := p.Profiles(); err != nil || len(after) != 2 || after["a"] != before["a"] || after["a"].Loss != prob(100) {
		t.Fatalf("re-apply: profiles %+v (err %v), before %+v", after, err, before)
	}
	a2 := RuleSpec{Name: "a", Match: Match{Dst: netip.MustParsePrefix("10.0.0.0/8")}}
	apply(t, p, nil, a2)
	if got := run(t, p, udp4("10.0.0.1", 1).bytes()); got != xdpPass {
		t.Fatalf("changed rule a: verdict %d", got)
	}
	if c := counters(t, p, "a"); c.RxPackets != 2 || c.Passed != 1 {
		t.Fatalf("counters after change: %+v", c)
	}
	entries, err := p.readMatches()
	if err != nil {
		t.Fatal(err)
	}
	n := len(entries)
	if n != 1 || len(p.Rules()) != 1 {
		t.Fatalf("after removing b: %d match entries, rules %v", n, p.Rules())
	}
	apply(t, p, nil)
	if got := run(t, p, udp4("10.0.0.1", 1).bytes()); got != xdpPass {
		t.Fatalf("no rules: verdict %d", got)
	}
	if c, _ := p.Counters(); len(c) != 0 {
		t.Fatalf("no rules, no port profile: counters %v", c)
	}
}

// TestCorrupt flips exactly one bit of the L4 payload.
func TestCorrupt(t *testing.T) {
	p := loadPort(t)
	apply(t, p, &Spec{Corrupt: 100, Seed: seed(1)})
	in := udp4("10.0.0.1", 9).bytes()
	out := make([]byte, len(in))
	if _, err := p.objs.Impair.Run(&ebpf.RunOptions{Data: in, DataOut: out}); err != nil {
		t.Fatal(err)
	}
	hdr := len(in) - 18
	bits := 0
	for i := range in {
		if x := in[i] ^ out[i]; x != 0 {
			if i < hdr {
				t.Fatalf("byte %d (a header) changed", i)
			}
			for ; x != 0; x &= x - 1 {
				bits++
			}
		}
	}
	if bits != 1 {
		t.Fatalf("%d bits flipped, want 1", bits)
	}
	if c := counters(t, p, ""); c.Corrupted != 1 || c.Passed != 1 {
		t.Fatalf("counters %+v", c)
	}
}

func TestPortBlocks(t *testing.T) {
	for _, r := range []PortRange{{Set: true, Lo: 1000, Hi: 2000}, {Set: true, Lo: 0, Hi: 65535}, {Set: true, Lo: 1, Hi: 65535}, {Set: true, Lo: 80, Hi: 80}, {Set: true, Lo: 1023, Hi: 1025}} {
		covered := map[int]bool{}
		for _, b := range portBlocks(r) {
			for port := 0; port < 65536; port++ {
				if uint16(port)&b.mask == b.val {
					if covered[port] {
						t.Fatalf("%v: port %d in two blocks", r, port)
					}
					covered[port] = true
				}
			}
		}
		for port := 0; port < 65536; port++ {
			if covered[port] != r.Contains(uint16(port)) {
				t.Fatalf("%v: port %d covered=%v", r, port, covered[port])
			}
		}
	}
}

// TestScopeFlow: with scope flow each 5-tuple has its own periodic
// counter and policer bucket; with scope rule the class shares one.
func TestScopeFlow(t *testing.T) {
	a, b := udp4("10.0.0.1", 1000).bytes(), udp4("10.0.0.1", 2000).bytes()
	verdicts := func(p *Port, frames ...[]byte) []uint32 {
		var out []uint32
		for _, f := range frames {
			out = append(out, run(t, p, f))
		}
		return out
	}
	pinCPU(t)
	for _, tc := range []struct {
		rule RuleSpec
		want []uint32
	}{
		// every 2nd packet: shared counter drops b1 and b2; per flow a2 and b2
		{RuleSpec{Name: "c", Match: proto(17), Spec: Spec{LossModel: LossPeriodic, Period: 2}},
			[]uint32{xdpPass, xdpDrop, xdpPass, xdpDrop}},
		{RuleSpec{Name: "c", Match: proto(17), Spec: Spec{LossModel: LossPeriodic, Period: 2}, ScopeFlow: true},
			[]uint32{xdpPass, xdpPass, xdpDrop, xdpDrop}},
	} {
		p := loadPort(t)
		apply(t, p, nil, tc.rule)
		if got := verdicts(p, a, b, a, b); !equalVerdicts(got, tc.want) {
			t.Errorf("%+v: verdicts %v, want %v", tc.rule, got, tc.want)
		}
		// the same over IPv6 (its own flow table)
		src6, dst6 := netip.MustParseAddr("2001:db8::1"), netip.MustParseAddr("2001:db8::2")
		a6 := frame{src: src6, dst: dst6, proto: 17, sport: 1, dport: 1000}.bytes()
		b6 := frame{src: src6, dst: dst6, proto: 17, sport: 1, dport: 2000}.bytes()
		if got := verdicts(p, a6, b6, a6, b6); !equalVerdicts(got, tc.want) {
			t.Errorf("%+v over IPv6: verdicts %v, want %v", tc.rule, got, tc.want)
		}
	}
	for _, scope := range []string{"rule", "flow"} {
		p := loadPort(t)
		apply(t, p, nil, RuleSpec{Name: "c", Match: proto(17), Spec: Spec{Rate: 1000, Burst: 3028}, ScopeFlow: scope == "flow"})
		// 60-byte frames cost 0.48 s each at 1 kbit/s: 60 of them empty a
		// 3028-byte bucket (24 s deep) for good during the test.
		for i := 0; i < 60; i++ {
			run(t, p, a)
		}
		got := run(t, p, b)
		if want := map[string]uint32{"rule": xdpDrop, "flow": xdpPass}[scope]; got != want {
			t.Errorf("scope %s: flow b after flow a emptied the bucket: verdict %d, want %d", scope, got, want)
		}
	}
}

func equalVerdicts(a, b []uint32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestEDTClassMeta: a passed packet matched by a rule with an EDT class
// leaves XDP with MARK_MAGIC | class as 4 bytes of metadata in front of
// it (BPF_PROG_TEST_RUN's output starts at data_meta); a packet of a
// rule without a class, of the port profile or of no rule has none, and
// a dropped packet is dropped.
func TestEDTClassMeta(t *testing.T) {
	p := loadPort(t)
	udp := func(port uint16) Match { return Match{Proto: 17, ProtoSet: true, Dport: ports(port, port)} }
	rules := []RuleSpec{
		{Name: "ping", Match: proto(1), EDTClass: 0x123456},
		{Name: "udp9", Match: udp(9), EDTClass: 7},
		{Name: "udp10", Match: udp(10), Spec: Spec{Loss: 1}}, // no delay: no class
		{Name: "udp11", Match: udp(11), Spec: Spec{Loss: 100}, EDTClass: 9},
	}
	plan, err := Compile(&Spec{Corrupt: 0.001}, rules)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Apply(plan); err != nil {
		t.Fatal(err)
	}
	icmp := frame{src: netip.MustParseAddr("192.0.2.1"), dst: netip.MustParseAddr("198.51.100.9"), proto: 1}
	for _, tc := range []struct {
		name    string
		f       frame
		verdict uint32
		class   uint32 // 0 = no metadata
	}{
		{"icmp rule with delay", icmp, xdpPass, 0x123456},
		{"udp rule with delay and jitter", udp4("10.0.0.1", 9), xdpPass, 7},
		{"udp rule with loss only: no class", udp4("10.0.0.1", 10), xdpPass, 0},
		{"udp rule dropping: dropped", udp4("10.0.0.1", 11), xdpDrop, 0},
		{"port profile: no class", udp4("10.0.0.1", 12), xdpPass, 0},
		{"arp: untouched", frame{etherType: 0x0806}, xdpPass, 0},
	} {
		in := tc.f.bytes()
		ret, got := runOut(t, p, in)
		if ret != tc.verdict {
			t.Errorf("%s: verdict %d, want %d", tc.name, ret, tc.verdict)
			continue
		}
		if ret == xdpDrop {
			continue
		}
		if tc.class == 0 {
			if len(got) != len(in) {
				t.Errorf("%s: %d bytes of metadata, want none", tc.name, len(got)-len(in))
			}
			continue
		}
		if len(got) != len(in)+4 {
			t.Errorf("%s: output %d bytes for %d in: want 4 bytes of metadata", tc.name, len(got), len(in))
			continue
		}
		if m := binary.NativeEndian.Uint32(got); m != 0xed000000|tc.class {
			t.Errorf("%s: metadata %#x, want %#x", tc.name, m, 0xed000000|tc.class)
		}
		if string(got[4:]) != string(in) {
			t.Errorf("%s: packet changed behind the metadata", tc.name)
		}
	}
	// A class id beyond the per-rule range is refused at compile time.
	if _, err := Compile(nil, []RuleSpec{{Name: "ping", EDTClass: MaxEDTClass + 1}}); err == nil {
		t.Error("class id above MaxEDTClass compiled")
	}
}

// runOut runs the program once and returns its verdict and output from
// data_meta on.
func runOut(t testing.TB, p *Port, in []byte) (uint32, []byte) {
	t.Helper()
	opts := &ebpf.RunOptions{Data: in, DataOut: make([]byte, len(in)+256)}
	ret, err := p.objs.Impair.Run(opts)
	if err != nil {
		t.Fatalf("prog.Run: %v", err)
	}
	return ret, opts.DataOut
}

// TestBloomPrecheck: every active mask's IPv4 pre-check is on after Apply
// and holds the bit of each of its entries; rules in several shapes match
// with it on, and also with it off (a blooms map new to older pins) until
// the next Apply turns it on again.
func TestBloomPrecheck(t *testing.T) {
	p := loadPort(t)
	flows := []RuleSpec{
		{Name: "a", Match: Match{Dst: netip.MustParsePrefix("10.0.0.1/32")}, Spec: Spec{Loss: 100}, Priority: 3},
		{Name: "b", Match: Match{Dst: netip.MustParsePrefix("10.1.0.0/16")}, Spec: Spec{Loss: 100}, Priority: 2},
		{Name: "c", Match: Match{Proto: 17, ProtoSet: true, Dport: ports(1000, 2000)}, Spec: Spec{Loss: 100}, Priority: 1},
	}
	check := func(when string) {
		t.Helper()
		for _, tc := range []struct {
			dst  string
			port uint16
			want uint32
		}{{"10.0.0.1", 9, xdpDrop}, {"10.1.2.3", 9, xdpDrop}, {"10.2.0.1", 1500, xdpDrop}, {"10.0.0.2", 9, xdpPass}, {"10.2.0.1", 2001, xdpPass}} {
			if got := run(t, p, udp4(tc.dst, tc.port).bytes()); got != tc.want {
				t.Errorf("%s: %s port %d: verdict %d, want %d", tc.dst, when, tc.port, got, tc.want)
			}
		}
	}
	apply(t, p, nil, flows...)
	cfg, _, err := p.readCfg()
	if err != nil {
		t.Fatal(err)
	}
	entries, err := p.readMatches()
	if err != nil {
		t.Fatal(err)
	}
	for e := range entries {
		if !e.v4 {
			continue
		}
		var bl impairBloom
		if err := p.objs.Blooms.Lookup(uint32(e.key.MaskId), &bl); err != nil {
			t.Fatal(err)
		}
		i := bloomHash(to4(e.key))
		if bl.On != 1 || bl.Bits[i/64]&(1<<(i%64)) == 0 {
			t.Fatalf("mask %d (active %#x): pre-check on=%d, bit %d of %+v clear", e.key.MaskId, cfg.ActiveMasks, bl.On, i, e.key)
		}
	}
	check("pre-check on")
	for id := uint32(0); id < MaxMasks; id++ {
		if err := p.objs.Blooms.Put(id, &impairBloom{}); err != nil {
			t.Fatal(err)
		}
	}
	check("pre-check off")
	apply(t, p, nil, flows...)
	check("re-applied")
}

// TestInlineEntries: IPv4 entries are compared in place from the
// published config (port_cfg.tab4, the rule's slot and profile) instead
// of the bloom and hash lookup; verdicts follow adding a second entry to
// the mask, changing a profile and removing a rule.
func TestInlineEntries(t *testing.T) {
	p := loadPort(t)
	a := RuleSpec{Name: "a", Match: Match{Dst: netip.MustParsePrefix("10.0.0.1/32")}, Spec: Spec{Loss: 100}}
	b := RuleSpec{Name: "b", Match: Match{Dst: netip.MustParsePrefix("10.0.0.2/32")}, Spec: Spec{Loss: 100}}
	check := func(what string, inline int, want1, want2 uint32) {
		t.Helper()
		cfg, ok, err := p.readCfg()
		if err != nil || !ok {
			t.Fatalf("%s: config %v %v", what, ok, err)
		}
		n := 0
		for _, e := range cfg.Tab4 {
			if e.Rank != noRank {
				n++
				if cfg.Prof[e.Idx].Flags == 0 && cfg.Prof[e.Idx].Gen == 0 {
					t.Errorf("%s: inline entry of slot %d without its profile", what, e.Idx)
				}
			}
		}
		if n != inline {
			t.Errorf("%s: %d inline entries, want %d", what, n, inline)
		}
		if got := run(t, p, udp4("10.0.0.1", 9).bytes()); got != want1 {
			t.Errorf("%s: 10.0.0.1: verdict %d, want %d", what, got, want1)
		}
		if got := run(t, p, udp4("10.0.0.2", 9).bytes()); got != want2 {
			t.Errorf("%s: 10.0.0.2: verdict %d, want %d", what, got, want2)
		}
	}
	apply(t, p, nil, a)
	check("one rule", 1, xdpDrop, xdpPass)
	apply(t, p, nil, a, b)
	check("two entries in the mask", 2, xdpDrop, xdpDrop)
	a.Spec = Spec{}
	apply(t, p, nil, a, b)
	check("a changed", 2, xdpPass, xdpDrop)
	apply(t, p, nil, b)
	check("b alone", 1, xdpPass, xdpDrop)
	b.Spec = Spec{Loss: 0.0001}
	apply(t, p, nil, b)
	check("b changed", 1, xdpPass, xdpPass)
}
