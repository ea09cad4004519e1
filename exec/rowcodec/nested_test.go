package rowcodec

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clinksql/clinksql/exec"
)

// nestedSchema has nested columns of every kind, nested in each other, with every leaf type the rows keep.
func nestedSchema() *arrow.Schema {
	person := arrow.StructOf(
		arrow.Field{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
		arrow.Field{Name: "age", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		arrow.Field{Name: "score", Type: arrow.PrimitiveTypes.Float64, Nullable: true})
	return arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "person", Type: person, Nullable: true},
		{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
		{Name: "grid", Type: arrow.ListOf(arrow.ListOf(arrow.PrimitiveTypes.Float32)), Nullable: true},
		{Name: "attrs", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.ListOf(arrow.PrimitiveTypes.Int64)), Nullable: true},
		{Name: "people", Type: arrow.ListOf(person), Nullable: true},
		{Name: "deep", Type: arrow.StructOf(
			arrow.Field{Name: "m", Type: arrow.MapOf(arrow.PrimitiveTypes.Int32, person), Nullable: true},
			arrow.Field{Name: "d", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}, Nullable: true},
			arrow.Field{Name: "ts", Type: arrow.FixedWidthTypes.Timestamp_us, Nullable: true},
			arrow.Field{Name: "ok", Type: arrow.FixedWidthTypes.Boolean, Nullable: true}), Nullable: true},
	}, nil)
}

// randomValue appends a random value of b's type, NULL one time in four at every level. The values come from a
// small domain, so that equal values occur in different rows.
func randomValue(r *rand.Rand, b array.Builder) {
	if r.IntN(4) == 0 {
		b.AppendNull()
		return
	}
	switch b := b.(type) {
	case *array.Int64Builder:
		b.Append(int64(r.IntN(3)) - 1)
	case *array.Int32Builder:
		b.Append(int32(r.IntN(3)))
	case *array.Float64Builder:
		b.Append([]float64{0, math.Copysign(0, -1), 1.5, math.Inf(-1)}[r.IntN(4)])
	case *array.Float32Builder:
		b.Append([]float32{0, float32(math.Copysign(0, -1)), -2.25}[r.IntN(3)])
	case *array.StringBuilder:
		b.Append([]string{"", "a", "a b", "\x00\x01"}[r.IntN(4)])
	case *array.Decimal128Builder:
		b.Append(decimal128.FromI64(int64(r.IntN(3)) - 1))
	case *array.TimestampBuilder:
		b.Append(arrow.Timestamp(r.IntN(2)))
	case *array.BooleanBuilder:
		b.Append(r.IntN(2) == 0)
	case *array.StructBuilder:
		b.Append(true)
		for k := 0; k < b.NumField(); k++ {
			randomValue(r, b.FieldBuilder(k))
		}
	case *array.MapBuilder:
		b.Append(true)
		for range r.IntN(3) {
			randomValue(r, b.ItemBuilder())
			kb := b.KeyBuilder() // map keys are never NULL
			switch kb := kb.(type) {
			case *array.StringBuilder:
				kb.Append([]string{"k", "l"}[r.IntN(2)])
			case *array.Int32Builder:
				kb.Append(int32(r.IntN(2)))
			}
		}
	case *array.ListBuilder:
		b.Append(true)
		for range r.IntN(3) {
			randomValue(r, b.ValueBuilder())
		}
	default:
		panic("randomValue: " + b.Type().String())
	}
}

func randomNested(t *testing.T, mem memory.Allocator, r *rand.Rand, n int) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, nestedSchema())
	defer b.Release()
	for range n {
		for _, fb := range b.Fields() {
			randomValue(r, fb)
		}
	}
	return b.NewRecordBatch()
}

func encodeRows(t *testing.T, enc *Encoding, rec arrow.RecordBatch, cols []int) []string {
	t.Helper()
	var k KeyRows
	if err := k.Load(enc, rec, cols); err != nil {
		t.Fatal(err)
	}
	out := make([]string, rec.NumRows())
	for i := range out {
		out[i] = string(k.BytesOf(i))
	}
	return out
}

// Nested values with NULLs at every level go through row bytes and back unchanged, also from a slice of a batch;
// key bytes are equal exactly for equal values (-0 = 0 inside too, with the row bytes kept where they differ), and
// exec.HashKeys agrees with them.
func TestNestedRoundTrip(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	r := rand.New(rand.NewPCG(16, 4))
	sc := nestedSchema()
	for _, f := range sc.Fields() {
		if !RowType(f.Type) || (Nested(f.Type) && !GroupKeyType(f.Type)) {
			t.Fatalf("%s: not a row or group key type", f.Type)
		}
	}
	if KeyType(sc.Field(1).Type) {
		t.Fatal("a ROW is a join key type")
	}
	rowEnc, cols, err := RowEncoding(sc, nil)
	if err != nil {
		t.Fatal(err)
	}
	for round := range 20 {
		rec := randomNested(t, mem, r, 200)
		rows := encodeRows(t, &rowEnc, rec, cols)

		// Decode every row and compare: the same values, and the same bytes again (a -0 is still -0).
		db := array.NewRecordBuilder(mem, sc)
		for _, row := range rows {
			if err := rowEnc.DecodeKey(db.Fields(), []byte(row)); err != nil {
				t.Fatal(err)
			}
		}
		back := db.NewRecordBatch()
		db.Release()
		if !array.RecordEqual(rec, back) {
			t.Fatalf("round %d: decoded rows differ", round)
		}
		for i, row := range encodeRows(t, &rowEnc, back, cols) {
			if row != rows[i] {
				t.Fatalf("round %d row %d: bytes differ after a round trip", round, i)
			}
		}
		back.Release()

		// A slice encodes as the same rows.
		sl := rec.NewSlice(37, 151)
		for i, row := range encodeRows(t, &rowEnc, sl, cols) {
			if row != rows[37+i] {
				t.Fatalf("round %d: sliced row %d encodes differently", round, i)
			}
		}
		sl.Release()

		// Each nested column as a group key: equal key bytes exactly when the values are equal (value equality read
		// off the row bytes with every -0 made 0), and equal hashes for equal keys.
		for c := 1; c < sc.NumFields(); c++ {
			keyEnc := NewKeyEncoding([]arrow.DataType{sc.Field(c).Type})
			var keys KeyRows
			if err := keys.Load(&keyEnc, rec, []int{c}); err != nil {
				t.Fatal(err)
			}
			colEnc := Encoding{Types: keyEnc.Types, Mode: KeyBytes, Exact: true}
			exact := encodeRows(t, &colEnc, rec, []int{c})
			hs, err := exec.HashKeys(rec, []int{c}, nil)
			if err != nil {
				t.Fatal(err)
			}
			byKey := map[string]int{}
			for i := range exact {
				k := string(keys.BytesOf(i))
				if x := keys.ExactOf(i); (x != "") != (exact[i] != k) || (x != "" && x != exact[i]) {
					t.Fatalf("round %d column %s row %d: exact bytes %q, row bytes %q", round, sc.Field(c).Name, i, x, exact[i])
				}
				if j, ok := byKey[k]; ok {
					if hs[i] != hs[j] {
						t.Fatalf("round %d column %s: rows %d and %d are one key with two hashes", round, sc.Field(c).Name, i, j)
					}
					if !sameValue(rec.Column(c), i, j) {
						t.Fatalf("round %d column %s: rows %d and %d are one key, not equal", round, sc.Field(c).Name, i, j)
					}
				} else {
					byKey[k] = i
				}
			}
			for i := range min(len(exact), 40) { // quadratic: some rows
				for k, j := range byKey {
					if k != string(keys.BytesOf(i)) && sameValue(rec.Column(c), i, j) {
						t.Fatalf("round %d column %s: equal rows %d and %d have two keys", round, sc.Field(c).Name, i, j)
					}
				}
			}
		}
		rec.Release()
	}
}

// sameValue is SQL grouping equality of rows i and j (NULL equals NULL, -0 equals 0), by arrow's comparison of
// one-row slices, which treats -0 and 0 alike and compares NULLs by position.
func sameValue(a arrow.Array, i, j int) bool {
	x, y := array.NewSlice(a, int64(i), int64(i+1)), array.NewSlice(a, int64(j), int64(j+1))
	defer x.Release()
	defer y.Release()
	return array.Equal(x, y)
}

// Truncated or malformed nested bytes fail with an error, never a panic or a value.
func TestNestedTruncated(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	r := rand.New(rand.NewPCG(7, 7))
	sc := nestedSchema()
	rowEnc, cols, err := RowEncoding(sc, nil)
	if err != nil {
		t.Fatal(err)
	}
	rec := randomNested(t, mem, r, 50)
	defer rec.Release()
	for _, row := range encodeRows(t, &rowEnc, rec, cols) {
		for cut := 0; cut < len(row); cut++ {
			db := array.NewRecordBuilder(mem, sc)
			if err := rowEnc.DecodeKey(db.Fields(), []byte(row[:cut])); err == nil {
				t.Fatalf("a row cut at %d of %d decoded", cut, len(row))
			}
			db.Release()
		}
	}
}
