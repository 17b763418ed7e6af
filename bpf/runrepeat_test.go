package bpf

import (
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestRunRepeatExact: runRepeat counts exactly n packets even while
// signals keep arriving at its thread. Without the blocked signal mask
// the kernel ends the run with EINTR and cilium/ebpf starts it again, so
// this test counted 1,039,861 of 1,000,000 (and CI once 701 of 700).
func TestRunRepeatExact(t *testing.T) {
	p := loadPort(t)
	applyACL(t, p, ACLIngress, ACLRule{Name: "T|udp", Priority: 1, Action: ACLForward, Match: Match{Proto: 17, ProtoSet: true}})
	f := udp4("10.0.0.1", 9).bytes()

	runtime.LockOSThread() // runRepeat's own lock nests: the same thread
	defer runtime.UnlockOSThread()
	tid := unix.Gettid()
	var stop atomic.Bool
	var wg sync.WaitGroup
	var sent atomic.Int64
	wg.Add(1)
	go func() { // SIGURG is the Go runtime's own preemption signal: harmless
		defer wg.Done()
		for !stop.Load() {
			if unix.Tgkill(os.Getpid(), tid, syscall.SIGURG) == nil {
				sent.Add(1)
			}
			time.Sleep(20 * time.Microsecond)
		}
	}()
	const runs, n = 30, 10000
	for i := 0; i < runs; i++ {
		runRepeat(t, p, f, n)
	}
	stop.Store(true)
	wg.Wait()
	got := aclCounters(t, p, ACLIngress)["T|udp"].Packets
	t.Logf("%d signals sent at the thread; %d packets counted", sent.Load(), got)
	if got != runs*n {
		t.Fatalf("counted %d packets, ran %d", got, runs*n)
	}
}
