package trafficd

import (
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// attachPassProgram attaches "return XDP_PASS" to the switch port in
// generic mode and returns its id.
func attachPassProgram(t testing.TB, p *pair) int {
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Type: ebpf.XDP, License: "GPL",
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 2), asm.Return()},
	})
	if err != nil {
		t.Skipf("cannot load an XDP program here: %v", err)
	}
	t.Cleanup(func() { prog.Close() })
	err = p.sw.Do(func() error {
		l, err := netlink.LinkByIndex(p.ifindex)
		if err != nil {
			return err
		}
		return netlink.LinkSetXdpFdWithFlags(l, prog.FD(), unix.XDP_FLAGS_SKB_MODE)
	})
	if err != nil {
		t.Fatalf("attach XDP program: %v", err)
	}
	return xdpProgID(t, p)
}

// xdpProgID is the id of the port's XDP program (ip -j link show).
func xdpProgID(t testing.TB, p *pair) int {
	var l []struct {
		XDP struct {
			Prog struct {
				ID int `json:"id"`
			} `json:"prog"`
		} `json:"xdp"`
	}
	p.sw.JSON(&l, "link", "show", "Ethernet0")
	return l[0].XDP.Prog.ID
}
