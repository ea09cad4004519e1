package state

import (
	"bytes"
	"hash/maphash"
	"math"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
)

// Batch collects many writes to hand to a backend at once (WriteBatch): an operator that writes back its changed
// state at a barrier builds one instead of calling Put per key. The keys and values are copied end to end into one
// buffer, so the backend keeps the batch as it is, as an immutable layer (a run): no allocation, no map slot and no
// copy per entry, 12 bytes of overhead per entry (and 16 more once a lookup needs its hash index) instead of a Go
// map's hundred. A later write of a key in the same batch replaces the earlier one.
type Batch struct {
	r run
}

// NewBatch returns a batch sized for about n entries of about dataBytes key and value bytes in all.
func NewBatch(n, dataBytes int) *Batch {
	b := &Batch{}
	b.r.data = make([]byte, 0, dataBytes)
	b.r.ents = make([]runEntry, 0, n)
	return b
}

// Len is the number of writes in the batch.
func (b *Batch) Len() int { return len(b.r.ents) }

// Put sets key to value (both copied).
func (b *Batch) Put(key, value []byte) { b.add(key, value, false) }

// Delete removes key.
func (b *Batch) Delete(key []byte) { b.add(key, nil, true) }

func (b *Batch) add(key, value []byte, del bool) {
	r := &b.r
	if len(r.data)+len(key)+len(value) > math.MaxUint32 {
		panic("state: batch over 4 GB")
	}
	e := runEntry{off: uint32(len(r.data)), klen: uint32(len(key)), vlen: uint32(len(value))}
	if del {
		e.vlen = runDeleted
	}
	r.data = append(r.data, key...)
	r.data = append(r.data, value...)
	r.ents = append(r.ents, e)
}

// WriteBatch hands wb to b, which takes ownership (the caller must not use wb again). The batch's writes land
// after every earlier Put and Delete and before every later one, as if made one by one. A backend that cannot
// keep a batch whole gets them one by one.
func WriteBatch(b Backend, wb *Batch) {
	if w, ok := b.(interface{ writeRun(*run) }); ok {
		w.writeRun(&wb.r)
		return
	}
	r := &wb.r
	for i := range r.ents { // in write order: a later write of a key lands after the earlier one
		j := uint32(i)
		k := r.key(j)
		k = k[:len(k):len(k)]
		if r.ents[j].vlen == runDeleted {
			b.Delete(k)
		} else {
			v := r.value(j)
			b.Put(k, v[:len(v):len(v)])
		}
	}
}

// run is an immutable in-memory layer made from a Batch: its writes end to end in data, in write order (a key
// written twice has two entries; the later one wins). Most runs are only ever persisted: their keys are in the key
// filter from Capture on, so a lookup rarely reaches them. The hash index that lookups need, (hash tag, entry + 1)
// in open addressing, is built on the first one.
type run struct {
	data []byte
	ents []runEntry

	indexOnce sync.Once
	index     []uint64
	indexed   atomic.Bool // the index is built
	dups      bool        // some key has more than one entry (known once the index is built)
	// bloom is checked before the index is built: most lookups that reach a run are the key filter's false
	// positives (the key is in no layer), and a Bloom filter of the run's keys, about a tenth of the index's memory
	// and less to build, answers them without the index.
	bloomOnce sync.Once
	bloom     *filterGen
	// sorted (the newest entry of each key, in ascending key order) is built on the first Scan, by the operator
	// goroutine only; a snapshot worker reading the run never touches it.
	sorted []uint32
}

type runEntry struct {
	off, klen, vlen uint32
}

const runDeleted = math.MaxUint32 // runEntry.vlen of a delete

// buildIndex indexes the entries in write order, a later entry of a key replacing the earlier one.
func (r *run) buildIndex() {
	defer r.indexed.Store(true)
	size := 16
	for size < 2*len(r.ents) {
		size *= 2
	}
	r.index = make([]uint64, size)
	mask := uint64(size - 1)
	for j := range r.ents {
		k := r.key(uint32(j))
		h := maphash.Bytes(filterSeed, k)
		tag := uint32(h>>32) | 1 // never 0: a slot of 0 is empty
		for i := h & mask; ; i = (i + 1) & mask {
			s := r.index[i]
			if s == 0 {
				r.index[i] = uint64(tag)<<32 | uint64(j+1)
				break
			}
			if uint32(s>>32) == tag && bytes.Equal(r.key(uint32(s)-1), k) {
				r.index[i] = uint64(tag)<<32 | uint64(j+1)
				r.dups = true
				break
			}
		}
	}
}

func (r *run) key(j uint32) []byte {
	e := r.ents[j]
	return r.data[e.off : e.off+e.klen]
}

func (r *run) value(j uint32) []byte {
	e := r.ents[j]
	if e.vlen == runDeleted {
		return nil
	}
	s := e.off + e.klen
	return r.data[s : s+e.vlen : s+e.vlen]
}

func (r *run) entry(j uint32) entry {
	if r.ents[j].vlen == runDeleted {
		return entry{del: true}
	}
	return entry{v: r.value(j)}
}

// buildBloom adds every key to the run's Bloom filter.
func (r *run) buildBloom() {
	g := newFilterGen(int64(len(r.ents)))
	for j := range r.ents {
		g.add(filterHash(r.key(uint32(j))))
	}
	r.bloom = g
}

// find returns the newest entry of key.
func (r *run) find(key []byte) (uint32, bool) {
	if len(r.ents) == 0 {
		return 0, false
	}
	h := maphash.Bytes(filterSeed, key) // filterHash
	if !r.indexed.Load() {
		r.bloomOnce.Do(r.buildBloom)
		if !r.bloom.mayContain(h) {
			return 0, false
		}
	}
	r.indexOnce.Do(r.buildIndex)
	mask := uint64(len(r.index) - 1)
	tag := uint32(h>>32) | 1
	for i := h & mask; ; i = (i + 1) & mask {
		s := r.index[i]
		if s == 0 {
			return 0, false
		}
		if uint32(s>>32) == tag {
			if j := uint32(s) - 1; bytes.Equal(r.key(j), key) {
				return j, true
			}
		}
	}
}

func (r *run) get(key []byte) (entry, bool) {
	j, ok := r.find(key)
	if !ok {
		return entry{}, false
	}
	return r.entry(j), true
}

// size counts the Bloom filter (20 bits per entry) and the hash index as if built: they are, once lookups reach
// the run.
func (r *run) size() int64 { return int64(cap(r.data)) + int64(cap(r.ents))*(12+16+3) }
func (r *run) count() int  { return len(r.ents) }

// eachKey calls fn for each key, some maybe more than once.
func (r *run) eachKey(fn func(k string)) {
	for j := range r.ents {
		fn(ownedString(r.key(uint32(j))))
	}
}

func (r *run) prepareScan() {
	if r.sorted != nil || len(r.ents) == 0 {
		return
	}
	// All entries by key, the newest of a key first; then the first of each key.
	s := make([]uint32, len(r.ents))
	for j := range s {
		s[j] = uint32(len(s) - 1 - j)
	}
	slices.SortStableFunc(s, func(a, b uint32) int { return bytes.Compare(r.key(a), r.key(b)) })
	out := s[:0]
	for i, j := range s {
		if i > 0 && bytes.Equal(r.key(j), r.key(s[i-1])) {
			continue
		}
		out = append(out, j)
	}
	r.sorted = out
}

func (r *run) scan(prefix []byte) cursor {
	lo := sort.Search(len(r.sorted), func(i int) bool { return bytes.Compare(r.key(r.sorted[i]), prefix) >= 0 })
	return &runIter{r: r, rest: r.sorted[lo:], prefix: prefix}
}

type runIter struct {
	r      *run
	rest   []uint32
	prefix []byte
}

func (it *runIter) valid() bool {
	return len(it.rest) > 0 && bytes.HasPrefix(it.r.key(it.rest[0]), it.prefix)
}
func (it *runIter) key() []byte             { return it.r.key(it.rest[0]) }
func (it *runIter) current() (entry, error) { return it.r.entry(it.rest[0]), nil }
func (it *runIter) advance() error          { it.rest = it.rest[1:]; return nil }

// unindexed reports whether l is a run whose hash index was never built. A lookup in the clean generations stops
// at one (and reads Pebble, which has the same values) rather than index a million entries for one key; it must
// not go on to older generations, which may hold older values of the key.
func unindexed(l layer) bool {
	r, ok := l.(*run)
	return ok && !r.indexed.Load()
}

// layer is one in-memory layer of a Pebble store: a memtable (Put and Delete) or a run (WriteBatch).
type layer interface {
	get(key []byte) (entry, bool)
	size() int64
	count() int
	eachKey(fn func(k string))
	prepareScan()
	scan(prefix []byte) cursor
}

func (t *memtable) size() int64               { return t.bytes }
func (t *memtable) scan(prefix []byte) cursor { return t.iter(prefix) }
func (t *memtable) count() int                { return len(t.m) }

func (t *memtable) eachKey(fn func(k string)) {
	for k := range t.m {
		fn(k)
	}
}

func (t *memtable) appendEntries(kvs []keyEntry) []keyEntry {
	for k, e := range t.m {
		kvs = append(kvs, keyEntry{k, e})
	}
	return kvs
}

var _ = []layer{(*memtable)(nil), (*run)(nil)}
