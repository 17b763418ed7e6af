// Package tcfilter is the one copy of clsact handling shared by the
// owners of tc programs on a port (impaird/edt's EDT programs, bpf's
// egress ACL): add clsact when missing, and delete it only when no
// filter is left on it, so one owner never takes another's filter away.
package tcfilter

import (
	"errors"
	"fmt"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Clsact is the clsact qdisc of the link with index idx.
func Clsact(idx int) *netlink.GenericQdisc {
	return &netlink.GenericQdisc{
		QdiscAttrs: netlink.QdiscAttrs{LinkIndex: idx, Parent: netlink.HANDLE_CLSACT, Handle: netlink.MakeHandle(0xffff, 0)},
		QdiscType:  "clsact",
	}
}

// HasClsact reports whether link idx has a clsact qdisc.
//
// Equivalent to: tc qdisc show dev $l
func HasClsact(h *netlink.Handle, idx int) (bool, error) {
	qs, err := h.QdiscList(&netlink.Device{LinkAttrs: netlink.LinkAttrs{Index: idx}})
	if err != nil {
		return false, err
	}
	for _, q := range qs {
		if q.Type() == "clsact" {
			return true, nil
		}
	}
	return false, nil
}

// EnsureClsact adds clsact to link idx unless present; created reports
// whether it did. Errors are the kernel's, unwrapped (see Missing).
//
// Equivalent to: tc qdisc add dev $l clsact
func EnsureClsact(h *netlink.Handle, idx int) (created bool, err error) {
	has, err := HasClsact(h, idx)
	if err != nil {
		return false, fmt.Errorf("list qdiscs: %w", err)
	}
	if has {
		return false, nil
	}
	if err := h.QdiscAdd(Clsact(idx)); err != nil {
		if errors.Is(err, unix.EEXIST) {
			return false, nil
		}
		return false, err
	}
	return true, nil
}

// DeleteClsactIfUnused deletes link idx's clsact when no filter is left
// on its ingress or egress (absent is no error). Who created it does not
// matter: a filter of any owner keeps it.
//
// Equivalent to: tc filter show dev $l ingress; ... egress; tc qdisc del
// dev $l clsact
func DeleteClsactIfUnused(h *netlink.Handle, idx int) error {
	has, err := HasClsact(h, idx)
	if err != nil {
		return fmt.Errorf("list qdiscs: %w", err)
	}
	if !has {
		return nil
	}
	link := &netlink.Device{LinkAttrs: netlink.LinkAttrs{Index: idx}}
	for _, parent := range []uint32{netlink.HANDLE_MIN_INGRESS, netlink.HANDLE_MIN_EGRESS} {
		fs, err := h.FilterList(link, parent)
		if err != nil {
			return fmt.Errorf("list filters: %w", err)
		}
		if len(fs) > 0 {
			return nil
		}
	}
	if err := h.QdiscDel(Clsact(idx)); err != nil && !Gone(err) {
		return fmt.Errorf("delete clsact qdisc: %w", err)
	}
	return nil
}

// Missing reports whether err says the kernel lacks a qdisc or filter
// kind.
func Missing(err error) bool {
	return errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOTSUP)
}

// Gone reports whether a delete failed because the object is not there.
func Gone(err error) bool {
	return errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EINVAL)
}

// Attach adds clsact to f's link when missing and replaces f on it (one
// request, so re-attaching never leaves the link without the filter); when
// the filter fails, a clsact it just added goes again. The error is the
// kernel's, wrapped with what failed (see Missing).
//
// Equivalent to: tc qdisc add dev $l clsact; tc filter replace dev $l
// {ingress|egress} prio P handle H bpf da fd F
func Attach(h *netlink.Handle, f *netlink.BpfFilter) error {
	idx := f.LinkIndex
	created, err := EnsureClsact(h, idx)
	if err != nil {
		return fmt.Errorf("add clsact qdisc: %w", err)
	}
	if err := h.FilterReplace(f); err != nil {
		if created {
			h.QdiscDel(Clsact(idx))
		}
		return fmt.Errorf("attach tc filter %s: %w", f.Name, err)
	}
	return nil
}

// Detach deletes f (absent, or its link gone, is no error) and then
// clsact when no filter of any owner is left on it.
//
// Equivalent to: tc filter del dev $l {ingress|egress} prio P handle H
// bpf; tc qdisc del dev $l clsact (when empty)
func Detach(h *netlink.Handle, f *netlink.BpfFilter) error {
	if err := h.FilterDel(f); err != nil {
		if Gone(err) || errors.Is(err, unix.ENODEV) {
			return nil
		}
		return fmt.Errorf("detach tc filter %s: %w", f.Name, err)
	}
	if err := DeleteClsactIfUnused(h, f.LinkIndex); err != nil && !errors.Is(err, unix.ENODEV) {
		return err
	}
	return nil
}
