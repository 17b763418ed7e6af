package daemon

import (
	"net"
	"path/filepath"
	"testing"
	"time"
)

// listen opens a unixgram socket like systemd's notify socket and points
// $NOTIFY_SOCKET at it.
func listen(t *testing.T, abstract bool) *net.UnixConn {
	t.Helper()
	name := filepath.Join(t.TempDir(), "notify")
	env := name
	if abstract {
		name = "\x00switchyard-notify-test-" + filepath.Base(t.TempDir())
		env = "@" + name[1:]
	}
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: name, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	t.Setenv("NOTIFY_SOCKET", env)
	return c
}

func read(t *testing.T, c *net.UnixConn) string {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	b := make([]byte, 256)
	n, err := c.Read(b)
	if err != nil {
		t.Fatalf("read notify socket: %v", err)
	}
	return string(b[:n])
}

func TestNotifyPathAndAbstract(t *testing.T) {
	for _, abstract := range []bool{false, true} {
		c := listen(t, abstract)
		sent, err := Notify("READY=1")
		if !sent || err != nil {
			t.Fatalf("abstract=%v: Notify = %v, %v", abstract, sent, err)
		}
		if got := read(t, c); got != "READY=1" {
			t.Errorf("abstract=%v: got %q, want READY=1", abstract, got)
		}
	}
}

func TestNotifyWithoutSocket(t *testing.T) {
	t.Setenv("NOTIFY_SOCKET", "")
	if sent, err := Notify("READY=1"); sent || err != nil {
		t.Errorf("Notify without NOTIFY_SOCKET = %v, %v; want false, nil", sent, err)
	}
	t.Setenv("NOTIFY_SOCKET", filepath.Join(t.TempDir(), "absent"))
	if _, err := Notify("READY=1"); err == nil {
		t.Error("Notify to an absent socket: want an error")
	}
}
