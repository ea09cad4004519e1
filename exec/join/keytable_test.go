package join

import (
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/clinksql/clinksql/exec"
)

// TestKeyStateLayout keeps the hot fields of a key's entries on the lines the probe and append loops expect (see
// keyEntry): a probe's on line 0, a one-row key's inline slot and row and an append's on line 1.
func TestKeyStateLayout(t *testing.T) {
	var e keyEntry
	if s := unsafe.Sizeof(e); s%64 != 0 {
		t.Fatalf("keyEntry is %d bytes, not a whole number of cache lines", s)
	}
	if o := unsafe.Offsetof(e.arena) + unsafe.Sizeof(e.arena); o > 64 {
		t.Fatalf("a probe's fields end at byte %d, past the first cache line", o)
	}
	if o := unsafe.Offsetof(e.chunked); o >= 64 {
		t.Fatalf("chunked is at byte %d, past the first cache line", o)
	}
	if o := unsafe.Offsetof(e.chain); o >= 64 {
		t.Fatalf("chain is at byte %d, past the first cache line", o)
	}
	if o := unsafe.Offsetof(e.isl); o != 64 {
		t.Fatalf("the inline slot is at byte %d, not the start of the second cache line", o)
	}
	for name, end := range map[string]uintptr{
		"iarena":   unsafe.Offsetof(e.iarena) + unsafe.Sizeof(e.iarena),
		"nfresh":   unsafe.Offsetof(e.nfresh) + unsafe.Sizeof(e.nfresh),
		"dirtyIdx": unsafe.Offsetof(e.dirtyIdx) + unsafe.Sizeof(e.dirtyIdx),
		"isDirty":  unsafe.Offsetof(e.isDirty) + unsafe.Sizeof(e.isDirty),
		"side":     unsafe.Offsetof(e.side) + unsafe.Sizeof(e.side),
	} {
		if end > 128 {
			t.Fatalf("%s ends at byte %d, past the second cache line", name, end)
		}
	}
	if s := unsafe.Sizeof(keyState{}); s != 512 {
		t.Fatalf("keyState is %d bytes, want 512 (keyEntryOverhead and the slab assume it)", s)
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

// The time joins copy what they keep of their input; the regular join is not declared so (exec.InputCopier).
var (
	_ exec.InputCopier = (*windowJoin)(nil)
	_ exec.InputCopier = (*intervalJoin)(nil)
)
