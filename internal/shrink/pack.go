package shrink

import (
	"encoding/binary"
	"slices"
	"sort"
)

// Pack encodes a string map as one string: sorted keys, each key and value
// length-prefixed (uvarint). A cache that keeps a Redis hash per key keeps
// one allocation instead of a map, its buckets and two strings per field —
// smaller, and long-lived objects that are few fragment the heap less.
// Pack(nil) and Pack of an empty map are "".
func Pack(m map[string]string) string {
	if len(m) == 0 {
		return ""
	}
	var buf [256]byte
	return string(AppendPacked(buf[:0], m))
}

// AppendPacked appends Pack(m) to b: with b on the caller's stack, a
// packed map can be compared with one already kept before it is copied.
func AppendPacked(b []byte, m map[string]string) []byte {
	// The names of a small hash are sorted on the stack.
	var small [16]string
	keys := small[:0]
	if len(m) > len(small) {
		keys = make([]string, 0, len(m))
	}
	n := 0
	for k, v := range m {
		keys = append(keys, k)
		n += len(k) + len(v) + 2*binary.MaxVarintLen32
	}
	sort.Strings(keys)
	b = slices.Grow(b, n)
	for _, k := range keys {
		b = AppendPair(b, k, m[k])
	}
	return b
}

// AppendPair appends one name and value in Pack's encoding; pairs
// appended in ascending name order make a packed map.
func AppendPair(b []byte, k, v string) []byte {
	b = binary.AppendUvarint(b, uint64(len(k)))
	b = append(b, k...)
	b = binary.AppendUvarint(b, uint64(len(v)))
	return append(b, v...)
}

// AppendPairBytes is AppendPair of byte slices (a reply parsed in place).
func AppendPairBytes(b []byte, k, v []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(k)))
	b = append(b, k...)
	b = binary.AppendUvarint(b, uint64(len(v)))
	return append(b, v...)
}

// Next returns the first name and value of a packed map and the rest;
// ok is false at the end (or on a malformed string).
func Next(s string) (k, v, rest string, ok bool) {
	k, rest, ok = next(s)
	if !ok {
		return "", "", "", false
	}
	v, rest, ok = next(rest)
	return k, v, rest, ok
}

// Unpack decodes Pack's string into a new map (nil for "").
func Unpack(s string) map[string]string {
	if s == "" {
		return nil
	}
	m := map[string]string{}
	UnpackInto(m, s)
	return m
}

// UnpackInto puts the entries of Pack's string s into m (a malformed
// tail is left out).
func UnpackInto(m map[string]string, s string) {
	for len(s) > 0 {
		k, v, rest, ok := Next(s)
		if !ok {
			return
		}
		m[k] = v
		s = rest
	}
}

// PackedLen is the number of entries in a packed map.
func PackedLen(s string) int {
	n := 0
	for len(s) > 0 {
		_, rest, ok := next(s)
		if !ok {
			break
		}
		_, s, ok = next(rest)
		if !ok {
			break
		}
		n++
	}
	return n
}

func next(s string) (string, string, bool) {
	l, w := uvarint(s)
	if w <= 0 || uint64(len(s)-w) < l {
		return "", "", false
	}
	end := w + int(l)
	return s[w:end], s[end:], true
}

// uvarint is binary.Uvarint of a string's head, without converting it.
func uvarint(s string) (uint64, int) {
	var x uint64
	var sh uint
	for i := 0; i < len(s) && i < binary.MaxVarintLen64; i++ {
		c := s[i]
		if c < 0x80 {
			if i == binary.MaxVarintLen64-1 && c > 1 {
				return 0, -(i + 1)
			}
			return x | uint64(c)<<sh, i + 1
		}
		x |= uint64(c&0x7f) << sh
		sh += 7
	}
	return 0, 0
}
