package state

import (
	"bytes"
	"encoding/binary"
	"runtime"
	"slices"
	"sync"
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

// sortKey is one entry being persisted. An entry of a run also carries where its key and value are in the run's
// data, so that gather reads them without looking the entry up again (one cache miss per entry instead of two).
type sortKey struct {
	hi, lo uint64 // the key's first 16 bytes, big endian, zero padded
	i      int32  // the entry in its source
	off    uint32 // a run's entry: where its key starts in the run's data (its value follows)
	vlen   uint32 // a run's entry: its value's length, runDeleted for a delete
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
				k := makeSortKey(l.key(uint32(j)), j, src)
				k.off, k.vlen = l.ents[j].off, l.ents[j].vlen
				order = append(order, k)
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

// radixSort sorts by (hi, lo, klen), stably, over the bytes that are not the same in every key (16 bytes of key
// and 2 of length: digit 0 is klen's low byte, 2-9 lo's bytes and 10-17 hi's, least significant first).
//
// A large slice is first scattered by its most significant varying byte (for keyed state the key group's low
// byte), then each of those buckets is sorted on its own by an LSD radix sort over the other varying bytes.
// A bucket is a few hundred KB, so its passes run in the CPU's cache: one pass over main memory instead of one per
// varying byte (five or six for integer keys). The buckets are independent and are shared among GOMAXPROCS
// goroutines.
func radixSort(a []sortKey) {
	if len(a) < 2 {
		return
	}
	// The varying bytes: those where some key differs from the first.
	var dh, dl uint64
	var dk uint16
	f := a[0]
	for i := range a {
		k := &a[i]
		dh |= k.hi ^ f.hi
		dl |= k.lo ^ f.lo
		dk |= k.klen ^ f.klen
	}
	var digits []int // least significant first
	for d := range radixDigits {
		var x uint64
		switch {
		case d < 2:
			x = uint64(dk) >> (8 * d)
		case d < 10:
			x = dl >> (8 * (d - 2))
		default:
			x = dh >> (8 * (d - 10))
		}
		if byte(x) != 0 {
			digits = append(digits, d)
		}
	}
	if len(digits) == 0 {
		return
	}
	tmp := make([]sortKey, len(a))
	if len(a) < radixBucketMin || len(digits) == 1 {
		var counts [radixDigits][256]int
		for i := range a {
			for _, d := range digits {
				counts[d][digit(&a[i], d)]++
			}
		}
		lsdSort(a, tmp, digits, &counts)
		return
	}
	top := digits[len(digits)-1]
	var topCounts [256]int
	for i := range a {
		topCounts[digit(&a[i], top)]++
	}
	var ends [257]int
	sum := 0
	for b, x := range topCounts {
		ends[b] = sum
		sum += x
	}
	ends[256] = sum
	offs := ends
	scatter(a, tmp, top, &offs)
	rest := digits[:len(digits)-1]
	var next atomic.Int32
	sortBuckets := func() {
		var local [radixDigits][256]int
		for {
			b := int(next.Add(1)) - 1
			if b >= 256 {
				return
			}
			lo, hi := ends[b], ends[b+1]
			switch hi - lo {
			case 0:
			case 1:
				a[lo] = tmp[lo]
			default:
				bucketSort(tmp[lo:hi], a[lo:hi], rest, &local)
			}
		}
	}
	workers := min(runtime.GOMAXPROCS(0), len(a)/radixBucketMin+1)
	var wg sync.WaitGroup
	for range workers - 1 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sortBuckets()
		}()
	}
	sortBuckets()
	wg.Wait()
}

const radixDigits = 18

// radixBucketMin is the smallest slice radixSort splits into buckets (a variable for tests).
var radixBucketMin = 1 << 15

func trivialDigit(c *[256]int, n int) bool {
	for _, x := range c {
		if x == n {
			return true
		}
		if x != 0 {
			return false
		}
	}
	return false
}

// digit is byte d of k (see radixSort).
func digit(k *sortKey, d int) byte {
	switch {
	case d < 2:
		return byte(k.klen >> (8 * d))
	case d < 10:
		return byte(k.lo >> (8 * (d - 2)))
	default:
		return byte(k.hi >> (8 * (d - 10)))
	}
}

// scatter moves src into dst by digit d, stably; offs holds each byte's first position in dst and is advanced.
func scatter(src, dst []sortKey, d int, offs *[257]int) {
	switch {
	case d < 2:
		sh := 8 * uint(d)
		for i := range src {
			b := byte(src[i].klen >> sh)
			dst[offs[b]] = src[i]
			offs[b]++
		}
	case d < 10:
		sh := 8 * uint(d-2)
		for i := range src {
			b := byte(src[i].lo >> sh)
			dst[offs[b]] = src[i]
			offs[b]++
		}
	default:
		sh := 8 * uint(d-10)
		for i := range src {
			b := byte(src[i].hi >> sh)
			dst[offs[b]] = src[i]
			offs[b]++
		}
	}
}

// scatterCounted is scatter by digit d, with the positions taken from the digit's histogram.
func scatterCounted(src, dst []sortKey, d int, counts *[256]int) {
	var offs [257]int
	sum := 0
	for b, x := range counts {
		offs[b] = sum
		sum += x
	}
	scatter(src, dst, d, &offs)
}

// lsdSort sorts a by digits (least significant first) whose histograms are in counts, with tmp as scratch.
func lsdSort(a, tmp []sortKey, digits []int, counts *[radixDigits][256]int) {
	src, dst := a, tmp
	for _, d := range digits {
		scatterCounted(src, dst, d, &counts[d])
		src, dst = dst, src
	}
	if &src[0] != &a[0] {
		copy(a, src)
	}
}

// bucketSort sorts src by digits into dst (src is scratch): it takes its own histograms, and skips the digits that
// are the same throughout the bucket.
func bucketSort(src, dst []sortKey, digits []int, counts *[radixDigits][256]int) {
	for _, d := range digits {
		clear(counts[d][:])
	}
	for i := range src {
		k := &src[i]
		for _, d := range digits {
			counts[d][digit(k, d)]++
		}
	}
	var varying [radixDigits]int
	n := 0
	for _, d := range digits {
		if !trivialDigit(&counts[d], len(src)) {
			varying[n] = d
			n++
		}
	}
	if n == 0 {
		copy(dst, src)
		return
	}
	// lsdSort leaves the result in its first argument: sort src in place (dst as scratch), then copy; or, with an
	// odd number of passes, scatter the first one from src into dst and go on from there with src as scratch.
	if n%2 == 1 {
		d := varying[0]
		scatterCounted(src, dst, d, &counts[d])
		if n > 1 {
			lsdSort(dst, src, varying[1:n], counts)
		}
		return
	}
	lsdSort(src, dst, varying[:n], counts)
	copy(dst, src)
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
	// Touch the runs' data in a pass of independent loads: the cache misses of a chunk overlap, and the copy below
	// finds everything in cache.
	var x uint32
	for _, o := range order {
		if r := c.srcs[o.src].r; r != nil && o.off < uint32(len(r.data)) {
			x += uint32(r.data[o.off])
		}
	}
	gatherSink.Store(x)
	for _, o := range order {
		if prev.i >= 0 && c.sameKey(prev, o) {
			prev = o
			continue
		}
		prev = o
		if r := c.srcs[o.src].r; r != nil && o.klen < 0xFFFF { // a run's entry, key and value end to end
			klen := uint32(o.klen)
			if o.vlen == runDeleted {
				g.buf = append(g.buf, r.data[o.off:o.off+klen]...)
				g.ents = append(g.ents, gatheredEntry{int32(klen), -1})
				continue
			}
			g.buf = append(g.buf, r.data[o.off:o.off+klen+o.vlen]...)
			g.ents = append(g.ents, gatheredEntry{int32(klen), int32(o.vlen)})
			continue
		}
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
