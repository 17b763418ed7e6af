package workqueue

import (
	"context"
	"fmt"
	"math/rand"
	"slices"
	"testing"
	"time"
)

// model is the queue's contract without its maps: the FIFO of ready keys,
// the keys handed out, the keys re-added while handed out, the backoff
// counts.
type model struct {
	ready      []string
	processing map[string]bool
	again      map[string]bool
	failures   map[string]int
	tags       map[string]int32 // of the ready keys: the tag they were queued with
}

func (m *model) add(k string, tag int32) {
	switch {
	case m.processing[k]:
		m.again[k] = true
	case !slices.Contains(m.ready, k):
		m.ready = append(m.ready, k)
		m.tags[k] = tag
	}
}

// tagsOf is the tags of keys just taken by get.
func (m *model) tagsOf(keys []string) []int32 {
	out := make([]int32, 0, len(keys))
	for _, k := range keys {
		out = append(out, m.tags[k])
		delete(m.tags, k)
	}
	return out
}

func (m *model) get(limit int) []string {
	n := min(limit, len(m.ready))
	out := slices.Clone(m.ready[:n])
	m.ready = m.ready[n:]
	for _, k := range out {
		m.processing[k] = true
	}
	return out
}

func (m *model) done(k string) {
	delete(m.processing, k)
	if m.again[k] {
		delete(m.again, k)
		m.ready = append(m.ready, k)
		m.tags[k] = 0 // re-queued by Done: no tag
	}
}

// TestBatchMatchesSingle drives GetBatch and DoneAll through random steps
// (adds, batches of gets, Done, DoneAll, Forget) against the model: the
// same keys come out in the same order, none twice at once, and DoneAll
// forgets the backoff as Forget does. Half the adds are AddAllTagged and
// half the gets GetBatchTagged: each key comes out with the tag it was
// queued with (0 when it came by Add or was re-queued by Done).
func TestBatchMatchesSingle(t *testing.T) {
	ctx := context.Background()
	for seed := int64(1); seed <= 20; seed++ {
		rng := rand.New(rand.NewSource(seed))
		// The retry delay outlasts the test: a failed key's re-add never
		// comes within it (the model has no timers).
		q := New(Options{BaseDelay: time.Hour, MaxDelay: time.Hour})
		m := &model{processing: map[string]bool{}, again: map[string]bool{}, failures: map[string]int{},
			tags: map[string]int32{}}
		var out []string // handed out, not done
		key := func() string { return fmt.Sprintf("T|k%d", rng.Intn(40)) }
		for step := 0; step < 3000; step++ {
			switch r := rng.Intn(10); {
			case r < 4:
				keys := make([]string, 1+rng.Intn(8))
				tags := make([]int32, len(keys))
				tagged := rng.Intn(2) == 0
				for i := range keys {
					keys[i] = key()
					if tagged {
						tags[i] = rng.Int31n(5)
					}
					m.add(keys[i], tags[i])
				}
				if tagged {
					q.AddAllTagged(keys, tags)
				} else {
					q.AddAll(keys)
				}
			case r < 6:
				if q.Len() == 0 {
					if len(m.ready) != 0 {
						t.Fatalf("seed %d step %d: queue empty, model has %v", seed, step, m.ready)
					}
					continue
				}
				limit := 1 + rng.Intn(10)
				var got []string
				var gotTags []int32
				ok := false
				tagged := rng.Intn(2) == 0
				if tagged {
					got, gotTags, ok = q.GetBatchTagged(ctx, nil, nil, limit)
				} else {
					got, ok = q.GetBatch(ctx, nil, limit)
				}
				want := m.get(limit)
				wantTags := m.tagsOf(want)
				if !ok || !slices.Equal(got, want) {
					t.Fatalf("seed %d step %d: GetBatch(%d) = %v, want %v", seed, step, limit, got, want)
				}
				if tagged && !slices.Equal(gotTags, wantTags) {
					t.Fatalf("seed %d step %d: GetBatchTagged(%d) tags %v, want %v (keys %v)", seed, step, limit, gotTags, wantTags, got)
				}
				out = append(out, got...)
			case r < 7 && len(out) > 0:
				i := rng.Intn(len(out))
				k := out[i]
				out = slices.Delete(out, i, i+1)
				q.AddRateLimited(k) // a failure: backoff counted, re-added in an hour
				m.failures[k]++
				q.Done(k)
				m.done(k)
			case r < 9 && len(out) > 0:
				n := 1 + rng.Intn(len(out))
				batch := slices.Clone(out[:n])
				out = out[n:]
				q.DoneAll(batch)
				for _, k := range batch {
					delete(m.failures, k)
					m.done(k)
				}
			default:
				k := key()
				q.Forget(k)
				delete(m.failures, k)
			}
			for k, n := range m.failures {
				if got := q.Retries(k); got != n {
					t.Fatalf("seed %d step %d: Retries(%s) = %d, want %d", seed, step, k, got, n)
				}
			}
		}
		q.ShutDown()
	}
}

// TestGetBatchBlocksAndShutDown: GetBatch waits for a key, and returns
// ok=false on ShutDown and on ctx's end.
func TestGetBatchBlocksAndShutDown(t *testing.T) {
	q := New(Options{})
	got := make(chan []string)
	go func() {
		keys, _ := q.GetBatch(context.Background(), nil, 10)
		got <- keys
	}()
	q.AddAll([]string{"a", "b", "a"})
	if keys := <-got; len(keys) == 0 || keys[0] != "a" {
		t.Fatalf("GetBatch = %v, want a first", keys)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for q.Len() > 0 {
		q.GetBatch(context.Background(), nil, 10)
	}
	if _, ok := q.GetBatch(ctx, nil, 10); ok {
		t.Fatal("GetBatch with a cancelled ctx: ok")
	}
	q.ShutDown()
	if _, ok := q.GetBatch(context.Background(), nil, 10); ok {
		t.Fatal("GetBatch after ShutDown: ok")
	}
}

// TestFinishedKeysLeaveDirty: keys finished by DoneAll stay in dirty only
// until the next add or a Get that finds nothing to do; a finished key
// added again is queued again.
func TestFinishedKeysLeaveDirty(t *testing.T) {
	q := New(Options{})
	defer q.ShutDown()
	keys := make([]string, 1000)
	for i := range keys {
		keys[i] = fmt.Sprintf("T|k%d", i)
	}
	q.AddAll(keys)
	got, _ := q.GetBatch(context.Background(), nil, len(keys))
	q.DoneAll(got)
	q.AddAll(keys[:1])
	if n := len(q.dirty); n != 1 || q.Len() != 1 {
		t.Fatalf("after the add: %d keys in dirty, %d queued; want 1, 1", n, q.Len())
	}
	got, _ = q.GetBatch(context.Background(), got[:0], 10)
	q.DoneAll(got)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, ok := q.GetBatch(ctx, nil, 10); ok || len(q.dirty) != 0 || len(q.stale) != 0 {
		t.Fatalf("idle Get: ok %v, %d keys in dirty, %d stale; want none", ok, len(q.dirty), len(q.stale))
	}
}
