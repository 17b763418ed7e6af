package e2eutil

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Proc is a running daemon.
type Proc struct {
	t    testing.TB
	name string
	Cmd  *exec.Cmd
	mu   sync.Mutex
	out  bytes.Buffer
	done chan struct{}
}

// Start runs bin/NAME with args; its output is kept and written to the test
// log at cleanup (or on Output). The process is killed at cleanup.
func Start(t testing.TB, name string, args ...string) *Proc {
	t.Helper()
	p := &Proc{t: t, name: name, done: make(chan struct{})}
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

// RSS is the process's resident set size in KiB; it fails the test when
// the process is gone.
func (p *Proc) RSS() int { return p.status("VmRSS") }

// AnonRSS is the anonymous part of the process's resident set in KiB (see
// AnonRSS); it fails the test when the process is gone.
func (p *Proc) AnonRSS() int { return p.status("RssAnon") }

func (p *Proc) status(field string) int {
	p.t.Helper()
	kb, err := procStatus(p.Cmd.Process.Pid, field)
	if err != nil {
		p.t.Fatalf("%s: %v", p.name, err)
	}
	return kb
}

// RSS is the resident set size of a process in KiB (/proc/PID/status VmRSS).
func RSS(pid int) (int, error) { return procStatus(pid, "VmRSS") }

// AnonRSS is the anonymous part of the resident set in KiB (RssAnon): the
// process's own memory, without the pages of its binary and libraries
// that code paths touched once (file-backed, shared, reclaimable).
func AnonRSS(pid int) (int, error) { return procStatus(pid, "RssAnon") }

func procStatus(pid int, field string) (int, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
		}
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", field, pid)
}
