package schema

import (
	"reflect"
	"testing"
)

// FuzzParseFDBCanonical checks that ParseFDB's one-pass path accepts
// exactly what the full parser accepts, with the same record.
func FuzzParseFDBCanonical(f *testing.F) {
	for _, s := range []struct{ key, fields string }{
		{"Vlan100|00:11:22:33:44:55", "port\x00Ethernet0"},
		{"Vlan1|02:aa:bb:cc:dd:ee", "port\x00eth1\x00type\x00static"},
		{"Vlan4094|0a:00:00:00:00:01", "port\x00Ethernet4"},
		{"Vlan4095|02:00:00:00:00:01", "port\x00Ethernet0"},
		{"Vlan0100|02:00:00:00:00:01", "port\x00Ethernet0"},
		{"vlan100|02:00:00:00:00:01", "port\x00Ethernet0"},
		{"Vlan100|02:00:00:00:00:0A", "port\x00Ethernet0"},
		{"Vlan100|02-00-00-00-00-01", "port\x00Ethernet0"},
		{"Vlan100|01:00:5e:00:00:01", "port\x00Ethernet0"},
		{"Vlan100|00:00:00:00:00:00", "port\x00Ethernet0"},
		{"Vlan100|02:00:00:00:00:01|x", "port\x00Ethernet0"},
		{"Vlan100|02:00:00:00:00:01", "port\x00Vlan100"},
		{"Vlan100|02:00:00:00:00:01", "port\x00Vlan01"},
		{"Vlan100|02:00:00:00:00:01", "type\x00dynamic\x00port\x00Ethernet0"},
		{"Vlan100|02:00:00:00:00:01", ""},
		{"Vlan+10|02:00:00:00:00:01", "port\x00Ethernet0"},
	} {
		f.Add(s.key, s.fields)
	}
	f.Fuzz(func(t *testing.T, key, fields string) {
		fs := decodeFields(fields)
		fast, ok := parseFDBCanonical(key, fs)
		full, err := parseFDB(key, fs)
		if ok != (err == nil) {
			t.Fatalf("%q %q: one-pass ok %v, full parser error %v", key, fields, ok, err)
		}
		if ok && !reflect.DeepEqual(fast, full) {
			t.Fatalf("%q %q: one-pass %+v, full parser %+v", key, fields, fast, full)
		}
		if got, gerr := ParseFDB(key, fs); (gerr == nil) != (err == nil) || (err != nil && gerr.Error() != err.Error()) ||
			(err == nil && !reflect.DeepEqual(got, full)) {
			t.Fatalf("%q %q: ParseFDB %+v %v, full parser %+v %v", key, fields, got, gerr, full, err)
		}
	})
}

// BenchmarkParseFDB is the parse of one bulk FDB key: ParseFDB (the
// one-pass path) against the full parser alone.
// go test -run '^$' -bench ParseFDB -benchmem ./schema
func BenchmarkParseFDB(b *testing.B) {
	f := Fields{FieldPort: "Ethernet0"}
	const key = "Vlan100|02:00:00:12:ab:ef"
	for _, c := range []struct {
		name  string
		parse func(string, Fields) (FDB, error)
	}{{"ParseFDB", ParseFDB}, {"full", parseFDB}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if _, err := c.parse(key, f); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
