package redisx

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// WatchClasses are the notify-keyspace-events classes a Watcher needs:
// keyspace channel (K), generic del/expire/rename (g), strings ($, for
// plain keys such as CONFIG_DB_INITIALIZED), hashes (h), expired (x) and
// evicted (e) — and lists, sets, sorted sets and streams (l, s, z, t):
// a CONFIG_DB key written as one of those is not config, and the daemon
// must see it to say so.
const WatchClasses = "Kg$lshzxet"

// allClassesAlias is what Redis means by "A" (7.x adds module events "d";
// we never need those, so the older set is enough for the check).
const allClassesAlias = "g$lshzxet"

// validClasses are the letters notify-keyspace-events accepts.
const validClasses = "KEg$lshzxetmndA"

// NotifyConfigError says notify-keyspace-events could not be set because
// the server refuses CONFIG (renamed command, ACL without +config, managed
// Redis). Classes is the full value the server should be configured with.
type NotifyConfigError struct {
	Classes string
	Err     error // the server's reply
	// Probe is why the probe run when CONFIG GET is refused failed (which
	// events did not arrive), or nil.
	Probe error
}

func (e *NotifyConfigError) Error() string {
	reply := fmt.Sprint(e.Err)
	if e.Probe != nil {
		reply += "; probed without CONFIG: " + e.Probe.Error()
	}
	return fmt.Sprintf("redis refuses to configure keyspace notifications (%s): add `notify-keyspace-events %s` to redis.conf and restart redis-server",
		reply, e.Classes)
}

func (e *NotifyConfigError) Unwrap() error { return e.Err }

// EnsureKeyspaceEvents makes notify-keyspace-events contain classes (e.g.
// WatchClasses), keeping the classes already configured: CONFIG GET, union,
// CONFIG SET only when something is missing. If the server refuses CONFIG
// GET, it probes instead (subscribes to a scratch key's channel and
// provokes set/del/hset/expired, up to 3 s), so a redis.conf that already
// has the classes is accepted. Otherwise it returns a *NotifyConfigError
// naming the redis.conf line; connection failures are returned as they are.
func EnsureKeyspaceEvents(ctx context.Context, c *redis.Client, classes string) error {
	for _, r := range classes {
		if !strings.ContainsRune(validClasses, r) {
			return fmt.Errorf("notify-keyspace-events class %q in %q: want letters of %s", r, classes, validClasses)
		}
	}
	cur, err := c.ConfigGet(ctx, "notify-keyspace-events").Result()
	if err != nil {
		if !isServerError(err) {
			return fmt.Errorf("config get notify-keyspace-events: %w", err)
		}
		// CONFIG refused: the classes may be in redis.conf already (that
		// is our own advice); see whether notifications actually arrive.
		perr := probeKeyspaceEvents(ctx, c, classes)
		if perr == nil {
			return nil
		}
		return &NotifyConfigError{Classes: mergeClasses("", classes), Err: err, Probe: perr}
	}
	have := cur["notify-keyspace-events"]
	want := mergeClasses(have, classes)
	if want == have {
		return nil
	}
	if err := c.ConfigSet(ctx, "notify-keyspace-events", want).Err(); err != nil {
		if isServerError(err) {
			return &NotifyConfigError{Classes: want, Err: err}
		}
		return fmt.Errorf("config set notify-keyspace-events %s: %w", want, err)
	}
	return nil
}

// mergeClasses returns have plus the letters of need it lacks; have is
// returned unchanged when nothing is missing. A letter covered by the
// alias "A" in have is not added again.
func mergeClasses(have, need string) string {
	out := have
	covered := func(r rune) bool {
		if strings.ContainsRune(out, r) {
			return true
		}
		if strings.ContainsRune(out, 'A') && strings.ContainsRune(allClassesAlias, r) {
			return true
		}
		if r == 'A' { // every letter of the alias present counts as A
			for _, a := range allClassesAlias {
				if !strings.ContainsRune(out, a) {
					return false
				}
			}
			return true
		}
		return false
	}
	for _, r := range need {
		if !covered(r) {
			out += string(r)
		}
	}
	return out
}

// isServerError tells an error reply of the server (refused, unknown
// command, NOPERM) from a network failure.
func isServerError(err error) bool {
	var re redis.Error
	return errors.As(err, &re) && !errors.Is(err, redis.Nil)
}

// probeClasses are the classes probeKeyspaceEvents can observe, with the
// event that proves each. Evictions ("e") cannot be provoked; they are
// taken on trust once the rest works.
var probeClasses = map[rune]string{'K': "", 'g': "del", '$': "set", 'l': "rpush", 's': "sadd", 'h': "hset",
	'z': "zadd", 't': "xadd", 'x': "expired", 'e': ""}

// probeKeyspaceEvents checks without CONFIG that notifications of classes
// arrive: it subscribes to a scratch key's keyspace channel and provokes
// one event per class. nil means every class was seen.
func probeKeyspaceEvents(ctx context.Context, c *redis.Client, classes string) error {
	want := map[string]bool{}
	for _, r := range classes {
		ev, ok := probeClasses[r]
		if !ok {
			return fmt.Errorf("class %q cannot be probed", r)
		}
		if ev != "" {
			want[ev] = true
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	key := fmt.Sprintf("_switchyard_notify_probe:%d:%d", os.Getpid(), rand.Uint64())
	ps := c.Subscribe(ctx, fmt.Sprintf("__keyspace@%d__:%s", c.Options().DB, key))
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil { // the confirmation
		return fmt.Errorf("subscribe probe channel: %w", err)
	}
	defer c.Del(context.WithoutCancel(ctx), key)
	pipe := c.Pipeline()
	pipe.Set(ctx, key, "1", 0)
	pipe.Del(ctx, key)
	pipe.RPush(ctx, key, "1")
	pipe.Del(ctx, key)
	pipe.SAdd(ctx, key, "1")
	pipe.Del(ctx, key)
	pipe.ZAdd(ctx, key, redis.Z{Score: 1, Member: "1"})
	pipe.Del(ctx, key)
	pipe.XAdd(ctx, &redis.XAddArgs{Stream: key, Values: []string{"f", "v"}})
	pipe.Del(ctx, key)
	pipe.HSet(ctx, key, "f", "v")
	pipe.PExpire(ctx, key, time.Millisecond)
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("probe writes: %w", err)
	}
	go func() { // touching the expired key makes Redis drop it now
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				c.Exists(ctx, key)
			}
		}
	}()
	for len(want) > 0 {
		msg, err := ps.Receive(ctx) // the read deadline is ctx's
		if err != nil {
			missing := make([]string, 0, len(want))
			for ev := range want {
				missing = append(missing, ev)
			}
			sort.Strings(missing)
			return fmt.Errorf("no %s event within 3 s: %w", strings.Join(missing, ", "), err)
		}
		if m, ok := msg.(*redis.Message); ok {
			delete(want, m.Payload)
		}
	}
	return nil
}
