package engine

import (
	"fmt"
	"maps"
	"math/rand"
	"reflect"
	"strconv"
	"testing"
	"unsafe"

	"github.com/switchyard-net/switchyard/internal/shrink"
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
	if unsafe.StringData(c.ents.At(c.tables["ROUTE"]["A"]).fields) != unsafe.StringData(c.ents.At(c.tables["ROUTE"]["C"]).fields) || a.Fields["nexthop"] != "10.0.0.2" {
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

// The warning of a hash is worked out once per distinct hash of a table:
// a burst of equal hashes asks warn once, an equal hash of another table
// (whose fields differ in meaning) gets that table's own warning.
func TestCacheWarnsOncePerHash(t *testing.T) {
	calls := 0
	c := NewCache(func(table string, f schema.Fields) string {
		calls++
		if table == "PORT" {
			return "unknown field nexthop"
		}
		return ""
	})
	f := schema.Fields{"nexthop": "10.0.0.2", "ifname": "Ethernet0"}
	for i := 0; i < 100; i++ {
		c.Set("ROUTE", string(rune('A'+i)), f)
	}
	c.Set("PORT", "Ethernet0", f)
	c.Set("PORT", "Ethernet4", f)
	if calls != 2 {
		t.Fatalf("warn called %d times for one hash in two tables, want 2", calls)
	}
	if e, _ := c.Get("ROUTE", "B"); e.Warning != "" || e.Gen != schema.Generation(f) {
		t.Fatalf("route: warning %q gen %s", e.Warning, e.Gen)
	}
	if e, _ := c.Get("PORT", "Ethernet4"); e.Warning != "unknown field nexthop" {
		t.Fatalf("port: warning %q", e.Warning)
	}
}

// GetInto reads what Get reads, into the map it is given (cleared first).
func TestCacheGetInto(t *testing.T) {
	c := NewCache(func(string, schema.Fields) string { return "w" })
	c.Set("ROUTE", "a", schema.Fields{"nexthop": "10.0.0.2", "ifname": "Ethernet0"})
	c.Set("ROUTE", "b", schema.Fields{"blackhole": "true"})
	into := schema.Fields{"stale": "x"}
	for _, k := range []string{"a", "b", "a"} {
		want, _ := c.Get("ROUTE", k)
		got, ok := c.GetInto("ROUTE", k, into)
		if !ok || !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: GetInto %+v, Get %+v", k, got, want)
		}
	}
	if _, ok := c.GetInto("ROUTE", "c", into); ok || len(into) != 0 {
		t.Fatalf("missing key: ok %v, map %v", ok, into)
	}
}

// BenchmarkCacheSet100k: one op is one route key of a 100k burst through
// one next hop set in the cache, with orchagent's unknown-field check:
// go test -run '^$' -bench 'Cache(Set|Get)' -benchmem ./internal/engine
func BenchmarkCacheSet100k(b *testing.B) {
	keys := routeKeys(100000)
	f := schema.Fields{"nexthop": "10.0.0.2", "ifname": "Ethernet0"}
	c := NewCache(schema.FieldsWarning)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%len(keys) == 0 && i > 0 {
			b.StopTimer()
			c = NewCache(schema.FieldsWarning)
			b.StartTimer()
		}
		c.Set(schema.TableStaticRoute, keys[i%len(keys)], f)
	}
}

// BenchmarkCacheGet100k reads route keys of a 100k cache: Get (a map per
// call) against GetInto (one map reused).
func BenchmarkCacheGet100k(b *testing.B) {
	keys := routeKeys(100000)
	c := NewCache(nil)
	for _, k := range keys {
		c.Set(schema.TableStaticRoute, k, schema.Fields{"nexthop": "10.0.0.2", "ifname": "Ethernet0"})
	}
	b.Run("Get", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if e, ok := c.Get(schema.TableStaticRoute, keys[i%len(keys)]); !ok || e.Fields["ifname"] != "Ethernet0" {
				b.Fatal("missing")
			}
		}
	})
	b.Run("GetInto", func(b *testing.B) {
		b.ReportAllocs()
		into := schema.Fields{}
		for i := 0; i < b.N; i++ {
			if e, ok := c.GetInto(schema.TableStaticRoute, keys[i%len(keys)], into); !ok || e.Fields["ifname"] != "Ethernet0" {
				b.Fatal("missing")
			}
		}
	})
	// GetIntoRef: the worker's read of a queued key, its Ref at hand.
	refs := make([]Ref, len(keys))
	for i, k := range keys {
		_, id := c.set(schema.TableStaticRoute, k, schema.Fields{"nexthop": "10.0.0.2", "ifname": "Ethernet0"})
		refs[i] = refOf(id)
	}
	b.Run("GetIntoRef", func(b *testing.B) {
		b.ReportAllocs()
		into := schema.Fields{}
		for i := 0; i < b.N; i++ {
			j := i % len(keys)
			if e, ok := c.GetIntoRef(refs[j], schema.TableStaticRoute, keys[j], into); !ok || e.Fields["ifname"] != "Ethernet0" {
				b.Fatal("missing")
			}
		}
	})
}

func routeKeys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = strconv.Itoa(20+i/65536) + "." + strconv.Itoa(i/256%256) + "." + strconv.Itoa(i%256) + ".0/24"
	}
	return keys
}

// KeysWithPrefix lists, sorted, the keys of one table that start with the
// prefix: not another table's, not a deleted one's.
func TestCacheKeysWithPrefix(t *testing.T) {
	c := NewCache(nil)
	for _, k := range []string{"Vrf_red|10.9.0.0/16", "Vrf_red|10.1.0.0/24", "Vrf_redder|10.2.0.0/16", "10.3.0.0/16", "Vrf_red|10.4.0.0/16"} {
		c.Set("STATIC_ROUTE", k, schema.Fields{"blackhole": "true"})
	}
	c.Set("VRF", "Vrf_red|x", schema.Fields{})
	c.Delete("STATIC_ROUTE", "Vrf_red|10.4.0.0/16")
	got := c.KeysWithPrefix("STATIC_ROUTE", "Vrf_red|")
	if want := []string{"Vrf_red|10.1.0.0/24", "Vrf_red|10.9.0.0/16"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("KeysWithPrefix = %v, want %v", got, want)
	}
	if got := c.KeysWithPrefix("FDB", "Vrf_red|"); len(got) != 0 {
		t.Fatalf("empty table: %v", got)
	}
}

// TestCacheRefsMatchNames drives random sets and deletes over two tables
// (ids freed and handed out again) and reads every key through
// GetIntoRef with refs that are current, stale (the key deleted, its id
// another key's since), another key's or zero: the entry is always the
// one Get finds by name, or none when the key is not cached. Deleting
// every key lets every page of entries go.
func TestCacheRefsMatchNames(t *testing.T) {
	for seed := int64(1); seed <= 10; seed++ {
		rng := rand.New(rand.NewSource(seed))
		c := NewCache(nil)
		tables := []string{"STATIC_ROUTE", "FDB"}
		var refs []Ref // every ref handed out so far
		into := schema.Fields{}
		for step := 0; step < 4000; step++ {
			table, key := tables[rng.Intn(2)], "k"+strconv.Itoa(rng.Intn(600))
			if rng.Intn(3) == 0 {
				c.Delete(table, key)
			} else {
				_, id := c.set(table, key, schema.Fields{"v": strconv.Itoa(rng.Intn(4))})
				refs = append(refs, refOf(id))
			}
			for i := 0; i < 4; i++ {
				table, key := tables[rng.Intn(2)], "k"+strconv.Itoa(rng.Intn(600))
				var ref Ref
				if rng.Intn(4) > 0 && len(refs) > 0 {
					ref = refs[rng.Intn(len(refs))]
				}
				want, wok := c.Get(table, key)
				got, ok := c.GetIntoRef(ref, table, key, into)
				if ok != wok || ok && (got.Table != table || got.Key != key || got.Gen != want.Gen ||
					got.id != want.id || !reflect.DeepEqual(got.Fields, want.Fields)) {
					t.Fatalf("seed %d step %d: GetIntoRef(%v, %s, %s) = %+v %v, want %+v %v", seed, step, ref, table, key, got, ok, want, wok)
				}
			}
		}
		for _, table := range tables {
			for _, k := range c.Keys(table) {
				c.Delete(table, k)
			}
		}
		if n := c.ents.Pages(); n != 0 {
			t.Fatalf("seed %d: %d pages of entries left with nothing cached", seed, n)
		}
	}
}

// setPacked of a hash packed by the watcher is set of its map: the same
// changed answers, ids, entries, generations and warnings, over random
// sets (hashes repeated, so the recent ones are shared, and new ones)
// and deletes of a few keys, NULL-only hashes included.
func TestSetPackedMatchesSet(t *testing.T) {
	warn := func(table string, f schema.Fields) string {
		if _, ok := f["odd"]; ok {
			return "unknown field odd"
		}
		return ""
	}
	rng := rand.New(rand.NewSource(7))
	for round := 0; round < 20; round++ {
		a, b := NewCache(warn), NewCache(warn)
		scratch := schema.Fields{"stale": "x"}
		for step := 0; step < 400; step++ {
			table := []string{"ROUTE", "PORT"}[rng.Intn(2)]
			key := fmt.Sprint("k", rng.Intn(40))
			if rng.Intn(8) == 0 {
				if a.Delete(table, key) != b.Delete(table, key) {
					t.Fatalf("delete %s|%s differs", table, key)
				}
				continue
			}
			f := schema.Fields{}
			for i := rng.Intn(4); i > 0; i-- {
				f[[]string{"nexthop", "ifname", "odd", "mtu"}[rng.Intn(4)]] = fmt.Sprint(rng.Intn(3))
			}
			packed := shrink.Pack(f)
			if rng.Intn(5) == 0 {
				f[schema.NullField] = schema.NullField // the watcher leaves it out of packed
			}
			c1, id1 := a.set(table, key, f)
			c2, id2 := b.setPacked(table, key, packed, scratch)
			e1, _ := a.Get(table, key)
			e2, _ := b.Get(table, key)
			if c1 != c2 || id1 != id2 || e1.Gen != e2.Gen || e1.Warning != e2.Warning || !maps.Equal(e1.Fields, e2.Fields) {
				t.Fatalf("round %d step %d %s|%s %v: set %v %d %+v, setPacked %v %d %+v", round, step, table, key, f, c1, id1, e1, c2, id2, e2)
			}
		}
	}
}
