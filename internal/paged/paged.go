// Package paged is a slice indexed by small integer ids (engine.Cache ids)
// that is allocated and freed by page. The engine's results and the
// StateWriter's fingerprints keep one value per cached key in it: array
// indexing instead of a look-up in a 100k-entry map. A page is made on its
// first Take and let go when its last occupied value is vacated, so a few
// keys with high ids that outlive a burst's deletes keep a few pages, not
// the whole slice.
package paged

// PageSize is how many values a page holds. Small enough that a key left
// alone on its page costs little (a page of the engine's 56-byte results
// is 14 KiB), large enough that the page index is noise.
const PageSize = 256

// Slice holds values of T by id, in pages. The zero value is empty.
type Slice[T any] struct {
	pages [][]T
	used  []int32 // occupied values per page
}

// Empty says no page is there.
func (p *Slice[T]) Empty() bool { return len(p.pages) == 0 }

// At is id's value, nil when its page is not there.
func (p *Slice[T]) At(id int32) *T {
	if i := int(id) / PageSize; i < len(p.pages) && p.pages[i] != nil {
		return &p.pages[i][int(id)%PageSize]
	}
	return nil
}

// Take is id's value, its page made when missing. The caller calls
// Occupied when it starts using the value.
func (p *Slice[T]) Take(id int32) *T {
	i := int(id) / PageSize
	for i >= len(p.pages) {
		p.pages = append(p.pages, nil)
		p.used = append(p.used, 0)
	}
	if p.pages[i] == nil {
		p.pages[i] = make([]T, PageSize)
	}
	return &p.pages[i][int(id)%PageSize]
}

// Occupied counts id's value as in use; its page was made by Take.
func (p *Slice[T]) Occupied(id int32) { p.used[int(id)/PageSize]++ }

// Vacate zeroes id's value and uncounts it (it was Occupied). A page with
// nothing occupied goes, and so do empty pages at the end of the list.
func (p *Slice[T]) Vacate(id int32) {
	i := int(id) / PageSize
	var zero T
	p.pages[i][int(id)%PageSize] = zero
	if p.used[i]--; p.used[i] > 0 {
		return
	}
	p.pages[i] = nil
	n := len(p.pages)
	for n > 0 && p.pages[n-1] == nil {
		n--
	}
	clear(p.pages[n:])
	p.pages, p.used = p.pages[:n], p.used[:n]
}

// Each calls f for every value of every page that is there, occupied or not.
func (p *Slice[T]) Each(f func(id int32, v *T)) {
	for i, pg := range p.pages {
		for j := range pg {
			f(int32(i*PageSize+j), &pg[j])
		}
	}
}

// Pages is how many pages are there (for tests and metrics).
func (p *Slice[T]) Pages() int {
	n := 0
	for _, pg := range p.pages {
		if pg != nil {
			n++
		}
	}
	return n
}
