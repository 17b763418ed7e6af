package netnsx

import (
	"os"
	"strings"
	"testing"

	"github.com/vishvananda/netns"

	"github.com/switchyard-net/switchyard/tests/testns"
)

// Do runs inside the named namespace and leaves the caller's thread where
// it was; a netlink handle sees the namespace's links.
func TestDoAndHandle(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (network namespaces)")
	}
	ns := testns.New(t)
	ns.IP("link", "add", "nsx0", "type", "veth", "peer", "name", "nsx1")
	n, err := Open(ns.Name)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	want, err := netns.GetFromName(ns.Name)
	if err != nil {
		t.Fatal(err)
	}
	defer want.Close()
	host, _ := netns.Get()
	defer host.Close()
	if err := n.Do(func() error {
		cur, err := netns.Get()
		if err != nil {
			return err
		}
		defer cur.Close()
		if !cur.Equal(want) {
			t.Error("Do ran outside the namespace")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if after, _ := netns.Get(); !after.Equal(host) {
		t.Error("the caller's thread did not come back")
	}
	h, err := n.NetlinkHandle()
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if _, err := h.LinkByName("nsx0"); err != nil {
		t.Errorf("handle does not see the namespace's link: %v", err)
	}
	if _, err := Open("no-such-ns-" + strings.Repeat("x", 8)); err == nil || !strings.Contains(err.Error(), "ip netns add") {
		t.Errorf("missing namespace: %v", err)
	}
}
