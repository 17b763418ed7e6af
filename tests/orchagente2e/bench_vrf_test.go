package orchagente2e

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/switchyard-net/switchyard/tests/e2eutil"
	"github.com/switchyard-net/switchyard/tests/kernelcap"
	"github.com/switchyard-net/switchyard/tests/testns"
)

// VM-only bulk rows of issue 15 for the tables that need kernel features
// the host lacks (VRF devices, bonding); on the host they skip:
//
//	go test -c -o /tmp/o.test ./tests/orchagente2e
//	tests/vm/vmexec --timeout 1200 /tmp/o.test -test.run '^$' -test.bench 'VMVrf|VMPortChannel' -test.benchtime 1x

// vrfTableID is the table the reference's vrf device uses (orchagent
// picks its own; the table number does not change the kernel's work).
const vrfTableID = 1001

// BenchmarkVMVrfRoutes10k: 10,000 STATIC_ROUTE|Vrf_red|prefix keys in one
// pipeline → all ok, against ip -batch adding the same routes to the
// same VRF's table (the VRF, its port and address set up beforehand on
// both sides, untimed).
func BenchmarkVMVrfRoutes10k(b *testing.B) { benchVrfRoutes(b, 10000) }

func benchVrfRoutes(b *testing.B, n int) {
	kernelcap.Require(b, kernelcap.VRF)
	var entries []cfgEntry
	var cmds []string
	for i := 0; i < n; i++ {
		p := fmt.Sprintf("%d.%d.%d.0/24", 20+i/65536, i/256%256, i%256)
		entries = append(entries, cfgEntry{"STATIC_ROUTE|Vrf_red|" + p, []any{"nexthop", "10.0.0.2", "ifname", "Ethernet0"}})
		cmds = append(cmds, fmt.Sprintf("route add %s via 10.0.0.2 dev Ethernet0 table %d proto 201", p, vrfTableID))
	}
	setup := []cfgEntry{
		{"VRF|Vrf_red", nil},
		{"PORT|Ethernet0", []any{"admin_status", "up"}},
		{"INTERFACE|Ethernet0", []any{"vrf_name", "Vrf_red"}},
		{"INTERFACE|Ethernet0|10.0.0.1/24", nil},
	}
	for i := 0; i < b.N; i++ {
		e := e2eutil.NewSwitch(b)
		e.NS.Veth("Ethernet0", testns.New(b), "eth1")
		vmOrch(b, e)
		e.SetInitialized()
		var keys []string
		for _, s := range setup {
			e.HSet(s.key, anyStrings(s.fields)...)
			keys = append(keys, s.key)
		}
		e.WaitOK(keys...)
		orch := vmBurst(b, e, entries)
		e.Procs["orchagent"].Stop()

		ns := testns.New(b)
		ns.Veth("Ethernet0", testns.New(b), "eth1")
		rawBatch(b, ns, []string{
			fmt.Sprintf("link add Vrf_red type vrf table %d", vrfTableID),
			"link set Vrf_red up",
			"link set Ethernet0 master Vrf_red",
			"link set Ethernet0 up",
			"addr add 10.0.0.1/24 dev Ethernet0",
		}, nil)
		raw := rawBatch(b, ns, cmds, nil)
		orch.reportVsRef(b, raw, n, "routes")
	}
}

// BenchmarkVMPortChannelMembers: 32 PortChannels with 2 members each (96
// keys: the PORTCHANNEL and its PORTCHANNEL_MEMBERs) in one pipeline →
// all ok, against ip -batch making the same 802.3ad bonds and enslaving
// the same ports.
func BenchmarkVMPortChannelMembers(b *testing.B) {
	kernelcap.Require(b, kernelcap.Bonding)
	const pcs = 32
	var entries []cfgEntry
	var cmds []string
	port := func(i int) string { return fmt.Sprintf("Ethernet%d", 4*i) }
	for p := 0; p < pcs; p++ {
		pc := fmt.Sprintf("PortChannel%02d", p+1)
		entries = append(entries, cfgEntry{"PORTCHANNEL|" + pc, []any{"admin_status", "up", "min_links", "1"}})
		cmds = append(cmds, "link add "+pc+" type bond mode 802.3ad min_links 1")
		for m := 0; m < 2; m++ {
			eth := port(2*p + m)
			entries = append(entries, cfgEntry{"PORTCHANNEL_MEMBER|" + pc + "|" + eth, []any{"NULL", "NULL"}})
			cmds = append(cmds, "link set "+eth+" down", "link set "+eth+" master "+pc)
		}
		cmds = append(cmds, "link set "+pc+" up")
	}
	ports := func(ns *testns.NS) {
		peer := testns.New(b)
		for i := 0; i < 2*pcs; i++ {
			ns.Veth(port(i), peer, fmt.Sprintf("eth%d", i))
		}
	}
	for i := 0; i < b.N; i++ {
		e := e2eutil.NewSwitch(b)
		ports(e.NS)
		vmOrch(b, e)
		e.SetInitialized()
		vmOrchStarted(b, e)
		orch := vmBurst(b, e, entries)
		e.Procs["orchagent"].Stop()

		ns := testns.New(b)
		ports(ns)
		raw := rawBatch(b, ns, cmds, nil)
		orch.reportVsRef(b, raw, len(entries), "keys")
	}
}

// vmOrchStarted waits until orchagent has started over the empty
// CONFIG_DB: previous results loaded, its kernel view primed, its netlink
// subscription open, the first scan reconciled and the sweep run (its
// metrics count the sweep). Its start is not the burst's work: the host
// benches wait for it too (a first key ok), and under TCG it took as long
// as the PortChannel burst itself (Prime, StateWriter.Load and the
// netlink subscription were 30 % of orchagent's profile of the burst).
func vmOrchStarted(b *testing.B, e *e2eutil.Switch) {
	b.Helper()
	const swept = `reconciles_total{outcome="ok",table="sweep"}`
	e.Eventually("orchagent swept (started)", func() (bool, string) {
		resp, err := http.Get("http://" + pprofAddr + "/metrics")
		if err != nil {
			return false, err.Error()
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return false, err.Error()
		}
		return strings.Contains(string(body), swept), "no " + swept + " in its metrics"
	})
}

// anyStrings turns a field list for HSet's variadic string form.
func anyStrings(fields []any) []string {
	out := make([]string, len(fields))
	for i, f := range fields {
		out[i] = fmt.Sprint(f)
	}
	return out
}
