package syncd

import (
	"fmt"
	"net"
	"net/netip"
	"testing"

	"github.com/switchyard-net/switchyard/netlinkmgr"
	"github.com/switchyard-net/switchyard/schema"
)

// BenchmarkViewBurst10k measures the pure mirror core: folding a burst of
// 10,000 route or FDB events into the View and rendering every touched key
// (what the daemon does per burst, without netlink or Redis).
func BenchmarkViewBurst10k(b *testing.B) {
	const n = 10000
	routes := make([]netlinkmgr.Event, n)
	fdbs := make([]netlinkmgr.Event, n)
	for i := range n {
		r := netlinkmgr.RouteInfo{
			Dst:      netip.PrefixFrom(netip.AddrFrom4([4]byte{172, byte(16 + i/256), byte(i), 0}), 24),
			Protocol: 4, Table: 254,
			NextHops: []netlinkmgr.NextHop{{Gateway: netip.MustParseAddr("10.0.0.1"), Link: "Bridge"}},
		}
		routes[i] = netlinkmgr.Event{Kind: netlinkmgr.EventRoute, Route: &r}
		f := netlinkmgr.FdbInfo{MAC: net.HardwareAddr{2, 1, 0, byte(i >> 16), byte(i >> 8), byte(i)},
			Link: fmt.Sprintf("Ethernet%d", i%2*4), Master: "Bridge", Static: true}
		fdbs[i] = netlinkmgr.Event{Kind: netlinkmgr.EventFdb, Fdb: &f}
	}
	for name, evs := range map[string][]netlinkmgr.Event{"routes": routes, "fdb": fdbs} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				v := NewView()
				for _, ev := range evs {
					v.Apply(ev)
				}
				v.TakeWants(v.DirtyCount(), func(string, schema.Fields, bool) {})
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/event")
		})
	}
}
