package edt

// The ingress side of EDT: tc programs that carry a packet's class into
// skb->mark, from XDP metadata (per-flow classes) or per port.

import (
	"errors"
	"fmt"

	bpfedt "github.com/switchyard-net/switchyard/bpf/edt"
	"github.com/switchyard-net/switchyard/internal/tcfilter"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// MarkIngress attaches the ingress program on ifname that turns a class
// id left by XDP in the packet's metadata into skb->mark (see
// docs/edt.md). Remove takes it off again.
//
// Equivalent to: tc qdisc add dev $l clsact; tc filter replace dev $l
// ingress prio 237 handle 1 bpf da obj edt.o sec edt_ingress_meta
func (i *Installer) MarkIngress(ifname string) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	link, err := i.h.LinkByName(ifname)
	if err != nil {
		return fmt.Errorf("%s: find link: %w", ifname, err)
	}
	idx := link.Attrs().Index
	if err := i.load(); err != nil {
		return err
	}
	if err := i.attachIngress(ifname, idx, i.objs.IngressProgram().FD()); err != nil {
		return err
	}
	// A per-port class (MarkPort) of this port is no longer applied.
	if err := i.objs.DeletePortClass(idx); err != nil {
		return fmt.Errorf("%s: %w", ifname, err)
	}
	return nil
}

// MarkPort attaches on ifname the ingress program that marks every
// packet arriving there with bpfedt.MarkClass(id), so that class id's
// profile (SetClass) applies on whichever EDT port (Apply) the packet
// leaves by: a per-port profile of the arriving port. A packet XDP
// classified (class metadata, see MarkIngress) keeps its class instead.
// UnmarkPort or Remove takes it off again.
//
// Equivalent to: tc qdisc add dev $l clsact; tc filter replace dev $l
// ingress prio 237 handle 1 bpf da obj edt.o sec edt_ingress_port
func (i *Installer) MarkPort(ifname string, id uint32) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	if id == 0 || id > bpfedt.MarkClassMask {
		return fmt.Errorf("class id %d: want 1 to %d", id, bpfedt.MarkClassMask)
	}
	link, err := i.h.LinkByName(ifname)
	if err != nil {
		return fmt.Errorf("%s: find link: %w", ifname, err)
	}
	idx := link.Attrs().Index
	if err := i.load(); err != nil {
		return err
	}
	if err := i.objs.SetPortClass(idx, id); err != nil {
		return fmt.Errorf("%s: %w", ifname, err)
	}
	if err := i.attachIngress(ifname, idx, i.objs.IngressPortProgram().FD()); err != nil {
		i.objs.DeletePortClass(idx)
		return err
	}
	return nil
}

// attachIngress puts the ingress program fd on link idx, adding clsact
// when missing (internal/tcfilter); on failure it takes a clsact
// it just added off again. Called with i.mu held.
func (i *Installer) attachIngress(ifname string, idx, fd int) error {
	created, err := i.ensureClsact(ifname, idx)
	if err != nil {
		return err
	}
	f := i.filter(idx)
	f.Parent, f.Fd = netlink.HANDLE_MIN_INGRESS, fd
	if err := i.h.FilterReplace(f); err != nil {
		if created {
			i.h.QdiscDel(tcfilter.Clsact(idx))
		}
		if missing(err) {
			return &MissingFeatureError{Port: ifname, Feature: "bpf tc filter (cls_bpf)", Err: err}
		}
		return fmt.Errorf("%s: attach edt ingress program: %w", ifname, err)
	}
	return nil
}

// UnmarkPort takes MarkPort's (or MarkIngress's) program off ifname's
// ingress; clsact goes too unless an egress program still needs it.
// Absent is no error.
func (i *Installer) UnmarkPort(ifname string) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	link, err := i.h.LinkByName(ifname)
	if err != nil {
		var nf netlink.LinkNotFoundError
		if errors.As(err, &nf) {
			return nil
		}
		return fmt.Errorf("%s: find link: %w", ifname, err)
	}
	idx := link.Attrs().Index
	f := i.filter(idx)
	f.Parent = netlink.HANDLE_MIN_INGRESS
	if err := i.h.FilterDel(f); err != nil && !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("%s: detach edt ingress program: %w", ifname, err)
	}
	if i.objs != nil {
		if err := i.objs.DeletePortClass(idx); err != nil {
			return fmt.Errorf("%s: %w", ifname, err)
		}
	}
	if st := i.ports[ifname]; st == nil || st.ifindex != idx {
		// Not an egress port: clsact goes when no filter is left on it.
		if err := i.maybeDelClsact(ifname, idx); err != nil {
			return err
		}
	}
	return nil
}
