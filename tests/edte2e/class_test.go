package edte2e

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	bpfedt "github.com/switchyard-net/switchyard/bpf/edt"
	"github.com/switchyard-net/switchyard/impaird/edt"
	"github.com/switchyard-net/switchyard/tests/e2eutil"
	"github.com/switchyard-net/switchyard/tests/testns"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// classifier is a stand-in for impaird's XDP program: it puts every
// packet in class id by prepending MarkClass(id) as XDP metadata.
func classifier(t *testing.T, id uint32) *ebpf.Program {
	t.Helper()
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Type:    ebpf.XDP,
		License: "GPL",
		Instructions: asm.Instructions{
			asm.Mov.Reg(asm.R6, asm.R1),
			asm.Mov.Imm(asm.R2, -4),
			asm.FnXdpAdjustMeta.Call(), // bpf_xdp_adjust_meta(ctx, -4)
			asm.JNE.Imm(asm.R0, 0, "pass"),
			asm.LoadMem(asm.R2, asm.R6, 8, asm.Word), // data_meta
			asm.LoadMem(asm.R3, asm.R6, 0, asm.Word), // data
			asm.Mov.Reg(asm.R4, asm.R2),
			asm.Add.Imm(asm.R4, 4),
			asm.JGT.Reg(asm.R4, asm.R3, "pass"),
			asm.StoreImm(asm.R2, 0, int64(int32(bpfedt.MarkClass(id))), asm.Word),
			asm.Mov.Imm(asm.R0, 2).WithSymbol("pass"), // XDP_PASS
			asm.Return(),
		},
	})
	if err != nil {
		t.Fatalf("load the test's XDP classifier: %v", err)
	}
	t.Cleanup(func() { prog.Close() })
	return prog
}

// TestEDTClassFromXDP: the per-class path end to end. A → S → B routed
// through namespace S; XDP on S's ingress port s1 puts packets in class
// 7 (metadata), the ingress program turns that into skb->mark, and the
// egress program on s2 — which has no profile of its own — delays class
// 7 by 20 ms. Deleting the class takes the delay away.
func TestEDTClassFromXDP(t *testing.T) {
	requireKernel(t)
	const n, pps, delay = 1000, 2000, 20 * time.Millisecond
	A, S, B := testns.New(t), testns.New(t), testns.New(t)
	A.Veth("a0", S, "s1")
	S.Veth("s2", B, "b0")
	A.IP("link", "set", "a0", "up")
	S.IP("link", "set", "s2", "up")
	A.IP("addr", "add", "10.1.0.1/24", "dev", "a0")
	S.IP("addr", "add", "10.1.0.254/24", "dev", "s1")
	S.IP("addr", "add", "10.2.0.254/24", "dev", "s2")
	B.IP("addr", "add", "10.2.0.1/24", "dev", "b0")
	A.IP("route", "add", "default", "via", "10.1.0.254")
	B.IP("route", "add", "default", "via", "10.2.0.254")
	e2eutil.Sysctl(t, S, "net.ipv4.ip_forward=1")
	e2eutil.Ping(t, A, "10.2.0.1", 1) // A reaches B through S

	nsh, err := netns.GetFromName(S.Name)
	if err != nil {
		t.Fatal(err)
	}
	defer nsh.Close()
	h, err := netlink.NewHandleAt(nsh, unix.NETLINK_ROUTE)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	s1, err := h.LinkByName("s1")
	if err != nil {
		t.Fatal(err)
	}
	prog := classifier(t, 7)
	err = S.Do(func() error { // the ifindex is resolved in the caller's namespace
		l, err := link.AttachXDP(link.XDPOptions{Program: prog, Interface: s1.Attrs().Index, Flags: link.XDPGenericMode})
		if err == nil {
			t.Cleanup(func() { l.Close() })
		}
		return err
	})
	if err != nil {
		t.Fatalf("attach the test's XDP classifier on s1: %v", err)
	}

	in, err := edt.New(edt.Options{NetNS: S.Name})
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	if err := in.MarkIngress("s1"); err != nil {
		t.Fatal(err)
	}
	if err := in.Apply("s2", edt.Profile{}); err != nil { // classes only
		t.Fatal(err)
	}
	if err := in.SetClass(7, edt.Profile{Delay: delay}); err != nil {
		t.Fatal(err)
	}
	p := &pair{A: A, B: B, Dst: netip.MustParseAddr("10.2.0.1")}
	noisyAttempts(t, 3, func(int) string {
		e := summarize(measure(t, p, n, pps, 2*time.Second))
		t.Logf("class 7, 20ms, through XDP metadata -> mark -> EDT on s2: %v", e)
		if e.n != n || e.min < delay {
			t.Fatalf("class 7: %v; want all %d, every one >= %v", e, n, delay)
		}
		if e.median-delay > 5*time.Millisecond {
			return fmt.Sprintf("median %v; want within 5ms of %v", e.median, delay)
		}
		return ""
	})

	if st, err := in.ClassStats(7); err != nil || st.Packets < n {
		t.Fatalf("class 7 counters %+v, %v; want >= %d packets", st, err, n)
	}
	if err := in.DeleteClass(7); err != nil {
		t.Fatal(err)
	}
	noisyAttempts(t, 3, func(int) string {
		o := summarize(measure(t, p, n, pps, 2*time.Second))
		t.Logf("class 7 deleted: %v", o)
		if o.n != n {
			t.Fatalf("after DeleteClass: received %d of %d", o.n, n)
		}
		if o.median > delay/2 {
			return fmt.Sprintf("after DeleteClass: median %v; want undelayed (< %v)", o.median, delay/2)
		}
		return ""
	})
	for _, dev := range []string{"s1", "s2"} {
		if err := in.Remove(dev); err != nil {
			t.Fatal(err)
		}
		if out := S.Run("tc", "-n", S.Name, "qdisc", "show", "dev", dev); strings.Contains(out, "clsact") || strings.Contains(out, "fq ed:") {
			t.Fatalf("%s after Remove: %s", dev, out)
		}
	}
}
