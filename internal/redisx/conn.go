package redisx

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultURL is the Redis a daemon uses when --redis is empty.
const DefaultURL = "redis://127.0.0.1:6379"

// Conn is one Redis server as named by a --redis URL. It hands out one
// client (with its own connection pool) per DB number, because switchyard
// picks the DB per table (CONFIG_DB 4, STATE_DB 6, ...).
type Conn struct {
	url  string // redacted, for messages
	base redis.Options

	mu      sync.Mutex
	clients map[int]*redis.Client
}

// Connect parses a --redis URL and returns a Conn. It does not dial: the
// first command does (use Ping to fail fast). Accepted forms:
//
//	redis://host:port                 (port defaults to 6379, host to 127.0.0.1)
//	redis://:password@host:port       (password only: the "default" user)
//	redis://user:password@host:port   (ACL user)
//	rediss://...                      (the same over TLS)
//	unix:///path/redis.sock           (also unix://user:pass@/path.sock)
//	unix:///path/redis.sock?password=secret[&user=name]
//
// An empty url is DefaultURL. A /N database path is an error: the daemon
// chooses the DB per table (Conn.DB), so a URL cannot name one.
func Connect(rawURL string) (*Conn, error) {
	if rawURL == "" {
		rawURL = DefaultURL
	}
	opts, redacted, err := parseURL(rawURL)
	if err != nil {
		return nil, err
	}
	return &Conn{url: redacted, base: *opts, clients: map[int]*redis.Client{}}, nil
}

// DB returns the client for database n, creating it on first use; the same
// client is returned for the same n until Close.
func (c *Conn) DB(n int) *redis.Client {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cl, ok := c.clients[n]; ok {
		return cl
	}
	o := c.base
	o.DB = n
	cl := redis.NewClient(&o)
	c.clients[n] = cl
	return cl
}

// Ping checks that the server answers (on DB 0), naming the URL when not.
func (c *Conn) Ping(ctx context.Context) error {
	if err := c.DB(0).Ping(ctx).Err(); err != nil {
		return fmt.Errorf("redis %s: %w", c.url, err)
	}
	return nil
}

// String is the URL with any password replaced by "xxxxx".
func (c *Conn) String() string { return c.url }

// Close closes every client handed out by DB.
func (c *Conn) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	for n, cl := range c.clients {
		if err := cl.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close redis db %d: %w", n, err))
		}
		delete(c.clients, n)
	}
	return errors.Join(errs...)
}

// parseURL turns a --redis URL into client options (DB left 0) and a
// redacted form of the URL for messages. No error it returns contains the
// password: the user info is split off before url.Parse sees the URL (whose
// errors quote it), and every message is scrubbed of the password's text.
func parseURL(raw string) (*redis.Options, string, error) {
	o, redacted, err := parseSplit(raw)
	if err != nil {
		return nil, "", scrub(err, raw)
	}
	return o, scrubString(redacted, raw), nil
}

func parseSplit(raw string) (*redis.Options, string, error) {
	user, rest, err := splitUserinfo(raw)
	if err != nil {
		return nil, "", fmt.Errorf("redis url %q: %v", redactRaw(raw), err)
	}
	u, err := url.Parse(rest)
	if err != nil {
		// url.Error repeats the URL: say it ourselves.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, "", fmt.Errorf("redis url %q: %v (want redis://[user:pass@]host:port or unix:///path/redis.sock)", redactRaw(raw), err)
	}
	u.User = user
	redacted := redact(u)
	bad := func(format string, a ...any) error {
		return fmt.Errorf("redis url %q: %s", redacted, fmt.Sprintf(format, a...))
	}
	o := &redis.Options{
		DialTimeout:  5 * time.Second,
		ReadTimeout:  10 * time.Second,
		WriteTimeout: 10 * time.Second,
		// Connections opened for a burst close once idle (each holds
		// 64 KiB of buffers), so a daemon's memory follows its load.
		ConnMaxIdleTime: 30 * time.Second,
	}
	if u.User != nil {
		pw, hasPW := u.User.Password()
		if !hasPW {
			return nil, "", bad("user info without ':' is ambiguous; write redis://:PASSWORD@host for a password or redis://USER:PASSWORD@host for an ACL user")
		}
		o.Username, o.Password = u.User.Username(), pw
	}
	q := u.Query()
	switch u.Scheme {
	case "redis", "rediss":
		if u.Opaque != "" {
			return nil, "", fmt.Errorf("redis url %q: missing // after %s:", redactRaw(raw), u.Scheme)
		}
		if p := strings.TrimPrefix(u.Path, "/"); p != "" {
			return nil, "", bad("path %q: the daemon picks the DB number per table, drop /%s from the URL", u.Path, p)
		}
		if len(q) > 0 {
			return nil, "", bad("query parameters are not supported on %s:// URLs", u.Scheme)
		}
		host, port := u.Hostname(), u.Port()
		if host == "" {
			host = "127.0.0.1"
		}
		if port == "" {
			if strings.HasSuffix(u.Host, ":") {
				return nil, "", bad("empty port")
			}
			port = "6379"
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return nil, "", bad("port %q is not a number in 1-65535", port)
		}
		o.Network, o.Addr = "tcp", net.JoinHostPort(host, port)
		if u.Scheme == "rediss" {
			o.TLSConfig = &tls.Config{ServerName: host, MinVersion: tls.VersionTLS12}
		}
	case "unix":
		if u.Host != "" {
			return nil, "", bad("host %q in a unix URL; the socket path must be absolute: unix:///path/redis.sock", u.Host)
		}
		if u.Opaque != "" || !strings.HasPrefix(u.Path, "/") {
			return nil, "", fmt.Errorf("redis url %q: %s", redactRaw(raw), "the socket path must be absolute: unix:///path/redis.sock")
		}
		for k, v := range q {
			switch k {
			case "password":
				o.Password = v[0]
			case "user", "username":
				o.Username = v[0]
			case "db":
				return nil, "", bad("db parameter: the daemon picks the DB number per table, drop it")
			default:
				return nil, "", bad("unknown query parameter %q (want password, user)", k)
			}
		}
		o.Network, o.Addr = "unix", u.Path
	case "":
		return nil, "", fmt.Errorf("redis url %q: no scheme; want redis://host:port or unix:///path/redis.sock", redactRaw(raw))
	default:
		return nil, "", fmt.Errorf("redis url %q: unsupported scheme %q; want redis://, rediss:// or unix://", redactRaw(raw), u.Scheme)
	}
	return o, redacted, nil
}

// splitUserinfo takes "user:password@" off a URL of the form
// scheme://userinfo@rest, returning the rest without it. The user info ends
// at the last '@' (a password may contain '/', '?', '#' or '@', which
// url.Parse would cut elsewhere and then quote in its error); a part
// starting with '/' is a unix socket path, not user info.
func splitUserinfo(raw string) (*url.Userinfo, string, error) {
	i := strings.Index(raw, "://")
	if i < 0 {
		return nil, raw, nil
	}
	s := i + 3
	at := strings.LastIndex(raw[s:], "@")
	if at < 0 || strings.HasPrefix(raw[s:], "/") {
		return nil, raw, nil
	}
	info := raw[s : s+at]
	rest := raw[:s] + raw[s+at+1:]
	name, pw, hasPW := strings.Cut(info, ":")
	user, err := url.PathUnescape(name)
	if err != nil {
		return nil, "", errors.New("invalid %-escape in the user name")
	}
	if !hasPW {
		return url.User(user), rest, nil
	}
	if pw, err = url.PathUnescape(pw); err != nil {
		return nil, "", errors.New("invalid %-escape in the password")
	}
	return url.UserPassword(user, pw), rest, nil
}

// redactRaw is raw for messages when it does not parse: the user info
// replaced by user:xxxxx and every query value but user, username and db
// by xxxxx.
func redactRaw(raw string) string {
	out := raw
	if s, ok := authorityStart(raw); ok {
		if at := strings.LastIndex(raw[s:], "@"); at >= 0 && !strings.HasPrefix(raw[s:], "/") {
			name, _, hasPW := strings.Cut(raw[s:s+at], ":")
			info := "xxxxx"
			if hasPW {
				info = name + ":xxxxx"
			}
			out = raw[:s] + info + "@" + raw[s+at+1:]
		}
	}
	if q := strings.Index(out, "?"); q >= 0 {
		pairs := strings.Split(out[q+1:], "&")
		for i, p := range pairs {
			k, _, ok := strings.Cut(p, "=")
			if ok && k != "user" && k != "username" && k != "db" {
				pairs[i] = k + "=xxxxx"
			}
		}
		out = out[:q+1] + strings.Join(pairs, "&")
	}
	return out
}

// secrets are the texts in raw that may be a password, raw and unescaped:
// what follows the first ':' of the user info (all of it when there is no
// ':'), and the values of query parameters other than user, username and
// db. Those shorter than 4 bytes are left out: scrubbing them would garble
// messages, and the structural redaction already hides them.
func secrets(raw string) []string {
	var out []string
	add := func(s string) {
		for _, v := range []string{s, unescapeOr(s)} {
			if len(v) >= 4 && !slices.Contains(out, v) {
				out = append(out, v)
			}
		}
	}
	if s, ok := authorityStart(raw); ok {
		if at := strings.LastIndex(raw[s:], "@"); at >= 0 {
			info := raw[s : s+at]
			if _, pw, ok := strings.Cut(info, ":"); ok {
				add(pw)
			} else {
				add(info)
			}
		}
	}
	if _, q, ok := strings.Cut(raw, "?"); ok {
		for _, p := range strings.Split(q, "&") {
			if k, v, ok := strings.Cut(p, "="); ok && k != "user" && k != "username" && k != "db" {
				add(v)
			}
		}
	}
	return out
}

func unescapeOr(s string) string {
	if u, err := url.PathUnescape(s); err == nil {
		return u
	}
	return s
}

// authorityStart is where user info may start in raw: after "scheme://",
// or after "scheme:" in an opaque URL such as redis:u:pw@host.
func authorityStart(raw string) (int, bool) {
	if i := strings.Index(raw, "://"); i >= 0 {
		return i + 3, true
	}
	if i := strings.Index(raw, ":"); i >= 0 {
		return i + 1, true
	}
	return 0, false
}

// scrubString replaces every secret of raw in s by xxxxx.
func scrubString(s, raw string) string {
	for _, sec := range secrets(raw) {
		s = strings.ReplaceAll(s, sec, "xxxxx")
	}
	return s
}

// scrub is err with the secrets of raw replaced by xxxxx (its message
// only: parse errors wrap nothing worth unwrapping).
func scrub(err error, raw string) error {
	msg := err.Error()
	if clean := scrubString(msg, raw); clean != msg {
		return errors.New(clean)
	}
	return err
}

// redact is u for messages: any password, and user info that may be one,
// replaced by xxxxx; so are query values other than user, username and db.
func redact(u *url.URL) string {
	ru := *u
	if u.User != nil {
		if _, ok := u.User.Password(); ok {
			ru.User = url.UserPassword(u.User.Username(), "xxxxx")
		} else {
			ru.User = url.User("xxxxx")
		}
	}
	if u.RawQuery != "" {
		q := u.Query()
		for k := range q {
			if k != "user" && k != "username" && k != "db" {
				q[k] = []string{"xxxxx"}
			}
		}
		ru.RawQuery = q.Encode()
	}
	return ru.String()
}
