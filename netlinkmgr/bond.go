package netlinkmgr

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// BondOptions are bond attributes:
//
//	ip link add NAME type bond mode M [miimon N] [min_links N] [lacp_rate slow|fast]
//	ip link set NAME type bond [miimon N] [min_links N] [lacp_rate slow|fast]
//
// nil fields are left as the kernel has them. The kernel changes
// lacp_rate only while the bond is down, and the mode only while it is down
// without ports: Set does not change the mode.
type BondOptions struct {
	Mode     string  // "802.3ad", "balance-rr", "active-backup", ...: Add only; read back
	Miimon   *int    // link monitoring interval, ms
	MinLinks *int    // ports that must be up for the bond to be up
	LacpRate *string // 802.3ad: "slow" (LACPDU every 30 s) or "fast" (every 1 s)
	// ActiveAggregator is the 802.3ad aggregator in use (read only; 0 =
	// none or not reported — the netlink library leaves IFLA_BOND_AD_INFO
	// undecoded, so a real kernel's bond reads 0): a port is selected when
	// its AggregatorID equals it (Selected).
	ActiveAggregator int
}

// BondSlaveInfo is the state of one port of a bond (read only), as
// "ip -d link show PORT" prints it after "bond_slave".
type BondSlaveInfo struct {
	State        string // "active" or "backup"
	MiiStatus    string // "up" or "down"
	AggregatorID int    // 802.3ad aggregator the port is attached to
	// ActorOperPortState and PartnerOperPortState are the LACP port
	// state bits (IEEE 802.1AX: 0x04 aggregation, 0x08 synchronization,
	// 0x10 collecting, 0x20 distributing).
	ActorOperPortState   int
	PartnerOperPortState int
}

// Selected reports whether the port is in the bond's active aggregator
// and LACP lets it carry traffic (collecting and distributing). When the
// bond's ActiveAggregator is unknown (0: the netlink library does not
// decode IFLA_BOND_AD_INFO, so a real kernel's bond never reports it), the
// port's own state answers: the bond driver makes the ports of the active
// aggregator "active" and all others "backup".
func (s *BondSlaveInfo) Selected(bond *BondOptions) bool {
	const collDist = 0x10 | 0x20
	if bond == nil || s.ActorOperPortState&collDist != collDist {
		return false
	}
	if bond.ActiveAggregator != 0 {
		return s.AggregatorID == bond.ActiveAggregator
	}
	return s.State == "active" && s.AggregatorID != 0
}

// setString is the op-log form of the options Set sends.
func (b *BondOptions) setString() string {
	var s []string
	if b.Miimon != nil {
		s = append(s, "miimon="+strconv.Itoa(*b.Miimon))
	}
	if b.MinLinks != nil {
		s = append(s, "min_links="+strconv.Itoa(*b.MinLinks))
	}
	if b.LacpRate != nil {
		s = append(s, "lacp_rate="+*b.LacpRate)
	}
	return strings.Join(s, " ")
}

// newBond is the library's link for Add of kind bond.
func newBond(attrs netlink.LinkAttrs, o *BondOptions) (*netlink.Bond, error) {
	b := netlink.NewLinkBond(attrs)
	if o == nil {
		return b, nil
	}
	if o.Mode != "" {
		m, ok := netlink.StringToBondModeMap[o.Mode]
		if !ok {
			return nil, fmt.Errorf("bond mode %q: %w", o.Mode, unix.EINVAL)
		}
		b.Mode = m
	}
	if o.Miimon != nil {
		b.Miimon = *o.Miimon
	}
	if o.MinLinks != nil {
		b.MinLinks = *o.MinLinks
	}
	if o.LacpRate != nil {
		r, ok := netlink.StringToBondLacpRateMap[*o.LacpRate]
		if !ok {
			return nil, fmt.Errorf("lacp_rate %q: %w", *o.LacpRate, unix.EINVAL)
		}
		b.LacpRate = r
	}
	return b, nil
}

// bondInfo reads a bond's options back.
func bondInfo(t *netlink.Bond) *BondOptions {
	miimon, minLinks, rate := t.Miimon, t.MinLinks, t.LacpRate.String()
	o := &BondOptions{Mode: t.Mode.String(), Miimon: &miimon, MinLinks: &minLinks, LacpRate: &rate}
	if t.AdInfo != nil {
		o.ActiveAggregator = t.AdInfo.AggregatorId
	}
	return o
}

// bondSlaveInfo reads a bond port's state.
func bondSlaveInfo(s *netlink.BondSlave) *BondSlaveInfo {
	st := "backup"
	if s.State == netlink.BondStateActive {
		st = "active"
	}
	mii := "down"
	if s.MiiStatus == netlink.BondLinkUp {
		mii = "up"
	}
	return &BondSlaveInfo{State: st, MiiStatus: mii, AggregatorID: int(s.AggregatorId),
		ActorOperPortState: int(s.AdActorOperPortState), PartnerOperPortState: int(s.AdPartnerOperPortState)}
}

// setBondOptions sends one RTM_NEWLINK carrying only the ifindex and the
// bond options, as "ip link set NAME type bond ..." does (see
// setBridgeOptions for why not the library's LinkModify).
func (k *kernel) setBondOptions(index int, b *BondOptions) error {
	req, info, data := k.linkOptionsRequest(index, "bond")
	if b.Miimon != nil {
		data.AddRtAttr(nl.IFLA_BOND_MIIMON, nl.Uint32Attr(uint32(*b.Miimon)))
	}
	if b.MinLinks != nil {
		data.AddRtAttr(nl.IFLA_BOND_MIN_LINKS, nl.Uint32Attr(uint32(*b.MinLinks)))
	}
	if b.LacpRate != nil {
		r, ok := netlink.StringToBondLacpRateMap[*b.LacpRate]
		if !ok {
			return fmt.Errorf("lacp_rate %q: %w", *b.LacpRate, unix.EINVAL)
		}
		data.AddRtAttr(nl.IFLA_BOND_AD_LACP_RATE, nl.Uint8Attr(uint8(r)))
	}
	req.AddData(info)
	_, err := req.Execute(unix.NETLINK_ROUTE, 0)
	return err
}
