package orchagent

import (
	"net/netip"
	"slices"
	"sort"
	"strconv"
	"sync"

	"github.com/switchyard-net/switchyard/internal/shrink"
	"github.com/switchyard-net/switchyard/netlinkmgr"
	"github.com/switchyard-net/switchyard/schema"
)

// refIndex maps resources ("link:Ethernet0", "VLAN|Vlan100",
// "route:10.2.0.0/16", ...) to the config keys that depend on them, so an
// event about a resource re-enqueues exactly its dependants.
type refIndex struct {
	mu    sync.Mutex
	byRes map[string]keySet
	byKey map[string][]string
	peaks [2]int // high-water marks of byRes and byKey (shrink)
}

// keySet is the keys of one resource. Most resources (a route's prefix,
// an address) have exactly one dependant: it is kept as a string, and a
// map only from the second on — 100k routes are not 100k one-entry maps.
type keySet struct {
	one  string
	many map[string]struct{}
}

func (s keySet) add(k string) keySet {
	switch {
	case s.many != nil:
		s.many[k] = struct{}{}
	case s.one == "" || s.one == k:
		s.one = k
	default:
		s.many = map[string]struct{}{s.one: {}, k: {}}
		s.one = ""
	}
	return s
}

// remove drops k; the zero keySet means no key is left.
func (s keySet) remove(k string) keySet {
	if s.many == nil {
		if s.one == k {
			s.one = ""
		}
		return s
	}
	delete(s.many, k)
	if len(s.many) == 1 {
		for only := range s.many {
			return keySet{one: only}
		}
	}
	return s
}

func (s keySet) empty() bool { return s.one == "" && len(s.many) == 0 }

func newRefIndex() *refIndex {
	return &refIndex{byRes: map[string]keySet{}, byKey: map[string][]string{}}
}

// set replaces key's resources.
func (x *refIndex) set(key string, refs []string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if old, had := x.byKey[key]; had {
		if slices.Equal(old, refs) {
			return // a key reconciled again, depending on the same
		}
		x.dropLocked(key)
	}
	for _, r := range refs {
		s, had := x.byRes[r]
		x.byRes[r] = s.add(key)
		if !had {
			shrink.Grew(x.byRes, &x.peaks[0])
		}
	}
	if len(refs) > 0 {
		x.byKey[key] = refs
		shrink.Grew(x.byKey, &x.peaks[1])
	}
}

func (x *refIndex) drop(key string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.dropLocked(key)
}

func (x *refIndex) dropLocked(key string) {
	for _, r := range x.byKey[key] {
		s, ok := x.byRes[r]
		if !ok {
			continue
		}
		if s = s.remove(key); s.empty() {
			delete(x.byRes, r)
			x.byRes = shrink.Map(x.byRes, &x.peaks[0])
		} else {
			x.byRes[r] = s
		}
	}
	delete(x.byKey, key)
	x.byKey = shrink.Map(x.byKey, &x.peaks[1])
}

// keys returns the keys depending on resource.
func (x *refIndex) keys(resource string) []string {
	x.mu.Lock()
	defer x.mu.Unlock()
	s := x.byRes[resource]
	if s.many == nil {
		if s.one == "" {
			return nil
		}
		return []string{s.one}
	}
	out := make([]string, 0, len(s.many))
	for k := range s.many {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Resource names. Config keys ("VLAN|Vlan100") are resources too: a key's
// result change re-enqueues the keys that wait on it.
const resReach = "reach" // any address or non-owned route change: gateways may have become reachable

func resLink(name string) string   { return "link:" + name }
func resBrPort(name string) string { return "brport:" + name }

// resRoute names the routes to prefix p (normPrefix'd) in table (0 =
// main): "route:P" or "route:T:P", built in one allocation.
func resRoute(table int, p netip.Prefix) string {
	var buf [80]byte
	b := append(buf[:0], "route:"...)
	if table != 0 && table != netlinkmgr.MainTable {
		b = strconv.AppendInt(b, int64(table), 10)
		b = append(b, ':')
	}
	return string(p.AppendTo(b))
}
func resBrVid(link string, vid uint16) string {
	return "brvid:" + link + schema.ConfigSep + itoa(int(vid))
}
func resAddr(link, p string) string {
	return "addr:" + link + schema.ConfigSep + p
}
func resFdb(vid uint16, mac string) string {
	return "fdb:" + itoa(int(vid)) + schema.ConfigSep + mac
}
