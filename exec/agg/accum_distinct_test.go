package agg

import (
	"math/rand/v2"
	"testing"
)

// TestIntSet: the counted set agrees with a map after every step of random adds and removals over small and large
// value domains, sequential ids and multiples of a large power of two (which collide under weak hashing), with
// encode/decode round trips on the way.
func TestIntSet(t *testing.T) {
	domains := []func(*rand.Rand) int64{
		func(r *rand.Rand) int64 { return int64(r.IntN(5)) },
		func(r *rand.Rand) int64 { return int64(r.IntN(3000)) },
		func(r *rand.Rand) int64 { return int64(r.IntN(400)) << 32 },
		func(r *rand.Rand) int64 { return int64(r.IntN(400))*1000 - 200000 },
		func(r *rand.Rand) int64 { return r.Int64() },
	}
	for di, dom := range domains {
		r := rand.New(rand.NewPCG(uint64(di), 42))
		a := &distinctInt{form: groupForm}
		a.grow()
		model := map[int64]int64{}
		var keys []int64
		for step := range 30000 {
			if len(keys) > 0 && r.IntN(2) == 0 {
				v := keys[r.IntN(len(keys))]
				if r.IntN(10) == 0 {
					v = dom(r) // maybe absent
				}
				gone := a.sets[0].sub(v)
				c, ok := model[v]
				if gone != (ok && c == 1) {
					t.Fatalf("domain %d step %d: sub(%d) reported gone=%v, model count %d", di, step, v, gone, c)
				}
				if c > 1 {
					model[v] = c - 1
				} else if ok {
					delete(model, v)
				}
			} else {
				v := dom(r)
				_, had := model[v]
				if isNew := a.sets[0].add(v, 1); isNew == had {
					t.Fatalf("domain %d step %d: add(%d) new=%v, model had it %v", di, step, v, isNew, had)
				}
				model[v]++
				keys = append(keys, v)
			}
			if step%997 == 0 || step == 29999 {
				checkIntSet(t, &a.sets[0], model)
				enc := a.encode(nil, 0)
				b := &distinctInt{form: groupForm}
				b.grow()
				if rest, err := b.decode(enc, 0); err != nil || len(rest) != 0 {
					t.Fatalf("decode: %v (%d bytes left)", err, len(rest))
				}
				checkIntSet(t, &b.sets[0], model)
			}
		}
	}
}

func checkIntSet(t *testing.T, s *intSet, model map[int64]int64) {
	t.Helper()
	if s.n != len(model) {
		t.Fatalf("%d values, model %d", s.n, len(model))
	}
	seen := 0
	for _, sl := range s.slots {
		if sl.c == 0 {
			continue
		}
		seen++
		if model[sl.v] != sl.c {
			t.Fatalf("value %d: %d copies, model %d", sl.v, sl.c, model[sl.v])
		}
	}
	if seen != len(model) {
		t.Fatalf("%d filled slots, model %d", seen, len(model))
	}
	for v := range model { // every value is found by its probe, before an empty slot
		mask := len(s.slots) - 1
		i := s.home(v)
		for s.slots[i].c != 0 && s.slots[i].v != v {
			i = (i + 1) & mask
		}
		if s.slots[i].c == 0 {
			t.Fatalf("value %d not found by its probe", v)
		}
	}
}
