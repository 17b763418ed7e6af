package paged

import "testing"

func TestSliceTakeVacate(t *testing.T) {
	var p Slice[int]
	if !p.Empty() || p.At(0) != nil {
		t.Fatal("zero value not empty")
	}
	// Two keys on the first page, one far away.
	for _, id := range []int32{0, 1, 3*PageSize + 5} {
		*p.Take(id) = int(id) + 1
		p.Occupied(id)
	}
	if p.Pages() != 2 || p.At(PageSize) != nil || *p.At(3*PageSize + 5) != 3*PageSize+6 {
		t.Fatalf("pages %d, middle page %v", p.Pages(), p.At(PageSize))
	}
	// The far key goes: its page and the empty ones before it go too.
	p.Vacate(3*PageSize + 5)
	if p.Pages() != 1 || len(p.pages) != 1 || p.At(3*PageSize+5) != nil {
		t.Fatalf("after vacating the far key: %d pages, list of %d", p.Pages(), len(p.pages))
	}
	// One key of two leaves its page; the other keeps it, zeroed slot.
	p.Vacate(0)
	if v := p.At(0); v == nil || *v != 0 || *p.At(1) != 2 {
		t.Fatalf("page lost or slot not zeroed: %v", v)
	}
	p.Vacate(1)
	if !p.Empty() {
		t.Fatalf("%d pages left with nothing occupied", p.Pages())
	}
	// Each visits every value of the pages there.
	*p.Take(PageSize + 2) = 7
	p.Occupied(PageSize + 2)
	n, sum := 0, 0
	p.Each(func(id int32, v *int) { n++; sum += *v })
	if n != PageSize || sum != 7 {
		t.Fatalf("Each visited %d values summing %d", n, sum)
	}
}
