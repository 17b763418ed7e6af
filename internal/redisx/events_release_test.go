package redisx

import (
	"context"
	"fmt"
	"maps"
	"testing"
	"time"
)

// Release: a consumer that hands every batch back gets, round after
// round, each key's exact current hash — a reused map carries no field of
// the hash it held before (rounds alternate 3 fields, 1 field, NULL only,
// 20 fields: bigger than a map kept for reuse), in arrays of released
// batches.
func TestEventBatchesReleaseReusesMaps(t *testing.T) {
	_, c := startRedis(t)
	db := c.DB(4)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := NewWatcher(db, WatchOptions{DB: 4, Tables: []string{"PORT"}})
	ch := w.EventBatches(ctx)
	const keys = 700 // more than a read batch
	hashOf := func(round, i int) map[string]string {
		h := map[string]string{}
		switch round % 4 {
		case 0:
			h["a"], h["b"], h["c"] = fmt.Sprint(round), fmt.Sprint(i), "x"
		case 1:
			h["d"] = fmt.Sprint(round)
		case 2: // NULL only: an empty hash
		case 3:
			for f := 0; f < 20; f++ {
				h[fmt.Sprint("f", f)] = fmt.Sprint(round, i)
			}
		}
		return h
	}
	for round := 0; round < 8; round++ {
		p := db.TxPipeline()
		for i := 0; i < keys; i++ {
			k := fmt.Sprintf("PORT|p%d", i)
			p.Del(ctx, k)
			h := hashOf(round, i)
			if len(h) == 0 {
				p.HSet(ctx, k, NullField, NullField)
			}
			for f, v := range h {
				p.HSet(ctx, k, f, v)
			}
		}
		if _, err := p.Exec(ctx); err != nil {
			t.Fatal(err)
		}
		ok := map[string]bool{}
		deadline := time.After(waitFor)
		for len(ok) < keys {
			select {
			case batch := <-ch:
				for _, ev := range batch {
					var i int
					if _, err := fmt.Sscanf(ev.Key, "p%d", &i); err != nil {
						t.Fatalf("key %q", ev.Key)
					}
					if ev.Name != "PORT|"+ev.Key {
						t.Fatalf("event of %q named %q", ev.Key, ev.Name)
					}
					want := hashOf(round, i)
					if ev.Deleted || ev.Err != nil || ev.Fields == nil {
						continue // the DEL before this round's HSETs, read in between
					}
					ok[ev.Key] = maps.Equal(ev.Fields, want)
					if !ok[ev.Key] {
						delete(ok, ev.Key) // an older state read before the round was whole: a later event follows
					}
				}
				w.Release(batch) // its array and maps are the next reads'
			case <-deadline:
				t.Fatalf("round %d: %d of %d keys with their current hash", round, len(ok), keys)
			}
		}
	}
}
