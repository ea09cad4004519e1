package join

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
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
		b := array.NewStringBuilder(alloc)
		defer b.Release()
		b.Reserve(len(idx))
		total := 0
		for _, i := range idx {
			if i >= 0 {
				total += a.ValueLen(int(i))
			}
		}
		b.ReserveData(total)
		for _, i := range idx {
			if i < 0 || (nulls && a.IsNull(int(i))) {
				b.AppendNull()
				continue
			}
			b.Append(a.Value(int(i)))
		}
		return b.NewArray(), true
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
