package engine

// slotPage is how many result slots a page holds: slots are allocated
// by page and a page whose keys are all gone is let go, so a key with a
// high id that outlives a burst's deletes keeps one page, not the slice.
const slotPage = 1024

// slotPages is results' slots by Cache id, in pages.
type slotPages struct {
	pages [][]slot
	used  []int32 // occupied slots (ck != "") per page
}

// at is id's slot, nil when its page is not there.
func (p *slotPages) at(id int32) *slot {
	if i := int(id) / slotPage; i < len(p.pages) && p.pages[i] != nil {
		return &p.pages[i][int(id)%slotPage]
	}
	return nil
}

// take is id's slot, its page made when missing.
func (p *slotPages) take(id int32) *slot {
	i := int(id) / slotPage
	for i >= len(p.pages) {
		p.pages = append(p.pages, nil)
		p.used = append(p.used, 0)
	}
	if p.pages[i] == nil {
		p.pages[i] = make([]slot, slotPage)
	}
	return &p.pages[i][int(id)%slotPage]
}

// occupied counts a slot taken by a key (its ck set from "").
func (p *slotPages) occupied(id int32) { p.used[int(id)/slotPage]++ }

// vacate empties id's slot; an empty page goes, and so do empty pages at
// the end of the list.
func (p *slotPages) vacate(id int32) {
	i := int(id) / slotPage
	p.pages[i][int(id)%slotPage] = slot{}
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

// each calls f for every slot of a page that is there.
func (p *slotPages) each(f func(id int32, s *slot)) {
	for i, pg := range p.pages {
		for j := range pg {
			f(int32(i*slotPage+j), &pg[j])
		}
	}
}
