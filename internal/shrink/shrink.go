// Package shrink gives memory back after a burst. Go maps never shrink:
// a map that once held 100k keys keeps their buckets after the keys are
// deleted, so a daemon's memory would stay at its peak for good. A caller
// that deletes from a long-lived map calls Map after each delete; once the
// map holds under a quarter of its high-water mark it is copied into a
// map sized for what it holds now.
package shrink

// minPeak is the size under which a map is never copied: small maps cost
// little, and copying them often would cost more.
const minPeak = 1024

// Map returns m, or a right-sized copy of m when it has shrunk below a
// quarter of *peak (the high-water mark the caller keeps with it, updated
// here). Call it after deleting from m; not safe for concurrent use of m.
func Map[K comparable, V any](m map[K]V, peak *int) map[K]V {
	n := len(m)
	if n > *peak {
		*peak = n
		return m
	}
	if *peak < minPeak || n >= *peak/4 {
		return m
	}
	out := make(map[K]V, n)
	for k, v := range m {
		out[k] = v
	}
	*peak = n
	return out
}

// Grew records m's size in *peak; call it after inserting into m.
func Grew[K comparable, V any](m map[K]V, peak *int) {
	if len(m) > *peak {
		*peak = len(m)
	}
}
