package orchagent

import (
	"net/netip"
	"testing"

	"github.com/sirupsen/logrus"
	"github.com/sirupsen/logrus/hooks/test"
	"github.com/switchyard-net/switchyard/netlinkmgr"
	"github.com/switchyard-net/switchyard/schema"
)

// An address of ours the view has not seen (its echo not consumed yet)
// fails its create with EEXIST and is then read: the key is ok, and the
// log says "there already, ours" at debug, not "kernel change failed" at
// warning. Batched and one by one.
func TestAddrBehindViewNoWarning(t *testing.T) {
	for _, batched := range []bool{true, false} {
		r := newRig(t, netlinkmgr.NewFake().AddPort("Ethernet0"))
		log, hook := test.NewNullLogger()
		log.SetLevel(logrus.DebugLevel)
		r.o.log = logrus.NewEntry(log)
		r.batched = batched
		r.set("INTERFACE", "Ethernet0|10.0.0.1/24")
		r.settle()
		r.want("INTERFACE|Ethernet0|10.0.0.1/24", schema.StateOK, "")
		r.o.view.mu.Lock()
		delete(r.o.view.addrs["Ethernet0"], netip.MustParsePrefix("10.0.0.1/24"))
		r.o.view.mu.Unlock()
		hook.Reset()
		r.set("INTERFACE", "Ethernet0|10.0.0.1/24", "NULL", "NULL")
		r.reconcile(r.o.Drain())
		r.want("INTERFACE|Ethernet0|10.0.0.1/24", schema.StateOK, "")
		for _, e := range hook.AllEntries() {
			if e.Level <= logrus.WarnLevel {
				t.Errorf("batched %v: logged at %v: %s %v", batched, e.Level, e.Message, e.Data)
			}
		}
	}
}

func TestAddrRef(t *testing.T) {
	for _, s := range []string{"10.0.0.1/24", "2001:db8::1/64", "::ffff:10.1.2.3/120"} {
		p := netip.MustParsePrefix(s)
		if got, want := addrRef("Ethernet0", p), resAddr("Ethernet0", normPrefix(p).String()); got != want {
			t.Errorf("addrRef(%s) = %q, want %q", s, got, want)
		}
	}
}
