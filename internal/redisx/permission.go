package redisx

import (
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
)

// PermissionError is a NOPERM reply explained: what the Redis ACL user may
// not do and the rule that would allow it. Its message names the command,
// key or channel and ends with the server's reply, e.g.
//
//	redis user may not subscribe to __keyspace@4__:PORT|*: add "&__keyspace@4__:PORT|*" (or allchannels) to its ACL
//	(NOPERM this user has no permissions to access one of the channels used as arguments)
type PermissionError struct {
	Kind    string // "command", "key" or "channel"
	Command string // the refused command in upper case, e.g. "HSET" ("" when not known)
	Object  string // the key or channel refused (the command for Kind "command"; "" when not known)
	Rule    string // the ACL rule that allows it, e.g. "~PORT_TABLE|*"
	Err     error  // the server's NOPERM reply
}

func (e *PermissionError) Error() string {
	var what string
	switch e.Kind {
	case "command":
		what = "run " + e.Object
	case "channel":
		switch e.Command {
		case "SUBSCRIBE", "PSUBSCRIBE", "SSUBSCRIBE":
			what = "subscribe to " + orUnknown(e.Object, "a channel")
		case "PUBLISH", "SPUBLISH":
			what = "publish to " + orUnknown(e.Object, "a channel")
		default:
			what = "use " + orUnknown(e.Object, "a") + " channel"
			if e.Object != "" {
				what = "use channel " + e.Object
			}
		}
	default:
		what = "access key " + e.Object
		if e.Object == "" {
			what = "access a key"
		}
		if e.Command != "" {
			what += " (" + e.Command + ")"
		}
	}
	alt := map[string]string{"command": "+@all", "key": "allkeys", "channel": "allchannels"}[e.Kind]
	if e.Rule == "" && e.Kind == "channel" {
		return fmt.Sprintf("redis user may not %s: add \"&__keyspace@<db>__:*\" for each watched DB (a PSUBSCRIBE pattern needs a channel rule equal to it) or allchannels to its ACL (%v)", what, e.Err)
	}
	if e.Rule == "" {
		return fmt.Sprintf("redis user may not %s: grant it in its ACL (%s): %v", what, alt, e.Err)
	}
	return fmt.Sprintf("redis user may not %s: add %q (or %s) to its ACL (%v)", what, e.Rule, alt, e.Err)
}

func (e *PermissionError) Unwrap() error { return e.Err }

func orUnknown(s, unknown string) string {
	if s == "" {
		return unknown
	}
	return s
}

// IsPermission reports whether err is (or wraps) a NOPERM reply of Redis.
func IsPermission(err error) bool {
	var re redis.Error
	return errors.As(err, &re) && strings.HasPrefix(re.Error(), "NOPERM")
}

// ExplainPermission turns a NOPERM reply to the command args (as given to
// go-redis, e.g. cmd.Args(); may be empty) into a *PermissionError naming
// the command, key or channel refused and the ACL rule to add. Any other
// error, and nil, is returned as is. Examples:
//
//	ExplainPermission(err, "psubscribe", "__keyspace@4__:PORT|*")
//	ExplainPermission(cmd.Err(), cmd.Args()...)
func ExplainPermission(err error, args ...any) error {
	if err == nil || !IsPermission(err) {
		return err
	}
	var already *PermissionError
	if errors.As(err, &already) {
		return err
	}
	msg := err.Error()
	pe := &PermissionError{Err: err}
	if len(args) > 0 {
		pe.Command = strings.ToUpper(fmt.Sprint(args[0]))
	}
	switch {
	case strings.Contains(msg, "to run the '"):
		// "... has no permissions to run the 'config|set' command"
		_, rest, _ := strings.Cut(msg, "to run the '")
		name, _, _ := strings.Cut(rest, "'")
		pe.Kind = "command"
		pe.Object = strings.ToUpper(strings.ReplaceAll(name, "|", " "))
		pe.Rule = "+" + strings.ToLower(name)
	case strings.Contains(msg, "channel"):
		pe.Kind = "channel"
		if len(args) > 1 {
			pe.Object = fmt.Sprint(args[1])
			pe.Rule = "&" + channelPattern(pe.Object)
			if pe.Command == "PSUBSCRIBE" {
				// Redis allows a PSUBSCRIBE pattern only when a channel
				// rule equals it literally ("&__keyspace@*" does not).
				pe.Rule = "&" + pe.Object
			}
		}
	case strings.Contains(msg, "key"):
		pe.Kind = "key"
		keys := keysOf(args)
		if len(keys) > 0 {
			pe.Object = keys[0]
			if len(keys) > 1 {
				pe.Object = fmt.Sprintf("%s (or one of %d others)", keys[0], len(keys)-1)
			}
			pe.Rule = "~" + keyPattern(keys[0])
		}
	default:
		return err
	}
	return pe
}

// keysOf are the keys among a command's args: all arguments of the
// multi-key commands switchyard uses, else the first.
func keysOf(args []any) []string {
	if len(args) < 2 {
		return nil
	}
	switch strings.ToLower(fmt.Sprint(args[0])) {
	case "del", "unlink", "exists", "touch", "mget", "watch":
		out := make([]string, 0, len(args)-1)
		for _, a := range args[1:] {
			out = append(out, fmt.Sprint(a))
		}
		return out
	case "scan", "info", "ping", "select", "config", "acl", "client", "hello", "auth", "flushdb", "flushall":
		return nil
	}
	return []string{fmt.Sprint(args[1])}
}

// keyPattern is the table glob of a key: "PORT_TABLE|eth0" -> "PORT_TABLE|*",
// "COUNTERS:eth0" -> "COUNTERS:*"; a key without separator stands for itself.
func keyPattern(key string) string {
	if i := strings.IndexAny(key, "|:"); i >= 0 {
		return key[:i+1] + "*"
	}
	return key
}

// channelPattern is the glob of a channel: keyspace and keyevent channels
// of every DB ("__keyspace@*"), else the channel itself.
func channelPattern(ch string) string {
	if i := strings.Index(ch, "@"); i >= 0 && strings.HasPrefix(ch, "__key") {
		return ch[:i+1] + "*"
	}
	return ch
}
