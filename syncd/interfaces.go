package syncd

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"
)

// checkInterfaces reads back the INTERFACE_TABLE keys syncd should hold
// and asks for a full rewrite when one has lost its state field. Another
// daemon may remove it: orchagent's engine, at its start, adopts every
// INTERFACE_TABLE key with a "state" and removes those of no CONFIG_DB
// INTERFACE key — which includes syncd's VlanN keys (docs/syncd.md). A
// different value (orchagent's error for an invalid INTERFACE|VlanN|… key)
// is left alone: that overlap is documented, not fought over. Called from
// the loop on the counters tick, with nothing left to flush.
func (d *Daemon) checkInterfaces(ctx context.Context) {
	keys := d.view.AddrKeys()
	if len(keys) == 0 || d.view.DirtyCount() > 0 || d.inflight {
		return
	}
	cmds := make([]*redis.StringCmd, len(keys))
	_, err := d.cfg.State.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, k := range keys {
			cmds[i] = p.HGet(ctx, k, FieldInterfaceState)
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		d.log.WithError(err).Debug("read back INTERFACE_TABLE")
		return
	}
	for i, c := range cmds {
		if errors.Is(c.Err(), redis.Nil) {
			d.log.WithField("key", keys[i]).Warn("INTERFACE_TABLE key removed by another writer; rewriting the mirror")
			d.needResync = true
			return
		}
	}
}

// notOurs returns, of the stale INTERFACE_TABLE keys a resync is about to
// remove, those whose state is not "ok": syncd only ever writes "ok", so
// another value is orchagent's result of an invalid INTERFACE|VlanN|… key
// and stays. An unreadable key is kept too (removed on the next resync).
func (d *Daemon) notOurs(ctx context.Context, stale []string) map[string]bool {
	var keys []string
	for _, k := range stale {
		if t, _ := SplitStateKey(k); t == StateInterfaceTable {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return nil
	}
	cmds := make([]*redis.StringCmd, len(keys))
	d.cfg.State.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, k := range keys {
			cmds[i] = p.HGet(ctx, k, FieldInterfaceState)
		}
		return nil
	})
	out := map[string]bool{}
	for i, c := range cmds {
		if v, err := c.Result(); err == nil && v != "ok" || err != nil && !errors.Is(err, redis.Nil) {
			out[keys[i]] = true
		}
	}
	return out
}
