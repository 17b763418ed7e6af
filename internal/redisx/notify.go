package redisx

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
)

// WatchClasses are the notify-keyspace-events classes a Watcher needs:
// keyspace channel (K), generic del/expire/rename (g), strings ($, for
// plain keys such as CONFIG_DB_INITIALIZED), hashes (h), expired (x) and
// evicted (e).
const WatchClasses = "Kg$hxe"

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
}

func (e *NotifyConfigError) Error() string {
	return fmt.Sprintf("redis refuses to configure keyspace notifications (%v): add `notify-keyspace-events %s` to redis.conf and restart redis-server",
		e.Err, e.Classes)
}

func (e *NotifyConfigError) Unwrap() error { return e.Err }

// EnsureKeyspaceEvents makes notify-keyspace-events contain classes (e.g.
// WatchClasses), keeping the classes already configured: CONFIG GET, union,
// CONFIG SET only when something is missing. If the server refuses CONFIG
// it returns a *NotifyConfigError naming the redis.conf line; connection
// failures are returned as they are.
func EnsureKeyspaceEvents(ctx context.Context, c *redis.Client, classes string) error {
	for _, r := range classes {
		if !strings.ContainsRune(validClasses, r) {
			return fmt.Errorf("notify-keyspace-events class %q in %q: want letters of %s", r, classes, validClasses)
		}
	}
	cur, err := c.ConfigGet(ctx, "notify-keyspace-events").Result()
	if err != nil {
		if isServerError(err) {
			return &NotifyConfigError{Classes: mergeClasses("", classes), Err: err}
		}
		return fmt.Errorf("config get notify-keyspace-events: %w", err)
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
