package deploye2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/switchyard-net/switchyard/tests/e2eutil"
)

// makeIn runs make in the repository with args, building into a private bin
// directory (the shared bin/ may be in use by other tests).
func makeIn(t *testing.T, args ...string) string {
	t.Helper()
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make not installed")
	}
	root := e2eutil.RepoRoot(t)
	args = append([]string{"-C", root, "--no-print-directory", "BIN=" + filepath.Join(t.TempDir(), "bin")}, args...)
	out, err := exec.Command("make", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("make %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestInstallUnitsVerify: make install PREFIX=DIR puts the five binaries
// and the units there, the units name those binaries, and
// systemd-analyze verify has nothing to say about them.
func TestInstallUnitsVerify(t *testing.T) {
	prefix := filepath.Join(t.TempDir(), "usr")
	makeIn(t, "install", "PREFIX="+prefix)
	for _, b := range []string{"orchagent", "syncd", "impaird", "trafficd", "swctl"} {
		if fi, err := os.Stat(filepath.Join(prefix, "bin", b)); err != nil || fi.Mode()&0o111 == 0 {
			t.Errorf("bin/%s not installed executable: %v", b, err)
		}
	}
	for _, f := range []string{"bash-completion/completions/swctl", "zsh/vendor-completions/_swctl", "fish/vendor_completions.d/swctl.fish"} {
		if b, err := os.ReadFile(filepath.Join(prefix, "share", f)); err != nil || !strings.Contains(string(b), "__complete") {
			t.Errorf("completion %s not installed: %v", f, err)
		}
	}
	unitDir := filepath.Join(prefix, "lib", "systemd", "system")
	units, _ := filepath.Glob(filepath.Join(unitDir, "*"))
	var names []string
	for _, u := range units {
		names = append(names, filepath.Base(u))
	}
	want := []string{"switchyard-impaird.service", "switchyard-orchagent.service", "switchyard-syncd.service",
		"switchyard-trafficd.service", "switchyard.target"}
	if !slices.Equal(names, want) {
		t.Fatalf("units installed: %v, want %v", names, want)
	}
	for _, d := range []string{"orchagent", "syncd", "impaird", "trafficd"} {
		b, _ := os.ReadFile(filepath.Join(unitDir, "switchyard-"+d+".service"))
		unit := string(b)
		for _, line := range []string{"Type=notify", "Restart=on-failure", "After=redis-server.service",
			"CapabilityBoundingSet=CAP_NET_ADMIN", "WantedBy=switchyard.target", "PartOf=switchyard.target",
			"ExecStart=" + filepath.Join(prefix, "bin", d) + " --redis ${SWITCHYARD_REDIS} "} {
			if !strings.Contains(unit, line) {
				t.Errorf("switchyard-%s.service lacks %q", d, line)
			}
		}
	}
	if _, err := exec.LookPath("systemd-analyze"); err != nil {
		t.Skip("systemd-analyze not installed (package systemd; scripts/install-deps.sh)")
	}
	out, err := exec.Command("systemd-analyze", append([]string{"verify"}, units...)...).CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
}

// TestDebInstallRemove: make deb builds a package with no maintainer
// scripts (it starts and enables nothing); dpkg installs it into a
// throwaway root and dpkg -r leaves nothing but dpkg's own database.
func TestDebInstallRemove(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("dpkg --root as non-root: run as root")
	}
	for _, tool := range []string{"dpkg", "dpkg-deb"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed", tool)
		}
	}
	out := makeIn(t, "deb")
	i := strings.Index(out, "created package: ")
	if i < 0 {
		t.Fatalf("make deb printed no package:\n%s", out)
	}
	deb := strings.TrimSpace(strings.SplitN(out[i+len("created package: "):], "\n", 2)[0])
	ctrl, err := exec.Command("dpkg-deb", "--ctrl-tarfile", deb).Output()
	if err != nil {
		t.Fatal(err)
	}
	tarList := exec.Command("tar", "-t")
	tarList.Stdin = strings.NewReader(string(ctrl))
	files, err := tarList.Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range strings.Fields(string(files)) {
		switch strings.TrimPrefix(f, "./") {
		case "", "control", "md5sums":
		default:
			t.Errorf("package has %s: want no maintainer scripts or conffiles (nothing started unasked)", f)
		}
	}

	root := t.TempDir()
	for _, d := range []string{"var/lib/dpkg/info", "var/lib/dpkg/updates"} {
		os.MkdirAll(filepath.Join(root, d), 0o755)
	}
	os.WriteFile(filepath.Join(root, "var/lib/dpkg/status"), nil, 0o644)
	before := tree(t, root)
	dpkg := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("dpkg", append([]string{"--root=" + root, "--force-depends"}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("dpkg %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	dpkg("-i", deb)
	installed := tree(t, root)
	for _, f := range []string{"usr/bin/orchagent", "usr/bin/swctl", "usr/lib/systemd/system/switchyard.target",
		"usr/share/bash-completion/completions/swctl"} {
		if !slices.Contains(installed, f) {
			t.Errorf("after dpkg -i, %s missing", f)
		}
	}
	for _, f := range installed {
		if strings.HasPrefix(f, "etc/") {
			t.Errorf("dpkg -i made %s (want nothing enabled or configured)", f)
		}
	}
	dpkg("-r", "switchyard")
	for _, f := range tree(t, root) {
		if !slices.Contains(before, f) && !strings.HasPrefix(f, "var/lib/dpkg/") {
			t.Errorf("dpkg -r left %s behind", f)
		}
	}
}

// tree lists every path under root, relative.
func tree(t *testing.T, root string) []string {
	var out []string
	filepath.WalkDir(root, func(p string, _ os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if rel, _ := filepath.Rel(root, p); rel != "." {
			out = append(out, rel)
		}
		return nil
	})
	return out
}
