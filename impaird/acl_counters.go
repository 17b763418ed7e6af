package impaird

import (
	"context"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"

	"github.com/switchyard-net/switchyard/bpf"
	"github.com/switchyard-net/switchyard/internal/redisx"
	"github.com/switchyard-net/switchyard/schema"
)

// ACL rule counters in COUNTERS_DB, in both forms SONiC's aclshow has read:
//
//   - COUNTERS:<table>:<rule> with Packets and Bytes (aclshow until
//     sonic-utilities a39350c, 2021-11);
//   - ACL_COUNTER_RULE_MAP "<table>:<rule>" -> "oid:0x9…" and
//     COUNTERS:oid:0x9… with SAI_ACL_COUNTER_ATTR_PACKETS/_BYTES (aclshow
//     since, through the flex-counter infrastructure).
//
// Each is the sum over every port and stage the rule is applied on.
const (
	ACLCounterRuleMap    = "ACL_COUNTER_RULE_MAP"
	ACLCounterPackets    = "Packets"
	ACLCounterBytes      = "Bytes"
	SAIACLCounterPackets = "SAI_ACL_COUNTER_ATTR_PACKETS"
	SAIACLCounterBytes   = "SAI_ACL_COUNTER_ATTR_BYTES"
	aclCounterOIDType    = uint64(9) << 48 // SAI_OBJECT_TYPE_ACL_COUNTER in the object-type byte
	aclCounterOIDLowBits = 1<<48 - 1
	aclCountersPattern   = schema.CountersTable + schema.CountersSep + "*"
	aclCountersOIDPrefix = schema.CountersTable + schema.CountersSep + "oid:0x9"
	aclCountersKeyPrefix = schema.CountersTable + schema.CountersSep
)

var (
	aclPlainOwned = redisx.OwnFields(ACLCounterPackets, ACLCounterBytes)("")
	aclSAIOwned   = redisx.OwnFields(SAIACLCounterPackets, SAIACLCounterBytes)("")
	aclMapOwned   = []string{redisx.AllFields}
)

// aclCounterOwnership is what impaird owns in COUNTERS_DB for ACLs: the
// whole ACL_COUNTER_RULE_MAP, the SAI fields of COUNTERS:oid:0x9… (ACL
// counter object ids; syncd's port ids are 0x1…) and Packets/Bytes of
// COUNTERS:<table>:<rule>. syncd owns other fields of COUNTERS:* only.
func aclCounterOwnership(key string) []string {
	switch {
	case key == ACLCounterRuleMap:
		return aclMapOwned
	case strings.HasPrefix(key, aclCountersOIDPrefix):
		return aclSAIOwned
	case strings.HasPrefix(key, aclCountersKeyPrefix):
		return aclPlainOwned
	}
	return nil
}

// ACLCounterOID is the stable SAI-style object id of rule "<table>:<rule>"
// (as syncd's PortOID: the object type over 48 bits of FNV-1a).
func ACLCounterOID(tableRule string) string {
	h := fnv.New64a()
	h.Write([]byte(tableRule))
	return "oid:0x" + strconv.FormatUint(aclCounterOIDType|h.Sum64()&aclCounterOIDLowBits, 16)
}

// aclCounterTotals sums every loaded port's ACL counters by "T|R".
func (d *daemon) aclCounterTotals() (map[string]bpf.ACLCounter, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	total := map[string]bpf.ACLCounter{}
	for port, stages := range d.acl.applied {
		p := d.ports[port]
		if p == nil {
			continue
		}
		for stage, has := range stages {
			if !has {
				continue
			}
			cs, err := p.ACLCounters(stage)
			if err != nil {
				return nil, fmt.Errorf("read %s ACL counters of %s: %w", stage, port, err)
			}
			for name, c := range cs {
				name = aclRuleKey(name)
				t := total[name]
				t.Packets += c.Packets
				t.Bytes += c.Bytes
				total[name] = t
			}
		}
	}
	return total, nil
}

// writeACLCounters writes the counters of every rule applied somewhere
// and removes those of rules gone. After a start (or COUNTERS_DB emptied)
// it first reads what a previous run wrote, so stale keys go too.
func (d *daemon) writeACLCounters(ctx context.Context) error {
	if d.aclCounters == nil {
		return nil
	}
	total, err := d.aclCounterTotals()
	if err != nil {
		return err
	}
	if !d.acl.countersLoaded.Load() {
		for _, p := range []string{aclCountersPattern, ACLCounterRuleMap} {
			if err := d.aclCounters.Load(ctx, p); err != nil {
				return err
			}
		}
		d.acl.countersLoaded.Store(true)
	}
	u := func(v uint64) string { return strconv.FormatUint(v, 10) }
	want := map[string]bool{}
	names := schema.Fields{}
	b := d.aclCounters.Batch()
	for name, c := range total {
		tr := strings.Replace(name, schema.ConfigSep, schema.CountersSep, 1) // "T|R" -> "T:R"
		k := schema.CountersKey(schema.CountersTable, tr)
		want[k] = true
		b.Set(k, schema.Fields{ACLCounterPackets: u(c.Packets), ACLCounterBytes: u(c.Bytes)})
		oid := ACLCounterOID(tr)
		names[tr] = oid
		k = schema.CountersKey(schema.CountersTable, oid)
		want[k] = true
		b.Set(k, schema.Fields{SAIACLCounterPackets: u(c.Packets), SAIACLCounterBytes: u(c.Bytes)})
	}
	// A rule still configured but not applied right now (impaird just
	// restarted, its port is waiting) keeps its counters.
	for _, k := range d.aclCounters.Keys() {
		tr, ok := strings.CutPrefix(k, aclCountersKeyPrefix)
		if want[k] || !ok || strings.HasPrefix(tr, "oid:") {
			continue
		}
		if d.h != nil && d.h.Cache.Has(schema.TableACLRule, strings.Replace(tr, schema.CountersSep, schema.ConfigSep, 1)) {
			want[k] = true
			names[tr] = ACLCounterOID(tr)
			want[schema.CountersKey(schema.CountersTable, names[tr])] = true
		}
	}
	if len(names) > 0 {
		want[ACLCounterRuleMap] = true
		b.Set(ACLCounterRuleMap, names)
	}
	for _, k := range d.aclCounters.Keys() {
		if !want[k] {
			b.Delete(k)
		}
	}
	return b.Flush(ctx)
}
