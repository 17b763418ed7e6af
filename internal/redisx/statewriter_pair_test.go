package redisx

import (
	"context"
	"fmt"
	"math/rand"
	"reflect"
	"testing"

	"github.com/redis/go-redis/v9"
)

// writerPair is the fixture of the StateWriter's differential tests: a
// plain writer on DB 6 and the writer under test (compact, or written by
// slot) on DB 7 of one redis-server, three keys each holding another
// owner's field, and a seeded source of random owned fields.
type writerPair struct {
	t               *testing.T
	ctx             context.Context
	owned, keys     []string
	plainDB, testDB *redis.Client
	plain, test     *StateWriter
	rng             *rand.Rand
}

// newWriterPair makes the pair; the writer under test is compact.
func newWriterPair(t *testing.T, owned []string) *writerPair {
	_, c := startRedis(t)
	p := &writerPair{t: t, ctx: context.Background(), owned: owned,
		keys: []string{"R_TABLE|a", "R_TABLE|b", "R_TABLE|c"}, plainDB: c.DB(6), testDB: c.DB(7),
		rng: rand.New(rand.NewSource(1))}
	p.plain, p.test = NewStateWriter(p.plainDB, owned), NewStateWriter(p.testDB, owned)
	p.test.Compact()
	for _, k := range p.keys { // another owner's field, never touched
		p.plainDB.HSet(p.ctx, k, "oper", "up")
		p.testDB.HSet(p.ctx, k, "oper", "up")
	}
	return p
}

// randFields is a random subset of the owned fields with random values.
func (p *writerPair) randFields() map[string]string {
	f := map[string]string{}
	for _, n := range p.owned {
		if p.rng.Intn(2) == 0 {
			f[n] = fmt.Sprint(p.rng.Intn(3))
		}
	}
	return f
}

// both runs op on the plain writer, then on the one under test.
func (p *writerPair) both(op func(w *StateWriter) error) {
	p.t.Helper()
	for _, w := range []*StateWriter{p.plain, p.test} {
		if err := op(w); err != nil {
			p.t.Fatal(err)
		}
	}
}

// same fails unless every key's hash is the same in both DBs.
func (p *writerPair) same(step int, what string) {
	p.t.Helper()
	for _, k := range p.keys {
		a, _ := p.plainDB.HGetAll(p.ctx, k).Result()
		b, _ := p.testDB.HGetAll(p.ctx, k).Result()
		if !reflect.DeepEqual(a, b) {
			p.t.Fatalf("step %d %s: %s is %v, plain writer made %v", step, what, k, b, a)
		}
	}
}
