package planner

import (
	"errors"
	"fmt"
	"math/big"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/clinksql/clinksql/catalog"
	"github.com/clinksql/clinksql/exec/expr"
	"github.com/clinksql/clinksql/sql/parser"
	"github.com/clinksql/clinksql/sqlerr"
)

// exprBinder turns AST expressions into bound expr.Expr over a scope's columns. With agg set, it binds the
// SELECT list and HAVING of an aggregation: group keys and aggregate calls resolve to the aggregate's output
// columns, and any other column is a grouping error.
type exprBinder struct {
	sc     *scope
	agg    *aggBinding
	params *Params
	// tz is the session's time zone (nil: UTC), for what converts TIMESTAMP WITH TIME ZONE (timezone.go).
	tz *time.Location
	// fns resolves user-defined functions and records those used (function.go); nil: none are known.
	fns *funcScope
	// noProcTime, when set, names where PROCTIME() is refused (a WATERMARK expression).
	noProcTime string
}

// posErr attaches pos to an error without one (expression binding errors come without positions).
func posErr(err error, pos int) error {
	var e *sqlerr.Error
	if errors.As(err, &e) {
		return e.WithPos(pos)
	}
	return sqlerr.New(sqlerr.InternalError, pos, "%v", err)
}

func (b *exprBinder) bind(e parser.Expr) (expr.Expr, error) {
	if b.sc != nil {
		if v, ok := b.sc.subs[e]; ok {
			return v, nil
		}
	}
	if b.agg != nil {
		if i, ok := b.agg.lookup(e); ok {
			c := b.agg.out[i]
			return expr.Column(i, c.Name, c.Type), nil
		}
	}
	switch e := e.(type) {
	case *parser.ColumnRef:
		if b.agg != nil {
			// Not a group key: is it a column at all?
			if _, err := b.agg.in.resolve(e.Table, e.Name, e.P); err != nil {
				return nil, err
			}
			name := e.Name
			if e.Table != "" {
				name = e.Table + "." + e.Name
			}
			return nil, sqlerr.New(sqlerr.GroupingError, e.P,
				"column %q must appear in the GROUP BY clause or be used in an aggregate function", name)
		}
		i, err := b.sc.resolve(e.Table, e.Name, e.P)
		if err != nil {
			if sqlerr.Code(err) == sqlerr.UndefinedTable {
				// person.name: a field of ROW column person, when no range variable is called person.
				if j, err2 := b.sc.resolve("", e.Table, e.P); err2 == nil && b.sc.cols[j].Type.ID() == arrow.STRUCT {
					c := b.sc.cols[j]
					return b.call(e.P, "field", expr.Column(j, c.Name, c.Type), expr.String(e.Name))
				}
			}
			return nil, err
		}
		c := b.sc.cols[i]
		return expr.Column(i, c.Name, c.Type), nil
	case *parser.Star:
		return nil, sqlerr.New(sqlerr.SyntaxError, e.P, "* is only allowed in a select list or COUNT(*)")
	case *parser.Literal:
		if e.Kind == parser.LitTimestampTZ {
			return timestampTZLiteral(b.tz, e)
		}
		return bindLiteral(e)
	case *parser.Interval:
		us, err := ParseInterval(e.Value, e.Unit)
		if err != nil {
			return nil, sqlerr.New(sqlerr.InvalidDatetime, e.P, "%v", err)
		}
		return expr.Interval(us), nil
	case *parser.ParamRef:
		return b.params.bindParam(e, b.tz)
	case *parser.Unary:
		x, err := b.bind(e.X)
		if err != nil {
			return nil, err
		}
		switch e.Op {
		case "+":
			return x, nil
		case "-":
			if lit, ok := e.X.(*parser.Literal); ok && (lit.Kind == parser.LitInt || lit.Kind == parser.LitDecimal || lit.Kind == parser.LitFloat) {
				text := "-" + lit.Text
				if neg, ok := strings.CutPrefix(lit.Text, "-"); ok { // - (-1): the parser folded the inner sign
					text = neg
				}
				return bindLiteral(&parser.Literal{P: e.P, Kind: lit.Kind, Text: text})
			}
			return b.call(e.P, "neg", x)
		case "not":
			return b.call(e.P, "not", x)
		}
		return nil, sqlerr.New(sqlerr.SyntaxError, e.P, "unknown unary operator %s", e.Op)
	case *parser.Binary:
		l, err := b.bind(e.L)
		if err != nil {
			return nil, err
		}
		r, err := b.bind(e.R)
		if err != nil {
			return nil, err
		}
		if e.Op != "||" { // text || anything concatenates: a quoted literal stays text
			l, r, err = b.coerceUnknown(l, r, e.L, e.R)
			if err != nil {
				return nil, posErr(err, e.P)
			}
			if l, r, err = b.mixedTimestamps(l, r); err != nil {
				return nil, posErr(err, e.P)
			}
		}
		return b.call(e.P, e.Op, l, r)
	case *parser.IsNull:
		x, err := b.bind(e.X)
		if err != nil {
			return nil, err
		}
		if e.Not {
			return b.call(e.P, "is_not_null", x)
		}
		return b.call(e.P, "is_null", x)
	case *parser.IsBool:
		x, err := b.bind(e.X)
		if err != nil {
			return nil, err
		}
		name := map[[2]bool]string{{true, false}: "is_true", {true, true}: "is_not_true",
			{false, false}: "is_false", {false, true}: "is_not_false"}[[2]bool{e.Value, e.Not}]
		return b.call(e.P, name, x)
	case *parser.Between:
		ge := &parser.Binary{P: e.P, Op: ">=", L: e.X, R: e.Lo}
		le := &parser.Binary{P: e.P, Op: "<=", L: e.X, R: e.Hi}
		var both parser.Expr = &parser.Binary{P: e.P, Op: "and", L: ge, R: le}
		if e.Not {
			both = &parser.Unary{P: e.P, Op: "not", X: both}
		}
		return b.bind(both)
	case *parser.InList:
		if e.Sub != nil {
			return nil, sqlerr.New(sqlerr.FeatureNotSupported, e.P, "IN (subquery) is supported as a condition of WHERE (ANDed with the others), not here")
		}
		x, err := b.bind(e.X)
		if err != nil {
			return nil, err
		}
		args := []expr.Expr{x}
		allConst := true
		for _, item := range e.List {
			v, err := b.bind(item)
			if err != nil {
				return nil, err
			}
			if _, v, err = b.coerceUnknown(x, v, e.X, item); err != nil {
				return nil, posErr(err, item.Pos())
			}
			allConst = allConst && expr.IsConstant(v)
			args = append(args, v)
		}
		var in expr.Expr
		if allConst {
			in, err = b.call(e.P, "in", args...)
		} else {
			// x IN (a, b) with non-constant items is x = a OR x = b.
			for _, v := range args[1:] {
				eq, err := b.call(e.P, "=", x, v)
				if err != nil {
					return nil, err
				}
				if in == nil {
					in = eq
				} else if in, err = b.call(e.P, "or", in, eq); err != nil {
					return nil, err
				}
			}
		}
		if err != nil {
			return nil, err
		}
		if e.Not {
			return b.call(e.P, "not", in)
		}
		return in, nil
	case *parser.Like:
		x, err := b.bind(e.X)
		if err != nil {
			return nil, err
		}
		p, err := b.bind(e.Pattern)
		if err != nil {
			return nil, err
		}
		name := "like"
		switch {
		case e.Regexp && e.CaseInsensitive:
			name = "regexp_like_ci"
		case e.Regexp:
			name = "regexp_like"
		case e.CaseInsensitive:
			name = "ilike"
		}
		args := []expr.Expr{x, p}
		if e.Escape != nil {
			esc, err := b.bind(e.Escape)
			if err != nil {
				return nil, err
			}
			args = append(args, esc)
		}
		m, err := b.call(e.P, name, args...)
		if err != nil {
			return nil, err
		}
		if e.Not {
			return b.call(e.P, "not", m)
		}
		return m, nil
	case *parser.Case:
		var args []expr.Expr
		var operand expr.Expr
		if e.Operand != nil {
			var err error
			if operand, err = b.bind(e.Operand); err != nil {
				return nil, err
			}
		}
		for _, w := range e.Whens {
			cond, err := b.bind(w.Cond)
			if err != nil {
				return nil, err
			}
			if operand != nil {
				o, c, err := b.coerceUnknown(operand, cond, e.Operand, w.Cond)
				if err != nil {
					return nil, posErr(err, w.Cond.Pos())
				}
				if cond, err = b.call(w.Cond.Pos(), "=", o, c); err != nil {
					return nil, err
				}
			}
			res, err := b.bind(w.Result)
			if err != nil {
				return nil, err
			}
			args = append(args, cond, res)
		}
		if e.Else != nil {
			els, err := b.bind(e.Else)
			if err != nil {
				return nil, err
			}
			args = append(args, els)
		}
		return b.call(e.P, "case", args...)
	case *parser.Cast:
		t, err := arrowType(e.Type)
		if err != nil {
			return nil, err
		}
		if f, ok := e.X.(*parser.Func); ok && f.Name == "array" && len(f.Args) == 0 && t.ID() == arrow.LIST {
			return expr.EmptyList(t), nil // ARRAY[]::INT[]: an empty array has its type from the cast
		}
		x, err := b.bind(e.X)
		if err != nil {
			return nil, err
		}
		if e.Type.Name == "DECIMAL" && e.Type.Precision < 0 {
			if t, err = expr.UnconstrainedNumeric(x, t); err != nil {
				return nil, posErr(err, e.X.Pos())
			}
		}
		c, err := castIn(b.tz, x, t, e.Try)
		if err != nil {
			// A constant that does not convert is reported at the constant, as Postgres does.
			if _, lit := e.X.(*parser.Literal); lit {
				return nil, posErr(err, e.X.Pos())
			}
			return nil, posErr(err, e.P)
		}
		if e.Type.Name == "VARCHAR" && e.Type.Precision >= 0 {
			// An explicit cast to VARCHAR(n) cuts the value to n characters.
			return b.call(e.P, "varchar_truncate", c, expr.Int64(int64(e.Type.Precision)))
		}
		return c, nil
	case *parser.Extract:
		x, err := b.bind(e.X)
		if err != nil {
			return nil, err
		}
		args := []expr.Expr{expr.String(e.Field), x}
		if r, ok, err := b.bindZoned(&parser.Func{P: e.P, Name: "extract"}, args); ok || err != nil {
			return r, err
		}
		return b.call(e.P, "extract", args...)
	case *parser.Func:
		return b.bindFunc(e)
	case *parser.Subquery:
		if e.Exists {
			return nil, sqlerr.New(sqlerr.FeatureNotSupported, e.P, "EXISTS is supported as a condition of WHERE (ANDed with the others), not here")
		}
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, e.P,
			"a scalar subquery is supported in WHERE and in the select list of a query that does not aggregate, not here")
	}
	return nil, sqlerr.New(sqlerr.FeatureNotSupported, e.Pos(), "expression %T is not supported", e)
}

// aggregateNames are the aggregate functions; a call to one outside an aggregation context is an error.
var aggregateNames = map[string]bool{"count": true, "sum": true, "min": true, "max": true, "avg": true}

// windowAuxNames are the legacy group-window auxiliary functions: TUMBLE_START(ts, INTERVAL ...) and friends.
var windowAuxNames = map[string]bool{
	"tumble_start": true, "tumble_end": true, "hop_start": true, "hop_end": true,
	"session_start": true, "session_end": true, "tumble_rowtime": true, "hop_rowtime": true, "session_rowtime": true,
}

func (b *exprBinder) bindFunc(e *parser.Func) (expr.Expr, error) {
	if e.Over != nil {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, e.P, "window function %s() OVER (...) is not supported yet", e.Name)
	}
	if aggregateNames[e.Name] {
		if b.agg == nil {
			return nil, sqlerr.New(sqlerr.GroupingError, e.P, "aggregate functions are not allowed here")
		}
		// lookup failed above: an aggregate nested in an aggregate's argument.
		return nil, sqlerr.New(sqlerr.GroupingError, e.P, "aggregate function calls cannot be nested")
	}
	if windowAuxNames[e.Name] {
		return nil, sqlerr.New(sqlerr.GroupingError, e.P, "%s() needs GROUP BY %s(...) with the same arguments",
			e.Name, strings.SplitN(e.Name, "_", 2)[0])
	}
	if e.Star || e.Distinct || e.Filter != nil {
		return nil, sqlerr.New(sqlerr.SyntaxError, e.P, "%s is not an aggregate function", e.Name)
	}
	args := make([]expr.Expr, len(e.Args))
	for i, a := range e.Args {
		v, err := b.bind(a)
		if err != nil {
			return nil, err
		}
		args[i] = v
	}
	name := strings.TrimPrefix(e.Name, "pg_catalog.")
	switch name {
	case "proctime":
		// Flink's processing-time attribute: the wall-clock time the row is processed at (exec.ProcessingClock).
		if len(args) != 0 {
			return nil, sqlerr.New(sqlerr.UndefinedFunction, e.P, "PROCTIME() takes no arguments")
		}
		if b.noProcTime != "" {
			return nil, sqlerr.New(sqlerr.FeatureNotSupported, e.P, "PROCTIME() is not allowed in %s", b.noProcTime)
		}
		return expr.ProcTime(), nil
	case "current_timestamp", "now", "localtimestamp", "current_date":
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, e.P,
			"%s() is not supported: results must be a function of the input (use event time)", name)
	case "char_length", "character_length":
		name = "char_length"
	case "substr":
		name = "substring"
	}
	if fn, ok := b.fns.lookup(name); ok {
		return b.callUser(e, fn, args)
	}
	if r, ok, err := b.bindZoned(&parser.Func{P: e.P, Name: name}, args); ok || err != nil {
		return r, err
	}
	return b.call(e.P, name, args...)
}

func (b *exprBinder) call(pos int, name string, args ...expr.Expr) (expr.Expr, error) {
	c, err := expr.Call(name, args...)
	if err != nil {
		return nil, posErr(err, pos)
	}
	return c, nil
}

// coerceUnknown gives a string literal (or an untyped $n) the type of the other side, as Postgres resolves an
// unknown-typed literal: ts > '2026-01-01 00:00:00' compares timestamps, price = '10' compares numbers.
func (b *exprBinder) coerceUnknown(l, r expr.Expr, la, ra parser.Expr) (expr.Expr, expr.Expr, error) {
	conv := func(lit expr.Expr, litAST parser.Expr, other expr.Expr) (expr.Expr, error) {
		if n, ok := b.params.isUntyped(litAST); ok {
			b.params.infer(n, other.Type())
		} else if !isStringLiteral(litAST) {
			return lit, nil
		}
		switch other.Type().ID() {
		case arrow.STRING, arrow.NULL, arrow.LARGE_STRING:
			return lit, nil
		}
		return castIn(b.tz, lit, other.Type(), false)
	}
	var err error
	if l, err = conv(l, la, r); err != nil {
		return nil, nil, err
	}
	if r, err = conv(r, ra, l); err != nil {
		return nil, nil, err
	}
	return l, r, nil
}

func isStringLiteral(e parser.Expr) bool {
	lit, ok := e.(*parser.Literal)
	return ok && lit.Kind == parser.LitString
}

// bindLiteral types a constant as Postgres does: integers are INT when they fit, then BIGINT, then NUMERIC;
// decimal literals are NUMERIC; 1e3 is DOUBLE.
func bindLiteral(l *parser.Literal) (expr.Expr, error) {
	switch l.Kind {
	case parser.LitNull:
		return expr.Null(), nil
	case parser.LitBool:
		return expr.Bool(l.Text == "true"), nil
	case parser.LitInt:
		v, err := strconv.ParseInt(l.Text, 10, 64)
		if err == nil {
			if v >= -1<<31 && v < 1<<31 {
				return expr.Int32(int32(v)), nil
			}
			return expr.Int64(v), nil
		}
		if _, ok := new(big.Int).SetString(l.Text, 10); !ok {
			return nil, sqlerr.New(sqlerr.SyntaxError, l.P, "invalid integer literal %s", l.Text)
		}
		fallthrough
	case parser.LitDecimal:
		d, err := expr.Decimal(l.Text)
		if err != nil {
			return nil, posErr(err, l.P)
		}
		return d, nil
	case parser.LitFloat:
		f, err := strconv.ParseFloat(l.Text, 64)
		if err != nil || expr.FloatUnderflow(l.Text, f) {
			return nil, sqlerr.New(sqlerr.NumericOutOfRange, l.P, "%q is out of range for type double precision", l.Text)
		}
		return expr.Float64(f), nil
	case parser.LitString:
		return expr.String(l.Text), nil
	case parser.LitTimestamp:
		c, err := expr.Cast(expr.String(l.Text), catalog.TimestampType)
		if err != nil {
			return nil, posErr(err, l.P)
		}
		return c, nil
	case parser.LitDate:
		c, err := expr.Cast(expr.String(l.Text), arrow.FixedWidthTypes.Date32)
		if err != nil {
			return nil, posErr(err, l.P)
		}
		return c, nil
	}
	return nil, sqlerr.New(sqlerr.InternalError, l.P, "literal kind %d", l.Kind)
}

// arrowType maps a declared SQL type to its Arrow type, with the error at the type's position.
func arrowType(t parser.TypeName) (arrow.DataType, error) {
	dt, err := catalogType(t).Arrow()
	if err != nil {
		return nil, sqlerr.New(sqlerr.UndefinedObject, t.P, "%v", err)
	}
	return dt, nil
}

func catalogType(t parser.TypeName) catalog.Type {
	c := catalog.Type{Name: t.Name, Precision: t.Precision, Scale: t.Scale}
	for _, f := range t.Fields {
		c.Fields = append(c.Fields, catalog.RowField{Name: f.Name, Type: catalogType(f.Type)})
	}
	sub := func(s *parser.TypeName) *catalog.Type {
		if s == nil {
			return nil
		}
		ct := catalogType(*s)
		return &ct
	}
	c.Elem, c.Key, c.Value = sub(t.Elem), sub(t.Key), sub(t.Value)
	return c
}

// fingerprint is a structural key of an AST expression that ignores positions, with column references resolved
// against sc: GROUP BY user_id and the select item c.user_id are the same expression.
func fingerprint(sc *scope, e any) string {
	var sb strings.Builder
	writeFingerprint(&sb, reflect.ValueOf(e), sc)
	return sb.String()
}

var columnRefType = reflect.TypeOf(parser.ColumnRef{})

func writeFingerprint(sb *strings.Builder, v reflect.Value, sc *scope) {
	if v.Kind() == reflect.Struct && v.Type() == columnRefType && sc != nil {
		ref := v.Interface().(parser.ColumnRef)
		if i, err := sc.resolve(ref.Table, ref.Name, ref.P); err == nil {
			fmt.Fprintf(sb, "col#%d", i)
			return
		}
	}
	switch v.Kind() {
	case reflect.Invalid:
		sb.WriteString("nil")
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			sb.WriteString("nil")
			return
		}
		writeFingerprint(sb, v.Elem(), sc)
	case reflect.Struct:
		sb.WriteString(v.Type().Name())
		sb.WriteByte('{')
		for i := 0; i < v.NumField(); i++ {
			f := v.Type().Field(i)
			if f.Name == "P" || strings.HasSuffix(f.Name, "P") && f.Type.Kind() == reflect.Int {
				continue
			}
			sb.WriteString(f.Name)
			sb.WriteByte(':')
			writeFingerprint(sb, v.Field(i), sc)
			sb.WriteByte(' ')
		}
		sb.WriteByte('}')
	case reflect.Slice:
		sb.WriteByte('[')
		for i := 0; i < v.Len(); i++ {
			writeFingerprint(sb, v.Index(i), sc)
			sb.WriteByte(',')
		}
		sb.WriteByte(']')
	default:
		fmt.Fprintf(sb, "%v", v.Interface())
	}
}
