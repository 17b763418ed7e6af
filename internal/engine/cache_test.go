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
