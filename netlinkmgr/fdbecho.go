package netlinkmgr

import (
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// The echoes of our own static FDB adds (WatchOptions.OmitOwnFdbWrites).
// The bridge announces every entry it adds or changes with an
// RTM_NEWNEIGH sent with port id 0 and sequence number 0 (fdb_notify),
// so unlike our route and address writes (evfilter.go) the socket cannot
// tell our entries from anyone else's. A bulk load of 10k entries heard
// 10k of them, each parsed, named, passed through two goroutines and
// looked up in the consumer's view only to find what it had written.
// Instead AddBatch records each entry it sends (port index, VLAN, MAC),
// and the neighbour reader drops a static RTM_NEWNEIGH that matches a
// record, right after parsing it, and takes the record: one echo per
// write (an entry written twice before the reader read the first echo
// is recorded twice).
//
// What may be left out besides our echo: someone else's add of the same
// static entry on the same port before our echo consumed the record (or
// instead of it, when our replace changed nothing and so was not
// announced) — an entry identical to the one we wrote, which the writer
// has noted already. Deletions, an entry moved to another port, learned
// (dynamic) and local entries never match. Records not taken within
// fdbEchoTTL (a write that failed, or changed nothing) are swept at the
// next batch, so they cannot pile up.

// fdbEchoTTL is how long a record waits for its echo.
const fdbEchoTTL = 5 * time.Second

// fdbEchoKey is an entry as its echo names it: the port's index, the
// VLAN, the MAC.
type fdbEchoKey struct {
	index int32
	vid   uint16
	mac   [6]byte
}

// fdbEchoes holds the records; on is set by a watch with OmitOwnFdbWrites
// (no watch asked: AddBatch records nothing).
type fdbEchoes struct {
	on    atomic.Bool
	mu    sync.Mutex
	m     map[fdbEchoKey]fdbEchoRec
	swept int64
}

// fdbEchoRec is the writes of one entry whose echoes are still to come,
// and when the last of them was sent (UnixNano).
type fdbEchoRec struct {
	n  int32
	at int64
}

// fdbEchoKeyOf is the record of an entry on port index idx; ok is false
// for a MAC that is not 6 bytes (never recorded, never matched).
func fdbEchoKeyOf(idx int, vid int, mac []byte) (k fdbEchoKey, ok bool) {
	if len(mac) != 6 {
		return k, false
	}
	k.index, k.vid = int32(idx), uint16(vid)
	copy(k.mac[:], mac)
	return k, true
}

// expect records the entries es (on ports lis[j] for es[idx[j]]) about to
// be sent, and sweeps the records older than fdbEchoTTL once per TTL.
func (f *fdbEchoes) expect(es []FdbInfo, idx, lis []int) {
	if !f.on.Load() || len(idx) == 0 {
		return
	}
	now := time.Now().UnixNano()
	f.mu.Lock()
	defer f.mu.Unlock()
	if now-f.swept > int64(fdbEchoTTL) {
		for k, r := range f.m {
			if now-r.at > int64(fdbEchoTTL) {
				delete(f.m, k)
			}
		}
		f.swept = now
	}
	if f.m == nil {
		f.m = make(map[fdbEchoKey]fdbEchoRec, len(idx))
	}
	for j, i := range idx {
		if k, ok := fdbEchoKeyOf(lis[j], int(es[i].Vlan), es[i].MAC); ok {
			f.m[k] = fdbEchoRec{n: f.m[k].n + 1, at: now}
		}
	}
}

// failed takes the record of an entry whose add failed: no echo comes.
func (f *fdbEchoes) failed(idx int, e *FdbInfo) {
	k, ok := fdbEchoKeyOf(idx, int(e.Vlan), e.MAC)
	if !ok || !f.on.Load() {
		return
	}
	f.mu.Lock()
	f.takeLocked(k)
	f.mu.Unlock()
}

// take reports whether w is the echo of a recorded add, and takes the
// record if so: an AF_BRIDGE RTM_NEWNEIGH of a static entry (NUD_NOARP
// only: not local, not learned) with a record for its port, VLAN and MAC.
func (f *fdbEchoes) take(w *wireNeigh) bool {
	if w.deleted || w.family != unix.AF_BRIDGE || w.state != unix.NUD_NOARP {
		return false
	}
	k, ok := fdbEchoKeyOf(w.index, w.vlan, w.mac)
	if !ok {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.takeLocked(k)
}

// takeLocked takes one write of k's record, if any; f.mu held.
func (f *fdbEchoes) takeLocked(k fdbEchoKey) bool {
	r, ok := f.m[k]
	switch {
	case !ok:
		return false
	case r.n > 1:
		r.n--
		f.m[k] = r
	default:
		delete(f.m, k)
		if len(f.m) == 0 {
			f.m = nil // a burst's map is not kept at its peak size
		}
	}
	return true
}
