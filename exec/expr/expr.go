package expr

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/sqlerr"
)

// ErrorMode says what a bad value (a failed cast, a division by zero, an overflow) does at run time.
type ErrorMode uint8

const (
	// ErrorsNull turns the offending value into NULL and counts it in Context.BadValues (the default of a
	// running job).
	ErrorsNull ErrorMode = iota
	// ErrorsFail makes Eval return the *sqlerr.Error (SQLSTATE 22xxx): an ad-hoc SELECT, or errors.mode = 'fail'.
	ErrorsFail
)

func (m ErrorMode) String() string {
	if m == ErrorsFail {
		return "fail"
	}
	return "null"
}

// Context is what evaluation needs besides the batch. One Context belongs to one goroutine (an operator subtask);
// Alloc must not change after the first Eval.
type Context struct {
	Alloc     memory.Allocator // nil: memory.DefaultAllocator
	Mode      ErrorMode
	BadValues *exec.Counter // may be nil
	// Clock is what PROCTIME() reads (the subtask's processing-time clock, exec.TaskContext.Clock); nil: the wall
	// clock.
	Clock exec.ProcessingClock

	cc context.Context // arrow compute's context carrying Alloc, made once
	// users are the open instances of the user functions evaluated with this Context (user.go).
	users map[UserFunction]*userBox
}

func (c *Context) computeCtx() context.Context {
	if c.cc == nil {
		ectx := compute.DefaultExecCtx()
		ectx.NumParallel = 1
		c.cc = compute.WithAllocator(compute.SetExecCtx(context.Background(), ectx), c.alloc())
	}
	return c.cc
}

func (c *Context) alloc() memory.Allocator {
	if c.Alloc == nil {
		return memory.DefaultAllocator
	}
	return c.Alloc
}

// Expr is a bound, typed scalar expression. Eval evaluates it over a whole record batch: the result has
// rec.NumRows() rows and the caller releases it. An Expr is immutable and may be shared by goroutines (each with
// its own Context).
type Expr interface {
	Type() arrow.DataType
	Eval(ctx *Context, rec arrow.RecordBatch) (arrow.Array, error)
	// String renders the expression for EXPLAIN: columns by name (or $i), operators infix and parenthesised.
	String() string

	// eval returns a value that is an array of ec.n rows or a constant (a scalar standing for ec.n equal rows).
	eval(ec *evalCtx) (value, error)
	// fallible reports whether evaluation can meet a bad value (so CASE, COALESCE and AND must not evaluate it on
	// rows they do not select).
	fallible() bool
}

// value is an intermediate result: an array (one owned reference) or a constant scalar (not owned).
type value struct {
	arr arrow.Array
	sc  scalar.Scalar
}

func (v value) release() {
	if v.arr != nil {
		v.arr.Release()
	}
}

func (v value) isScalar() bool { return v.arr == nil }

func (v value) isNullScalar() bool { return v.arr == nil && !v.sc.IsValid() }

func (v value) dataType() arrow.DataType {
	if v.arr != nil {
		return v.arr.DataType()
	}
	return v.sc.DataType()
}

// datum wraps v for an arrow compute call without taking a reference.
func (v value) datum() compute.Datum {
	if v.arr != nil {
		return &compute.ArrayDatum{Value: v.arr.Data()}
	}
	return &compute.ScalarDatum{Value: v.sc}
}

// fromDatum takes over d's reference.
func fromDatum(d compute.Datum) (value, error) {
	switch d := d.(type) {
	case *compute.ArrayDatum:
		a := d.MakeArray()
		d.Release()
		return value{arr: a}, nil
	case *compute.ScalarDatum:
		return value{sc: d.Value}, nil
	}
	d.Release()
	return value{}, fmt.Errorf("expr: unexpected compute result %s", d)
}

// evalCtx is one evaluation over one batch (or a subset of a batch's rows, for CASE and COALESCE).
type evalCtx struct {
	*Context
	rec arrow.RecordBatch
	n   int
	cc  context.Context
	mem memory.Allocator
	// quiet marks rows whose bad values are not errors: rows a CASE branch, a later COALESCE argument or the
	// right side of AND/OR is evaluated over although they do not take its value. Their values become NULL
	// silently. nil: none.
	quiet []byte
}

func newEvalCtx(ctx *Context, rec arrow.RecordBatch) *evalCtx {
	return &evalCtx{Context: ctx, rec: rec, n: int(rec.NumRows()), cc: ctx.computeCtx(), mem: ctx.alloc()}
}

// bad reports a bad value in row i. In ErrorsFail mode it returns e; otherwise it counts the value and returns
// nil, and the caller makes the value NULL. A quiet row is neither counted nor an error.
func (ec *evalCtx) bad(e *sqlerr.Error, i int) error {
	if ec.quiet != nil && bitutil.BitIsSet(ec.quiet, i) {
		return nil
	}
	if ec.Mode == ErrorsFail {
		return e
	}
	ec.BadValues.Add(1)
	return nil
}

// materialize turns v into an array of ec.n rows, taking over v.
func (ec *evalCtx) materialize(v value) (arrow.Array, error) {
	if v.arr != nil {
		return v.arr, nil
	}
	return scalar.MakeArrayFromScalar(v.sc, ec.n, ec.mem)
}

// evalTop is Eval for every node.
func evalTop(e Expr, ctx *Context, rec arrow.RecordBatch) (arrow.Array, error) {
	ec := newEvalCtx(ctx, rec)
	v, err := e.eval(ec)
	if err != nil {
		return nil, err
	}
	arr, err := ec.materialize(v)
	if err != nil {
		return nil, err
	}
	if !arrow.TypeEqual(arr.DataType(), e.Type()) && e.Type().ID() != arrow.NULL {
		arr.Release()
		return nil, sqlerr.New(sqlerr.InternalError, sqlerr.NoPos, "expression %s produced %s, declared %s", e, arr.DataType(), e.Type())
	}
	return arr, nil
}

// ---- columns ----

type column struct {
	idx  int
	name string
	typ  arrow.DataType
}

// Column references column index of the input batch, of type t; name is only for String.
func Column(index int, name string, t arrow.DataType) Expr {
	return &column{idx: index, name: name, typ: t}
}

// ColumnIndex returns the batch column a column reference reads.
func ColumnIndex(e Expr) (int, bool) {
	if c, ok := e.(*column); ok {
		return c.idx, true
	}
	return 0, false
}

func (c *column) Type() arrow.DataType { return c.typ }
func (c *column) fallible() bool       { return false }
func (c *column) String() string {
	if c.name != "" {
		return c.name
	}
	return fmt.Sprintf("$%d", c.idx)
}
func (c *column) Eval(ctx *Context, rec arrow.RecordBatch) (arrow.Array, error) {
	return evalTop(c, ctx, rec)
}
func (c *column) eval(ec *evalCtx) (value, error) {
	if c.idx < 0 || c.idx >= int(ec.rec.NumCols()) {
		return value{}, sqlerr.New(sqlerr.InternalError, sqlerr.NoPos, "column %s: batch has %d columns", c, ec.rec.NumCols())
	}
	a := ec.rec.Column(c.idx)
	if !arrow.TypeEqual(a.DataType(), c.typ) {
		return value{}, sqlerr.New(sqlerr.InternalError, sqlerr.NoPos, "column %s: batch has type %s, bound as %s", c, a.DataType(), c.typ)
	}
	a.Retain()
	return value{arr: a}, nil
}
