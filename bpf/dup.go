package bpf

import (
	"fmt"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/switchyard-net/switchyard/internal/tcfilter"
)

// Duplication needs a clone of the packet, which XDP cannot make: the XDP
// program decides (seeded RNG, counted as duplicated) and leaves a request
// in the packet's metadata; impair_dup, a tc ingress program on the same
// port, clones the packet back into the port's ingress (bpf_clone_redirect
// with BPF_F_INGRESS) and marks the copy so it is not copied again. See
// docs/impaird.md.

// DupFilterName, dupFilterPrio and dupFilterHandle identify impair_dup on
// the port's clsact ingress; its priority is below the EDT programs'
// (0xed), so it runs first and hands the packet on (TC_ACT_UNSPEC).
const (
	DupFilterName          = "switchyard_dup"
	dupFilterPrio   uint16 = 0xec
	dupFilterHandle uint32 = 1
)

func dupFilter(ifindex, fd int) *netlink.BpfFilter {
	return &netlink.BpfFilter{
		FilterAttrs: netlink.FilterAttrs{
			LinkIndex: ifindex, Parent: netlink.HANDLE_MIN_INGRESS, Handle: dupFilterHandle,
			Protocol: unix.ETH_P_ALL, Priority: dupFilterPrio,
		},
		Name: DupFilterName, DirectAction: true, Fd: fd,
	}
}

// AttachDuplicate puts impair_dup on ifindex's clsact ingress (adding
// clsact when missing, internal/tcfilter), replacing an earlier one.
// Without it, packets the profile duplicates are counted but not copied.
//
// Equivalent to: tc qdisc add dev $l clsact; tc filter replace dev $l
// ingress prio 236 handle 1 bpf da obj impair.o sec tc (impair_dup)
func (p *Port) AttachDuplicate(ifindex int) error {
	h, err := netlink.NewHandle(unix.NETLINK_ROUTE)
	if err != nil {
		return fmt.Errorf("netlink handle: %w", err)
	}
	defer h.Close()
	if err := tcfilter.Attach(h, dupFilter(ifindex, p.objs.ImpairDup.FD())); err != nil {
		return fmt.Errorf("ifindex %d: duplicate program (tc ingress): %w", ifindex, err)
	}
	return nil
}

// DetachDuplicate takes impair_dup off ifindex (absent is no error) and
// clsact too when no filter of any owner is left on it.
//
// Equivalent to: tc filter del dev $l ingress prio 236 handle 1 bpf;
// tc qdisc del dev $l clsact (when empty)
func (p *Port) DetachDuplicate(ifindex int) error { return DetachDuplicate(ifindex) }

// DetachDuplicate is Port.DetachDuplicate without a loaded port.
func DetachDuplicate(ifindex int) error {
	h, err := netlink.NewHandle(unix.NETLINK_ROUTE)
	if err != nil {
		return fmt.Errorf("netlink handle: %w", err)
	}
	defer h.Close()
	if err := tcfilter.Detach(h, dupFilter(ifindex, -1)); err != nil {
		return fmt.Errorf("ifindex %d: duplicate program: %w", ifindex, err)
	}
	return nil
}

// Duplicates reports whether any profile of the plan duplicates packets
// (the port then needs AttachDuplicate).
func (pl *Plan) Duplicates() bool {
	if pl.Port != nil && pl.Port.Flags&flagDup != 0 {
		return true
	}
	for i := range pl.Rules {
		if pl.Rules[i].Profile.Flags&flagDup != 0 {
			return true
		}
	}
	return false
}
