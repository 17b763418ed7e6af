package swctl

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/switchyard-net/switchyard/tests/e2eutil"
)

// seedNames puts a few entries in CONFIG_DB for the live-name completions.
func seedNames(h *harness) {
	ctx := context.Background()
	h.cfg.HSet(ctx, "PORT|Ethernet0", "admin_status", "up")
	h.cfg.HSet(ctx, "PORT|Ethernet4", "admin_status", "up")
	h.cfg.HSet(ctx, "VLAN|Vlan100", "vlanid", "100")
	h.cfg.HSet(ctx, "INTERFACE|Ethernet0|10.0.0.1/24", "NULL", "NULL")
	h.cfg.HSet(ctx, "STATIC_ROUTE|10.99.0.0/24", "nexthop", "10.0.0.2")
	h.cfg.HSet(ctx, "FDB|Vlan100|00:11:22:33:44:55", "port", "Ethernet0")
	h.cfg.HSet(ctx, "IMPAIRMENT_FLOW|Ethernet0|ping", "proto", "icmp")
	h.cfg.HSet(ctx, "ACL_TABLE|DATAACL", "type", "L3", "ports@", "Ethernet0")
	h.cfg.HSet(ctx, "ACL_RULE|DATAACL|SYN_DROP", "PRIORITY", "20", "PACKET_ACTION", "DROP")
}

func TestCompleteCandidates(t *testing.T) {
	h := newHarness(t)
	seedNames(h)
	for _, c := range []struct {
		words string // the command line; "_" is the empty word being typed
		want  []string
	}{
		{"co", []string{"config", "completion"}},
		{"config _", []string{"port", "vlan", "interface", "route", "mac", "impairment", "traffic", "acl", "load", "save"}},
		{"show in", []string{"interfaces"}},
		{"config port _", []string{"del", "tuning", "Ethernet0", "Ethernet4"}},
		{"config port Ethernet0 --m", []string{"--mac", "--mtu"}},
		{"config port Ethernet0 --admin _", []string{"up", "down"}},
		{"config vlan member add _", []string{"100"}},
		{"config vlan member add 100 _", []string{"Ethernet0", "Ethernet4"}},
		{"config interface ip del Ethernet0 _", []string{"10.0.0.1/24"}},
		{"config interface ip add _", []string{"Ethernet0", "Ethernet4", "Vlan100"}},
		{"config route del _", []string{"10.99.0.0/24"}},
		{"config route add 10.1.0.0/16 --ifname E", []string{"Ethernet0", "Ethernet4"}},
		{"config mac del Vlan100 _", []string{"00:11:22:33:44:55"}},
		{"config impairment flow del Ethernet0 _", []string{"ping"}},
		{"config acl rule add _", []string{"DATAACL"}},
		{"config acl rule del DATAACL _", []string{"SYN_DROP"}},
		{"config acl table add T --stage _", []string{"ingress", "egress"}},
		{"config impairment set Ethernet0 --direction _", []string{"ingress", "egress", "both"}},
		{"config load _", []string{filesDirective}},
		{"wait --t", []string{"--timeout"}},
		{"show interfaces --counters _", nil},
	} {
		words := strings.Fields(strings.ReplaceAll(c.words, "_", "''"))
		for i, w := range words {
			if w == "''" {
				words[i] = ""
			}
		}
		var out bytes.Buffer
		args := append([]string{completeVerb, "--redis", h.srv.URL()}, words...)
		if code := Run(context.Background(), args, &out, os.Stderr); code != 0 {
			t.Fatalf("__complete %s: exit %d", c.words, code)
		}
		got := strings.Fields(out.String())
		if !slices.Equal(got, c.want) {
			t.Errorf("swctl %s<TAB> = %q, want %q", c.words, got, c.want)
		}
	}
}

func TestCompleteWithoutRedis(t *testing.T) {
	var out bytes.Buffer
	code := Run(context.Background(), []string{completeVerb, "--redis", "unix:///nonexistent/redis.sock", "config", "port", ""}, &out, os.Stderr)
	if got := strings.Fields(out.String()); code != 0 || !slices.Equal(got, []string{"del", "tuning"}) {
		t.Errorf("without Redis: exit %d, %q; want 0 and just the verbs", code, got)
	}
}

func TestDidYouMean(t *testing.T) {
	h := newHarness(t)
	for _, c := range []struct{ args, want string }{
		{"confg", `unknown command "confg" (did you mean "config"?)`},
		{"show interface", `(did you mean "interfaces"?)`},
		{"config port Ethernet0 --mtuu 9000", `(did you mean "--mtu"?)`},
		{"show vlan --jsn", `(did you mean "--json"?)`},
	} {
		if errs := h.fails(ExitUsage, strings.Fields(c.args)...); !strings.Contains(errs, c.want) {
			t.Errorf("swctl %s: stderr %q lacks %q", c.args, errs, c.want)
		}
	}
}

// TestBashCompletionScript sources `swctl completion bash` in a real bash,
// checks `complete -p swctl`, and runs the completion function as bash
// would on TAB (COMP_WORDS, COMP_CWORD), reading COMPREPLY.
func TestBashCompletionScript(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash not installed")
	}
	h := newHarness(t)
	seedNames(h)
	dir := swctlDir(t)
	os.WriteFile(filepath.Join(dir, "config_db.json"), []byte("{}"), 0o644)
	script := `set -e
source <(swctl completion bash)
complete -p swctl
tab() { COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}; COMPREPLY=(); _swctl; echo "$*| ${COMPREPLY[*]}"; }
tab swctl co
tab swctl config port ''
tab swctl config port Ethernet0 --m
tab swctl config vlan member add 100 Eth
tab swctl config mac del Vlan100 ''
tab swctl config load conf
tab swctl config mac del Vlan100 00:11:2
`
	cmd := exec.Command(bash, "--norc", "--noprofile", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+dir+":"+os.Getenv("PATH"), "SWITCHYARD_REDIS="+h.srv.URL())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("bash: %v\n%s", err, out)
	}
	for _, want := range []string{
		"complete -F _swctl swctl",
		"swctl co| config completion",
		"swctl config port | del tuning Ethernet0 Ethernet4",
		"swctl config port Ethernet0 --m| --mac --mtu",
		"swctl config vlan member add 100 Eth| Ethernet0 Ethernet4",
		"swctl config mac del Vlan100 | 00:11:22:33:44:55",
		"swctl config load conf| config_db.json",
		// bash splits the word at ":" and replaces only its last part.
		"swctl config mac del Vlan100 00:11:2| 22:33:44:55",
	} {
		if !strings.Contains(string(out), want+"\n") {
			t.Errorf("bash completion: want line %q in:\n%s", want, out)
		}
	}
}

// TestCompletionScriptsParse: the zsh and fish scripts parse where those
// shells are installed; every script is printed for its shell.
func TestCompletionScriptsParse(t *testing.T) {
	h := newHarness(t)
	for _, sh := range []string{"bash", "zsh", "fish"} {
		out := h.ok("completion", sh)
		if !strings.Contains(out, "__complete") {
			t.Errorf("completion %s does not call swctl __complete:\n%s", sh, out)
		}
		path, err := exec.LookPath(sh)
		if err != nil {
			t.Logf("%s not installed: its script is not parsed", sh)
			continue
		}
		f := filepath.Join(t.TempDir(), "swctl."+sh)
		os.WriteFile(f, []byte(out), 0o644)
		if msg, err := exec.Command(path, "-n", f).CombinedOutput(); err != nil {
			t.Errorf("%s -n: %v\n%s", sh, err, msg)
		}
	}
	if errs := h.fails(ExitUsage, "completion", "tcsh"); !strings.Contains(errs, "want bash, zsh or fish") {
		t.Errorf("completion tcsh: %s", errs)
	}
}

// TestFishCompletionScript asks fish itself (complete -C) for the
// candidates through the generated script.
func TestFishCompletionScript(t *testing.T) {
	fish, err := exec.LookPath("fish")
	if err != nil {
		t.Skip("fish not installed (scripts/install-deps.sh installs it)")
	}
	h := newHarness(t)
	seedNames(h)
	dir := swctlDir(t)
	cmd := exec.Command(fish, "--no-config", "-c", `swctl completion fish | source
complete -C"swctl sh"
complete -C"swctl config port Ethernet0 --m"
complete -C"swctl config vlan member add 100 "`)
	cmd.Env = append(os.Environ(), "PATH="+dir+":"+os.Getenv("PATH"), "SWITCHYARD_REDIS="+h.srv.URL())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("fish: %v\n%s", err, out)
	}
	if got := strings.Fields(string(out)); !slices.Equal(got, []string{"show", "--mac", "--mtu", "Ethernet0", "Ethernet4"}) {
		t.Errorf("fish completions: %q", got)
	}
}

// TestZshCompletionScript runs the generated zsh function with the words
// and CURRENT zsh's completion system gives it; compadd and _files (only
// usable inside a completion widget) are stood in for by printers.
func TestZshCompletionScript(t *testing.T) {
	zsh, err := exec.LookPath("zsh")
	if err != nil {
		t.Skip("zsh not installed (scripts/install-deps.sh installs it)")
	}
	h := newHarness(t)
	seedNames(h)
	dir := swctlDir(t)
	cmd := exec.Command(zsh, "-f", "-c", `compdef() { :; }
compadd() { [[ $1 == -a ]] && print -l -- ${(P)2}; }
_files() { print files; }
source <(swctl completion zsh)
words=(swctl sh); CURRENT=2; _swctl
words=(swctl config mac del Vlan100 ""); CURRENT=6; _swctl
words=(swctl config load ""); CURRENT=4; _swctl`)
	cmd.Env = append(os.Environ(), "PATH="+dir+":"+os.Getenv("PATH"), "SWITCHYARD_REDIS="+h.srv.URL())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("zsh: %v\n%s", err, out)
	}
	if got := strings.Fields(string(out)); !slices.Equal(got, []string{"show", "00:11:22:33:44:55", "files"}) {
		t.Errorf("zsh completions: %q", got)
	}
}

// swctlDir returns a directory holding this package's swctl, built now
// (bin/ may be older than the source), to put first on a shell's PATH.
func swctlDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(dir, "swctl"), "./cmd/swctl")
	build.Dir = e2eutil.RepoRoot(t)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/swctl: %v\n%s", err, out)
	}
	return dir
}
