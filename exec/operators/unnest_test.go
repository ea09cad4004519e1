package operators

import (
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/exec/optest"
)

// TestUnnest expands list rows: every element a row, the other columns repeated, NULL and empty lists gone (or,
// outer, kept once with NULLs), positions with Ordinality, and an update's halves as a delete and an insert.
func TestUnnest(t *testing.T) {
	in := arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "xs", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
	}, nil)
	build := func(h *optest.Harness) exec.Batch {
		b := array.NewRecordBuilder(h.Mem(), in)
		defer b.Release()
		k, l := b.Field(0).(*array.Int64Builder), b.Field(1).(*array.ListBuilder)
		v := l.ValueBuilder().(*array.StringBuilder)
		k.Append(1)
		l.Append(true)
		v.Append("a")
		v.AppendNull()
		k.Append(2)
		l.AppendNull()
		k.Append(3)
		l.Append(true) // empty
		k.Append(4)
		l.Append(true)
		v.Append("z")
		return exec.Batch{Rec: b.NewRecordBatch(), Kinds: []exec.RowKind{exec.Insert, exec.Insert, exec.UpdateBefore, exec.UpdateAfter}}
	}
	for _, c := range []struct {
		cfg  UnnestConfig
		want []string
	}{
		{UnnestConfig{}, []string{"+I 1|a", "+I 1|NULL", "+I 4|z"}},
		{UnnestConfig{Outer: true, Ordinality: true}, []string{"+I 1|a|1", "+I 1|NULL|2", "+I 2|NULL|NULL", "-D 3|NULL|NULL", "+I 4|z|1"}},
	} {
		f, out, err := NewUnnest(c.cfg, in)
		optest.Must(t, err)
		h := optest.NewHarness(t, f, false, in)
		h.Out, h.Changelog = out, true
		optest.Must(t, h.Open("", 0))
		optest.Must(t, h.Op.Process(0, build(h), h))
		optest.Must(t, h.Close())
		if !slices.Equal(h.Rows, c.want) {
			t.Errorf("%+v: got %q, want %q", c.cfg, h.Rows, c.want)
		}
	}
	if _, _, err := NewUnnest(UnnestConfig{}, arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int64}}, nil)); err == nil {
		t.Error("a non-list column was accepted")
	}
}
