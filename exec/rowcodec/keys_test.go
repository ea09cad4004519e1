package rowcodec

import (
	"math"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Key bytes compare as SQL does (-0 = 0, one NaN); row bytes keep -0, so a row is retracted exactly as it was
// emitted and prints as written, and a key's row bytes are kept only where they differ.
func TestKeyBytesNegativeZero(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	sc := arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "d", Type: arrow.PrimitiveTypes.Float64, Nullable: true}}, nil)
	b := array.NewRecordBuilder(mem, sc)
	defer b.Release()
	b.Field(0).(*array.Int32Builder).AppendValues([]int32{1, 1, 1, 1}, nil)
	b.Field(1).(*array.Float64Builder).AppendValues([]float64{math.Copysign(0, -1), 0, math.NaN(), -math.NaN()}, nil)
	rec := b.NewRecordBatch()
	defer rec.Release()

	keyEnc := NewKeyEncoding([]arrow.DataType{arrow.PrimitiveTypes.Int32, arrow.PrimitiveTypes.Float64})
	var keys KeyRows
	if err := keys.Load(&keyEnc, rec, []int{0, 1}); err != nil {
		t.Fatal(err)
	}
	if string(keys.BytesOf(0)) != string(keys.BytesOf(1)) || string(keys.BytesOf(2)) != string(keys.BytesOf(3)) {
		t.Fatal("key bytes: -0 and 0 (or two NaNs) differ")
	}
	if keys.ExactOf(0) == "" || keys.ExactOf(1) != "" || keys.ExactOf(2) != "" {
		t.Fatalf("exact key bytes kept for rows %q %q %q, want only row 0's", keys.ExactOf(0), keys.ExactOf(1), keys.ExactOf(2))
	}

	rowEnc, cols, err := RowEncoding(sc, nil)
	if err != nil {
		t.Fatal(err)
	}
	var rows KeyRows
	if err := rows.Load(&rowEnc, rec, cols); err != nil {
		t.Fatal(err)
	}
	if string(rows.BytesOf(0)) == string(rows.BytesOf(1)) {
		t.Fatal("row bytes: -0 and 0 are equal")
	}
	if string(rows.BytesOf(0)) != keys.ExactOf(0) {
		t.Fatal("the key's exact bytes are not its row bytes")
	}
	if string(rows.BytesOf(0)) >= string(rows.BytesOf(1)) {
		t.Fatal("row bytes: -0 does not sort below 0")
	}
	// Decoding the row bytes gives -0 back.
	db := array.NewRecordBuilder(mem, sc)
	defer db.Release()
	if err := rowEnc.DecodeKey(db.Fields(), rows.BytesOf(0)); err != nil {
		t.Fatal(err)
	}
	out := db.NewRecordBatch()
	defer out.Release()
	if v := out.Column(1).(*array.Float64).Value(0); v != 0 || !math.Signbit(v) {
		t.Fatalf("decoded %v, want -0", v)
	}
}
