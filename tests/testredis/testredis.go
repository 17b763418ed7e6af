// Package testredis starts a real, private redis-server for a test: a unix
// socket in the test's temp dir, keyspace notifications off (daemons must
// turn them on themselves), stopped at cleanup. Tests that cannot find
// redis-server skip with the reason.
package testredis

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Server is one running redis-server.
type Server struct {
	t      testing.TB
	Dir    string
	Socket string // unix socket path
	Port   int    // TCP port on 127.0.0.1
	cmd    *exec.Cmd
	extra  []string
}

// URL is the unix:// URL of the server (what daemons take as --redis).
func (s *Server) URL() string { return "unix://" + s.Socket }

// TCPURL is the redis:// URL of the server.
func (s *Server) TCPURL() string { return fmt.Sprintf("redis://127.0.0.1:%d", s.Port) }

// Start runs a redis-server for t; extra are additional "--name value"
// arguments (e.g. "--notify-keyspace-events", "KEA"). Skips t when
// redis-server is not installed, except inside the test VM (SWITCHYARD_VM=1),
// where that fails t: the VM suite must not pass by skipping.
func Start(t testing.TB, extra ...string) *Server {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		if os.Getenv("SWITCHYARD_VM") == "1" { // kernelcap.InVM: the VM runs the host's redis-server
			t.Fatalf("redis-server not found in the test VM (the host's root is shared): %v", err)
		}
		t.Skip("redis-server not installed (apt-get install redis-server, or run make deps as root)")
	}
	dir, err := os.MkdirTemp("", "swredis")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{t: t, Dir: dir, Socket: filepath.Join(dir, "redis.sock"), Port: FreePort(t), extra: extra}
	s.start()
	t.Cleanup(func() { s.Stop(); os.RemoveAll(dir) })
	return s
}

func (s *Server) start() {
	s.t.Helper()
	args := []string{
		"--port", strconv.Itoa(s.Port), "--bind", "127.0.0.1",
		"--unixsocket", s.Socket, "--unixsocketperm", "700",
		"--save", "", "--appendonly", "no", "--dir", s.Dir,
		"--databases", "16", "--logfile", filepath.Join(s.Dir, "redis.log"),
	}
	args = append(args, s.extra...)
	s.cmd = exec.Command("redis-server", args...)
	if err := s.cmd.Start(); err != nil {
		s.t.Fatalf("start redis-server: %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		c := redis.NewClient(&redis.Options{Network: "unix", Addr: s.Socket, Password: s.password()})
		err := c.Ping(context.Background()).Err()
		c.Close()
		if err == nil {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	log, _ := os.ReadFile(filepath.Join(s.Dir, "redis.log"))
	s.t.Fatalf("redis-server did not come up within 10s; log:\n%s", log)
}

// Stop kills the server (as a crash would: no save).
func (s *Server) Stop() {
	if s.cmd != nil && s.cmd.Process != nil {
		s.cmd.Process.Kill()
		s.cmd.Wait()
		s.cmd = nil
	}
}

// Restart stops the server and starts a fresh one (empty data, new run_id)
// on the same socket and port.
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	os.Remove(s.Socket)
	s.start()
}

// Client returns a client for database db, closed at test cleanup.
func (s *Server) Client(db int) *redis.Client {
	c := redis.NewClient(&redis.Options{Network: "unix", Addr: s.Socket, DB: db, Password: s.password()})
	s.t.Cleanup(func() { c.Close() })
	return c
}

// password is the --requirepass argument, if any.
func (s *Server) password() string {
	for i := 0; i+1 < len(s.extra); i++ {
		if s.extra[i] == "--requirepass" {
			return s.extra[i+1]
		}
	}
	return ""
}

// FreePort is a TCP port free on 127.0.0.1 now (for a server or a
// daemon's --metrics-addr started next).
func FreePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
