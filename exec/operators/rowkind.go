package operators

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/clinksql/clinksql/exec"
)

// NewRowKindColumn returns the operator in front of an upsert sink: each row goes out as an insert, with its row
// kind (+I, -U, +U, -D) as a first VARCHAR column named name, so that an append-only file carries the changelog.
// It keeps no state.
func NewRowKindColumn(name string, in *arrow.Schema) (func(subtask int) exec.Operator, *arrow.Schema) {
	fields := append([]arrow.Field{{Name: name, Type: arrow.BinaryTypes.String}}, in.Fields()...)
	out := arrow.NewSchema(fields, nil)
	return func(int) exec.Operator { return &rowKindColumn{schema: out} }, out
}

type rowKindColumn struct {
	exec.NoTimers
	exec.Stateless
	schema *arrow.Schema
	ctx    *exec.TaskContext
}

var _ exec.Operator = (*rowKindColumn)(nil)

func (o *rowKindColumn) Open(ctx *exec.TaskContext) error { o.ctx = ctx; return nil }

func (o *rowKindColumn) Process(_ int, b exec.Batch, out exec.Emitter) error {
	defer b.Release()
	n := b.Rows()
	if n == 0 {
		return nil
	}
	kb := array.NewStringBuilder(o.ctx.Alloc)
	defer kb.Release()
	kb.Reserve(n)
	for i := 0; i < n; i++ {
		kb.Append(b.Kind(i).String())
	}
	kinds := kb.NewArray()
	defer kinds.Release()
	cols := append([]arrow.Array{kinds}, b.Rec.Columns()...)
	return out.Emit(exec.Batch{Rec: array.NewRecordBatch(o.schema, cols, int64(n))})
}
