package orchagent

import (
	"context"
	"fmt"
	"strings"

	"github.com/switchyard-net/switchyard/internal/engine"
	"github.com/switchyard-net/switchyard/netlinkmgr"
	"github.com/switchyard-net/switchyard/schema"
)

// Batched reconcile: ReconcileBatch runs keys as Reconcile does one by
// one, except that the last kernel write of a key of a batching table
// (a route, an address, a static FDB entry, a member's VLAN, a
// VLAN's device) waits in
// Orch.batch and goes to the kernel with those of the keys after it, many
// requests per netlink message (netlinkmgr's AddBatch/ReplaceBatch). The
// key is finished — result, dependencies — when its own answer is in.
// Any other kernel write (act) and any key of another table first send
// what waits, so the kernel sees the writes in key order.

// maxBatch bounds the keys ReconcileBatch is given at once (the daemon's
// worker takes up to this many ready keys per pass): a pass of routes is
// about 64 KiB of requests, one netlink message.
const maxBatch = 1024

// batchTables are the tables whose writes ReconcileBatch defers.
var batchTables = map[string]bool{
	schema.TableStaticRoute:          true,
	schema.TableFDB:                  true,
	schema.TableInterface:            true,
	schema.TableVlanInterface:        true,
	schema.TableLoopback:             true,
	schema.TablePortChannelInterface: true,
	schema.TableVlanMember:           true,
	schema.TableVlan:                 true, // with VLAN_MEMBER (batchGroup, vlanbatch.go)
}

// batchGroup is the batch a table's deferred writes join: VLAN and
// VLAN_MEMBER keys alternate in a bulk (a VLAN, then its members) and
// share one (vlanbatch.go).
func batchGroup(table string) string {
	if table == schema.TableVlanMember {
		return schema.TableVlan
	}
	return table
}

// writeBatch holds the writes deferred for consecutive keys of one table.
type writeBatch struct {
	table     string
	pos       int      // index of the key being reconciled
	cur       deferred // the key being reconciled (set by Reconcile)
	errs      []error  // ReconcileBatch's
	items     []deferredRoute
	wants     []netlinkmgr.RouteInfo // flushRoutes', reused
	addrWants []netlinkmgr.AddrInfo  // flushAddrs', reused
	noted     []bool                 // flushRoutes' (notedRoutes) and flushFdbs' (notedFdbsWritten), reused
	ds        []rdst                 // flushRoutes' places of wants, reused
	// hops holds the next hops of the batch's parsed routes (arena of
	// schema.ParseStaticRouteFieldsIn): no route of it is kept past its
	// key's Reconcile or flushBatch; the next batch starts it again.
	hops  []schema.NextHop
	fdbs  []deferredFdb
	addrs []deferredAddr
	vids  []deferredVid
	vlans []deferredVlan // vlanbatch.go
	// vlanAt is the index in vlans of each VLAN name deferred there.
	vlanAt map[string]int
	// fields holds the hash of the route being reconciled (Reconcile's
	// Cache.GetIntoRef), kept across batches.
	fields schema.Fields
	// ref is the engine's Ref of the key being reconciled (zero: none):
	// its entry without a look-up by name
	ref engine.Ref
	// read is the key's entry read ahead for the pass (Orch.reads), nil
	// or not Done: none
	read *engine.Read
}

// deferred is the key a deferred write belongs to.
type deferred struct {
	pos   int          // index in ReconcileBatch's keys
	table string       // its table
	key   string       // key (no table)
	full  string       // "TABLE|key"
	ent   engine.Entry // the config version applied (result stamp)
	gen   uint64       // view generation before the key was applied
}

type deferredFdb struct {
	deferred
	want netlinkmgr.FdbInfo
	refs []string
}

type deferredRoute struct {
	deferred
	r       schema.StaticRoute
	want    netlinkmgr.RouteInfo
	d       rdst // want's place in the view (rdstOf)
	refs    []string
	applied int // refs[:applied]: an applied route's (applyRoute)
}

type deferredAddr struct {
	deferred
	want netlinkmgr.AddrInfo
	refs []string
}

type deferredVid struct {
	deferred
	want netlinkmgr.BridgeVlanInfo
	refs []string
	// vlan: 1 + the index in vlans of the VLAN key the member relies on
	// (deferred in the same batch), 0 = none (vlanbatch.go).
	vlan int
}

// deferring reports whether table's kernel writes are being collected.
func (o *Orch) deferring(table string) bool {
	return o.batch != nil && o.batch.table == batchGroup(table)
}

// ReconcileBatch reconciles keys in order, as Reconcile does one by one,
// except that the writes of consecutive keys of a batching table go to
// the kernel together (see above). errs[i] is what Reconcile(keys[i])
// would return.
func (o *Orch) ReconcileBatch(ctx context.Context, keys []string) []error {
	return o.reconcileBatch(ctx, keys, nil)
}

// ReconcileBatchRefs is ReconcileBatch with refs[i], the engine's Ref of
// keys[i] (engine.RefBatchController): a route's hash is read by it, not
// looked up by name.
func (o *Orch) ReconcileBatchRefs(ctx context.Context, keys []string, refs []engine.Ref) []error {
	return o.reconcileBatch(ctx, keys, refs)
}

func (o *Orch) reconcileBatch(ctx context.Context, keys []string, refs []engine.Ref) []error {
	errs := make([]error, len(keys))
	o.passStart(keys)
	defer o.passEnd()
	// The pass's routes (or addresses) read from the cache under one
	// lock, not one per key shared with the consumer's sets
	// (engine/cacheread.go).
	o.reads = o.cfg.ReadRefs(readAheadTable(keys), keys, refs, o.reads)
	defer func() {
		clear(o.reads) // their strings are the cache's: not kept
		o.reads = o.reads[:0]
	}()
	for i, key := range keys {
		o.passAt(i)
		table, _, _ := strings.Cut(key, schema.ConfigSep)
		if o.batch != nil && o.batch.table != batchGroup(table) {
			o.flushBatch()
		}
		if !batchTables[table] {
			errs[i] = o.Reconcile(ctx, key)
			continue
		}
		if o.batch == nil {
			o.batch = o.spare
			o.spare = nil
			if o.batch == nil {
				o.batch = &writeBatch{}
			}
			o.batch.table, o.batch.errs = batchGroup(table), errs
		}
		o.batch.pos = i
		o.batch.ref = engine.Ref{}
		if i < len(refs) {
			o.batch.ref = refs[i]
		}
		o.batch.read = &o.reads[i]
		errs[i] = o.Reconcile(ctx, key)
	}
	o.flushBatch()
	return errs
}

// Trim lets go of what passes keep for the next one: the spare batch's
// arrays and the reads (a pass of maxBatch keys: ~0.2 MB an idle
// orchagent would hold for good). engine.Trimmer: the worker's
// goroutine, between passes.
func (o *Orch) Trim() {
	o.reads = nil
	o.spare = nil
}

// readsAhead are the tables whose keys a ReconcileBatch pass reads from
// the cache at once and unpacks into the batch's reused hash
// (Reconcile): their apply functions keep none of the hash but its
// strings.
var readsAhead = map[string]bool{
	schema.TableStaticRoute:          true,
	schema.TableInterface:            true,
	schema.TableVlanInterface:        true,
	schema.TableLoopback:             true,
	schema.TablePortChannelInterface: true,
	// applyFdb keeps the port's string and nothing else of the hash: a
	// burst of 10k entries made a map per key (Cache.Get) to read one field.
	schema.TableFDB: true,
}

// readAheadTable is the table a pass over keys reads ahead: its first
// key's when that table is read ahead, else STATIC_ROUTE. Keys of
// another table are read one by one.
func readAheadTable(keys []string) string {
	if len(keys) > 0 {
		if t, _, _ := strings.Cut(keys[0], schema.ConfigSep); readsAhead[t] {
			return t
		}
	}
	return schema.TableStaticRoute
}

// flushBatch sends the deferred writes and finishes their keys.
func (o *Orch) flushBatch() {
	b := o.batch
	o.batch = nil
	if b == nil {
		return
	}
	if len(b.fdbs) > 0 {
		o.flushFdbs(b)
	}
	if len(b.items) > 0 {
		o.flushRoutes(b)
	}
	if len(b.addrs) > 0 {
		o.flushAddrs(b)
	}
	if len(b.vids) > 0 || len(b.vlans) > 0 {
		o.flushVlans(b) // vlanbatch.go
	}
	// Kept for the next batch: growing these slices to a pass's 1,024
	// entries was an eighth of what a burst of routes allocated.
	clear(b.items)
	clear(b.fdbs)
	clear(b.addrs)
	clear(b.vids)
	clear(b.vlans)
	clear(b.vlanAt)
	// b.hops is not cleared: a route being reconciled when an act
	// flushed its batch still reads its next hops there (the next batch,
	// for the next key, writes over them).
	*b = writeBatch{items: b.items[:0], wants: b.wants, addrWants: b.addrWants, noted: b.noted[:0], ds: b.ds[:0], hops: b.hops[:0],
		fdbs: b.fdbs[:0], addrs: b.addrs[:0], vids: b.vids[:0], vlans: b.vlans[:0], vlanAt: b.vlanAt, fields: b.fields}
	o.spare = b
}

// finishDeferred records the outcome of d's key once its write is answered.
func (o *Orch) finishDeferred(b *writeBatch, d *deferred, out outcome) {
	out.res = d.ent.Stamp(out.res)
	out.ent = d.ent
	o.finish(d.full, d.table, d.key, true, out, d.gen)
	b.errs[d.pos] = out.err
}

func (o *Orch) flushRoutes(b *writeBatch) {
	wants, ds := b.wants[:0], b.ds[:0]
	for i := range b.items {
		wants = append(wants, b.items[i].want)
		ds = append(ds, b.items[i].d)
	}
	b.ds = ds
	o.view.writingAllAt(wants, ds)
	res := o.k.Routes().ReplaceBatch(wants)
	// Every written route noted at once (one lock), then each key
	// finished in order: the kernel holds them all already.
	b.noted = o.view.notedRoutesAt(wants, ds, res, b.noted)
	clear(wants)
	b.wants = wants[:0]
	for i := range b.items {
		d := &b.items[i]
		o.logAct(d.table, d.key, func() string { return "replace route " + describeRoute(&d.want) }, res[i])
		var out outcome
		if res[i] == nil {
			out = o.routeNoted(d.r, &d.want, d.refs, d.applied, b.noted[i])
		} else {
			out = o.routeWritten(d.r, d.want, d.refs, d.applied, res[i])
		}
		o.finishDeferred(b, &d.deferred, out)
	}
	o.view.written()
}

// flushFdbs sends b's deferred FDB writes (Fdbs().AddBatch) and finishes
// their keys.
func (o *Orch) flushFdbs(b *writeBatch) {
	wants := make([]netlinkmgr.FdbInfo, len(b.fdbs))
	for i := range b.fdbs {
		wants[i] = b.fdbs[i].want
	}
	o.view.writingFdbs(wants) // fdbview.go
	res := o.k.Fdbs().AddBatch(wants)
	// Every written entry noted at once (one lock, as flushRoutes), then
	// each key finished in order.
	b.noted = o.view.notedFdbsWritten(wants, res, b.noted)
	for i := range b.fdbs {
		d := &b.fdbs[i]
		o.logAct(d.table, d.key, func() string { return describeFdb(&d.want) }, res[i])
		o.finishDeferred(b, &d.deferred, o.fdbWritten(d.key, d.want, d.refs, res[i], b.noted[i]))
	}
}

// flushAddrs sends b's deferred address adds (Addrs().AddBatch).
func (o *Orch) flushAddrs(b *writeBatch) {
	wants := b.addrWants[:0]
	for i := range b.addrs {
		wants = append(wants, b.addrs[i].want)
	}
	o.view.writingAddrs(wants)
	res := o.k.Addrs().AddBatch(wants)
	reach := false
	for i := range b.addrs {
		d := &b.addrs[i]
		out, noted := o.addrWritten(d.table, d.key, d.want, d.refs, res[i])
		reach = reach || noted
		o.finishDeferred(b, &d.deferred, out)
	}
	o.view.addrsWritten()
	clear(wants)
	b.addrWants = wants[:0]
	if reach {
		// Their echoes are not heard (addrWritten): once for the batch.
		o.enqueueRefs(resReach)
	}
}

func describeAddr(a *netlinkmgr.AddrInfo) string {
	return fmt.Sprintf("add address %s dev %s proto %d", a.Prefix, a.Link, a.Protocol)
}

// The daemon's controller is handed each route's Ref with it.
var _ engine.RefBatchController = (*controller)(nil)

var _ engine.Trimmer = (*Orch)(nil)
