package swctle2e

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchyard-net/switchyard/tests/e2eutil"
	"github.com/switchyard-net/switchyard/tests/testredis"
)

// swctl runs bin/swctl against srv and returns stdout, stderr, exit code.
func swctl(t *testing.T, srv *testredis.Server, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(e2eutil.Binary(t, "swctl"), args...)
	cmd.Env = append(os.Environ(), "SWITCHYARD_REDIS="+srv.URL())
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run swctl: %v", err)
	}
	return out.String(), errb.String(), code
}

// mustSwctl runs bin/swctl and fails the test unless it exits 0.
func mustSwctl(t *testing.T, srv *testredis.Server, args ...string) string {
	t.Helper()
	out, errs, code := swctl(t, srv, args...)
	if code != 0 {
		t.Fatalf("swctl %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, out, errs)
	}
	return out
}

// daemon returns bin/NAME, building it when missing; it skips the test
// when cmd/NAME holds no Go code yet (the daemon is not written yet).
func daemon(t *testing.T, name string) string {
	t.Helper()
	if os.Getenv("SWITCHYARD_BIN") == "" {
		files, _ := filepath.Glob(filepath.Join(e2eutil.RepoRoot(t), "cmd", name, "*.go"))
		if len(files) == 0 {
			t.Skipf("cmd/%s has no code yet: %s is not written", name, name)
		}
	}
	return e2eutil.Binary(t, name)
}
