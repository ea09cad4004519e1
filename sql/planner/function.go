package planner

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/clinksql/clinksql/catalog"
	"github.com/clinksql/clinksql/exec/expr"
	"github.com/clinksql/clinksql/sql/parser"
	"github.com/clinksql/clinksql/sqlerr"
)

// User-defined functions. A SQL function (LANGUAGE SQL) is inlined where it is called: its body is bound with
// each parameter standing for the call's argument, cast to the parameter's type, and the result is cast to the
// function's return type, so the plan holds no trace of the function but its expression (EXPLAIN shows it
// expanded). A wasm function is a call of expr.UserCall, whose kernel the Env's WasmFunctions gives. Either way
// the statement records the function (Physical.Functions, ViewInfo.Functions), so that the catalog's DROP rules
// keep it while a view or job needs it.

// WasmFunctions is what an Env implements to plan calls of wasm functions: the compiled module of a catalog
// function (its file checked against its checksum). Without it a wasm function cannot be called.
type WasmFunctions interface {
	WasmFunction(fn *catalog.Function) (expr.UserFunction, error)
}

// maxInlineDepth bounds the nesting of SQL function calls inlined into one another: a function that calls itself,
// directly or through others, reaches it.
const maxInlineDepth = 32

// funcScope resolves user-defined functions for one statement and records the ones it used.
type funcScope struct {
	env Env
	cat *catalog.Catalog
	// overlay is a function being created (CREATE [OR REPLACE] FUNCTION): it stands for the catalog's of its
	// name, so that a body that calls itself is caught at CREATE.
	overlay *catalog.Function
	used    []string
	depth   int
	// wasm are the compiled functions of this statement, by name: a function called twice is loaded once.
	wasm map[string]expr.UserFunction
}

func newFuncScope(env Env) *funcScope { return &funcScope{env: env, cat: env.Catalog()} }

func (s *funcScope) lookup(name string) (*catalog.Function, bool) {
	if s == nil {
		return nil, false
	}
	if s.overlay != nil && s.overlay.Name == name {
		return s.overlay, true
	}
	if s.cat == nil {
		return nil, false
	}
	return s.cat.Function(name)
}

func (s *funcScope) use(name string) {
	if !slices.Contains(s.used, name) {
		s.used = append(s.used, name)
	}
}

// Functions returns the functions a binder used, sorted (nil when none).
func (s *funcScope) functions() []string {
	if s == nil || len(s.used) == 0 {
		return nil
	}
	return slices.Sorted(slices.Values(s.used))
}

// callUser binds a call of user function fn at e with the bound arguments args.
func (b *exprBinder) callUser(e *parser.Func, fn *catalog.Function, args []expr.Expr) (expr.Expr, error) {
	params := make([]arrow.DataType, len(fn.Params))
	for i, p := range fn.Params {
		t, err := p.Type.Arrow()
		if err != nil {
			return nil, sqlerr.New(sqlerr.InternalError, e.P, "function %s: %v", fn.Name, err)
		}
		params[i] = t
	}
	ret, err := fn.Returns.Arrow()
	if err != nil {
		return nil, sqlerr.New(sqlerr.InternalError, e.P, "function %s: %v", fn.Name, err)
	}
	noMatch := func() error {
		names := make([]string, len(args))
		for i, a := range args {
			names[i] = expr.TypeName(a.Type())
		}
		err := sqlerr.New(sqlerr.UndefinedFunction, e.P, "function %s(%s) does not exist", fn.Name, strings.Join(names, ", "))
		err.Hint = fmt.Sprintf("The function is %s. You might need to add explicit type casts.", fn.Signature())
		return err
	}
	if len(args) != len(params) {
		return nil, noMatch()
	}
	cast := make([]expr.Expr, len(args))
	for i, a := range args {
		untyped := isStringLiteral(e.Args[i])
		if n, ok := b.params.isUntyped(e.Args[i]); ok {
			b.params.infer(n, params[i])
			untyped = true
		}
		if !untyped && !implicitArg(a.Type(), params[i]) {
			return nil, noMatch()
		}
		if cast[i], err = castIn(b.tz, a, params[i], false); err != nil {
			return nil, posErr(err, e.Args[i].Pos())
		}
	}
	b.fns.use(fn.Name)
	if fn.Language == "wasm" {
		uf, err := b.fns.wasmFunction(fn)
		if err != nil {
			return nil, posErr(sqlerr.Wrap(sqlerr.InternalError, err), e.P) // a changed module is XX001
		}
		return expr.UserCall(uf, ret, cast...), nil
	}
	if b.fns.depth >= maxInlineDepth {
		err := sqlerr.New("54001", e.P, "function %s calls itself, directly or through other functions: SQL functions are inlined, at most %d deep",
			fn.Name, maxInlineDepth)
		return nil, err
	}
	b.fns.depth++
	defer func() { b.fns.depth-- }()
	body, err := inlineBody(fn, cast, b.tz, b.fns)
	if err != nil {
		e2 := sqlerr.As(err)
		if e2.Code == "54001" { // at the outermost call: the one in the user's text
			c := *e2
			c.Pos = e.P
			return nil, &c
		}
		return nil, sqlerr.New(e2.Code, e.P, "in function %s: %s", fn.Name, e2.Msg)
	}
	return finishBody(b.tz, fn, body, cast, ret)
}

// inlineBody binds fn's body with its parameters (by name, or $n) standing for args.
func inlineBody(fn *catalog.Function, args []expr.Expr, tz *time.Location, fns *funcScope) (expr.Expr, error) {
	body, err := parser.ParseExpr(fn.Body)
	if err != nil {
		return nil, err
	}
	sc, err := paramScope(fn, body, func(i int) expr.Expr { return args[i] })
	if err != nil {
		return nil, err
	}
	return (&exprBinder{sc: sc, fns: fns, tz: tz}).bind(body)
}

// paramScope is the scope a function's body binds in: every reference to a parameter (its name, qualified by the
// function's name or not, or $n) stands for arg(i), and nothing else resolves.
func paramScope(fn *catalog.Function, body parser.Expr, arg func(i int) expr.Expr) (*scope, error) {
	sc := &scope{subs: map[parser.Expr]expr.Expr{}}
	var err error
	parser.Walk(body, func(x parser.Expr) {
		switch x := x.(type) {
		case *parser.ColumnRef:
			if x.Table != "" && x.Table != fn.Name {
				return
			}
			for i, p := range fn.Params {
				if p.Name != "" && p.Name == x.Name {
					sc.subs[x] = arg(i)
					return
				}
			}
		case *parser.ParamRef:
			if x.N < 1 || x.N > len(fn.Params) {
				if err == nil {
					err = sqlerr.New(sqlerr.UndefinedParameter, x.P, "there is no parameter $%d", x.N)
				}
				return
			}
			sc.subs[x] = arg(x.N - 1)
		case *parser.Func:
			if x.Over != nil || aggregateNames[x.Name] {
				if err == nil {
					err = sqlerr.New(sqlerr.GroupingError, x.P, "aggregate and window functions are not allowed in a function's body")
				}
			}
		}
	})
	return sc, err
}

// finishBody casts a bound body to the return type (an assignment, as Postgres casts a SQL function's result)
// and makes a strict function NULL when an argument is.
func finishBody(tz *time.Location, fn *catalog.Function, body expr.Expr, args []expr.Expr, ret arrow.DataType) (expr.Expr, error) {
	out, err := castIn(tz, body, ret, false)
	if err != nil {
		return nil, err
	}
	if !fn.Strict || len(args) == 0 {
		return out, nil
	}
	var anyNull expr.Expr
	for _, a := range args {
		isNull, err := expr.Call("is_null", a)
		if err != nil {
			return nil, err
		}
		if anyNull == nil {
			anyNull = isNull
		} else if anyNull, err = expr.Call("or", anyNull, isNull); err != nil {
			return nil, err
		}
	}
	return expr.Call("case", anyNull, expr.NullOf(ret), out)
}

func (s *funcScope) wasmFunction(fn *catalog.Function) (expr.UserFunction, error) {
	if uf, ok := s.wasm[fn.Name]; ok {
		return uf, nil
	}
	we, ok := s.env.(WasmFunctions)
	if !ok {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, sqlerr.NoPos, "wasm function %s cannot be called here", fn.Name)
	}
	uf, err := we.WasmFunction(fn)
	if err != nil {
		return nil, err
	}
	if s.wasm == nil {
		s.wasm = map[string]expr.UserFunction{}
	}
	s.wasm[fn.Name] = uf
	return uf, nil
}

// implicitArg reports whether a value of type from is passed to a parameter of type to without an explicit cast,
// as Postgres' implicit casts allow: NULL, the same type (another precision), a wider number, DATE to TIMESTAMP,
// TIMESTAMP to TIMESTAMP WITH TIME ZONE.
func implicitArg(from, to arrow.DataType) bool {
	if from.ID() == arrow.NULL || arrow.TypeEqual(from, to) {
		return true
	}
	rf, nf := numericRank(from)
	rt, nt := numericRank(to)
	switch {
	case nf && nt:
		return rf <= rt
	case from.ID() == to.ID():
		return !expr.IsTimestampTZ(from) || expr.IsTimestampTZ(to)
	case from.ID() == arrow.DATE32 && to.ID() == arrow.TIMESTAMP:
		return true
	}
	return false
}

// ---------- CREATE FUNCTION ----------

// isBuiltinFunction reports a name a user function may not take: it would never be called (built-ins resolve
// first).
func isBuiltinFunction(name string) bool {
	if aggregateNames[name] || windowAuxNames[name] {
		return true
	}
	switch name {
	case "current_timestamp", "now", "localtimestamp", "current_date", "proctime", "char_length",
		"character_length", "substr", "row_number", "rank", "dense_rank", "lag", "lead", "tumble", "hop", "session",
		"cumulate", "coalesce", "nullif", "greatest", "least", "cast", "try_cast", "extract":
		return true
	}
	_, found := slices.BinarySearch(expr.Functions(), name)
	return found
}

// FunctionObject checks CREATE FUNCTION and returns the function the catalog keeps. A SQL function's body is
// bound against its parameters here (types checked, the result assignable to RETURNS, every function it calls
// there, no recursion), errors pointing into the statement; a wasm function's module is the engine's to load
// and check. replacing is the function of the name when CREATE OR REPLACE finds one: the replacement must keep
// its parameter and result types (42P13), as Postgres requires.
func FunctionObject(env Env, st *parser.CreateFunction, replacing *catalog.Function) (*catalog.Function, error) {
	if isBuiltinFunction(st.Name) {
		return nil, sqlerr.New(sqlerr.DuplicateFunction, st.NameP, "function %s is a built-in function", st.Name)
	}
	fn := &catalog.Function{Name: st.Name, Language: st.Language, Strict: st.Strict || st.Language == "wasm"}
	seen := map[string]bool{}
	for _, p := range st.Params {
		if _, err := arrowType(p.Type); err != nil {
			return nil, err
		}
		if p.Name != "" {
			if seen[p.Name] {
				return nil, sqlerr.New(sqlerr.InvalidFunctionDefinition, p.P, "parameter name %q used more than once", p.Name)
			}
			seen[p.Name] = true
		}
		fn.Params = append(fn.Params, catalog.Param{Name: p.Name, Type: catalogType(p.Type)})
	}
	ret, err := arrowType(st.Returns)
	if err != nil {
		return nil, err
	}
	fn.Returns = catalogType(st.Returns)
	if replacing != nil {
		if err := sameSignature(st, replacing, fn); err != nil {
			return nil, err
		}
	}
	switch st.Language {
	case "sql":
	case "wasm":
		if len(st.Options) > 0 {
			fn.Options = map[string]string{}
			for _, o := range st.Options {
				fn.Options[strings.ToLower(o.Key)] = o.Value
			}
		}
		return fn, nil
	default:
		return nil, sqlerr.New(sqlerr.UndefinedObject, st.LanguageP, "language %q does not exist", st.Language)
	}
	if len(st.Options) > 0 {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, st.Options[0].P, "a SQL function takes no WITH options")
	}
	fn.Body = parser.Format(st.Body)
	// Bind the body as written (positions into the statement) over the parameters as columns, with this
	// function standing for any of its name, so that a call of itself recurses into the depth limit.
	cols := make([]Col, len(fn.Params))
	for i, p := range fn.Params {
		t, _ := p.Type.Arrow()
		cols[i] = Col{Name: fmt.Sprintf("$%d", i+1), Type: t}
	}
	sc, err := paramScope(fn, st.Body, func(i int) expr.Expr { return expr.Column(i, cols[i].Name, cols[i].Type) })
	if err != nil {
		return nil, err
	}
	sc.cols = cols
	fns := newFuncScope(env)
	fns.overlay = fn
	fns.depth = 1
	body, err := (&exprBinder{sc: sc, fns: fns}).bind(st.Body)
	if err != nil {
		return nil, err
	}
	if !assignable(body.Type(), ret) && !(body.Type().ID() == arrow.STRING && isStringLiteral(st.Body)) {
		e := sqlerr.New(sqlerr.InvalidFunctionDefinition, exprStart(st.Body), "return type mismatch in function declared to return %s",
			expr.TypeName(ret))
		e.Detail = fmt.Sprintf("Actual return type is %s.", expr.TypeName(body.Type()))
		return nil, e
	}
	if _, err := castIn(nil, body, ret, false); err != nil {
		return nil, posErr(err, exprStart(st.Body))
	}
	return fn, nil
}

// sameSignature refuses a CREATE OR REPLACE that changes the parameter or result types.
func sameSignature(st *parser.CreateFunction, old, fn *catalog.Function) error {
	if old.Returns.String() != fn.Returns.String() {
		e := sqlerr.New(sqlerr.InvalidFunctionDefinition, st.Returns.P, "cannot change return type of existing function")
		e.Detail = fmt.Sprintf("Function %s returns %s.", old.Signature(), old.Returns)
		e.Hint = "Use DROP FUNCTION " + old.Name + " first."
		return e
	}
	same := len(old.Params) == len(fn.Params)
	for i := 0; same && i < len(fn.Params); i++ {
		same = old.Params[i].Type.String() == fn.Params[i].Type.String()
	}
	if !same {
		e := sqlerr.New(sqlerr.InvalidFunctionDefinition, st.NameP, "cannot change the parameter types of existing function %s", old.Signature())
		e.Hint = "Use DROP FUNCTION " + old.Name + " first."
		return e
	}
	return nil
}
