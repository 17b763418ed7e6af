package shrink

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func TestPackRoundTrip(t *testing.T) {
	big := map[string]string{}
	for i := 0; i < 40; i++ { // more names than Pack sorts on the stack
		big[fmt.Sprint("f", i)] = strings.Repeat("v", i*20)
	}
	for _, m := range []map[string]string{
		nil, {}, {"a": ""}, {"": "x"}, {"nexthop": "10.0.0.2", "ifname": "Ethernet0"}, big,
	} {
		p := Pack(m)
		got := Unpack(p)
		if len(m) == 0 {
			if p != "" || got != nil {
				t.Fatalf("Pack(%v) = %q, Unpack %v", m, p, got)
			}
			continue
		}
		if !reflect.DeepEqual(got, m) {
			t.Fatalf("Unpack(Pack(%v)) = %v", m, got)
		}
		if PackedLen(p) != len(m) || string(AppendPacked(nil, m)) != p {
			t.Fatalf("PackedLen %d, AppendPacked differs", PackedLen(p))
		}
		prev, n := "", 0
		for rest := p; ; n++ { // Next walks the names in ascending order
			k, v, r, ok := Next(rest)
			if !ok {
				break
			}
			if n > 0 && k <= prev || m[k] != v {
				t.Fatalf("Next gave %q=%q after %q", k, v, prev)
			}
			prev, rest = k, r
		}
		if n != len(m) {
			t.Fatalf("Next walked %d of %d", n, len(m))
		}
	}
}

// FuzzUnpack: any string decodes without panicking, and whatever it
// decodes to packs and decodes to the same map.
func FuzzUnpack(f *testing.F) {
	f.Add(Pack(map[string]string{"nexthop": "10.0.0.2", "ifname": "Ethernet0"}))
	f.Add("\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff")
	f.Fuzz(func(t *testing.T, s string) {
		m := Unpack(s)
		for rest := s; ; {
			_, _, r, ok := Next(rest)
			if !ok {
				break
			}
			rest = r
		}
		if len(m) > 0 && !reflect.DeepEqual(Unpack(Pack(m)), m) {
			t.Fatalf("round trip of %v", m)
		}
	})
}
