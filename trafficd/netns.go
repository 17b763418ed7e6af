package trafficd

import (
	"fmt"
	"runtime"

	"github.com/vishvananda/netns"
)

// nsRunner opens sockets inside the daemon's network namespace: a socket
// belongs to the namespace of the thread that created it and stays there.
type nsRunner struct {
	ns netns.NsHandle // -1 = the current namespace
}

func openNS(name string) (*nsRunner, error) {
	if name == "" {
		return &nsRunner{ns: -1}, nil
	}
	ns, err := netns.GetFromName(name)
	if err != nil {
		return nil, fmt.Errorf("open network namespace %q (ip netns add %s?): %w", name, name, err)
	}
	return &nsRunner{ns: ns}, nil
}

func (r *nsRunner) close() {
	if r.ns != -1 {
		r.ns.Close()
	}
}

// do runs f on a thread inside the namespace.
func (r *nsRunner) do(f func() error) error {
	if r.ns == -1 {
		return f()
	}
	runtime.LockOSThread()
	orig, err := netns.Get()
	if err != nil {
		runtime.UnlockOSThread()
		return err
	}
	defer orig.Close()
	if err := netns.Set(r.ns); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("enter network namespace: %w", err)
	}
	ferr := f()
	if err := netns.Set(orig); err == nil {
		runtime.UnlockOSThread() // a thread that cannot go back dies with the goroutine
	}
	return ferr
}
