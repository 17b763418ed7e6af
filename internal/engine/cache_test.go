package engine

import (
	"reflect"
	"testing"
	"unsafe"

	"github.com/switchyard-net/switchyard/schema"
)

// Keys set with equal hashes share their strings; each still reads back
// its own hash and generation, also after a different hash in between
// and more distinct hashes than the cache remembers.
func TestCacheSharesEqualHashes(t *testing.T) {
	c := NewCache(nil)
	hashes := []schema.Fields{
		{"nexthop": "10.0.0.2", "ifname": "Ethernet0"},
		{"nexthop": "10.0.0.3", "ifname": "Ethernet0"},
		{"nexthop": "10.0.0.2", "ifname": "Ethernet0", schema.NullField: "NULL"},
		{},
	}
	for i := 0; i < 40; i++ {
		f := hashes[i%len(hashes)]
		if i%7 == 6 {
			f = schema.Fields{"nexthop": "10.9.9." + string(rune('a'+i))}
		}
		c.Set("ROUTE", string(rune('A'+i)), f)
		want := schema.Fields{}
		for k, v := range f {
			if k != schema.NullField {
				want[k] = v
			}
		}
		e, ok := c.Get("ROUTE", string(rune('A'+i)))
		if !ok || !reflect.DeepEqual(e.Fields, want) || e.Gen != schema.Generation(want) {
			t.Fatalf("key %d: got %v %s, want %v %s", i, e.Fields, e.Gen, want, schema.Generation(want))
		}
	}
	a, _ := c.Get("ROUTE", "A")
	if unsafe.StringData(c.tables["ROUTE"]["A"].fields) != unsafe.StringData(c.tables["ROUTE"]["C"].fields) || a.Fields["nexthop"] != "10.0.0.2" {
		t.Fatal("equal hashes do not share")
	}
}

// A warning belongs to its key's current hash and goes with the key.
func TestCacheWarnings(t *testing.T) {
	c := NewCache(func(table string, f schema.Fields) string {
		if _, ok := f["x"]; ok {
			return "unknown field x"
		}
		return ""
	})
	c.Set("ROUTE", "a", schema.Fields{"via": "1", "x": "y"})
	c.Set("ROUTE", "b", schema.Fields{"via": "1"})
	if e, _ := c.Get("ROUTE", "a"); e.Warning != "unknown field x" || e.Stamp(schema.OK()).Warning != e.Warning {
		t.Fatalf("a: warning %q", e.Warning)
	}
	if e, _ := c.Get("ROUTE", "b"); e.Warning != "" {
		t.Fatalf("b: warning %q", e.Warning)
	}
	c.Set("ROUTE", "a", schema.Fields{"via": "1"})
	if e, _ := c.Get("ROUTE", "a"); e.Warning != "" {
		t.Fatalf("a fixed: warning %q", e.Warning)
	}
	c.Set("ROUTE", "b", schema.Fields{"x": "1"})
	c.Delete("ROUTE", "b")
	c.Set("ROUTE", "b", schema.Fields{"via": "2"})
	if e, _ := c.Get("ROUTE", "b"); e.Warning != "" || len(c.warnings) != 0 {
		t.Fatalf("b re-added: warning %q, %d tables of warnings", e.Warning, len(c.warnings))
	}
}
