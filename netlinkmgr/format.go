package netlinkmgr

import (
	"fmt"
	"strconv"
	"strings"
)

// Text forms shared by error messages and the Fake's op log. They read like
// the iproute2 command line that would make the same change.

// setString lists the set (non-nil) fields of l, e.g.
// "mtu=9100 mac=02:00:00:00:00:01 up master=Bridge alias=\"uplink\"".
func (l LinkInfo) setString() string {
	var b []string
	if l.MTU != nil {
		b = append(b, "mtu="+strconv.Itoa(*l.MTU))
	}
	if l.MAC != nil {
		b = append(b, "mac="+l.MAC.String())
	}
	if l.AdminUp != nil {
		if *l.AdminUp {
			b = append(b, "up")
		} else {
			b = append(b, "down")
		}
	}
	if l.Master != nil {
		if *l.Master == "" {
			b = append(b, "nomaster")
		} else {
			b = append(b, "master="+*l.Master)
		}
	}
	if l.Alias != nil {
		b = append(b, "alias="+strconv.Quote(*l.Alias))
	}
	if l.Bond != nil {
		if bs := l.Bond.setString(); bs != "" {
			b = append(b, bs)
		}
	}
	if l.Bridge != nil {
		if l.Bridge.VlanFiltering != nil {
			b = append(b, "vlan_filtering="+boolDigit(*l.Bridge.VlanFiltering))
		}
		if l.Bridge.DefaultPVID != nil {
			b = append(b, "default_pvid="+strconv.Itoa(int(*l.Bridge.DefaultPVID)))
		}
	}
	return strings.Join(b, " ")
}

// hasSet reports whether any writable field of l is set.
func (l LinkInfo) hasSet() bool {
	return l.MTU != nil || l.MAC != nil || l.AdminUp != nil || l.Master != nil || l.Alias != nil ||
		(l.Bridge != nil && (l.Bridge.VlanFiltering != nil || l.Bridge.DefaultPVID != nil)) ||
		(l.Bond != nil && l.Bond.setString() != "")
}

// addString is the op-log form of a link add.
func (l LinkInfo) addString() string {
	s := "link add " + l.Name
	if l.Kind != "" {
		s += " type " + l.Kind
	}
	if l.Vlan != nil {
		s += fmt.Sprintf(" id=%d link=%s", l.Vlan.ID, l.Vlan.Parent)
	}
	if l.Veth != nil {
		s += " peer=" + l.Veth.PeerName
	}
	if l.Vrf != nil {
		s += fmt.Sprintf(" table=%d", l.Vrf.Table)
	}
	if l.Bond != nil && l.Bond.Mode != "" {
		s += " mode=" + l.Bond.Mode
	}
	if v := l.Vxlan; v != nil {
		s += fmt.Sprintf(" id=%d", v.VNI)
		if v.Local.IsValid() {
			s += " local=" + v.Local.String()
		}
		if v.Remote.IsValid() {
			s += " remote=" + v.Remote.String()
		}
		s += fmt.Sprintf(" dstport=%d learning=%v", v.Port, v.Learning)
	}
	if rest := l.setString(); rest != "" {
		s += " " + rest
	}
	return s
}

func boolDigit(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// String is the iproute2-like form of a. "10.0.0.1/24 dev Ethernet0".
func (a AddrInfo) String() string { return a.Prefix.String() + " dev " + a.Link }

// String is the iproute2-like form of r:
// "10.2.0.0/16 proto 201 metric 0 table 254 nexthop via 10.0.0.2 dev Ethernet0".
func (r RouteInfo) String() string {
	s := r.Dst.String()
	if r.Blackhole {
		s = "blackhole " + s
	}
	s += fmt.Sprintf(" proto %d metric %d table %d", r.Protocol, r.Metric, tableOf(r.Table))
	for _, h := range r.NextHops {
		s += " nexthop"
		if h.Gateway.IsValid() {
			s += " via " + h.Gateway.String()
		}
		if h.Link != "" {
			s += " dev " + h.Link
		}
		if h.Weight > 1 {
			s += " weight " + strconv.Itoa(h.Weight)
		}
	}
	return s
}

// object is the short form used in errors: "route 10.2.0.0/16 table 254".
func (r RouteInfo) object() string {
	return fmt.Sprintf("route %s table %d", r.Dst, tableOf(r.Table))
}

// String is the bridge(8)-like form of v: "dev Ethernet0 vid 100 pvid untagged".
func (v BridgeVlanInfo) String() string {
	s := fmt.Sprintf("dev %s vid %d", v.Link, v.VID)
	if v.PVID {
		s += " pvid"
	}
	if v.Untagged {
		s += " untagged"
	}
	if v.Self {
		s += " self"
	}
	return s
}

// String is the bridge(8)-like form of f: "00:11:22:33:44:55 dev Ethernet0 vlan 100".
func (f FdbInfo) String() string {
	s := f.MAC.String() + " dev " + f.Link
	if f.Vlan != 0 {
		s += " vlan " + strconv.Itoa(int(f.Vlan))
	}
	if f.Dst.IsValid() {
		s += " dst " + f.Dst.String()
	}
	return s
}

func tableOf(t int) int {
	if t == 0 {
		return MainTable
	}
	return t
}
