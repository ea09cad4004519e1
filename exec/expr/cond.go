package expr

import (
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/clinksql/clinksql/sqlerr"
)

// CASE, COALESCE, NULLIF, GREATEST, LEAST and short-circuit AND/OR. These choose, per row, which argument a row
// takes its value from. Postgres evaluates a CASE branch, a later COALESCE argument or the right side of an AND
// only for rows that need it, so `CASE WHEN x = 0 THEN 0 ELSE 1 / x END` never divides by zero. Here an argument
// is evaluated over the whole batch, with the rows that do not need it marked quiet (evalCtx.quiet): a bad value
// there becomes NULL without being an error or counted. The pieces are then stitched with arrow's concatenate and
// take.

func init() {
	register(bindCase, "case")
	register(bindCoalesce, "coalesce")
	register(bindNullif, "nullif")
	register(bindGreatest, "greatest", "least")
}

// lazyExpr is a node that evaluates its arguments itself.
type lazyExpr struct {
	name   string
	args   []Expr
	typ    arrow.DataType
	run    func(ec *evalCtx, args []Expr) (value, error)
	render func(args []string) string
}

func (l *lazyExpr) Type() arrow.DataType { return l.typ }
func (l *lazyExpr) children() []Expr     { return l.args }
func (l *lazyExpr) Eval(ctx *Context, rec arrow.RecordBatch) (arrow.Array, error) {
	return evalTop(l, ctx, rec)
}
func (l *lazyExpr) eval(ec *evalCtx) (value, error) { return l.run(ec, l.args) }
func (l *lazyExpr) fallible() bool {
	for _, a := range l.args {
		if a.fallible() {
			return true
		}
	}
	return false
}
func (l *lazyExpr) String() string {
	parts := make([]string, len(l.args))
	for i, a := range l.args {
		parts[i] = a.String()
	}
	if l.render != nil {
		return l.render(parts)
	}
	return l.name + "(" + strings.Join(parts, ", ") + ")"
}

// evalRows evaluates e for the given rows of ec's batch (nil: all rows). When e can meet a bad value, the other
// rows are evaluated quietly: a bad value there is neither an error nor counted. full says the result is aligned
// to the whole batch (row r at index r); it always is now that rows are masked rather than taken out.
func (ec *evalCtx) evalRows(e Expr, rows []int32) (v value, full bool, err error) {
	if rows == nil || len(rows) == ec.n || !e.fallible() {
		v, err = e.eval(ec)
		return v, true, err
	}
	q := make([]byte, bitutil.BytesForBits(int64(ec.n)))
	for i := range q {
		q[i] = 0xff
	}
	for _, r := range rows {
		bitutil.ClearBit(q, int(r))
	}
	sub := ec.withQuiet(q)
	v, err = e.eval(sub)
	return v, true, err
}

// withQuiet returns a copy of ec whose quiet rows are also those set in q (q is taken over).
func (ec *evalCtx) withQuiet(q []byte) *evalCtx {
	if ec.quiet != nil {
		for i := range q {
			q[i] |= ec.quiet[i]
		}
	}
	sub := *ec
	sub.quiet = q
	return &sub
}

func valueNull(v value, i int) bool {
	if v.arr == nil {
		return !v.sc.IsValid()
	}
	return v.arr.IsNull(i)
}

// assembler stitches a result from pieces: row r takes element pos[r] of pieces[piece[r]], or NULL when
// piece[r] < 0.
type assembler struct {
	ec     *evalCtx
	typ    arrow.DataType
	piece  []int32
	pos    []int32
	pieces []arrow.Array
}

func newAssembler(ec *evalCtx, t arrow.DataType) *assembler {
	a := &assembler{ec: ec, typ: t, piece: make([]int32, ec.n), pos: make([]int32, ec.n)}
	for i := range a.piece {
		a.piece[i] = -1
	}
	return a
}

// add registers v (taking it over) as a piece and returns its number.
func (a *assembler) add(v value) (int32, error) {
	arr := v.arr
	if arr == nil {
		var err error
		if arr, err = scalar.MakeArrayFromScalar(v.sc, 1, a.ec.mem); err != nil {
			return 0, sqlerr.Wrap(sqlerr.InternalError, err)
		}
	}
	if !arrow.TypeEqual(arr.DataType(), a.typ) {
		arr.Release()
		return 0, sqlerr.New(sqlerr.InternalError, sqlerr.NoPos, "piece of type %s in a %s result", arr.DataType(), a.typ)
	}
	a.pieces = append(a.pieces, arr)
	return int32(len(a.pieces) - 1), nil
}

func (a *assembler) release() {
	for _, p := range a.pieces {
		p.Release()
	}
	a.pieces = nil
}

// set assigns row r to element pos of piece k (a constant piece has its one element at 0).
func (a *assembler) set(r int32, k int32, pos int) {
	a.piece[r] = k
	if a.pieces[k].Len() == 1 && a.ec.n != 1 {
		pos = 0
	}
	a.pos[r] = int32(pos)
}

func (a *assembler) finish() (value, error) {
	defer a.release()
	n := a.ec.n
	// the common cases: every row from one whole piece in order, or every row NULL
	if len(a.pieces) == 0 || n == 0 {
		return nullValue(a.typ), nil
	}
	first := a.piece[0]
	same := true
	for r := 0; r < n; r++ {
		if a.piece[r] != first || (first >= 0 && a.pieces[first].Len() != 1 && int(a.pos[r]) != r) {
			same = false
			break
		}
	}
	if same {
		if first < 0 {
			return nullValue(a.typ), nil
		}
		p := a.pieces[first]
		if p.Len() == n {
			p.Retain()
			return value{arr: p}, nil
		}
		if p.Len() == 1 {
			sc, err := scalar.GetScalar(p, 0)
			if err != nil {
				return value{}, sqlerr.Wrap(sqlerr.InternalError, err)
			}
			return value{sc: sc}, nil
		}
	}
	offsets := make([]int32, len(a.pieces))
	total := 0
	for k, p := range a.pieces {
		offsets[k] = int32(total)
		total += p.Len()
	}
	all, err := array.Concatenate(a.pieces, a.ec.mem)
	if err != nil {
		return value{}, sqlerr.Wrap(sqlerr.InternalError, err)
	}
	defer all.Release()
	b := array.NewInt32Builder(a.ec.mem)
	defer b.Release()
	b.Reserve(n)
	for r := 0; r < n; r++ {
		if k := a.piece[r]; k >= 0 {
			b.UnsafeAppend(offsets[k] + a.pos[r])
		} else {
			b.UnsafeAppendBoolToBitmap(false)
		}
	}
	idx := b.NewArray()
	defer idx.Release()
	out, err := compute.TakeArray(a.ec.cc, all, idx)
	if err != nil {
		return value{}, sqlerr.Wrap(sqlerr.InternalError, err)
	}
	return value{arr: out}, nil
}

func allRows(n int) []int32 {
	rows := make([]int32, n)
	for i := range rows {
		rows[i] = int32(i)
	}
	return rows
}

// ---- CASE ----

// bindCase binds a searched CASE. Arguments: when1, then1, when2, then2, ..., and an optional trailing else
// (an odd count has one). The THEN/ELSE types are unified like Postgres' UNION/CASE resolution.
func bindCase(name string, args []Expr) (Expr, error) {
	if len(args) < 2 {
		return nil, sqlerr.New(sqlerr.SyntaxError, sqlerr.NoPos, "CASE needs at least one WHEN ... THEN")
	}
	nw := len(args) / 2
	hasElse := len(args)%2 == 1
	results := make([]Expr, 0, nw+1)
	for i := 0; i < nw; i++ {
		results = append(results, args[2*i+1])
	}
	if hasElse {
		results = append(results, args[len(args)-1])
	}
	results, t, err := unify("CASE", results)
	if err != nil {
		return nil, err
	}
	out := make([]Expr, 0, len(args))
	for i := 0; i < nw; i++ {
		w, err := needBool("CASE/WHEN", args[2*i])
		if err != nil {
			if se, ok := err.(*sqlerr.Error); ok && se.Code == sqlerr.DatatypeMismatch {
				return nil, sqlerr.New(sqlerr.DatatypeMismatch, sqlerr.NoPos, "argument of CASE/WHEN must be type boolean, not type %s", TypeName(args[2*i].Type()))
			}
			return nil, err
		}
		if sc, ok := ConstantValue(w); ok {
			// As Postgres' planner: a branch whose WHEN is a constant FALSE or NULL is dropped, and a constant
			// TRUE ends the CASE with its THEN as the ELSE; what is dropped is never evaluated, so it cannot fail.
			if b, isBool := sc.(*scalar.Boolean); !sc.IsValid() || (isBool && !b.Value) {
				continue
			}
			return caseOf(name, append(out, results[i]), t), nil
		}
		out = append(out, w, results[i])
	}
	if hasElse {
		out = append(out, results[nw])
	}
	return caseOf(name, out, t), nil
}

// caseOf is the CASE node of args (when, then, ..., [else]) of type t: the ELSE alone when no branch is left,
// NULL when nothing is.
func caseOf(name string, args []Expr, t arrow.DataType) Expr {
	switch len(args) {
	case 0:
		return NullOf(t)
	case 1:
		return args[0]
	}
	return &lazyExpr{name: name, args: args, typ: t, run: runCase, render: renderCase}
}

func renderCase(a []string) string {
	var sb strings.Builder
	sb.WriteString("CASE")
	i := 0
	for ; i+1 < len(a); i += 2 {
		sb.WriteString(" WHEN " + a[i] + " THEN " + a[i+1])
	}
	if i < len(a) {
		sb.WriteString(" ELSE " + a[i])
	}
	sb.WriteString(" END")
	return sb.String()
}

func runCase(ec *evalCtx, args []Expr) (value, error) {
	t := args[1].Type()
	as := newAssembler(ec, t)
	var remaining []int32 // nil: all rows
	rowsOf := func() []int32 {
		if remaining == nil {
			return allRows(ec.n)
		}
		return remaining
	}
	i := 0
	for ; i+1 < len(args); i += 2 {
		cur := rowsOf()
		if len(cur) == 0 {
			break
		}
		cond, full, err := ec.evalRows(args[i], cur)
		if err != nil {
			as.release()
			return value{}, err
		}
		cb := boolsOf(cond)
		var matched, rest []int32
		for j, r := range cur {
			k := j
			if full {
				k = int(r)
			}
			if !cb.null(k) && cb.at(k) {
				matched = append(matched, r)
			} else {
				rest = append(rest, r)
			}
		}
		cond.release()
		if len(matched) > 0 {
			if err := assign(ec, as, args[i+1], matched); err != nil {
				as.release()
				return value{}, err
			}
		}
		remaining = rest
		if remaining == nil {
			remaining = []int32{}
		}
	}
	if i < len(args) { // ELSE
		if cur := rowsOf(); len(cur) > 0 {
			if err := assign(ec, as, args[i], cur); err != nil {
				as.release()
				return value{}, err
			}
		}
	}
	return as.finish()
}

// assign evaluates e for rows and makes those rows take its values.
func assign(ec *evalCtx, as *assembler, e Expr, rows []int32) error {
	v, full, err := ec.evalRows(e, rows)
	if err != nil {
		return err
	}
	k, err := as.add(v)
	if err != nil {
		return err
	}
	for j, r := range rows {
		if full {
			as.set(r, k, int(r))
		} else {
			as.set(r, k, j)
		}
	}
	return nil
}

// ---- COALESCE ----

func bindCoalesce(name string, args []Expr) (Expr, error) {
	if len(args) == 0 {
		return nil, fnNotExist(name, args)
	}
	out, t, err := unify("COALESCE", args)
	if err != nil {
		return nil, err
	}
	return &lazyExpr{name: name, args: out, typ: t, run: runCoalesce}, nil
}

func runCoalesce(ec *evalCtx, args []Expr) (value, error) {
	if len(args) == 1 {
		return args[0].eval(ec)
	}
	as := newAssembler(ec, args[0].Type())
	remaining := allRows(ec.n)
	for _, a := range args {
		if len(remaining) == 0 {
			break
		}
		v, full, err := ec.evalRows(a, remaining)
		if err != nil {
			as.release()
			return value{}, err
		}
		var k int32 = -1
		var rest []int32
		for j, r := range remaining {
			idx := j
			if full {
				idx = int(r)
			}
			if valueNull(v, idx) {
				rest = append(rest, r)
				continue
			}
			if k < 0 {
				if v.arr != nil {
					v.arr.Retain()
				}
				if k, err = as.add(v); err != nil {
					v.release()
					as.release()
					return value{}, err
				}
			}
			as.set(r, k, idx)
		}
		v.release()
		remaining = rest
	}
	return as.finish()
}

// ---- NULLIF ----

func bindNullif(name string, args []Expr) (Expr, error) {
	if len(args) != 2 {
		return nil, fnNotExist(name, args)
	}
	eq, err := Call("=", args[0], args[1])
	if err != nil {
		return nil, err
	}
	// the comparison's coerced left side is the value returned (Postgres returns the first argument's type)
	x := args[0]
	if isNull(x.Type()) {
		return NullOf(args[1].Type()), nil
	}
	return &lazyExpr{name: name, args: []Expr{x, eq}, typ: x.Type(),
		render: func(a []string) string {
			return "nullif(" + strings.TrimPrefix(strings.TrimSuffix(a[1], ")"), "(") + ")"
		},
		run: func(ec *evalCtx, args []Expr) (value, error) {
			xv, err := args[0].eval(ec)
			if err != nil {
				return value{}, err
			}
			ev, err := args[1].eval(ec)
			if err != nil {
				xv.release()
				return value{}, err
			}
			defer ev.release()
			as := newAssembler(ec, args[0].Type())
			k, err := as.add(xv)
			if err != nil {
				return value{}, err
			}
			eb := boolsOf(ev)
			for r := 0; r < ec.n; r++ {
				if eb.null(r) || !eb.at(r) {
					as.set(int32(r), k, r)
				}
			}
			return as.finish()
		}}, nil
}

// ---- GREATEST / LEAST ----

// bindGreatest binds GREATEST/LEAST: NULL arguments are ignored, the result is NULL only when all are (Postgres).
func bindGreatest(name string, args []Expr) (Expr, error) {
	if len(args) == 0 {
		return nil, fnNotExist(name, args)
	}
	out, t, err := unify(strings.ToUpper(name), args)
	if err != nil {
		return nil, err
	}
	if isNull(t) {
		return NullOf(TypeText), nil
	}
	cmp := "greater"
	if name == "least" {
		cmp = "less"
	}
	return &lazyExpr{name: name, args: out, typ: t, run: func(ec *evalCtx, args []Expr) (value, error) {
		acc, err := args[0].eval(ec)
		if err != nil {
			return value{}, err
		}
		for _, a := range args[1:] {
			v, err := a.eval(ec)
			if err != nil {
				acc.release()
				return value{}, err
			}
			next, err := pickPairwise(ec, t, cmp, acc, v)
			acc.release()
			v.release()
			if err != nil {
				return value{}, err
			}
			acc = next
		}
		return acc, nil
	}}, nil
}

// pickPairwise returns, per row, b when acc is NULL or b is not NULL and b cmp acc; acc otherwise.
func pickPairwise(ec *evalCtx, t arrow.DataType, cmp string, acc, b value) (value, error) {
	better, err := compareValues(ec, cmp, b, acc)
	if err != nil {
		return value{}, err
	}
	defer better.release()
	bb := boolsOf(better)
	as := newAssembler(ec, t)
	if acc.arr != nil {
		acc.arr.Retain()
	}
	ka, err := as.add(acc)
	if err != nil {
		return value{}, err
	}
	if b.arr != nil {
		b.arr.Retain()
	}
	kb, err := as.add(b)
	if err != nil {
		as.release()
		return value{}, err
	}
	for r := 0; r < ec.n; r++ {
		takeB := !valueNull(b, r) && (valueNull(acc, r) || (!bb.null(r) && bb.at(r)))
		if takeB {
			as.set(int32(r), kb, r)
		} else if !valueNull(acc, r) {
			as.set(int32(r), ka, r)
		}
	}
	return as.finish()
}

// ---- short-circuit AND / OR ----

// shortCircuit is AND/OR whose right side can fail: the right side is evaluated only on rows where the left
// side does not already decide the result (left not false for AND, not true for OR).
type shortCircuit struct {
	or          bool
	left, right Expr
}

func (s *shortCircuit) Type() arrow.DataType { return TypeBool }
func (s *shortCircuit) children() []Expr     { return []Expr{s.left, s.right} }
func (s *shortCircuit) fallible() bool       { return true }
func (s *shortCircuit) Eval(ctx *Context, rec arrow.RecordBatch) (arrow.Array, error) {
	return evalTop(s, ctx, rec)
}
func (s *shortCircuit) String() string {
	op := " AND "
	if s.or {
		op = " OR "
	}
	return "(" + s.left.String() + op + s.right.String() + ")"
}

func (s *shortCircuit) eval(ec *evalCtx) (value, error) {
	lv, err := s.left.eval(ec)
	if err != nil {
		return value{}, err
	}
	defer lv.release()
	fn := "and_kleene"
	if s.or {
		fn = "or_kleene"
	}
	rctx := ec
	if lv.isScalar() {
		if lv.sc.IsValid() && scalarBool(lv.sc) == s.or { // false AND x, true OR x
			return value{sc: lv.sc}, nil
		}
	} else {
		// the rows the left side decides: valid and false (AND) or valid and true (OR)
		d := lv.arr.Data()
		n := ec.n
		q := make([]byte, bitutil.BytesForBits(int64(n)))
		vals := d.Buffers()[1].Bytes()
		if s.or {
			bitutil.CopyBitmap(vals, d.Offset(), n, q, 0)
		} else {
			bitutil.InvertBitmap(vals, d.Offset(), n, q, 0)
		}
		if lv.arr.NullN() > 0 {
			bitutil.BitmapAnd(q, d.Buffers()[0].Bytes(), 0, int64(d.Offset()), q, 0, int64(n))
		}
		decided := bitutil.CountSetBits(q, 0, n)
		if decided == n {
			lv.arr.Retain()
			return value{arr: lv.arr}, nil
		}
		if decided > 0 {
			rctx = ec.withQuiet(q)
		}
	}
	rv, err := s.right.eval(rctx)
	if err != nil {
		return value{}, err
	}
	defer rv.release()
	d, err := compute.CallFunction(ec.cc, fn, nil, lv.datum(), rv.datum())
	if err != nil {
		return value{}, sqlerr.Wrap(sqlerr.InternalError, err)
	}
	return fromDatum(d)
}
