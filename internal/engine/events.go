package engine

import (
	"context"
	"fmt"

	"github.com/sirupsen/logrus"

	"github.com/switchyard-net/switchyard/internal/redisx"
	"github.com/switchyard-net/switchyard/internal/shrink"
	"github.com/switchyard-net/switchyard/schema"
)

// events applies a batch of CONFIG_DB changes, handing the queue a
// worker's batch of items at a time.
func (e *engine) events(ctx context.Context, batch []redisx.Event) {
	for i := 0; i < len(batch); {
		if j := e.setRunEnd(batch, i); j > i+1 {
			e.setRun(batch[i:j])
			i = j
			continue
		}
		e.event(ctx, batch[i])
		if len(e.adds) >= e.cfg.MaxBatch {
			e.flushAdds()
		}
		i++
	}
}

// plainSet reports whether ev is a table key's new packed hash that is
// fine to cache (event's last case): setRun's.
func plainSet(ev *redisx.Event) bool {
	return ev.Table != "" && ev.Err == nil && !ev.Deleted && ev.Fields == nil && tooBig(*ev) == ""
}

// setRunEnd is the end of the run of plainSet events from batch[i].
func (e *engine) setRunEnd(batch []redisx.Event, i int) int {
	j := i
	for j < len(batch) && plainSet(&batch[j]) {
		j++
	}
	return j
}

// setRun is event of each of evs (plainSet events of distinct keys, a
// read batch's), their hashes cached under one lock (Cache.setPackedRun).
func (e *engine) setRun(evs []redisx.Event) {
	sets, held := e.runSets[:0], e.runHeld[:0]
	for i := range evs {
		ev := &evs[i]
		e.res.clearBad(ev.Table, ev.Key)
		held = append(held, e.cache.Held(ev.Table, ev.Key))
		sets = append(sets, packedSet{table: ev.Table, key: ev.Key, packed: ev.Packed})
	}
	if e.scratch == nil {
		e.scratch = schema.Fields{}
	}
	changed, ids := e.cache.setPackedRun(sets, e.scratch, e.runChanged[:0], e.runIDs[:0])
	for i := range evs {
		ev := &evs[i]
		if held[i] {
			// Back in CONFIG_DB (see event).
			e.res.rewrite(ev.Table, ev.Key)
		}
		if changed[i] || held[i] {
			e.enqueue(ev.Table, ev.Key, ev.Name, refOf(ids[i]))
		}
		if len(e.adds) >= e.cfg.MaxBatch {
			e.flushAdds()
		}
	}
	clear(sets) // the strings are the batch's: not kept alive here
	e.runSets, e.runHeld, e.runChanged, e.runIDs = sets[:0], held[:0], changed[:0], ids[:0]
}

// event applies one CONFIG_DB change.
func (e *engine) event(ctx context.Context, ev redisx.Event) {
	if ev.Table == "" { // CONFIG_DB_INITIALIZED
		if ev.Err == nil && e.gate.update(!ev.Deleted, ev.Value) {
			e.log.Info("CONFIG_DB_INITIALIZED is 1: what no key configures may be removed")
			e.maybeRelease()
		}
		return
	}
	// Built only when something is logged: a burst of 100k keys made
	// 2% of orchagent's CPU of log entries nobody printed.
	log := func() *logrus.Entry {
		return e.log.WithFields(logrus.Fields{"table": ev.Table, "key": schema.Clip(ev.Key)})
	}
	switch {
	case ev.Err != nil:
		e.bad(ctx, ev.Table, ev.Key, e.wrongType(ctx, ev), log())
	case !ev.Deleted && tooBig(ev) != "":
		e.bad(ctx, ev.Table, ev.Key, tooBig(ev), log())
	case ev.Deleted:
		wasBad := e.res.clearBad(ev.Table, ev.Key)
		if e.cache.Has(ev.Table, ev.Key) && e.gate.holdDelete(ctx, e.cfgDB) {
			if e.cache.hold(ev.Table, ev.Key) {
				log().Warn("key gone while CONFIG_DB_INITIALIZED is not 1: what it configured stays until it is")
			}
			return
		}
		if e.cache.Delete(ev.Table, ev.Key) || wasBad {
			e.enqueue(ev.Table, ev.Key, ev.Name, Ref{})
		}
	default:
		e.res.clearBad(ev.Table, ev.Key)
		held := e.cache.Held(ev.Table, ev.Key)
		var changed bool
		var id int32
		if ev.Fields != nil {
			changed, id = e.cache.set(ev.Table, ev.Key, ev.Fields)
		} else {
			if e.scratch == nil {
				e.scratch = schema.Fields{}
			}
			changed, id = e.cache.setPacked(ev.Table, ev.Key, ev.Packed, e.scratch)
		}
		if held {
			// Back in CONFIG_DB (reloaded after Redis came back empty):
			// its result was not written while it was held.
			e.res.rewrite(ev.Table, ev.Key)
		}
		if changed || held {
			e.enqueue(ev.Table, ev.Key, ev.Name, refOf(id))
		}
	}
}

// enqueue collects table|key's item for flushAdds (consume's goroutine).
// name is the key's whole name as the watcher read it ("" = unknown):
// the item of a KeyItems controller, not a new string per key, queued
// with ref (the key's Cache id) for a RefBatchController.
func (e *engine) enqueue(table, key, name string, ref Ref) {
	if !e.started.Load() {
		return
	}
	if e.res.keyItems && name != "" && isConfigKey(name, table, key) {
		e.adds = append(e.adds, name)
		e.addTags = append(e.addTags, ref.id)
		return
	}
	e.adds = append(e.adds, e.ctrl.Item(table, key))
	e.addTags = append(e.addTags, 0) // the item may stand for several keys
}

// flushAdds queues the items enqueue collected.
func (e *engine) flushAdds() {
	if len(e.adds) == 0 {
		return
	}
	e.q.AddAllTagged(e.adds, e.addTags)
	clear(e.adds)
	e.adds, e.addTags = e.adds[:0], e.addTags[:0]
}

// bad gives a key that is not config an error result; what it configured
// before (its last good hash in the cache) stays applied.
func (e *engine) bad(ctx context.Context, table, key, reason string, log *logrus.Entry) {
	if len(key) > MaxKeyLen {
		reason = fmt.Sprintf("key is %d bytes: at most %d", len(key), MaxKeyLen)
	}
	if e.cache.Has(table, key) {
		reason += "; the previous configuration of this key stays applied"
	}
	e.m.inc(badKeysC)
	log.WithField("reason", reason).Warn("not a valid CONFIG_DB entry")
	e.res.setBad(table, key, schema.Error(schema.ConfigKey(table, schema.Clip(key))+": "+reason))
}

// wrongType names what a key holds instead of a hash.
func (e *engine) wrongType(ctx context.Context, ev redisx.Event) string {
	typ, err := e.cfgDB.Type(ctx, schema.ConfigKey(ev.Table, ev.Key)).Result()
	if err != nil || typ == "" || typ == "none" || typ == "hash" {
		return "cannot be read as a hash: " + schema.Clip(ev.Err.Error())
	}
	return fmt.Sprintf("is a Redis %s, not a hash: write it with HSET", typ)
}

// tooBig says why a hash is too large to be config ("" when it is not).
func tooBig(ev redisx.Event) string {
	if len(ev.Key) > MaxKeyLen {
		return fmt.Sprintf("key is %d bytes: at most %d", len(ev.Key), MaxKeyLen)
	}
	if ev.Fields == nil { // packed (WatchOptions.Packed)
		if n := shrink.PackedLen(ev.Packed); n > MaxFieldsNum {
			return fmt.Sprintf("%d fields: at most %d", n, MaxFieldsNum)
		}
		for s := ev.Packed; s != ""; {
			f, v, rest, ok := shrink.Next(s)
			if !ok {
				break
			}
			if why := tooBigField(f, v); why != "" {
				return why
			}
			s = rest
		}
		return ""
	}
	if len(ev.Fields) > MaxFieldsNum {
		return fmt.Sprintf("%d fields: at most %d", len(ev.Fields), MaxFieldsNum)
	}
	for f, v := range ev.Fields {
		if why := tooBigField(f, v); why != "" {
			return why
		}
	}
	return ""
}

// tooBigField is tooBig's reason for one field ("" = fine).
func tooBigField(f, v string) string {
	if len(f) > MaxFieldLen {
		return fmt.Sprintf("field name %q is %d bytes: at most %d", schema.Clip(f), len(f), MaxFieldLen)
	}
	if len(v) > MaxValueLen {
		return fmt.Sprintf("field %q: value is %d bytes: at most %d", schema.Clip(f), len(v), MaxValueLen)
	}
	return ""
}
