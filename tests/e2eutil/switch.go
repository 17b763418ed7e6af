package e2eutil

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sys/unix"

	"github.com/switchyard-net/switchyard/schema"
	"github.com/switchyard-net/switchyard/tests/testns"
	"github.com/switchyard-net/switchyard/tests/testredis"
)

// Wait is the generous deadline of every poll: CI machines are shared.
const Wait = 60 * time.Second

// Switch is one switch under test: a fresh network namespace, a private
// redis-server, optionally a private bpffs, and the daemons started on
// them. The shared fixture of the e2e suites.
type Switch struct {
	T                       testing.TB
	NS                      *testns.NS
	Redis                   *testredis.Server
	Config, State, Counters *redis.Client
	// BPFFS is impaird's --bpffs (a private bpffs mount) once MountBPFFS ran.
	BPFFS string
	Procs map[string]*Proc
}

// NewSwitch makes the namespace and starts redis-server (root required:
// skips otherwise).
func NewSwitch(t testing.TB) *Switch {
	t.Helper()
	testns.RequireRoot(t)
	s := &Switch{T: t, NS: testns.New(t), Redis: testredis.Start(t), Procs: map[string]*Proc{}}
	s.Config, s.State, s.Counters = s.Redis.Client(schema.ConfigDB), s.Redis.Client(schema.StateDB), s.Redis.Client(schema.CountersDB)
	return s
}

// MountBPFFS mounts a private bpffs for impaird's pins (skips where the
// kernel refuses).
func (s *Switch) MountBPFFS() {
	s.T.Helper()
	mnt := filepath.Join(s.T.TempDir(), "bpffs")
	if err := os.Mkdir(mnt, 0o700); err != nil {
		s.T.Fatal(err)
	}
	if err := unix.Mount("bpf", mnt, "bpf", 0, "mode=0700"); err != nil {
		s.T.Skipf("cannot mount a private bpffs (needed for pinning): %v", err)
	}
	s.T.Cleanup(func() { unix.Unmount(mnt, unix.MNT_DETACH) })
	s.BPFFS = filepath.Join(mnt, "switchyard")
}

// Start runs bin/<daemon> on this switch (--redis, --netns, and --bpffs
// for impaird) with extra flags; it is killed at cleanup. Procs[daemon]
// is the latest one started.
func (s *Switch) Start(daemon string, extra ...string) *Proc {
	s.T.Helper()
	return s.StartWith(daemon, s.Redis.URL(), extra...)
}

// StartWith is Start with another --redis URL (a Redis that is down,
// refuses the password, or does not exist).
func (s *Switch) StartWith(daemon, redisURL string, extra ...string) *Proc {
	s.T.Helper()
	args := []string{"--redis", redisURL, "--netns", s.NS.Name}
	if daemon == "impaird" {
		if s.BPFFS == "" {
			s.MountBPFFS()
		}
		args = append(args, "--bpffs", s.BPFFS)
	}
	p := Start(s.T, daemon, append(args, extra...)...)
	s.Procs[daemon] = p
	return p
}

// Host makes a host namespace cabled to the switch: a veth from port (in
// the switch's namespace) to dev (in the host), both up. IPv6 is off in
// the host before the cable exists, so no router solicitation, DAD or MLD
// packet reaches the switch's counters and FDB behind the test's back.
func (s *Switch) Host(port, dev string) *testns.NS {
	s.T.Helper()
	h := testns.New(s.T)
	DisableIPv6(s.T, h)
	s.NS.Veth(port, h, dev)
	return h
}

// Eventually polls cond until it holds, for at most Wait.
func (s *Switch) Eventually(msg string, cond func() (bool, string)) {
	s.T.Helper()
	Eventually(s.T, Wait, msg, cond)
}

// HSet writes a CONFIG_DB hash (no fields: SONiC's NULL placeholder).
func (s *Switch) HSet(key string, kv ...string) {
	s.T.Helper()
	if len(kv) == 0 {
		kv = []string{schema.NullField, schema.NullField}
	}
	if err := s.Config.HSet(context.Background(), key, kv).Err(); err != nil {
		s.T.Fatalf("HSET %s: %v", schema.Clip(key), err)
	}
}

// Del deletes CONFIG_DB keys.
func (s *Switch) Del(keys ...string) {
	s.T.Helper()
	if err := s.Config.Del(context.Background(), keys...).Err(); err != nil {
		s.T.Fatalf("DEL: %v", err)
	}
}

// SetInitialized sets CONFIG_DB_INITIALIZED to "1": the configuration is
// complete, the daemons may sweep what no key configures.
func (s *Switch) SetInitialized() {
	s.T.Helper()
	if err := s.Config.Set(context.Background(), schema.KeyConfigDBInitialized, "1", 0).Err(); err != nil {
		s.T.Fatalf("SET %s: %v", schema.KeyConfigDBInitialized, err)
	}
}

// ResultKey maps CONFIG_DB key "T|k" to its STATE_DB result key.
func ResultKey(cfgKey string) string {
	table, key, _ := strings.Cut(cfgKey, schema.ConfigSep)
	return schema.ResultKey(table, key)
}

// Result reads the STATE_DB result of CONFIG_DB key cfgKey.
func (s *Switch) Result(cfgKey string) map[string]string {
	return HGetAll(s.State, ResultKey(cfgKey))
}

// WaitState waits until cfgKey's result has state and a reason containing
// reason, and returns the result.
func (s *Switch) WaitState(cfgKey, state, reason string) map[string]string {
	s.T.Helper()
	var h map[string]string
	s.Eventually("STATE_DB "+schema.Clip(ResultKey(cfgKey)), func() (bool, string) {
		h = s.Result(cfgKey)
		return h["state"] == state && strings.Contains(h["reason"], reason),
			fmt.Sprintf("have %v, want state=%s reason~%q", h, state, reason)
	})
	return h
}

// WaitOK waits until every key's result is ok.
func (s *Switch) WaitOK(cfgKeys ...string) {
	s.T.Helper()
	for _, k := range cfgKeys {
		s.WaitState(k, "ok", "")
	}
}

// WaitGone waits until cfgKey has no result.
func (s *Switch) WaitGone(cfgKey string) {
	s.T.Helper()
	s.Eventually("no result for "+schema.Clip(cfgKey), func() (bool, string) {
		h := s.Result(cfgKey)
		return len(h) == 0, fmt.Sprint(h)
	})
}

// WaitApplied waits until cfgKey's result is ok for the hash CONFIG_DB
// holds now (its generation), not for an earlier version, and returns it.
func (s *Switch) WaitApplied(cfgKey string) map[string]string {
	s.T.Helper()
	var h map[string]string
	s.Eventually("STATE_DB "+schema.Clip(ResultKey(cfgKey))+" of the current config", func() (bool, string) {
		cfg := HGetAll(s.Config, cfgKey)
		h = s.Result(cfgKey)
		want := schema.Generation(cfg)
		return h["state"] == "ok" && h["generation"] == want, fmt.Sprintf("have %v, want ok at generation %s", h, want)
	})
	return h
}
