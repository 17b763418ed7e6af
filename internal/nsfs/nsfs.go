// Package nsfs reads and writes the sysfs and procfs files of one network
// namespace: /sys/class/net/<dev>/... and /proc/sys/net/... as a process
// inside that namespace would see them. It owns nothing else: what the
// files mean is its callers' business (orchagent's PORT_TUNING, syncd's
// mirror of it).
//
// Why a package: both trees are bound to a namespace in a different way.
// sysfs shows the devices of the network namespace that *mounted* it, so
// the process's own /sys shows its original namespace, whatever the
// thread's. /proc/sys/net is resolved against the network namespace of the
// thread that *opens* the file. For a namespace other than the caller's,
// FS therefore runs every file operation on one OS thread that it locks,
// moves into the namespace (setns) and gives a private mount namespace
// (unshare CLONE_NEWNS, mounts made slaves so nothing propagates back to
// the host), where it mounts a fresh sysfs over /sys — what `ip netns
// exec` does for a child process. Nothing is mounted in the host's mount
// namespace: when FS is closed the thread exits and its mount namespace,
// with the sysfs mount, goes with it (also when the daemon is killed).
package nsfs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"

	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// Options says which namespace FS serves.
type Options struct {
	// NetNS is a named namespace (/run/netns/NAME, as `ip netns add`
	// makes); "" = the caller's own namespace, served directly.
	NetNS string
	// Root, when set, is prepended to every path and no namespace is
	// entered: unit tests point it at a fake tree.
	Root string
}

// FS is the file view of one network namespace. Safe for concurrent use
// (operations of a namespaced FS run one at a time on its thread).
type FS struct {
	root  string
	label string
	reqs  chan func() // nil: operations run on the caller's thread
	done  chan struct{}
	once  sync.Once
}

// ErrClosed is returned by the operations of a closed namespaced FS.
var ErrClosed = errors.New("namespace file access closed")

// Open returns the FS of opts' namespace. For a named namespace it starts
// the thread described in the package comment; entering the namespace or
// mounting sysfs failing is the error (CAP_SYS_ADMIN is needed).
func Open(opts Options) (*FS, error) {
	fs := &FS{root: opts.Root, label: opts.NetNS}
	if opts.NetNS == "" || opts.Root != "" {
		if fs.label == "" {
			fs.label = "(current)"
		}
		return fs, nil
	}
	ns, err := netns.GetFromName(opts.NetNS)
	if err != nil {
		return nil, fmt.Errorf("open network namespace %q (ip netns add %s?): %w", opts.NetNS, opts.NetNS, err)
	}
	fs.reqs = make(chan func())
	fs.done = make(chan struct{})
	started := make(chan error, 1)
	go fs.serve(ns, started, nil)
	if err := <-started; err != nil {
		return nil, fmt.Errorf("network namespace %q: %w", opts.NetNS, err)
	}
	return fs, nil
}

// serve is the namespace thread. It never unlocks its OS thread: when it
// returns, the Go runtime ends the thread, and the thread's namespaces
// with it.
func (fs *FS) serve(ns netns.NsHandle, started chan<- error, held chan<- struct{}) {
	runtime.LockOSThread()
	if held != nil {
		close(held)
	}
	if unix.Gettid() == unix.Getpid() {
		// The process's main thread: /proc/self and /proc/net follow its
		// namespaces, and the runtime never ends it. Hand over to a
		// goroutine that cannot be scheduled here while this one holds it.
		h := make(chan struct{})
		go fs.serve(ns, started, h)
		<-h
		runtime.UnlockOSThread()
		return
	}
	err := enter(ns)
	ns.Close()
	started <- err
	if err != nil {
		return
	}
	for {
		select {
		case f := <-fs.reqs:
			f()
		case <-fs.done:
			return
		}
	}
}

// enter moves the locked thread into ns with a private mount namespace
// holding a sysfs of ns on /sys.
// Equivalent to: ip netns exec NS (its setns, unshare and remount of /sys).
func enter(ns netns.NsHandle) error {
	if err := netns.Set(ns); err != nil {
		return fmt.Errorf("enter: %w", err)
	}
	if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
		return fmt.Errorf("unshare mount namespace: %w", err)
	}
	if err := unix.Mount("", "/", "", unix.MS_SLAVE|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("make mounts slaves: %w", err)
	}
	if err := unix.Mount("sysfs", "/sys", "sysfs", 0, ""); err != nil {
		return fmt.Errorf("mount sysfs of the namespace: %w", err)
	}
	return nil
}

// Close ends the namespace thread (and its sysfs mount).
func (fs *FS) Close() error {
	if fs.reqs != nil {
		fs.once.Do(func() { close(fs.done) })
	}
	return nil
}

// Label names the namespace for messages.
func (fs *FS) Label() string { return fs.label }

// do runs f where the namespace's files are visible; after Close it
// returns ErrClosed without running f (never in the caller's namespace).
func (fs *FS) do(f func()) error {
	if fs.reqs == nil {
		f()
		return nil
	}
	ran := make(chan struct{})
	select {
	case fs.reqs <- func() { f(); close(ran) }:
		<-ran
		return nil
	case <-fs.done:
		return ErrClosed
	}
}

// ReadFile returns path's content without the trailing newline.
// Equivalent to: cat PATH (inside the namespace).
func (fs *FS) ReadFile(path string) (string, error) {
	var b []byte
	var err error
	if derr := fs.do(func() { b, err = os.ReadFile(fs.root + path) }); derr != nil {
		err = derr
	}
	if err != nil {
		return "", fs.wrap("read", path, err)
	}
	return strings.TrimRight(string(b), "\n"), nil
}

// WriteFile writes value to path in one write(2), as sysfs and procfs
// want it; the kernel's refusal (EINVAL...) is the error.
// Equivalent to: echo VALUE > PATH (inside the namespace).
func (fs *FS) WriteFile(path, value string) error {
	var err error
	derr := fs.do(func() {
		var f *os.File
		f, err = os.OpenFile(fs.root+path, os.O_WRONLY|os.O_TRUNC, 0)
		if err != nil {
			return
		}
		_, err = f.Write([]byte(value))
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	})
	if derr != nil {
		err = derr
	}
	if err != nil {
		return fs.wrap("write "+value+" to", path, err)
	}
	return nil
}

// ReadDir returns the names in directory path, sorted.
// Equivalent to: ls PATH (inside the namespace).
func (fs *FS) ReadDir(path string) ([]string, error) {
	var names []string
	var err error
	derr := fs.do(func() {
		var es []os.DirEntry
		es, err = os.ReadDir(fs.root + path)
		for _, e := range es {
			names = append(names, e.Name())
		}
	})
	if derr != nil {
		err = derr
	}
	if err != nil {
		return nil, fs.wrap("list", path, err)
	}
	sort.Strings(names)
	return names, nil
}

// Exists reports whether path exists (a missing file is not an error).
func (fs *FS) Exists(path string) bool {
	var err error
	derr := fs.do(func() { _, err = os.Stat(fs.root + path) })
	return derr == nil && err == nil
}

// IsNotExist reports whether err says a file is missing.
func IsNotExist(err error) bool { return errors.Is(err, os.ErrNotExist) }

// wrap names the operation, the path and the namespace; the *PathError
// inside is unwrapped to its errno so messages do not repeat the path.
func (fs *FS) wrap(op, path string, err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	where := ""
	if fs.reqs != nil {
		where = " in network namespace " + fs.label
	}
	return fmt.Errorf("%s %s%s: %w", op, filepath.Clean(path), where, err)
}

// Readlink returns the target of symlink path.
// Equivalent to: readlink PATH (inside the namespace).
func (fs *FS) Readlink(path string) (string, error) {
	var s string
	var err error
	if derr := fs.do(func() { s, err = os.Readlink(fs.root + path) }); derr != nil {
		err = derr
	}
	if err != nil {
		return "", fs.wrap("read link", path, err)
	}
	return s, nil
}
