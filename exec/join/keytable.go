package join

import (
	"unsafe"

	"github.com/clinksql/clinksql/internal/prefault"
)

// intTable is the regular join's working set for a key of one integer-like column: key value -> *keyState in one
// open-addressing table with linear probing (Fibonacci hashing of the value, load at most 1/2). A lookup that
// hits reads one slot, usually one cache line, where a Go map reads its group's control word and then the slot;
// with the working set spread over many keys each of those is a cache miss per row. Entries are removed only in
// bulk (keep), which rebuilds the table.
type intTable struct {
	slots []intSlot
	n     int
	shift uint8 // 64 - log2(len(slots))
}

// intSlot is one table slot; p == nil marks it empty.
type intSlot struct {
	k int64
	p *keyState
}

const intTableMin = 1 << 10

func newIntTable() *intTable {
	t := &intTable{}
	t.init(intTableMin)
	return t
}

func (t *intTable) init(size int) {
	t.slots = prefault.Slice(make([]intSlot, size))
	t.n = 0
	t.shift = uint8(64 - log2(size))
}

func log2(n int) int {
	b := 0
	for 1<<b < n {
		b++
	}
	return b
}

func (t *intTable) home(k int64) uint64 { return (uint64(k) * 0x9e3779b97f4a7c15) >> t.shift }

// get returns k's state, or nil.
func (t *intTable) get(k int64) *keyState {
	mask := uint64(len(t.slots) - 1)
	for i := t.home(k); ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.p == nil {
			return nil
		}
		if s.k == k {
			return s.p
		}
	}
}

// slotAt is the address of k's home slot, for prefetch.
func (t *intTable) slotAt(k int64) unsafe.Pointer { return unsafe.Pointer(&t.slots[t.home(k)]) }

// put adds k, which the table must not hold.
func (t *intTable) put(k int64, p *keyState) {
	if 2*(t.n+1) > len(t.slots) {
		old := t.slots
		t.init(2 * len(old))
		for _, s := range old {
			if s.p != nil {
				t.insert(s.k, s.p)
			}
		}
	}
	t.insert(k, p)
}

func (t *intTable) insert(k int64, p *keyState) {
	mask := uint64(len(t.slots) - 1)
	i := t.home(k)
	for t.slots[i].p != nil {
		i = (i + 1) & mask
	}
	t.slots[i] = intSlot{k, p}
	t.n++
}

// keep drops every entry for which keep returns false, in slot order, and rebuilds the table.
func (t *intTable) keep(keep func(*keyState) bool) {
	old := t.slots
	kept := old[:0:0]
	for _, s := range old {
		if s.p != nil && keep(s.p) {
			kept = append(kept, s)
		}
	}
	size := intTableMin
	for size < 2*len(kept) {
		size *= 2
	}
	t.init(size)
	for _, s := range kept {
		t.insert(s.k, s.p)
	}
}

// each calls fn for every entry, in slot order, until it returns false.
func (t *intTable) each(fn func(*keyState) bool) {
	for _, s := range t.slots {
		if s.p != nil && !fn(s.p) {
			return
		}
	}
}

// keySlab allocates keyStates in blocks of keySlabLen. A block is a large allocation (page-aligned) and a keyState
// a whole number of cache lines, so every keyState starts a line and a row's probe reads the lines it needs and no
// more. Forgotten keyStates are reused (zeroed) before the block grows.
type keySlab struct {
	block []keyState
	freed []*keyState
}

const keySlabLen = 256

func (s *keySlab) alloc() *keyState {
	if n := len(s.freed); n > 0 {
		k := s.freed[n-1]
		s.freed[n-1] = nil
		s.freed = s.freed[:n-1]
		*k = keyState{}
		return k
	}
	if len(s.block) == 0 {
		s.block = prefault.Slice(make([]keyState, keySlabLen))
	}
	k := &s.block[0]
	s.block = s.block[1:]
	return k
}

// free hands k back for reuse; nothing may refer to it any more.
func (s *keySlab) free(k *keyState) {
	*k = keyState{} // drop its references now
	s.freed = append(s.freed, k)
}
