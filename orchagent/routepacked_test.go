package orchagent

import (
	"reflect"
	"testing"

	"github.com/switchyard-net/switchyard/internal/shrink"
	"github.com/switchyard-net/switchyard/schema"
)

// FuzzRoutePacked: a route parsed off its packed hash (the batch path,
// applyRoutePacked) is the one parsed from the map (applyRoute): the same
// route or the same error, whatever fields are present.
func FuzzRoutePacked(f *testing.F) {
	f.Add("10.2.0.0/16", "10.0.0.2", "Ethernet0", "", "", "", "", uint8(0x03))
	f.Add("Vrf_red|10.2.0.0/16", "10.0.0.2,10.0.0.3", "Ethernet0,", "10,20", "false", "default,", "x", uint8(0x3f))
	f.Add("default|2001:db8::/64", "", "null", "", "true", "", "", uint8(0x16))
	f.Add("10.2.0.0/16", "", "", "7", "", "", "\x00", uint8(0x24))
	f.Fuzz(func(t *testing.T, key, nh, ifn, dist, bh, vrf, other string, present uint8) {
		m := schema.Fields{}
		for i, kv := range [][2]string{{schema.FieldNexthop, nh}, {schema.FieldIfname, ifn}, {schema.FieldDistance, dist},
			{schema.FieldBlackhole, bh}, {schema.FieldNexthopVRF, vrf}, {"bfd", other}} {
			if present&(1<<i) != 0 {
				m[kv[0]] = kv[1]
			}
		}
		want, werr := schema.ParseStaticRoute(key, m)
		rf := routeFieldsPacked(shrink.Pack(m))
		got, gerr := schema.ParseStaticRouteFields(key, &rf)
		if (werr == nil) != (gerr == nil) || werr != nil && werr.Error() != gerr.Error() || !reflect.DeepEqual(got, want) {
			t.Fatalf("%q %v: packed %+v, %v; map %+v, %v", key, m, got, gerr, want, werr)
		}
	})
}
