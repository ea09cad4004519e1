package join

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// takeColumn returns rows idx of arr (-1: NULL) as a new array on alloc, for the common column types; ok is false
// for another type (the caller uses arrow's take kernel). Builders sized once: no kernel dispatch, no doubling of
// a string column's data buffer.
func takeColumn(alloc memory.Allocator, arr arrow.Array, idx []int32) (out arrow.Array, ok bool) {
	nulls := arr.NullN() > 0
	switch a := arr.(type) {
	case *array.Int64:
		return takeFixed(array.NewInt64Builder(alloc), a.Int64Values(), a, nulls, idx), true
	case *array.Timestamp:
		return takeFixed(array.NewTimestampBuilder(alloc, a.DataType().(*arrow.TimestampType)), a.TimestampValues(), a, nulls, idx), true
	case *array.Int32:
		return takeFixed(array.NewInt32Builder(alloc), a.Int32Values(), a, nulls, idx), true
	case *array.Float64:
		return takeFixed(array.NewFloat64Builder(alloc), a.Float64Values(), a, nulls, idx), true
	case *array.String:
		return takeString(alloc, a, nulls, idx), true
	}
	return nil, false
}

// fixedBuilder is what takeFixed needs of a fixed-width builder.
type fixedBuilder[T any] interface {
	Reserve(int)
	UnsafeAppend(T)
	UnsafeAppendBoolToBitmap(bool)
	NewArray() arrow.Array
	Release()
}

func takeFixed[T any, B fixedBuilder[T]](b B, vals []T, a arrow.Array, nulls bool, idx []int32) arrow.Array {
	defer b.Release()
	b.Reserve(len(idx))
	for _, i := range idx {
		if i < 0 || (nulls && a.IsNull(int(i))) {
			b.UnsafeAppendBoolToBitmap(false)
			continue
		}
		b.UnsafeAppend(vals[i])
	}
	return b.NewArray()
}

// takeString builds the string array's buffers directly, sized exactly: a builder would zero its data buffer
// again after the allocator did, and the joined rows of Nexmark's tables are mostly string bytes.
func takeString(alloc memory.Allocator, a *array.String, nulls bool, idx []int32) arrow.Array {
	n := len(idx)
	total, nullCount := 0, 0
	for _, i := range idx {
		if i < 0 || (nulls && a.IsNull(int(i))) {
			nullCount++
			continue
		}
		total += a.ValueLen(int(i))
	}
	offs := memory.NewResizableBuffer(alloc)
	defer offs.Release()
	offs.Resize((n + 1) * arrow.Int32SizeBytes)
	ov := arrow.Int32Traits.CastFromBytes(offs.Bytes())
	data := memory.NewResizableBuffer(alloc)
	defer data.Release()
	data.Resize(total)
	db := data.Bytes()
	var valid *memory.Buffer
	var vb []byte
	if nullCount > 0 {
		valid = memory.NewResizableBuffer(alloc)
		defer valid.Release()
		valid.Resize(int(bitutil.BytesForBits(int64(n))))
		vb = valid.Bytes()
		clear(vb)
	}
	p := 0
	for k, i := range idx {
		ov[k] = int32(p)
		if i < 0 || (nulls && a.IsNull(int(i))) {
			continue
		}
		if vb != nil {
			bitutil.SetBit(vb, k)
		}
		p += copy(db[p:], a.Value(int(i)))
	}
	ov[n] = int32(p)
	d := array.NewData(a.DataType(), n, []*memory.Buffer{valid, offs, data}, nil, nullCount, 0)
	defer d.Release()
	return array.NewStringData(d)
}
