package edt

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/switchyard-net/switchyard/tests/testns"
)

// TestPrevStore: a saved root qdisc comes back from a new store on the
// same pin (another process), only for the same ifindex; the pin exists
// only while it has entries.
func TestPrevStore(t *testing.T) {
	testns.RequireRoot(t)
	dir := t.TempDir()
	if err := unix.Mount("bpf", dir, "bpf", 0, "mode=0700"); err != nil {
		t.Skipf("cannot mount a private bpffs: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
	pin := filepath.Join(dir, PrevQdiscPin)

	s, err := openPrevStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.forget("Ethernet0"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(pin); !os.IsNotExist(err) {
		t.Fatalf("pin exists with no entry: %v", err)
	}
	tbf := &netlink.Tbf{
		QdiscAttrs: netlink.QdiscAttrs{LinkIndex: 7, Parent: netlink.HANDLE_ROOT, Handle: netlink.MakeHandle(1, 0),
			Statistics: &netlink.QdiscStatistics{}},
		Rate: 125000000, Limit: 30000, Buffer: 12345,
	}
	if err := s.save("Ethernet0", 7, tbf); err != nil {
		t.Fatal(err)
	}
	if err := s.save("Ethernet4", 9, &netlink.GenericQdisc{QdiscAttrs: netlink.QdiscAttrs{LinkIndex: 9, Parent: netlink.HANDLE_ROOT, Handle: netlink.MakeHandle(2, 0)}, QdiscType: "pfifo"}); err != nil {
		t.Fatal(err)
	}
	s.Close()

	s2, err := openPrevStore(dir) // a restarted process
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	q, err := s2.load("Ethernet0", 7)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := q.(*netlink.Tbf)
	if !ok || got.Rate != tbf.Rate || got.Limit != tbf.Limit || got.Buffer != tbf.Buffer || got.Handle != tbf.Handle || got.Parent != netlink.HANDLE_ROOT {
		t.Fatalf("loaded %#v, want %#v", q, tbf)
	}
	if q, err := s2.load("Ethernet0", 8); q != nil || err != nil {
		t.Errorf("another ifindex: %v, %v; want nothing", q, err)
	}
	if q, err := s2.load("Ethernet4", 9); err != nil || q == nil || q.Type() != "pfifo" {
		t.Errorf("pfifo: %v, %v", q, err)
	}
	for _, name := range []string{"Ethernet0", "Ethernet4"} {
		if err := s2.forget(name); err != nil {
			t.Fatal(err)
		}
	}
	if q, err := s2.load("Ethernet0", 7); q != nil || err != nil {
		t.Errorf("after forget: %v, %v", q, err)
	}
	if _, err := os.Stat(pin); !os.IsNotExist(err) {
		t.Errorf("pin left after the last entry went: %v", err)
	}
}
