package schema

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"sort"
	"strings"
)

// State is the outcome of one CONFIG_DB key, written to STATE_DB.
type State string

// The three outcomes of the result rule.
const (
	StateOK      State = "ok"
	StatePending State = "pending"
	StateError   State = "error"
)

// Result field names. The daemon that reconciles a table owns exactly
// these fields of its result hash (plus any it declares of its own, e.g.
// impaird's xdp_mode); other daemons may own other fields of the same hash.
const (
	FieldState   = "state"
	FieldReason  = "reason"
	FieldWarning = "warning"
	// FieldGeneration names the CONFIG_DB version the result reflects:
	// Generation of the fields that were applied.
	FieldGeneration = "generation"
)

// ResultFieldNames are the fields owned by the writer of results.
var ResultFieldNames = []string{FieldState, FieldReason, FieldWarning, FieldGeneration}

// Result is the outcome of reconciling one CONFIG_DB key. It is
// comparable: a writer compares it with the previous one to write only
// changes.
type Result struct {
	State  State
	Reason string // empty when State is ok
	// Warning names what was accepted but not acted on (unknown fields);
	// it may accompany any state.
	Warning string
	// Generation is Generation() of the CONFIG_DB fields this result
	// reflects; empty when unknown.
	Generation string
}

// OK is the Result of a key whose intent the kernel holds.
func OK() Result { return Result{State: StateOK} }

// Pending is the Result of a key waiting for something; reason names it.
func Pending(reason string) Result { return Result{State: StatePending, Reason: reason} }

// Error is the Result of a key that cannot be applied; reason says why and
// what to do (for invalid input, the *FieldError text).
func Error(reason string) Result { return Result{State: StateError, Reason: reason} }

// WaitingFor is the Pending Result of a key whose dependency, CONFIG_DB
// key table|key, is missing: "waiting for VLAN|Vlan100".
func WaitingFor(table, key string) Result {
	return Pending("waiting for " + table + ConfigSep + key)
}

// Fields renders the result as the owned fields of its STATE_DB hash.
// Empty reason, warning and generation are absent (to be removed).
func (r Result) Fields() Fields {
	f := Fields{FieldState: string(r.State)}
	if r.State != StateOK && r.Reason != "" {
		f[FieldReason] = r.Reason
	}
	if r.Warning != "" {
		f[FieldWarning] = r.Warning
	}
	if r.Generation != "" {
		f[FieldGeneration] = r.Generation
	}
	return f
}

// Generation is a short stable hash of a CONFIG_DB hash's fields (the
// NULL placeholder excluded, field order irrelevant): results carry it so a
// reader can tell "my change is applied" from "the previous one is". Two
// different hashes get different generations with overwhelming
// probability; an empty hash has its own.
func Generation(f Fields) string {
	// Sorted on the stack and hashed from one buffer: a hash of a few
	// fields costs one allocation (the result), not six.
	var small [16]string
	names := small[:0]
	if len(f) > len(small) {
		names = make([]string, 0, len(f))
	}
	for k := range f {
		if k != NullField {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	var buf [512]byte
	b := buf[:0]
	put := func(s string) { // length-prefixed: no two field lists collide
		b = binary.LittleEndian.AppendUint64(b, uint64(len(s)))
		b = append(b, s...)
	}
	for _, k := range names {
		put(k)
		put(f[k])
	}
	sum := sha256.Sum256(b)
	var out [16]byte
	hex.Encode(out[:], sum[:8])
	return string(out[:])
}

// ResultKey maps CONFIG_DB table T and key k to the STATE_DB key holding
// its outcome: "T_TABLE|k". FDB keys use SONiC's STATE_DB form
// "FDB_TABLE|Vlan100:00:11:22:33:44:55" when they have the shape
// "Vlan<digits>|<no further |>"; any other FDB key (an invalid one) maps to
// "FDB_TABLE||<key>", so two CONFIG_DB keys never share a result key.
// ConfigKeyOfResult inverts it.
func ResultKey(table, key string) string {
	if table == TableFDB {
		// One concatenation, one allocation: a burst of 10k entries
		// built each result key three times over (Replace, then the
		// prefix) on the results writer's goroutine.
		if fdbSonicForm(key) {
			vlan, rest, _ := strings.Cut(key, ConfigSep)
			return TableFDB + "_TABLE" + StateSep + vlan + ":" + rest
		}
		return TableFDB + "_TABLE" + StateSep + ConfigSep + key
	}
	return ResultTable(table) + StateSep + key
}

// fdbSonicForm reports whether an FDB key is "Vlan<digits>|rest" with no
// other "|": the keys whose result uses SONiC's "Vlan<digits>:rest" form.
func fdbSonicForm(key string) bool {
	vlan, rest, ok := strings.Cut(key, ConfigSep)
	if !ok || strings.Contains(rest, ConfigSep) || !strings.HasPrefix(vlan, "Vlan") || len(vlan) == len("Vlan") {
		return false
	}
	for _, c := range vlan[len("Vlan"):] {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// ConfigKeyOfResult inverts ResultKey for the result of a CONFIG_DB key of
// table: it returns the key part ("Vlan100|00:11:…" for
// "FDB_TABLE|Vlan100:00:11:…") and false when resultKey is not a result
// key of table.
func ConfigKeyOfResult(table, resultKey string) (string, bool) {
	key, ok := strings.CutPrefix(resultKey, ResultTable(table)+StateSep)
	if !ok {
		return "", false
	}
	if table != TableFDB {
		return key, true
	}
	if k, raw := strings.CutPrefix(key, ConfigSep); raw {
		return k, true
	}
	k := strings.Replace(key, ":", ConfigSep, 1)
	if !fdbSonicForm(k) {
		return "", false
	}
	return k, true
}

// ResultTable is the STATE_DB table name for CONFIG_DB table T: "T_TABLE".
func ResultTable(table string) string { return table + "_TABLE" }

// MaxQuote is how many bytes of an input value a reason or log line
// quotes: a 1 MB value must not become a 1 MB STATE_DB reason.
const MaxQuote = 200

// Clip returns s, or its first MaxQuote bytes (cut at a rune boundary)
// followed by "…(N bytes)" when s is longer.
func Clip(s string) string {
	if len(s) <= MaxQuote {
		return s
	}
	cut := MaxQuote
	for cut > 0 && cut > MaxQuote-4 && !runeStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…(" + itoa(len(s)) + " bytes)"
}

func runeStart(b byte) bool { return b&0xC0 != 0x80 }

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return string(b[i:])
}
