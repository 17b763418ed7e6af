package impaird

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/switchyard-net/switchyard/impaird/edt"
	"github.com/switchyard-net/switchyard/internal/engine"
	"github.com/switchyard-net/switchyard/internal/redisx"
	"github.com/switchyard-net/switchyard/netlinkmgr"
	"github.com/switchyard-net/switchyard/schema"
)

// controller adapts the daemon to the engine: a work item is a port (or
// badKeysPort for keys without one).
type controller struct {
	d    *daemon
	h    *engine.Handle
	inst *edt.Installer
	nl   netlinkmgr.Kernel // link events only
}

func newController(h *engine.Handle, c Config) (*controller, error) {
	k, err := openKernel(c.NetNS)
	if err != nil {
		return nil, err
	}
	inst, err := edt.New(edt.Options{NetNS: c.NetNS, PinDir: c.BPFFS})
	if err != nil {
		k.Close()
		return nil, err
	}
	nl, err := netlinkmgr.Open(netlinkmgr.Options{NetNS: c.NetNS})
	if err != nil {
		inst.Close()
		k.Close()
		return nil, fmt.Errorf("open netlink (netns %q): %w", c.NetNS, err)
	}
	d := newDaemon(c, k)
	d.h = h
	d.edt = newEDTState(inst)
	d.counters = redisx.NewStateWriter(h.Redis.DB(schema.CountersDB),
		append(append(append([]string(nil), counterFields...), edtCounterFields...), egressCounterFields...))
	d.aclCounters = redisx.NewOwnedWriter(h.Redis.DB(schema.CountersDB), aclCounterOwnership)
	h.Cache.Index(schema.TableImpairmentFlow, flowPort)
	h.Cache.Index(schema.TableACLRule, aclRuleTable)
	registerMetrics(h.Registry, d)
	d.sch.register(h.Registry)
	return &controller{d: d, h: h, inst: inst, nl: nl}, nil
}

// flowPort indexes IMPAIRMENT_FLOW keys by port (badKeysPort: none).
func flowPort(key string) string {
	port, _, _ := strings.Cut(key, schema.ConfigSep)
	if port == "" {
		return badKeysPort
	}
	return port
}

// Tables are impaird's CONFIG_DB tables.
func (c *controller) Tables() []string {
	return []string{schema.TableImpairment, schema.TableImpairmentFlow, schema.TableImpairmentSchedule,
		schema.TableACLTable, schema.TableACLRule}
}

// Item is the port a key impairs, or for ACL keys their table's item
// (aclItem).
func (c *controller) Item(table, key string) string {
	switch table {
	case schema.TableImpairmentFlow:
		return flowPort(key)
	case schema.TableImpairmentSchedule:
		return scheduleItem(key)
	case schema.TableACLTable:
		return aclItem(key)
	case schema.TableACLRule:
		return aclItem(aclRuleTable(key))
	}
	if key == "" {
		return badKeysPort
	}
	return key
}

// Reconcile brings one port in line with the cache.
func (c *controller) Reconcile(ctx context.Context, port string) error {
	if name, ok := isScheduleItem(port); ok {
		return c.d.reconcileSchedule(ctx, name)
	}
	if table, ok := strings.CutPrefix(port, aclItemPrefix); ok {
		err := c.d.reconcileACL(ctx, table)
		// An IMPAIRMENT key spelled like the item (an invalid port name)
		// still gets its error.
		if c.h.Cache.Has(schema.TableImpairment, port) {
			if _, perr := c.d.reconcile(ctx, port); err == nil {
				err = perr
			}
		}
		return err
	}
	_, err := c.d.reconcile(ctx, port)
	return err
}

// Sweep removes pins of ports nobody configures.
func (c *controller) Sweep(ctx context.Context) error { return c.d.sweep(ctx) }

// Start watches links (a port appearing, vanishing, re-created, or its
// XDP program changed by someone else: each is a link event that
// re-queues the port — no polling), writes counters every
// CountersInterval, and rewrites them when COUNTERS_DB was emptied.
func (c *controller) Start(ctx context.Context) error {
	c.d.sch.base = ctx // schedule runners end with the daemon
	evs, err := c.nl.Watch(ctx, netlinkmgr.WatchOptions{ErrorCallback: func(err error) {
		c.h.Log.WithError(err).Warn("netlink subscription")
	}})
	if err != nil {
		return fmt.Errorf("subscribe to link events: %w", err)
	}
	c.h.Go(func(context.Context) {
		for ev := range evs {
			switch {
			case ev.Kind == netlinkmgr.EventLink && ev.Link != nil:
				if c.d.managed(ctx, ev.Link.Name) {
					c.h.Enqueue(ev.Link.Name)
				}
			case ev.Kind == netlinkmgr.EventResync:
				for _, p := range c.d.knownPorts() {
					c.h.Enqueue(p)
				}
			}
		}
	})
	c.h.Go(func(ctx context.Context) {
		t := time.NewTicker(c.d.cfg.CountersInterval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if err := c.d.writeCounters(ctx); err != nil && ctx.Err() == nil {
				c.h.Log.WithError(err).Warn("write counters")
			}
			if err := c.d.writeACLCounters(ctx); err != nil && ctx.Err() == nil {
				c.h.Log.WithError(err).Warn("write ACL counters")
			}
		}
	})
	cdb := c.h.Redis.DB(schema.CountersDB)
	c.h.Go(func(ctx context.Context) {
		redisx.NewSentinel(cdb, redisx.SentinelKey(schema.CountersDB, "impaird"), nil).Run(ctx, 500*time.Millisecond,
			func(context.Context) {
				c.d.counters.Forget()
				c.d.aclCounters.Forget()
				c.d.acl.countersLoaded.Store(false)
			},
			func(err error) { c.h.Log.WithError(err).Warn("COUNTERS_DB sentinel") })
	})
	return nil
}

// Close releases file descriptors; what is installed stays.
func (c *controller) Close() error {
	c.d.stopSchedules()
	c.d.closePorts()
	c.inst.Close()
	c.d.k.Close()
	return c.nl.Close()
}

// managed reports whether port is configured or has a program of ours.
func (d *daemon) managed(ctx context.Context, port string) bool {
	d.mu.Lock()
	_, loaded := d.ports[port]
	d.mu.Unlock()
	return loaded || d.configured(ctx, port)
}

// configured reports whether a key of port is in the cache (or, in doubt,
// in CONFIG_DB).
func (d *daemon) configured(ctx context.Context, port string) bool {
	if d.h == nil {
		return d.imp[port] != nil || len(d.flows[port]) > 0
	}
	return d.h.Cache.Has(schema.TableImpairment, port) || len(d.h.Cache.ByIndex(schema.TableImpairmentFlow, port)) > 0 ||
		d.aclBound(port) || d.h.Configured(ctx, schema.TableImpairment, port)
}

// knownPorts are the ports configured or loaded.
func (d *daemon) knownPorts() []string {
	seen := map[string]bool{}
	d.mu.Lock()
	for p := range d.ports {
		seen[p] = true
	}
	d.mu.Unlock()
	if d.h != nil {
		for _, p := range d.h.Cache.Keys(schema.TableImpairment) {
			seen[p] = true
		}
		for _, k := range d.h.Cache.Keys(schema.TableImpairmentFlow) {
			seen[flowPort(k)] = true
		}
		for _, p := range d.aclBoundPorts() {
			seen[p] = true
		}
	}
	out := make([]string, 0, len(seen))
	for p := range seen {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// refresh copies port's keys from the cache into d.imp and d.flows (the
// per-port view reconcileLocked and the EDT code read), and their entries
// for stamping results (d.mu held). Without an engine (unit tests) the
// maps are the tests' own.
func (d *daemon) refresh(port string) {
	if d.h == nil {
		return
	}
	cfgPort := port
	if port == badKeysPort {
		cfgPort = ""
	}
	if e, ok := d.h.Cache.Get(schema.TableImpairment, cfgPort); ok {
		d.imp[cfgPort] = e.Fields
		d.entries[schema.ConfigKey(schema.TableImpairment, cfgPort)] = e
	} else {
		delete(d.imp, cfgPort)
		delete(d.entries, schema.ConfigKey(schema.TableImpairment, cfgPort))
	}
	for key := range d.flows[cfgPort] {
		delete(d.entries, schema.ConfigKey(schema.TableImpairmentFlow, key))
	}
	keys := d.h.Cache.ByIndex(schema.TableImpairmentFlow, port)
	if len(keys) == 0 {
		delete(d.flows, cfgPort)
		return
	}
	flows := make(map[string]schema.Fields, len(keys))
	for _, key := range keys {
		if e, ok := d.h.Cache.Get(schema.TableImpairmentFlow, key); ok {
			flows[key] = e.Fields
			d.entries[schema.ConfigKey(schema.TableImpairmentFlow, key)] = e
		}
	}
	d.flows[cfgPort] = flows
}

// writeResults hands this port's results to the engine, stamped with the
// generation and warning of the entries they reflect. The engine removes
// results of keys no longer configured.
func (d *daemon) writeResults(ctx context.Context, port string, out *outcome) error {
	if d.h == nil {
		return nil
	}
	for rk, f := range out.results {
		table, key, ok := resultTableKey(rk)
		if !ok {
			continue
		}
		r := schema.Result{State: schema.State(f[schema.FieldState]), Reason: f[schema.FieldReason]}
		extra := schema.Fields{}
		for k, v := range f {
			if k != schema.FieldState && k != schema.FieldReason {
				extra[k] = v
			}
		}
		e, ok := d.entries[schema.ConfigKey(table, key)]
		if !ok {
			continue // gone meanwhile: its deletion is queued
		}
		d.h.SetResult(table, key, e.Stamp(r), extra)
	}
	return nil
}

// resultTableKey maps a result key of impaird's tables back to its table
// and CONFIG_DB key.
func resultTableKey(rk string) (string, string, bool) {
	for _, t := range []string{schema.TableImpairmentFlow, schema.TableImpairment} {
		if k, ok := schema.ConfigKeyOfResult(t, rk); ok {
			return t, k, true
		}
	}
	return "", "", false
}
