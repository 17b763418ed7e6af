package swctle2e

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/switchyard-net/switchyard/tests/e2eutil"
	"github.com/switchyard-net/switchyard/tests/testns"
	"github.com/switchyard-net/switchyard/tests/testredis"
)

// TestConfigWaitShowWithDaemons is the operator's loop with orchagent and
// syncd running against a fresh namespace: swctl config, swctl wait, then
// iproute2 (the judge) sees the kernel changed and swctl show reports it.
func TestConfigWaitShowWithDaemons(t *testing.T) {
	testns.RequireRoot(t)
	daemon(t, "orchagent") // skips when not written yet
	daemon(t, "syncd")
	s := e2eutil.NewSwitch(t)
	s.NS.Veth("Ethernet0", nil, "peer0")
	srv := s.Redis
	s.Start("orchagent")
	s.Start("syncd")

	mustSwctl(t, srv, "config", "port", "Ethernet0", "--mtu", "9000", "--admin", "up", "--description", "e2e")
	mustSwctl(t, srv, "config", "interface", "ip", "add", "Ethernet0", "10.77.0.1/24")
	mustSwctl(t, srv, "config", "route", "add", "10.78.0.0/16", "--nexthop", "10.77.0.2")
	if out, errs, code := swctl(t, srv, "wait", "--timeout", e2eutil.Wait.String()); code != 0 {
		t.Fatalf("swctl wait: exit %d\n%s%s", code, out, errs)
	}

	// The judge: iproute2.
	if l, ok := e2eutil.Link(s.NS, "Ethernet0"); !ok || l.MTU != 9000 || !l.Up() {
		t.Fatalf("kernel Ethernet0 after wait: %+v (exists: %v), want mtu 9000 and UP", l, ok)
	}
	if addrs := e2eutil.Addrs(s.NS, "Ethernet0"); !slices.Contains(addrs, "10.77.0.1/24") {
		t.Errorf("kernel Ethernet0 lacks 10.77.0.1/24: %v", addrs)
	}
	if routes := e2eutil.Routes(s.NS, "10.78.0.0/16"); len(routes) != 1 || routes[0].Gateway != "10.77.0.2" {
		t.Errorf("kernel route 10.78.0.0/16: %+v, want via 10.77.0.2", routes)
	}

	// swctl show reports what syncd mirrors (eventually: it is a mirror).
	showRow(t, srv, []string{"show", "interfaces"}, "interface", "Ethernet0",
		map[string]string{"mtu": "9000", "admin_status": "up", "state": "ok", "description": "e2e"})
	showRow(t, srv, []string{"show", "ip", "route"}, "prefix", "10.78.0.0/16",
		map[string]string{"nexthop": "10.77.0.2", "static": "ok"})

	// Removing the route through swctl removes it from the kernel.
	mustSwctl(t, srv, "config", "route", "del", "10.78.0.0/16")
	s.Eventually("route 10.78.0.0/16 removed from the kernel", func() (bool, string) {
		routes := e2eutil.Routes(s.NS, "10.78.0.0/16")
		return len(routes) == 0, fmt.Sprintf("%+v", routes)
	})
}

// showRow polls swctl ARGS --json until the row whose column key equals
// val has the wanted values.
func showRow(t *testing.T, srv *testredis.Server, args []string, key, val string, want map[string]string) {
	t.Helper()
	e2eutil.Eventually(t, e2eutil.Wait, "swctl "+strings.Join(args, " ")+" shows "+val, func() (bool, string) {
		out, errs, code := swctl(t, srv, append(args, "--json")...)
		if code != 0 {
			return false, errs
		}
		var rows []map[string]any
		if err := json.Unmarshal([]byte(out), &rows); err != nil {
			return false, err.Error()
		}
		for _, r := range rows {
			if r[key] != val {
				continue
			}
			for k, v := range want {
				if fmt.Sprint(r[k]) != v {
					return false, fmt.Sprintf("%s = %v, want %s (row %v)", k, r[k], v, r)
				}
			}
			return true, ""
		}
		return false, "no row " + val + " in " + out
	})
}
