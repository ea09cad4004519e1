package agg

import (
	"math/rand/v2"
	"testing"
)

// TestIntTableModel checks the group aggregate's int64 table against a Go map under random sets and deletes over a
// small key space (long probe chains, many backward shifts) and growth.
func TestIntTableModel(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 2))
	for _, space := range []int64{50, 3000, 1 << 20} {
		tab, model := newIntTable(0), map[int64]int32{}
		for op := 0; op < 200000; op++ {
			k := r.Int64N(space) - space/2
			switch r.IntN(3) {
			case 0:
				if _, ok := model[k]; !ok {
					g := int32(r.IntN(1 << 20))
					tab.set(k, g)
					model[k] = g
				}
			case 1:
				tab.delete(k)
				delete(model, k)
			}
			g, ok := tab.get(k)
			if mg, mok := model[k]; ok != mok || g != mg {
				t.Fatalf("space %d op %d key %d: got %d %v, want %d %v", space, op, k, g, ok, mg, mok)
			}
		}
		if tab.n != len(model) {
			t.Fatalf("space %d: %d entries, want %d", space, tab.n, len(model))
		}
		for k, g := range model {
			if tg, ok := tab.get(k); !ok || tg != g {
				t.Fatalf("space %d key %d: got %d %v, want %d", space, k, tg, ok, g)
			}
		}
	}
}
