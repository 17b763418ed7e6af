package redisx

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sirupsen/logrus"
)

// Dial's pacing: an attempt every dialRetry (the first at once), each
// bounded by dialTimeout, and one "waiting for redis" line per dialLogEvery.
const (
	dialRetry    = time.Second
	dialTimeout  = 2 * time.Second
	dialLogEvery = 5 * time.Second
)

// ErrAuthFailed is wrapped by Dial's error when Redis refused the user or
// password of --redis.
var ErrAuthFailed = errors.New("authentication failed")

// Dial is Connect plus waiting until Redis answers PING (on DB 0). While it
// does not, Dial retries every second and logs, at most every 5 s, the line
// every daemon logs:
//
//	level=warning msg="waiting for redis" redis=<url, password hidden> attempts=<failed so far> error=<why>
//
// go-redis' own messages (each failed dial of its pool, printed to stderr
// by default) go to log at debug level from then on.
//
// Refused credentials (WRONGPASS, NOAUTH, NOPERM on AUTH/HELLO) are final:
// Dial returns at once an error wrapping ErrAuthFailed,
//
//	redis <url>: authentication failed: <server message>: check the user and password in --redis
//
// and another NOPERM reply is final too (a *PermissionError). When ctx ends
// Dial returns ctx.Err(). log may be nil.
func Dial(ctx context.Context, rawURL string, log *logrus.Entry) (*Conn, error) {
	c, err := Connect(rawURL)
	if err != nil {
		return nil, err
	}
	if log == nil {
		l := logrus.New()
		l.SetOutput(io.Discard)
		log = logrus.NewEntry(l)
	} else {
		redis.SetLogger(goRedisLog{log})
	}
	failed := 0
	var logged time.Time
	for {
		start := time.Now()
		pctx, cancel := context.WithTimeout(ctx, dialTimeout)
		err := c.DB(0).Ping(pctx).Err()
		cancel()
		if err == nil {
			if failed > 0 {
				log.WithFields(logrus.Fields{"redis": c.url, "attempts": failed}).Info("redis answers")
			}
			return c, nil
		}
		if ctx.Err() != nil {
			c.Close()
			return nil, ctx.Err()
		}
		err = scrub(err, rawURL)
		if msg, ok := authFailure(err); ok {
			c.Close()
			return nil, fmt.Errorf("redis %s: %w: %s: check the user and password in --redis", c.url, ErrAuthFailed, msg)
		}
		if IsPermission(err) {
			c.Close()
			return nil, fmt.Errorf("redis %s: %w", c.url, ExplainPermission(err, "ping"))
		}
		failed++
		if failed == 1 || time.Since(logged) >= dialLogEvery {
			log.WithFields(logrus.Fields{"redis": c.url, "attempts": failed}).WithError(err).Warn("waiting for redis")
			logged = time.Now()
		}
		t := time.NewTimer(dialRetry - time.Since(start))
		select {
		case <-ctx.Done():
			t.Stop()
			c.Close()
			return nil, ctx.Err()
		case <-t.C:
		}
	}
}

// authFailure reports whether err is Redis refusing the credentials, with
// the server's message.
func authFailure(err error) (string, bool) {
	var re redis.Error
	if !errors.As(err, &re) {
		return "", false
	}
	msg := strings.TrimSuffix(re.Error(), ".")
	switch {
	case strings.HasPrefix(msg, "WRONGPASS"), strings.HasPrefix(msg, "NOAUTH"),
		strings.Contains(msg, "invalid username-password pair"),
		strings.Contains(msg, "called without any password configured"),
		strings.HasPrefix(msg, "NOPERM") && (strings.Contains(msg, "'auth'") || strings.Contains(msg, "'hello'")):
		return msg, true
	}
	return "", false
}

// goRedisLog forwards go-redis' internal log lines to logrus at debug
// level, so that a Redis outage is told by Dial's line alone.
type goRedisLog struct{ log *logrus.Entry }

func (l goRedisLog) Printf(_ context.Context, format string, v ...any) {
	l.log.Debugf("go-redis: "+format, v...)
}
