package impaird

import (
	"testing"

	"github.com/switchyard-net/switchyard/internal/redisx"
	"github.com/switchyard-net/switchyard/schema"
)

// TestPinName: names without a dot stay as they are (pins of earlier
// releases are adopted); each dot becomes ":2e"; portOfPin inverts
// pinName and refuses names it never gives.
func TestPinName(t *testing.T) {
	for port, want := range map[string]string{
		"Ethernet0": "Ethernet0", "eth-1_x": "eth-1_x", "eth1.100": "eth1:2e100", "a..b": "a:2e:2eb",
		"vlan.1.2": "vlan:2e1:2e2", "é": "é",
	} {
		got, ok := pinName(port)
		if !ok || got != want {
			t.Errorf("pinName(%q) = %q, %v; want %q", port, got, ok, want)
			continue
		}
		if back, ok := portOfPin(got); !ok || back != port {
			t.Errorf("portOfPin(%q) = %q, %v; want %q", got, back, ok, port)
		}
	}
	for _, port := range []string{"", ".", "..", "a/b", "a:b", "abcdefghijklmnop"} {
		if got, ok := pinName(port); ok {
			t.Errorf("pinName(%q) = %q: want refused", port, got)
		}
	}
	for _, name := range []string{"edt:qdisc", "a:2Eb", "a:2", "x:3a", ".", "a.b"} {
		if port, ok := portOfPin(name); ok {
			t.Errorf("portOfPin(%q) = %q: want refused (pinName never gives it)", name, port)
		}
	}
}

// TestBadKeysPort: keys with an empty port part are reported through one
// work item, so their results are written at once and removed after DEL.
func TestBadKeysPort(t *testing.T) {
	d := newDaemon(Config{}, nil)
	d.setConfig(redisx.Event{Table: schema.TableImpairmentFlow, Key: "|r3", Fields: schema.Fields{"loss": "1"}})
	d.setConfig(redisx.Event{Table: schema.TableImpairment, Key: "", Fields: schema.Fields{"loss": "1"}})
	out := &outcome{results: map[string]schema.Fields{}}
	if _, err := d.reconcileLocked(badKeysPort, out); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{schema.ResultKey(schema.TableImpairmentFlow, "|r3"), schema.ResultKey(schema.TableImpairment, "")} {
		if out.results[key][schema.FieldState] != string(schema.StateError) {
			t.Errorf("%s: %v, want state error", key, out.results[key])
		}
	}
	d.setConfig(redisx.Event{Table: schema.TableImpairmentFlow, Key: "|r3", Deleted: true})
	d.setConfig(redisx.Event{Table: schema.TableImpairment, Key: "", Deleted: true})
	out = &outcome{results: map[string]schema.Fields{}}
	if _, err := d.reconcileLocked(badKeysPort, out); err != nil || len(out.results) != 0 {
		t.Errorf("after DEL: %v, %v", out.results, err)
	}
}
