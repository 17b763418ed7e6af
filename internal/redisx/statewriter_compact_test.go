package redisx

import (
	"context"
	"fmt"
	"math/rand"
	"reflect"
	"testing"
)

// A compact writer leaves Redis exactly as a plain one does, over a random
// sequence of Sets (fields added, changed, dropped), Deletes, Forgets and
// Loads, with another writer's field in the same hashes; an unchanged Set
// sends nothing.
func TestStateWriterCompactMatchesPlain(t *testing.T) {
	_, c := startRedis(t)
	ctx := context.Background()
	owned := []string{"state", "reason", "warning", "generation"}
	plainDB, compactDB := c.DB(6), c.DB(7)
	plain := NewStateWriter(plainDB, owned)
	compact := NewStateWriter(compactDB, owned)
	compact.Compact()
	keys := []string{"R_TABLE|a", "R_TABLE|b", "R_TABLE|c"}
	for _, k := range keys { // another owner's field, never touched
		plainDB.HSet(ctx, k, "oper", "up")
		compactDB.HSet(ctx, k, "oper", "up")
	}
	rng := rand.New(rand.NewSource(1))
	randFields := func() map[string]string {
		f := map[string]string{}
		for _, n := range owned {
			if rng.Intn(2) == 0 {
				f[n] = fmt.Sprint(rng.Intn(3))
			}
		}
		return f
	}
	for step := 0; step < 400; step++ {
		k := keys[rng.Intn(len(keys))]
		var what string
		switch n := rng.Intn(20); {
		case n == 0:
			what = "forget"
			plain.Forget()
			compact.Forget()
		case n == 1:
			what = "load"
			if err := plain.Load(ctx, "R_TABLE|*"); err != nil {
				t.Fatal(err)
			}
			if err := compact.Load(ctx, "R_TABLE|*"); err != nil {
				t.Fatal(err)
			}
		case n < 5:
			what = "delete " + k
			if err := plain.Delete(ctx, k); err != nil {
				t.Fatal(err)
			}
			if err := compact.Delete(ctx, k); err != nil {
				t.Fatal(err)
			}
		default:
			f := randFields()
			what = fmt.Sprintf("set %s %v", k, f)
			if err := plain.Set(ctx, k, f); err != nil {
				t.Fatal(err)
			}
			if err := compact.Set(ctx, k, f); err != nil {
				t.Fatal(err)
			}
			before := compact.Commands()
			if err := compact.Set(ctx, k, f); err != nil {
				t.Fatal(err)
			}
			if len(f) > 0 && compact.Commands() != before { // an empty one is forgotten at once (both writers)
				t.Fatalf("step %d %s: an unchanged Set sent commands", step, what)
			}
		}
		for _, k := range keys {
			p, _ := plainDB.HGetAll(ctx, k).Result()
			q, _ := compactDB.HGetAll(ctx, k).Result()
			if !reflect.DeepEqual(p, q) {
				t.Fatalf("step %d %s: %s is %v, plain writer made %v", step, what, k, q, p)
			}
		}
		if pk, ck := plain.Keys(), compact.Keys(); !reflect.DeepEqual(pk, ck) {
			t.Fatalf("step %d %s: Keys %v, plain %v", step, what, ck, pk)
		}
	}
}
