package orchagent

import (
	"strings"
	"sync"
	"sync/atomic"

	"github.com/switchyard-net/switchyard/schema"
)

// PORTCHANNEL and PORTCHANNEL_MEMBER keys reconcile once per change, not
// once per echo of their own writes. A bulk of PortChannels used to
// reconcile every key twice: the bond's own link events (its creation, its
// MAC following its first port) and the ports' (down, master, up again)
// re-enqueued the bond's key and every member, and a PortChannel's result
// turning ok re-enqueued its members that had not run yet in the same
// pass. Two mechanisms, both limited to these tables (isLagTable):
//
//   - the pass: while ReconcileBatch runs, a key of these tables that is
//     later in the pass is not enqueued again (it has not looked at
//     anything yet, so it will see what changed);
//   - expected echoes: a key registers, before its first write, what the
//     view shows when the kernel holds its outcome (final) and what it
//     may show on the way there (interim: the bond before its alias, a
//     port set down before it is enslaved). A link event after which the
//     view still satisfies the key's expectation does not re-enqueue it;
//     the first event that does not (a foreign change, before or after
//     our note) drops the expectation and re-enqueues the key. Interim
//     states are accepted only until the final state was seen once. A
//     link's deletion always re-enqueues (never one of our echoes here).
//
// The final checks are what the key's own reconcile compares among the
// fields a link event carries (linkSnap), so skipping it changes nothing:
// it would have been ok without a write.

// isLagTable says table is one these mechanisms apply to.
func isLagTable(table string) bool {
	return table == schema.TablePortChannel || table == schema.TablePortChannelMember
}

// lagState is the pass and the expectations (Orch.lag).
type lagState struct {
	mu     sync.Mutex
	expect map[string]*echoExpect // by "TABLE|key"
	// at is, while ReconcileBatch runs, the last index of each PortChannel table
	// key in its keys; cur the index being reconciled.
	at  map[string]int
	cur int
	// active: at holds keys (a pass with PortChannel keys runs). Read
	// without mu, so a pass without them (a route burst) pays no lock per
	// key and per enqueue.
	active atomic.Bool
}

// echoExpect is one key's expectation; the checks run with the view's
// mutex held.
type echoExpect struct {
	final, interim func(v *kernelView) bool
	reached        bool // final was seen: interim states no longer pass
}

// expectEchoes registers key's expectation, replacing the one it had;
// interim may be nil (nothing but final expected).
func (o *Orch) expectEchoes(key string, final, interim func(v *kernelView) bool) {
	o.lag.mu.Lock()
	defer o.lag.mu.Unlock()
	if o.lag.expect == nil {
		o.lag.expect = map[string]*echoExpect{}
	}
	o.lag.expect[key] = &echoExpect{final: final, interim: interim}
}

// forgetEchoes drops key's expectation (its outcome is not ok, or it is gone).
func (o *Orch) forgetEchoes(key string) {
	o.lag.mu.Lock()
	delete(o.lag.expect, key)
	o.lag.mu.Unlock()
}

// echoesAfter keeps key's expectation when its outcome is ok and drops it
// otherwise. When the view already shows the final state (nothing
// written, or the echoes already heard), interim states no longer pass.
func (o *Orch) echoesAfter(key string, out outcome) {
	if out.res.State != schema.StateOK {
		o.forgetEchoes(key)
		return
	}
	o.lag.mu.Lock()
	e := o.lag.expect[key]
	o.lag.mu.Unlock()
	if e == nil {
		return
	}
	v := o.view
	v.mu.Lock()
	final := e.final(v)
	v.mu.Unlock()
	if final {
		o.lag.mu.Lock()
		e.reached = true
		o.lag.mu.Unlock()
	}
}

// echoExpected reports whether a link event that just changed the view is,
// for key, the echo of its own writes (see above); when it is not, key's
// expectation is dropped.
func (o *Orch) echoExpected(key string) bool {
	o.lag.mu.Lock()
	e := o.lag.expect[key]
	o.lag.mu.Unlock()
	if e == nil {
		return false
	}
	v := o.view
	v.mu.Lock()
	final := e.final(v)
	interim := !final && e.interim != nil && e.interim(v)
	v.mu.Unlock()
	o.lag.mu.Lock()
	defer o.lag.mu.Unlock()
	switch {
	case o.lag.expect[key] != e: // re-registered meanwhile: look again
		return false
	case final:
		e.reached = true
		return true
	case interim && !e.reached:
		return true
	}
	delete(o.lag.expect, key)
	return false
}

// enqueueLinkRefs enqueues the dependants of a link event's resources,
// except the keys to which it is the echo of their own writes.
func (o *Orch) enqueueLinkRefs(deleted bool, resources []string) {
	if deleted || !o.hasExpectations() {
		o.enqueueRefs(resources...)
		return
	}
	var vrfs vrfTables
	for _, r := range resources {
		for _, k := range o.idx.keys(r) {
			if !o.echoExpected(k) {
				o.enqueue(k)
			}
		}
		o.enqueueRouteKeys(r)
		o.enqueueVrfRouteKeys(r, &vrfs)
		o.enqueueFdbKeys(r)
		o.enqueueAddrKeys(r) // never an expected echo: not a link's key
	}
}

func (o *Orch) hasExpectations() bool {
	o.lag.mu.Lock()
	defer o.lag.mu.Unlock()
	return len(o.lag.expect) > 0
}

// passStart records the PortChannel tables' keys of a ReconcileBatch pass.
func (o *Orch) passStart(keys []string) {
	o.lag.mu.Lock()
	defer o.lag.mu.Unlock()
	o.lag.active.Store(true) // an enqueue meanwhile waits for the map
	for i, k := range keys {
		if isLagTable(tableOf(k)) {
			if o.lag.at == nil {
				o.lag.at = map[string]int{}
			}
			o.lag.at[k] = i
		}
	}
	o.lag.cur = -1
	o.lag.active.Store(len(o.lag.at) > 0)
}

// passAt says key i of the pass is about to be reconciled.
func (o *Orch) passAt(i int) {
	if !o.lag.active.Load() {
		return
	}
	o.lag.mu.Lock()
	o.lag.cur = i
	o.lag.mu.Unlock()
}

func (o *Orch) passEnd() {
	if !o.lag.active.Load() {
		return
	}
	o.lag.mu.Lock()
	clear(o.lag.at)
	o.lag.active.Store(false)
	o.lag.mu.Unlock()
}

// laterInPass reports whether key is still to be reconciled in the
// running pass: enqueueing it again would run it twice.
func (o *Orch) laterInPass(key string) bool {
	if !o.lag.active.Load() {
		return false
	}
	o.lag.mu.Lock()
	defer o.lag.mu.Unlock()
	i, ok := o.lag.at[key]
	return ok && i > o.lag.cur
}

func tableOf(key string) string {
	t, _, _ := strings.Cut(key, schema.ConfigSep)
	return t
}

// pcFinal is the view when PORTCHANNEL name holds its outcome: our bond,
// with the admin state and MTU the key sets (nil: not managed).
func pcFinal(name string, up *bool, mtu *int) func(v *kernelView) bool {
	return func(v *kernelView) bool {
		s, ok := v.links[name]
		return ok && s.kind == "bond" && s.alias == ownerAlias &&
			(up == nil || s.admin == *up) && (mtu == nil || s.mtu == *mtu)
	}
}

// pcInterim is the view while our bond is being made or changed: not
// heard of yet, or a bond without its alias yet, in any admin state.
func pcInterim(name string) func(v *kernelView) bool {
	return func(v *kernelView) bool {
		s, ok := v.links[name]
		return !ok || (s.kind == "bond" && (s.alias == "" || s.alias == ownerAlias))
	}
}

// memberFinal is the view when port is enslaved to bond.
func memberFinal(port, bond string) func(v *kernelView) bool {
	return func(v *kernelView) bool {
		p, ok := v.links[port]
		b, bok := v.links[bond]
		return ok && bok && b.index != 0 && p.masterIdx == b.index
	}
}

// memberInterim is the view while port is being enslaved to bond: the
// bond not heard of yet, the port without a master (set down first) or
// already on the bond.
func memberInterim(port, bond string) func(v *kernelView) bool {
	return func(v *kernelView) bool {
		p, ok := v.links[port]
		if !ok {
			return false
		}
		b, bok := v.links[bond]
		return !bok || p.masterIdx == 0 || p.masterIdx == b.index
	}
}
