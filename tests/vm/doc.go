// Package vm is the full-kernel test harness: vmexec (a script beside this
// file) boots Debian's stock kernel under qemu with the host's root
// filesystem shared read-only and runs one command — typically a compiled
// test binary, as go test -exec — inside it; run-suite.sh runs the tests
// listed in suite.txt that way (make test-vm). See docs/vm.md.
//
// The Go code here is only the harness's own tests: from the host, that
// vmexec keeps go test -exec's contract (exit status, separate stdout and
// stderr, cwd, environment, output files, timeout); inside the VM, that
// every kernelcap feature is present, redis runs, and a VLAN-filtering
// bridge carries traffic between namespaces. It must not
// grow helpers for other packages (those belong in tests/kernelcap,
// tests/testns, tests/e2eutil).
package vm
