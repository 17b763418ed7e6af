package syncde2e

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/switchyard-net/switchyard/tests/e2eutil"
	"github.com/switchyard-net/switchyard/tests/testredis"
)

// TestOperatorErrors checks that syncd refuses bad input with a message
// that says what to do, and exits non-zero.
func TestOperatorErrors(t *testing.T) {
	bin := e2eutil.Binary(t, "syncd")
	srv := testredis.Start(t)
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"interval", []string{"--counters-interval", "1ms"}, "--counters-interval 1ms: want at least 10ms"},
		{"log level", []string{"--log-level", "loud"}, "want debug, info, warn or error"},
		{"redis url", []string{"--redis", "http://x"}, "unsupported scheme"},
		{"netns", []string{"--redis", srv.URL(), "--netns", "no-such-ns-syncd"}, "ip netns add no-such-ns-syncd"},
		{"argument", []string{"extra"}, `unexpected argument "extra"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, err := exec.Command(bin, c.args...).CombinedOutput()
			if err == nil {
				t.Fatalf("syncd %v exited 0:\n%s", c.args, out)
			}
			if !strings.Contains(string(out), c.want) {
				t.Errorf("syncd %v said:\n%s\nwant it to contain %q", c.args, out, c.want)
			}
		})
	}
}

// TestConfigRefused: a Redis that refuses CONFIG (managed services rename
// or forbid it) makes syncd exit naming the redis.conf line to add.
func TestConfigRefused(t *testing.T) {
	bin := e2eutil.Binary(t, "syncd")
	srv := testredis.Start(t, "--rename-command", "CONFIG", "SECRET-CONFIG")
	out, err := exec.Command(bin, "--redis", srv.URL()).CombinedOutput()
	if err == nil {
		t.Fatalf("syncd exited 0 without CONFIG:\n%s", out)
	}
	if want := "notify-keyspace-events Kg$lshzxet"; !strings.Contains(string(out), want) {
		t.Errorf("syncd said:\n%s\nwant it to name the redis.conf line %q", out, want)
	}
}
