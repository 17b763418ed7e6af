package orchagent

import (
	"slices"
	"testing"
)

// TestRefIndex: one dependant is a string, more a map; both shrink back.
func TestRefIndex(t *testing.T) {
	x := newRefIndex()
	x.set("STATIC_ROUTE|a", []string{"route:a", "link:E0"})
	x.set("STATIC_ROUTE|b", []string{"route:b", "link:E0"})
	x.set("STATIC_ROUTE|c", []string{"link:E0"})
	if got := x.keys("link:E0"); !slices.Equal(got, []string{"STATIC_ROUTE|a", "STATIC_ROUTE|b", "STATIC_ROUTE|c"}) {
		t.Fatalf("link:E0 -> %v", got)
	}
	if got := x.keys("route:a"); !slices.Equal(got, []string{"STATIC_ROUTE|a"}) || x.byRes["route:a"].many != nil {
		t.Fatalf("route:a -> %v (%+v): want one key, no map", got, x.byRes["route:a"])
	}
	x.set("STATIC_ROUTE|a", []string{"route:a", "link:E0"}) // again: no duplicate
	x.drop("STATIC_ROUTE|b")
	x.drop("STATIC_ROUTE|c")
	if s := x.byRes["link:E0"]; s.many != nil || s.one != "STATIC_ROUTE|a" {
		t.Fatalf("link:E0 after drops: %+v, want the one key left as a string", s)
	}
	x.drop("STATIC_ROUTE|a")
	if len(x.byRes) != 0 || len(x.byKey) != 0 || x.keys("link:E0") != nil {
		t.Fatalf("after dropping all: %v %v", x.byRes, x.byKey)
	}
}
