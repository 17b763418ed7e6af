package orchagent

import (
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/switchyard-net/switchyard/netlinkmgr"
	"github.com/switchyard-net/switchyard/schema"
)

// Static routes in VRFs (STATIC_ROUTE|VrfNAME|prefix) and next hops in
// other VRFs (nexthop-vrf): the view's lookups by VRF.

// vrfTableOf returns the routing table of VRF vrf: its key is ok and the
// view holds our vrf device with its table.
func (o *Orch) vrfTableOf(vrf string) (int, bool) {
	if !o.resultOK(schema.ConfigKey(schema.TableVRF, vrf)) {
		return 0, false
	}
	v := o.view
	v.mu.Lock()
	defer v.mu.Unlock()
	s, ok := v.links[vrf]
	if !ok || s.kind != "vrf" || s.alias != ownerAlias || s.table == 0 {
		return 0, false
	}
	return s.table, true
}

// ourVrfTables maps the tables of our vrf devices in the view to their
// names.
func (v *kernelView) ourVrfTables() map[int]string {
	v.mu.Lock()
	defer v.mu.Unlock()
	out := map[int]string{}
	for name, s := range v.links {
		if s.kind == "vrf" && s.alias == ownerAlias && s.table != 0 {
			out[s.table] = name
		}
	}
	return out
}

// subnetInVRF returns an up link of VRF vrf ("default": a link in no vrf
// device) holding an address whose subnet contains ip: where a next hop
// reached in that VRF goes out.
func (v *kernelView) subnetInVRF(ip netip.Addr, vrf string) (string, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	want := 0
	if inVRF(vrf) {
		s, ok := v.links[vrf]
		if !ok || s.kind != "vrf" {
			return "", false
		}
		want = s.index
	}
	vrfIdx := map[int]bool{}
	for _, s := range v.links {
		if s.kind == "vrf" {
			vrfIdx[s.index] = true
		}
	}
	for l, m := range v.addrs {
		s, ok := v.links[l]
		if !ok || !s.admin {
			continue
		}
		if in := s.masterIdx; (want != 0 && in != want) || (want == 0 && vrfIdx[in]) {
			continue
		}
		for p := range m {
			if p.Bits() < p.Addr().BitLen() && p.Masked().Contains(ip) {
				return l, true
			}
		}
	}
	return "", false
}

// notedRouteTable records that VRF vrf applied a route in table.
func (o *Orch) notedRouteTable(vrf string, table int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	ts := o.rtables[vrf]
	if !slices.Contains(ts, table) {
		o.rtables[vrf] = append(ts, table)
	}
}

// removeGoneVrfRoute deletes our routes to p of key in VRF vrf, whose
// device is gone: in each table the VRF applied routes in (rtables) that
// no vrf device of ours holds now (another VRF's routes are its own).
func (o *Orch) removeGoneVrfRoute(key, vrf string, p netip.Prefix) outcome {
	o.mu.Lock()
	tables := slices.Clone(o.rtables[vrf])
	o.mu.Unlock()
	if len(tables) == 0 {
		return okOut(nil)
	}
	held := o.view.ourVrfTables()
	for _, t := range tables {
		if _, ok := held[t]; ok {
			continue
		}
		for _, c := range o.view.routesFor(t, p) {
			if err := o.delRoute(key, c); err != nil {
				return kernelOut(err, nil)
			}
		}
	}
	return okOut(nil)
}

// routeSame compares two kernel routes (same dst and metric assumed).
func routeSame(a, b *netlinkmgr.RouteInfo) bool {
	if a.Blackhole != b.Blackhole || len(a.NextHops) != len(b.NextHops) {
		return false
	}
	for i := range a.NextHops {
		x, y := a.NextHops[i], b.NextHops[i]
		if x.Gateway != y.Gateway || x.Link != y.Link || weight(x.Weight) != weight(y.Weight) {
			return false
		}
	}
	return true
}

func weight(w int) int {
	if w <= 0 {
		return 1
	}
	return w
}

// vrfTables is the names of our vrf devices by table, read from the view
// once per enqueueRefs (a link's purge names many routes).
type vrfTables struct {
	byTable map[int]string
	read    bool
}

// enqueueVrfRouteKeys enqueues the configured STATIC_ROUTE keys of a VRF
// that res concerns, which applyRoute does not put in the index:
//   - "route:T:P", T the table of our vrf device NAME: key NAME|P;
//   - "VRF|NAME" (its result changed) or "link:NAME" (its device came,
//     went or changed, maybe its table): every NAME|P key, pending or
//     applied.
//
// A main table's IPv6 resource may read as "route:T:P": that enqueues a
// key for nothing at worst.
func (o *Orch) enqueueVrfRouteKeys(res string, vrfs *vrfTables) {
	var name string
	switch {
	case len(res) > len("route:") && res[:len("route:")] == "route:":
		t, p, ok := strings.Cut(res[len("route:"):], ":")
		if !ok || len(t) != 4 {
			return
		}
		// Our VRFs' tables are 1001-2000 (pickVrfTable), the range the
		// view keeps.
		table, err := strconv.Atoi(t)
		if err != nil || table < vrfTableMin || table > vrfTableMax {
			return
		}
		if !vrfs.read {
			vrfs.byTable, vrfs.read = o.view.ourVrfTables(), true
		}
		vrf, ok := vrfs.byTable[table]
		if !ok {
			return
		}
		if k := vrf + schema.ConfigSep + p; o.cfg.Has(schema.TableStaticRoute, k) {
			o.enqueue(schema.ConfigKey(schema.TableStaticRoute, k))
		}
		return
	case strings.HasPrefix(res, schema.TableVRF+schema.ConfigSep):
		name = res[len(schema.TableVRF+schema.ConfigSep):]
	case strings.HasPrefix(res, "link:"):
		name = res[len("link:"):]
	}
	if !inVRF(name) || !schema.IsVRFName(name) {
		return
	}
	for _, k := range o.cfg.KeysWithPrefix(schema.TableStaticRoute, name+schema.ConfigSep) {
		o.enqueue(schema.ConfigKey(schema.TableStaticRoute, k))
	}
}
