package state

import (
	"bytes"
	"encoding/binary"
	"slices"
	"sync/atomic"
)

// A persist writes the newest entry of every key its snapshots hold, in ascending key order, into one sstable.
// collectSorted lists the entries as sortKeys (the first 16 bytes of the key inline, its length, and where the
// entry lives) and sorts them with a radix sort, which skips the bytes all keys share (the state id, the high bytes
// of a small integer key); keys longer than 16 bytes that share their first 16 are ordered by a comparison sort
// afterwards. The sstable writer then reads the entries in chunks gathered in that order (gather), so that the
// random reads of a chunk overlap instead of each stalling the writer.

// keyEntry is one entry of a memtable layer being persisted.
type keyEntry struct {
	k string
	e entry
}

// sortKey is one entry being persisted.
type sortKey struct {
	hi, lo uint64 // the key's first 16 bytes, big endian, zero padded
	i      int32  // the entry in its source
	src    uint16 // its source (layer), newest first: equal keys sort newest first
	klen   uint16 // the key's length, up to 0xFFFF
}

// collectSource is one layer being persisted: a run, read in place, or a memtable's entries.
type collectSource struct {
	r   *run
	kvs []keyEntry
}

type collected struct {
	srcs []collectSource
}

func (c *collected) key(o sortKey) []byte {
	s := &c.srcs[o.src]
	if s.r != nil {
		return s.r.key(uint32(o.i))
	}
	return stringBytes(s.kvs[o.i].k)
}

func (c *collected) entry(o sortKey) entry {
	s := &c.srcs[o.src]
	if s.r != nil {
		return s.r.entry(uint32(o.i))
	}
	return s.kvs[o.i].e
}

func makeSortKey(k []byte, i int, src int) sortKey {
	var b [16]byte
	copy(b[:], k)
	return sortKey{hi: binary.BigEndian.Uint64(b[:8]), lo: binary.BigEndian.Uint64(b[8:]), i: int32(i), src: uint16(src),
		klen: uint16(min(len(k), 0xFFFF))}
}

// collectSorted returns the entries of the snapshots' layers in ascending key order, the newest entry of a key
// first (writeTable keeps only that one).
func collectSorted(snaps []*pebbleSnapshot) (*collected, []sortKey) {
	var layers []layer // newest first
	n := 0
	for i := len(snaps) - 1; i >= 0; i-- {
		ls := snaps[i].layers
		for j := len(ls) - 1; j >= 0; j-- {
			layers = append(layers, ls[j])
			n += ls[j].count()
		}
	}
	if len(layers) > 0xFFFF {
		panic("state: persisting more than 65535 layers at once")
	}
	c := &collected{srcs: make([]collectSource, len(layers))}
	order := make([]sortKey, 0, n)
	for src, l := range layers {
		switch l := l.(type) {
		case *run:
			c.srcs[src].r = l
			for j := len(l.ents) - 1; j >= 0; j-- { // newest first, like the layers
				order = append(order, makeSortKey(l.key(uint32(j)), j, src))
			}
		case *memtable:
			kvs := l.appendEntries(make([]keyEntry, 0, len(l.m)))
			c.srcs[src].kvs = kvs
			for j := range kvs {
				order = append(order, makeSortKey(stringBytes(kvs[j].k), j, src))
			}
		}
	}
	// order is by source, newest first, and the radix sort is stable: equal keys stay newest first.
	radixSort(order)
	fixLongKeys(c, order)
	return c, order
}

// radixSort sorts by (hi, lo, klen), stably: an LSD radix sort over the bytes that are not the same in every key.
func radixSort(a []sortKey) {
	if len(a) < 2 {
		return
	}
	// All the histograms in one pass: 2 length bytes, then lo's 8 bytes, then hi's, least significant first.
	var counts [18][256]int
	for i := range a {
		k := &a[i]
		counts[0][byte(k.klen)]++
		counts[1][byte(k.klen>>8)]++
		for d := range 8 {
			counts[2+d][byte(k.lo>>(8*d))]++
			counts[10+d][byte(k.hi>>(8*d))]++
		}
	}
	tmp := make([]sortKey, len(a))
	src, dst := a, tmp
	for d := range 18 {
		c := &counts[d]
		trivial := false
		for _, x := range c {
			if x == len(a) { // every key has the same byte here
				trivial = true
				break
			}
		}
		if trivial {
			continue
		}
		var offs [256]int
		sum := 0
		for b, x := range c {
			offs[b] = sum
			sum += x
		}
		for i := range src {
			k := &src[i]
			var b byte
			switch {
			case d < 2:
				b = byte(k.klen >> (8 * d))
			case d < 10:
				b = byte(k.lo >> (8 * (d - 2)))
			default:
				b = byte(k.hi >> (8 * (d - 10)))
			}
			dst[offs[b]] = *k
			offs[b]++
		}
		src, dst = dst, src
	}
	if &src[0] != &a[0] {
		copy(a, src)
	}
}

// fixLongKeys orders the entries whose keys share their first 16 bytes and are longer than that (the radix sort
// ordered them by length): by key, then newest first.
func fixLongKeys(c *collected, a []sortKey) {
	for i := 0; i < len(a); {
		j := i + 1
		long := a[i].klen > 16
		for j < len(a) && a[j].hi == a[i].hi && a[j].lo == a[i].lo {
			long = long || a[j].klen > 16
			j++
		}
		if long && j-i > 1 {
			slices.SortStableFunc(a[i:j], func(x, y sortKey) int {
				if r := bytes.Compare(c.key(x), c.key(y)); r != 0 {
					return r
				}
				return int(x.src) - int(y.src)
			})
		}
		i = j
	}
}

// sameKey reports whether two neighbours of a sorted order have the same key.
func (c *collected) sameKey(x, y sortKey) bool {
	if x.hi != y.hi || x.lo != y.lo || x.klen != y.klen {
		return false
	}
	return x.klen <= 16 || bytes.Equal(c.key(x), c.key(y))
}

// gathered is a chunk of the sorted entries copied end to end.
type gathered struct {
	buf  []byte
	ents []gatheredEntry
}

type gatheredEntry struct {
	klen, vlen int32 // vlen < 0: a delete
}

// gather copies the entries of order (the newest of each key only; prev is the entry before order[0], or i < 0)
// into g, which it resets. The loop does nothing but copy, so the cache misses of consecutive entries overlap.
func (c *collected) gather(g *gathered, order []sortKey, prev sortKey) {
	g.buf, g.ents = g.buf[:0], g.ents[:0]
	// Touch the runs' entry headers, then their data, in passes of independent loads: the cache misses of a
	// chunk overlap, and the copy below finds everything in cache.
	var x uint32
	for _, o := range order {
		if r := c.srcs[o.src].r; r != nil {
			x += r.ents[o.i].off
		}
	}
	for _, o := range order {
		if r := c.srcs[o.src].r; r != nil {
			if off := r.ents[o.i].off; off < uint32(len(r.data)) {
				x += uint32(r.data[off])
			}
		}
	}
	gatherSink.Store(x)
	for _, o := range order {
		if prev.i >= 0 && c.sameKey(prev, o) {
			prev = o
			continue
		}
		prev = o
		k := c.key(o)
		e := c.entry(o)
		g.buf = append(g.buf, k...)
		if e.del {
			g.ents = append(g.ents, gatheredEntry{int32(len(k)), -1})
			continue
		}
		g.buf = append(g.buf, e.v...)
		g.ents = append(g.ents, gatheredEntry{int32(len(k)), int32(len(e.v))})
	}
}

// gatherSink keeps gather's touching loads.
var gatherSink atomic.Uint32
