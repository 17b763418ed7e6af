package swctl

import (
	"bytes"
	"context"
	"maps"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/switchyard-net/switchyard/schema"
	"github.com/switchyard-net/switchyard/tests/testredis"
)

// harness runs swctl in-process against a private redis-server.
type harness struct {
	t   *testing.T
	srv *testredis.Server
	cfg *redis.Client
	st  *redis.Client
	ctr *redis.Client
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	srv := testredis.Start(t)
	return &harness{t: t, srv: srv, cfg: srv.Client(schema.ConfigDB), st: srv.Client(schema.StateDB),
		ctr: srv.Client(schema.CountersDB)}
}

// run runs swctl with args (and --redis) and returns stdout, stderr, exit code.
func (h *harness) run(args ...string) (string, string, int) {
	h.t.Helper()
	var out, errb bytes.Buffer
	full := append([]string{"--redis", h.srv.URL()}, args...)
	code := Run(context.Background(), full, &out, &errb)
	return out.String(), errb.String(), code
}

// ok runs swctl and fails the test unless it exits 0.
func (h *harness) ok(args ...string) string {
	h.t.Helper()
	out, errs, code := h.run(args...)
	if code != 0 {
		h.t.Fatalf("swctl %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, out, errs)
	}
	return out
}

// fails runs swctl, wants exit code want, and returns stderr.
func (h *harness) fails(want int, args ...string) string {
	h.t.Helper()
	out, errs, code := h.run(args...)
	if code != want {
		h.t.Fatalf("swctl %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, want, out, errs)
	}
	return errs
}

// hash returns a CONFIG_DB hash as stored (NULL placeholder kept).
func (h *harness) hash(key string) map[string]string {
	h.t.Helper()
	v, err := h.cfg.HGetAll(context.Background(), key).Result()
	if err != nil {
		h.t.Fatal(err)
	}
	return v
}

func (h *harness) wantHash(key string, want map[string]string) {
	h.t.Helper()
	if got := h.hash(key); !maps.Equal(got, want) {
		h.t.Errorf("CONFIG_DB %s = %v, want %v", key, got, want)
	}
}

// dump returns every key of CONFIG_DB with its value, for "nothing
// changed" checks.
func (h *harness) dump() map[string]string {
	h.t.Helper()
	ctx := context.Background()
	keys, err := h.cfg.Keys(ctx, "*").Result()
	if err != nil {
		h.t.Fatal(err)
	}
	out := map[string]string{}
	for _, k := range keys {
		typ := h.cfg.Type(ctx, k).Val()
		if typ == "hash" {
			out[k] = strings.Join(flattenStrings(h.hash(k)), ",")
		} else {
			out[k] = h.cfg.Get(ctx, k).Val()
		}
	}
	return out
}

func flattenStrings(m map[string]string) []string {
	var out []string
	for _, kv := range flatten(m) {
		out = append(out, kv.(string))
	}
	return out
}

// setState writes a STATE_DB hash, as a daemon would.
func (h *harness) setState(key string, fields ...string) {
	h.t.Helper()
	args := make([]any, len(fields))
	for i, f := range fields {
		args[i] = f
	}
	if err := h.st.HSet(context.Background(), key, args...).Err(); err != nil {
		h.t.Fatal(err)
	}
}
