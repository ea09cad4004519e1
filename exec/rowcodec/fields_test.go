package rowcodec

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clinksql/clinksql/exec"
)

// A row's bytes read back as named fields in text form, NULL as a nil value, after what dst held; names that do
// not match the encoding's columns are refused.
func TestAppendFieldsDecodesNamedColumns(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	sc := arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	b := array.NewRecordBuilder(mem, sc)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).AppendValues([]int64{42}, nil)
	b.Field(1).(*array.StringBuilder).AppendNull()
	rec := b.NewRecordBatch()
	defer rec.Release()
	enc, cols, err := RowEncoding(sc, nil)
	if err != nil {
		t.Fatal(err)
	}
	var rows KeyRows
	if err := rows.Load(&enc, rec, cols); err != nil {
		t.Fatal(err)
	}
	got, err := enc.AppendFields([]exec.StateField{exec.Field("seq", 7)}, []string{"k", "s"}, rows.BytesOf(0))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].Name != "seq" || got[1].Name != "k" || got[1].Value == nil || *got[1].Value != "42" ||
		got[2].Name != "s" || got[2].Value != nil {
		t.Fatalf("got %+v", got)
	}
	if _, err := enc.AppendFields(nil, []string{"k"}, rows.BytesOf(0)); err == nil {
		t.Fatal("one name for two columns accepted")
	}
}
