package impaird

import (
	"net/netip"
	"os/exec"
	"reflect"
	"strings"
	"testing"

	"github.com/switchyard-net/switchyard/bpf"
	"github.com/switchyard-net/switchyard/schema"
)

// TestCompileFromSchema: CONFIG_DB hashes, parsed by the schema and
// translated by impaird, compile to the plan of the bpf specs they mean
// (defaults resolved: ge_loss_bad 100, the policer's default burst; the
// EDT class only on rules with delay/jitter/shape).
func TestCompileFromSchema(t *testing.T) {
	imp, err := schema.ParseImpairment("Ethernet0", schema.Fields{"rate": "10mbit", "corrupt": "0.5", "seed": "7"})
	if err != nil {
		t.Fatal(err)
	}
	var flows []schema.ImpairmentFlow
	for _, kv := range []struct {
		name   string
		fields schema.Fields
	}{
		{"g", schema.Fields{"dst": "10.0.0.0/8", "proto": "udp", "dport": "1000-2000", "priority": "5",
			"loss_model": "gilbert", "ge_p": "1", "ge_r": "25", "scope": "flow"}},
		{"p", schema.Fields{"src": "2001:db8::/32", "proto": "tcp", "sport": "443", "loss_model": "periodic", "period": "3"}},
		{"v", schema.Fields{"vlan": "100", "dscp": "46", "loss": "2"}},
		{"ping", schema.Fields{"proto": "icmp", "delay": "50ms"}},
		{"lossonly", schema.Fields{"proto": "icmp", "loss": "1"}},
		{"corr", schema.Fields{"proto": "udp", "loss": "10", "loss_corr": "25", "duplicate": "3"}},
		{"state", schema.Fields{"proto": "tcp", "loss_model": "state", "p13": "3", "p31": "30", "p32": "20", "scope": "flow"}},
	} {
		f, err := schema.ParseImpairmentFlow("Ethernet0|"+kv.name, kv.fields)
		if err != nil {
			t.Fatal(err)
		}
		flows = append(flows, f)
	}
	got, err := compilePlan(&imp, flows, map[string]uint32{"ping": 7, "lossonly": 8})
	if err != nil {
		t.Fatal(err)
	}
	seven := uint64(7)
	tcp, udp, icmp := bpf.Match{Proto: 6, ProtoSet: true}, bpf.Match{Proto: 17, ProtoSet: true}, bpf.Match{Proto: 1, ProtoSet: true}
	g := udp
	g.Dst, g.Dport = netip.MustParsePrefix("10.0.0.0/8"), bpf.PortRange{Set: true, Lo: 1000, Hi: 2000}
	p := tcp
	p.Src, p.Sport = netip.MustParsePrefix("2001:db8::/32"), bpf.PortRange{Set: true, Lo: 443, Hi: 443}
	want, err := bpf.Compile(&bpf.Spec{Rate: 10e6, Burst: 10 * 1514, Corrupt: 0.5, Seed: &seven}, []bpf.RuleSpec{
		{Name: "g", Priority: 5, Match: g, Spec: bpf.Spec{LossModel: bpf.LossGilbert, GEP: 1, GER: 25, GELossBad: 100}, ScopeFlow: true},
		{Name: "p", Match: p, Spec: bpf.Spec{LossModel: bpf.LossPeriodic, Period: 3}},
		{Name: "v", Match: bpf.Match{VLAN: 100, DSCP: 46, DSCPSet: true}, Spec: bpf.Spec{Loss: 2}},
		{Name: "ping", Match: icmp, EDTClass: 7},
		{Name: "lossonly", Match: icmp, Spec: bpf.Spec{Loss: 1}},
		{Name: "corr", Match: udp, Spec: bpf.Spec{Loss: 10, LossCorr: 25, Duplicate: 3}},
		{Name: "state", Match: tcp, Spec: bpf.Spec{LossModel: bpf.LossState, P13: 3, P31: 30, P32: 20, P23: 100}, ScopeFlow: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("translated plan\n%+v\nwant\n%+v", got, want)
	}
	if _, err := compilePlan(nil, flows[3:4], map[string]uint32{"ping": bpf.MaxEDTClass + 1}); err == nil {
		t.Error("class id above bpf.MaxEDTClass compiled")
	}
}

// TestDataPlaneWithoutSchema: the data plane packages do not depend on
// the schema (impaird translates), tests included.
func TestDataPlaneWithoutSchema(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-test", "github.com/switchyard-net/switchyard/bpf/...").CombinedOutput()
	if err != nil {
		t.Skipf("go list: %v: %s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if strings.HasPrefix(pkg, "github.com/switchyard-net/switchyard/schema") {
			t.Errorf("bpf/... depends on %s", pkg)
		}
	}
}
