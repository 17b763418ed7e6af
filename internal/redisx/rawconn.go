package redisx

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// dialRaw opens a connection of our own with the client's options — the
// Dialer (TCP, unix socket, TLS, sentinel's master dialer), user and
// password or a credentials provider, client name — and, when db is not 0,
// SELECTs db. The Watcher's subscription and its reads of changed keys
// use it: one copy of the dial and the handshake. The connection speaks
// RESP2 (no HELLO). The client's OnConnect hook and streaming credentials
// cannot be honoured: an error says so. A refused AUTH, CLIENT SETNAME or SELECT is an error
// wrapping the server's respError.
//
// Equivalent to: redis-cli -u <url> -n <db> (AUTH, CLIENT SETNAME, SELECT).
func dialRaw(ctx context.Context, o *redis.Options, db int) (net.Conn, *pushReader, error) {
	if err := ownConnOptions(o); err != nil {
		return nil, nil, err
	}
	dctx, cancel := context.WithTimeout(ctx, o.DialTimeout)
	defer cancel()
	conn, err := o.Dialer(dctx, o.Network, o.Addr)
	if err != nil {
		return nil, nil, fmt.Errorf("dial %s: %w", o.Addr, err)
	}
	rd := newPushReader(conn)
	fail := func(err error) (net.Conn, *pushReader, error) {
		conn.Close()
		return nil, nil, err
	}
	conn.SetDeadline(time.Now().Add(o.DialTimeout))
	user, pass := o.Username, o.Password
	switch {
	case o.CredentialsProviderContext != nil:
		if user, pass, err = o.CredentialsProviderContext(ctx); err != nil {
			return fail(fmt.Errorf("redis credentials: %w", err))
		}
	case o.CredentialsProvider != nil:
		user, pass = o.CredentialsProvider()
	}
	var hello [][]string
	switch {
	case pass != "" && user != "":
		hello = append(hello, []string{"AUTH", user, pass})
	case pass != "":
		hello = append(hello, []string{"AUTH", pass})
	}
	if o.ClientName != "" {
		hello = append(hello, []string{"CLIENT", "SETNAME", o.ClientName})
	}
	if db != 0 {
		hello = append(hello, []string{"SELECT", strconv.Itoa(db)})
	}
	for _, cmd := range hello {
		if _, err := conn.Write(appendCommand(nil, cmd...)); err != nil {
			return fail(err)
		}
		line, err := rd.line()
		if err != nil {
			return fail(err)
		}
		if line[0] == '-' {
			return fail(fmt.Errorf("%s: %w", cmd[0], respError(line[1:])))
		}
	}
	conn.SetDeadline(time.Time{})
	return conn, rd, nil
}

// ownConnOptions says whether dialRaw can honour every option of the
// client: not its OnConnect hook nor streaming credentials.
func ownConnOptions(o *redis.Options) error {
	if o.OnConnect != nil || o.StreamingCredentialsProvider != nil {
		return errors.New("redis: the client's OnConnect or StreamingCredentialsProvider option cannot be applied to a connection of redisx's own (watcher, state writer)")
	}
	return nil
}

// ioDeadline is when an I/O of timeout (a go-redis ReadTimeout or
// WriteTimeout: -1 blocks, -2 sets no deadline) started now ends, and no
// later than ctx's deadline; zero means none.
func ioDeadline(ctx context.Context, timeout time.Duration) time.Time {
	var t time.Time
	if timeout > 0 {
		t = time.Now().Add(timeout)
	}
	if d, ok := ctx.Deadline(); ok && (t.IsZero() || d.Before(t)) {
		t = d
	}
	return t
}
