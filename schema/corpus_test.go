package schema_test

import (
	"maps"
	"slices"
	"testing"

	"github.com/switchyard-net/switchyard/schema"
	"github.com/switchyard-net/switchyard/tests/sonic"
)

// TestSONiCCorpus parses every entry of tests/sonic/corpus.json, the forms
// SONiC's CLI, sonic-cfggen and YANG samples write: each must be accepted,
// render the expected canonical hash, and have exactly the expected unknown
// fields.
func TestSONiCCorpus(t *testing.T) {
	c, err := sonic.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range c.Cases {
		t.Run(k.Table+"|"+k.Key, func(t *testing.T) {
			r, err := schema.Parse(k.Table, k.Key, k.Fields)
			if err != nil {
				t.Fatalf("%s (source %s): %v", k.Fields, k.Source, err)
			}
			if got := r.Fields(); !maps.Equal(got, k.Canonical) {
				t.Errorf("canonical %q, want %q", got, k.Canonical)
			}
			if got := schema.UnknownFields(k.Table, k.Fields); !slices.Equal(got, k.Unknown) {
				t.Errorf("unknown fields %q, want %q", got, k.Unknown)
			}
		})
	}
}

// TestSONiCConfigDB parses every entry of the known tables of the
// sonic-cfggen-style tests/sonic/config_db.json as ConfigDBConnector
// stores it: all accepted, none with unknown fields.
func TestSONiCConfigDB(t *testing.T) {
	hashes, err := sonic.RedisHashes(sonic.ConfigDBJSON)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for full, f := range hashes {
		table, key, _ := schema.SplitTableKey(full)
		if !slices.Contains(schema.Tables(), table) {
			continue
		}
		n++
		if _, err := schema.Parse(table, key, f); err != nil {
			t.Errorf("%s: %v", full, err)
		}
		if u := schema.UnknownFields(table, f); u != nil {
			t.Errorf("%s: unknown fields %q", full, u)
		}
	}
	if n < 15 {
		t.Errorf("only %d entries of known tables", n)
	}
}
