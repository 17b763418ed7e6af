package impaird

import (
	"testing"

	"github.com/switchyard-net/switchyard/schema"
)

// TestCompilePlansDirection: the port profile and each rule go into the
// plan of each direction they name (both: into both); the egress plan
// carries no EDT class.
func TestCompilePlansDirection(t *testing.T) {
	imp, err := schema.ParseImpairment("Ethernet0", schema.Fields{"loss": "30", "direction": "egress"})
	if err != nil {
		t.Fatal(err)
	}
	var flows []schema.ImpairmentFlow
	for name, f := range map[string]schema.Fields{
		"in":   {"proto": "udp", "loss": "1"},
		"out":  {"proto": "tcp", "loss": "2", "direction": "egress"},
		"both": {"proto": "icmp", "corrupt": "3", "direction": "both"},
		"edt":  {"proto": "udp", "dport": "53", "delay": "10ms"},
	} {
		r, err := schema.ParseImpairmentFlow("Ethernet0|"+name, f)
		if err != nil {
			t.Fatal(err)
		}
		flows = append(flows, r)
	}
	in, eg, err := compilePlans(&imp, flows, map[string]uint32{"edt": 9})
	if err != nil {
		t.Fatal(err)
	}
	names := func(rs []string) map[string]bool {
		m := map[string]bool{}
		for _, r := range rs {
			m[r] = true
		}
		return m
	}
	var inNames, egNames []string
	for _, r := range in.Rules {
		inNames = append(inNames, r.Name)
	}
	for _, r := range eg.Rules {
		egNames = append(egNames, r.Name)
		if r.Profile.EdtClass != 0 {
			t.Errorf("egress rule %s carries EDT class %d", r.Name, r.Profile.EdtClass)
		}
	}
	if n := names(inNames); len(n) != 3 || !n["in"] || !n["both"] || !n["edt"] {
		t.Errorf("ingress rules %v, want in, both, edt", inNames)
	}
	if n := names(egNames); len(n) != 2 || !n["out"] || !n["both"] {
		t.Errorf("egress rules %v, want out, both", egNames)
	}
	if in.Port != nil || eg.Port == nil {
		t.Errorf("port profile (direction egress): ingress %v, egress %v", in.Port, eg.Port)
	}
}
