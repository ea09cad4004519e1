package state

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// collectSorted orders entries as a comparison sort would: ascending keys (short keys, keys with trailing zero
// bytes, and long keys sharing their first 16 bytes included), the newest layer's entry of a key first.
func TestCollectSortedMatchesComparisonSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	prefixes := []string{"", "a", "a\x00", "0123456789abcdef", "0123456789abcdeg", "0123456789abcde"}
	randKey := func() []byte {
		k := []byte(prefixes[rng.IntN(len(prefixes))])
		for n := rng.IntN(4); n > 0; n-- {
			k = append(k, "\x00a\xff"[rng.IntN(3)])
		}
		return k
	}
	var snaps []*pebbleSnapshot
	type want struct {
		key   string
		layer int // newest first
		val   string
	}
	var all []want
	nlayers := 0
	for s := 0; s < 3; s++ {
		snap := &pebbleSnapshot{}
		for l := 0; l < 2; l++ {
			var ly layer
			if (s+l)%2 == 0 {
				wb := NewBatch(0, 0)
				for n := rng.IntN(200); n > 0; n-- {
					wb.Put(randKey(), []byte(fmt.Sprint(s, l, n)))
				}
				ly = &wb.r
			} else {
				t := newMemtable()
				for n := rng.IntN(200); n > 0; n-- {
					t.set(randKey(), entry{v: []byte(fmt.Sprint(s, l, n))})
				}
				ly = t
			}
			snap.layers = append(snap.layers, ly)
			nlayers++
		}
		snaps = append(snaps, snap)
	}
	// The expected order: every live entry, by key, then newest layer first.
	rank := nlayers
	for _, s := range snaps {
		for _, l := range s.layers {
			rank--
			var keys []string
			switch l := l.(type) {
			case *run:
				seen := map[string]bool{}
				for j := range l.ents {
					if k := string(l.key(uint32(j))); !seen[k] {
						seen[k] = true
						keys = append(keys, k)
					}
				}
			case *memtable:
				for k := range l.m {
					keys = append(keys, k)
				}
			}
			for _, k := range keys {
				e, _ := l.get([]byte(k))
				all = append(all, want{k, rank, string(e.v)})
			}
		}
	}
	slices.SortFunc(all, func(a, b want) int {
		if c := bytes.Compare([]byte(a.key), []byte(b.key)); c != 0 {
			return c
		}
		return a.layer - b.layer
	})
	c, sorted := collectSorted(snaps)
	var order []sortKey // what writeTable writes: the first entry of each key
	for i, o := range sorted {
		if i == 0 || !c.sameKey(sorted[i-1], o) {
			order = append(order, o)
		}
	}
	var dedup []want
	for i, w := range all {
		if i == 0 || all[i-1].key != w.key {
			dedup = append(dedup, w)
		}
	}
	all = dedup
	if len(order) != len(all) {
		t.Fatalf("%d entries, want %d", len(order), len(all))
	}
	for i, o := range order {
		if k, v := string(c.key(o)), string(c.entry(o).v); k != all[i].key || v != all[i].val {
			t.Fatalf("entry %d: %q=%q, want %q=%q", i, k, v, all[i].key, all[i].val)
		}
	}
}
