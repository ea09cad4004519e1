package exec_test

import (
	"context"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clinksql/clinksql/exec"
)

// takeSchema has a column of each kind TakeRows gathers itself (fixed widths of 1 to 16 bytes, booleans,
// strings, binaries) and one it hands to the take kernel (a list).
var takeSchema = arrow.NewSchema([]arrow.Field{
	{Name: "i64", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "i32", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	{Name: "i16", Type: arrow.PrimitiveTypes.Int16, Nullable: true},
	{Name: "i8", Type: arrow.PrimitiveTypes.Int8, Nullable: true},
	{Name: "f64", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "ts", Type: arrow.FixedWidthTypes.Timestamp_us, Nullable: true},
	{Name: "d32", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
	{Name: "dec", Type: &arrow.Decimal128Type{Precision: 20, Scale: 2}, Nullable: true},
	{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "bin", Type: arrow.BinaryTypes.Binary, Nullable: true},
	{Name: "l", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64), Nullable: true},
}, nil)

func randomTakeBatch(mem memory.Allocator, r *rand.Rand, n int, nulls bool) arrow.RecordBatch {
	rb := array.NewRecordBuilder(mem, takeSchema)
	defer rb.Release()
	for i := 0; i < n; i++ {
		for c, f := range rb.Fields() {
			if nulls && r.IntN(5) == 0 {
				f.AppendNull()
				continue
			}
			v := r.Int64N(1000) - 500
			switch b := f.(type) {
			case *array.Int64Builder:
				b.Append(v)
			case *array.Int32Builder:
				b.Append(int32(v))
			case *array.Int16Builder:
				b.Append(int16(v))
			case *array.Int8Builder:
				b.Append(int8(v))
			case *array.Float64Builder:
				b.Append(float64(v) / 3)
			case *array.TimestampBuilder:
				b.Append(arrow.Timestamp(v * 1000))
			case *array.Date32Builder:
				b.Append(arrow.Date32(v))
			case *array.Decimal128Builder:
				b.Append(decimal128.New(v, uint64(i)))
			case *array.BooleanBuilder:
				b.Append(v%2 == 0)
			case *array.StringBuilder:
				b.Append(string(make([]byte, r.IntN(9))) + "x")
			case *array.BinaryBuilder:
				b.Append([]byte{byte(v), byte(c)}[:r.IntN(3)])
			case *array.ListBuilder:
				b.Append(true)
				b.ValueBuilder().(*array.Int64Builder).Append(v)
			default:
				t := f.Type()
				panic("no value for " + t.String())
			}
		}
	}
	return rb.NewRecordBatch()
}

// TakeRows gathers what arrow-go's take kernel would: every column type, with and without NULLs, from a slice
// (non-zero offsets), with repeated and reordered rows, and row kinds.
func TestTakeRowsMatchesTakeKernel(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	testTakeRows(t, mem, mem)
}

// On Go's own allocator (the engine's default) the gathers write their value buffers uncleared (noZeroAlloc):
// with those buffers poisoned, a byte the gather does not write shows as a wrong value.
func TestTakeRowsUnclearedBuffers(t *testing.T) {
	defer exec.PoisonNoZeroBuffers()()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	testTakeRows(t, mem, memory.NewGoAllocator())
}

// testTakeRows builds its batches on mem and takes their rows on out.
func testTakeRows(t *testing.T, mem *memory.CheckedAllocator, out memory.Allocator) {
	r := rand.New(rand.NewPCG(15, 4))
	ctx := context.Background()
	for round := 0; round < 40; round++ {
		full := randomTakeBatch(mem, r, 1+r.IntN(300), round%2 == 0)
		lo := r.IntN(int(full.NumRows()))
		rec := full.NewSlice(int64(lo), full.NumRows())
		full.Release()
		n := int(rec.NumRows())
		b := exec.Batch{Rec: rec}
		if round%3 == 0 {
			b.Kinds = make([]exec.RowKind, n)
			for i := range b.Kinds {
				b.Kinds[i] = exec.RowKind(r.IntN(4))
			}
		}
		rows := make([]int32, r.IntN(2*n+1))
		for i := range rows {
			rows[i] = int32(r.IntN(n))
		}
		got, err := exec.TakeRows(ctx, out, b, rows)
		if err != nil {
			t.Fatal(err)
		}
		ib := array.NewInt32Builder(mem)
		ib.AppendValues(rows, nil)
		idx := ib.NewInt32Array()
		ib.Release()
		for c := 0; c < int(rec.NumCols()); c++ {
			want, err := compute.TakeArray(compute.WithAllocator(ctx, mem), rec.Column(c), idx)
			if err != nil {
				t.Fatal(err)
			}
			if !array.Equal(want, got.Rec.Column(c)) {
				t.Fatalf("round %d column %s: got %v, want %v", round, rec.ColumnName(c), got.Rec.Column(c), want)
			}
			if want.NullN() != got.Rec.Column(c).NullN() {
				t.Fatalf("round %d column %s: %d nulls, want %d", round, rec.ColumnName(c), got.Rec.Column(c).NullN(), want.NullN())
			}
			want.Release()
		}
		idx.Release()
		for i, row := range rows {
			if got.Kind(i) != b.Kind(int(row)) {
				t.Fatalf("round %d: row %d kind %v, want %v", round, i, got.Kind(i), b.Kind(int(row)))
			}
		}
		got.Release()
		b.Release()
	}
}

// TestTakeColumn: TakeColumn takes the rows asked for, in order, a -1 row as NULL (an outer join's padding), from
// sliced arrays too, and leaks nothing; a column with no rows gives all NULLs.
func TestTakeColumn(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	testTakeColumn(t, mem, mem)
}

// TestTakeColumnUnclearedBuffers: TakeColumn on Go's allocator, whose value buffers are uncleared (poisoned here).
func TestTakeColumnUnclearedBuffers(t *testing.T) {
	defer exec.PoisonNoZeroBuffers()()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	testTakeColumn(t, mem, memory.NewGoAllocator())
}

func testTakeColumn(t *testing.T, mem *memory.CheckedAllocator, out memory.Allocator) {
	sb := array.NewStringBuilder(mem)
	ib := array.NewInt64Builder(mem)
	for i := range 50 {
		if i%7 == 3 {
			sb.AppendNull()
			ib.AppendNull()
			continue
		}
		sb.Append(strings.Repeat("x", i%5) + strconv.Itoa(i))
		ib.Append(int64(i * 3))
	}
	bb := array.NewBooleanBuilder(mem)
	for i := range 50 {
		if i%5 == 1 {
			bb.AppendNull()
			continue
		}
		bb.Append(i%3 == 0)
	}
	strs, ints, bools := sb.NewArray(), ib.NewArray(), bb.NewArray()
	sb.Release()
	ib.Release()
	bb.Release()
	defer strs.Release()
	defer ints.Release()
	defer bools.Release()
	whole := map[arrow.Array]bool{strs: true, ints: true, bools: true}
	for _, arr := range []arrow.Array{strs, ints, bools, array.NewSlice(strs, 5, 40), array.NewSlice(ints, 5, 40),
		array.NewSlice(bools, 5, 40)} {
		idx := []int32{0, 3, -1, 10, 10, 2, -1, 24, 1}
		got := exec.TakeColumn(out, arr, idx)
		if got == nil {
			t.Fatalf("%s: not taken", arr.DataType())
		}
		for k, i := range idx {
			switch {
			case i < 0 || arr.IsNull(int(i)):
				if got.IsValid(k) {
					t.Fatalf("%s: row %d is %s, want NULL", arr.DataType(), k, got.ValueStr(k))
				}
			case !got.IsValid(k) || got.ValueStr(k) != arr.ValueStr(int(i)):
				t.Fatalf("%s: row %d is %s, want %s", arr.DataType(), k, got.ValueStr(k), arr.ValueStr(int(i)))
			}
		}
		got.Release()
		if !whole[arr] {
			arr.Release()
		}
	}
	empty := array.NewSlice(strs, 0, 0)
	defer empty.Release()
	got := exec.TakeColumn(out, empty, []int32{-1, -1})
	defer got.Release()
	if got.Len() != 2 || got.NullN() != 2 {
		t.Fatalf("from no rows: %d rows, %d NULL; want 2 NULLs", got.Len(), got.NullN())
	}
}
