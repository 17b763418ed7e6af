package netlinkmgr

// Error contract (implemented in this package):
//
//	var ErrNotFound = errors.New("not found")      // errors.Is(err, ErrNotFound) for absent objects
//	type OpError struct{ Op, Object string; Err error } // "add vlan 100 on Bridge: <errno text>"; Unwrap
//	type FeatureError struct{ Feature string; Err error } // "kernel lacks 802.1Q VLAN support"; Unwrap
//	func IsNotFound(err error) bool
//	func MissingFeature(err error) (feature string, ok bool)
//
// EOPNOTSUPP / "unknown kind" from link add of kind vlan map to
// FeatureError{Feature: "802.1Q VLAN support"}; setting vlan_filtering or
// adding bridge vlans where unsupported maps to "bridge VLAN filtering";
// dummy → "dummy devices"; vrf → "VRF devices"; bond → "bonding".

import (
	"errors"
	"fmt"
	"strings"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// ErrNotFound is matched (errors.Is) by every error about an absent object:
// a missing link, address, route, FDB entry, bridge VLAN or namespace.
var ErrNotFound = errors.New("not found")

// Kernel features that FeatureError names.
const (
	FeatureVlan          = "802.1Q VLAN support"
	FeatureVlanFiltering = "bridge VLAN filtering"
	FeatureDummy         = "dummy devices"
	FeatureVRF           = "VRF devices"
	FeatureBond          = "bonding"
)

// OpError is a failed operation on one object: "add link Vlan100: ...".
type OpError struct {
	Op     string // "add", "set", "del", "get", "list", "replace"
	Object string // "link Ethernet0", "route 10.0.0.0/24 table 254", ...
	Err    error
}

func (e *OpError) Error() string {
	if e.Object == "" {
		return e.Op + ": " + e.Err.Error()
	}
	return e.Op + " " + e.Object + ": " + e.Err.Error()
}

func (e *OpError) Unwrap() error { return e.Err }

// FeatureError says the running kernel lacks what the operation needs
// (CONFIG_VLAN_8021Q, CONFIG_BRIDGE_VLAN_FILTERING, ...). Callers usually
// report it as a terminal error and tests skip on it.
type FeatureError struct {
	Feature string // one of the Feature* constants
	Err     error  // the kernel's errno, may be nil
}

func (e *FeatureError) Error() string {
	if e.Err == nil {
		return "kernel lacks " + e.Feature
	}
	return "kernel lacks " + e.Feature + " (" + e.Err.Error() + ")"
}

func (e *FeatureError) Unwrap() error { return e.Err }

// IsNotFound reports whether err says the object does not exist.
func IsNotFound(err error) bool { return errors.Is(err, ErrNotFound) }

// MissingFeature reports the kernel feature err says is missing.
func MissingFeature(err error) (feature string, ok bool) {
	var fe *FeatureError
	if errors.As(err, &fe) {
		return fe.Feature, true
	}
	return "", false
}

// notFound wraps errno (may be nil) so that it matches ErrNotFound and the
// errno both: "not found (no such device)".
func notFound(errno error) error {
	if errno == nil {
		return ErrNotFound
	}
	return &notFoundError{errno: errno}
}

// notFoundError matches ErrNotFound and wraps the kernel's errno; msg, when
// set, replaces the default text.
type notFoundError struct {
	msg   string
	errno error
}

func (e *notFoundError) Error() string {
	if e.msg != "" {
		return e.msg
	}
	return "not found (" + e.errno.Error() + ")"
}

func (e *notFoundError) Unwrap() []error      { return []error{ErrNotFound, e.errno} }
func (e *notFoundError) Is(target error) bool { return target == ErrNotFound }

func opErr(op, object string, err error) error {
	if err == nil {
		return nil
	}
	return &OpError{Op: op, Object: object, Err: err}
}

// isNotFoundErrno says whether a kernel error on get/del means "absent".
func isNotFoundErrno(err error) bool {
	var lnf netlink.LinkNotFoundError
	if errors.As(err, &lnf) {
		return true
	}
	return errors.Is(err, unix.ENODEV) || errors.Is(err, unix.ENOENT) ||
		errors.Is(err, unix.ESRCH) || errors.Is(err, unix.EADDRNOTAVAIL)
}

// mapNotFound turns a not-found errno from a get/del into ErrNotFound.
func mapNotFound(err error) error {
	if err == nil {
		return nil
	}
	if isNotFoundErrno(err) {
		var lnf netlink.LinkNotFoundError
		if errors.As(err, &lnf) {
			return notFound(unix.ENODEV)
		}
		return notFound(err)
	}
	return err
}

// kindFeature names the kernel feature behind a link kind, "" for kinds
// every kernel we target has.
func kindFeature(kind string) string {
	switch kind {
	case "vlan":
		return FeatureVlan
	case "dummy":
		return FeatureDummy
	case "vrf":
		return FeatureVRF
	case "bond":
		return FeatureBond
	case "vxlan":
		return FeatureVxlan
	}
	return ""
}

// isUnsupportedErrno says whether a link add failed because the kind's
// module is missing: EOPNOTSUPP/ENOTSUP, or "unknown device type".
func isUnsupportedErrno(err error) bool {
	if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOTSUP) {
		return true
	}
	s := strings.ToLower(err.Error())
	return strings.Contains(s, "unknown device type") || strings.Contains(s, "unknown kind")
}

// mapLinkAddErr classifies a failed link add of kind.
func mapLinkAddErr(kind string, err error) error {
	if f := kindFeature(kind); f != "" && isUnsupportedErrno(err) {
		return &FeatureError{Feature: f, Err: err}
	}
	if errors.Is(err, unix.EEXIST) {
		return fmt.Errorf("link already exists: %w", err)
	}
	return err
}

// vlanFilteringErr classifies a failed vlan_filtering/default_pvid set or
// bridge vlan op. lacks says the bridge shows it was built without
// CONFIG_BRIDGE_VLAN_FILTERING (see lacksVlanFiltering); only then do
// EOPNOTSUPP/EINVAL mean the feature is missing (on a full kernel EINVAL is
// a plain error).
func vlanFilteringErr(err error, lacks bool) error {
	if lacks && (errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOTSUP) || errors.Is(err, unix.EINVAL)) {
		return &FeatureError{Feature: FeatureVlanFiltering, Err: err}
	}
	return err
}

// lacksVlanFiltering reports whether link is a bridge that does not report
// IFLA_BR_VLAN_DEFAULT_PVID: br_fill_info puts it (unlike vlan_filtering
// itself) only when built with CONFIG_BRIDGE_VLAN_FILTERING.
func lacksVlanFiltering(link netlink.Link) bool {
	b, ok := link.(*netlink.Bridge)
	return ok && b.VlanDefaultPVID == nil
}
