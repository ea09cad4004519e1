package expr

import (
	"runtime"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/clinksql/clinksql/sqlerr"
)

// UserFunction is a function whose code lives outside this package: a WebAssembly module (exec/wasm). UserCall
// binds a call to it. Every Context opens its own instance of it at its first batch and keeps it for the batches
// after (Context.Close releases it; so does the garbage collector, once the Context is gone).
type UserFunction interface {
	// Name is the function's SQL name, for EXPLAIN and errors.
	Name() string
	// Open returns a new instance, for one Context (one goroutine).
	Open() (UserInstance, error)
}

// UserInstance evaluates a user function for one Context: one goroutine at a time.
type UserInstance interface {
	// Eval computes rows [0, n) of the function over args (arrays of n rows, one per parameter, of the types the
	// call was bound with), appending one value per row to out, a builder of the function's return type. A row
	// where skip(i) is true gets a NULL without a call (the function is strict). A bad value of row i (a trap,
	// a result the return type cannot hold) goes to bad(i, err): when bad returns nil, the instance appends a
	// NULL for the row and goes on; otherwise it returns bad's error. Any other error (the function did not
	// return in time, the module cannot be instantiated) fails the batch.
	Eval(args []arrow.Array, n int, skip func(i int) bool, out array.Builder, bad func(i int, err *sqlerr.Error) error) error
	// Close releases the instance; it is called once.
	Close() error
}

// UserCall binds a call of fn with result type ret. The arguments must have fn's parameter types (the planner
// casts them). The call is strict (a NULL argument gives NULL without calling fn) and can fail (a trap is a bad
// value, per the Context's ErrorMode); it is never folded at bind time, even over constants, since evaluating
// it instantiates fn.
func UserCall(fn UserFunction, ret arrow.DataType, args ...Expr) Expr {
	name := fn.Name()
	return &callExpr{name: name, args: args, typ: ret, strict: true, canFail: true,
		render: func(a []string) string { return name + "(" + strings.Join(a, ", ") + ")" },
		kern:   func(ec *evalCtx, vals []value) (value, error) { return evalUser(ec, fn, ret, vals) }}
}

func evalUser(ec *evalCtx, fn UserFunction, ret arrow.DataType, vals []value) (value, error) {
	inst, err := ec.Context.userInstance(fn)
	if err != nil {
		return value{}, err
	}
	arrs := make([]arrow.Array, len(vals))
	for i, v := range vals {
		if v.arr != nil {
			arrs[i] = v.arr
			continue
		}
		a, err := scalar.MakeArrayFromScalar(v.sc, ec.n, ec.mem)
		if err != nil {
			return value{}, err
		}
		defer a.Release()
		arrs[i] = a
	}
	skip := func(i int) bool {
		for _, a := range arrs {
			if a.IsNull(i) {
				return true
			}
		}
		return false
	}
	b := array.NewBuilder(ec.mem, ret)
	defer b.Release()
	b.Reserve(ec.n)
	if err := inst.Eval(arrs, ec.n, skip, b, func(i int, e *sqlerr.Error) error { return ec.bad(e, i) }); err != nil {
		return value{}, err
	}
	out := b.NewArray()
	if out.Len() != ec.n {
		n := out.Len()
		out.Release()
		return value{}, sqlerr.New(sqlerr.InternalError, sqlerr.NoPos, "function %s gave %d values for %d rows", fn.Name(), n, ec.n)
	}
	return value{arr: out}, nil
}

// userBox holds one open instance of a Context; the cleanup closes it when the Context is dropped unclosed.
type userBox struct {
	inst    UserInstance
	cleanup runtime.Cleanup
}

// userInstance is fn's instance in c, opened at the first call.
func (c *Context) userInstance(fn UserFunction) (UserInstance, error) {
	if box, ok := c.users[fn]; ok {
		return box.inst, nil
	}
	inst, err := fn.Open()
	if err != nil {
		return nil, err
	}
	if c.users == nil {
		c.users = map[UserFunction]*userBox{}
	}
	box := &userBox{inst: inst}
	box.cleanup = runtime.AddCleanup(box, func(i UserInstance) { _ = i.Close() }, inst)
	c.users[fn] = box
	return inst, nil
}

// Close releases what evaluation opened for this Context (the instances of user functions). The Context may be
// used again afterwards: it opens them again.
func (c *Context) Close() {
	for fn, box := range c.users {
		box.cleanup.Stop()
		_ = box.inst.Close()
		delete(c.users, fn)
	}
}
