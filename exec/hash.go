package exec

import (
	"bytes"
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/clinksql/clinksql/state"
)

// nullHash is the hash of a NULL key value: every NULL of a key column goes to the same key group.
const nullHash = 0x9e3779b97f4a7c15

// HashKeys computes the key hash of every row of rec over the key columns, a column at a time, into out (resized
// as needed). The function is state.KeyHashVersion: fixed across processes and releases, since a restore routes
// rows to key groups with it.
func HashKeys(rec arrow.RecordBatch, keys []int, out []uint64) ([]uint64, error) {
	n := int(rec.NumRows())
	if cap(out) < n {
		out = make([]uint64, n)
	}
	out = out[:n]
	for i := range out {
		out[i] = 0
	}
	for n, k := range keys {
		if err := hashColumn(rec.Column(k), out, n == 0); err != nil {
			return nil, fmt.Errorf("hash key column %q: %w", rec.ColumnName(k), err)
		}
	}
	return out, nil
}

// hashColumn mixes col's hashes into acc; first says acc is all zeros (the first key column), where
// CombineHash(0, h) is MixInt64(h).
func hashColumn(col arrow.Array, acc []uint64, first bool) error {
	nulls := col.NullN() > 0
	if !nulls { // the common case, without a call per row
		switch c := col.(type) {
		case *array.Int64:
			if first {
				for i, v := range c.Int64Values() {
					acc[i] = state.MixInt64(state.MixInt64(uint64(v)))
				}
				return nil
			}
			for i, v := range c.Int64Values() {
				acc[i] = state.CombineHash(acc[i], state.MixInt64(uint64(v)))
			}
			return nil
		case *array.Int32:
			for i, v := range c.Int32Values() {
				acc[i] = state.CombineHash(acc[i], state.MixInt64(uint64(int64(v))))
			}
			return nil
		case *array.Timestamp:
			for i, v := range c.TimestampValues() {
				acc[i] = state.CombineHash(acc[i], state.MixInt64(uint64(v)))
			}
			return nil
		case *array.String:
			// The offsets index the whole data buffer (ValueOffsets starts at the array's offset, its values do
			// not): one slice per row, no call through Value and mix.
			offs := c.ValueOffsets()
			var data []byte
			if buf := c.Data().Buffers()[2]; buf != nil {
				data = buf.Bytes()
			}
			// A run of equal values (a day, a category: the key of a skewed aggregate) hashes once: comparing with
			// the previous value costs less than hashing it again, and a different value usually differs in length
			// or first bytes.
			if n := len(acc); n > 1 && sameValues(offs[:n+1], data) {
				// One value over the whole batch (q15's day): hashed once, no comparison per row.
				h := state.HashKey(data[offs[0]:offs[1]])
				for i := range acc {
					acc[i] = state.CombineHash(acc[i], h)
				}
				return nil
			}
			var prev []byte
			var ph uint64
			for i := range acc {
				v := data[offs[i]:offs[i+1]]
				if i == 0 || !bytes.Equal(v, prev) {
					prev, ph = v, state.HashKey(v)
				}
				acc[i] = state.CombineHash(acc[i], ph)
			}
			return nil
		}
	}
	mix := func(i int, h uint64) {
		if nulls && col.IsNull(i) {
			h = nullHash
		}
		acc[i] = state.CombineHash(acc[i], h)
	}
	switch c := col.(type) {
	case *array.Int64:
		for i, v := range c.Int64Values() {
			mix(i, state.MixInt64(uint64(v)))
		}
	case *array.Int32:
		for i, v := range c.Int32Values() {
			mix(i, state.MixInt64(uint64(int64(v))))
		}
	case *array.Int16:
		for i, v := range c.Int16Values() {
			mix(i, state.MixInt64(uint64(int64(v))))
		}
	case *array.Int8:
		for i, v := range c.Int8Values() {
			mix(i, state.MixInt64(uint64(int64(v))))
		}
	case *array.Uint64:
		for i, v := range c.Uint64Values() {
			mix(i, state.MixInt64(v))
		}
	case *array.Uint32:
		for i, v := range c.Uint32Values() {
			mix(i, state.MixInt64(uint64(v)))
		}
	case *array.Timestamp:
		for i, v := range c.TimestampValues() {
			mix(i, state.MixInt64(uint64(v)))
		}
	case *array.Date32:
		for i, v := range c.Date32Values() {
			mix(i, state.MixInt64(uint64(int64(v))))
		}
	case *array.Float64:
		for i, v := range c.Float64Values() {
			mix(i, state.MixInt64(floatKeyBits(v)))
		}
	case *array.Float32:
		for i, v := range c.Float32Values() {
			mix(i, state.MixInt64(floatKeyBits(float64(v))))
		}
	case *array.Boolean:
		for i := 0; i < c.Len(); i++ {
			var b uint64
			if c.Value(i) {
				b = 1
			}
			mix(i, state.MixInt64(b))
		}
	case *array.String:
		for i := 0; i < c.Len(); i++ {
			mix(i, state.HashKey(unsafeBytes(c.Value(i))))
		}
	case *array.LargeString:
		for i := 0; i < c.Len(); i++ {
			mix(i, state.HashKey(unsafeBytes(c.Value(i))))
		}
	case *array.Binary:
		for i := 0; i < c.Len(); i++ {
			mix(i, state.HashKey(c.Value(i)))
		}
	case *array.Decimal128:
		for i := 0; i < c.Len(); i++ {
			v := c.Value(i)
			mix(i, state.CombineHash(state.MixInt64(uint64(v.HighBits())), state.MixInt64(v.LowBits())))
		}
	case *array.Struct, *array.List, *array.LargeList, *array.Map:
		hs, err := nestedHashes(col)
		if err != nil {
			return err
		}
		for i, h := range hs {
			mix(i, h)
		}
	default:
		return fmt.Errorf("type %s cannot be a key", col.DataType())
	}
	return nil
}

// nestedHashes hashes each row of a ROW, ARRAY or MAP column (a GROUP BY key) from its parts' hashes: a ROW's
// fields in order, an ARRAY's length then its elements, a MAP's length then each key and value; a NULL part
// hashes as NULL does. Equal values (as their canonical key bytes, rowcodec's nested.go, have it) hash alike.
func nestedHashes(col arrow.Array) ([]uint64, error) {
	hs := make([]uint64, col.Len())
	switch c := col.(type) {
	case *array.Struct:
		for k := 0; k < c.NumField(); k++ {
			if err := hashColumn(c.Field(k), hs, false); err != nil {
				return nil, err
			}
		}
		return hs, nil
	case *array.Map: // a Map is a List: first
		parts := make([]uint64, c.Keys().Len())
		items := make([]uint64, c.Items().Len())
		if err := hashColumn(c.Keys(), parts, false); err != nil {
			return nil, err
		}
		if err := hashColumn(c.Items(), items, false); err != nil {
			return nil, err
		}
		for j := range parts {
			parts[j] = state.CombineHash(parts[j], items[j])
		}
		foldParts(hs, c, parts)
		return hs, nil
	case array.ListLike:
		parts := make([]uint64, c.ListValues().Len())
		if err := hashColumn(c.ListValues(), parts, false); err != nil {
			return nil, err
		}
		foldParts(hs, c, parts)
		return hs, nil
	}
	return nil, fmt.Errorf("type %s cannot be a key", col.DataType())
}

// foldParts sets hs[i] to the hash of row i's length and parts.
func foldParts(hs []uint64, l array.ListLike, parts []uint64) {
	for i := range hs {
		lo, hi := l.ValueOffsets(i)
		h := state.MixInt64(uint64(hi - lo))
		for _, p := range parts[lo:hi] {
			h = state.CombineHash(h, p)
		}
		hs[i] = h
	}
}

// floatKeyBits is the bits a float key hashes by: -0 and +0 are one key, and so is every NaN (whatever its
// payload), as the keyed operators' canonical key bytes have it, so equal keys always meet on one subtask.
func floatKeyBits(v float64) uint64 {
	switch {
	case v == 0:
		return 0
	case v != v:
		return 0x7ff8000000000000
	}
	return math.Float64bits(v)
}

// sameValues reports whether the n = len(offs)-1 values of a string column, at offsets offs of data, are all the
// same: all of one length L, and the bytes a sequence of period L, which one comparison of the bytes with themselves
// shifted by L decides (the n-1 comparisons of each value with the one before, done at once).
func sameValues(offs []int32, data []byte) bool {
	n := len(offs) - 1
	l := offs[1] - offs[0]
	for i := 1; i < n; i++ {
		if offs[i+1]-offs[i] != l {
			return false
		}
	}
	b := data[offs[0]:offs[n]]
	return bytes.Equal(b[l:], b[:len(b)-int(l)])
}
