package syncd

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/switchyard-net/switchyard/netlinkmgr"
	"github.com/switchyard-net/switchyard/schema"
)

// This file mirrors PortChannels (Linux bonds, docs/orchagent.md) as
// SONiC's teamsyncd does: STATE_DB LAG_TABLE|<bond> and, per member port,
// LAG_MEMBER_TABLE|<bond>|<port>.

// STATE_DB tables of the LAG mirror. orchagent files its PORTCHANNEL
// results under PORTCHANNEL_TABLE, so both are syncd's alone.
const (
	StateLagTable       = "LAG_TABLE"
	StateLagMemberTable = "LAG_MEMBER_TABLE"
)

// LAG field names: teamsyncd's (admin_status, oper_status, mtu; state ok in
// STATE_DB LAG_TABLE; status enabled/disabled in LAG_MEMBER_TABLE) plus
// min_links, CONFIG_DB PORTCHANNEL's name for the bond's min_links.
const (
	FieldMinLinks     = "min_links"
	FieldLagState     = "state"
	FieldMemberStatus = "status"
)

// Member status values (teamsyncd's): enabled when LACP selected the port
// and it collects and distributes, disabled otherwise.
const (
	MemberEnabled  = "enabled"
	MemberDisabled = "disabled"
)

// IsLag reports whether a link is mirrored in LAG_TABLE: every bond.
func IsLag(l netlinkmgr.LinkInfo) bool { return l.Kind == "bond" }

// LagFields renders a bond as its LAG_TABLE entry: admin_status,
// oper_status, mtu, min_links (when the kernel reported it) and state ok.
func LagFields(l netlinkmgr.LinkInfo) schema.Fields {
	f := schema.Fields{FieldOperStatus: upDown(LinkOperUp(l)), FieldLagState: "ok"}
	if l.AdminUp != nil {
		f[FieldAdminStatus] = upDown(*l.AdminUp)
	}
	if l.MTU != nil {
		f[FieldMTU] = strconv.Itoa(*l.MTU)
	}
	if l.Bond != nil && l.Bond.MinLinks != nil {
		f[FieldMinLinks] = strconv.Itoa(*l.Bond.MinLinks)
	}
	return f
}

// MemberFields renders a bond port as its LAG_MEMBER_TABLE entry: status
// enabled when the port is selected (netlinkmgr.BondSlaveInfo.Selected: in
// the bond's active aggregator, collecting and distributing).
func MemberFields(port, bond netlinkmgr.LinkInfo) schema.Fields {
	st := MemberDisabled
	if port.BondSlave != nil && port.BondSlave.Selected(bond.Bond) {
		st = MemberEnabled
	}
	return schema.Fields{FieldMemberStatus: st}
}

// MemberKey is the LAG_MEMBER_TABLE key "<bond>|<port>".
func MemberKey(bond, port string) string { return bond + schema.StateSep + port }

// masterOf returns the name of l's master as the View knows it (by index,
// so a renamed master is followed), or "".
func (v *View) masterOf(l netlinkmgr.LinkInfo) string {
	if l.MasterIdx != 0 {
		return v.linkName[l.MasterIdx]
	}
	return ""
}

// lagOf returns the bond l is a member of, if any.
func (v *View) lagOf(l netlinkmgr.LinkInfo) (netlinkmgr.LinkInfo, bool) {
	m := v.masterOf(l)
	if m == "" {
		return netlinkmgr.LinkInfo{}, false
	}
	b, ok := v.links[m]
	if !ok || !IsLag(b) {
		return netlinkmgr.LinkInfo{}, false
	}
	return b, true
}

// touchLag marks the LAG keys link l (as the View holds it now) feeds:
// its LAG_TABLE key when it is a bond, with its members' keys (their
// selection depends on the bond's active aggregator), and its
// LAG_MEMBER_TABLE key when it is a bond's port.
func (v *View) touchLag(l netlinkmgr.LinkInfo) {
	if IsLag(l) {
		v.touch(StateLagTable, l.Name)
		for _, p := range v.links {
			if l.Index != 0 && p.MasterIdx == l.Index {
				v.touch(StateLagMemberTable, MemberKey(l.Name, p.Name))
			}
		}
	}
	if b, ok := v.lagOf(l); ok {
		v.touch(StateLagMemberTable, MemberKey(b.Name, l.Name))
	}
}

// wantLag answers Want for the LAG tables.
func (v *View) wantLag(table, key string) (schema.Fields, bool) {
	if table == StateLagTable {
		l, ok := v.links[key]
		if !ok || !IsLag(l) {
			return nil, false
		}
		return LagFields(l), true
	}
	bond, port, ok := strings.Cut(key, schema.StateSep)
	if !ok {
		return nil, false
	}
	p, ok := v.links[port]
	if !ok {
		return nil, false
	}
	b, ok := v.lagOf(p)
	if !ok || b.Name != bond {
		return nil, false
	}
	return MemberFields(p, b), true
}

// lagKeys lists the LAG keys the mirror should hold now.
func (v *View) lagKeys() []string {
	var out []string
	for n, l := range v.links {
		if IsLag(l) {
			out = append(out, StateKey(StateLagTable, n))
		}
		if b, ok := v.lagOf(l); ok {
			out = append(out, StateKey(StateLagMemberTable, MemberKey(b.Name, n)))
		}
	}
	sort.Strings(out)
	return out
}

// lagSig is what of a link the LAG mirror shows, to tell whether a
// listed copy (RefreshLag) changes anything.
func lagSig(v *View, l netlinkmgr.LinkInfo) string {
	var b strings.Builder
	if IsLag(l) {
		b.WriteString(fmt.Sprint(LagFields(l)))
		if l.Bond != nil {
			b.WriteString(" agg=" + strconv.Itoa(l.Bond.ActiveAggregator))
		}
	}
	if bond, ok := v.lagOf(l); ok {
		b.WriteString(" member=" + fmt.Sprint(MemberFields(l, bond)))
		if s := l.BondSlave; s != nil {
			b.WriteString(" slave=" + strconv.Itoa(s.AggregatorID) + "/" + strconv.Itoa(s.ActorOperPortState))
		}
	}
	return b.String()
}

// RefreshLag folds a listed copy of a bond or bond port into the View when
// what the LAG mirror shows of it differs: the bond driver announces a
// port's active/backup change, but not every LACP state or active
// aggregator change, so the daemon feeds its periodic link dump (the
// counters interval) through here. It reports whether the link was
// applied.
func (v *View) RefreshLag(l netlinkmgr.LinkInfo) bool {
	if v.listing || l.Name == "" {
		return false
	}
	old, ok := v.links[l.Name]
	if !ok || old.Index != l.Index {
		return false // not known yet: its event is on the way
	}
	if !IsLag(l) && l.BondSlave == nil && old.BondSlave == nil {
		return false
	}
	if lagSig(v, old) == lagSig(v, l) {
		return false
	}
	v.applyLink(l, false)
	return true
}
