package state

import (
	"bytes"
	"hash/maphash"
	"math"
	"slices"
	"sort"
)

// Batch collects many writes to hand to a backend at once (WriteBatch): an operator that writes back its changed
// state at a barrier builds one instead of calling Put per key. The keys and values are copied end to end into one
// buffer and indexed by an open-addressing hash table, so the backend keeps the batch as it is, as an immutable
// layer (a run): no allocation, no map slot and no copy per entry, about 20 bytes of overhead per entry instead of
// a Go map's hundred, and a lookup costs one hashed probe. A later write of a key in the same batch replaces the
// earlier one.
type Batch struct {
	r run
}

// NewBatch returns a batch sized for about n entries of about dataBytes key and value bytes in all.
func NewBatch(n, dataBytes int) *Batch {
	b := &Batch{}
	b.r.data = make([]byte, 0, dataBytes)
	b.r.ents = make([]runEntry, 0, n)
	b.r.resize(n)
	return b
}

// Len is the number of keys in the batch.
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
	if 2*(len(r.ents)+1) > len(r.index) {
		r.resize(2 * len(r.ents))
	}
	off := uint32(len(r.data))
	r.data = append(r.data, key...)
	r.data = append(r.data, value...)
	e := runEntry{off: off, klen: uint32(len(key)), vlen: uint32(len(value))}
	if del {
		e.vlen = runDeleted
	}
	h := maphash.Bytes(filterSeed, key)
	mask := uint64(len(r.index) - 1)
	tag := uint32(h>>32) | 1 // never 0: a slot of 0 is empty
	for i := h & mask; ; i = (i + 1) & mask {
		s := r.index[i]
		if s == 0 {
			r.ents = append(r.ents, e)
			r.index[i] = uint64(tag)<<32 | uint64(len(r.ents))
			return
		}
		if uint32(s>>32) == tag {
			j := uint32(s) - 1
			if bytes.Equal(r.key(j), key) {
				// The newer write wins: a new entry, so that ents stays in write order; the old one is dead.
				r.ents = append(r.ents, e)
				r.index[i] = uint64(tag)<<32 | uint64(len(r.ents))
				r.replaced++
				return
			}
		}
	}
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
	for i := range r.ents {
		j := uint32(i)
		if !r.live(j) {
			continue
		}
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

// run is an immutable in-memory layer made from a Batch: entries end to end in data, unique keys (an entry a
// later write replaced is not in the index), and an open-addressing index of (hash tag, entry + 1).
type run struct {
	data  []byte
	ents  []runEntry
	index []uint64
	// replaced counts the entries a later write of their key replaced (still in ents, no longer in index).
	replaced int
	// sorted (the live entries in ascending key order) is built on the first Scan, by the operator goroutine
	// only; a snapshot worker reading the run never touches it.
	sorted []uint32
}

type runEntry struct {
	off, klen, vlen uint32
}

const runDeleted = math.MaxUint32 // runEntry.vlen of a delete

func (r *run) resize(n int) {
	size := 16
	for size < 2*n {
		size *= 2
	}
	r.index = make([]uint64, size)
	mask := uint64(size - 1)
	for j := range r.ents {
		h := maphash.Bytes(filterSeed, r.key(uint32(j)))
		tag := uint32(h>>32) | 1
		for i := h & mask; ; i = (i + 1) & mask {
			s := r.index[i]
			// An entry replaces an older one of its key (ents is in write order).
			if s == 0 || (uint32(s>>32) == tag && bytes.Equal(r.key(uint32(s)-1), r.key(uint32(j)))) {
				r.index[i] = uint64(tag)<<32 | uint64(j+1)
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

// find returns the entry of key.
func (r *run) find(key []byte) (uint32, bool) {
	if len(r.ents) == 0 {
		return 0, false
	}
	h := maphash.Bytes(filterSeed, key)
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

// live reports whether entry j is the newest of its key (a replaced entry stays in ents).
func (r *run) live(j uint32) bool {
	if r.replaced == 0 {
		return true
	}
	i, ok := r.find(r.key(j))
	return ok && i == j
}

func (r *run) get(key []byte) (entry, bool) {
	j, ok := r.find(key)
	if !ok {
		return entry{}, false
	}
	return r.entry(j), true
}

func (r *run) size() int64 { return int64(cap(r.data)) + int64(cap(r.ents))*12 + int64(len(r.index))*8 }
func (r *run) count() int  { return len(r.ents) }

func (r *run) eachKey(fn func(k string)) {
	for j := range r.ents {
		if r.live(uint32(j)) {
			fn(ownedString(r.key(uint32(j))))
		}
	}
}

func (r *run) appendEntries(kvs []keyEntry) []keyEntry {
	for j := range r.ents {
		if r.live(uint32(j)) {
			kvs = append(kvs, keyEntry{ownedString(r.key(uint32(j))), r.entry(uint32(j))})
		}
	}
	return kvs
}

func (r *run) prepareScan() {
	if r.sorted != nil || len(r.ents) == 0 {
		return
	}
	s := make([]uint32, 0, len(r.ents))
	for j := range r.ents {
		if r.live(uint32(j)) {
			s = append(s, uint32(j))
		}
	}
	slices.SortFunc(s, func(a, b uint32) int { return bytes.Compare(r.key(a), r.key(b)) })
	r.sorted = s
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

// layer is one in-memory layer of a Pebble store: a memtable (Put and Delete) or a run (WriteBatch).
type layer interface {
	get(key []byte) (entry, bool)
	size() int64
	count() int
	eachKey(fn func(k string))
	appendEntries(kvs []keyEntry) []keyEntry
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
