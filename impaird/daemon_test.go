package impaird

import (
	"sort"
	"testing"

	"github.com/switchyard-net/switchyard/bpf"
	"github.com/switchyard-net/switchyard/internal/redisx"
	"github.com/switchyard-net/switchyard/schema"
)

func TestSafeDirName(t *testing.T) {
	for name, want := range map[string]bool{
		"Ethernet0": true, "eth-1.100": true,
		"": false, ".": false, "..": false, "a/b": false, "../x": false, "x\x00": false, "abcdefghijklmnop": false,
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
