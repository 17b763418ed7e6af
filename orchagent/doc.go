// Package orchagent reconciles CONFIG_DB intent (PORT, VLAN, VLAN_MEMBER,
// INTERFACE, VLAN_INTERFACE, STATIC_ROUTE, FDB) into the Linux kernel
// through netlinkmgr, and reports each key's outcome to STATE_DB.
//
// The kernel model is SONiC's vlanmgrd/intfmgrd/staticroutebgp, through
// netlink: one bridge "Bridge" with vlan_filtering 1; VLAN N is the 802.1Q
// device VlanN on Bridge plus "vid N self" on Bridge; a member is a port
// enslaved to Bridge with vid N (pvid untagged for untagged members);
// addresses on links; routes in the main table stamped with protocol
// netlinkmgr.ProtoSwitchyard; static FDB entries "master static vlan N".
//
// Work is level-triggered: event handlers (Redis keyspace, netlink) only
// enqueue keys "TABLE|key"; Reconcile re-reads the key's current hash and
// the kernel's current state and applies the difference, so running it
// twice writes nothing the second time. Keys that wait for another object
// (a member for its VLAN, an address for its netdev, a route for its
// next-hop interface, an FDB entry for its VLAN membership) are "pending"
// and are re-enqueued by the event that makes them ready: no polling.
//
// Ownership: orchagent modifies only what config names (ports, VlanN,
// Bridge, configured addresses, proto-201 routes, static FDB on Bridge);
// the sweep of stale owned objects runs only once CONFIG_DB_INITIALIZED is
// "1". It must not run ip/bridge processes, and it must not delete ports.
package orchagent
