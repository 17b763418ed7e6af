package schema

import (
	"maps"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
)

// okCase is an input every parser must accept, with its canonical output.
type okCase struct {
	table, key string
	f          Fields
	wantKey    string
	wantFields Fields
}

var null = Fields{NullField: NullField}

var okCases = []okCase{
	{TablePort, "Ethernet0", nil, "Ethernet0", null},
	{TablePort, "Ethernet0", null, "Ethernet0", null},
	{TablePort, "eth-0.100_x@y", Fields{"admin_status": "down"}, "eth-0.100_x@y", Fields{"admin_status": "down"}},
	{TablePort, "e", Fields{"NULL": "NULL", "admin_status": "up", "mtu": "01500", "mac": "00-11-22-AA-BB-CC", "description": "uplink: to spine|1"},
		"e", Fields{"admin_status": "up", "mtu": "1500", "mac": "00:11:22:aa:bb:cc", "description": "uplink: to spine|1"}},
	{TablePort, "Ethernet0", Fields{"mtu": "68", "mac": "0211.2233.4455", "description": ""},
		"Ethernet0", Fields{"mtu": "68", "mac": "02:11:22:33:44:55", "description": ""}},
	{TablePort, "Ethernet0", Fields{"description": strings.Repeat("é", 127) + "x"}, "Ethernet0", Fields{"description": strings.Repeat("é", 127) + "x"}},
	{TablePort, "Vlan0100", Fields{"mtu": "9216"}, "Vlan0100", Fields{"mtu": "9216"}}, // not a VLAN name, so a port
	{TableVlan, "Vlan100", nil, "Vlan100", Fields{"vlanid": "100"}},
	{TableVlan, "Vlan1", Fields{"vlanid": "1"}, "Vlan1", Fields{"vlanid": "1"}},
	{TableVlan, "Vlan4094", Fields{"vlanid": "04094", "admin_status": "up", "mtu": "9000", "mac": "02:00:00:00:00:01"},
		"Vlan4094", Fields{"vlanid": "4094", "admin_status": "up", "mtu": "9000", "mac": "02:00:00:00:00:01"}},
	{TableVlanMember, "Vlan100|Ethernet0", Fields{"tagging_mode": "untagged"}, "Vlan100|Ethernet0", Fields{"tagging_mode": "untagged"}},
	{TableVlanMember, "Vlan2|Ethernet4", Fields{"tagging_mode": "tagged", "NULL": "NULL"}, "Vlan2|Ethernet4", Fields{"tagging_mode": "tagged"}},
	{TableVlanMember, "Vlan3|eth3", Fields{"tagging_mode": "priority_tagged"}, "Vlan3|eth3", Fields{"tagging_mode": "priority_tagged"}},
	{TableInterface, "Ethernet0", nil, "Ethernet0", null},
	{TableInterface, "Ethernet0|10.0.0.1/24", null, "Ethernet0|10.0.0.1/24", null},
	{TableInterface, "Ethernet0|10.0.0.0/24", nil, "Ethernet0|10.0.0.0/24", null},
	{TableInterface, "Ethernet0|2001:db8::1/64", nil, "Ethernet0|2001:db8::1/64", null},
	{TableInterface, "Ethernet0|fe80::1/64", nil, "Ethernet0|fe80::1/64", null},
	{TableVlanInterface, "Vlan100", nil, "Vlan100", null},
	{TableVlanInterface, "Vlan100", Fields{"vrf_name": "Vrf-red"}, "Vlan100", Fields{"vrf_name": "Vrf-red"}},
	{TableInterface, "Ethernet0", Fields{"vrf_name": "Vrf_blue", "NULL": "NULL"}, "Ethernet0", Fields{"vrf_name": "Vrf_blue"}},
	{TableInterface, "Ethernet0|10.0.0.1/24", Fields{"vrf_name": "default"}, "Ethernet0|10.0.0.1/24", null},
	{TableLoopback, "Loopback0", nil, "Loopback0", null},
	{TableLoopback, "Loopback0", Fields{"admin_status": "down", "nat_zone": "0"}, "Loopback0", Fields{"admin_status": "down"}},
	{TableLoopback, "Loopback1234", Fields{"vrf_name": "Vrf_blue"}, "Loopback1234", Fields{"vrf_name": "Vrf_blue"}},
	{TableLoopback, "Loopback0|10.1.0.1/32", null, "Loopback0|10.1.0.1/32", null},
	{TableLoopback, "Loopback0|fc00:1::32/128", Fields{"family": "IPv6", "scope": "global", "admin_status": "x"}, "Loopback0|fc00:1::32/128", null},
	{TableVRF, "Vrf_blue", nil, "Vrf_blue", null},
	{TableVxlanTunnel, "vtep1", Fields{"src_ip": "10.1.0.1"}, "vtep1", Fields{"src_ip": "10.1.0.1"}},
	{TableVxlanTunnel, "vtep1", Fields{"src_ip": "10.1.0.1", "dst_ip": "10.1.0.2", "ttl_mode": "pipe"}, "vtep1", Fields{"src_ip": "10.1.0.1", "dst_ip": "10.1.0.2"}},
	{TableVxlanTunnel, "vtep1", Fields{"src_ip": "2001:db8::1", "dst_ip": ""}, "vtep1", Fields{"src_ip": "2001:db8::1"}},
	{TableVxlanTunnelMap, "vtep1|map_1000_Vlan100", Fields{"vlan": "Vlan100", "vni": "1000"}, "vtep1|map_1000_Vlan100", Fields{"vlan": "Vlan100", "vni": "1000"}},
	{TableVxlanRemoteVNI, "Vlan100|10.0.0.2", Fields{"vni": "1000"}, "Vlan100|10.0.0.2", Fields{"vni": "1000"}},
	{TableVxlanRemoteVNI, "Vlan4094|2001:db8::2", Fields{"vni": "016777215", "NULL": "NULL"}, "Vlan4094|2001:db8::2", Fields{"vni": "16777215"}},
	{TablePortChannel, "PortChannel01", nil, "PortChannel01", null},
	{TablePortChannel, "PortChannel0001", Fields{"admin_status": "up", "mtu": "9100", "min_links": "2", "fast_rate": "True", "lacp_key": "auto", "fallback": "false", "description": "to spine"},
		"PortChannel0001", Fields{"admin_status": "up", "mtu": "9100", "min_links": "2", "fast_rate": "true"}},
	{TablePortChannel, "PortChannel1", Fields{"lacp_key": "10001", "static": "false", "fast_rate": "false"}, "PortChannel1", Fields{"fast_rate": "false"}},
	{TablePortChannelMember, "PortChannel01|Ethernet0", null, "PortChannel01|Ethernet0", null},
	{TablePortChannelInterface, "PortChannel01", Fields{"vrf_name": "Vrf_blue"}, "PortChannel01", Fields{"vrf_name": "Vrf_blue"}},
	{TablePortChannelInterface, "PortChannel01|10.0.0.56/31", nil, "PortChannel01|10.0.0.56/31", null},
	{TableVRF, "Vrf-1", Fields{"vni": "1000", "fallback": "false"}, "Vrf-1", null},
	{TableVlanInterface, "Vlan100|10.1.0.1/24", null, "Vlan100|10.1.0.1/24", null},
	{TableStaticRoute, "10.2.0.0/16", Fields{"nexthop": "10.0.0.2"}, "10.2.0.0/16", Fields{"nexthop": "10.0.0.2"}},
	{TableStaticRoute, "default|10.2.0.0/16", Fields{"nexthop": "10.0.0.2", "nexthop-vrf": "default"}, "10.2.0.0/16", Fields{"nexthop": "10.0.0.2"}},
	{TableStaticRoute, "0.0.0.0/0", Fields{"nexthop": "10.0.0.2, 10.0.0.3", "ifname": "Ethernet0,Ethernet4", "distance": "010"},
		"0.0.0.0/0", Fields{"nexthop": "10.0.0.2,10.0.0.3", "ifname": "Ethernet0,Ethernet4", "distance": "10"}},
	{TableStaticRoute, "10.2.0.0/16", Fields{"nexthop": "10.0.0.2,", "ifname": ",Ethernet4", "blackhole": "false"},
		"10.2.0.0/16", Fields{"nexthop": "10.0.0.2,", "ifname": ",Ethernet4"}},
	{TableStaticRoute, "10.2.0.0/16", Fields{"nexthop": "0.0.0.0", "ifname": "Ethernet4"}, "10.2.0.0/16", Fields{"ifname": "Ethernet4"}},
	{TableStaticRoute, "10.2.0.0/16", Fields{"blackhole": "true", "distance": "0", "nexthop": "", "nexthop-vrf": ""},
		"10.2.0.0/16", Fields{"blackhole": "true", "distance": "0"}},
	{TableStaticRoute, "2001:db8::/32", Fields{"nexthop": "2001:DB8::1,fe80::1", "ifname": ",Ethernet0"},
		"2001:db8::/32", Fields{"nexthop": "2001:db8::1,fe80::1", "ifname": ",Ethernet0"}},
	{TableStaticRoute, "10.2.0.0/16", Fields{"nexthop": "10.0.0.2,10.0.0.2", "ifname": "Ethernet0,Ethernet4"},
		"10.2.0.0/16", Fields{"nexthop": "10.0.0.2,10.0.0.2", "ifname": "Ethernet0,Ethernet4"}},
	{TableFDB, "Vlan100|00:11:22:33:44:55", Fields{"port": "Ethernet0"}, "Vlan100|00:11:22:33:44:55", Fields{"port": "Ethernet0"}},
	// Routes in a VRF; nexthop-vrf leaks between VRFs (the route's own VRF
	// is implied and dropped).
	{TableStaticRoute, "Vrf_red|10.0.0.0/24", Fields{"nexthop": "10.0.0.2", "nexthop-vrf": "Vrf_red"}, "Vrf_red|10.0.0.0/24", Fields{"nexthop": "10.0.0.2"}},
	{TableStaticRoute, "Vrf_red|10.5.0.0/16", Fields{"nexthop": "10.1.0.2,10.0.0.2", "nexthop-vrf": "Vrf_blue,"},
		"Vrf_red|10.5.0.0/16", Fields{"nexthop": "10.1.0.2,10.0.0.2", "nexthop-vrf": "Vrf_blue,"}},
	{TableStaticRoute, "Vrf_red|10.6.0.0/16", Fields{"ifname": "Ethernet4", "nexthop-vrf": "default"}, "Vrf_red|10.6.0.0/16", Fields{"ifname": "Ethernet4", "nexthop-vrf": "default"}},
	{TableStaticRoute, "default|10.7.0.0/16", Fields{"nexthop": "10.1.0.2", "nexthop-vrf": "Vrf_blue"}, "10.7.0.0/16", Fields{"nexthop": "10.1.0.2", "nexthop-vrf": "Vrf_blue"}},
	{TableStaticRoute, "Vrf_red|10.8.0.0/16", Fields{"blackhole": "true", "nexthop-vrf": "Vrf_blue"}, "Vrf_red|10.8.0.0/16", Fields{"blackhole": "true"}},
	// SONiC's forms: fields the YANG models define are accepted, unknown
	// ones ignored (UnknownFields names them); STATIC_ROUTE as `config
	// route add` writes it.
	{TablePort, "Ethernet0", Fields{"admin_status": "up", "alias": "fortyGigE0/0", "lanes": "29,30,31,32", "speed": "40000", "index": "0", "fec": "rs", "mtu": "9100"},
		"Ethernet0", Fields{"admin_status": "up", "mtu": "9100"}},
	{TablePort, "Ethernet0", Fields{"admin_stauts": "up", "mtu": "9100"}, "Ethernet0", Fields{"mtu": "9100"}},
	{TableVlan, "Vlan100", Fields{"vlanid": "100", "description": "servers", "dhcp_servers@": "192.0.2.1,192.0.2.2", "members@": "Ethernet0"},
		"Vlan100", Fields{"vlanid": "100", "description": "servers"}},
	{TableInterface, "Ethernet2|10.2.0.1/24", Fields{"family": "IPv4", "scope": "global"}, "Ethernet2|10.2.0.1/24", null},
	{TableInterface, "Ethernet2", Fields{"vrf_name": "default", "mpls": "enable", "ipv6_use_link_local_only": "disable"}, "Ethernet2", null},
	{TableVlanInterface, "Vlan100|2001:db8::1/64", Fields{"family": "IPv6", "scope": "local", "secondary": "true"}, "Vlan100|2001:db8::1/64", null},
	{TableStaticRoute, "default|10.3.0.0/16", Fields{"nexthop": "10.0.0.2,10.0.0.6", "ifname": ",", "distance": "0,0", "blackhole": "false,false", "nexthop-vrf": "default,default"},
		"10.3.0.0/16", Fields{"nexthop": "10.0.0.2,10.0.0.6", "distance": "0"}},
	{TableStaticRoute, "default|10.4.0.0/16", Fields{"nexthop": "", "ifname": "null", "distance": "0", "blackhole": "true", "nexthop-vrf": "default"},
		"10.4.0.0/16", Fields{"blackhole": "true", "distance": "0"}},
	{TableStaticRoute, "10.5.0.0/16", Fields{"nexthop": "10.0.0.2,10.0.0.6,", "ifname": ",,Ethernet8", "distance": "20,10,10", "blackhole": "false,false,false"},
		"10.5.0.0/16", Fields{"nexthop": "10.0.0.6,", "ifname": ",Ethernet8", "distance": "10"}},
	{TableStaticRoute, "10.6.0.0/16", Fields{"nexthop": "10.0.0.2,", "ifname": ",null", "distance": "1,250", "blackhole": "false,true", "advertise": "false", "bfd": "false"},
		"10.6.0.0/16", Fields{"nexthop": "10.0.0.2", "distance": "1"}},
	{TableFDB, "Vlan100|00:11:22:33:44:66", Fields{"port": "Ethernet0", "vni": "1"}, "Vlan100|00:11:22:33:44:66", Fields{"port": "Ethernet0"}},
	{TableFDB, "Vlan1|02:aa:bb:cc:dd:ee", Fields{"port": "eth1", "type": "static"}, "Vlan1|02:aa:bb:cc:dd:ee", Fields{"port": "eth1"}},
}

func TestParseAccepts(t *testing.T) {
	for _, c := range okCases {
		t.Run(c.table+"|"+c.key, func(t *testing.T) {
			r, err := Parse(c.table, c.key, c.f)
			if err != nil {
				t.Fatal(err)
			}
			if r.Table() != c.table || r.Key() != c.wantKey || !maps.Equal(r.Fields(), c.wantFields) {
				t.Errorf("got %s|%s %v, want %s|%s %v", r.Table(), r.Key(), r.Fields(), c.table, c.wantKey, c.wantFields)
			}
			checkRoundTrip(t, c.table, c.key, c.f)
		})
	}
}

func TestParsedValues(t *testing.T) {
	p, err := ParsePort("Ethernet0", Fields{"admin_status": "down", "mtu": "9000", "mac": "02:00:00:00:00:AA", "description": "x"})
	if err != nil {
		t.Fatal(err)
	}
	if p.AdminUp == nil || *p.AdminUp || p.MTU == nil || *p.MTU != 9000 || p.MAC.String() != "02:00:00:00:00:aa" || *p.Description != "x" {
		t.Errorf("port parsed as %+v", p)
	}
	if p, _ := ParsePort("Ethernet0", nil); p.AdminUp != nil || p.MTU != nil || p.MAC != nil || p.Description != nil {
		t.Errorf("absent fields must stay unmanaged, got %+v", p)
	}
	v, err := ParseVlan("Vlan100", nil)
	if err != nil || v.ID != 100 || v.Name != "Vlan100" {
		t.Errorf("vlan parsed as %+v, %v", v, err)
	}
	m, err := ParseVlanMember("Vlan7|Ethernet8", Fields{"tagging_mode": "priority_tagged"})
	if err != nil || m.VID != 7 || m.Vlan != "Vlan7" || m.Port != "Ethernet8" || m.Tagging != PriorityTagged {
		t.Errorf("member parsed as %+v, %v", m, err)
	}
	in, err := ParseInterface(TableVlanInterface, "Vlan100|10.1.0.1/24", nil)
	if err != nil || in.Name != "Vlan100" || in.Addr != netip.MustParsePrefix("10.1.0.1/24") ||
		in.Prefix() != netip.MustParsePrefix("10.1.0.0/24") || in.IsBare() || in.Table() != TableVlanInterface {
		t.Errorf("interface parsed as %+v, %v", in, err)
	}
	if in, _ := ParseInterface(TableInterface, "Ethernet0", nil); !in.IsBare() || in.Key() != "Ethernet0" {
		t.Errorf("bare interface parsed as %+v", in)
	}
	r, err := ParseStaticRoute("default|10.2.0.0/16", Fields{"nexthop": "10.0.0.2,", "ifname": ",Ethernet4", "distance": "20"})
	want := []NextHop{{Gateway: netip.MustParseAddr("10.0.0.2")}, {Ifname: "Ethernet4"}}
	if err != nil || r.VRF != DefaultVRF || r.Prefix != netip.MustParsePrefix("10.2.0.0/16") ||
		!slices.Equal(r.NextHops, want) || r.Distance == nil || *r.Distance != 20 || r.Blackhole {
		t.Errorf("route parsed as %+v, %v", r, err)
	}
	e, err := ParseFDB("Vlan100|00:11:22:33:44:55", Fields{"port": "Ethernet0"})
	if err != nil || e.VID != 100 || e.Vlan != "Vlan100" || e.MAC.String() != "00:11:22:33:44:55" || e.Port != "Ethernet0" {
		t.Errorf("fdb parsed as %+v, %v", e, err)
	}
	if got := ResultKey(TableFDB, e.Key()); got != "FDB_TABLE|Vlan100:00:11:22:33:44:55" {
		t.Errorf("FDB result key %q", got)
	}
}

func TestZeroRecordsRenderNull(t *testing.T) {
	for _, r := range []Record{Port{Name: "e"}, Interface{TableName: TableInterface, Name: "e"}} {
		if !maps.Equal(r.Fields(), null) {
			t.Errorf("%T renders %v, want the NULL placeholder", r, r.Fields())
		}
	}
}

func TestNames(t *testing.T) {
	if got := SplitKey("Vlan100|Ethernet0"); !slices.Equal(got, []string{"Vlan100", "Ethernet0"}) {
		t.Errorf("SplitKey = %q", got)
	}
	if got := SplitKey(""); !slices.Equal(got, []string{""}) {
		t.Errorf("SplitKey(\"\") = %q", got)
	}
	if tb, k, ok := SplitTableKey("VLAN_MEMBER|Vlan100|Ethernet0"); !ok || tb != TableVlanMember || k != "Vlan100|Ethernet0" {
		t.Errorf("SplitTableKey = %q, %q, %v", tb, k, ok)
	}
	if _, _, ok := SplitTableKey(KeyConfigDBInitialized); ok {
		t.Errorf("SplitTableKey(%q) found a table", KeyConfigDBInitialized)
	}
	for id := MinVlanID; id <= MaxVlanID; id++ {
		n, err := ParseVlanName(VlanName(id))
		if err != nil || n != id {
			t.Fatalf("ParseVlanName(VlanName(%d)) = %d, %v", id, n, err)
		}
	}
	for name, want := range map[string]string{
		"Vlan0": "out of range", "Vlan4095": "out of range", "Vlan01": "use Vlan1", "vlan1": "use Vlan1",
		"": "not a VLAN name", "Vlan": "not a VLAN name", "Vlan-1": "not a VLAN name", "Vlan1 ": "not a VLAN name",
		"Vlan99999999999": "not a VLAN name",
	} {
		_, err := ParseVlanName(name)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseVlanName(%q) = %v, want an error containing %q", name, err, want)
		}
	}
}

// testRecord is a Record of a table registered by the test.
type testRecord struct{ key string }

func (r testRecord) Table() string  { return "SCHEMA_TEST_TABLE" }
func (r testRecord) Key() string    { return r.key }
func (r testRecord) Fields() Fields { return orNull(nil) }

// registerTestTable registers SCHEMA_TEST_TABLE once per process, so the
// test also passes with -count=N.
var registerTestTable = sync.OnceFunc(func() {
	RegisterTable("SCHEMA_TEST_TABLE", func(key string, f Fields) (Record, error) { return testRecord{key}, nil })
})

func TestRegisterTable(t *testing.T) {
	registerTestTable()
	r, err := Parse("SCHEMA_TEST_TABLE", "k", nil)
	if err != nil || r.Key() != "k" {
		t.Fatalf("Parse of a registered table = %v, %v", r, err)
	}
	if !slices.Contains(Tables(), "SCHEMA_TEST_TABLE") || !slices.IsSorted(Tables()) {
		t.Errorf("Tables() = %v", Tables())
	}
	for _, name := range []string{"SCHEMA_TEST_TABLE", TablePort, ""} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("RegisterTable(%q) twice or empty did not panic", name)
				}
			}()
			RegisterTable(name, func(string, Fields) (Record, error) { return nil, nil })
		}()
	}
}
