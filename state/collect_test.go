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

// radixSort orders like a stable sort by (hi, lo, klen), whether it splits the slice into buckets or not, for
// keys whose varying bytes are few or many, even or odd in number.
func TestRadixSortMatchesStableSort(t *testing.T) {
	defer func(n int) { radixBucketMin = n }(radixBucketMin)
	rng := rand.New(rand.NewPCG(7, 8))
	for _, bucketMin := range []int{1 << 15, 64} {
		radixBucketMin = bucketMin
		for _, n := range []int{0, 1, 2, 100, 5000, 70000} {
			for _, mask := range [][2]uint64{{0xFF00, 0}, {0x7F00_0000_0000_0000 | 0xFFFF, 0}, {0x7F << 48, 0xFF << 56},
				{0x7F << 48, 0xFFFF_FF00_0000_0000}, {^uint64(0), ^uint64(0)}} {
				a := make([]sortKey, n)
				for i := range a {
					a[i] = sortKey{hi: rng.Uint64() & mask[0], lo: rng.Uint64() & mask[1], i: int32(i), klen: uint16(11 + rng.IntN(2))}
				}
				want := slices.Clone(a)
				slices.SortStableFunc(want, func(x, y sortKey) int {
					if c := cmpUint(x.hi, y.hi); c != 0 {
						return c
					}
					if c := cmpUint(x.lo, y.lo); c != 0 {
						return c
					}
					return int(x.klen) - int(y.klen)
				})
				radixSort(a)
				if !slices.Equal(a, want) {
					t.Fatalf("bucketMin %d, n %d, mask %x: not the stable order", bucketMin, n, mask)
				}
			}
		}
	}
}

func cmpUint(x, y uint64) int {
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}
