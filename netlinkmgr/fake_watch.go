package netlinkmgr

import (
	"context"
	"net"
	"sync"
)

// The Fake's event delivery.

type fakeWatcher struct {
	mu   sync.Mutex
	q    []Event
	wake chan struct{}
}

func (w *fakeWatcher) push(evs ...Event) {
	w.mu.Lock()
	w.q = append(w.q, evs...)
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// Watch delivers events for every mutation (and seeding helper) after the
// call, preceded by the listing and EventSynced with opts.ListExisting.
// It never overflows by itself; Overflow() simulates it.
func (f *Fake) Watch(ctx context.Context, opts WatchOptions) (<-chan Event, error) {
	w := &fakeWatcher{wake: make(chan struct{}, 1)}
	f.mu.Lock()
	if opts.ListExisting {
		w.push(append(f.snapshot(), Event{Kind: EventSynced})...)
	}
	f.watchers[w] = true
	f.mu.Unlock()
	ch := make(chan Event)
	go func() {
		defer close(ch)
		defer func() { f.mu.Lock(); delete(f.watchers, w); f.mu.Unlock() }()
		for {
			w.mu.Lock()
			q := w.q
			w.q = nil
			w.mu.Unlock()
			for _, ev := range q {
				if opts.Handler != nil {
					opts.Handler(ev) // on this goroutine, in order: as the real watcher
					continue
				}
				select {
				case ch <- ev:
				case <-ctx.Done():
					return
				}
			}
			select {
			case <-w.wake:
			case <-ctx.Done():
				return
			}
		}
	}()
	return ch, nil
}

// snapshot lists everything as non-deleted events; f.mu held.
func (f *Fake) snapshot() []Event {
	var evs []Event
	for _, n := range f.sortedLinks() {
		l := f.view(n)
		evs = append(evs, Event{Kind: EventLink, Link: &l})
	}
	for _, a := range f.addrs {
		a := a
		evs = append(evs, Event{Kind: EventAddr, Addr: &a})
	}
	for _, r := range f.routes {
		r := cloneRoute(r)
		evs = append(evs, Event{Kind: EventRoute, Route: &r})
	}
	for _, n := range f.neighs {
		n := n
		n.MAC = append(net.HardwareAddr(nil), n.MAC...)
		evs = append(evs, Event{Kind: EventNeigh, Neigh: &n})
	}
	for i := range f.fdbs {
		e := cloneFdb(f.fdbs[i])
		evs = append(evs, Event{Kind: EventFdb, Fdb: &e})
	}
	return evs
}

func (f *Fake) emit(ev Event) {
	for w := range f.watchers {
		w.push(ev)
	}
}

func (f *Fake) emitLink(name string, deleted bool) {
	if len(f.watchers) == 0 || f.links[name] == nil {
		return
	}
	l := f.view(name)
	f.emit(Event{Kind: EventLink, Deleted: deleted, Link: &l})
}

func (f *Fake) emitFdb(i int, deleted bool) {
	e := cloneFdb(f.fdbs[i])
	f.emit(Event{Kind: EventFdb, Deleted: deleted, Fdb: &e})
}

func filter[T any](s []T, keep func(T) bool) []T {
	out := s[:0]
	for _, v := range s {
		if keep(v) {
			out = append(out, v)
		}
	}
	return out
}
