package orchagent

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"

	"github.com/switchyard-net/switchyard/internal/engine"
	"github.com/switchyard-net/switchyard/internal/nsfs"
	"github.com/switchyard-net/switchyard/netlinkmgr"
	"github.com/switchyard-net/switchyard/schema"
)

// Config configures the daemon (cmd/orchagent's flags).
type Config struct {
	RedisURL string
	NetNS    string
	Log      *logrus.Entry
	// Registry receives the daemon's metrics (nil = none).
	Registry prometheus.Registerer
	// Ready is called once the first scan is reconciled (systemd).
	Ready func()
	// StateDir keeps what must survive a restart but not a reboot (the
	// originals PORT_TUNING replaced); "" = DefaultStateDir.
	StateDir string
}

// netlinkRecvBuffer is large enough that a bulk load's echoes rarely
// overflow; an overflow is survived anyway (relist, re-enqueue all).
const netlinkRecvBuffer = 32 << 20

// Run is the daemon: the engine (internal/engine) with orchagent's tables
// as its controller, until ctx is done.
func Run(ctx context.Context, c Config) error {
	return engine.Run(ctx, engine.Config{
		Name: "orchagent", RedisURL: c.RedisURL, Log: c.Log, Registry: c.Registry, Ready: c.Ready,
		Warn: schema.FieldsWarning, MaxBatch: maxBatch,
	}, func(h *engine.Handle) (engine.Controller, error) { return newController(h, c.NetNS, c.StateDir) })
}

// controller adapts Orch to the engine: items are "TABLE|key".
type controller struct {
	*Orch
	h    *engine.Handle
	k    netlinkmgr.Kernel
	tune *Tuning
}

func newController(h *engine.Handle, netns, stateDir string) (*controller, error) {
	k, err := netlinkmgr.Open(netlinkmgr.Options{NetNS: netns})
	if err != nil {
		return nil, fmt.Errorf("open netlink (netns %q): %w", netns, err)
	}
	tune, err := openTuning(netns, stateDir)
	if err != nil {
		k.Close()
		return nil, err
	}
	c := &controller{h: h, k: k, tune: tune}
	c.Orch = New(Options{
		Tuning:  tune,
		Kernel:  k,
		Cache:   h.Cache,
		Results: sink{h},
		Log:     h.Log,
		Enqueue: h.Enqueue,
		ConfigExists: func(table, key string) bool {
			return h.Configured(context.Background(), table, key)
		},
	})
	return c, nil
}

// Item is the CONFIG_DB key itself.
func (c *controller) Item(table, key string) string { return schema.ConfigKey(table, key) }

// ItemsAreKeys: an item is its key, "TABLE|key" (engine.KeyItems).
func (c *controller) ItemsAreKeys() {}

// Start subscribes to netlink events before the kernel is listed (so no
// change between the two is missed) and feeds them to the view.
func (c *controller) Start(ctx context.Context) error {
	m := newNetlinkMetrics(c.h.Registry)
	// Our own route writes are noted in the view when the kernel accepts
	// them (notedRoute): their events would only be heard back, 100k of
	// them in a bulk load, so the kernel drops them (those of gateway-only
	// next hops still come: they name the link the kernel chose). The
	// same for our address creates (addrWritten notes them). The local
	// and broadcast routes the kernel makes in table local with every
	// address (two route events per address, the view does not keep
	// them: onRoute only re-checks reachability, as the address's own
	// event or addrWritten does) are dropped too, and so is the prefix
	// route each IPv4 address brings in main (addrview.go:
	// prefixRouteGoneLocked). The echoes of our batched static FDB adds
	// are dropped by the reader (fdbWritten notes each entry).
	// Events go to the view on the watcher's own goroutines (a link
	// event on its socket's reader: no hand-over per event), once Prime
	// has listed the kernel: until then they wait in the sockets, so
	// none is applied before the listing it follows.
	primed := make(chan struct{})
	kev, err := c.k.Watch(ctx, netlinkmgr.WatchOptions{RecvBuffer: netlinkRecvBuffer, OmitOwnRouteWrites: true,
		OmitOwnAddrWrites: true, OmitKernelLocalRoutes: true, OmitKernelPrefixRoutes: true, OmitOwnFdbWrites: true,
		ErrorCallback: func(err error) {
			m.errors.Inc()
			c.h.Log.WithError(err).Warn("netlink subscription")
		},
		Handler: func(ev netlinkmgr.Event) {
			<-primed
			if ev.Kind == netlinkmgr.EventResync {
				m.resyncs.Inc()
			}
			c.HandleEvent(ev)
		}})
	if err != nil {
		return fmt.Errorf("subscribe to netlink events: %w", err)
	}
	err = c.Prime()
	close(primed)
	if err != nil {
		return err
	}
	// The channel closes after the Handler's last call: the engine waits
	// for that before Run returns.
	c.h.Go(func(context.Context) {
		for range kev {
		}
	})
	return nil
}

// Close releases the netlink handle and the namespace's files.
func (c *controller) Close() error { return errors.Join(c.k.Close(), c.tune.Close()) }

// openTuning gives PORT_TUNING the files of namespace netns (nsfs) and
// of the daemon's own namespace.
func openTuning(netns, stateDir string) (*Tuning, error) {
	if stateDir == "" {
		stateDir = DefaultStateDir
	}
	fs, err := nsfs.Open(nsfs.Options{NetNS: netns})
	if err != nil {
		// Every other table works without it: PORT_TUNING keys say why.
		return &Tuning{unavailable: err}, nil
	}
	host := fs
	if netns != "" {
		host, _ = nsfs.Open(nsfs.Options{})
	}
	t, err := NewTuning(fs, host, stateDir, netns)
	if err != nil {
		fs.Close()
		return nil, err
	}
	return t, nil
}

// sink writes results through the engine.
type sink struct{ h *engine.Handle }

func (s sink) SetResult(table, key string, r schema.Result) { s.h.SetResult(table, key, r, nil) }

// SetResultOf is SetResult of e's key naming it by ck, its "TABLE|key"
// (the item reconciled): the engine keeps that string, builds none, and
// knows from e that the key is still cached.
func (s sink) SetResultOf(ck string, e engine.Entry, r schema.Result) {
	s.h.SetResultOf(ck, e, r, nil)
}
func (s sink) DeleteResult(table, key string) { s.h.DeleteResult(table, key) }

// OwnsResult: INTERFACE_TABLE|VlanN|prefix and INTERFACE_TABLE|LoopbackN|
// prefix are syncd's mirror of VLAN and loopback interface addresses
// (SONiC's reader shape; CONFIG_DB INTERFACE never names either — their
// results are VLAN_INTERFACE_TABLE's and LOOPBACK_INTERFACE_TABLE's), so a
// stale one is not orchagent's to remove.
func (c *controller) OwnsResult(table, key string) bool {
	if table != schema.TableInterface {
		return true
	}
	ifname, _, _ := strings.Cut(key, schema.ConfigSep)
	return !isVlanName(ifname) && !schema.IsLoopbackName(ifname)
}

// Tables are orchagent's CONFIG_DB tables.
func (c *controller) Tables() []string { return Tables() }

// netlinkMetrics count what the kernel event subscription survived.
type netlinkMetrics struct{ errors, resyncs prometheus.Counter }

func newNetlinkMetrics(reg prometheus.Registerer) netlinkMetrics {
	m := netlinkMetrics{
		errors: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "switchyard", Subsystem: "netlink", Name: "errors_total",
			Help: "Netlink subscription errors (receive overflow, failed resubscribe or relist)."}),
		resyncs: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "switchyard", Subsystem: "netlink", Name: "resyncs_total",
			Help: "Relists of the kernel after lost netlink events."}),
	}
	if reg != nil {
		reg.MustRegister(m.errors, m.resyncs)
	}
	return m
}
