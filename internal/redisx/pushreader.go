package redisx

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
)

// push is one message of a subscribed connection (RESP2 array, or RESP3
// push): kind is "message", "pmessage", "subscribe", "psubscribe", "pong"…;
// pattern is set for pmessage; count for (un)subscribe confirmations.
// The byte slices point into the reader's buffer and are valid only until
// the next read: the watcher turns into a string only what it keeps (a
// watched key's name), so a notification costs one allocation, not the
// ~11 of a go-redis Message.
type push struct {
	kind, pattern, channel, payload []byte
	count                           int64
}

// respError is an error reply of the server ("-NOPERM …"); like go-redis'
// errors it is a redis.Error, so IsPermission and isServerError see it.
type respError string

func (e respError) Error() string { return string(e) }

// RedisError marks respError as a redis.Error.
func (respError) RedisError() {}

// Limits of what a subscription message may hold: Redis keys and channel
// names may be 512 MB, but nothing the watcher subscribes to has more than
// four parts, and a bulk beyond maxBulk is refused rather than allocated.
const (
	maxPushParts = 8
	maxBulk      = 1 << 29
)

// errProtocol is a reply that is not RESP (the connection is dropped).
var errProtocol = errors.New("redis protocol error")

// pushReader reads subscription messages from a connection.
type pushReader struct {
	rd      *bufio.Reader
	scratch []byte // the parts of the current message, back to back (reused)
	ends    [maxPushParts]int
	parts   [maxPushParts][]byte
	offs    []int  // hash: where each field and value ends in scratch (reused)
	packBuf []byte // hashPacked's packed hash before its string is made (reused)
}

func newPushReader(r io.Reader) *pushReader {
	return &pushReader{rd: bufio.NewReaderSize(r, 64<<10)}
}

// read returns the next message. A server error reply is a respError; any
// other error (I/O, protocol) leaves the connection unusable.
func (p *pushReader) read() (push, error) {
	line, err := p.line()
	if err != nil {
		return push{}, err
	}
	switch line[0] {
	case '-':
		return push{}, respError(line[1:])
	case '*', '>':
	default:
		return push{}, fmt.Errorf("%w: want an array, got %q", errProtocol, clip(line))
	}
	n, err := parseLen(line[1:])
	if err != nil {
		return push{}, err
	}
	if n < 1 || n > maxPushParts {
		return push{}, fmt.Errorf("%w: push of %d parts", errProtocol, n)
	}
	// The bulks are copied back to back into one reused scratch buffer
	// (a header line read later would overwrite the bufio window).
	p.scratch = p.scratch[:0]
	var count int64
	var haveCount bool
	for i := 0; i < n; i++ {
		line, err := p.line()
		if err != nil {
			return push{}, err
		}
		switch line[0] {
		case '$':
			size, err := parseLen(line[1:])
			if err != nil {
				return push{}, err
			}
			if size < 0 || size > maxBulk {
				return push{}, fmt.Errorf("%w: bulk of %d bytes", errProtocol, size)
			}
			start := len(p.scratch)
			p.scratch = slices.Grow(p.scratch, size+2)[:start+size+2]
			b := p.scratch[start:]
			if _, err := io.ReadFull(p.rd, b); err != nil {
				return push{}, err
			}
			if b[size] != '\r' || b[size+1] != '\n' {
				return push{}, fmt.Errorf("%w: bulk not ended by CRLF", errProtocol)
			}
			p.scratch = p.scratch[:start+size]
			p.ends[i] = -1 - start // a bulk: its start, encoded; sliced below
		case ':':
			v, err := strconv.ParseInt(string(line[1:]), 10, 64)
			if err != nil {
				return push{}, fmt.Errorf("%w: integer %q", errProtocol, clip(line))
			}
			count, haveCount = v, true
			p.ends[i] = 0
		default:
			return push{}, fmt.Errorf("%w: push part %q", errProtocol, clip(line))
		}
	}
	// Slice the parts only now: the scratch may have moved while growing.
	for i := 0; i < n; i++ {
		p.parts[i] = nil
		if p.ends[i] < 0 {
			start, end := -1-p.ends[i], len(p.scratch)
			for j := i + 1; j < n; j++ {
				if p.ends[j] < 0 {
					end = -1 - p.ends[j]
					break
				}
			}
			p.parts[i] = p.scratch[start:end:end]
		}
	}
	if p.parts[0] == nil {
		return push{}, fmt.Errorf("%w: push without a kind", errProtocol)
	}
	m := push{kind: p.parts[0]}
	switch {
	case string(m.kind) == "pmessage" && n == 4:
		m.pattern, m.channel, m.payload = p.parts[1], p.parts[2], p.parts[3]
	case n == 3 && !haveCount:
		m.channel, m.payload = p.parts[1], p.parts[2]
	case n == 3:
		m.channel, m.count = p.parts[1], count
	case n == 2: // pong
		m.payload = p.parts[1]
	}
	return m, nil
}

// line returns the next CRLF-ended line without its CRLF (valid until the
// next read), never empty.
func (p *pushReader) line() ([]byte, error) {
	line, err := p.rd.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		return nil, fmt.Errorf("%w: header line over %d bytes", errProtocol, p.rd.Size())
	}
	if err != nil {
		return nil, err
	}
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return nil, fmt.Errorf("%w: line %q", errProtocol, clip(line))
	}
	return line[:len(line)-2], nil
}

// parseLen parses a RESP length (-1 is a null).
func parseLen(b []byte) (int, error) {
	v, err := strconv.Atoi(string(b))
	if err != nil || v < -1 {
		return 0, fmt.Errorf("%w: length %q", errProtocol, clip(b))
	}
	return v, nil
}

// clip quotes at most 40 bytes of b in errors.
func clip(b []byte) []byte {
	if len(b) > 40 {
		return b[:40]
	}
	return b
}
