package schema

// Redis database numbers (SONiC's numbering).
const (
	ApplDB     = 0
	CountersDB = 2
	ConfigDB   = 4
	StateDB    = 6
)

// Key separators: "|" in CONFIG_DB and STATE_DB, ":" in APPL_DB and COUNTERS_DB.
const (
	ConfigSep   = "|"
	StateSep    = "|"
	CountersSep = ":"
)

// CONFIG_DB table names.
const (
	TablePort                 = "PORT"
	TableVlan                 = "VLAN"
	TableVlanMember           = "VLAN_MEMBER"
	TableInterface            = "INTERFACE"
	TableVlanInterface        = "VLAN_INTERFACE"
	TableLoopback             = "LOOPBACK_INTERFACE"
	TableVRF                  = "VRF"
	TablePortChannel          = "PORTCHANNEL"
	TablePortChannelMember    = "PORTCHANNEL_MEMBER"
	TablePortChannelInterface = "PORTCHANNEL_INTERFACE"
	TableVxlanTunnel          = "VXLAN_TUNNEL"
	TableVxlanTunnelMap       = "VXLAN_TUNNEL_MAP"
	TableVxlanRemoteVNI       = "VXLAN_REMOTE_VNI" // CONFIG_DB form of SONiC's APPL_DB table (vxlanremote.go)
	TableStaticRoute          = "STATIC_ROUTE"
	TableFDB                  = "FDB"
	TableImpairment           = "IMPAIRMENT"
	TableImpairmentFlow       = "IMPAIRMENT_FLOW"
)

// ConfigTables lists the CONFIG_DB tables switchyard understands, in
// dependency order (parents before children).
var ConfigTables = []string{
	TablePort, TablePortTuning, TableVRF, TablePortChannel, TablePortChannelMember, TableVlan, TableVlanMember,
	TableInterface, TableVlanInterface, TablePortChannelInterface, TableLoopback, TableVxlanTunnel,
	TableVxlanTunnelMap, TableVxlanRemoteVNI, TableStaticRoute, TableFDB, TableImpairmentSchedule, TableImpairment, TableImpairmentFlow,
	TableTrafficGen,
}

// KeyConfigDBInitialized is the plain string key in CONFIG_DB that says the
// configuration is complete ("1"); only then may stale kernel objects be swept.
const KeyConfigDBInitialized = "CONFIG_DB_INITIALIZED"

// STATE_DB tables written by syncd (mirror of the kernel).
const (
	StatePortTable  = "PORT_TABLE"
	StateVlanTable  = "VLAN_TABLE"
	StateFDBTable   = "FDB_TABLE"
	StateNeighTable = "NEIGH_TABLE"
	StateRouteTable = "ROUTE_TABLE"
)

// COUNTERS_DB tables.
const (
	CountersTable           = "COUNTERS"
	ImpairmentCountersTable = "IMPAIRMENT_COUNTERS"
)

// NullField is the placeholder field SONiC stores in a hash that has no
// fields (an IP on an interface): "NULL" = "NULL". Readers ignore it.
const NullField = "NULL"

// Fields is the field/value map of one Redis hash.
type Fields = map[string]string

// ConfigKey joins a CONFIG_DB table and key: "VLAN|Vlan100".
func ConfigKey(table, key string) string { return table + ConfigSep + key }

// CountersKey joins a COUNTERS_DB table and key: "COUNTERS:Ethernet0".
func CountersKey(table, key string) string { return table + CountersSep + key }
