package orchagent

import (
	"context"
	"errors"
	"strings"
	"sync"

	"github.com/sirupsen/logrus"
	"github.com/switchyard-net/switchyard/internal/engine"
	"github.com/switchyard-net/switchyard/internal/shrink"
	"github.com/switchyard-net/switchyard/netlinkmgr"
	"github.com/switchyard-net/switchyard/schema"
)

// BridgeName is the one VLAN-filtering bridge orchagent creates and owns.
const BridgeName = "Bridge"

// ResultSink receives the outcome of each CONFIG_DB key. The daemon's
// implementation is the engine's result writer (engine.Handle).
type ResultSink interface {
	SetResult(table, key string, r schema.Result)
	DeleteResult(table, key string)
}

// keyedSink is a ResultSink that takes the key's "TABLE|key" string too
// (the daemon's: the engine keeps that string instead of building one).
type keyedSink interface {
	SetResultOf(ck string, e engine.Entry, r schema.Result)
}

// Options configures an Orch.
type Options struct {
	Kernel netlinkmgr.Kernel
	// Cache is the desired state (the engine's); nil = a private one fed
	// by SetConfig/DeleteConfig (unit tests).
	Cache *engine.Cache
	// Results receives outcomes; nil keeps them in memory only (Result).
	Results ResultSink
	// Log receives one line per kernel change; nil discards.
	Log *logrus.Entry
	// Enqueue re-queues a key ("TABLE|key") whose inputs changed; nil
	// collects them for Drain (unit tests drive the loop by hand).
	Enqueue func(key string)
	// ConfigExists is asked, before the sweep deletes an object, whether a
	// config key still names it (the engine asks Redis too, so an event
	// not yet consumed can never cause a delete); nil trusts the cache.
	ConfigExists func(table, key string) bool
	// Tuning gives PORT_TUNING its kernel files; nil = PORT_TUNING keys
	// are errors saying tuning is not available.
	Tuning *Tuning
}

// Orch is the reconciler: the config cache, the kernel view, the
// dependency index and the last result of every key. Reconcile must not
// run concurrently for the same key (the workqueue guarantees it); the
// daemon runs one worker, since rtnetlink serialises writes anyway.
type Orch struct {
	k      netlinkmgr.Kernel
	log    *logrus.Entry
	sink   ResultSink
	enq    func(string)
	exists func(table, key string) bool

	cfg  *engine.Cache
	tune *Tuning
	idx  *refIndex
	view *kernelView

	handlers map[string]tableHandler

	mu sync.Mutex
	// results holds the last outcome of each key other keys may wait on
	// and every outcome that is not ok; an ok result of a leaf key
	// (leafKey: nothing waits on it) is not kept — the engine holds it —
	// so 100k routes cost no second copy here.
	results     map[string]schema.Result
	resultsPeak int // high-water mark of results (shrink)
	// rtables is the tables each VRF applied routes in, so the delete of
	// a route key finds its route when the VRF device is already gone:
	// per VRF (a table or two), not per route key.
	rtables map[string][]int
	// vxdevs is the vxlan device each VXLAN_TUNNEL_MAP key last made.
	vxdevs map[string]string
	// vxremotes is the vxlan device each VXLAN_REMOTE_VNI key last put its
	// remote on.
	vxremotes map[string]string
	queued    []string // Enqueue == nil: keys for Drain

	// batch, while ReconcileBatch runs, collects the route, address, FDB
	// or bridge VLAN writes of consecutive keys of one table to send
	// together (batch.go); nil = every write goes out at once (Reconcile).
	batch *writeBatch
	spare *writeBatch // the last batch, emptied, for the next
	// reads are a ReconcileBatch pass's route entries, read ahead under
	// one lock of the cache (engine.Cache.ReadRefs), emptied after it
	reads []engine.Read

	// linkRes interns resLink names for route keys: 100k routes via one
	// port share one "link:PORT" string.
	linkRes resNames

	// lag: PortChannel keys' pass and expected echoes (pcecho.go).
	lag lagState
	// fdbRefs: FDB keys' dependencies per VLAN member (fdb.go).
	fdbRefs fdbRefCache
}

// resNames interns the resource names of links.
type resNames struct {
	mu sync.Mutex
	m  map[string][]string // name → []string{resLink(name)}, len = cap = 1
}

// maxResNames bounds resNames: names past it (config naming that many
// links, mostly ones that do not exist) are built each time instead.
const maxResNames = 4096

// of is resLink(name), interned.
func (n *resNames) of(name string) string { return n.one(name)[0] }

// one is []string{resLink(name)}, interned: the refs of a route through
// one link, shared by every such route (no slice per route). Never
// written to: its capacity is its length, so an append copies.
func (n *resNames) one(name string) []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	if r, ok := n.m[name]; ok {
		return r
	}
	r := []string{resLink(name)}
	if len(n.m) < maxResNames {
		if n.m == nil {
			n.m = map[string][]string{}
		}
		n.m[name] = r
	}
	return r
}

// tableHandler applies a present key or removes what a deleted key owned.
type tableHandler struct {
	apply  func(key string, f schema.Fields) outcome
	remove func(key string) outcome
}

// outcome is one reconcile's result, the resources the key depends on
// (whose events re-enqueue it), and a transient error to retry.
type outcome struct {
	res  schema.Result
	refs []string
	err  error
	// deferred: the kernel write waits in Orch.batch; the key is finished
	// when the batch is sent.
	deferred bool
	// ent is the config version the result is of (set by Reconcile and
	// finishDeferred; the engine's sink takes it with the result).
	ent engine.Entry
}

func okOut(refs []string) outcome { return outcome{res: schema.OK(), refs: refs} }
func pendingOut(reason string, refs []string) outcome {
	return outcome{res: schema.Pending(reason), refs: refs}
}
func errorOut(err error, refs []string) outcome {
	return outcome{res: schema.Error(err.Error()), refs: refs}
}

// kernelOut turns a failed kernel call into an outcome: a missing kernel
// feature is terminal (the kernel will not grow it), anything else is
// retried with backoff while its reason is shown.
func kernelOut(err error, refs []string) outcome {
	if _, ok := netlinkmgr.MissingFeature(err); ok {
		return errorOut(err, refs)
	}
	return outcome{res: schema.Error(err.Error()), refs: refs, err: err}
}

// New returns an Orch over opts.Kernel. Call Prime before the first
// Reconcile so the kernel view holds what the kernel already has.
func New(opts Options) *Orch {
	o := &Orch{
		k:         opts.Kernel,
		log:       opts.Log,
		sink:      opts.Results,
		enq:       opts.Enqueue,
		exists:    opts.ConfigExists,
		cfg:       opts.Cache,
		tune:      opts.Tuning,
		idx:       newRefIndex(),
		view:      newKernelView(),
		results:   map[string]schema.Result{},
		rtables:   map[string][]int{},
		vxdevs:    map[string]string{},
		vxremotes: map[string]string{},
	}
	if o.cfg == nil {
		o.cfg = engine.NewCache(nil)
	}
	o.cfg.Index(schema.TableVlanMember, memberPort)
	if o.log == nil {
		l := logrus.New()
		l.SetOutput(discard{})
		o.log = logrus.NewEntry(l)
	}
	o.handlers = map[string]tableHandler{
		schema.TablePort:              {o.applyPort, o.removePort},
		schema.TablePortTuning:        {o.applyTuning, o.removeTuning},
		schema.TableVlan:              {o.applyVlan, o.removeVlan},
		schema.TableVlanMember:        {o.applyMember, o.removeMember},
		schema.TableInterface:         {o.intfApplier(schema.TableInterface), o.intfRemover(schema.TableInterface)},
		schema.TableVlanInterface:     {o.intfApplier(schema.TableVlanInterface), o.intfRemover(schema.TableVlanInterface)},
		schema.TableLoopback:          {o.intfApplier(schema.TableLoopback), o.intfRemover(schema.TableLoopback)},
		schema.TableVRF:               {o.applyVrf, o.removeVrf},
		schema.TablePortChannel:       {o.applyPortChannel, o.removePortChannel},
		schema.TablePortChannelMember: {o.applyPcMember, o.removePcMember},
		schema.TablePortChannelInterface: {o.intfApplier(schema.TablePortChannelInterface),
			o.intfRemover(schema.TablePortChannelInterface)},
		schema.TableVxlanTunnel:    {o.applyVxlanTunnel, o.removeVxlanTunnel},
		schema.TableVxlanTunnelMap: {o.applyVxlanMap, o.removeVxlanMap},
		schema.TableVxlanRemoteVNI: {o.applyVxlanRemote, o.removeVxlanRemote},
		schema.TableStaticRoute:    {o.applyRoute, o.removeRoute},
		schema.TableFDB:            {o.applyFdb, o.removeFdb},
	}
	return o
}

type discard struct{}

func (discard) Write(b []byte) (int, error) { return len(b), nil }

// Tables lists the CONFIG_DB tables orchagent reconciles.
func Tables() []string {
	return []string{schema.TablePort, schema.TablePortTuning, schema.TableVRF, schema.TablePortChannel, schema.TablePortChannelMember,
		schema.TableVlan, schema.TableVlanMember, schema.TableInterface, schema.TableVlanInterface,
		schema.TablePortChannelInterface, schema.TableLoopback, schema.TableVxlanTunnel, schema.TableVxlanTunnelMap,
		schema.TableVxlanRemoteVNI, schema.TableStaticRoute, schema.TableFDB}
}

// SetConfig records the current hash of CONFIG_DB key table|key and
// enqueues it.
func (o *Orch) SetConfig(table, key string, f schema.Fields) {
	if _, ok := o.handlers[table]; !ok {
		return
	}
	o.cfg.Set(table, key, f)
	o.enqueue(schema.ConfigKey(table, key))
}

// DeleteConfig records that table|key is gone and enqueues it.
func (o *Orch) DeleteConfig(table, key string) {
	if _, ok := o.handlers[table]; !ok {
		return
	}
	o.cfg.Delete(table, key)
	o.enqueue(schema.ConfigKey(table, key))
}

// ConfigKeys returns every configured key as "TABLE|key", in table
// dependency order.
func (o *Orch) ConfigKeys() []string {
	var out []string
	for _, t := range Tables() {
		for _, k := range o.cfg.Keys(t) {
			out = append(out, schema.ConfigKey(t, k))
		}
	}
	return out
}

// config returns the current hash of table|key.
func (o *Orch) config(table, key string) (schema.Fields, bool) {
	e, ok := o.cfg.Get(table, key)
	return e.Fields, ok
}

// memberPort indexes VLAN_MEMBER keys ("Vlan100|Ethernet0") by port.
func memberPort(key string) string {
	_, port, _ := strings.Cut(key, schema.ConfigSep)
	return port
}

// leafKey reports whether no key ever waits on table|key (resultOK is
// never asked about it): routes, FDB entries, remote VNIs and interface
// addresses. Its ok result is not kept in Orch.results. (A bare interface
// key is not a leaf: its addresses wait for its VRF binding.)
func leafKey(table, key string) bool {
	switch table {
	case schema.TableStaticRoute, schema.TableFDB, schema.TableVxlanRemoteVNI:
		return true
	case schema.TableInterface, schema.TableVlanInterface, schema.TableLoopback, schema.TablePortChannelInterface:
		return strings.Contains(key, schema.ConfigSep)
	}
	return false
}

// Result returns the last outcome of "TABLE|key" (for a key of a
// leafKey only a result that is not ok).
func (o *Orch) Result(key string) (schema.Result, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	r, ok := o.results[key]
	return r, ok
}

func (o *Orch) resultOK(key string) bool {
	r, ok := o.Result(key)
	return ok && r.State == schema.StateOK
}

// Drain returns and clears the keys enqueued since the last Drain (only
// when Options.Enqueue is nil).
func (o *Orch) Drain() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	q := o.queued
	o.queued = nil
	return q
}

func (o *Orch) enqueue(key string) {
	if o.laterInPass(key) { // pcecho.go
		return
	}
	if o.enq != nil {
		o.enq(key)
		return
	}
	o.mu.Lock()
	o.queued = append(o.queued, key)
	o.mu.Unlock()
}

// enqueueRefs enqueues every key that depends on one of resources.
func (o *Orch) enqueueRefs(resources ...string) {
	var vrfs vrfTables
	for _, r := range resources {
		for _, k := range o.idx.keys(r) {
			o.enqueue(k)
		}
		o.enqueueRouteKeys(r)
		o.enqueueVrfRouteKeys(r, &vrfs)
		o.enqueueFdbKeys(r)  // fdb.go
		o.enqueueAddrKeys(r) // intf.go
	}
}

// enqueueRouteKeys enqueues the configured STATIC_ROUTE keys of a main
// table route resource ("route:P": keys P and default|P), which are not
// in the index (applyRoute). A VRF table's resource ("route:T:P") may
// read as a main table's IPv6 one: that enqueues a key for nothing at
// worst.
func (o *Orch) enqueueRouteKeys(res string) {
	p, ok := strings.CutPrefix(res, "route:")
	if !ok {
		return
	}
	if o.cfg.Has(schema.TableStaticRoute, p) {
		o.enqueue(schema.ConfigKey(schema.TableStaticRoute, p))
	}
	if k := schema.DefaultVRF + schema.ConfigSep + p; o.cfg.Has(schema.TableStaticRoute, k) {
		o.enqueue(schema.ConfigKey(schema.TableStaticRoute, k))
	}
}

// Reconcile makes the kernel match the current config of key
// ("TABLE|key") and records the outcome. It returns an error only for
// transient failures, which the caller retries with backoff; invalid input
// and missing kernel features are terminal (reported, not retried).
func (o *Orch) Reconcile(ctx context.Context, key string) error {
	table, k, found := strings.Cut(key, schema.ConfigSep)
	h, ok := o.handlers[table]
	if !found || !ok {
		return nil
	}
	var ent engine.Entry
	var present, isPacked bool
	var packed string
	if o.batch != nil && readsAhead[table] {
		// ReconcileBatch (never concurrent): the route's (address's)
		// hash read ahead; a route's parsed off the cache's packed
		// string, an address's in the batch's map, reused key after key
		// (applyRoute and intfApplier keep none of it but its strings).
		if o.batch.fields == nil {
			o.batch.fields = schema.Fields{}
		}
		switch {
		case o.batch.read != nil && o.batch.read.Done() && table == schema.TableStaticRoute:
			ent, packed, present = o.batch.read.Packed(table, k)
			isPacked = present
		case o.batch.read != nil && o.batch.read.Done():
			ent, present = o.batch.read.Into(table, k, o.batch.fields)
		default:
			ent, present = o.cfg.GetIntoRef(o.batch.ref, table, k, o.batch.fields)
		}
	} else {
		ent, present = o.cfg.Get(table, k)
	}
	gen := o.view.gen.Load()
	if o.batch != nil {
		stamp := ent
		stamp.Fields = nil // finishDeferred stamps with Gen and Warning only
		o.batch.cur = deferred{pos: o.batch.pos, table: table, key: k, full: key, ent: stamp, gen: gen}
	}
	var out outcome
	switch {
	case isPacked:
		out = o.applyRoutePacked(k, packed)
	case present:
		out = h.apply(k, ent.Fields)
	default:
		out = h.remove(k)
	}
	if out.deferred {
		return nil // finished by flushBatch
	}
	own := out.res.Warning // the controller's (PORT_TUNING's IRQs)
	out.res = ent.Stamp(out.res)
	out.ent = ent
	out.res.Warning = joinWarnings(out.res.Warning, own)
	o.finish(key, table, k, present, out, gen)
	return out.err
}

// finish registers the key's dependencies and records its outcome.
func (o *Orch) finish(key, table, k string, present bool, out outcome, gen uint64) {
	if present || out.err != nil {
		o.idx.set(key, out.refs)
	} else {
		o.idx.drop(key)
	}
	o.record(key, table, k, present, out)
	if out.res.State != schema.StateOK && o.view.gen.Load() != gen {
		// An event changed the view while this key was deciding to wait,
		// possibly before its dependencies were registered above: look
		// again rather than miss the wake-up.
		o.enqueue(key)
	}
}

// record stores and reports the outcome; a changed outcome re-enqueues the
// keys that wait on this one (members on their VLAN, FDB on members...).
func (o *Orch) record(ck, table, key string, present bool, out outcome) {
	o.mu.Lock()
	old, had := o.results[ck]
	changed := false
	switch {
	case present && out.res.State == schema.StateOK && leafKey(table, key):
		// Not kept (see results): always handed on, the engine drops
		// an unchanged result.
		changed = true
		if had {
			delete(o.results, ck)
			o.results = shrink.Map(o.results, &o.resultsPeak)
		}
	case present:
		changed = !had || old != out.res
		o.results[ck] = out.res
		shrink.Grew(o.results, &o.resultsPeak)
	case out.err == nil:
		changed = had || leafKey(table, key) // a leaf's ok result was not kept
		delete(o.results, ck)
		o.results = shrink.Map(o.results, &o.resultsPeak)
	}
	o.mu.Unlock()
	if !changed {
		return
	}
	if o.sink != nil {
		if ks, ok := o.sink.(keyedSink); ok && present && out.ent.Table == table && out.ent.Key == key {
			ks.SetResultOf(ck, out.ent, out.res)
		} else if present {
			o.sink.SetResult(table, key, out.res)
		} else {
			o.sink.DeleteResult(table, key)
		}
	}
	// An ok result or a removal is logged at debug level only: no log
	// entry is built for them otherwise (one per route in a burst).
	quiet := !present || out.res.State == schema.StateOK
	if !o.log.Logger.IsLevelEnabled(logrus.InfoLevel) || (quiet && !o.log.Logger.IsLevelEnabled(logrus.DebugLevel)) {
		o.resultChanged(table, key, ck)
		return
	}
	e := o.log.WithFields(logrus.Fields{"table": table, "key": key})
	switch {
	case !present:
		e.Debug("config removed")
	case out.res.State == schema.StateOK:
		e.WithField("state", "ok").Debug("result")
	default:
		e.WithFields(logrus.Fields{"state": out.res.State, "reason": out.res.Reason}).Info("result")
	}
	o.resultChanged(table, key, ck)
}

// resultChanged re-enqueues the keys waiting on ck, whose result changed:
// none for a leaf key (leafKey), which is not looked up.
func (o *Orch) resultChanged(table, key, ck string) {
	if !leafKey(table, key) {
		o.enqueueRefs(ck)
	}
}

// act runs one kernel change and logs it with table, key, action and
// outcome: the daemon's audit trail.
func (o *Orch) act(table, key, action string, f func() error) error {
	// Writes deferred before this one go first: the kernel sees every
	// write in the order a key-by-key reconcile would make it.
	o.flushBatch()
	err := f()
	o.logAct(table, key, func() string { return action }, err)
	return err
}

// logAct logs one kernel change (action is built only when logged).
func (o *Orch) logAct(table, key string, action func() string, err error) {
	if err == nil && !o.log.Logger.IsLevelEnabled(logrus.DebugLevel) {
		return
	}
	e := o.log.WithFields(logrus.Fields{"table": table, "key": key, "action": action()})
	if err != nil {
		e.WithField("outcome", "error").WithError(err).Warn("kernel change failed")
	} else {
		// One line per object only at debug: at info the engine sums up
		// each burst (docs/engine.md), so 100k routes are not 100k lines.
		e.WithField("outcome", "ok").Debug("kernel change")
	}
}

// configured reports whether table|key is in config, asking
// Options.ConfigExists too so the sweep never races an unread event.
func (o *Orch) configured(table, key string) bool {
	if o.cfg.Has(table, key) {
		return true
	}
	return o.exists != nil && o.exists(table, key)
}

// waitingForLink is the pending reason for a missing netdev: VLAN devices
// and bonds come from their VLAN / PORTCHANNEL key, anything else from the
// outside (hot-plug).
func waitingForLink(name string) string {
	if isVlanName(name) {
		return "waiting for " + schema.ConfigKey(schema.TableVlan, name)
	}
	if schema.IsPortChannelName(name) {
		return "waiting for " + schema.ConfigKey(schema.TablePortChannel, name)
	}
	return "waiting for netdev " + name
}

func isVlanName(name string) bool {
	_, err := schema.ParseVlanName(name)
	return err == nil
}

// getLink is Links().Get with "absent" as a plain bool.
func (o *Orch) getLink(name string) (netlinkmgr.LinkInfo, bool, error) {
	l, err := o.k.Links().Get(name)
	if err != nil {
		if netlinkmgr.IsNotFound(err) {
			return l, false, nil
		}
		return l, false, err
	}
	return l, true, nil
}

var errNotOurs = errors.New("not managed by orchagent")

// joinWarnings puts the engine's warning (unknown fields) and the
// controller's own in one field.
func joinWarnings(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "; " + b
}
