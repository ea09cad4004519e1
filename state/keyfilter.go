package state

import (
	"hash/maphash"
	"sync/atomic"

	"github.com/clinksql/clinksql/internal/prefault"
)

// keyFilter is an in-memory Bloom filter over every key a Pebble store may hold: a key it rejects is not in
// Pebble, so Get and GetMany answer "absent" without asking Pebble (whose own bloom filters are one per table, each
// checked through a table iterator, and whose filter blocks leave the block cache once the state outgrows it). A
// store whose keys are mostly new (a GROUP BY over a growing key space) would otherwise pay a Pebble lookup per
// row.
//
// It grows by generations: each is a blocked Bloom filter (one 64-byte block per key, 20 bits per key at
// capacity and 12 probes: about 0.02% false positives, each of which costs a Pebble lookup) with four times the
// capacity of the one before; a lookup probes each generation's one block. Keys are added when they leave the dirty
// map (WriteBatch, Capture), so every key of a layer under it is in the filter. Adds and lookups are both on the
// operator goroutine only (plain loads and stores: an atomic OR per bit cost more than the cache miss).
type keyFilter struct {
	gens []*filterGen
	// bytes is the memory of all generations, counted against the store's cache budget (read by the snapshot
	// worker).
	bytes atomic.Int64
}

type filterGen struct {
	blocks   []uint64 // 8 words (512 bits) per block
	nblocks  uint64
	capacity int64
	count    int64
}

const (
	filterBitsPerKey  = 20
	filterFirstKeys   = 1 << 18
	filterGrowth      = 4
	filterProbes      = 12
	filterBlockWords  = 8
	filterBlockBits   = filterBlockWords * 64
	filterBitIndexLen = 9 // log2(filterBlockBits)
)

var filterSeed = maphash.MakeSeed()

func newKeyFilter() *keyFilter { return &keyFilter{} }

func newFilterGen(capacity int64) *filterGen {
	nblocks := uint64((capacity*filterBitsPerKey + filterBlockBits - 1) / filterBlockBits)
	return &filterGen{blocks: prefault.Slice(make([]uint64, nblocks*filterBlockWords)), nblocks: nblocks, capacity: capacity}
}

// probe returns the block's first word and the bits in it of hash h.
func (g *filterGen) block(h uint64) []uint64 {
	b := (h >> 32) * g.nblocks >> 32
	return g.blocks[b*filterBlockWords : (b+1)*filterBlockWords : (b+1)*filterBlockWords]
}

// probeBits returns the source of a key's bit positions in its block: 9 bits per probe, from two 64-bit mixes of
// h (the block is chosen by h's high half).
func probeBits(h uint64) (uint64, uint64) {
	return h * 0x9E3779B97F4A7C15, (h ^ h>>29) * 0xBF58476D1CE4E5B9
}

const probesPerWord = 64 / filterBitIndexLen // 7

func (g *filterGen) add(h uint64) {
	blk := g.block(h)
	m, m2 := probeBits(h)
	for p := range filterProbes {
		if p == probesPerWord {
			m = m2
		}
		bit := m & (filterBlockBits - 1)
		blk[bit>>6] |= 1 << (bit & 63)
		m >>= filterBitIndexLen
	}
}

func (g *filterGen) mayContain(h uint64) bool {
	blk := g.block(h)
	m, m2 := probeBits(h)
	for p := range filterProbes {
		if p == probesPerWord {
			m = m2
		}
		bit := m & (filterBlockBits - 1)
		if blk[bit>>6]&(1<<(bit&63)) == 0 { // most absent keys stop at the first or second probe
			return false
		}
		m >>= filterBitIndexLen
	}
	return true
}

func filterHash(key []byte) uint64 { return maphash.Bytes(filterSeed, key) }

// mayContain reports whether key may have been added; false is certain.
func (f *keyFilter) mayContain(key []byte) bool { return f.mayContainHash(filterHash(key)) }

// filterPrefetch is how many keys GetMany hashes and prefetches at a time.
const filterPrefetch = 256

// prefetch appends the hashes of keys to hs and touches their block in every generation, so that the cache misses
// of a batch's lookups overlap (no load depends on another) instead of each stalling its lookup in turn.
func (f *keyFilter) prefetch(keys [][]byte, hs []uint64) []uint64 {
	for _, k := range keys {
		hs = append(hs, filterHash(k))
	}
	var x uint64
	for _, g := range f.gens {
		if len(g.blocks) < 1<<15 { // 256 KB: stays in cache anyway
			continue
		}
		for _, h := range hs {
			x += g.block(h)[0]
		}
	}
	prefetchSink.Store(x)
	return hs
}

// prefetchSink keeps prefetch's loads.
var prefetchSink atomic.Uint64

// mayContainHash is mayContain of a key whose filterHash is h.
func (f *keyFilter) mayContainHash(h uint64) bool {
	for _, g := range f.gens {
		if g.mayContain(h) {
			return true
		}
	}
	return false
}

// adder returns a function that adds keys; call done when finished (adds are applied in chunks, whose blocks
// are touched first so that their cache misses overlap).
func (f *keyFilter) adder() (add func(key []byte), done func()) {
	var cur *filterGen
	if n := len(f.gens); n > 0 {
		cur = f.gens[n-1]
	}
	hs := make([]uint64, 0, filterPrefetch)
	flush := func() {
		if cur != nil && len(cur.blocks) >= 1<<15 {
			var x uint64
			for _, h := range hs {
				x += cur.block(h)[0]
			}
			prefetchSink.Store(x)
		}
		for _, h := range hs {
			if cur == nil || cur.count >= cur.capacity {
				c := int64(filterFirstKeys)
				if cur != nil {
					c = cur.capacity * filterGrowth
				}
				cur = newFilterGen(c)
				f.gens = append(f.gens, cur)
				f.bytes.Add(int64(len(cur.blocks)) * 8)
			}
			cur.add(h)
			cur.count++
		}
		hs = hs[:0]
	}
	add = func(key []byte) {
		hs = append(hs, filterHash(key))
		if len(hs) == filterPrefetch {
			flush()
		}
	}
	return add, flush
}
