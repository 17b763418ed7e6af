package bpf

import (
	"math/rand"
	"testing"
)

// TestACLDportSkip: the destination-port pre-check never skips a shape
// for a port one of its entries takes (every port, exhaustively, for
// rule sets with exact ports, ranges, wide ranges and no ports), and it
// skips most shapes pinning the port for a port no rule names.
func TestACLDportSkip(t *testing.T) {
	rnd := rand.New(rand.NewSource(15))
	for set := 0; set < 4; set++ {
		var rules []ACLRule
		for i := 0; i < 150; i++ {
			r := randACLRule(rnd, i)
			switch i % 4 {
			case 0:
				p := uint16(rnd.Intn(65536))
				r.Match.Dport = PortRange{Set: true, Lo: p, Hi: p}
			case 1:
				lo := uint16(rnd.Intn(65536))
				r.Match.Dport = PortRange{Set: true, Lo: lo, Hi: lo + uint16(rnd.Intn(int(65535-lo)+1)/(1+set*100))}
			}
			if _, why := r.families(); why == "" && r.check() == "" {
				rules = append(rules, r)
			}
		}
		plan, err := CompileACL(rules)
		for err != nil && len(rules) > 1 { // e.g. a 65th shape: fewer rules
			rules = rules[:len(rules)-1]
			plan, err = CompileACL(rules)
		}
		if err != nil {
			t.Fatal(err)
		}
		for fi, f := range plan.fam {
			if f.dskip == nil {
				continue
			}
			w := 1
			if fi == 1 {
				w = 4
			}
			skipped, pinned := 0, 0
			type shapePort struct {
				shape uint8
				port  uint16
			}
			taken := map[shapePort]bool{}
			for k := range f.entries {
				taken[shapePort{k.Shape, k.Dport}] = true
			}
			for p := 0; p < 65536; p++ {
				s := f.dskip[aclDportBucket(uint16(p))]
				for i, sh := range f.shapes {
					if s>>i&1 == 1 && taken[shapePort{uint8(i), uint16(p) & uint16(sh.M[w]>>32)}] {
						t.Fatalf("set %d family %d: shape %d has an entry taking port %d, but the pre-check skips it", set, fi, i, p)
					}
				}
			}
			for _, s := range f.dskip {
				for i := range f.shapes {
					if s>>i&1 == 1 {
						skipped++
					}
				}
			}
			for i := range f.shapes {
				for _, s := range f.dskip {
					if s>>i&1 == 1 {
						pinned++
						break
					}
				}
			}
			t.Logf("set %d family %d: %d rules, %d shapes, %d pinning the port, %.1f skipped per bucket", set, fi, len(rules), len(f.shapes), pinned, float64(skipped)/float64(len(f.dskip)))
		}
	}
}
