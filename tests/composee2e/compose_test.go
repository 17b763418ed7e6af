// Package composee2e starts docker-compose.yml for real: it builds the
// images without a registry (scripts/compose-images.sh), runs the stack
// managing a fresh network namespace (docker-compose.netns.yml), loads a
// config through `docker compose exec … swctl config load`, and judges the
// kernel with iproute2 JSON and STATE_DB with redis-cli. It then kills the
// orchagent process (the restart policy brings it back, no route is
// deleted: `ip monitor`), restarts impaird (same XDP program id) and
// checks what `docker compose down` leaves (docs/deploy.md).
//
// It runs only from make test-compose (SWITCHYARD_TEST_COMPOSE=1), as
// root, with a Docker engine (scripts/install-deps.sh starts one).
package composee2e

import (
	"bytes"
	"encoding/json"

	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/switchyard-net/switchyard/tests/e2eutil"
	"github.com/switchyard-net/switchyard/tests/testns"
)

// config is what the test loads: two ports, an address, a route through a
// neighbour on the first port, and an impairment on it.
const config = `{
  "PORT": {
    "Ethernet0": {"admin_status": "up", "mtu": "9000"},
    "Ethernet4": {"admin_status": "up", "mtu": "9000"}
  },
  "INTERFACE": {"Ethernet0|10.0.0.1/24": {}},
  "STATIC_ROUTE": {"10.99.0.0/24": {"nexthop": "10.0.0.2"}},
  "IMPAIRMENT": {"Ethernet0": {"loss": "10", "seed": "1"}}
}`

// stack is one compose project under test.
type stack struct {
	t       *testing.T
	root    string
	project string
	env     []string
	compose []string // the compose command: docker compose or docker-compose
}

func TestCompose(t *testing.T) {
	if os.Getenv("SWITCHYARD_TEST_COMPOSE") != "1" {
		t.Skip("starts Docker containers: run by make test-compose (SWITCHYARD_TEST_COMPOSE=1)")
	}
	testns.RequireRoot(t)
	if err := exec.Command("docker", "info").Run(); err != nil {
		t.Skipf("no Docker engine answers (docker info: %v): scripts/install-deps.sh installs and starts one", err)
	}
	root := e2eutil.RepoRoot(t)
	for _, b := range []string{"orchagent", "syncd", "impaird", "trafficd", "swctl"} {
		if _, err := os.Stat(filepath.Join(root, "bin", b)); err != nil {
			t.Fatalf("bin/%s missing: make test-compose runs make build first (%v)", b, err)
		}
	}
	began := time.Now()
	ns := testns.New(t)
	hosts := testns.New(t)
	ns.Veth("Ethernet0", hosts, "h0")
	ns.Veth("Ethernet4", hosts, "h4")
	hosts.IP("addr", "add", "10.0.0.2/24", "dev", "h0")
	bpffs := sharedBPFFS(t)

	s := newStack(t, root, ns.Name, bpffs)
	step := time.Now()
	s.run("build")
	t.Logf("images built in %v", time.Since(step).Round(time.Millisecond))
	step = time.Now()
	s.run("up", "-d")
	t.Cleanup(func() { s.try("down", "-v", "--remove-orphans") })
	t.Logf("stack up in %v", time.Since(step).Round(time.Millisecond))

	step = time.Now()
	s.exec(config, "orchagent", "swctl", "config", "load", "-")
	s.exec("", "orchagent", "swctl", "wait", "--timeout", "60s")
	t.Logf("config loaded and applied in %v", time.Since(step).Round(time.Millisecond))

	// The kernel, judged by iproute2.
	if mtu := linkField(t, ns, "Ethernet0", "mtu"); mtu != float64(9000) {
		t.Errorf("Ethernet0 mtu = %v, want 9000", mtu)
	}
	if out := ns.IP("-j", "addr", "show", "dev", "Ethernet0"); !strings.Contains(out, `"local":"10.0.0.1","prefixlen":24`) {
		t.Errorf("Ethernet0 lacks 10.0.0.1/24: %s", out)
	}
	if out := ns.IP("-j", "route", "show", "10.99.0.0/24"); !strings.Contains(out, `"gateway":"10.0.0.2"`) {
		t.Errorf("route 10.99.0.0/24 via 10.0.0.2 missing: %s", out)
	}
	prog := xdpProg(t, ns, "Ethernet0")
	if prog == 0 {
		t.Fatalf("no XDP program on Ethernet0: %s", ns.IP("-j", "link", "show", "Ethernet0"))
	}
	// STATE_DB, read inside the redis container.
	for _, key := range []string{"PORT_TABLE|Ethernet0", "STATIC_ROUTE_TABLE|10.99.0.0/24", "IMPAIRMENT_TABLE|Ethernet0"} {
		if st := s.redis("-n", "6", "HGET", key, "state"); st != "ok" {
			t.Errorf("STATE_DB %s state = %q, want ok", key, st)
		}
	}

	// orchagent dies: the restart policy brings it back, the kernel's
	// routes and addresses are adopted, not deleted and added again.
	step = time.Now()
	mon := monitor(t, ns)
	before := s.inspect("orchagent", "{{.RestartCount}}")
	pid := s.inspect("orchagent", "{{.State.Pid}}")
	if out, err := exec.Command("kill", "-KILL", pid).CombinedOutput(); err != nil {
		t.Fatalf("kill orchagent (pid %s): %v: %s", pid, err, out)
	}
	e2eutil.Eventually(t, 60*time.Second, "orchagent restarted by its restart policy", func() (bool, string) {
		n, running := s.inspect("orchagent", "{{.RestartCount}}"), s.inspect("orchagent", "{{.State.Running}}")
		return n != before && running == "true", "restarts " + n + ", running " + running
	})
	// A new entry applied proves the new orchagent has reconciled its scan.
	s.exec("", "orchagent", "swctl", "config", "route", "add", "10.98.0.0/24", "--nexthop", "10.0.0.2")
	s.exec("", "orchagent", "swctl", "wait", "--timeout", "60s")
	events := mon()
	if strings.Contains(events, "Deleted") {
		t.Errorf("orchagent restart flapped the kernel (ip monitor):\n%s", events)
	}
	t.Logf("orchagent killed and back, reconciled, in %v; ip monitor saw:\n%s", time.Since(step).Round(time.Millisecond), events)

	// impaird restarts: it re-adopts its pinned bpf link (same link id)
	// and, the program being the same release's on the same pinned maps,
	// the running program too (same program id; docs/impaird.md).
	step = time.Now()
	link := xdpLink(t, bpffs, "Ethernet0")
	started := s.inspect("impaird", "{{.State.StartedAt}}")
	s.run("restart", "impaird")
	if now := s.inspect("impaird", "{{.State.StartedAt}}"); now == started {
		t.Fatalf("impaird was not restarted (started at %s)", now)
	}
	s.exec("", "orchagent", "swctl", "config", "impairment", "set", "Ethernet4", "--loss", "5")
	s.exec("", "orchagent", "swctl", "wait", "--timeout", "60s")
	if got := xdpLink(t, bpffs, "Ethernet0"); got != link {
		t.Errorf("bpf link of Ethernet0 after impaird restart: id %d, want the same id %d", got, link)
	}
	newProg := xdpProg(t, ns, "Ethernet0")
	if newProg != prog {
		t.Errorf("XDP program on Ethernet0 after impaird restart: id %d, want the same id %d", newProg, prog)
	}
	t.Logf("impaird restarted and reconciled in %v (bpf link id %d kept; XDP prog id %d, then %d)",
		time.Since(step).Round(time.Millisecond), link, prog, newProg)
	prog = newProg

	// docker compose down: containers and the project's network go; the
	// redis volume (CONFIG_DB), the images, the kernel state and the pinned
	// impairments stay (docs/deploy.md).
	step = time.Now()
	s.run("down")
	if out := s.docker("ps", "-aq", "--filter", "label=com.docker.compose.project="+s.project); out != "" {
		t.Errorf("containers left after down: %s", out)
	}
	if out := s.docker("volume", "ls", "-q", "--filter", "label=com.docker.compose.project="+s.project); !strings.Contains(out, "redis-socket") {
		t.Errorf("the redis volume is gone after down (want it kept: CONFIG_DB persists): %q", out)
	}
	if out := s.docker("network", "ls", "-q", "--filter", "label=com.docker.compose.project="+s.project); out != "" {
		t.Errorf("networks left after down (the services use host and none): %s", out)
	}
	for _, img := range []string{"switchyard:latest", "switchyard-redis:latest"} {
		s.docker("image", "inspect", "-f", "{{.Id}}", img) // kept: fails the test when gone
	}
	if out := ns.IP("-j", "route", "show", "10.99.0.0/24"); !strings.Contains(out, "10.0.0.2") {
		t.Errorf("route 10.99.0.0/24 gone after down (want the kernel left as it is): %s", out)
	}
	if got := xdpProg(t, ns, "Ethernet0"); got != prog {
		t.Errorf("XDP program on Ethernet0 after down: id %d, want %d kept (pinned)", got, prog)
	}
	t.Logf("down in %v; whole test %v", time.Since(step).Round(time.Millisecond), time.Since(began).Round(time.Millisecond))
}

// newStack prepares the environment of compose: the local base images'
// build arguments, the namespace and bpffs, and BuildKit.
func newStack(t *testing.T, root, netns, bpffs string) *stack {
	out, err := exec.Command(filepath.Join(root, "scripts", "compose-images.sh")).Output()
	if err != nil {
		t.Fatalf("scripts/compose-images.sh: %v", err)
	}
	s := &stack{t: t, root: root, project: "swtest-" + strings.TrimPrefix(netns, "swt-")}
	s.env = append(os.Environ(), strings.Fields(string(out))...)
	s.env = append(s.env, "SWITCHYARD_NETNS="+netns, "SWITCHYARD_BPFFS="+bpffs,
		"DOCKER_BUILDKIT=1", "COMPOSE_DOCKER_CLI_BUILD=1")
	if dir := buildkitCLI(t); dir != "" {
		s.env = append(s.env, "PATH="+dir+":"+os.Getenv("PATH"))
	}
	files := []string{"-p", s.project, "-f", filepath.Join(root, "docker-compose.yml"),
		"-f", filepath.Join(root, "docker-compose.netns.yml")}
	if exec.Command("docker", "compose", "version").Run() == nil {
		s.compose = append([]string{"docker", "compose"}, files...)
	} else if p, err := exec.LookPath("docker-compose"); err == nil {
		s.compose = append([]string{p}, files...)
	} else {
		t.Skip("neither docker compose nor docker-compose is installed (scripts/install-deps.sh)")
	}
	return s
}

// buildkitCLI returns a directory to put first on PATH whose docker can
// build with BuildKit, or "" when the docker on PATH can. A docker CLI
// since 23 builds with BuildKit only through the buildx plugin; Debian's
// docker.io (20.10) has BuildKit built in.
func buildkitCLI(t *testing.T) string {
	if exec.Command("docker", "buildx", "version").Run() == nil {
		return ""
	}
	out, _ := exec.Command("docker", "version", "-f", "{{.Client.Version}}").Output()
	if strings.HasPrefix(string(out), "20.") || strings.HasPrefix(string(out), "19.") {
		return ""
	}
	if _, err := os.Stat("/usr/bin/docker"); err != nil {
		t.Skip("the docker CLI on PATH needs the buildx plugin to build with BuildKit, and /usr/bin/docker (docker.io) is absent")
	}
	dir := t.TempDir()
	if err := os.Symlink("/usr/bin/docker", filepath.Join(dir, "docker")); err != nil {
		t.Fatal(err)
	}
	return dir
}

func (s *stack) cmd(stdin string, args ...string) *exec.Cmd {
	c := exec.Command(s.compose[0], append(append([]string(nil), s.compose[1:]...), args...)...)
	c.Dir, c.Env = s.root, s.env
	if stdin != "" {
		c.Stdin = strings.NewReader(stdin)
	}
	return c
}

// run runs a compose subcommand and fails the test on error.
func (s *stack) run(args ...string) string {
	s.t.Helper()
	out, err := s.cmd("", args...).CombinedOutput()
	if err != nil {
		s.t.Fatalf("compose %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// try runs a compose subcommand, ignoring its outcome (cleanup).
func (s *stack) try(args ...string) { s.cmd("", args...).Run() }

// exec runs a command in a service's container (compose exec -T) with
// stdin and fails the test on error.
func (s *stack) exec(stdin, service string, args ...string) string {
	s.t.Helper()
	out, err := s.cmd(stdin, append([]string{"exec", "-T", service}, args...)...).CombinedOutput()
	if err != nil {
		logs, _ := s.cmd("", "logs", "--no-color", "--tail", "30").CombinedOutput()
		s.t.Fatalf("compose exec %s %s: %v\n%s\nlogs:\n%s", service, strings.Join(args, " "), err, out, logs)
	}
	return string(out)
}

// redis runs redis-cli against the stack's Redis (inside its container).
func (s *stack) redis(args ...string) string {
	s.t.Helper()
	return strings.TrimSpace(s.exec("", "redis", append([]string{"redis-cli", "-s", "/data/redis.sock"}, args...)...))
}

// inspect formats docker inspect of a service's container.
func (s *stack) inspect(service, format string) string {
	s.t.Helper()
	id := strings.TrimSpace(s.run("ps", "-q", service))
	if id == "" {
		s.t.Fatalf("no container for %s", service)
	}
	return s.docker("inspect", "-f", format, id)
}

func (s *stack) docker(args ...string) string {
	s.t.Helper()
	out, err := exec.Command("docker", args...).CombinedOutput()
	if err != nil {
		s.t.Fatalf("docker %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// sharedBPFFS mounts a private bpffs with shared propagation (compose binds
// it rshared into impaird) and unmounts it at cleanup.
func sharedBPFFS(t *testing.T) string {
	dir := filepath.Join(t.TempDir(), "bpffs")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("bpf", dir, "bpf", 0, "mode=0700"); err != nil {
		t.Skipf("cannot mount a bpffs (impaird pins there): %v", err)
	}
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
	if err := unix.Mount("", dir, "", unix.MS_SHARED, ""); err != nil {
		t.Fatalf("make %s shared: %v", dir, err)
	}
	return dir
}

// monitor runs `ip -n NS monitor route address` until the returned function
// is called, which returns what it printed.
func monitor(t *testing.T, ns *testns.NS) func() string {
	var buf bytes.Buffer
	var mu sync.Mutex
	c := exec.Command("ip", "-n", ns.Name, "monitor", "route", "address")
	c.Stdout = writerFunc(func(p []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return buf.Write(p) })
	if err := c.Start(); err != nil {
		t.Fatalf("ip monitor: %v", err)
	}
	done := false
	stop := func() string {
		if !done {
			done = true
			c.Process.Kill()
			c.Wait()
		}
		mu.Lock()
		defer mu.Unlock()
		return buf.String()
	}
	t.Cleanup(func() { stop() })
	return stop
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// linkField returns a field of `ip -j link show DEV`.
func linkField(t *testing.T, ns *testns.NS, dev, field string) any {
	var links []map[string]any
	ns.JSON(&links, "link", "show", "dev", dev)
	if len(links) != 1 {
		t.Fatalf("ip link show %s: %v", dev, links)
	}
	return links[0][field]
}

// xdpLink returns the id of the bpf link impaird pinned for port.
func xdpLink(t *testing.T, bpffs, port string) link.ID {
	l, err := link.LoadPinnedLink(filepath.Join(bpffs, "switchyard", port, "link"), nil)
	if err != nil {
		t.Fatalf("impaird's pinned link of %s: %v", port, err)
	}
	defer l.Close()
	info, err := l.Info()
	if err != nil {
		t.Fatalf("bpf link info of %s: %v", port, err)
	}
	return info.ID
}

// xdpProg returns the id of the XDP program attached to dev, 0 for none.
func xdpProg(t *testing.T, ns *testns.NS, dev string) int {
	var x struct {
		Prog struct{ ID int } `json:"prog"`
	}
	raw, _ := json.Marshal(linkField(t, ns, dev, "xdp"))
	json.Unmarshal(raw, &x)
	return x.Prog.ID
}
