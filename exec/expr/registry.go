package expr

import (
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"
)

// kernel evaluates a bound call over whole arrays. args holds one value per argument (arrays of ec.n rows or
// constants); the kernel must not release them. It returns an array of ec.n rows or a constant.
type kernel func(ec *evalCtx, args []value) (value, error)

// binder type-checks a call's arguments, inserts the implicit casts, and returns the bound node.
type binder func(name string, args []Expr) (Expr, error)

var registry = map[string]binder{}

func register(b binder, names ...string) {
	for _, n := range names {
		if _, dup := registry[n]; dup {
			panic("expr: function registered twice: " + n)
		}
		registry[n] = b
	}
}

// Functions lists the names Call knows, sorted.
func Functions() []string {
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Call binds the function or operator name (lower case; the names are listed in doc.go) to args through the
// registry: it checks the argument types, applies the implicit coercions and folds the call to a constant when
// every argument is constant. Errors are *sqlerr.Error (42883 no such function/operator, 42804 wrong argument
// type, 2201B a bad constant regular expression, ...) without a position.
func Call(name string, args ...Expr) (Expr, error) {
	name = strings.ToLower(name)
	b, ok := registry[name]
	if !ok {
		return nil, fnNotExist(name, args)
	}
	e, err := b(name, args)
	if err != nil {
		return nil, err
	}
	return fold(e), nil
}

// callExpr is a bound function or operator call.
type callExpr struct {
	name string
	args []Expr
	typ  arrow.DataType
	kern kernel
	// strict: a NULL constant argument makes the result NULL without calling the kernel.
	strict bool
	// canFail: the kernel itself can meet a bad value.
	canFail bool
	render  func(args []string) string
}

func (c *callExpr) Type() arrow.DataType { return c.typ }
func (c *callExpr) Eval(ctx *Context, rec arrow.RecordBatch) (arrow.Array, error) {
	return evalTop(c, ctx, rec)
}

func (c *callExpr) fallible() bool {
	if c.canFail {
		return true
	}
	for _, a := range c.args {
		if a.fallible() {
			return true
		}
	}
	return false
}

func (c *callExpr) String() string {
	parts := make([]string, len(c.args))
	for i, a := range c.args {
		parts[i] = a.String()
	}
	if c.render != nil {
		return c.render(parts)
	}
	return c.name + "(" + strings.Join(parts, ", ") + ")"
}

func (c *callExpr) eval(ec *evalCtx) (value, error) {
	var buf [4]value
	vals := buf[:0]
	defer func() {
		for _, v := range vals {
			v.release()
		}
	}()
	// Every argument is evaluated, as Postgres evaluates a strict function's arguments before it looks for a NULL
	// among them: an argument that is NULL for every row of the batch does not spare the others their errors
	// (NULLIF(NULL, -c) fails for c = -2^63). Only a constant NULL does, folded away at bind time.
	for _, a := range c.args {
		v, err := a.eval(ec)
		if err != nil {
			return value{}, err
		}
		vals = append(vals, v)
	}
	if c.strict {
		for _, v := range vals {
			if v.isNullScalar() {
				return value{sc: scalar.MakeNullScalar(c.typ)}, nil
			}
		}
	}
	return c.kern(ec, vals)
}

func infix(op string) func([]string) string {
	return func(a []string) string { return "(" + a[0] + " " + op + " " + a[1] + ")" }
}

func prefix(op string) func([]string) string {
	return func(a []string) string { return "(" + op + a[0] + ")" }
}

func postfix(op string) func([]string) string {
	return func(a []string) string { return "(" + a[0] + " " + op + ")" }
}

// argsOf lists the children of the nodes that have some (for folding).
type withArgs interface{ children() []Expr }

func (c *callExpr) children() []Expr { return c.args }

// fold evaluates a node whose arguments are all constants once, at bind time, and returns the constant. A node
// whose evaluation fails (1/0) stays as it is, so the error follows the run-time error mode. A strict call with a
// constant NULL argument is a NULL constant whatever its other arguments are, and those are never evaluated: as
// Postgres' planner folds it, so `x % (NULL - y)` cannot fail on x.
func fold(e Expr) Expr {
	w, ok := e.(withArgs)
	if !ok || IsProcTime(e) { // PROCTIME() is the time of each batch, not of planning
		return e
	}
	if c, ok := e.(*callExpr); ok && c.strict {
		for _, a := range c.args {
			if l, ok := a.(*literal); ok && !l.sc.IsValid() {
				return &literal{sc: scalar.MakeNullScalar(c.typ)}
			}
		}
	}
	for _, a := range w.children() {
		if !IsConstant(a) {
			return e
		}
	}
	mem := memory.NewGoAllocator()
	rec := array.NewRecordBatch(arrow.NewSchema(nil, nil), nil, 1)
	defer rec.Release()
	ctx := &Context{Alloc: mem, Mode: ErrorsFail}
	arr, err := e.Eval(ctx, rec)
	if err != nil {
		return e
	}
	defer arr.Release()
	sc, err := scalar.GetScalar(arr, 0)
	if err != nil {
		return e
	}
	return &literal{sc: sc}
}
