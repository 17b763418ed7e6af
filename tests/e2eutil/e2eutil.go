// Package e2eutil is the shared kit of the end-to-end suites (tests/*e2e):
// it runs the built switchyard binaries against real parts and judges the
// outcome the way an operator would.
//
//   - e2eutil.go: the repository's bin/ (building a missing binary), and
//     Eventually, the one poll every wait goes through.
//   - proc.go, logs.go: a daemon as a child process, its output, memory and
//     log lines.
//   - switch.go, db.go: Switch, one switch under test (a fresh namespace, a
//     private redis-server, its daemons, host namespaces cabled to its
//     ports), CONFIG_DB writes and STATE_DB / COUNTERS_DB waits.
//   - kernel.go: what a namespace's kernel holds, read with iproute2 JSON
//     (ip -j) as the independent judge, and sysctls.
//   - traffic.go: ping and UDP datagrams between namespaces.
//
// What only one suite needs stays in that suite. Nothing here is used by
// the product; every deadline is Wait (generous: CI machines are shared).
package e2eutil

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// RepoRoot walks up from the working directory to the directory holding go.mod.
func RepoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("e2eutil: no go.mod above the working directory")
		}
		dir = parent
	}
}

var buildMu sync.Mutex

// Binary returns the path of bin/NAME (orchagent, syncd, impaird, swctl).
// $SWITCHYARD_BIN overrides the directory. When the binary is missing and
// a go tool is on PATH it is built; otherwise the test is skipped.
func Binary(t testing.TB, name string) string {
	t.Helper()
	dir := os.Getenv("SWITCHYARD_BIN")
	root := ""
	if dir == "" {
		root = RepoRoot(t)
		dir = filepath.Join(root, "bin")
	}
	path := filepath.Join(dir, name)
	buildMu.Lock()
	defer buildMu.Unlock()
	if os.Getenv("SWITCHYARD_REBUILD") != "" || !exists(path) {
		gobin, err := exec.LookPath("go")
		if err != nil || root == "" {
			if exists(path) {
				return path
			}
			t.Skipf("%s not built and no go tool here: run make build first", path)
		}
		cmd := exec.Command(gobin, "build", "-o", path, "./cmd/"+name)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build ./cmd/%s: %v\n%s", name, err, out)
		}
	}
	return path
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

// Eventually polls cond every 20 ms until it returns true or timeout
// passes; then fails the test with msg and the last reason cond gave.
func Eventually(t testing.TB, timeout time.Duration, msg string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	last := ""
	for {
		ok, why := cond()
		if ok {
			return
		}
		last = why
		if time.Now().After(deadline) {
			t.Fatalf("%s: not true after %v: %s", msg, timeout, last)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
