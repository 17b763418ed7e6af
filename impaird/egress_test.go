package impaird

import (
	"errors"
	"testing"

	"github.com/switchyard-net/switchyard/bpf"
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

// egressProfiles is the egress instance's profiles of a loaded port.
func (k *kernelDaemon) egressProfiles(port string) map[string]bpf.Profile {
	k.t.Helper()
	k.d.mu.Lock()
	defer k.d.mu.Unlock()
	p := k.d.ports[port]
	if p == nil || !p.HasEgress() {
		k.t.Fatalf("%s has no egress instance", port)
	}
	eg, _ := p.Egress()
	m, err := eg.Profiles()
	if err != nil {
		k.t.Fatal(err)
	}
	return m
}

// TestEgressFailedPlanKeepsPrevious (root): an egress plan that fails to
// apply is replaced by the last egress plan applied, the keys say so;
// going back to ingress drops the egress instance.
func TestEgressFailedPlanKeepsPrevious(t *testing.T) {
	k := newKernelDaemon(t)
	k.ns.Veth("Ethernet0", nil, "peer0")
	k.set(schema.TableImpairment, "Ethernet0", "loss", "5", "direction", "egress")
	wantOK(t, k.reconcile("Ethernet0"), impResult("Ethernet0"))
	before := k.egressProfiles("Ethernet0")
	if len(before) != 1 || len(k.profiles("Ethernet0")) != 0 {
		t.Fatalf("egress profiles %+v, ingress %+v: want the port profile on egress only", before, k.profiles("Ethernet0"))
	}
	k.d.applyPlan = func(p *bpf.Port, plan *bpf.Plan) error {
		if err := p.Apply(plan); err != nil {
			return err
		}
		for _, r := range plan.Rules {
			if r.Name == "boom" {
				return errors.New("injected apply failure")
			}
		}
		return nil
	}
	k.set(schema.TableImpairment, "Ethernet0", "loss", "50", "direction", "egress")
	k.set(schema.TableImpairmentFlow, "Ethernet0|boom", "proto", "tcp", "loss", "20", "direction", "egress")
	res := k.reconcile("Ethernet0")
	wantError(t, res, impResult("Ethernet0"), true, "egress: injected apply failure")
	if after := k.egressProfiles("Ethernet0"); len(after) != 1 || after[""].Loss != before[""].Loss {
		t.Fatalf("after a failed egress apply: %+v, want %+v", after, before)
	}
	k.d.applyPlan = nil
	k.set(schema.TableImpairmentFlow, "Ethernet0|boom")
	k.set(schema.TableImpairment, "Ethernet0", "loss", "5")
	wantOK(t, k.reconcile("Ethernet0"), impResult("Ethernet0"))
	k.d.mu.Lock()
	has := k.d.ports["Ethernet0"].HasEgress()
	k.d.mu.Unlock()
	if has {
		t.Fatal("direction ingress: the egress instance is still loaded")
	}
}
