package operators

import (
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/clinksql/clinksql/exec"
)

// UnnestConfig is UNNEST over an input whose last column is an ARRAY (a list) or a MAP.
type UnnestConfig struct {
	// Outer keeps a row whose array is NULL or empty, once, with NULL elements (LEFT JOIN UNNEST(...) ON TRUE);
	// otherwise such a row goes (CROSS JOIN UNNEST).
	Outer bool
	// Ordinality appends the element's 1-based position (BIGINT; NULL on an outer row).
	Ordinality bool
	// Names name the element columns: one for a scalar element, one per field of a ROW element, key and value
	// for a MAP; nil takes the fields' names (or "unnest", "key", "value").
	Names []string
}

// NewUnnest returns the operator that expands each input row into one row per element of its last column: the
// other columns repeated, then the element (a ROW element's fields as columns, a MAP entry's key and value), then
// with Ordinality the position. A row's kind goes with every row it becomes, so a changelog stays one: retracting
// an input row retracts each of its rows. It keeps no state.
func NewUnnest(cfg UnnestConfig, in *arrow.Schema) (func(subtask int) exec.Operator, *arrow.Schema, error) {
	n := in.NumFields()
	if n < 1 {
		return nil, nil, fmt.Errorf("unnest: no input column")
	}
	fields := append([]arrow.Field{}, in.Fields()[:n-1]...)
	var elems []arrow.Field
	switch t := in.Field(n - 1).Type.(type) {
	case *arrow.ListType:
		if st, ok := t.Elem().(*arrow.StructType); ok {
			elems = append(elems, st.Fields()...)
		} else {
			elems = append(elems, arrow.Field{Name: "unnest", Type: t.Elem()})
		}
	case *arrow.MapType:
		elems = append(elems, arrow.Field{Name: "key", Type: t.KeyType()}, arrow.Field{Name: "value", Type: t.ItemType()})
	default:
		return nil, nil, fmt.Errorf("unnest: the last column is %s, not an array or a map", in.Field(n-1).Type)
	}
	if cfg.Names != nil && len(cfg.Names) != len(elems) {
		return nil, nil, fmt.Errorf("unnest: %d names for %d element columns", len(cfg.Names), len(elems))
	}
	for i := range elems {
		elems[i].Nullable = true
		if cfg.Names != nil {
			elems[i].Name = cfg.Names[i]
		}
	}
	fields = append(fields, elems...)
	if cfg.Ordinality {
		fields = append(fields, arrow.Field{Name: "ordinality", Type: arrow.PrimitiveTypes.Int64, Nullable: true})
	}
	out := arrow.NewSchema(fields, nil)
	return func(int) exec.Operator { return &unnest{cfg: cfg, schema: out, nIn: n - 1} }, out, nil
}

type unnest struct {
	exec.NoTimers
	exec.Stateless
	cfg    UnnestConfig
	schema *arrow.Schema
	nIn    int // the columns repeated
	ctx    *exec.TaskContext

	rows, elems []int32
	kinds       []exec.RowKind
}

var _ exec.Operator = (*unnest)(nil)

func (o *unnest) Open(ctx *exec.TaskContext) error {
	o.ctx = ctx
	return nil
}

func (o *unnest) Process(_ int, b exec.Batch, out exec.Emitter) error {
	defer b.Release()
	n := b.Rows()
	if n == 0 {
		return nil
	}
	col := b.Rec.Column(o.nIn)
	var offs []int32
	var values []arrow.Array // the element columns' sources, indexed by element position
	switch a := col.(type) {
	case *array.List:
		offs = a.Offsets()
		if s, ok := a.ListValues().(*array.Struct); ok {
			for k := range s.NumField() {
				values = append(values, s.Field(k))
			}
		} else {
			values = append(values, a.ListValues())
		}
	case *array.Map:
		offs = a.Offsets()
		values = append(values, a.Keys(), a.Items())
	default:
		return fmt.Errorf("unnest: column of type %s", col.DataType())
	}
	o.rows, o.elems, o.kinds = o.rows[:0], o.elems[:0], o.kinds[:0]
	for i := range n {
		k := b.Kind(i)
		switch k { // an update's halves may become different numbers of rows: a delete and an insert
		case exec.UpdateBefore:
			k = exec.Delete
		case exec.UpdateAfter:
			k = exec.Insert
		}
		lo, hi := offs[i], offs[i+1]
		if col.IsNull(i) {
			lo, hi = 0, 0
		}
		if lo == hi && o.cfg.Outer {
			o.rows, o.elems, o.kinds = append(o.rows, int32(i)), append(o.elems, -1), append(o.kinds, k)
			continue
		}
		for e := lo; e < hi; e++ {
			o.rows, o.elems, o.kinds = append(o.rows, int32(i)), append(o.elems, e), append(o.kinds, k)
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
	rows, elems := exec.NewColumnTaker(o.ctx.Alloc, o.rows), exec.NewColumnTaker(o.ctx.Alloc, o.elems)
	defer rows.Release()
	defer elems.Release()
	take := func(t *exec.ColumnTaker, src arrow.Array) error {
		a, err := t.Take(src)
		if err != nil {
			return fmt.Errorf("unnest: %w", err)
		}
		cols = append(cols, a)
		return nil
	}
	for c := range o.nIn {
		if err := take(rows, b.Rec.Column(c)); err != nil {
			return err
		}
	}
	for _, v := range values {
		if err := take(elems, v); err != nil {
			return err
		}
	}
	if o.cfg.Ordinality {
		ob := array.NewInt64Builder(o.ctx.Alloc)
		for j, e := range o.elems {
			if e < 0 {
				ob.AppendNull()
				continue
			}
			ob.Append(int64(e-offs[o.rows[j]]) + 1)
		}
		cols = append(cols, ob.NewArray())
		ob.Release()
	}
	var kinds []exec.RowKind
	if slices.ContainsFunc(o.kinds, func(k exec.RowKind) bool { return k != exec.Insert }) {
		kinds = append([]exec.RowKind(nil), o.kinds...)
	}
	return out.Emit(exec.Batch{Rec: array.NewRecordBatch(o.schema, cols, int64(len(o.rows))), Kinds: kinds})
}
