package operators

import (
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/exec/optest"
)

func TestReplicate(t *testing.T) {
	in := arrow.NewSchema([]arrow.Field{
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "n", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	}, nil)
	f, out, err := NewReplicate(in)
	if err != nil {
		t.Fatal(err)
	}
	if out.NumFields() != 1 || out.Field(0).Name != "s" {
		t.Fatalf("output schema %s", out)
	}
	h := optest.NewHarness(t, f, false, in)
	h.Out, h.Changelog = out, true
	optest.Must(t, h.Open("", 0))
	// Three copies, none (0, negative, NULL), one NULL value twice; then an update whose halves differ in count.
	optest.Must(t, h.Process(0, [][]any{{"a", 3}, {"b", 0}, {"c", -1}, {"d", nil}, {nil, 2}}, nil))
	optest.Must(t, h.Process(0, [][]any{{"a", 3}, {"a", 1}, {"e", 2}},
		[]exec.RowKind{exec.UpdateBefore, exec.UpdateAfter, exec.Delete}))
	optest.Must(t, h.Close())
	want := []string{"+I a", "+I a", "+I a", "+I NULL", "+I NULL", "-D a", "-D a", "-D a", "+I a", "-D e", "-D e"}
	if !slices.Equal(h.Rows, want) {
		t.Fatalf("got %q\nwant %q", h.Rows, want)
	}
	if _, _, err := NewReplicate(arrow.NewSchema([]arrow.Field{{Name: "s", Type: arrow.BinaryTypes.String}, {Name: "n", Type: arrow.BinaryTypes.String}}, nil)); err == nil {
		t.Fatal("a text count column was accepted")
	}
}
