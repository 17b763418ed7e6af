package syncde2e

import (
	"testing"

	"github.com/switchyard-net/switchyard/tests/e2eutil"
	"github.com/switchyard-net/switchyard/tests/kernelcap"
	"github.com/switchyard-net/switchyard/tests/testns"
)

// TestVLANAwareFdbAndVlanTable runs the brief's kernel model — Bridge with
// vlan_filtering, Vlan100 an 802.1Q device on it, both ports untagged
// members of VLAN 100 — and checks that learned entries are filed under
// their own VLAN, VLAN_TABLE follows Vlan100 and neighbours learned on it
// appear. It needs the full kernel (make test-vm); the host kernel skips.
func TestVLANAwareFdbAndVlanTable(t *testing.T) {
	testns.RequireRoot(t)
	kernelcap.Require(t, kernelcap.VLAN8021Q, kernelcap.VlanFiltering)
	e := newEnv(t)
	e.NS.IP("addr", "del", "10.0.0.254/24", "dev", "Bridge")
	e.NS.IP("link", "set", "Bridge", "type", "bridge", "vlan_filtering", "1")
	for _, p := range []string{"Ethernet0", "Ethernet4"} {
		e.NS.Bridge("vlan", "add", "dev", p, "vid", "100", "pvid", "untagged")
		e.NS.Bridge("vlan", "del", "dev", p, "vid", "1")
	}
	e.NS.Bridge("vlan", "add", "dev", "Bridge", "vid", "100", "self")
	e.NS.IP("link", "add", "link", "Bridge", "name", "Vlan100", "type", "vlan", "id", "100")
	e.NS.IP("addr", "add", "10.0.0.254/24", "dev", "Vlan100")
	e.NS.IP("link", "set", "Vlan100", "up")
	e.configurePorts("Ethernet0", "Ethernet4")
	e.start()

	e.WaitField(e.State, "VLAN_TABLE|Vlan100", "oper_status", "up")
	e2eutil.Ping(t, e.h1, "10.0.0.2", 2)
	m1, m2 := e2eutil.MAC(t, e.h1, "eth0"), e2eutil.MAC(t, e.h2, "eth0")
	e.WaitField(e.State, "FDB_TABLE|Vlan100:"+m1, "port", "Ethernet0")
	e.WaitField(e.State, "FDB_TABLE|Vlan100:"+m2, "port", "Ethernet4")
	e.NS.Bridge("fdb", "add", "02:00:00:00:00:77", "dev", "Ethernet4", "master", "static", "vlan", "100")
	e.WaitField(e.State, "FDB_TABLE|Vlan100:02:00:00:00:00:77", "type", "static")
	e.sameKeys("FDB_TABLE|*", e.judgeFdb)

	e2eutil.Ping(t, e.NS, "10.0.0.1", 2)
	e.WaitField(e.State, "NEIGH_TABLE|Vlan100|10.0.0.1", "neigh", m1)
	e.sameKeys("NEIGH_TABLE|*", e.judgeNeigh)

	e.NS.IP("link", "set", "Vlan100", "down")
	e.WaitField(e.State, "VLAN_TABLE|Vlan100", "admin_status", "down")
	e.WaitField(e.State, "VLAN_TABLE|Vlan100", "oper_status", "down")
}
