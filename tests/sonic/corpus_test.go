package sonic

import (
	"maps"
	"testing"
)

func TestLoad(t *testing.T) {
	c, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Cases) < 40 {
		t.Errorf("only %d cases", len(c.Cases))
	}
	used := map[string]bool{}
	for _, k := range c.Cases {
		used[k.Source] = true
		if k.Canonical == nil {
			t.Errorf("%s|%s: no canonical form", k.Table, k.Key)
		}
	}
	for s := range c.Sources {
		if !used[s] {
			t.Errorf("source %q is not used by any case", s)
		}
	}
}

func TestRedisHashes(t *testing.T) {
	h, err := RedisHashes([]byte(`{"T": {"a": {}, "b|c": {"x": "1", "l": ["p", "q"], "n": 5}}}`))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]map[string]string{
		"T|a":   {"NULL": "NULL"},
		"T|b|c": {"x": "1", "l@": "p,q", "n": "5"},
	}
	if len(h) != len(want) {
		t.Fatalf("got %v", h)
	}
	for k, w := range want {
		if !maps.Equal(h[k], w) {
			t.Errorf("%s: got %v, want %v", k, h[k], w)
		}
	}
	if _, err := RedisHashes(ConfigDBJSON); err != nil {
		t.Errorf("config_db.json: %v", err)
	}
}
