package orchagent

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/switchyard-net/switchyard/internal/nsfs"
	"github.com/switchyard-net/switchyard/internal/rxtune"
	"github.com/switchyard-net/switchyard/schema"
)

// PORT_TUNING (docs/tuning.md): receive-path settings of a port written
// to its sysfs files and the IRQs' procfs files, owned like EDT owns a
// port's root qdisc — the value each file held before the first write is
// saved (tuningStore, persisted before the write) and put back when the
// field goes, the key goes, or the sweep finds no key for a saved port.
// net.core.rps_sock_flow_entries is host-wide: it holds the largest value
// any valid key asks for, and its original comes back when none does.

// Tuning is PORT_TUNING's access to the kernel's files.
type Tuning struct {
	// FS is the ports' namespace (sysfs, /proc/irq, /proc/interrupts).
	FS *nsfs.FS
	// Host is the daemon's own namespace, where
	// net.core.rps_sock_flow_entries exists if it runs in the host's
	// initial namespace.
	Host *nsfs.FS

	mu    sync.Mutex
	store *tuningStore
	// unavailable says why the namespace's files cannot be reached
	// (mounting its sysfs needs CAP_SYS_ADMIN); PORT_TUNING keys are
	// errors with it.
	unavailable error
}

// NewTuning returns the PORT_TUNING file access for namespace netns,
// loading the originals saved under stateDir by an earlier run.
func NewTuning(fs, host *nsfs.FS, stateDir, netns string) (*Tuning, error) {
	st, err := openTuningStore(stateDir, netns)
	if err != nil {
		return nil, err
	}
	return &Tuning{FS: fs, Host: host, store: st}, nil
}

// Close releases the namespace file access.
func (t *Tuning) Close() error {
	if t == nil || t.FS == nil {
		return nil
	}
	errs := []error{t.FS.Close()}
	if t.Host != t.FS {
		errs = append(errs, t.Host.Close())
	}
	return errors.Join(errs...)
}

// applyTuning validates the whole entry (CPUs must exist) before writing
// anything, then sets the host-wide value and the port's files.
func (o *Orch) applyTuning(key string, f schema.Fields) outcome {
	refs := []string{resLink(key)}
	tu := o.tune
	if tu == nil || tu.unavailable != nil {
		why := "no sysfs access"
		if tu != nil {
			why = tu.unavailable.Error()
		}
		return errorOut(fmt.Errorf("%s|%s: receive-path tuning is not available in this orchagent: %s",
			schema.TablePortTuning, key, why), refs)
	}
	tu.mu.Lock()
	defer tu.mu.Unlock()
	p, err := schema.ParsePortTuning(key, f)
	if err != nil {
		return errorOut(err, refs)
	}
	online, err := rxtune.OnlineCPUs(tu.FS)
	if err != nil {
		return kernelOut(err, refs)
	}
	if err := checkCPUs(p, online); err != nil {
		return errorOut(err, refs)
	}
	l, present, err := o.getLink(key)
	if err != nil {
		return kernelOut(err, refs)
	}
	var files []rxtune.File
	var warning string
	if present {
		// The port's files are all found before anything is written.
		if files, warning, err = rxtune.Targets(tu.FS, p); err != nil {
			return errorOut(fmt.Errorf("%s|%s: %w", schema.TablePortTuning, key, err), refs)
		}
	}
	// Host-wide, so applied whether the port is there or not.
	if err := o.applySockFlow(online); err != nil {
		if p.RPSSockFlowEntries != nil {
			return errorOut(fmt.Errorf("%s|%s: %w", schema.TablePortTuning, key, err), refs)
		}
		// Another key's value: its own result says so.
		o.log.WithError(err).Debug("rps_sock_flow_entries")
	}
	if !present {
		return pendingOut(waitingForLink(key), refs)
	}
	if err := o.writeTuning(key, l.Index, files); err != nil {
		return errorOut(err, refs)
	}
	out := okOut(refs)
	out.res.Warning = warning
	return out
}

// removeTuning puts back every original the key's port holds.
func (o *Orch) removeTuning(key string) outcome {
	tu := o.tune
	if tu == nil || tu.unavailable != nil {
		return okOut(nil)
	}
	tu.mu.Lock()
	defer tu.mu.Unlock()
	if err := o.restorePort(key); err != nil {
		return kernelOut(err, nil)
	}
	online, err := rxtune.OnlineCPUs(tu.FS)
	if err != nil {
		return kernelOut(err, nil)
	}
	if err := o.applySockFlow(online); err != nil {
		return kernelOut(err, nil)
	}
	return okOut(nil)
}

// sweepTuning restores the ports no PORT_TUNING key names any more and
// the host-wide value when no key sets it (config deleted while
// orchagent was down).
func (o *Orch) sweepTuning() []error {
	tu := o.tune
	if tu == nil || tu.unavailable != nil {
		return nil
	}
	tu.mu.Lock()
	defer tu.mu.Unlock()
	var errs []error
	for _, port := range sortedPorts(tu.store.data.Ports) {
		if !o.configured(schema.TablePortTuning, port) {
			errs = append(errs, o.restorePort(port))
		}
	}
	if online, err := rxtune.OnlineCPUs(tu.FS); err != nil {
		errs = append(errs, err)
	} else {
		errs = append(errs, o.applySockFlow(online))
	}
	return errs
}

func sortedPorts(m map[string]*savedPort) []string {
	out := make([]string, 0, len(m))
	for p := range m {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// checkCPUs names the first CPU of the entry that is not online.
func checkCPUs(p schema.PortTuning, online []int) error {
	for _, fc := range []struct {
		field string
		cpus  []int
	}{{schema.FieldRPSCPUs, p.RPSCPUs}, {schema.FieldIRQCPUs, p.IRQCPUs}} {
		for _, c := range fc.cpus {
			if _, ok := slices.BinarySearch(online, c); !ok {
				return fmt.Errorf("%s|%s: field %q: CPU %d does not exist: this host's CPUs are %s",
					schema.TablePortTuning, p.Port, fc.field, c, schema.FormatCPUList(online))
			}
		}
	}
	return nil
}

// writeTuning reads every target file, saves the originals not saved yet
// (persisted before any write), writes what differs, and restores the
// files the entry no longer sets (a field removed, an IRQ gone).
func (o *Orch) writeTuning(port string, ifindex int, files []rxtune.File) error {
	tu := o.tune
	st := tu.store
	sp := st.data.Ports[port]
	if sp != nil && sp.Ifindex != ifindex {
		// The device was deleted and made again: what was saved belongs
		// to the old one; the new one's values are its originals.
		sp = nil
	}
	if sp == nil {
		sp = &savedPort{Ifindex: ifindex, Files: map[string]string{}}
		st.data.Ports[port] = sp
	}
	want := map[string]bool{}
	var writes []rxtune.File
	dirty := false
	for _, tf := range files {
		cur, err := tu.FS.ReadFile(tf.Path)
		if err != nil {
			return fmt.Errorf("%s|%s: field %q: %w", schema.TablePortTuning, port, tf.Field, err)
		}
		want[tf.Path] = true
		if _, saved := sp.Files[tf.Path]; !saved {
			sp.Files[tf.Path] = cur
			dirty = true
		}
		if !rxtune.SameValue(tf.Path, cur, tf.Want) {
			writes = append(writes, tf)
		}
	}
	if dirty {
		if err := st.save(); err != nil {
			return err
		}
	}
	for _, tf := range writes {
		if err := o.act(schema.TablePortTuning, port, "write "+tf.Want+" to "+tf.Path,
			func() error { return tu.FS.WriteFile(tf.Path, tf.Want) }); err != nil {
			return fmt.Errorf("%s|%s: field %q: %w", schema.TablePortTuning, port, tf.Field, err)
		}
	}
	var stale []string
	for path := range sp.Files {
		if !want[path] {
			stale = append(stale, path)
		}
	}
	if len(stale) == 0 && len(sp.Files) > 0 {
		return nil // nothing else changed: the saved file is current
	}
	slices.Sort(stale)
	errs := o.restoreFiles(port, sp, stale)
	if len(sp.Files) == 0 {
		delete(st.data.Ports, port)
	}
	return errors.Join(append(errs, st.save())...)
}

// restorePort puts back all of port's saved files when the device they
// were saved from is still there, and forgets them.
func (o *Orch) restorePort(port string) error {
	st := o.tune.store
	sp := st.data.Ports[port]
	if sp == nil {
		return nil
	}
	l, ok, err := o.getLink(port)
	if err != nil {
		return err
	}
	var errs []error
	if ok && l.Index == sp.Ifindex {
		paths := make([]string, 0, len(sp.Files))
		for p := range sp.Files {
			paths = append(paths, p)
		}
		slices.Sort(paths)
		errs = o.restoreFiles(port, sp, paths)
	} else {
		sp.Files = nil // the device they belong to is gone
	}
	if len(sp.Files) == 0 {
		delete(st.data.Ports, port)
	}
	return errors.Join(append(errs, st.save())...)
}

// restoreFiles writes back the saved originals of paths and forgets
// them; a file that is gone (an IRQ freed) is forgotten too.
func (o *Orch) restoreFiles(port string, sp *savedPort, paths []string) []error {
	var errs []error
	for _, path := range paths {
		orig := sp.Files[path]
		err := o.act(schema.TablePortTuning, port, "restore "+strings.TrimSpace(orig)+" to "+path,
			func() error { return o.tune.FS.WriteFile(path, orig) })
		if err != nil && !nsfs.IsNotExist(err) {
			errs = append(errs, fmt.Errorf("%s|%s: restore %s: %w", schema.TablePortTuning, port, rxtune.FieldOfPath(path), err))
			continue
		}
		delete(sp.Files, path)
	}
	return errs
}

// applySockFlow sets net.core.rps_sock_flow_entries to the largest value
// a valid PORT_TUNING key asks for, saving the original first; when no
// key asks, the original comes back — if the value is still the one
// written (someone else's later change is theirs).
func (o *Orch) applySockFlow(online []int) error {
	tu := o.tune
	st := tu.store
	want, set := -1, false
	for _, k := range o.cfg.Keys(schema.TablePortTuning) {
		f, _ := o.config(schema.TablePortTuning, k)
		p, err := schema.ParsePortTuning(k, f)
		if err != nil || p.RPSSockFlowEntries == nil || checkCPUs(p, online) != nil {
			continue
		}
		set = true
		want = max(want, *p.RPSSockFlowEntries)
	}
	if !set && st.data.SockFlow == nil {
		return nil
	}
	cur, err := tu.Host.ReadFile(rxtune.SockFlowPath)
	if nsfs.IsNotExist(err) {
		return fmt.Errorf("field %q: net.core.rps_sock_flow_entries is host-wide and exists only in the host's initial network namespace; orchagent runs in another one: set it on the host (sysctl -w net.core.rps_sock_flow_entries=N)",
			schema.FieldRPSSockFlowEntries)
	}
	if err != nil {
		return fmt.Errorf("field %q: %w", schema.FieldRPSSockFlowEntries, err)
	}
	if !set {
		g := st.data.SockFlow
		if cur == g.Written {
			if err := o.act(schema.TablePortTuning, "*", "restore "+g.Original+" to "+rxtune.SockFlowPath,
				func() error { return tu.Host.WriteFile(rxtune.SockFlowPath, g.Original) }); err != nil {
				return fmt.Errorf("field %q: %w", schema.FieldRPSSockFlowEntries, err)
			}
		}
		st.data.SockFlow = nil
		return st.save()
	}
	w := strconv.Itoa(want)
	if st.data.SockFlow == nil {
		st.data.SockFlow = &savedGlobal{Original: cur}
	}
	if st.data.SockFlow.Written != w {
		st.data.SockFlow.Written = w
		if err := st.save(); err != nil {
			return err
		}
	}
	if cur == w {
		return nil
	}
	if err := o.act(schema.TablePortTuning, "*", "write "+w+" to "+rxtune.SockFlowPath,
		func() error { return tu.Host.WriteFile(rxtune.SockFlowPath, w) }); err != nil {
		return fmt.Errorf("field %q: %w", schema.FieldRPSSockFlowEntries, err)
	}
	return nil
}
