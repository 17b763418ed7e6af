package impaird

import (
	"sort"
	"testing"

	"github.com/sirupsen/logrus"

	"github.com/switchyard-net/switchyard/bpf"
	"github.com/switchyard-net/switchyard/internal/redisx"
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

// TestSetConfig: events file raw hashes under their port; the port to
// reconcile is returned; deletes forget.
func TestSetConfig(t *testing.T) {
	d := newDaemon(Config{}, nil)
	for _, tc := range []struct {
		ev   redisx.Event
		port string
	}{
		{redisx.Event{Table: schema.TableImpairment, Key: "Ethernet0", Fields: map[string]string{"loss": "1"}}, "Ethernet0"},
		{redisx.Event{Table: schema.TableImpairmentFlow, Key: "Ethernet0|a", Fields: map[string]string{"proto": "udp"}}, "Ethernet0"},
		{redisx.Event{Table: schema.TableImpairmentFlow, Key: "Ethernet4|b", Fields: map[string]string{}}, "Ethernet4"},
		{redisx.Event{Table: schema.TableImpairmentFlow, Key: "|odd"}, "\x00|odd"},
		{redisx.Event{Table: "PORT", Key: "Ethernet0"}, ""},
	} {
		if got := d.setConfig(tc.ev); got != tc.port {
			t.Errorf("%+v: port %q, want %q", tc.ev, got, tc.port)
		}
	}
	ports := d.knownPorts()
	sort.Strings(ports)
	if len(ports) != 3 || ports[1] != "Ethernet0" || ports[2] != "Ethernet4" {
		t.Fatalf("known ports %q", ports)
	}
	d.setConfig(redisx.Event{Table: schema.TableImpairmentFlow, Key: "Ethernet4|b", Deleted: true})
	d.setConfig(redisx.Event{Table: schema.TableImpairment, Key: "Ethernet0", Deleted: true})
	if len(d.flows["Ethernet4"]) != 0 || d.imp["Ethernet0"] != nil || d.flows["Ethernet0"]["Ethernet0|a"] == nil {
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
func TestHoldRelease(t *testing.T) {
	d := newDaemon(Config{Log: logrus.NewEntry(logrus.New())}, nil)
	d.setConfig(redisx.Event{Table: schema.TableImpairment, Key: "Ethernet0", Fields: map[string]string{"loss": "1"}})
	d.setConfig(redisx.Event{Table: schema.TableImpairmentFlow, Key: "Ethernet0|a", Fields: map[string]string{"loss": "2"}})
	d.setConfig(redisx.Event{Table: schema.TableImpairmentFlow, Key: "Ethernet4|b", Fields: map[string]string{"loss": "3"}})
	if d.hold(redisx.Event{Table: schema.TableImpairment, Key: "Ethernet8", Deleted: true}) {
		t.Error("held a key that was never configured")
	}
	for _, ev := range []redisx.Event{
		{Table: schema.TableImpairment, Key: "Ethernet0", Deleted: true},
		{Table: schema.TableImpairmentFlow, Key: "Ethernet0|a", Deleted: true},
		{Table: schema.TableImpairmentFlow, Key: "Ethernet4|b", Deleted: true},
	} {
		if !d.hold(ev) {
			t.Errorf("%+v not held", ev)
		}
	}
	if d.imp["Ethernet0"] == nil || d.flows["Ethernet4"]["Ethernet4|b"] == nil || len(d.held) != 3 {
		t.Fatalf("held keys forgotten: imp %v flows %v held %v", d.imp, d.flows, d.held)
	}
	d.setConfig(redisx.Event{Table: schema.TableImpairment, Key: "Ethernet0", Fields: map[string]string{"loss": "5"}})
	if len(d.held) != 2 {
		t.Fatalf("reloaded key still held: %v", d.held)
	}
	ports := d.releaseHeld()
	sort.Strings(ports)
	if len(ports) != 2 || ports[0] != "Ethernet0" || ports[1] != "Ethernet4" {
		t.Errorf("released ports %q", ports)
	}
	if d.imp["Ethernet0"]["loss"] != "5" || d.flows["Ethernet0"] != nil || d.flows["Ethernet4"] != nil || len(d.held) != 0 {
		t.Errorf("after release: imp %v flows %v held %v", d.imp, d.flows, d.held)
	}
}
