// Package e2eutil helps end-to-end tests run the built switchyard binaries:
// it finds the repository's bin/ directory (building a missing binary with
// the go tool when one is available) and runs daemons as child processes
// whose output goes to the test log.
package e2eutil

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
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

// Proc is a running daemon.
type Proc struct {
	t    testing.TB
	Cmd  *exec.Cmd
	mu   sync.Mutex
	out  bytes.Buffer
	done chan struct{}
}

// Start runs bin/NAME with args; its output is kept and written to the test
// log at cleanup (or on Output). The process is killed at cleanup.
func Start(t testing.TB, name string, args ...string) *Proc {
	t.Helper()
	p := &Proc{t: t, done: make(chan struct{})}
	p.Cmd = exec.Command(Binary(t, name), args...)
	p.Cmd.Stdout = (*lockedWriter)(p)
	p.Cmd.Stderr = (*lockedWriter)(p)
	if err := p.Cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() { p.Cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.Kill()
		if t.Failed() || testing.Verbose() {
			t.Logf("--- %s output ---\n%s", name, p.Output())
		}
	})
	return p
}

type lockedWriter Proc

func (w *lockedWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.out.Write(b)
}

// Output is everything the process printed so far.
func (p *Proc) Output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// Kill sends SIGKILL (as kill -9) and waits for the process to exit.
func (p *Proc) Kill() {
	if p.Cmd.Process != nil {
		p.Cmd.Process.Signal(syscall.SIGKILL)
	}
	<-p.done
}

// Stop sends SIGTERM and waits up to 10 s, then kills.
func (p *Proc) Stop() {
	if p.Cmd.Process != nil {
		p.Cmd.Process.Signal(syscall.SIGTERM)
	}
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		p.Kill()
	}
}

// Exited reports whether the process has exited.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

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
