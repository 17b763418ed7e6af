package swctl

import (
	"errors"
	"maps"
	"strings"

	"github.com/switchyard-net/switchyard/schema"
)

// knownTables is every CONFIG_DB table swctl reads, writes and waits for:
// schema.ConfigTables in dependency order, then any table registered with
// schema.RegisterTable that the list does not name yet.
func knownTables() []string {
	out := append([]string(nil), schema.ConfigTables...)
	seen := map[string]bool{}
	for _, t := range out {
		seen[t] = true
	}
	for _, t := range schema.Tables() {
		if !seen[t] {
			out = append(out, t)
		}
	}
	return out
}

func isKnownTable(t string) bool {
	for _, k := range knownTables() {
		if k == t {
			return true
		}
	}
	return false
}

// entry is one CONFIG_DB hash in canonical form, ready to be written.
type entry struct {
	Table, Key string
	Fields     map[string]string // never empty: NULL placeholder when no fields
}

// RedisKey is "TABLE|key".
func (e entry) RedisKey() string { return schema.ConfigKey(e.Table, e.Key) }

// canonical validates one entry of a switchyard table with the daemons'
// parser and returns what to write: the key as given (already canonical:
// the parser refuses other spellings, except STATIC_ROUTE's "default|"
// prefix, which SONiC's CLI writes) and every field as given, with the
// canonical spelling of the fields the record renders (mtu "09100" →
// "9100", a MAC in lowercase). STATIC_ROUTE fields stay exactly as given:
// its lists are parallel, and the record renders only the next hops it
// installs. Fields the table does not define are kept too (SONiC's other
// tools may read them); unknownFields names them. The error lines start
// with "TABLE|key:".
func canonical(table, key string, fields map[string]string) (entry, string, error) {
	in := make(map[string]string, len(fields))
	for k, v := range fields {
		if k != schema.NullField {
			in[k] = v
		}
	}
	rec, err := schema.Parse(table, key, in)
	if err != nil {
		return entry{}, "", err
	}
	out := maps.Clone(in)
	if table != schema.TableStaticRoute {
		for k, v := range rec.Fields() {
			if k != schema.NullField {
				out[k] = v
			}
		}
	}
	if len(out) == 0 {
		out[schema.NullField] = schema.NullField
	}
	return entry{Table: table, Key: key, Fields: out}, schema.ConfigKey(rec.Table(), rec.Key()), nil
}

// unknownFields is the warning about the fields of an entry that nobody
// defines ("" when there are none), prefixed with "TABLE|key: ".
func unknownFields(table, key string, fields map[string]string) string {
	w := schema.FieldsWarning(table, fields)
	if w == "" {
		return ""
	}
	return schema.ConfigKey(table, key) + ": " + w
}

// errorLines flattens err (joined errors included) into one line per
// problem, each prefixed with "TABLE|key: " unless it already names it.
func errorLines(table, key string, err error) []string {
	var errs []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	} else {
		errs = []error{err}
	}
	prefix := schema.ConfigKey(table, key)
	var lines []string
	for _, e := range errs {
		msg := e.Error()
		var fe *schema.FieldError
		if !errors.As(e, &fe) && !strings.HasPrefix(msg, prefix+":") {
			msg = prefix + ": " + msg
		}
		lines = append(lines, msg)
	}
	return lines
}

// ValidationError lists every problem found before anything was written.
type ValidationError struct{ Lines []string }

func (e *ValidationError) Error() string {
	if len(e.Lines) == 1 {
		return "invalid config, nothing written: " + e.Lines[0]
	}
	return "invalid config, nothing written:\n  " + strings.Join(e.Lines, "\n  ")
}
