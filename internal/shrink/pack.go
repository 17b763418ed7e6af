package shrink

import (
	"encoding/binary"
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
	keys := make([]string, 0, len(m))
	n := 0
	for k, v := range m {
		keys = append(keys, k)
		n += len(k) + len(v) + 2*binary.MaxVarintLen32
	}
	sort.Strings(keys)
	b := make([]byte, 0, n)
	for _, k := range keys {
		b = binary.AppendUvarint(b, uint64(len(k)))
		b = append(b, k...)
		v := m[k]
		b = binary.AppendUvarint(b, uint64(len(v)))
		b = append(b, v...)
	}
	return string(b)
}

// Unpack decodes Pack's string into a new map (nil for "").
func Unpack(s string) map[string]string {
	if s == "" {
		return nil
	}
	m := map[string]string{}
	for len(s) > 0 {
		k, rest, ok := next(s)
		if !ok {
			return m
		}
		v, rest2, ok := next(rest)
		if !ok {
			return m
		}
		m[k] = v
		s = rest2
	}
	return m
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
	l, w := binary.Uvarint([]byte(s[:min(len(s), binary.MaxVarintLen64)]))
	if w <= 0 || uint64(len(s)-w) < l {
		return "", "", false
	}
	end := w + int(l)
	return s[w:end], s[end:], true
}
