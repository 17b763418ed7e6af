package engine

import (
	"context"
	"strings"
	"testing"

	"github.com/switchyard-net/switchyard/schema"
)

// The watcher keeps no map of its own (WatchOptions.Known): after a Redis
// restart that lost CONFIG_DB, the rescan still finds the keys that are
// gone — cached ones (held until CONFIG_DB_INITIALIZED is 1 again, then
// removed from the kernel) and a key that was not config (its error
// forgotten) — while a key written again stays applied.
func TestRescanFindsGoneKeysWithoutWatcherMap(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.cfg.Set(ctx, schema.KeyConfigDBInitialized, "1", 0)
	e.hset("ROUTE|a", "via", "1")
	e.hset("ROUTE|b", "via", "2")
	e.cfg.RPush(ctx, "ROUTE|bad", "x")
	e.waitResult(tRoute, "a", "ok", "")
	e.waitResult(tRoute, "b", "ok", "")
	e.waitResult(tRoute, "bad", "error", "list")

	e.srv.Restart()
	e.cfg, e.state = e.srv.Client(schema.ConfigDB), e.srv.Client(schema.StateDB)
	e.hset("ROUTE|b", "via", "2")
	e.eventually("deletions held", func() (bool, string) {
		return strings.Contains(e.logs.String(), "key gone while CONFIG_DB_INITIALIZED is not 1"), ""
	})
	e.cfg.Set(ctx, schema.KeyConfigDBInitialized, "1", 0)
	e.eventually("a removed, b applied", func() (bool, string) {
		_, a := e.ctrl.applied("ROUTE|a")
		_, b := e.ctrl.applied("ROUTE|b")
		return !a && b, ""
	})
	e.waitResult(tRoute, "b", "ok", "")
	e.eventually("the bad key forgotten", func() (bool, string) {
		return e.ctrl.h.e.res.nbad.Load() == 0, ""
	})
	e.waitNoResult(tRoute, "bad")
}
