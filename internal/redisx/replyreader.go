package redisx

import (
	"bytes"
	"fmt"
	"io"
	"slices"

	"github.com/switchyard-net/switchyard/internal/shrink"
)

// The replies of the Watcher's reads (HGETALL, GET), parsed from the
// connection's buffer straight into what an Event holds: a hash costs its
// map and one string holding every field and value (the map's strings are
// slices of it), not go-redis' command object, argument slice and two
// strings per field. The connection speaks RESP2 (dialRaw sends no HELLO).

// maxHashHint bounds the map size taken on trust from a reply's header:
// a bigger hash grows the map as its fields actually arrive.
const maxHashHint = 64

// hash reads an HGETALL reply: the fields without NULL, nil when the key
// does not exist (an empty array), an empty map when it holds only NULL.
// A server error reply is a respError and leaves the connection usable;
// any other error leaves it unusable.
func (p *pushReader) hash() (map[string]string, error) {
	return p.hashInto(nil)
}

// hashInto is hash filling into (an empty map of a released batch, see
// Watcher.Release) instead of a new map; nil is a new one.
func (p *pushReader) hashInto(into map[string]string) (map[string]string, error) {
	n, err := p.hashParts()
	if err != nil || n <= 0 {
		return nil, err
	}
	s := string(p.scratch) // the one string every field and value slices
	h := into
	if h == nil {
		h = make(map[string]string, min(n/2, maxHashHint))
	} else {
		clear(h)
	}
	from := 0
	for i := 0; i < n; i += 2 {
		f, v := s[from:p.offs[i]], s[p.offs[i]:p.offs[i+1]]
		from = p.offs[i+1]
		if f != NullField {
			h[f] = v
		}
	}
	p.scratch, p.offs = shrinkScratch(p.scratch), shrinkOffs(p.offs)
	return h, nil
}

// hashPacked reads an HGETALL reply as hash does, into shrink.Pack's
// encoding (names sorted, NULL left out): exists is false when the key
// does not exist, packed "" when it holds only NULL. One allocation, the
// packed string.
func (p *pushReader) hashPacked() (packed string, exists bool, err error) {
	n, err := p.hashParts()
	if err != nil || n <= 0 {
		return "", false, err
	}
	s := p.scratch
	// Field i is s[start(2i):p.offs[2i]], its value s[p.offs[2i]:p.offs[2i+1]].
	start := func(j int) int {
		if j == 0 {
			return 0
		}
		return p.offs[j-1]
	}
	name := func(i int) []byte { return s[start(2*i):p.offs[2*i]] }
	var small [16]int
	order := small[:0]
	if n/2 > len(small) {
		order = make([]int, 0, n/2)
	}
	for i := 0; i < n/2; i++ {
		if string(name(i)) != NullField {
			order = append(order, i)
		}
	}
	if len(order) <= len(small) { // insertion sort: a hash has a few fields
		for i := 1; i < len(order); i++ {
			for j := i; j > 0 && string(name(order[j])) < string(name(order[j-1])); j-- {
				order[j], order[j-1] = order[j-1], order[j]
			}
		}
	} else {
		slices.SortFunc(order, func(a, b int) int { return bytes.Compare(name(a), name(b)) })
	}
	b := p.packBuf[:0]
	for _, i := range order {
		b = shrink.AppendPairBytes(b, name(i), s[p.offs[2*i]:p.offs[2*i+1]])
	}
	packed = string(b)
	p.packBuf = shrinkScratch(b)
	p.scratch, p.offs = shrinkScratch(p.scratch), shrinkOffs(p.offs)
	return packed, true, nil
}

// hashParts reads an HGETALL reply's header and its n bulks into
// p.scratch, back to back, p.offs[i] the end of bulk i; n <= 0 when the
// key does not exist.
func (p *pushReader) hashParts() (n int, err error) {
	line, err := p.line()
	if err != nil {
		return 0, err
	}
	switch line[0] {
	case '-':
		return 0, respError(line[1:])
	case '*':
	default:
		return 0, fmt.Errorf("%w: want an array, got %q", errProtocol, clip(line))
	}
	n, err = parseLen(line[1:])
	if err != nil {
		return 0, err
	}
	if n <= 0 {
		return 0, nil
	}
	if n%2 != 0 {
		return 0, fmt.Errorf("%w: hash reply of %d elements", errProtocol, n)
	}
	p.scratch = p.scratch[:0]
	p.offs = p.offs[:0]
	for i := 0; i < n; i++ {
		if err := p.appendBulk(); err != nil {
			return 0, err
		}
		p.offs = append(p.offs, len(p.scratch))
	}
	return n, nil
}

// bulk reads a GET reply: the value, or null for an absent key. Errors
// are as hash's.
func (p *pushReader) bulk() (v string, null bool, err error) {
	line, err := p.line()
	if err != nil {
		return "", false, err
	}
	switch line[0] {
	case '-':
		return "", false, respError(line[1:])
	case '$':
	default:
		return "", false, fmt.Errorf("%w: want a bulk string, got %q", errProtocol, clip(line))
	}
	size, err := parseLen(line[1:])
	if err != nil {
		return "", false, err
	}
	if size < 0 {
		return "", true, nil
	}
	p.scratch = p.scratch[:0]
	if err := p.bulkBody(size); err != nil {
		return "", false, err
	}
	v = string(p.scratch)
	p.scratch = shrinkScratch(p.scratch)
	return v, false, nil
}

// appendBulk appends the next bulk string (not null) to p.scratch.
func (p *pushReader) appendBulk() error {
	line, err := p.line()
	if err != nil {
		return err
	}
	if line[0] != '$' {
		return fmt.Errorf("%w: want a bulk string, got %q", errProtocol, clip(line))
	}
	size, err := parseLen(line[1:])
	if err != nil {
		return err
	}
	if size < 0 {
		return fmt.Errorf("%w: null in a hash reply", errProtocol)
	}
	return p.bulkBody(size)
}

// bulkChunk is how much of a bulk is read (and the buffer grown) at once:
// memory follows the bytes that arrive, not a length taken on trust.
const bulkChunk = 1 << 20

// bulkBody appends a bulk's size bytes to p.scratch and checks its CRLF.
func (p *pushReader) bulkBody(size int) error {
	if size > maxBulk {
		return fmt.Errorf("%w: bulk of %d bytes", errProtocol, size)
	}
	for rem := size + 2; rem > 0; {
		n := min(rem, bulkChunk)
		start := len(p.scratch)
		p.scratch = slices.Grow(p.scratch, n)[:start+n]
		if _, err := io.ReadFull(p.rd, p.scratch[start:]); err != nil {
			return err
		}
		rem -= n
	}
	end := len(p.scratch) - 2
	if p.scratch[end] != '\r' || p.scratch[end+1] != '\n' {
		return fmt.Errorf("%w: bulk not ended by CRLF", errProtocol)
	}
	p.scratch = p.scratch[:end]
	return nil
}

// keepBuf is the most a buffer of our own connections keeps between
// replies or flushes: an ordinary read batch (512 keys) or results flush
// (256 keys) fits; what a burst or an odd value grew beyond it is let go,
// so a daemon's memory goes back near idle after a burst
// (docs/performance.md, Scale100kRoutes' after/idle).
const keepBuf = 64 << 10

// shrinkScratch drops a buffer grown past keepBuf (kept: the ordinary
// one, reused by every reply).
func shrinkScratch(b []byte) []byte {
	if cap(b) > keepBuf {
		return nil
	}
	return b[:0]
}

func shrinkOffs(o []int) []int {
	if cap(o) > keepBuf/8 {
		return nil
	}
	return o[:0]
}
