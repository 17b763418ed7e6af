package orchagent

import (
	"errors"
	"fmt"
	"strings"

	"github.com/switchyard-net/switchyard/netlinkmgr"
	"github.com/switchyard-net/switchyard/schema"
	"golang.org/x/sys/unix"
)

// PORTCHANNEL is a Linux bond in 802.3ad mode: LACP with real LACPDUs,
// as SONiC's teamd gives it, without a user-space daemon. The bond is
// orchagent's when it carries the alias switchyard (as loopbacks and
// VRFs).

// bondMiimon is the link monitoring interval of our bonds (ms): a port's
// carrier loss deselects it within this time.
const bondMiimon = 100

// applyPortChannel makes PortChannelN a bond (mode 802.3ad, miimon 100,
// min_links, lacp_rate fast when fast_rate is true), with admin_status and
// mtu. A change of fast_rate takes the bond down for the change (the
// kernel takes lacp_rate only then) and up again.
//
// The key expects the echoes of its writes (pcecho.go): the bond's events
// do not re-enqueue it while the view shows what it made.
func (o *Orch) applyPortChannel(key string, f schema.Fields) outcome {
	ck := schema.ConfigKey(schema.TablePortChannel, key)
	out := o.pcApply(key, ck, f)
	o.echoesAfter(ck, out)
	return out
}

func (o *Orch) pcApply(key, ck string, f schema.Fields) outcome {
	refs := []string{resLink(key)}
	pc, err := schema.ParsePortChannel(key, f)
	if err != nil {
		return errorOut(err, refs)
	}
	o.expectEchoes(ck, pcFinal(pc.Name, pc.AdminUp, pc.MTU), pcInterim(pc.Name))
	// A bond the view does not know is created without a read first
	// (the read is a round trip whose answer, a bond's, is parsed in
	// full): EEXIST, the view behind the kernel, reads it then.
	var cur netlinkmgr.LinkInfo
	ok := false
	if _, known := o.view.viewLink(pc.Name); known {
		if cur, ok, err = o.getLink(pc.Name); err != nil {
			return kernelOut(err, refs)
		}
	}
	if !ok {
		up, alias, mii, minLinks, rate := true, ownerAlias, bondMiimon, 1, "slow"
		if pc.AdminUp != nil {
			up = *pc.AdminUp
		}
		if pc.MinLinks != nil {
			minLinks = *pc.MinLinks
		}
		if pc.FastRate != nil && *pc.FastRate {
			rate = "fast"
		}
		l := netlinkmgr.LinkInfo{Name: pc.Name, Kind: "bond", AdminUp: &up, MTU: pc.MTU, Alias: &alias,
			Bond: &netlinkmgr.BondOptions{Mode: "802.3ad", Miimon: &mii, MinLinks: &minLinks, LacpRate: &rate}}
		if err := o.act(schema.TablePortChannel, key, fmt.Sprintf("create bond %s mode 802.3ad miimon %d min_links %d lacp_rate %s",
			pc.Name, mii, minLinks, rate), func() error { return o.k.Links().Add(l) }); err == nil {
			return okOut(refs)
		} else if !errors.Is(err, unix.EEXIST) {
			return kernelOut(err, refs)
		}
		if cur, ok, err = o.getLink(pc.Name); err != nil {
			return kernelOut(err, refs)
		}
		if !ok { // gone again since: the next event retries
			return kernelOut(fmt.Errorf("PORTCHANNEL|%s: create bond %s: it existed, then vanished: %w", key, pc.Name, unix.EEXIST), refs)
		}
	}
	if !ownedDev(cur, "bond") || cur.Bond == nil {
		return errorOut(devConflict(schema.TablePortChannel, key, cur, "bond"), refs)
	}
	if cur.Bond.Mode != "802.3ad" {
		return errorOut(fmt.Errorf("PORTCHANNEL|%s: bond %s is in mode %s, not 802.3ad: delete it and the key applies again", key, pc.Name, cur.Bond.Mode), refs)
	}
	up := pc.AdminUp // nil: not managed
	if pc.FastRate != nil {
		rate := "slow"
		if *pc.FastRate {
			rate = "fast"
		}
		if cur.Bond.LacpRate == nil || *cur.Bond.LacpRate != rate {
			was, down := cur.AdminUp != nil && *cur.AdminUp, false
			if err := o.act(schema.TablePortChannel, key, "set "+pc.Name+" down type bond lacp_rate "+rate, func() error {
				return o.k.Links().Set(netlinkmgr.LinkInfo{Name: pc.Name, AdminUp: &down, Bond: &netlinkmgr.BondOptions{LacpRate: &rate}})
			}); err != nil {
				return kernelOut(err, refs)
			}
			cur.AdminUp = &down
			if up == nil { // back to what it was
				up = &was
			}
		}
	}
	want, changes := linkDiff(cur, up, pc.MTU, nil, nil)
	bond := &netlinkmgr.BondOptions{}
	if pc.MinLinks != nil && (cur.Bond.MinLinks == nil || *cur.Bond.MinLinks != *pc.MinLinks) {
		bond.MinLinks = pc.MinLinks
		changes = append(changes, fmt.Sprintf("type bond min_links %d", *pc.MinLinks))
	}
	if cur.Bond.Miimon == nil || *cur.Bond.Miimon != bondMiimon {
		mii := bondMiimon
		bond.Miimon = &mii
		changes = append(changes, fmt.Sprintf("type bond miimon %d", mii))
	}
	if bond.MinLinks != nil || bond.Miimon != nil {
		want.Bond = bond
	}
	if len(changes) > 0 {
		if err := o.act(schema.TablePortChannel, key, "set "+pc.Name+" "+strings.Join(changes, " "),
			func() error { return o.k.Links().Set(want) }); err != nil {
			return kernelOut(err, refs)
		}
	}
	return okOut(refs)
}

// removePortChannel deletes our bond; the kernel releases its ports
// (their member keys, waiting on the PortChannel key, see it go).
func (o *Orch) removePortChannel(key string) outcome {
	o.forgetEchoes(schema.ConfigKey(schema.TablePortChannel, key))
	cur, ok, err := o.getLink(key)
	if err != nil {
		return kernelOut(err, nil)
	}
	if !ok || !ownedDev(cur, "bond") {
		return okOut(nil)
	}
	if err := o.act(schema.TablePortChannel, key, "delete bond "+key,
		func() error { return ignoreNotFound(o.k.Links().Del(key)) }); err != nil {
		return kernelOut(err, nil)
	}
	return okOut(nil)
}

// applyPcMember enslaves the port to the PortChannel's bond once the
// PortChannel key is ok: admin down first (as teamd does), then master
// (the bond opens its port itself), in one request. A port with another master (a bridge,
// another bond) is a conflict, not moved. The key expects the echoes of
// its writes (pcecho.go).
func (o *Orch) applyPcMember(key string, f schema.Fields) outcome {
	ck := schema.ConfigKey(schema.TablePortChannelMember, key)
	out := o.pcMemberApply(key, ck, f)
	o.echoesAfter(ck, out)
	return out
}

func (o *Orch) pcMemberApply(key, ck string, f schema.Fields) outcome {
	m, err := schema.ParsePortChannelMember(key, f)
	if err != nil {
		return errorOut(err, nil)
	}
	pk := schema.ConfigKey(schema.TablePortChannel, m.PortChannel)
	refs := []string{resLink(m.Port), pk, resLink(m.PortChannel)}
	if !o.resultOK(pk) {
		return pendingOut("waiting for "+pk, refs)
	}
	o.expectEchoes(ck, memberFinal(m.Port, m.PortChannel), memberInterim(m.Port, m.PortChannel))
	// Already enslaved, says the view: done, without reading the kernel
	// (the events of the enslave re-enqueue the key several times). A
	// change behind our back is a link event on the port, which
	// re-enqueues the key. Before a write the port's master is asked
	// of the kernel as it is now: the kernel would move a port from
	// another master, which we must not. (netlinkmgr answers it from
	// its ifindex cache, kept by the link messages, without a request.)
	bond, bok := o.view.viewLink(m.PortChannel)
	if p, ok := o.view.viewLink(m.Port); ok && bok && bond.Index != 0 && p.MasterIdx == bond.Index {
		return okOut(refs)
	}
	master, err := o.k.Links().Master(m.Port)
	if err != nil {
		if netlinkmgr.IsNotFound(err) {
			return pendingOut(waitingForLink(m.Port), refs)
		}
		return kernelOut(err, refs)
	}
	switch master {
	case m.PortChannel:
		return okOut(refs)
	case "":
	default:
		return errorOut(fmt.Errorf("PORTCHANNEL_MEMBER|%s: %s is enslaved to another master (%s), not %s; not moving it: release it first",
			key, m.Port, master, m.PortChannel), refs)
	}
	// One request: the kernel takes the port down before it enslaves it
	// (ip link set PORT down master PC).
	down, pcName := false, m.PortChannel
	if err := o.act(schema.TablePortChannelMember, key, "set "+m.Port+" down master "+pcName, func() error {
		return o.k.Links().Set(netlinkmgr.LinkInfo{Name: m.Port, AdminUp: &down, Master: &pcName})
	}); err != nil {
		return kernelOut(err, refs)
	}
	return okOut(refs)
}

// removePcMember releases the port from the bond, only when the bond is
// the member key's PortChannel and ours. The kernel leaves a released port
// down; its PORT key, if any, brings it back to its admin_status.
func (o *Orch) removePcMember(key string) outcome {
	o.forgetEchoes(schema.ConfigKey(schema.TablePortChannelMember, key))
	m, err := schema.ParsePortChannelMember(key, nil)
	if err != nil {
		return okOut(nil)
	}
	cur, ok, err := o.getLink(m.Port)
	if err != nil {
		return kernelOut(err, nil)
	}
	if !ok || cur.Master == nil || *cur.Master != m.PortChannel {
		return okOut(nil)
	}
	if b, ok, err := o.getLink(m.PortChannel); err != nil {
		return kernelOut(err, nil)
	} else if !ok || !ownedDev(b, "bond") {
		return okOut(nil)
	}
	none := ""
	if err := o.act(schema.TablePortChannelMember, key, "set "+m.Port+" nomaster (leave "+m.PortChannel+")",
		func() error { return o.k.Links().Set(netlinkmgr.LinkInfo{Name: m.Port, Master: &none}) }); err != nil {
		return kernelOut(err, nil)
	}
	o.enqueue(schema.ConfigKey(schema.TablePort, m.Port))
	return okOut(nil)
}

// sweepBonds deletes our bonds no PORTCHANNEL key names and releases the
// ports of our bonds that no PORTCHANNEL_MEMBER key names.
func (o *Orch) sweepBonds(links []netlinkmgr.LinkInfo) []error {
	var errs []error
	ours := map[int]string{}
	for _, l := range links {
		if !ownedDev(l, "bond") {
			continue
		}
		if o.configured(schema.TablePortChannel, l.Name) {
			ours[l.Index] = l.Name
			continue
		}
		errs = append(errs, o.act(schema.TablePortChannel, l.Name, "sweep: delete bond "+l.Name,
			func() error { return ignoreNotFound(o.k.Links().Del(l.Name)) }))
	}
	for _, l := range links {
		pc, ok := ours[l.MasterIdx]
		if !ok {
			continue
		}
		key := pc + schema.ConfigSep + l.Name
		if o.configured(schema.TablePortChannelMember, key) {
			continue
		}
		none := ""
		errs = append(errs, o.act(schema.TablePortChannelMember, key, "sweep: set "+l.Name+" nomaster (leave "+pc+")",
			func() error { return o.k.Links().Set(netlinkmgr.LinkInfo{Name: l.Name, Master: &none}) }))
	}
	return errs
}
