package schema

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestResultKeyFDBForms(t *testing.T) {
	cases := map[string]string{
		"Vlan6|02:00:00:00:00:06": "FDB_TABLE|Vlan6:02:00:00:00:00:06",
		"Vlan6:02:00:00:00:00:06": "FDB_TABLE||Vlan6:02:00:00:00:00:06", // wrong separator: its own key
		"Vlan6|a|b":               "FDB_TABLE||Vlan6|a|b",
		"VlanX|02:00:00:00:00:06": "FDB_TABLE||VlanX|02:00:00:00:00:06",
	}
	for k, want := range cases {
		if got := ResultKey(TableFDB, k); got != want {
			t.Errorf("ResultKey(FDB, %q) = %q, want %q", k, got, want)
		}
		if back, ok := ConfigKeyOfResult(TableFDB, want); !ok || back != k {
			t.Errorf("ConfigKeyOfResult(FDB, %q) = %q %v, want %q", want, back, ok, k)
		}
	}
}

// FuzzResultKeyInjective: two different CONFIG_DB keys never share a
// result key, and ConfigKeyOfResult inverts ResultKey.
func FuzzResultKeyInjective(f *testing.F) {
	f.Add("Vlan6|02:00:00:00:00:06", "Vlan6:02:00:00:00:00:06")
	f.Add("Vlan6|x:y", "Vlan6:x|y")
	f.Add("|a", "a")
	f.Fuzz(func(t *testing.T, a, b string) {
		for _, table := range []string{TableFDB, TableStaticRoute} {
			ra, rb := ResultKey(table, a), ResultKey(table, b)
			if a != b && ra == rb {
				t.Fatalf("%s keys %q and %q share result key %q", table, a, b, ra)
			}
			if back, ok := ConfigKeyOfResult(table, ra); !ok || back != a {
				t.Fatalf("ConfigKeyOfResult(%s, %q) = %q %v, want %q", table, ra, back, ok, a)
			}
		}
	})
}

func TestGeneration(t *testing.T) {
	a := Generation(Fields{"nexthop": "10.0.0.2", "NULL": "NULL"})
	if a != Generation(Fields{"nexthop": "10.0.0.2"}) {
		t.Error("NULL placeholder changes the generation")
	}
	if a == Generation(Fields{"nexthop": "10.0.0.3"}) || a == Generation(Fields{"nexthop10.0.0.2": ""}) {
		t.Error("different hashes share a generation")
	}
	if len(a) != 16 {
		t.Errorf("generation %q: want 16 hex digits", a)
	}
}

func TestClip(t *testing.T) {
	if Clip("short") != "short" {
		t.Fatal("short value changed")
	}
	long := strings.Repeat("é", 1<<19) // 1 MiB of 2-byte runes
	c := Clip(long)
	if len(c) > MaxQuote+32 || !utf8.ValidString(c) || !strings.HasSuffix(c, "(1048576 bytes)") {
		t.Fatalf("Clip of 1 MiB: %d bytes, %q...", len(c), c[len(c)-20:])
	}
	e := (&FieldError{Table: "PORT", Key: "Ethernet0", Field: "mtu", Value: strings.Repeat("9", 1<<20)}).Error()
	if len(e) > 600 {
		t.Fatalf("FieldError of a 1 MB value is %d bytes", len(e))
	}
}
