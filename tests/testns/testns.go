// Package testns gives privileged tests a fresh, named network namespace
// (as "ip netns add" makes them, so daemons can take --netns NAME and
// iproute2 can judge with "ip -n NAME -j ..."), removed at cleanup.
// Tests skip with a reason when not root.
package testns

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"github.com/vishvananda/netns"
)

// NS is a named network namespace.
type NS struct {
	t    testing.TB
	Name string
}

// RequireRoot skips t unless running as root with iproute2 installed.
func RequireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root (network namespaces, netlink writes): run with sudo / make test as root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("iproute2 (ip) not installed")
	}
}

// New creates a fresh named namespace with lo up; it is deleted at cleanup.
func New(t testing.TB) *NS {
	t.Helper()
	RequireRoot(t)
	b := make([]byte, 4)
	rand.Read(b)
	name := "swt-" + hex.EncodeToString(b)
	n := &NS{t: t, Name: name}
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add %s: %v: %s", name, err, out)
	}
	t.Cleanup(func() { exec.Command("ip", "netns", "del", name).Run() })
	n.IP("link", "set", "lo", "up")
	return n
}

// Path is the namespace's file, /run/netns/NAME.
func (n *NS) Path() string { return "/run/netns/" + n.Name }

// IP runs "ip -n NAME args..." and fails the test on error; returns stdout.
func (n *NS) IP(args ...string) string {
	n.t.Helper()
	return n.Run("ip", append([]string{"-n", n.Name}, args...)...)
}

// TryIP runs "ip -n NAME args..." and returns output and error.
func (n *NS) TryIP(args ...string) (string, error) {
	out, err := exec.Command("ip", append([]string{"-n", n.Name}, args...)...).CombinedOutput()
	return string(out), err
}

// Bridge runs "bridge -n NAME args..." and fails the test on error.
func (n *NS) Bridge(args ...string) string {
	n.t.Helper()
	return n.Run("bridge", append([]string{"-n", n.Name}, args...)...)
}

// Exec runs a command inside the namespace (ip netns exec NAME cmd...).
func (n *NS) Exec(cmd string, args ...string) (string, error) {
	out, err := exec.Command("ip", append([]string{"netns", "exec", n.Name, cmd}, args...)...).CombinedOutput()
	return string(out), err
}

// Run runs a command on the host side and fails the test on error.
func (n *NS) Run(cmd string, args ...string) string {
	n.t.Helper()
	out, err := exec.Command(cmd, args...).CombinedOutput()
	if err != nil {
		n.t.Fatalf("%s %s: %v: %s", cmd, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// JSON runs "ip -n NAME -j args..." (or bridge when args[0]=="bridge") and
// decodes the output into v: iproute2 as the independent judge.
func (n *NS) JSON(v any, args ...string) {
	n.t.Helper()
	var out string
	if len(args) > 0 && args[0] == "bridge" {
		out = n.Run("bridge", append([]string{"-n", n.Name, "-j"}, args[1:]...)...)
	} else {
		out = n.Run("ip", append([]string{"-n", n.Name, "-j"}, args...)...)
	}
	if strings.TrimSpace(out) == "" {
		out = "[]"
	}
	if err := json.Unmarshal([]byte(out), v); err != nil {
		n.t.Fatalf("decode ip -j %v output: %v\n%s", args, err, out)
	}
}

// Do runs f with the calling goroutine's OS thread inside the namespace,
// restoring the original namespace afterwards.
func (n *NS) Do(f func() error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	orig, err := netns.Get()
	if err != nil {
		return err
	}
	defer orig.Close()
	h, err := netns.GetFromName(n.Name)
	if err != nil {
		return err
	}
	defer h.Close()
	if err := netns.Set(h); err != nil {
		return err
	}
	defer netns.Set(orig)
	return f()
}

// Veth creates a veth pair a (in this namespace) <-> b (in namespace peer,
// or this one when peer is nil), both up.
func (n *NS) Veth(a string, peer *NS, b string) {
	n.t.Helper()
	n.IP("link", "add", a, "type", "veth", "peer", "name", b)
	if peer != nil && peer != n {
		n.IP("link", "set", b, "netns", peer.Name)
		peer.IP("link", "set", b, "up")
	} else {
		n.IP("link", "set", b, "up")
	}
	n.IP("link", "set", a, "up")
}
