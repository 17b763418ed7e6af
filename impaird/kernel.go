package impaird

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// DefaultBPFFS is where impaird pins its links and maps by default.
const DefaultBPFFS = "/sys/fs/bpf/switchyard"

// sysBPFFS is the conventional bpffs mount point impaird mounts when
// nothing is mounted there yet.
const sysBPFFS = "/sys/fs/bpf"

// ensureBPFFS makes dir exist on a bpf filesystem. When the nearest
// existing ancestor is /sys/fs/bpf without a bpffs on it, impaird mounts
// one there (as systemd would); any other non-bpffs location is an error.
func ensureBPFFS(dir string) error {
	dir = filepath.Clean(dir)
	anc := dir
	for {
		if _, err := os.Stat(anc); err == nil {
			break
		}
		parent := filepath.Dir(anc)
		if parent == anc {
			break
		}
		anc = parent
	}
	var st unix.Statfs_t
	if err := unix.Statfs(anc, &st); err != nil {
		return fmt.Errorf("statfs %s: %w", anc, err)
	}
	if st.Type != unix.BPF_FS_MAGIC {
		if anc != sysBPFFS {
			return fmt.Errorf("--bpffs %s: %s is not on a bpf filesystem: mount one (mount -t bpf bpf %s) or choose a directory under %s", dir, anc, anc, sysBPFFS)
		}
		if err := unix.Mount("bpf", sysBPFFS, "bpf", 0, "mode=0700"); err != nil {
			return fmt.Errorf("mount bpffs on %s: %w", sysBPFFS, err)
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	return nil
}

// kernel is impaird's view of one network namespace: netlink queries and
// running bpf link attaches inside it (an XDP attach resolves the ifindex
// in the calling thread's namespace).
type kernel struct {
	ns  netns.NsHandle // -1 = the current namespace
	nl  *netlink.Handle
	own bool
}

func openKernel(name string) (*kernel, error) {
	k := &kernel{ns: -1}
	if name == "" {
		h, err := netlink.NewHandle(unix.NETLINK_ROUTE)
		if err != nil {
			return nil, fmt.Errorf("open netlink: %w", err)
		}
		k.nl = h
		return k, nil
	}
	ns, err := netns.GetFromName(name)
	if err != nil {
		return nil, fmt.Errorf("open network namespace %q (ip netns add %s?): %w", name, name, err)
	}
	h, err := netlink.NewHandleAt(ns, unix.NETLINK_ROUTE)
	if err != nil {
		ns.Close()
		return nil, fmt.Errorf("open netlink in namespace %q: %w", name, err)
	}
	k.ns, k.nl, k.own = ns, h, true
	return k, nil
}

func (k *kernel) Close() {
	k.nl.Close()
	if k.own {
		k.ns.Close()
	}
}

// errNoLink says the port's netdev does not exist (yet).
var errNoLink = errors.New("no such netdev")

// xdpState is what netlink says about a port's XDP hook.
type xdpState struct {
	ifindex int
	progID  uint32 // 0 = none
	mode    string // native, generic, offload or ""
}

// xdp reports a port's ifindex and attached XDP program.
// Equivalent to: ip -d link show dev PORT.
func (k *kernel) xdp(port string) (xdpState, error) {
	l, err := k.nl.LinkByName(port)
	if err != nil {
		var nf netlink.LinkNotFoundError
		if errors.As(err, &nf) || errors.Is(err, unix.ENODEV) {
			return xdpState{}, errNoLink
		}
		return xdpState{}, fmt.Errorf("look up %s: %w", port, err)
	}
	a := l.Attrs()
	s := xdpState{ifindex: a.Index}
	if a.Xdp != nil && a.Xdp.Attached {
		s.progID = a.Xdp.ProgId
		switch a.Xdp.AttachMode {
		case nl_XDP_ATTACHED_DRV:
			s.mode = "native"
		case nl_XDP_ATTACHED_SKB:
			s.mode = "generic"
		case nl_XDP_ATTACHED_HW:
			s.mode = "offload"
		}
	}
	return s, nil
}

// XDP_ATTACHED_* of linux/if_link.h.
const (
	nl_XDP_ATTACHED_DRV = 1
	nl_XDP_ATTACHED_SKB = 2
	nl_XDP_ATTACHED_HW  = 3
)

// do runs f on a thread inside the namespace.
func (k *kernel) do(f func() error) error {
	if k.ns == -1 {
		return f()
	}
	runtime.LockOSThread()
	orig, err := netns.Get()
	if err != nil {
		runtime.UnlockOSThread()
		return err
	}
	defer orig.Close()
	if err := netns.Set(k.ns); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("enter network namespace: %w", err)
	}
	ferr := f()
	if err := netns.Set(orig); err == nil {
		runtime.UnlockOSThread() // a thread that cannot go back dies with the goroutine
	}
	return ferr
}
