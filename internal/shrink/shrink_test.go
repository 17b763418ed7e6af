package shrink

import "testing"

func TestMap(t *testing.T) {
	m := map[int]int{}
	peak := 0
	for i := 0; i < 5000; i++ {
		m[i] = i
		Grew(m, &peak)
	}
	orig := m
	for i := 0; i < 4000; i++ {
		delete(m, i)
		m = Map(m, &peak)
	}
	if len(m) != 1000 {
		t.Fatalf("len %d", len(m))
	}
	if peak >= 5000 {
		t.Fatalf("peak %d: the map was never copied", peak)
	}
	orig[-1] = -1
	if _, ok := m[-1]; ok {
		t.Fatal("the copy shares the old map")
	}
	for i := 4000; i < 5000; i++ {
		if m[i] != i {
			t.Fatalf("lost %d", i)
		}
	}
}

func TestSmallMapsStay(t *testing.T) {
	m := map[int]int{1: 1, 2: 2}
	peak := 0
	Grew(m, &peak)
	delete(m, 1)
	if m2 := Map(m, &peak); len(m2) != 1 || peak != 2 {
		t.Fatalf("small map copied: peak %d", peak)
	}
}

func TestPack(t *testing.T) {
	for _, m := range []map[string]string{nil, {}, {"a": ""}, {"nexthop": "10.0.0.2", "ifname": "Ethernet0", "\xff": "\x00\x01"}} {
		got := Unpack(Pack(m))
		if len(got) != len(m) || PackedLen(Pack(m)) != len(m) {
			t.Fatalf("%q -> %q", m, got)
		}
		for k, v := range m {
			if got[k] != v {
				t.Fatalf("%q -> %q", m, got)
			}
		}
	}
	if Pack(map[string]string{"a": "1", "b": "2"}) != Pack(map[string]string{"b": "2", "a": "1"}) {
		t.Fatal("order changes the packing")
	}
}

func FuzzPack(f *testing.F) {
	f.Add("a", "1", "b", "2")
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2 string) {
		m := map[string]string{k1: v1, k2: v2}
		got := Unpack(Pack(m))
		if len(got) != len(m) || got[k1] != m[k1] || got[k2] != m[k2] {
			t.Fatalf("%q -> %q", m, got)
		}
		Unpack(k1 + v1) // never panics on garbage
	})
}
