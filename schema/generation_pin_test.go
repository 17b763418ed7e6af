package schema

import "testing"

// The generation is computed by readers too (swctl wait, scripts): its
// value for a given hash must never change.
func TestGenerationPinned(t *testing.T) {
	for _, c := range []struct {
		f    Fields
		want string
	}{
		{Fields{"nexthop": "192.168.0.1", "ifname": "eth0", "NULL": "NULL"}, "83ea02484de8e4d2"},
		{Fields{}, "e3b0c44298fc1c14"},
	} {
		if got := Generation(c.f); got != c.want {
			t.Errorf("Generation(%v) = %s, want %s", c.f, got, c.want)
		}
	}
}
