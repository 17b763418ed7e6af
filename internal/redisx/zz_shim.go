package redisx

// Temporary stand-ins until the redisx-syncd branch lands (Dial, Sentinel,
// ExplainPermission); same signatures.

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sirupsen/logrus"
)

// Dial connects and waits for Redis to answer.
func Dial(ctx context.Context, rawURL string, log *logrus.Entry) (*Conn, error) {
	c, err := Connect(rawURL)
	if err != nil {
		return nil, err
	}
	for {
		err := c.Ping(ctx)
		if err == nil {
			return c, nil
		}
		if strings.Contains(err.Error(), "WRONGPASS") || strings.Contains(err.Error(), "NOAUTH") {
			c.Close()
			return nil, fmt.Errorf("%v: authentication failed: check the user and password in --redis", err)
		}
		log.WithField("redis", c.String()).WithError(err).Warn("waiting for redis")
		select {
		case <-ctx.Done():
			c.Close()
			return nil, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// SentinelKey is the daemon's liveness key in db.
func SentinelKey(db int, daemon string) string {
	if db == 2 {
		return "SWITCHYARD_DAEMON:" + daemon
	}
	return "SWITCHYARD_DAEMON|" + daemon
}

// ExplainPermission returns err (explained when it is NOPERM).
func ExplainPermission(err error) error { return err }

// Sentinel notices an emptied DB.
type Sentinel struct {
	c      *redis.Client
	key    string
	fields map[string]string
}

// NewSentinel returns a sentinel of key.
func NewSentinel(c *redis.Client, key string, fields map[string]string) *Sentinel {
	return &Sentinel{c: c, key: key, fields: fields}
}

// Run writes the key and calls onLost whenever it is gone.
func (s *Sentinel) Run(ctx context.Context, interval time.Duration, onLost func(ctx context.Context), onError func(error)) {
	_ = s.c.HSet(ctx, s.key, s.fields).Err()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		n, err := s.c.Exists(ctx, s.key).Result()
		if err != nil {
			if onError != nil && ctx.Err() == nil {
				onError(err)
			}
			continue
		}
		if n == 0 {
			if err := s.c.HSet(ctx, s.key, s.fields).Err(); err != nil {
				continue
			}
			onLost(ctx)
		}
	}
}

// IsPermission reports whether err is a NOPERM refusal.
func IsPermission(err error) bool { return err != nil && strings.Contains(err.Error(), "NOPERM") }
