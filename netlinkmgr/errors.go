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
// dummy → "dummy devices"; vrf → "VRF devices".
