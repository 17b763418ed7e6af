package impaird

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/switchyard-net/switchyard/internal/netnsx"
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
	ns *netnsx.NS
	nl *netlink.Handle
}

func openKernel(name string) (*kernel, error) {
	ns, err := netnsx.Open(name)
	if err != nil {
		return nil, err
	}
	h, err := ns.NetlinkHandle()
	if err != nil {
		ns.Close()
		return nil, fmt.Errorf("open netlink (namespace %q): %w", name, err)
	}
	return &kernel{ns: ns, nl: h}, nil
}

func (k *kernel) Close() {
	k.nl.Close()
	k.ns.Close()
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

// do runs f on a thread inside the namespace (netnsx).
func (k *kernel) do(f func() error) error { return k.ns.Do(f) }
