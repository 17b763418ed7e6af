package schema

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/switchyard-net/switchyard/tests/sonic"
)

// The fuzz targets take a hash encoded as "name\x00value\x00name\x00value"
// (fuzzing needs plain arguments); decodeFields undoes encodeFields.

func encodeFields(f Fields) string {
	var parts []string
	for _, k := range sortedKeys(f) {
		parts = append(parts, k, f[k])
	}
	return strings.Join(parts, "\x00")
}

func decodeFields(s string) Fields {
	f := Fields{}
	parts := strings.Split(s, "\x00")
	for i := 0; i+1 < len(parts); i += 2 {
		f[parts[i]] = parts[i+1]
	}
	return f
}

func sortedKeys(f Fields) []string {
	keys := make([]string, 0, len(f))
	for k := range f {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// checkRoundTrip parses table/key/f and checks the invariants every
// parser keeps: errors are *FieldError naming table and key, stable across
// map orders; an accepted key is already canonical (STATIC_ROUTE may drop
// "default|"); the rendering is never empty, parses again to the same Key
// and Fields, and neither the NULL placeholder nor an unknown field
// changes anything.
func checkRoundTrip(t *testing.T, table, key string, f Fields) {
	t.Helper()
	r, err := Parse(table, key, f)
	if err != nil {
		var fe *FieldError
		if !errors.As(err, &fe) {
			t.Fatalf("%s|%s: error %T is not a *FieldError: %v", table, key, err, err)
		}
		if fe.Table != table || fe.Key != key {
			t.Fatalf("%s|%s: FieldError names %s|%s", table, key, fe.Table, fe.Key)
		}
		if _, err2 := Parse(table, key, maps.Clone(f)); err2 == nil || err2.Error() != err.Error() {
			t.Fatalf("%s|%s: error not stable: %v then %v", table, key, err, err2)
		}
		return
	}
	if r.Table() != table {
		t.Fatalf("%s|%s: record of table %s", table, key, r.Table())
	}
	k, fs := r.Key(), r.Fields()
	if k != key && !(table == TableStaticRoute && key == DefaultVRF+ConfigSep+k) {
		t.Fatalf("%s|%s: accepted a non-canonical key (canonical %q)", table, key, k)
	}
	if len(fs) == 0 {
		t.Fatalf("%s|%s: empty rendering, want the NULL placeholder", table, key)
	}
	if _, ok := fs[NullField]; ok && len(fs) != 1 {
		t.Fatalf("%s|%s: NULL placeholder beside real fields: %v", table, key, fs)
	}
	r2, err := Parse(table, k, fs)
	if err != nil {
		t.Fatalf("%s|%s %q: canonical form %q %q does not parse: %v", table, key, f, k, fs, err)
	}
	if r2.Key() != k || !maps.Equal(r2.Fields(), fs) {
		t.Fatalf("%s|%s: round trip changed %q %q into %q %q", table, key, k, fs, r2.Key(), r2.Fields())
	}
	withNull := maps.Clone(f)
	if withNull == nil {
		withNull = Fields{}
	}
	withNull[NullField] = NullField
	r3, err := Parse(table, key, withNull)
	if err != nil || r3.Key() != k || !maps.Equal(r3.Fields(), fs) {
		t.Fatalf("%s|%s: the NULL placeholder changed the result: %v", table, key, err)
	}
	// swctl writes the input with the canonical spelling of the rendered
	// fields laid over it (STATIC_ROUTE: the input as is): that too must
	// be the same record.
	if table != TableStaticRoute {
		over := maps.Clone(f)
		if over == nil {
			over = Fields{}
		}
		maps.Copy(over, fs)
		if len(over) > 1 {
			delete(over, NullField)
		}
		r5, err := Parse(table, key, over)
		if err != nil || r5.Key() != k || !maps.Equal(r5.Fields(), fs) {
			t.Fatalf("%s|%s: input %q with the canonical fields laid over it parses differently: %v", table, key, over, err)
		}
	}
	withUnknown := maps.Clone(withNull)
	withUnknown["x-unknown-field"] = "x"
	r4, err := Parse(table, key, withUnknown)
	if err != nil || r4.Key() != k || !maps.Equal(r4.Fields(), fs) {
		t.Fatalf("%s|%s: an unknown field changed the result: %v", table, key, err)
	}
	if u := UnknownFields(table, withUnknown); !slices.Contains(u, "x-unknown-field") || slices.Contains(u, NullField) {
		t.Fatalf("%s|%s: UnknownFields = %q", table, key, u)
	}
}

// seed adds every test case of the given tables (all tables when none are
// given) to the corpus of a fuzz target.
func seed(f *testing.F, tables ...string) {
	add := func(table, key string, fs Fields) {
		if len(tables) == 0 || slices.Contains(tables, table) {
			f.Add(table, key, encodeFields(fs))
		}
	}
	for _, c := range okCases {
		add(c.table, c.key, c.f)
	}
	for _, c := range errCases {
		add(c.table, c.key, c.f)
	}
	corpus, err := sonic.Load()
	if err != nil {
		f.Fatal(err)
	}
	for _, c := range corpus.Cases {
		add(c.Table, c.Key, c.Fields)
	}
}

// fuzzTable fuzzes the parsers of tables; a table argument outside them
// is mapped to the first, so every input exercises the target's parser.
func fuzzTable(f *testing.F, tables ...string) {
	seed(f, tables...)
	f.Fuzz(func(t *testing.T, table, key, fields string) {
		if !slices.Contains(tables, table) {
			table = tables[0]
		}
		checkRoundTrip(t, table, key, decodeFields(fields))
	})
}

func FuzzParsePort(f *testing.F)       { fuzzTable(f, TablePort) }
func FuzzParseVlan(f *testing.F)       { fuzzTable(f, TableVlan) }
func FuzzParseVlanMember(f *testing.F) { fuzzTable(f, TableVlanMember) }
func FuzzParseInterface(f *testing.F) {
	fuzzTable(f, TableInterface, TableVlanInterface, TableLoopback)
}
func FuzzParseLoopback(f *testing.F)       { fuzzTable(f, TableLoopback) }
func FuzzParseVRF(f *testing.F)            { fuzzTable(f, TableVRF) }
func FuzzParseVxlan(f *testing.F)          { fuzzTable(f, TableVxlanTunnel, TableVxlanTunnelMap) }
func FuzzParseVxlanRemoteVNI(f *testing.F) { fuzzTable(f, TableVxlanRemoteVNI) }
func FuzzParsePortChannel(f *testing.F) {
	fuzzTable(f, TablePortChannel, TablePortChannelMember, TablePortChannelInterface)
}
func FuzzParseStaticRoute(f *testing.F) { fuzzTable(f, TableStaticRoute) }
func FuzzParseFDB(f *testing.F)         { fuzzTable(f, TableFDB) }

// FuzzParse drives the dispatcher with any table name, known or not.
func FuzzParse(f *testing.F) {
	seed(f)
	f.Add("NO_SUCH_TABLE", "x", "")
	f.Fuzz(func(t *testing.T, table, key, fields string) {
		fs := decodeFields(fields)
		_, err := Parse(table, key, fs)
		if errors.Is(err, ErrUnknownTable) {
			return
		}
		checkRoundTrip(t, table, key, fs)
	})
}
