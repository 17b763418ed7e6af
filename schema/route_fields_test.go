package schema

import (
	"reflect"
	"testing"
)

// routeFieldsOf fills StaticRouteFields with Set from every field of f,
// the others included (Set ignores them), as a reader of a packed hash does.
func routeFieldsOf(f Fields) *StaticRouteFields {
	var rf StaticRouteFields
	for k, v := range f {
		rf.Set(k, v)
	}
	return &rf
}

// FuzzParseStaticRouteFields: the route parsed from StaticRouteFields
// (filled by Set) is the one ParseStaticRoute parses from the map — the
// same route or the same error — whatever the fields, present or not.
func FuzzParseStaticRouteFields(f *testing.F) {
	f.Add("10.2.0.0/16", "10.0.0.2", "Ethernet0", "", "", "", "", uint8(0x03))
	f.Add("Vrf_red|10.2.0.0/16", "10.0.0.2,10.0.0.3", "Ethernet0,", "10,20", "false", "default,", "x", uint8(0x3f))
	f.Add("default|2001:db8::/64", "", "null", "", "true", "", "", uint8(0x16))
	f.Add("10.2.0.0/16", "", "", "7", "", "", "", uint8(0x04))
	f.Fuzz(func(t *testing.T, key, nh, ifn, dist, bh, vrf, other string, present uint8) {
		m := Fields{}
		for i, kv := range [][2]string{{FieldNexthop, nh}, {FieldIfname, ifn}, {FieldDistance, dist},
			{FieldBlackhole, bh}, {FieldNexthopVRF, vrf}, {"advertise", other}} {
			if present&(1<<i) != 0 {
				m[kv[0]] = kv[1]
			}
		}
		want, werr := ParseStaticRoute(key, m)
		got, gerr := ParseStaticRouteFields(key, routeFieldsOf(m))
		if (werr == nil) != (gerr == nil) || werr != nil && werr.Error() != gerr.Error() || !reflect.DeepEqual(got, want) {
			t.Fatalf("%q %v: from fields %+v, %v; from the map %+v, %v", key, m, got, gerr, want, werr)
		}
		// In an arena: the same route, its hops after what the arena held
		// (left as it was), the arena grown by them.
		for _, room := range []int{0, 1, 8} {
			held := NextHop{Ifname: "held"}
			arena := append(make([]NextHop, 0, 1+room), held)
			got, gerr := ParseStaticRouteFieldsIn(key, routeFieldsOf(m), &arena)
			if (werr == nil) != (gerr == nil) || werr != nil && werr.Error() != gerr.Error() || !reflect.DeepEqual(got, want) {
				t.Fatalf("%q %v in an arena of room %d: %+v, %v; from the map %+v, %v", key, m, room, got, gerr, want, werr)
			}
			if arena[0] != held || len(arena) != 1 && (len(arena) != 1+len(got.NextHops) || &arena[1] != &got.NextHops[0]) {
				t.Fatalf("%q %v: arena of room %d is %v after parsing %v", key, m, room, arena, got.NextHops)
			}
		}
	})
}
