package agg

import (
	"encoding/binary"
	"math/bits"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/clinksql/clinksql/exec/rowcodec"
	"github.com/clinksql/clinksql/internal/prefault"
)

// COUNT(DISTINCT x) over 8-byte values (integers, booleans, floats by canonical bits): each group's counted set is
// an intSet, an open-addressing table held in one slice, so an update costs a probe into that slice (the group's
// slice header sits in a dense array) rather than a Go map's header, directory and group. The state value format
// is distinct's (encodeWith/decodeWith): uvarint count, then per value a varint and, in the group form, uvarint
// copies; values in no particular order.

// intSlot is one slot of an intSet: value v with c copies; c == 0 is an empty slot.
type intSlot struct {
	v int64
	c int64
}

// intSet is a counted set of int64 values: linear probing over a power-of-two table, at most 3/4 full, deletion by
// backward shift (no tombstones), Fibonacci hashing so that runs of ids spread.
type intSet struct {
	slots []intSlot
	n     int
	shift uint8 // 64 - log2(len(slots))
}

func (s *intSet) home(v int64) int { return int((uint64(v) * 0x9E3779B97F4A7C15) >> s.shift) }

// add adds c copies of v (c > 0) and reports whether v is new.
func (s *intSet) add(v, c int64) bool {
	if (s.n+1)*4 > len(s.slots)*3 {
		s.resize(max(8, 2*len(s.slots)))
	}
	mask := len(s.slots) - 1
	for i := s.home(v); ; i = (i + 1) & mask {
		sl := &s.slots[i]
		if sl.c == 0 {
			sl.v, sl.c = v, c
			s.n++
			return true
		}
		if sl.v == v {
			sl.c += c
			return false
		}
	}
}

// sub takes one copy of v out and reports whether v is gone (false as well when it was not there).
func (s *intSet) sub(v int64) bool {
	if s.n == 0 {
		return false
	}
	mask := len(s.slots) - 1
	i := s.home(v)
	for ; ; i = (i + 1) & mask {
		sl := &s.slots[i]
		if sl.c == 0 {
			return false
		}
		if sl.v == v {
			if sl.c > 1 {
				sl.c--
				return false
			}
			break
		}
	}
	// Backward shift: move later slots of the probe run into the hole when their home is not in (hole, slot].
	for j := i; ; {
		j = (j + 1) & mask
		sl := s.slots[j]
		if sl.c == 0 {
			break
		}
		k := s.home(sl.v)
		if (i <= j && i < k && k <= j) || (i > j && (i < k || k <= j)) {
			continue
		}
		s.slots[i] = sl
		i = j
	}
	s.slots[i] = intSlot{}
	s.n--
	return true
}

func (s *intSet) resize(size int) {
	old := s.slots
	s.slots = prefault.Slice(make([]intSlot, size))
	s.shift = uint8(64 - bits.TrailingZeros(uint(size)))
	s.n = 0
	for _, sl := range old {
		if sl.c != 0 {
			s.add(sl.v, sl.c)
		}
	}
}

type distinctInt struct {
	form stateForm
	sets []intSet
	scr  []int64
}

func (a *distinctInt) grow()         { a.sets = append(a.sets, intSet{}) }
func (a *distinctInt) reset(g int32) { a.sets[g] = intSet{} }

func (a *distinctInt) update(col arrow.Array, rows, grps []int32, neg []bool) error {
	vals := distinctInts(col, &a.scr)
	nulls := col.NullN() > 0
	for j, r := range rows {
		if nulls && !col.IsValid(int(r)) {
			continue
		}
		if neg != nil && neg[j] {
			a.sets[grps[j]].sub(vals[r])
		} else {
			a.sets[grps[j]].add(vals[r], 1)
		}
	}
	return nil
}

func (a *distinctInt) merge(dst, src int32) error {
	for _, sl := range a.sets[src].slots {
		if sl.c != 0 {
			a.sets[dst].add(sl.v, sl.c)
		}
	}
	return nil
}

func (a *distinctInt) appendTo(b array.Builder, g int32) error {
	b.(*array.Int64Builder).Append(int64(a.sets[g].n))
	return nil
}

func (a *distinctInt) result(dst []byte, g int32) ([]byte, error) {
	return rowcodec.AppendOrderedInt(append(dst, 1), int64(a.sets[g].n)), nil
}

func (a *distinctInt) encode(dst []byte, g int32) []byte {
	s := &a.sets[g]
	dst = binary.AppendUvarint(dst, uint64(s.n))
	for _, sl := range s.slots {
		if sl.c == 0 {
			continue
		}
		dst = binary.AppendVarint(dst, sl.v)
		if a.form == groupForm {
			dst = binary.AppendUvarint(dst, uint64(sl.c))
		}
	}
	return dst
}

func (a *distinctInt) decode(src []byte, g int32) ([]byte, error) {
	n, rest, err := rowcodec.GetUvarint(src)
	if err != nil {
		return nil, err
	}
	s := intSet{}
	if n > 0 {
		size := 8
		for uint64(size)*3 < n*4+4 && size < 1<<40 {
			size *= 2
		}
		if uint64(size) <= 4*uint64(len(rest))+8 { // do not trust a corrupt count with a huge table
			s.resize(size)
		}
	}
	for ; n > 0; n-- {
		var v int64
		c := uint64(1)
		if v, rest, err = rowcodec.GetVarint(rest); err != nil {
			return nil, err
		}
		if a.form == groupForm {
			if c, rest, err = rowcodec.GetUvarint(rest); err != nil {
				return nil, err
			}
		}
		if c == 0 {
			return nil, rowcodec.ErrState
		}
		s.add(v, int64(c))
	}
	a.sets[g] = s
	return rest, nil
}
