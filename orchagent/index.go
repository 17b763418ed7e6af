package orchagent

import (
	"maps"
	"sort"
	"strings"
	"sync"

	"github.com/switchyard-net/switchyard/schema"
)

// configCache is the current CONFIG_DB content orchagent reconciles from,
// fed by the table watcher (each event carries the key's whole hash).
// Hashes are copied on the way in and out: never mutate shared maps.
type configCache struct {
	mu     sync.RWMutex
	tables map[string]map[string]schema.Fields
	// membersOfPort indexes VLAN_MEMBER keys by port: untagged conflicts
	// and "is this port still a member anywhere" are asked per member.
	membersOfPort map[string]map[string]bool
}

func newConfigCache() *configCache {
	return &configCache{tables: map[string]map[string]schema.Fields{}, membersOfPort: map[string]map[string]bool{}}
}

func (c *configCache) set(table, key string, f schema.Fields) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.tables[table]
	if t == nil {
		t = map[string]schema.Fields{}
		c.tables[table] = t
	}
	cp := maps.Clone(f)
	if cp == nil {
		cp = schema.Fields{}
	}
	delete(cp, schema.NullField)
	t[key] = cp
	if table == schema.TableVlanMember {
		if _, port, ok := strings.Cut(key, schema.ConfigSep); ok {
			m := c.membersOfPort[port]
			if m == nil {
				m = map[string]bool{}
				c.membersOfPort[port] = m
			}
			m[key] = true
		}
	}
}

func (c *configCache) del(table, key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.tables[table], key)
	if table == schema.TableVlanMember {
		if _, port, ok := strings.Cut(key, schema.ConfigSep); ok {
			delete(c.membersOfPort[port], key)
			if len(c.membersOfPort[port]) == 0 {
				delete(c.membersOfPort, port)
			}
		}
	}
}

func (c *configCache) get(table, key string) (schema.Fields, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	f, ok := c.tables[table][key]
	if !ok {
		return nil, false
	}
	return maps.Clone(f), true
}

// memberKeys returns the VLAN_MEMBER keys ("VlanN|port") naming port.
func (c *configCache) memberKeys(port string) []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	keys := make([]string, 0, len(c.membersOfPort[port]))
	for k := range c.membersOfPort[port] {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// all returns every key as "TABLE|key", sorted in table dependency order.
func (c *configCache) all() []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var out []string
	for _, t := range Tables() {
		keys := make([]string, 0, len(c.tables[t]))
		for k := range c.tables[t] {
			keys = append(keys, schema.ConfigKey(t, k))
		}
		sort.Strings(keys)
		out = append(out, keys...)
	}
	return out
}

// refIndex maps resources ("link:Ethernet0", "VLAN|Vlan100",
// "route:10.2.0.0/16", ...) to the config keys that depend on them, so an
// event about a resource re-enqueues exactly its dependants.
type refIndex struct {
	mu    sync.Mutex
	byRes map[string]map[string]bool
	byKey map[string][]string
}

func newRefIndex() *refIndex {
	return &refIndex{byRes: map[string]map[string]bool{}, byKey: map[string][]string{}}
}

// set replaces key's resources.
func (x *refIndex) set(key string, refs []string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.dropLocked(key)
	for _, r := range refs {
		m := x.byRes[r]
		if m == nil {
			m = map[string]bool{}
			x.byRes[r] = m
		}
		m[key] = true
	}
	x.byKey[key] = refs
}

func (x *refIndex) drop(key string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.dropLocked(key)
}

func (x *refIndex) dropLocked(key string) {
	for _, r := range x.byKey[key] {
		if m := x.byRes[r]; m != nil {
			delete(m, key)
			if len(m) == 0 {
				delete(x.byRes, r)
			}
		}
	}
	delete(x.byKey, key)
}

// keys returns the keys depending on resource.
func (x *refIndex) keys(resource string) []string {
	x.mu.Lock()
	defer x.mu.Unlock()
	m := x.byRes[resource]
	out := make([]string, 0, len(m))
	for k := range m {
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
func resRoute(p string) string     { return "route:" + p }
func resBrVid(link string, vid uint16) string {
	return "brvid:" + link + schema.ConfigSep + itoa(int(vid))
}
func resAddr(link, p string) string {
	return "addr:" + link + schema.ConfigSep + p
}
func resFdb(vid uint16, mac string) string {
	return "fdb:" + itoa(int(vid)) + schema.ConfigSep + mac
}
