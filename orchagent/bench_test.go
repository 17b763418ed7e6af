package orchagent

import (
	"context"
	"fmt"
	"testing"

	"github.com/switchyard-net/switchyard/netlinkmgr"
)

// BenchmarkReconcileRouteFake is orchagent's own cost per STATIC_ROUTE key
// (parse, dependency check, view lookup, one Replace on the Fake, result),
// without Redis or the kernel: go test -bench ReconcileRoute ./orchagent
func BenchmarkReconcileRouteFake(b *testing.B) {
	k := netlinkmgr.NewFake().AddPort("Ethernet0")
	on := true
	if err := k.Links().Set(netlinkmgr.LinkInfo{Name: "Ethernet0", AdminUp: &on}); err != nil {
		b.Fatal(err)
	}
	o := New(Options{Kernel: k, Enqueue: func(string) {}})
	if err := o.Prime(); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	keys := make([]string, b.N)
	for i := range keys {
		p := fmt.Sprintf("%d.%d.%d.0/24", 20+i/65536, i/256%256, i%256)
		o.cfg.Set("STATIC_ROUTE", p, fields("ifname", "Ethernet0"))
		keys[i] = "STATIC_ROUTE|" + p
	}
	b.ResetTimer()
	for _, key := range keys {
		if err := o.Reconcile(ctx, key); err != nil {
			b.Fatal(err)
		}
	}
}
