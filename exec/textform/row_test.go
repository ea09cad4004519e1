package textform

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// A JSON row writes nested columns as JSON: a ROW as an object of its fields, an ARRAY as an array, a MAP as an
// object keyed by the keys' text, NULL as null at every level, the parts by the scalar rules (NaN as a string).
// Expected lines by hand from the values appended below.
func TestRowJSONNested(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	person := arrow.StructOf(arrow.Field{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
		arrow.Field{Name: "age", Type: arrow.PrimitiveTypes.Int32, Nullable: true})
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "person", Type: person, Nullable: true},
		{Name: "grid", Type: arrow.ListOf(arrow.ListOf(arrow.PrimitiveTypes.Float64)), Nullable: true},
		{Name: "attrs", Type: arrow.MapOf(arrow.PrimitiveTypes.Int32, arrow.ListOf(arrow.BinaryTypes.String)), Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(mem, sc)
	defer b.Release()
	ids := b.Field(0).(*array.Int64Builder)
	pb := b.Field(1).(*array.StructBuilder)
	gb := b.Field(2).(*array.ListBuilder)
	gi := gb.ValueBuilder().(*array.ListBuilder)
	gf := gi.ValueBuilder().(*array.Float64Builder)
	mb := b.Field(3).(*array.MapBuilder)
	mk := mb.KeyBuilder().(*array.Int32Builder)
	mv := mb.ItemBuilder().(*array.ListBuilder)
	ms := mv.ValueBuilder().(*array.StringBuilder)

	// Row 1: values everywhere, NULLs inside.
	ids.Append(1)
	pb.Append(true)
	pb.FieldBuilder(0).(*array.StringBuilder).Append(`a "b"`)
	pb.FieldBuilder(1).AppendNull()
	gb.Append(true)
	gi.Append(true)
	gf.AppendValues([]float64{1.5, math.NaN()}, nil)
	gi.AppendNull()
	gi.Append(true) // empty
	mb.Append(true)
	mk.Append(7)
	mv.Append(true)
	ms.Append("x")
	ms.AppendNull()
	mk.Append(8)
	mv.AppendNull()
	// Row 2: NULL columns, and an empty array and map.
	ids.Append(2)
	pb.AppendNull()
	gb.Append(true)
	mb.Append(true)
	// Row 3: NULL array and map.
	ids.Append(3)
	pb.Append(true)
	pb.FieldBuilder(0).AppendNull()
	pb.FieldBuilder(1).(*array.Int32Builder).Append(30)
	gb.AppendNull()
	mb.AppendNull()

	rec := b.NewRecordBatch()
	defer rec.Release()
	r, err := NewRow("json", sc)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Bind(rec.Columns()); err != nil {
		t.Fatal(err)
	}
	defer r.Unbind()
	want := []string{
		`{"id":1,"person":{"name":"a \"b\"","age":null},"grid":[[1.5,"NaN"],null,[]],"attrs":{"7":["x",null],"8":null}}`,
		`{"id":2,"person":null,"grid":[],"attrs":{}}`,
		`{"id":3,"person":{"name":null,"age":30},"grid":null,"attrs":null}`,
	}
	for i, w := range want {
		got := string(r.Append(nil, i))
		if got != w {
			t.Errorf("row %d:\n got %s\nwant %s", i, got, w)
		}
		if !json.Valid([]byte(got)) {
			t.Errorf("row %d is not JSON: %s", i, got)
		}
	}
}
