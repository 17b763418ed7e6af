package impaird

import (
	"testing"

	"github.com/switchyard-net/switchyard/bpf"
	"github.com/switchyard-net/switchyard/internal/engine"
	"github.com/switchyard-net/switchyard/schema"
)

func TestSafeDirName(t *testing.T) {
	for name, want := range map[string]bool{
		"Ethernet0": true, "eth-1.100": true,
		"": false, ".": false, "..": false, "a/b": false, "../x": false, "x\x00": false, "abcdefghijklmnop": false, "a:b": false,
	} {
		if got := safeDirName(name); got != want {
			t.Errorf("safeDirName(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestRefresh: a port's view is copied from the engine's cache, flows
// indexed by port, keys without a port under badKeysPort.
func TestRefresh(t *testing.T) {
	d := newDaemon(Config{}, nil)
	d.h = &engine.Handle{Cache: engine.NewCache(nil)}
	c := d.h.Cache
	c.Index(schema.TableImpairmentFlow, flowPort)
	c.Set(schema.TableImpairment, "Ethernet0", schema.Fields{"loss": "1"})
	c.Set(schema.TableImpairmentFlow, "Ethernet0|a", schema.Fields{"proto": "udp"})
	c.Set(schema.TableImpairmentFlow, "Ethernet4|b", schema.Fields{})
	c.Set(schema.TableImpairmentFlow, "|odd", schema.Fields{})
	for _, p := range []string{"Ethernet0", "Ethernet4", badKeysPort} {
		d.refresh(p)
	}
	if d.imp["Ethernet0"]["loss"] != "1" || d.flows["Ethernet0"]["Ethernet0|a"] == nil || d.flows["Ethernet4"]["Ethernet4|b"] == nil || d.flows[""]["|odd"] == nil {
		t.Fatalf("imp %v flows %v", d.imp, d.flows)
	}
	if e := d.entries["IMPAIRMENT|Ethernet0"]; e.Gen != schema.Generation(schema.Fields{"loss": "1"}) {
		t.Fatalf("entry %+v", e)
	}
	c.Delete(schema.TableImpairmentFlow, "Ethernet4|b")
	c.Delete(schema.TableImpairment, "Ethernet0")
	d.refresh("Ethernet0")
	d.refresh("Ethernet4")
	if d.flows["Ethernet4"] != nil || d.imp["Ethernet0"] != nil || d.flows["Ethernet0"]["Ethernet0|a"] == nil {
		t.Fatalf("after deletes: imp %v flows %v", d.imp, d.flows)
	}
}

func TestCounterHash(t *testing.T) {
	f := counterHash(bpf.Counters{RxPackets: 10, RxBytes: 640, Passed: 7, DroppedLoss: 2, DroppedRate: 1, Corrupted: 3})
	want := map[string]string{"rx_packets": "10", "rx_bytes": "640", "passed": "7", "dropped_loss": "2", "dropped_rate": "1", "corrupted": "3"}
	if len(f) != len(counterFields) {
		t.Fatalf("%v has fields other than %v", f, counterFields)
	}
	for k, v := range want {
		if f[k] != v {
			t.Errorf("%s = %q, want %q", k, f[k], v)
		}
	}
}

// TestHoldRelease: a held key keeps its hash (its impairment stays) and
// gets no result; set again it is no longer held; releaseHeld forgets the
// rest and names their ports.
