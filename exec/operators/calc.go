package operators

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/compute"

	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/exec/expr"
)

// CalcConfig configures a filter/project operator (Flink's Calc): WHERE then SELECT list, over one input.
type CalcConfig struct {
	// Filter keeps the rows where it is TRUE (NULL counts as FALSE); nil keeps every row. Its type must be
	// BOOLEAN.
	Filter expr.Expr
	// Project computes the output columns over the kept rows; nil passes the input columns through.
	Project []expr.Expr
	// Names names the output columns (len(Project)); missing names default to the expression text.
	Names []string
	// Mode is the bad-value policy (expr.ErrorsNull counts bad values into TaskContext.Errors).
	Mode expr.ErrorMode
}

// NewCalc returns the operator factory. The operator keeps no state: it filters each batch with arrow's filter
// kernel, carrying the row kinds along, evaluates the projections over the rows kept, and emits nothing for a
// batch without rows left.
func NewCalc(cfg CalcConfig) func(subtask int) exec.Operator {
	var schema *arrow.Schema
	var project []expr.Expr
	var used []int
	if cfg.Project != nil {
		fields := make([]arrow.Field, len(cfg.Project))
		for i, p := range cfg.Project {
			name := ""
			if i < len(cfg.Names) {
				name = cfg.Names[i]
			}
			if name == "" {
				name = p.String()
			}
			fields[i] = arrow.Field{Name: name, Type: p.Type(), Nullable: true}
		}
		schema = arrow.NewSchema(fields, nil)
		// the projections read only some input columns: filter just those, and evaluate over a batch of them
		used = expr.Columns(cfg.Project...)
		pos := make(map[int]int, len(used))
		for k, c := range used {
			pos[c] = k
		}
		project = make([]expr.Expr, len(cfg.Project))
		for i, p := range cfg.Project {
			project[i] = expr.RemapColumns(p, func(c int) int { return pos[c] })
		}
	}
	return func(int) exec.Operator {
		return &calc{cfg: cfg, schema: schema, project: project, used: used}
	}
}

type calc struct {
	exec.NoTimers
	exec.Stateless
	cfg     CalcConfig
	schema  *arrow.Schema // nil: pass-through
	project []expr.Expr   // over the batch of the used columns
	used    []int
	ctx     expr.Context
	cc      context.Context
}

var _ exec.Operator = (*calc)(nil)

func (c *calc) Open(tc *exec.TaskContext) error {
	c.ctx = expr.Context{Alloc: tc.Alloc, Mode: c.cfg.Mode, BadValues: tc.Errors, Clock: tc.Clock}
	ectx := compute.DefaultExecCtx()
	ectx.NumParallel = 1 // one goroutine per subtask: arrow must not fan out over columns
	c.cc = compute.WithAllocator(compute.SetExecCtx(context.Background(), ectx), tc.Alloc)
	if c.cfg.Filter != nil && c.cfg.Filter.Type().ID() != arrow.BOOL {
		return fmt.Errorf("calc: filter %s has type %s, not boolean", c.cfg.Filter, c.cfg.Filter.Type())
	}
	return nil
}

// Close releases what the expressions opened (user functions' instances).
func (c *calc) Close() error {
	c.ctx.Close()
	return nil
}

func (c *calc) Process(_ int, b exec.Batch, out exec.Emitter) error {
	defer b.Release()
	rec, kinds := b.Rec, b.Kinds
	if rec == nil || rec.NumRows() == 0 {
		return nil
	}
	// the columns the rest needs
	var in arrow.RecordBatch
	if c.schema == nil {
		rec.Retain()
		in = rec
	} else {
		cols := make([]arrow.Array, len(c.used))
		fields := make([]arrow.Field, len(c.used))
		for k, i := range c.used {
			cols[k] = rec.Column(i)
			fields[k] = rec.Schema().Field(i)
		}
		in = array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, rec.NumRows())
	}
	defer func() { in.Release() }()

	if c.cfg.Filter != nil {
		mask, err := c.cfg.Filter.Eval(&c.ctx, rec)
		if err != nil {
			return err
		}
		keep := mask.(*array.Boolean)
		n := selected(keep)
		switch {
		case n == 0:
			mask.Release()
			return nil
		case n < keep.Len():
			filtered, err := compute.FilterRecordBatch(c.cc, in, mask, compute.DefaultFilterOptions())
			if err != nil {
				mask.Release()
				return err
			}
			if kinds != nil {
				kinds = filterKinds(kinds, keep, n)
			}
			in.Release()
			in = filtered
		}
		mask.Release()
	}

	outRec := in
	if c.schema != nil {
		cols := make([]arrow.Array, len(c.project))
		release := func() {
			for _, col := range cols {
				if col != nil {
					col.Release()
				}
			}
		}
		for i, p := range c.project {
			col, err := p.Eval(&c.ctx, in)
			if err != nil {
				release()
				return err
			}
			cols[i] = col
		}
		outRec = array.NewRecordBatch(c.schema, cols, in.NumRows())
		release()
	} else {
		in.Retain()
	}
	return out.Emit(exec.Batch{Rec: outRec, Kinds: kinds})
}

// selected counts the rows a filter mask keeps: TRUE and not NULL.
func selected(m *array.Boolean) int {
	d := m.Data()
	vals := d.Buffers()[1].Bytes()
	if m.NullN() == 0 {
		return bitutil.CountSetBits(vals, d.Offset(), m.Len())
	}
	n := 0
	for i := 0; i < m.Len(); i++ {
		if m.IsValid(i) && m.Value(i) {
			n++
		}
	}
	return n
}

func filterKinds(kinds []exec.RowKind, keep *array.Boolean, n int) []exec.RowKind {
	out := make([]exec.RowKind, 0, n)
	for i, k := range kinds {
		if keep.IsValid(i) && keep.Value(i) {
			out = append(out, k)
		}
	}
	return out
}
