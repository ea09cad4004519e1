package operators

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/clinksql/clinksql/exec"
)

// NewReplicate returns the operator that repeats each row as many times as its last column says (an integer
// column; NULL, zero or negative: not at all) and drops that column: INTERSECT ALL and EXCEPT ALL, whose
// aggregate counts the copies of each distinct row. A row's kind goes with its copies, an update's halves as a
// delete and an insert (-U as -D, +U as +I: the two halves may have different counts). It keeps no state.
func NewReplicate(in *arrow.Schema) (func(subtask int) exec.Operator, *arrow.Schema, error) {
	n := in.NumFields()
	if n < 2 {
		return nil, nil, fmt.Errorf("replicate: the input needs a column besides the count")
	}
	switch in.Field(n - 1).Type.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64:
	default:
		return nil, nil, fmt.Errorf("replicate: the count column is %s, not an integer", in.Field(n-1).Type)
	}
	out := arrow.NewSchema(in.Fields()[:n-1], nil)
	return func(int) exec.Operator { return &replicate{schema: out} }, out, nil
}

type replicate struct {
	exec.NoTimers
	exec.Stateless
	schema *arrow.Schema
	ctx    *exec.TaskContext
	rows   []int32
	kinds  []exec.RowKind
}

var _ exec.Operator = (*replicate)(nil)

func (o *replicate) Open(ctx *exec.TaskContext) error {
	o.ctx = ctx
	return nil
}

func (o *replicate) Process(_ int, b exec.Batch, out exec.Emitter) error {
	defer b.Release()
	n := b.Rows()
	if n == 0 {
		return nil
	}
	cnt := b.Rec.Column(int(b.Rec.NumCols()) - 1)
	o.rows, o.kinds = o.rows[:0], o.kinds[:0]
	updating := false
	for i := range n {
		if cnt.IsNull(i) {
			continue
		}
		var c int64
		switch a := cnt.(type) {
		case *array.Int64:
			c = a.Value(i)
		case *array.Int32:
			c = int64(a.Value(i))
		case *array.Int16:
			c = int64(a.Value(i))
		case *array.Int8:
			c = int64(a.Value(i))
		}
		k := b.Kind(i)
		switch k {
		case exec.UpdateBefore:
			k = exec.Delete
		case exec.UpdateAfter:
			k = exec.Insert
		}
		updating = updating || k != exec.Insert && c > 0
		for range c {
			o.rows = append(o.rows, int32(i))
			o.kinds = append(o.kinds, k)
		}
	}
	if len(o.rows) == 0 {
		return nil
	}
	cols := make([]arrow.Array, 0, o.schema.NumFields())
	defer func() {
		for _, c := range cols {
			c.Release()
		}
	}()
	taker := exec.NewColumnTaker(o.ctx.Alloc, o.rows)
	defer taker.Release()
	for c := range o.schema.NumFields() {
		a, err := taker.Take(b.Rec.Column(c))
		if err != nil {
			return fmt.Errorf("replicate: %w", err)
		}
		cols = append(cols, a)
	}
	var kinds []exec.RowKind
	if updating {
		kinds = append([]exec.RowKind(nil), o.kinds...)
	}
	return out.Emit(exec.Batch{Rec: array.NewRecordBatch(o.schema, cols, int64(len(o.rows))), Kinds: kinds})
}
