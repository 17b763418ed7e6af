package orchagent

import "github.com/switchyard-net/switchyard/netlinkmgr"

// The echoes of a batch of static FDB writes, as writingAll for routes and
// writingAddrs for addresses: the entries being written are recorded before
// the batch goes out, so the echo of one, heard before the key is finished
// and noted (notedFdbsWritten), is not news — an FDB key is not in the
// dependency index under its entry (enqueueFdbRefs derives it from the
// event), and such an echo would otherwise re-enqueue it. A delete of one
// of them heard before the note (someone removed it right after the kernel
// wrote it) marks it gone: the note leaves it out and the key writes again.

// fdbWrite is an entry being written: its port, and whether its delete
// was heard meanwhile.
type fdbWrite struct {
	link string
	gone bool
}

// writingFdbs records the entries a batch is about to write.
func (v *kernelView) writingFdbs(fs []netlinkmgr.FdbInfo) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.fdbWriting == nil {
		v.fdbWriting = map[fdbKey]fdbWrite{}
	}
	for i := range fs {
		v.fdbWriting[fdbKeyOf(fs[i].Vlan, fs[i].MAC)] = fdbWrite{link: fs[i].Link}
	}
}

// fdbEchoLocked reports whether f (just put in the view) is the entry being
// written to k; v.mu held.
func (v *kernelView) fdbEchoLocked(k fdbKey, f *netlinkmgr.FdbInfo) bool {
	if len(v.fdbWriting) == 0 {
		return false
	}
	w, ok := v.fdbWriting[k]
	return ok && !w.gone && w.link == f.Link && f.Static && !f.Local
}

// fdbGoneLocked handles the delete event of entry f: when it is the one
// being written to k, it is marked gone and fdbGoneLocked reports true
// (the key is to be told, whether or not the view held it); v.mu held.
func (v *kernelView) fdbGoneLocked(k fdbKey, f *netlinkmgr.FdbInfo) bool {
	if len(v.fdbWriting) == 0 {
		return false
	}
	w, ok := v.fdbWriting[k]
	if !ok || w.link != f.Link {
		return false
	}
	w.gone = true
	v.fdbWriting[k] = w
	return true
}

// notedFdbsWritten notes the static entries of a write the kernel
// accepted (res[i] nil), all under one lock, and forgets what writingFdbs
// recorded. noted[i] (appended to noted[:0]) is false for an entry whose
// write failed, or whose delete was heard while it was being written
// (someone removed it right after the kernel wrote it): that one is not
// noted, and its key writes again.
func (v *kernelView) notedFdbsWritten(fs []netlinkmgr.FdbInfo, res []error, noted []bool) []bool {
	noted = noted[:0]
	v.mu.Lock()
	defer v.mu.Unlock()
	for i := range fs {
		ok := res[i] == nil
		if ok {
			k := fdbKeyOf(fs[i].Vlan, fs[i].MAC)
			if w, in := v.fdbWriting[k]; in && w.gone {
				ok = false
			} else {
				v.fdbs[k] = fs[i]
			}
		}
		noted = append(noted, ok)
	}
	clear(v.fdbWriting)
	return noted
}
