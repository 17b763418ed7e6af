package engine

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchyard-net/switchyard/schema"
	"github.com/switchyard-net/switchyard/tests/testredis"
)

// trimCtrl is a fakeCtrl that counts the engine's Trim calls.
type trimCtrl struct {
	*fakeCtrl
	trims atomic.Int32
}

func (c *trimCtrl) Trim() { c.trims.Add(1) }

// TestIdleTrim: once the queue has been empty for idleTrim, the engine
// calls the controller's Trim (on the worker) — once, not again while
// nothing happens — and the results' writer lets go of its arrays; a
// burst after that is reconciled and written as before, and is followed
// by another Trim.
func TestIdleTrim(t *testing.T) {
	srv := testredis.Start(t)
	ctrl := &trimCtrl{fakeCtrl: &fakeCtrl{kernel: map[string]string{}}}
	runStarted(t, srv, "test", func(h *Handle) Controller { ctrl.h = h; return ctrl })
	cfg, state := srv.Client(schema.ConfigDB), srv.Client(schema.StateDB)
	burst := func(round int) {
		p := cfg.Pipeline()
		for i := 0; i < 3000; i++ {
			p.HSet(context.Background(), fmt.Sprintf("%s|k%d", tRoute, i), "via", fmt.Sprint(round))
		}
		if _, err := p.Exec(context.Background()); err != nil {
			t.Fatal(err)
		}
		last := fmt.Sprintf("%s_TABLE|k%d", tRoute, 2999)
		waitFor(t, "the burst's results", func() bool {
			v, _ := ctrl.applied(fmt.Sprintf("%s|k%d", tRoute, 2999))
			return v == fmt.Sprint(round) && state.HGet(context.Background(), last, "state").Val() == "ok"
		})
	}
	burst(1)
	waitFor(t, "a Trim after the burst", func() bool { return ctrl.trims.Load() >= 1 })
	n := ctrl.trims.Load()
	time.Sleep(3 * idleTrim)
	if got := ctrl.trims.Load(); got != n {
		t.Fatalf("Trim called %d more times while idle, want none", got-n)
	}
	burst(2)
	waitFor(t, "a Trim after the second burst", func() bool { return ctrl.trims.Load() > n })
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	end := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(end) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestResultsTrim: trim drops the writer's spare map and arrays, and a
// pending map that holds nothing; what is pending stays.
func TestResultsTrim(t *testing.T) {
	c := NewCache(nil)
	r := newResults(nil, nil, c, []string{"ROUTE"}, func(t, k string) string { return t + "|" + k }, nil)
	r.spare = map[string]write{}
	r.spareID, r.pendIDs, r.passIDs = make([]int32, 0, 64), make([]int32, 0, 64), make([]int32, 0, 64)
	r.trim()
	if r.spare != nil || r.spareID != nil || r.pendIDs != nil || r.passIDs != nil || r.pending == nil {
		t.Fatalf("after trim: spare %v, spareID %d, pendIDs %d, passIDs %d, pending nil %v",
			r.spare, cap(r.spareID), cap(r.pendIDs), cap(r.passIDs), r.pending == nil)
	}
	r.pending["ROUTE_TABLE|a"] = write{del: true}
	r.pendIDs = append(r.pendIDs, 7)
	r.trim()
	if len(r.pending) != 1 || len(r.pendIDs) != 1 {
		t.Fatalf("trim dropped pending writes: %d by name, %d by slot", len(r.pending), len(r.pendIDs))
	}
}
