package swctle2e

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/switchyard-net/switchyard/schema"
	"github.com/switchyard-net/switchyard/tests/e2eutil"
	"github.com/switchyard-net/switchyard/tests/kernelcap"
	"github.com/switchyard-net/switchyard/tests/sonic"
)

// TestVLANSONiCConfigDB loads the whole sonic-cfggen file, VLAN tables
// included, into a running orchagent and impaird (its ACL tables) — the
// VM suite: it needs 802.1Q and bridge VLAN filtering: every result ok,
// Vlan1000 on Bridge with its addresses, both members untagged in vid 1000.
func TestVLANSONiCConfigDB(t *testing.T) {
	kernelcap.Require(t, kernelcap.VLAN8021Q, kernelcap.VlanFiltering)
	daemon(t, "orchagent")
	daemon(t, "impaird") // the file's ACL tables (DATAACL) are impaird's
	var file map[string]json.RawMessage
	if err := json.Unmarshal(sonic.ConfigDBJSON, &file); err != nil {
		t.Fatal(err)
	}
	var ports map[string]map[string]string
	json.Unmarshal(file[schema.TablePort], &ports)
	s := e2eutil.NewSwitch(t)
	sw, srv := s.NS, s.Redis
	for i, p := range slices.Sorted(maps.Keys(ports)) {
		sw.Veth(p, nil, "peer"+string(rune('a'+i)))
	}
	in := filepath.Join(t.TempDir(), "config_db.json")
	os.WriteFile(in, sonic.ConfigDBJSON, 0o644)
	s.Start("orchagent")
	s.Start("impaird")
	mustSwctl(t, srv, "config", "load", in)
	if out, errs, code := swctl(t, srv, "wait", "--timeout", e2eutil.Wait.String()); code != 0 {
		t.Fatalf("swctl wait: exit %d\n%s%s", code, out, errs)
	}

	var vlan []struct {
		Linkinfo struct {
			InfoKind string `json:"info_kind"`
			InfoData struct {
				ID int `json:"id"`
			} `json:"info_data"`
		} `json:"linkinfo"`
		Link string `json:"link"`
	}
	sw.JSON(&vlan, "-d", "link", "show", "dev", "Vlan1000")
	if len(vlan) != 1 || vlan[0].Linkinfo.InfoKind != "vlan" || vlan[0].Linkinfo.InfoData.ID != 1000 || vlan[0].Link != "Bridge" {
		t.Fatalf("Vlan1000: %+v, want an 802.1Q device id 1000 on Bridge", vlan)
	}
	var addrs []struct {
		AddrInfo []struct {
			Local     string `json:"local"`
			PrefixLen int    `json:"prefixlen"`
		} `json:"addr_info"`
	}
	sw.JSON(&addrs, "addr", "show", "dev", "Vlan1000")
	have := map[string]bool{}
	for _, a := range addrs[0].AddrInfo {
		have[a.Local] = true
	}
	if !have["192.168.0.1"] || !have["fc02:1000::1"] {
		t.Errorf("Vlan1000 addresses %+v: want 192.168.0.1/21 and fc02:1000::1/64", addrs)
	}
	vids := e2eutil.BridgeVlans(sw)
	members := map[string]bool{}
	for port, vlans := range vids {
		if flags, ok := vlans[1000]; ok && slices.Contains(flags, "Egress Untagged") && slices.Contains(flags, "PVID") {
			members[port] = true
		}
	}
	if !members["Ethernet4"] || !members["Ethernet12"] {
		t.Errorf("untagged members of vid 1000: %v, want Ethernet4 and Ethernet12 (bridge -j vlan show: %+v)", members, vids)
	}
}
