package vm

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchyard-net/switchyard/tests/kernelcap"
)

// vmexec returns the harness script's path, skipping t where no VM can be
// had (vmexec --check says why; in CI that is a failure instead).
func vmexec(t *testing.T) string {
	t.Helper()
	if kernelcap.InVM() {
		t.Skip("tests the harness from the host")
	}
	if testing.Short() {
		t.Skip("boots a VM; skipped with -short")
	}
	path, err := filepath.Abs("vmexec")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(path, "--check").CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 3 {
		t.Skipf("no VM here: %s", bytes.TrimSpace(out))
	}
	if err != nil {
		t.Fatalf("vmexec --check: %v\n%s", err, out)
	}
	return path
}

// TestVmexecContract checks what go test -exec relies on: the command's
// exit status, stdout and stderr come back separately; the working
// directory, SWITCHYARD_* variables and SWITCHYARD_VM=1 arrive; the guest
// runs the VM kernel as root with writable /tmp and /run/netns; output
// files named by -test.*profile= flags come back to the host.
func TestVmexecContract(t *testing.T) {
	path := vmexec(t)
	profile := filepath.Join(t.TempDir(), "cpu.out")
	script := `
		echo "cwd=$(pwd) vm=$SWITCHYARD_VM probe=$SWITCHYARD_PROBE uid=$(id -u)"
		echo "kernel=$(uname -r)"
		touch /tmp/vmexec-probe.$$ /run/netns/vmexec-probe.$$ || exit 9 # not /tmp/x: a checkout there is mounted read-only
		f=${1#-test.cpuprofile=}; echo profile-data >"$f"
		echo to-stderr >&2
		exit 7`
	cmd := exec.Command(path, "--timeout", "240", "bash", "-c", script, "arg0", "-test.cpuprofile="+profile)
	cmd.Env = append(os.Environ(), "SWITCHYARD_PROBE=a b'c")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 7 {
		t.Fatalf("vmexec exit: got %v, want status 7\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	wd, _ := os.Getwd()
	if want := "cwd=" + wd + " vm=1 probe=a b'c uid=0\n"; !strings.Contains(stdout.String(), want) {
		t.Errorf("stdout = %q, want it to contain %q", stdout.String(), want)
	}
	if strings.Contains(stdout.String(), "to-stderr") || !strings.Contains(stderr.String(), "to-stderr") {
		t.Errorf("stderr not kept apart: stdout %q, stderr %q", stdout.String(), stderr.String())
	}
	if strings.Contains(stdout.String(), "kernel="+hostKernel(t)+"\n") {
		t.Errorf("the command ran on the host kernel: %q", stdout.String())
	}
	if b, err := os.ReadFile(profile); err != nil || string(b) != "profile-data\n" {
		t.Errorf("-test.cpuprofile output not copied back: %q, %v", b, err)
	}
}

// TestVmexecTimeout checks that a command outliving --timeout is killed
// with exit status 124.
func TestVmexecTimeout(t *testing.T) {
	path := vmexec(t)
	err := exec.Command(path, "--timeout", "3", "sleep", "600").Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 124 {
		t.Fatalf("vmexec --timeout 3 sleep 600: got %v, want exit status 124", err)
	}
}

func hostKernel(t *testing.T) string {
	b, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}
