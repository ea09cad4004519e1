package state

import (
	"slices"
	"sort"
	"strings"
	"unsafe"
)

// entry is a key's newest value in one in-memory layer. del marks a tombstone: it hides the key in older layers
// (pending snapshots, Pebble) until it reaches Pebble.
type entry struct {
	v   []byte
	del bool
}

// memtable is an in-memory layer: a hash map for point access (the per-row path) plus a sorted key index that is
// only maintained when someone scans. Keys added since the index was last rebuilt sit in fresh; a Scan sorts the
// few fresh keys it has not seen yet and folds them into sorted once there are more than about sqrt(len(sorted)),
// so interleaved insert+scan costs O(sqrt n) per scan and pure Put workloads pay one append per new key.
//
// The map is only read by other goroutines (a snapshot worker persisting a captured memtable); the index fields
// are touched only by the owning goroutine.
type memtable struct {
	m           map[string]entry
	sorted      []string // ascending; may still hold keys since removed from m
	fresh       []string // keys inserted into m since the last rebuild; fresh[:freshSorted] is ascending
	freshSorted int
	stale       int // removals from m since the last rebuild
	frozen      bool
	bytes       int64 // approximate footprint: key and first value of each key, plus overhead
}

// memEntryOverhead approximates what a key costs beyond its key and value bytes: its map slot (48 bytes at a
// load of 7/8), its index entry, and the allocator rounding up the key and the value.
const memEntryOverhead = 96

func newMemtable() *memtable { return &memtable{m: make(map[string]entry)} }

// ownedString views b as a string without copying. Only for slices the backend owns (Put takes ownership of its
// key), which nobody modifies afterwards.
func ownedString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// stringBytes views s as a read-only byte slice.
func stringBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

func (t *memtable) get(key []byte) (entry, bool) {
	e, ok := t.m[string(key)]
	return e, ok
}

// set stores e under key, which the memtable now owns.
func (t *memtable) set(key []byte, e entry) {
	k := ownedString(key)
	n := len(t.m)
	t.m[k] = e
	if len(t.m) != n { // a new key: one map operation instead of a lookup plus an insert
		t.fresh = append(t.fresh, k)
		t.bytes += int64(len(k) + len(e.v) + memEntryOverhead)
	}
}

// remove drops key (the memory backend has no older layer to hide, so it needs no tombstone).
func (t *memtable) remove(key []byte) {
	if _, ok := t.m[string(key)]; ok {
		delete(t.m, string(key))
		t.stale++
	}
}

// prepareScan brings the index up to date enough for iter.
func (t *memtable) prepareScan() {
	if tail := t.fresh[t.freshSorted:]; len(tail) > 16 {
		slices.Sort(t.fresh)
	} else {
		for i := t.freshSorted; i < len(t.fresh); i++ { // insertion sort of the few keys added since the last scan
			k := t.fresh[i]
			j, _ := slices.BinarySearch(t.fresh[:i], k)
			copy(t.fresh[j+1:i+1], t.fresh[j:i])
			t.fresh[j] = k
		}
	}
	t.freshSorted = len(t.fresh)
	limit := 64
	for limit*limit < len(t.sorted) {
		limit *= 2
	}
	if (t.frozen && len(t.fresh) > 0) || len(t.fresh) > limit || t.stale > len(t.sorted)/2+64 {
		t.rebuild()
	}
}

// rebuild merges fresh into sorted, dropping duplicates and keys no longer in the map.
func (t *memtable) rebuild() {
	out := make([]string, 0, len(t.m))
	a, b := t.sorted, t.fresh
	for len(a) > 0 || len(b) > 0 {
		var k string
		if len(b) == 0 || (len(a) > 0 && a[0] <= b[0]) {
			k, a = a[0], a[1:]
		} else {
			k, b = b[0], b[1:]
		}
		if len(out) > 0 && out[len(out)-1] == k {
			continue
		}
		if _, ok := t.m[k]; ok {
			out = append(out, k)
		}
	}
	t.sorted, t.fresh, t.freshSorted, t.stale = out, nil, 0, 0
}

// prefixRange returns the part of the ascending keys that start with prefix.
func prefixRange(keys []string, prefix string) []string {
	lo := sort.SearchStrings(keys, prefix)
	hi := lo + sort.Search(len(keys)-lo, func(i int) bool { return !strings.HasPrefix(keys[lo+i], prefix) })
	return keys[lo:hi]
}

// memIter walks a memtable's keys with a prefix in ascending order, tombstones included. Call prepareScan first.
type memIter struct {
	t    *memtable
	a, b []string
	k    string
	e    entry
	ok   bool
}

func (t *memtable) iter(prefix []byte) *memIter {
	p := string(prefix)
	it := &memIter{t: t, a: prefixRange(t.sorted, p), b: prefixRange(t.fresh, p)}
	it.next()
	return it
}

func (it *memIter) valid() bool             { return it.ok }
func (it *memIter) key() []byte             { return stringBytes(it.k) }
func (it *memIter) current() (entry, error) { return it.e, nil }
func (it *memIter) advance() error          { it.next(); return nil }

func (it *memIter) next() {
	prev, had := it.k, it.ok
	for len(it.a) > 0 || len(it.b) > 0 {
		var k string
		if len(it.b) == 0 || (len(it.a) > 0 && it.a[0] <= it.b[0]) {
			k, it.a = it.a[0], it.a[1:]
		} else {
			k, it.b = it.b[0], it.b[1:]
		}
		if had && k == prev {
			continue
		}
		if e, ok := it.t.m[k]; ok {
			it.k, it.e, it.ok = k, e, true
			return
		}
	}
	it.k, it.e, it.ok = "", entry{}, false
}
