package trafficd

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"

	"github.com/switchyard-net/switchyard/internal/engine"
	"github.com/switchyard-net/switchyard/internal/netnsx"
	"github.com/switchyard-net/switchyard/internal/redisx"
	"github.com/switchyard-net/switchyard/internal/workqueue"
	"github.com/switchyard-net/switchyard/netlinkmgr"
	"github.com/switchyard-net/switchyard/schema"
)

// Config configures the daemon (cmd/trafficd's flags).
type Config struct {
	RedisURL string
	NetNS    string
	Log      *logrus.Entry
	// CountersInterval is how often COUNTERS_DB is written (default 1s).
	CountersInterval time.Duration
	// Registry receives the daemon's metrics (nil = none).
	Registry prometheus.Registerer
	// Ready is called once the first scan is reconciled (systemd).
	Ready func()
}

// STATE_DB fields trafficd owns besides state and reason.
const (
	FieldStatus = "status" // running or done
	FieldPath   = "path"   // xdp or packet: the transmit path in use
)

// Status values.
const (
	StatusRunning = "running"
	StatusDone    = "done"
)

// Run is the daemon: the engine (internal/engine) with TRAFFIC_GEN as its
// table. Each stream is a work item; its sender runs on an OS thread of
// its own until the key is deleted, changed, or its count/duration is
// reached. Counters go to COUNTERS_DB every CountersInterval.
func Run(ctx context.Context, c Config) error {
	if c.Log == nil {
		c.Log = logrus.NewEntry(logrus.StandardLogger())
	}
	if c.CountersInterval <= 0 {
		c.CountersInterval = time.Second
	}
	return engine.Run(ctx, engine.Config{
		Name: "trafficd", RedisURL: c.RedisURL, Log: c.Log, Registry: c.Registry, Ready: c.Ready,
		ResultFields: []string{FieldStatus, FieldPath},
		Warn:         schema.FieldsWarning,
		Queue:        workqueue.Options{BaseDelay: 50 * time.Millisecond, MaxDelay: 5 * time.Second},
	}, func(h *engine.Handle) (engine.Controller, error) { return newController(h, c) })
}

// controller adapts trafficd to the engine: a work item is a TRAFFIC_GEN
// key "port|name".
type controller struct {
	cfg      Config
	h        *engine.Handle
	nl       netlinkmgr.Kernel
	ns       *netnsx.NS // sockets are opened inside it
	counters *redisx.StateWriter

	mu      sync.Mutex
	streams map[string]*stream
	rates   map[string]rateSample // last counters sample per stream (pps/bps)
}

func newController(h *engine.Handle, c Config) (*controller, error) {
	nl, err := netlinkmgr.Open(netlinkmgr.Options{NetNS: c.NetNS})
	if err != nil {
		return nil, fmt.Errorf("open netlink (netns %q): %w", c.NetNS, err)
	}
	ns, err := netnsx.Open(c.NetNS)
	if err != nil {
		nl.Close()
		return nil, err
	}
	ctl := &controller{cfg: c, h: h, nl: nl, ns: ns, streams: map[string]*stream{}, rates: map[string]rateSample{},
		counters: redisx.NewStateWriter(h.Redis.DB(schema.CountersDB), counterFields)}
	h.Cache.Index(schema.TableTrafficGen, streamPort)
	registerMetrics(h.Registry, ctl)
	return ctl, nil
}

// streamPort indexes TRAFFIC_GEN keys by port.
func streamPort(key string) string {
	port, _, _ := strings.Cut(key, schema.ConfigSep)
	return port
}

// Tables are trafficd's CONFIG_DB tables.
func (c *controller) Tables() []string { return []string{schema.TableTrafficGen} }

// Item is the key itself: every stream reconciles on its own.
func (c *controller) Item(_, key string) string { return key }

// Start watches links (a port appearing, going up or re-created re-queues
// its streams), writes counters every CountersInterval and rewrites them
// when COUNTERS_DB was emptied.
func (c *controller) Start(ctx context.Context) error {
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
				for _, k := range c.h.Cache.ByIndex(schema.TableTrafficGen, ev.Link.Name) {
					c.h.Enqueue(k)
				}
			case ev.Kind == netlinkmgr.EventResync:
				for _, k := range c.h.Cache.Keys(schema.TableTrafficGen) {
					c.h.Enqueue(k)
				}
			}
		}
	})
	c.h.Go(func(ctx context.Context) {
		t := time.NewTicker(c.cfg.CountersInterval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if err := c.writeCounters(ctx); err != nil && ctx.Err() == nil {
				c.h.Log.WithError(err).Warn("write counters")
			}
		}
	})
	cdb := c.h.Redis.DB(schema.CountersDB)
	c.h.Go(func(ctx context.Context) {
		redisx.NewSentinel(cdb, redisx.SentinelKey(schema.CountersDB, "trafficd"), nil).Run(ctx, 500*time.Millisecond,
			func(context.Context) { c.counters.Forget() },
			func(err error) { c.h.Log.WithError(err).Warn("COUNTERS_DB sentinel") })
	})
	return nil
}

// Reconcile makes stream key match the cache: started, restarted with new
// fields, or stopped.
func (c *controller) Reconcile(ctx context.Context, key string) error {
	e, ok := c.h.Cache.Get(schema.TableTrafficGen, key)
	if !ok {
		c.stopStream(key)
		return c.counters.Delete(ctx, schema.CountersKey(schema.TrafficGenCountersTable, key))
	}
	result := func(r schema.Result, status, path string) {
		extra := schema.Fields{}
		if status != "" {
			extra[FieldStatus] = status
		}
		if path != "" {
			extra[FieldPath] = path
		}
		c.h.SetResult(schema.TableTrafficGen, key, e.Stamp(r), extra)
	}
	g, err := schema.ParseTrafficGen(key, e.Fields)
	c.mu.Lock()
	s := c.streams[key]
	c.mu.Unlock()
	if err != nil {
		// Bad input changes nothing: a stream of the last good fields
		// keeps running.
		reason := err.Error()
		if s != nil {
			if running, _, _ := s.state(); running {
				reason += " (the stream of the previous fields keeps running)"
			}
		}
		result(schema.Error(reason), "", "")
		return nil
	}
	if s != nil && s.gen == e.Gen {
		running, finished, serr := s.state()
		switch {
		case running:
			// A link event: a port that went down, vanished or was made
			// again stops the stream (frames would vanish uncounted); it
			// resumes from its counters when the port is back.
			l, lerr := c.nl.Links().Get(g.Port)
			if lerr != nil && !errors.Is(lerr, netlinkmgr.ErrNotFound) {
				return fmt.Errorf("look up %s: %w", g.Port, lerr)
			}
			if why := portProblem(g.Port, l, lerr); why != "" || l.Index != s.ifindex {
				c.stopStream(key)
				c.storeProgress(ctx, key, e.Gen, s.snapshot())
				if why != "" {
					result(schema.Pending(why), "", "")
					return nil
				}
				return c.start(ctx, key, e.Gen, g, result) // re-created: bind the new netdev
			}
			result(schema.OK(), StatusRunning, s.snd.path())
			return nil
		case finished:
			result(schema.OK(), StatusDone, s.snd.path())
			return nil
		case serr != nil:
			// The sender failed (port gone, down): report it; the link
			// event that repairs the port re-queues us, and a retry
			// resumes where it stopped.
			c.h.Log.WithError(serr).WithField("stream", key).Warn("stream stopped")
			c.stopStream(key)
			c.storeProgress(ctx, key, e.Gen, s.snapshot())
			result(schema.Error(fmt.Sprintf("send on %s: %v", g.Port, serr)), "", s.snd.path())
			return engine.Requeue(2 * time.Second)
		}
	}
	if s != nil {
		c.stopStream(key)
		if err := c.counters.Delete(ctx, schema.CountersKey(schema.TrafficGenCountersTable, key)); err != nil {
			return err
		}
	}
	return c.start(ctx, key, e.Gen, g, result)
}

// start opens the sender and runs the stream, resuming the progress
// COUNTERS_DB holds for this generation (a restart of trafficd).
func (c *controller) start(ctx context.Context, key, gen string, g schema.TrafficGen, result func(schema.Result, string, string)) error {
	l, err := c.nl.Links().Get(g.Port)
	if err != nil && !errors.Is(err, netlinkmgr.ErrNotFound) {
		return fmt.Errorf("look up %s: %w", g.Port, err)
	}
	if why := portProblem(g.Port, l, err); why != "" {
		result(schema.Pending(why), "", "")
		return nil
	}
	if l.MTU != nil {
		l3 := g.Size.Max - 14 - schema.FCSLen
		if g.VLAN != 0 {
			l3 -= 4
		}
		if l3 > *l.MTU {
			result(schema.Error(fmt.Sprintf("%s: field %q: frames of %d bytes carry %d bytes of IP, more than the MTU %d of %s",
				schema.ConfigKey(schema.TableTrafficGen, key), schema.FieldTrafficSize, g.Size.Max, l3, *l.MTU, g.Port)), "", "")
			return nil
		}
	}
	base, err := c.loadProgress(ctx, key, gen)
	if err != nil {
		return err
	}
	pool := buildFrames(g, l.MAC)
	snd, note, err := c.openSender(g.Path, l.Index, pool)
	if errors.Is(err, unix.EBUSY) {
		// Every queue has an AF_XDP socket (another stream's): this one
		// starts when a stream of the port ends. The kernel frees a
		// closed socket's queue a little later (deferred work), so look
		// again each second rather than only at the other's exit.
		result(schema.Pending(fmt.Sprintf("waiting for a free AF_XDP queue on %s: %v", g.Port, err)), "", "")
		return engine.Requeue(time.Second)
	}
	if err != nil {
		result(schema.Error(fmt.Sprintf("%s: open the %s path on %s: %v",
			schema.ConfigKey(schema.TableTrafficGen, key), g.Path, g.Port, err)), "", "")
		return nil
	}
	log := c.h.Log.WithFields(logrus.Fields{"stream": key, "path": snd.path()})
	if note != "" {
		log = log.WithField("fallback", note)
	}
	s := newStream(key, gen, g, pool, snd, base)
	s.ifindex = l.Index
	c.mu.Lock()
	c.streams[key] = s
	// The first counters sample measures pps/bps from the start.
	c.rates[key] = rateSample{at: time.Now(), packets: base.Packets, bytes: base.Bytes}
	c.mu.Unlock()
	// When a stream ends, its port's streams look again (one waiting
	// for the AF_XDP queue this one held starts).
	go s.run(func() {
		c.h.Enqueue(key)
		for _, k := range c.h.Cache.ByIndex(schema.TableTrafficGen, g.Port) {
			c.h.Enqueue(k)
		}
	})
	log.WithField("rate", schema.FormatTrafficRate(g.Rate, g.RateBits)).Info("stream started")
	result(schema.OK(), StatusRunning, snd.path())
	return nil
}

// portProblem says why frames cannot leave port now ("" = they can): it
// does not exist (err is ErrNotFound), is admin down, or has no link (a
// veth whose peer is down: the kernel would drop every frame).
func portProblem(port string, l netlinkmgr.LinkInfo, err error) string {
	switch {
	case err != nil:
		return fmt.Sprintf("port %s does not exist", port)
	case l.AdminUp != nil && !*l.AdminUp:
		return fmt.Sprintf("port %s is admin down", port)
	case !l.OperUp:
		return fmt.Sprintf("port %s has no link (oper %s)", port, l.OperState)
	}
	return ""
}

// openSender opens path's sender inside the namespace; auto tries AF_XDP
// and falls back to the packet socket (note says why).
func (c *controller) openSender(path schema.TrafficPath, ifindex int, pool [][]byte) (snd sender, note string, err error) {
	err = c.ns.Do(func() error {
		if path == schema.PathXDP || path == schema.PathAuto {
			x, xerr := openXDP(ifindex, pool)
			if xerr == nil {
				snd = x
				return nil
			}
			if path == schema.PathXDP {
				return xerr
			}
			note = "AF_XDP: " + xerr.Error()
		}
		p, perr := openPacket(ifindex, pool)
		if perr != nil {
			return perr
		}
		snd = p
		return nil
	})
	return snd, note, err
}

// stopStream stops key's stream, if any, and forgets it.
func (c *controller) stopStream(key string) {
	c.mu.Lock()
	s := c.streams[key]
	delete(c.streams, key)
	delete(c.rates, key)
	c.mu.Unlock()
	if s != nil {
		s.stop()
	}
}

// Sweep removes counters of streams nobody configures (deleted while
// trafficd was down).
func (c *controller) Sweep(ctx context.Context) error {
	cdb := c.h.Redis.DB(schema.CountersDB)
	prefix := schema.TrafficGenCountersTable + schema.CountersSep
	var stale []string
	iter := cdb.Scan(ctx, 0, prefix+"*", 1000).Iterator()
	for iter.Next(ctx) {
		key := strings.TrimPrefix(iter.Val(), prefix)
		if !c.h.Configured(ctx, schema.TableTrafficGen, key) {
			stale = append(stale, iter.Val())
		}
	}
	if err := iter.Err(); err != nil {
		return fmt.Errorf("scan %s*: %w", prefix, err)
	}
	sort.Strings(stale)
	for _, k := range stale {
		if err := cdb.Del(ctx, k).Err(); err != nil {
			return fmt.Errorf("delete stale counters %s: %w", k, err)
		}
	}
	return nil
}

// Close stops every stream (the last counters are written, so a restart
// resumes from them) and releases the netlink handle.
func (c *controller) Close() error {
	c.mu.Lock()
	streams := make([]*stream, 0, len(c.streams))
	for _, s := range c.streams {
		streams = append(streams, s)
	}
	c.mu.Unlock()
	for _, s := range streams {
		s.stopping.Store(true)
	}
	for _, s := range streams {
		<-s.done
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := c.writeCounters(ctx); err != nil {
		c.cfg.Log.WithError(err).Warn("write final counters")
	}
	c.ns.Close()
	return c.nl.Close()
}
