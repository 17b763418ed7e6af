package swctle2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/switchyard-net/switchyard/tests/e2eutil"
)

// TestDemoRunsAndCleansUp runs scripts/demo.sh non-interactively
// (SWITCHYARD_DEMO_EXIT=1) with its own namespace prefix and run
// directory, then checks that it applied the sample config and left no
// namespace, process, mount or file behind.
func TestDemoRunsAndCleansUp(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the demo needs root (network namespaces, XDP): run make test as root")
	}
	for _, tool := range []string{"ip", "ping", "redis-server", "mountpoint", "bash"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed (scripts/install-deps.sh installs it)", tool)
		}
	}
	bin := filepath.Dir(e2eutil.Binary(t, "swctl"))
	for _, d := range []string{"orchagent", "syncd", "impaird", "trafficd"} {
		if got := filepath.Dir(daemon(t, d)); got != bin {
			t.Fatalf("bin/%s is in %s, swctl in %s", d, got, bin)
		}
	}
	root := e2eutil.RepoRoot(t)
	prefix := fmt.Sprintf("sydemo%d-", os.Getpid()%100000)
	run := filepath.Join(t.TempDir(), "run")
	env := append(os.Environ(),
		"SWITCHYARD_DEMO_EXIT=1",
		"SWITCHYARD_DEMO_NO_BUILD=1",
		"SWITCHYARD_DEMO_WAIT=60s",
		"SWITCHYARD_DEMO_PREFIX="+prefix,
		"SWITCHYARD_DEMO_RUN="+run,
		"SWITCHYARD_BIN="+bin,
	)
	// Whatever happens, leave nothing behind for the next test.
	t.Cleanup(func() {
		cmd := exec.Command(filepath.Join(root, "scripts", "demo.sh"), "clean")
		cmd.Env = env
		cmd.Run()
	})

	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(root, "scripts", "demo.sh"))
	cmd.Env = env
	cmd.Dir = root
	// On timeout, SIGTERM lets the script's trap clean up.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 20 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	t.Logf("demo output:\n%s", out.String())
	if err != nil {
		t.Fatalf("demo.sh: %v", err)
	}

	text := out.String()
	if !strings.Contains(text, "routed-port demo") && !strings.Contains(text, "VLAN demo") {
		t.Errorf("the demo does not say which variant (routed ports or VLANs) it runs")
	}
	if !regexp.MustCompile(`all \d+ entries applied`).MatchString(text) {
		t.Errorf("swctl wait never reported the sample config applied")
	}
	for _, want := range []string{"swctl show interfaces", "h0   -> h1", "swctl show impairment --counters", "Background traffic", "cleaning up"} {
		if !strings.Contains(text, want) {
			t.Errorf("demo output lacks %q", want)
		}
	}
	checkNoLeftovers(t, prefix, run)
}

// checkNoLeftovers fails t for any namespace named with prefix, any
// process or mount naming the run directory, or the run directory itself.
func checkNoLeftovers(t *testing.T, prefix, run string) {
	t.Helper()
	nss, err := os.ReadDir("/run/netns")
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	for _, ns := range nss {
		if strings.HasPrefix(ns.Name(), prefix) {
			t.Errorf("namespace %s left behind", ns.Name())
		}
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err == nil && bytes.Contains(b, []byte(run)) {
			t.Errorf("process %s left behind: %s", filepath.Base(filepath.Dir(p)), bytes.ReplaceAll(b, []byte{0}, []byte{' '}))
		}
	}
	if mounts, err := os.ReadFile("/proc/self/mounts"); err == nil && bytes.Contains(mounts, []byte(run)) {
		t.Errorf("a mount under %s (bpffs pins) left behind", run)
	}
	if _, err := os.Stat(run); !os.IsNotExist(err) {
		t.Errorf("run directory %s left behind", run)
	}
}
