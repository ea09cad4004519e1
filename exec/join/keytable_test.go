package join

import (
	"math/rand/v2"
	"testing"
	"unsafe"
)

// TestKeyStateLayout keeps the hot fields of a key's entries on the lines the probe loop expects (see keyEntry).
func TestKeyStateLayout(t *testing.T) {
	var e keyEntry
	if s := unsafe.Sizeof(e); s%64 != 0 {
		t.Fatalf("keyEntry is %d bytes, not a whole number of cache lines", s)
	}
	if o := unsafe.Offsetof(e.arena) + unsafe.Sizeof(e.arena); o > 64 {
		t.Fatalf("a probe's fields end at byte %d, past the first cache line", o)
	}
	if o := unsafe.Offsetof(e.acct) + unsafe.Sizeof(e.acct); o > 128 {
		t.Fatalf("an append's fields end at byte %d, past the second cache line", o)
	}
	if o := unsafe.Offsetof(e.isl); o%64 != 0 || unsafe.Sizeof(e) != o+64 {
		t.Fatalf("the inline slot and arena are at byte %d of %d, not the last cache line", o, unsafe.Sizeof(e))
	}
}

// TestIntTable checks the key table against a map through puts, lookups and bulk removals.
func TestIntTable(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	tab := newIntTable()
	model := map[int64]*keyState{}
	var slab keySlab
	for step := range 20000 {
		k := rng.Int64N(5000) - 2500
		if step%3 == 0 {
			k = rng.Int64()
		}
		got := tab.get(k)
		if got != model[k] {
			t.Fatalf("step %d: get(%d) = %p, model %p", step, k, got, model[k])
		}
		if got == nil {
			p := slab.alloc()
			p.e[0].written = k
			tab.put(k, p)
			model[k] = p
		}
		if step%2500 == 2499 {
			tab.keep(func(p *keyState) bool {
				if p.e[0].written%3 == 0 {
					delete(model, p.e[0].written)
					return false
				}
				return true
			})
			if tab.n != len(model) {
				t.Fatalf("step %d: %d entries, model %d", step, tab.n, len(model))
			}
		}
	}
}
