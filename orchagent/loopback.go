package orchagent

import (
	"strings"

	"github.com/switchyard-net/switchyard/netlinkmgr"
	"github.com/switchyard-net/switchyard/schema"
)

// LOOPBACK_INTERFACE follows intfmgrd's model: LoopbackN is a dummy
// device, created by the first key that names it (bare or address: older
// SONiC configs list only the addresses) and deleted with the last one.
// The addresses and the bare key's vrf_name and admin_status are applied
// by intfApplier as for INTERFACE.

// ensureLoopback makes the dummy device name exist, up unless its bare key
// says admin_status down, marked as ours. An existing device of that name
// that is not our dummy is a conflict. It returns nil when the device is
// there, or the outcome to report.
func (o *Orch) ensureLoopback(key, name string, refs []string) *outcome {
	cur, ok, err := o.getLink(name)
	if err != nil {
		out := kernelOut(err, refs)
		return &out
	}
	if ok {
		if !ownedDev(cur, "dummy") {
			out := errorOut(devConflict(schema.TableLoopback, key, cur, "dummy"), refs)
			return &out
		}
		return nil
	}
	up, alias := true, ownerAlias
	if f, ok := o.config(schema.TableLoopback, name); ok {
		if in, err := schema.ParseInterface(schema.TableLoopback, name, f); err == nil && in.AdminUp != nil {
			up = *in.AdminUp
		}
	}
	l := netlinkmgr.LinkInfo{Name: name, Kind: "dummy", AdminUp: &up, Alias: &alias}
	if err := o.act(schema.TableLoopback, key, "create dummy device "+name,
		func() error { return o.k.Links().Add(l) }); err != nil {
		out := kernelOut(err, refs)
		return &out
	}
	// The link event re-enqueues the loopback's other keys; the view
	// learns of the device from it too, so nothing is noted here.
	return nil
}

// dropLoopback deletes our dummy device name once no LOOPBACK_INTERFACE
// key names it any more.
func (o *Orch) dropLoopback(key, name string) outcome {
	if o.loopbackNamed(name) {
		return okOut(nil)
	}
	cur, ok, err := o.getLink(name)
	if err != nil {
		return kernelOut(err, nil)
	}
	if !ok || !ownedDev(cur, "dummy") {
		return okOut(nil)
	}
	if err := o.act(schema.TableLoopback, key, "delete dummy device "+name,
		func() error { return ignoreNotFound(o.k.Links().Del(name)) }); err != nil {
		return kernelOut(err, nil)
	}
	return okOut(nil)
}

// loopbackNamed reports whether a LOOPBACK_INTERFACE key (bare or
// address) names loopback name.
func (o *Orch) loopbackNamed(name string) bool {
	for _, k := range o.cfg.Keys(schema.TableLoopback) {
		if k == name || strings.HasPrefix(k, name+schema.ConfigSep) {
			return true
		}
	}
	return o.exists != nil && o.exists(schema.TableLoopback, name)
}
