package swctle2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/switchyard-net/switchyard/tests/e2eutil"
)

// composeService is the part of a compose service the check looks at.
type composeService struct {
	Image       string
	Build       any
	Command     []string
	NetworkMode string   `yaml:"network_mode"`
	Restart     string   `yaml:"restart"`
	CapAdd      []string `yaml:"cap_add"`
	Volumes     []any
	Healthcheck struct {
		Test []string
	}
}

// TestComposeFile checks docker-compose.yml without a Docker engine: it
// parses, every binary it runs is built from cmd/, every flag it passes is
// registered by that binary, and the daemons get what they need (host
// network, capabilities, bpffs, healthchecks, restart policies).
func TestComposeFile(t *testing.T) {
	root := e2eutil.RepoRoot(t)
	data, err := os.ReadFile(filepath.Join(root, "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Services map[string]composeService
	}
	if err := yaml.Unmarshal(data, &file); err != nil {
		t.Fatalf("docker-compose.yml does not parse: %v", err)
	}
	redis, ok := file.Services["redis"]
	if !ok || !slices.Contains(redis.Command, "--notify-keyspace-events") || len(redis.Healthcheck.Test) == 0 {
		t.Errorf("redis service: want --notify-keyspace-events and a healthcheck, got %+v", redis)
	}
	for _, d := range []string{"orchagent", "syncd", "impaird", "trafficd"} {
		if _, ok := file.Services[d]; !ok {
			t.Errorf("no service for %s", d)
		}
	}
	for name, s := range file.Services {
		if len(s.Command) == 0 || !strings.HasPrefix(s.Command[0], "/usr/local/bin/") {
			continue // not one of ours (redis)
		}
		t.Run(name, func(t *testing.T) {
			bin := filepath.Base(s.Command[0])
			if !slices.Contains([]string{"orchagent", "syncd", "impaird", "trafficd", "swctl"}, bin) {
				t.Fatalf("%s runs %s: not a switchyard binary (cmd/orchagent, syncd, impaird, trafficd, swctl)", name, s.Command[0])
			}
			if s.NetworkMode != "host" || s.Restart == "" || len(s.Healthcheck.Test) == 0 || s.Build == nil {
				t.Errorf("%s: want network_mode host, a restart policy, a healthcheck and a build; got %+v", name, s)
			}
			if bin == "impaird" {
				for _, c := range []string{"NET_ADMIN", "SYS_ADMIN"} {
					if !slices.Contains(s.CapAdd, c) {
						t.Errorf("impaird lacks cap_add %s", c)
					}
				}
				if !strings.Contains(string(mustYAML(t, s.Volumes)), "/sys/fs/bpf") {
					t.Errorf("impaird does not mount /sys/fs/bpf: %v", s.Volumes)
				}
			}
			checkFlags(t, daemon(t, bin), s.Command[1:])
			if hc := s.Healthcheck.Test; len(hc) > 1 && hc[0] == "CMD" && strings.HasPrefix(hc[1], "/usr/local/bin/swctl") {
				// The healthcheck's verb and flags must parse: with --help
				// swctl parses everything and exits 0 without Redis.
				args := append(append([]string(nil), hc[2:]...), "--help")
				if out, err := exec.Command(e2eutil.Binary(t, "swctl"), args...).CombinedOutput(); err != nil {
					t.Errorf("healthcheck swctl %s: %v\n%s", strings.Join(hc[2:], " "), err, out)
				}
			}
		})
	}

	dockerfile, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"AS build", "CGO_ENABLED=0", "./cmd/...", "COPY --from=build /out/ /usr/local/bin/"} {
		if !strings.Contains(string(dockerfile), want) {
			t.Errorf("Dockerfile lacks %q (multi-stage static build of every cmd into /usr/local/bin)", want)
		}
	}
}

// checkFlags fails t for any --flag in args that bin --help does not list.
func checkFlags(t *testing.T, bin string, args []string) {
	t.Helper()
	out, _ := exec.Command(bin, "--help").CombinedOutput()
	registered := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\s+--?([A-Za-z0-9][\w-]*)`).FindAllStringSubmatch(string(out), -1) {
		registered[m[1]] = true
	}
	if len(registered) == 0 {
		t.Fatalf("%s --help lists no flags:\n%s", bin, out)
	}
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !registered[name] {
			t.Errorf("%s does not register --%s (its --help:\n%s)", filepath.Base(bin), name, out)
		}
	}
}

func mustYAML(t *testing.T, v any) []byte {
	t.Helper()
	b, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
