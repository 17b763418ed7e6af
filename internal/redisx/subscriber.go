package redisx

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// subscriber is the Watcher's keyspace subscription: its own connection,
// dialed with the client's options (Dialer: TCP, unix socket, TLS; user and
// password or a credentials provider; client name), read with pushReader.
// After a failed read the next receive dials again and resubscribes every
// channel and pattern — the confirmations then tell the watcher to rescan,
// as go-redis' PubSub did.
type subscriber struct {
	opts               *redis.Options
	channels, patterns []string

	mu   sync.Mutex // conn and the writes on it (subscribe, ping, close)
	conn net.Conn
	rd   *pushReader // used by receive only
	dead bool        // closed for good
}

// pingTimeout is how long a subscription connection may stay silent after
// a PING before it counts as dead (at least: three ping periods; the
// watcher pings every 5 s by default).
const pingTimeout = 30 * time.Second

// newSubscriber checks that the client's options can be honoured by a
// connection of our own.
func newSubscriber(opts *redis.Options, channels, patterns []string) (*subscriber, error) {
	if err := ownConnOptions(opts); err != nil {
		return nil, fmt.Errorf("redis watcher: %w", err)
	}
	return &subscriber{opts: opts, channels: channels, patterns: patterns}, nil
}

// receive returns the next message, dialing and subscribing first when
// there is no connection. An error closes the connection (the next call
// dials again); a server error reply (a refused subscription) is returned
// as a respError.
func (s *subscriber) receive(ctx context.Context) (push, error) {
	s.mu.Lock()
	conn := s.conn
	s.mu.Unlock()
	if conn == nil {
		if err := s.connect(ctx); err != nil {
			return push{}, err
		}
	}
	m, err := s.rd.read()
	if err != nil {
		s.drop()
		if ctx.Err() != nil {
			return push{}, ctx.Err()
		}
		return push{}, err
	}
	return m, nil
}

// connect dials, authenticates and sends the subscriptions; their
// confirmations are read by receive.
func (s *subscriber) connect(ctx context.Context) error {
	conn, rd, err := dialRaw(ctx, s.opts, 0)
	if err != nil {
		return err
	}
	fail := func(err error) error {
		conn.Close()
		return err
	}
	var buf []byte
	if len(s.channels) > 0 {
		buf = appendCommand(buf, append([]string{"SUBSCRIBE"}, s.channels...)...)
	}
	if len(s.patterns) > 0 {
		buf = appendCommand(buf, append([]string{"PSUBSCRIBE"}, s.patterns...)...)
	}
	if _, err := conn.Write(buf); err != nil {
		return fail(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dead {
		return fail(net.ErrClosed)
	}
	s.conn, s.rd = conn, rd
	return nil
}

// ping sends PING on the connection (none: nothing to do) and gives the
// reader timeout for the next message: a connection that died without a
// word (a peer gone, a dropped route) then fails the read.
func (s *subscriber) ping(timeout time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn == nil {
		return
	}
	s.conn.SetReadDeadline(time.Now().Add(timeout))
	if _, err := s.conn.Write(appendCommand(nil, "PING")); err != nil {
		s.conn.Close() // the reader's next read fails and reconnects
	}
}

// drop closes the current connection after a failed read.
func (s *subscriber) drop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn != nil {
		s.conn.Close()
		s.conn = nil
	}
}

// close ends the subscription for good and unblocks receive.
func (s *subscriber) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dead = true
	if s.conn != nil {
		s.conn.Close()
	}
}

// appendCommand appends args as a RESP array of bulk strings.
func appendCommand(b []byte, args ...string) []byte {
	b = append(b, '*')
	b = strconv.AppendInt(b, int64(len(args)), 10)
	b = append(b, '\r', '\n')
	for _, a := range args {
		b = append(b, '$')
		b = strconv.AppendInt(b, int64(len(a)), 10)
		b = append(b, '\r', '\n')
		b = append(b, a...)
		b = append(b, '\r', '\n')
	}
	return b
}
