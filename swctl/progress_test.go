package swctl

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/switchyard-net/switchyard/schema"
)

// openPTY returns a pseudo-terminal: swctl writes to the slave (a
// terminal to it), the test reads what a user would see from the master.
// The returned func closes the slave and returns everything printed.
func openPTY(t *testing.T) (*os.File, func() string) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlockpt: %v", err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("ptsname: %v", err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open /dev/pts/%d: %v", n, err)
	}
	var buf bytes.Buffer
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); io.Copy(&buf, m) }() // ends with EIO once the slave is closed
	return s, func() string {
		s.Close()
		wg.Wait()
		return buf.String()
	}
}

// fakeOrchagent answers every STATIC_ROUTE of CONFIG_DB with an ok result,
// ten at a time, until ctx is done.
func fakeOrchagent(ctx context.Context, h *harness) {
	for ctx.Err() == nil {
		keys, _ := h.cfg.Keys(ctx, "STATIC_ROUTE|*").Result()
		n := 0
		for _, k := range keys {
			rk := schema.ResultKey(schema.TableStaticRoute, strings.TrimPrefix(k, "STATIC_ROUTE|"))
			if ex, _ := h.st.Exists(ctx, rk).Result(); ex == 0 && n < 10 {
				h.st.HSet(ctx, rk, "state", "ok")
				n++
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func routesFile(t *testing.T, n int) string {
	var b strings.Builder
	b.WriteString(`{"STATIC_ROUTE": {`)
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"10.%d.%d.0/24": {"nexthop": "10.0.0.2"}`, 100+i/250, i%250)
	}
	b.WriteString("}}")
	f := filepath.Join(t.TempDir(), "config_db.json")
	os.WriteFile(f, []byte(b.String()), 0o644)
	return f
}

// TestLoadProgressOnTerminal: on a terminal config load rewrites a
// progress line in place and follows the daemons to "applied 50/50"; with
// --quiet, or when stderr is not a terminal, it prints none.
func TestLoadProgressOnTerminal(t *testing.T) {
	h := newHarness(t)
	file := routesFile(t, 50)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go fakeOrchagent(ctx, h)

	tty, output := openPTY(t)
	var out bytes.Buffer
	if code := Run(context.Background(), []string{"--redis", h.srv.URL(), "config", "load", file}, &out, tty); code != 0 {
		t.Fatalf("config load: exit %d", code)
	}
	seen := output()
	for _, want := range []string{"\r\x1b[K", "written in ", "entries/s", "applied ", "/50 (", " pending, "} {
		if !strings.Contains(seen, want) {
			t.Errorf("terminal output lacks %q:\n%q", want, seen)
		}
	}
	if !strings.Contains(out.String(), "loaded ") || strings.Contains(out.String(), "\r") {
		t.Errorf("stdout: %q (want the summary line only)", out.String())
	}

	tty, output = openPTY(t)
	if code := Run(context.Background(), []string{"--redis", h.srv.URL(), "config", "load", "--quiet", file}, io.Discard, tty); code != 0 {
		t.Fatalf("config load --quiet: exit %d", code)
	}
	if seen := output(); seen != "" {
		t.Errorf("config load --quiet printed on the terminal: %q", seen)
	}
	_, errs, _ := h.run("config", "load", file)
	if strings.Contains(errs, "\r") || strings.Contains(errs, "applied") {
		t.Errorf("config load to a non-terminal printed progress: %q", errs)
	}
}

// TestWaitProgressOnTerminal: swctl wait shows applied N/M on a terminal.
func TestWaitProgressOnTerminal(t *testing.T) {
	h := newHarness(t)
	h.ok("config", "load", routesFile(t, 30))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go fakeOrchagent(ctx, h)
	tty, output := openPTY(t)
	var out bytes.Buffer
	if code := Run(context.Background(), []string{"--redis", h.srv.URL(), "wait", "--timeout", "60s"}, &out, tty); code != 0 {
		t.Fatalf("wait: exit %d", code)
	}
	seen := output()
	if !strings.Contains(seen, "applied ") || !strings.Contains(seen, "/30 (") {
		t.Errorf("wait on a terminal showed no progress: %q", seen)
	}
	if !strings.Contains(out.String(), "all 30 entries applied") {
		t.Errorf("wait stdout: %q", out.String())
	}
}
