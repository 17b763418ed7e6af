package syncde2e

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/switchyard-net/switchyard/tests/e2eutil"
)

// TestFlushDBRepaired: redis-cli -n 6 FLUSHDB (an operator clearing state,
// a replica resync) and -n 2 FLUSHDB publish no keyspace event; every key
// syncd mirrors must be back within 2 s anyway (issue 12).
func TestFlushDBRepaired(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.startMirrored()
	e.WaitField(e.Counters, "COUNTERS:Ethernet0", "rx_errors", "0")
	e.WaitField(e.Counters, "COUNTERS:Ethernet4", "rx_errors", "0")

	for _, db := range []struct {
		name string
		c    *redis.Client
	}{{"STATE_DB", e.State}, {"COUNTERS_DB", e.Counters}} {
		want := e2eutil.Keys(db.c, "*")
		if len(want) < 3 {
			t.Fatalf("%s holds only %v", db.name, want)
		}
		if err := db.c.FlushDB(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		end := time.Now().Add(2 * time.Second)
		for {
			got := e2eutil.Keys(db.c, "*")
			missing := missingKeys(want, got)
			if len(missing) == 0 {
				t.Logf("%s: %d keys back", db.name, len(want))
				break
			}
			if time.Now().After(end) {
				t.Fatalf("%s 2 s after FLUSHDB: %d of %d keys missing, e.g. %v\nsyncd log:\n%s",
					db.name, len(missing), len(want), missing[:min(5, len(missing))], e.syncd.Output())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	// The repaired mirror still follows the kernel.
	e.NS.IP("route", "add", "10.60.0.0/16", "via", "10.0.0.2", "proto", "static")
	e.WaitField(e.State, "ROUTE_TABLE|10.60.0.0/16", "nexthop", "10.0.0.2")
	e.mirrorComplete("Ethernet0", "Ethernet4")
}

// missingKeys are the keys of want absent from got (both sorted).
func missingKeys(want, got []string) []string {
	have := map[string]bool{}
	for _, k := range got {
		have[k] = true
	}
	var out []string
	for _, k := range want {
		if !have[k] {
			out = append(out, k)
		}
	}
	return out
}
