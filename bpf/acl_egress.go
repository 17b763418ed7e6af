package bpf

import (
	"fmt"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/switchyard-net/switchyard/internal/tcfilter"
)

// The egress ACL filter on clsact: its own priority (before EDT's 0xed,
// so a dropped packet is never shaped), handle and name.
const (
	aclFilterPrio   uint16 = 0xac
	aclFilterHandle uint32 = 1
	// ACLFilterName is the name of the egress ACL filter (tc filter show
	// names it).
	ACLFilterName = "switchyard_acl"
)

// egressState is where this process attached the egress program.
type egressState struct {
	ifindex int // 0 = not attached by this process
}

func aclFilter(ifindex, fd int) *netlink.BpfFilter {
	return &netlink.BpfFilter{
		FilterAttrs: netlink.FilterAttrs{
			LinkIndex: ifindex, Parent: netlink.HANDLE_MIN_EGRESS, Handle: aclFilterHandle,
			Protocol: unix.ETH_P_ALL, Priority: aclFilterPrio,
		},
		Name: ACLFilterName, DirectAction: true, Fd: fd,
	}
}

// AttachEgress attaches the port's tc egress program (the egress
// instance's acl_egress: egress ACL, then egress impairment; egress.go) to
// ifindex (in the calling thread's network namespace): clsact is added
// when missing, the filter (prio 0xac, handle 1, direct action) is
// replaced in one netlink request, so re-attaching (or attaching after a
// restart, over the previous run's filter) never leaves the port without
// its egress ACL. Idempotent. Close leaves the filter in place (it holds
// the program, which uses the pinned maps); DetachEgress and Remove take
// it off.
//
// Equivalent to: tc qdisc add dev $l clsact; tc filter replace dev $l
// egress prio 172 handle 1 bpf da obj impair.o sec tc name switchyard_acl
func (p *Port) AttachEgress(ifindex int) error {
	h, err := netlink.NewHandle(unix.NETLINK_ROUTE)
	if err != nil {
		return fmt.Errorf("netlink handle: %w", err)
	}
	defer h.Close()
	if p.acl.egress.ifindex != 0 && p.acl.egress.ifindex != ifindex {
		if err := p.DetachEgress(); err != nil {
			return err
		}
	}
	eg, err := p.Egress()
	if err != nil {
		return err
	}
	if err := tcfilter.Attach(h, aclFilter(ifindex, eg.objs.AclEgress.FD())); err != nil {
		return fmt.Errorf("ifindex %d: egress program: %w", ifindex, err)
	}
	p.acl.egress.ifindex = ifindex
	return nil
}

// DetachEgress takes the egress ACL filter off again, and clsact when no
// filter is left on it. Not attached is no error. After a restart (no
// AttachEgress in this process) it detaches from the port the XDP
// program is attached to.
//
// Equivalent to: tc filter del dev $l egress prio 172 handle 1 bpf;
// tc qdisc del dev $l clsact
func (p *Port) DetachEgress() error {
	idx := p.acl.egress.ifindex
	if idx == 0 && p.link != nil {
		if info, err := p.link.Info(); err == nil && info.XDP() != nil {
			idx = int(info.XDP().Ifindex)
		}
	}
	if idx == 0 {
		return nil
	}
	if err := DetachEgressFrom(idx); err != nil {
		return err
	}
	p.acl.egress.ifindex = 0
	return nil
}

// DetachEgressFrom takes the port's egress filter (prio 0xac, handle 1)
// off ifindex, and then clsact when no filter is left on it; for a port whose
// pins an earlier run left (impaird's teardown without a loaded Port).
// Not attached is no error.
//
// Equivalent to: tc filter del dev $l egress prio 172 handle 1 bpf;
// tc qdisc del dev $l clsact
func DetachEgressFrom(idx int) error {
	h, err := netlink.NewHandle(unix.NETLINK_ROUTE)
	if err != nil {
		return fmt.Errorf("netlink handle: %w", err)
	}
	defer h.Close()
	if err := tcfilter.Detach(h, aclFilter(idx, -1)); err != nil {
		return fmt.Errorf("ifindex %d: egress program: %w", idx, err)
	}
	return nil
}
