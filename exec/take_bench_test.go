package exec_test

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clinksql/clinksql/exec"
)

// BenchmarkTakeRowsBitmaps takes half the rows (every other one, as a hash exchange to 2 subtasks does) of an
// 8192-row batch of three booleans and a nullable int64, on Go's allocator: the bitmap gathers.
func BenchmarkTakeRowsBitmaps(b *testing.B) {
	const n = 8192
	alloc := memory.NewGoAllocator()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "a", Type: arrow.FixedWidthTypes.Boolean}, {Name: "b", Type: arrow.FixedWidthTypes.Boolean},
		{Name: "c", Type: arrow.FixedWidthTypes.Boolean},
		{Name: "v", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	}, nil)
	rb := array.NewRecordBuilder(alloc, schema)
	for i := 0; i < n; i++ {
		rb.Field(0).(*array.BooleanBuilder).Append(i%3 == 0)
		rb.Field(1).(*array.BooleanBuilder).Append(i%5 == 0)
		rb.Field(2).(*array.BooleanBuilder).Append(i%7 == 0)
		if i%11 == 0 {
			rb.Field(3).AppendNull()
		} else {
			rb.Field(3).(*array.Int64Builder).Append(int64(i))
		}
	}
	rec := rb.NewRecordBatch()
	rb.Release()
	defer rec.Release()
	rows := make([]int32, 0, n/2)
	for i := 0; i < n; i += 2 {
		rows = append(rows, int32(i))
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		out, err := exec.TakeRows(context.Background(), alloc, exec.Batch{Rec: rec}, rows)
		if err != nil {
			b.Fatal(err)
		}
		out.Release()
	}
}
