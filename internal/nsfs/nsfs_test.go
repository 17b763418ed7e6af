package nsfs_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchyard-net/switchyard/internal/nsfs"
	"github.com/switchyard-net/switchyard/tests/testns"
)

// TestNamespaceView: a device that exists only in the namespace is seen
// and written through FS, the value changes in the namespace's view
// (judged by `ip netns exec … cat`), and the host's /sys does not show the
// device at all; /proc/sys/net is the namespace's too.
func TestNamespaceView(t *testing.T) {
	ns := testns.New(t)
	ns.IP("link", "add", "name", "tq0", "numrxqueues", "2", "type", "veth", "peer", "name", "tq1")
	before := sysfsMounts(t)
	fs, err := nsfs.Open(nsfs.Options{NetNS: ns.Name})
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	if n := sysfsMounts(t); n != before {
		t.Fatalf("host mount namespace has %d sysfs mounts after Open, %d before: the mount leaked", n, before)
	}
	if _, err := os.Stat("/sys/class/net/tq0"); err == nil {
		t.Fatal("host /sys shows the namespace's device: test is meaningless")
	}
	qs, err := fs.ReadDir("/sys/class/net/tq0/queues")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(qs, " ") != "rx-0 rx-1 tx-0" {
		t.Fatalf("queues = %v", qs)
	}
	const f = "/sys/class/net/tq0/queues/rx-1/rps_flow_cnt"
	if err := fs.WriteFile(f, "64"); err != nil {
		t.Fatal(err)
	}
	out, err := ns.Exec("cat", f)
	if err != nil || strings.TrimSpace(out) != "64" {
		t.Fatalf("namespace's view of %s = %q, %v; want 64", f, out, err)
	}
	// /proc/sys/net: somaxconn is per namespace.
	host, _ := os.ReadFile("/proc/sys/net/core/somaxconn")
	if err := fs.WriteFile("/proc/sys/net/core/somaxconn", "1234"); err != nil {
		t.Fatal(err)
	}
	out, _ = ns.Exec("cat", "/proc/sys/net/core/somaxconn")
	if strings.TrimSpace(out) != "1234" {
		t.Fatalf("namespace somaxconn = %q, want 1234", out)
	}
	if now, _ := os.ReadFile("/proc/sys/net/core/somaxconn"); string(now) != string(host) {
		t.Fatalf("host somaxconn changed: %q -> %q", host, now)
	}
	// Errors name the operation, the file and the namespace.
	err = fs.WriteFile("/sys/class/net/tq0/queues/rx-0/rps_cpus", "zz")
	if err == nil || !strings.Contains(err.Error(), "rx-0/rps_cpus in network namespace "+ns.Name) {
		t.Fatalf("bad write error = %v", err)
	}
	if _, err := fs.ReadFile("/sys/class/net/nosuch/mtu"); !nsfs.IsNotExist(err) {
		t.Fatalf("missing file error = %v, want not-exist", err)
	}
	fs.Close()
	if _, err := fs.ReadFile(f); err == nil {
		t.Fatal("read after Close succeeded")
	}
}

// sysfsMounts counts the sysfs mounts of the process's mount namespace
// (the main thread's, not FS's thread).
func sysfsMounts(t *testing.T) int {
	m, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(m), " - sysfs ")
}

// TestRoot: with Root set, paths are under it and no namespace is entered.
func TestRoot(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "sys/class/net/e0"), 0o755)
	os.WriteFile(filepath.Join(dir, "sys/class/net/e0/mtu"), []byte("1500\n"), 0o644)
	fs, err := nsfs.Open(nsfs.Options{Root: dir, NetNS: "ignored"})
	if err != nil {
		t.Fatal(err)
	}
	if v, err := fs.ReadFile("/sys/class/net/e0/mtu"); err != nil || v != "1500" {
		t.Fatalf("ReadFile = %q, %v", v, err)
	}
	if err := fs.WriteFile("/sys/class/net/e0/mtu", "9000"); err != nil {
		t.Fatal(err)
	}
	if v, _ := fs.ReadFile("/sys/class/net/e0/mtu"); v != "9000" {
		t.Fatalf("after write: %q", v)
	}
}
