package syncd

import (
	"context"
	"slices"

	"github.com/switchyard-net/switchyard/internal/redisx"
	"github.com/switchyard-net/switchyard/internal/rxtune"
	"github.com/switchyard-net/switchyard/schema"
)

// TuningOwnership is what syncd owns in STATE_DB PORT_TUNING_TABLE: the
// values read back from the kernel (rxtune.MirrorFields); state, reason,
// warning and generation there are orchagent's result.
var TuningOwnership = redisx.OwnTables(schema.StateSep, map[string][]string{
	schema.StatePortTuningTable: rxtune.MirrorFields,
})

// tuningMirror writes, for every port with a CONFIG_DB PORT_TUNING key,
// the receive-path settings the kernel holds (rxtune.Read) to
// PORT_TUNING_TABLE|<port>, once per counters interval: sysfs has no
// change events. Its own StateWriter (TuningOwnership), so the netlink
// mirror's resync never touches these fields.
type tuningMirror struct {
	cfg    Config
	w      *redisx.StateWriter
	ports  map[string]bool
	loaded bool // the writer has read what an earlier run left
}

func newTuningMirror(cfg Config) tuningMirror {
	return tuningMirror{cfg: cfg, w: redisx.NewOwnedWriter(cfg.State, TuningOwnership), ports: map[string]bool{}}
}

func (m *tuningMirror) setPort(port string, present bool) {
	if present {
		m.ports[port] = true
	} else {
		delete(m.ports, port)
	}
}

// forget makes the next write a full one (STATE_DB emptied, Redis back).
func (m *tuningMirror) forget() {
	m.w.Forget()
	m.loaded = false
}

// writeTuning refreshes PORT_TUNING_TABLE: each tuned port's values, and
// the removal of syncd's fields from ports no longer tuned or gone.
func (d *Daemon) writeTuning(ctx context.Context) error {
	m := &d.tuning
	if m.cfg.Files == nil {
		return nil
	}
	if !m.loaded {
		if err := m.w.Load(ctx, StateKey(schema.StatePortTuningTable, "*")); err != nil {
			return err
		}
		m.loaded = true
	}
	b := m.w.Batch()
	keep := map[string]bool{}
	ports := make([]string, 0, len(m.ports))
	for p := range m.ports {
		ports = append(ports, p)
	}
	slices.Sort(ports)
	for _, p := range ports {
		f, ok := rxtune.Read(m.cfg.Files, m.cfg.HostFiles, p)
		if !ok {
			continue
		}
		k := StateKey(schema.StatePortTuningTable, p)
		keep[k] = true
		b.Set(k, f)
	}
	for _, k := range m.w.Keys() {
		if !keep[k] {
			b.Delete(k)
		}
	}
	return b.Flush(ctx)
}
