package syncde2e

import (
	"testing"

	"github.com/switchyard-net/switchyard/tests/e2eutil"
	"github.com/switchyard-net/switchyard/tests/testns"
)

// TestVxlanRemoteVtep bridges a vxlan device (vtep1-100, learning) into
// Bridge with an underlay to a second namespace whose own vxlan device
// and bridge hold 10.0.0.9: after a ping from h1 over the tunnel,
// FDB_TABLE shows the far bridge's MAC behind vtep1-100 with the VTEP it
// was learned from. Runs on the host kernel (vxlan, no VLAN filtering).
func TestVxlanRemoteVtep(t *testing.T) {
	testns.RequireRoot(t)
	e := newEnv(t)
	far := testns.New(t)
	e2eutil.DisableIPv6(t, far)
	e.NS.Veth("Ethernet8", far, "eth0")
	e.NS.IP("addr", "add", "192.168.0.1/24", "dev", "Ethernet8")
	far.IP("addr", "add", "192.168.0.2/24", "dev", "eth0")
	if _, err := e.NS.TryIP("link", "add", "vtep1-100", "type", "vxlan", "id", "1000", "local", "192.168.0.1",
		"remote", "192.168.0.2", "dstport", "4789", "learning"); err != nil {
		t.Skipf("needs vxlan devices: %v", err)
	}
	e.NS.IP("link", "set", "vtep1-100", "master", "Bridge")
	e.NS.IP("link", "set", "vtep1-100", "up")
	far.IP("link", "add", "vx", "type", "vxlan", "id", "1000", "local", "192.168.0.2", "remote", "192.168.0.1",
		"dstport", "4789", "learning")
	far.IP("link", "add", "br0", "type", "bridge")
	far.IP("link", "set", "vx", "master", "br0")
	far.IP("link", "set", "vx", "up")
	far.IP("link", "set", "br0", "up")
	far.IP("addr", "add", "10.0.0.9/24", "dev", "br0")
	e.configurePorts("Ethernet0", "Ethernet4")
	e.start()

	e2eutil.Ping(t, e.h1, "10.0.0.9", 2)
	farMAC := e2eutil.MAC(t, far, "br0")
	e.WaitHash(e.State, "FDB_TABLE|Vlan1:"+farMAC, map[string]string{"port": "vtep1-100", "type": "dynamic", "remote_vtep": "192.168.0.2"})
	e.WaitHash(e.State, "FDB_TABLE|Vlan1:"+e2eutil.MAC(t, e.h1, "eth0"), map[string]string{"port": "Ethernet0", "remote_vtep": ""})
	e.sameKeys("FDB_TABLE|*", e.judgeFdb)
}
