package state

import (
	"math"
	"slices"
)

// Reserve adds a Put of key whose n value bytes the caller fills in later, through Value, before the batch is
// written (the bytes are not zeroed): an operator whose values are assembled from parts scattered in its memory
// (the regular join's rows of a key, appended in arrival order among other keys' rows) writes each part straight
// into its place in the batch, in the order it has them, instead of gathering each value into a buffer of its own
// that Put then copies. It returns the value's offset for Value.
func (b *Batch) Reserve(key []byte, n int) int {
	r := &b.r
	if n < 0 || len(r.data)+len(key)+n > math.MaxUint32 {
		panic("state: batch over 4 GB")
	}
	r.ents = append(r.ents, runEntry{off: uint32(len(r.data)), klen: uint32(len(key)), vlen: uint32(n)})
	r.data = append(r.data, key...)
	off := len(r.data)
	r.data = slices.Grow(r.data, n)[:off+n]
	return off
}

// Value returns the n value bytes at off (from Reserve), to fill in; the slice is valid until the next write to
// the batch.
func (b *Batch) Value(off, n int) []byte { return b.r.data[off : off+n : off+n] }
