package engine

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/switchyard-net/switchyard/schema"
)

// TestReadRefsMatchesGetIntoRef is a differential random-step test:
// random sets (new keys, changed and equal hashes, warnings), deletes
// (ids freed and reused) and reads with right, stale, foreign and zero
// Refs; at every read step ReadRefs then Read.Into must give exactly what
// GetIntoRef gives for every item, tables other than the one asked for
// left unread.
func TestReadRefsMatchesGetIntoRef(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		c := NewCache(func(table string, f schema.Fields) string {
			if f["odd"] != "" {
				return "unknown field odd"
			}
			return ""
		})
		tables := []string{"STATIC_ROUTE", "FDB"}
		refs := map[string]Ref{} // item -> the Ref its last set gave
		var reads []Read
		for step := 0; step < 400; step++ {
			table := tables[rng.IntN(2)]
			key := fmt.Sprintf("10.%d.0.0/16", rng.IntN(40))
			item := table + schema.ConfigSep + key
			switch op := rng.IntN(10); {
			case op < 5:
				f := schema.Fields{"nexthop": fmt.Sprintf("10.0.0.%d", rng.IntN(3))}
				if rng.IntN(4) == 0 {
					f["odd"] = "1"
				}
				if rng.IntN(8) == 0 {
					f[schema.NullField] = schema.NullField
				}
				_, id := c.set(table, key, f)
				refs[item] = refOf(id)
			case op < 7:
				c.Delete(table, key) // its Ref goes stale; the id may be reused
			default:
				n := 1 + rng.IntN(12)
				items := make([]string, n)
				rs := make([]Ref, n)
				for i := range items {
					tb := tables[rng.IntN(2)]
					items[i] = tb + schema.ConfigSep + fmt.Sprintf("10.%d.0.0/16", rng.IntN(40))
					switch rng.IntN(4) {
					case 0: // zero Ref
					case 1: // somebody else's Ref
						for _, r := range refs {
							rs[i] = r
							break
						}
					default:
						rs[i] = refs[items[i]]
					}
				}
				if rng.IntN(5) == 0 {
					rs = rs[:rng.IntN(n)] // fewer Refs than items
				}
				reads = c.ReadRefs("STATIC_ROUTE", items, rs, reads)
				if len(reads) != n {
					t.Fatalf("seed %d step %d: %d reads for %d items", seed, step, len(reads), n)
				}
				for i, it := range items {
					tb, k, _ := cutItem(it)
					if tb != "STATIC_ROUTE" {
						if reads[i].Done() {
							t.Fatalf("seed %d step %d: %s read, not of the table asked for", seed, step, it)
						}
						continue
					}
					var ref Ref
					if i < len(rs) {
						ref = rs[i]
					}
					want, wok := c.GetIntoRef(ref, tb, k, schema.Fields{})
					got, gok := reads[i].Into(tb, k, schema.Fields{"stale": "x"})
					if wok != gok || fmt.Sprint(want) != fmt.Sprint(got) {
						t.Fatalf("seed %d step %d: %s (ref %v): ReadRefs gave %v %+v, GetIntoRef %v %+v", seed, step, it, ref, gok, got, wok, want)
					}
				}
			}
		}
	}
}

func cutItem(it string) (table, key string, ok bool) {
	for i := 0; i < len(it); i++ {
		if it[i] == '|' {
			return it[:i], it[i+1:], true
		}
	}
	return "", "", false
}
