package redisx

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/switchyard-net/switchyard/tests/testredis"
)

// waitingLines are the "waiting for redis" entries logged so far.
func waitingLines(h *logtest.Hook) []*logrus.Entry {
	var out []*logrus.Entry
	for _, e := range h.AllEntries() {
		if e.Message == "waiting for redis" {
			out = append(out, e)
		}
	}
	return out
}

func TestDialWaitsForRedis(t *testing.T) {
	srv := testredis.Start(t)
	srv.Stop()
	log, hook := logtest.NewNullLogger()
	log.SetLevel(logrus.DebugLevel)
	type result struct {
		c   *Conn
		err error
	}
	done := make(chan result, 1)
	started := time.Now()
	go func() {
		c, err := Dial(context.Background(), srv.URL()+"?password=SECRET", logrus.NewEntry(log))
		done <- result{c, err}
	}()
	eventually(t, "2.5 s of failed attempts", func() bool {
		l := waitingLines(hook)
		return len(l) > 0 && l[len(l)-1].Data["attempts"].(int) >= 1 && time.Since(started) > 2500*time.Millisecond
	})
	lines := waitingLines(hook)
	first := lines[0]
	if first.Level != logrus.WarnLevel || first.Data["attempts"] != 1 || first.Data["error"] == nil {
		t.Errorf("first line: level %v fields %v, want warning with attempts=1 and error", first.Level, first.Data)
	}
	if max := 1 + int(time.Since(started)/dialLogEvery); len(lines) > max {
		t.Errorf("%d waiting lines within %v, want at most %d (one per 5 s)", len(lines), time.Since(started), max)
	}
	for _, e := range hook.AllEntries() {
		s, _ := e.String()
		if strings.Contains(s, "SECRET") {
			t.Errorf("log line shows the password: %s", s)
		}
		if e.Message == "waiting for redis" && !strings.Contains(fmt.Sprint(e.Data["redis"]), "password=xxxxx") {
			t.Errorf("redis field %v, want the redacted URL", e.Data["redis"])
		}
	}
	srv.Restart()
	r := <-done
	if r.err != nil {
		t.Fatalf("Dial after Redis came up: %v", r.err)
	}
	defer r.c.Close()
	if err := r.c.Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestDialAuthFailsAtOnce(t *testing.T) {
	srv := testredis.Start(t)
	ctx := context.Background()
	admin := srv.Client(0)
	if err := admin.Do(ctx, "ACL", "SETUSER", "alice", "on", ">a1ice", "~*", "&*", "+@all").Err(); err != nil {
		t.Fatal(err)
	}
	ok, err := Dial(ctx, fmt.Sprintf("redis://alice:a1ice@127.0.0.1:%d", srv.Port), nil)
	if err != nil {
		t.Fatalf("good credentials: %v", err)
	}
	ok.Close()
	for _, u := range []string{
		fmt.Sprintf("redis://alice:SECRET@127.0.0.1:%d", srv.Port),
		fmt.Sprintf("redis://nobody:SECRET@127.0.0.1:%d", srv.Port),
		srv.URL() + "?user=alice&password=SECRET",
	} {
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		_, err := Dial(ctx, u, nil)
		cancel()
		if !errors.Is(err, ErrAuthFailed) {
			t.Errorf("Dial(%s) = %v, want ErrAuthFailed", redactRaw(u), err)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, "authentication failed: WRONGPASS invalid username-password pair") ||
			!strings.HasSuffix(msg, ": check the user and password in --redis") || strings.Contains(msg, "SECRET") {
			t.Errorf("Dial(%s) = %q", redactRaw(u), msg)
		}
	}
	if err := admin.ConfigSet(ctx, "requirepass", "pw0").Err(); err != nil {
		t.Fatal(err)
	}
	_, err = Dial(ctx, srv.URL(), nil)
	if !errors.Is(err, ErrAuthFailed) || !strings.Contains(err.Error(), "NOAUTH") {
		t.Errorf("Dial without password = %v, want NOAUTH authentication failure", err)
	}
}

func TestDialEndsWithContext(t *testing.T) {
	srv := testredis.Start(t)
	srv.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	if _, err := Dial(ctx, srv.URL(), nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Dial with Redis down until ctx ends = %v, want ctx.Err()", err)
	}
}

func TestExplainPermission(t *testing.T) {
	srv := testredis.Start(t)
	ctx := context.Background()
	admin := srv.Client(0)
	if err := admin.Do(ctx, "ACL", "SETUSER", "u", "on", ">pw", "+@all", "-config|get", "~PORT_TABLE|*", "resetchannels").Err(); err != nil {
		t.Fatal(err)
	}
	c, err := Connect(srv.URL() + "?user=u&password=pw")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	db := c.DB(6)

	ps := db.PSubscribe(ctx, "__keyspace@4__:PORT|*")
	defer ps.Close()
	_, err = ps.Receive(ctx)
	got := ExplainPermission(err, "psubscribe", "__keyspace@4__:PORT|*")
	want := `redis user may not subscribe to __keyspace@4__:PORT|*: add "&__keyspace@4__:PORT|*" (or allchannels) to its ACL`
	if got == nil || !strings.HasPrefix(got.Error(), want+" (NOPERM ") {
		t.Errorf("psubscribe refused: %v\nwant %s", got, want)
	}
	var pe *PermissionError
	if !errors.As(got, &pe) || pe.Kind != "channel" || !IsPermission(pe) {
		t.Errorf("want a *PermissionError of kind channel, have %#v", got)
	}
	// Without the command, the likely rule is still named.
	if got := ExplainPermission(err); got == nil || !strings.Contains(got.Error(), `may not use a channel: add "&__keyspace@<db>__:*" for each watched DB`) {
		t.Errorf("channel refusal without args: %v", got)
	}

	cmd := db.HSet(ctx, "STATE|a", "f", "v")
	got = ExplainPermission(cmd.Err(), cmd.Args()...)
	want = `redis user may not access key STATE|a (HSET): add "~STATE|*" (or allkeys) to its ACL`
	if got == nil || !strings.HasPrefix(got.Error(), want+" (NOPERM ") {
		t.Errorf("hset refused: %v\nwant %s", got, want)
	}

	g := db.ConfigGet(ctx, "maxmemory")
	got = ExplainPermission(g.Err(), g.Args()...)
	want = `redis user may not run CONFIG GET: add "+config|get" (or +@all) to its ACL`
	if got == nil || !strings.HasPrefix(got.Error(), want+" (NOPERM ") {
		t.Errorf("config get refused: %v\nwant %s", got, want)
	}

	// The watcher explains a refused subscription the same way.
	var werr atomic.Value
	wctx, wcancel := context.WithCancel(ctx)
	wdone := make(chan struct{})
	go func() {
		defer close(wdone)
		NewWatcher(c.DB(4), WatchOptions{DB: 4, Tables: []string{"PORT"}, OnError: func(err error) {
			werr.CompareAndSwap(nil, err)
		}}).Run(wctx, func(Change) {})
	}()
	eventually(t, "watcher error", func() bool { return werr.Load() != nil })
	wcancel()
	<-wdone
	want = `redis user may not subscribe to __keyspace@4__:PORT|*: add "&__keyspace@4__:PORT|*" (or allchannels) to its ACL`
	if got := werr.Load().(error); !errors.As(got, &pe) || !strings.Contains(got.Error(), want+" (NOPERM ") {
		t.Errorf("watcher refused a subscription: %v\nwant ...%s", got, want)
	}

	plain := errors.New("some failure")
	if ExplainPermission(plain, "get", "x") != plain || ExplainPermission(nil) != nil {
		t.Error("ExplainPermission changed an error that is not NOPERM")
	}

	// A transaction Redis refuses: the writer names the refused key, not
	// "EXECABORT Transaction discarded".
	w := NewStateWriter(db, []string{"state"})
	b := w.Batch()
	b.Set("PORT_TABLE|eth0", map[string]string{"state": "ok"})
	b.Set("VLAN_TABLE|Vlan6", map[string]string{"state": "ok"})
	err = b.Flush(ctx)
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), `may not access key VLAN_TABLE|Vlan6 (HSET): add "~VLAN_TABLE|*"`) ||
		strings.Contains(err.Error(), "EXECABORT") {
		t.Errorf("Flush refused by ACL = %v, want the explained NOPERM", err)
	}
	if n := srv.Client(6).Exists(ctx, "PORT_TABLE|eth0").Val(); n != 0 {
		t.Error("part of a refused transaction was written")
	}
	if err := w.Set(ctx, "PORT_TABLE|eth0", map[string]string{"state": "ok"}); err != nil {
		t.Errorf("after the refused flush: %v", err)
	}
}
