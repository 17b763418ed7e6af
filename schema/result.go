package schema

import "strings"

// State is the outcome of one CONFIG_DB key, written to STATE_DB.
type State string

// The three outcomes of the result rule.
const (
	StateOK      State = "ok"
	StatePending State = "pending"
	StateError   State = "error"
)

// Result field names; orchagent and impaird own exactly these two fields
// in the result hash (other daemons may own other fields of the same hash).
const (
	FieldState  = "state"
	FieldReason = "reason"
)

// ResultFieldNames are the fields owned by the writer of results.
var ResultFieldNames = []string{FieldState, FieldReason}

// Result is the outcome of reconciling one CONFIG_DB key.
type Result struct {
	State  State
	Reason string // empty when State is ok
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

// Fields renders the result as the owned fields of its STATE_DB hash. The
// reason field is absent (to be removed) when the result is ok.
func (r Result) Fields() Fields {
	f := Fields{FieldState: string(r.State)}
	if r.State != StateOK && r.Reason != "" {
		f[FieldReason] = r.Reason
	}
	return f
}

// ResultKey maps CONFIG_DB table T and key k to the STATE_DB key holding
// its outcome: "T_TABLE|k". FDB keys use SONiC's STATE_DB form
// "FDB_TABLE|Vlan100:00:11:22:33:44:55".
func ResultKey(table, key string) string {
	if table == TableFDB {
		key = strings.Replace(key, ConfigSep, ":", 1)
	}
	return ResultTable(table) + StateSep + key
}

// ResultTable is the STATE_DB table name for CONFIG_DB table T: "T_TABLE".
func ResultTable(table string) string { return table + "_TABLE" }
