package engine

import (
	"maps"

	"github.com/switchyard-net/switchyard/internal/shrink"
	"github.com/switchyard-net/switchyard/schema"
)

// record is what STATE_DB should hold for one CONFIG_DB key.
type record struct {
	res   schema.Result
	extra schema.Fields // controller-owned extra fields (impaird's prog_id)
}

func (r record) fields() schema.Fields {
	f := r.res.Fields()
	for k, v := range r.extra {
		f[k] = v
	}
	return f
}

func (r record) equal(o record) bool { return r.res == o.res && maps.Equal(r.extra, o.extra) }

// pack is fields() packed for StateWriter.SetPacked; a result without
// extra fields (every route) is built in one allocation, no map.
func (r record) pack() string {
	if len(r.extra) > 0 {
		return shrink.Pack(r.fields())
	}
	var buf [128]byte
	b := buf[:0]
	// Ascending name order: generation, reason, state, warning.
	if r.res.Generation != "" {
		b = shrink.AppendPair(b, schema.FieldGeneration, r.res.Generation)
	}
	if r.res.State != schema.StateOK && r.res.Reason != "" {
		b = shrink.AppendPair(b, schema.FieldReason, r.res.Reason)
	}
	b = shrink.AppendPair(b, schema.FieldState, string(r.res.State))
	if r.res.Warning != "" {
		b = shrink.AppendPair(b, schema.FieldWarning, r.res.Warning)
	}
	return string(b)
}

// packer packs kept records for the writer, reusing the string of the
// last one packed when the next is equal: a burst's results (ok, one
// generation: routes through one next hop) are one string, not an
// allocation per key. The zero value is ready.
type packer struct {
	last kept
	s    string
	ok   bool
}

func (p *packer) pack(k kept) string {
	if k.more == nil && p.ok && k.state == p.last.state && k.gen == p.last.gen {
		return p.s
	}
	s := k.record().pack()
	if k.more == nil { // only a generation and a state: equal when those are
		p.last, p.s, p.ok = k, s, true
	}
	return s
}

// kept is a record as results keep it for every key: the generation
// (shared with the cache's string), the state as a byte, and the rest —
// reason, warning, extra fields: rare for an ok result — behind a
// pointer. 32 bytes instead of a record's 72 (100k routes: 4 MB less).
type kept struct {
	gen   string
	state uint8 // index in keptStates; keptOther: the state is in more
	more  *record
}

var keptStates = [...]schema.State{schema.StateOK, schema.StatePending, schema.StateError}

const keptOther = 255

func keep(r record) kept {
	k := kept{gen: r.res.Generation, state: keptOther}
	for i, st := range keptStates {
		if r.res.State == st {
			k.state = uint8(i)
		}
	}
	if k.state == keptOther || r.res.Reason != "" || r.res.Warning != "" || len(r.extra) > 0 {
		more := r
		more.res.Generation = ""
		k.more = &more
	}
	return k
}

func (k kept) record() record {
	var r record
	if k.more != nil {
		r = *k.more
	}
	if k.state != keptOther {
		r.res.State = keptStates[k.state]
	}
	r.res.Generation = k.gen
	return r
}

// write is a queued STATE_DB write: a result (kept: a burst's 100k
// pending writes are 100k of these), or a deletion.
type write struct {
	k   kept
	del bool
}
