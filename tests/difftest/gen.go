package difftest

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Type is a column or expression type, named as both dialects write it.
type Type int

const (
	Int2 Type = iota
	Int4
	Int8
	Float4
	Float8
	Numeric // NUMERIC(12,3) for columns
	Text
	Bool
	Timestamp
)

var typeSQL = map[Type]string{
	Int2: "SMALLINT", Int4: "INT", Int8: "BIGINT", Float4: "REAL", Float8: "DOUBLE PRECISION",
	Numeric: "NUMERIC(12,3)", Text: "VARCHAR", Bool: "BOOLEAN", Timestamp: "TIMESTAMP(3)",
}

func (t Type) isInt() bool    { return t == Int2 || t == Int4 || t == Int8 }
func (t Type) isFloat() bool  { return t == Float4 || t == Float8 }
func (t Type) isNumber() bool { return t.isInt() || t.isFloat() || t == Numeric }

// Column is a table column.
type Column struct {
	Name string
	Type Type
}

// Columns is the schema every generated table has; k is a small-domain join and grouping key, ts the event time
// (never NULL, WATERMARK FOR ts on the clinksql side).
var Columns = []Column{
	{"k", Int4}, {"a", Int2}, {"b", Int4}, {"c", Int8}, {"r", Float4}, {"d", Float8}, {"n", Numeric},
	{"s", Text}, {"f", Bool}, {"ts", Timestamp},
}

// Table is a generated table: its name and rows of SQL literals (each valid in both dialects for its column).
type Table struct {
	Name string
	Rows [][]string
}

// epoch is the first event time of the data; rows fall in the minute after it. The last row of every table is a
// sentinel at sentinelTS, which moves the watermark past every window of the data so that a materialized view's
// windows all fire; window queries filter it out with ts < cutoffTS.
const (
	epoch      = "2026-01-01 00:00:00"
	cutoffTS   = "2026-01-01 00:30:00"
	sentinelTS = "2026-01-01 01:00:00"
)

// Gen generates tables and queries from one seed.
type Gen struct {
	r    *rand.Rand
	gaps Gaps
	// exactSums: SUM and AVG take no float argument (GapFloatRetraction).
	exactSums bool
}

// NewGen returns a generator for seed avoiding gaps.
func NewGen(seed uint64, gaps Gaps) *Gen {
	return &Gen{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), gaps: gaps}
}

func (g *Gen) n(n int) int         { return g.r.IntN(n) }
func (g *Gen) p(p float64) bool    { return g.r.Float64() < p }
func (g *Gen) gap(x Gap) bool      { return g.gaps[x] }
func pick[T any](g *Gen, xs []T) T { return xs[g.r.IntN(len(xs))] }

// Tables generates names' tables, each with 6 to maxRows rows in ts order plus the sentinel row.
func (g *Gen) Tables(names []string, maxRows int) []Table {
	var out []Table
	for _, name := range names {
		n := 6 + g.n(maxRows-5)
		ms := make([]int, n)
		for i := range ms {
			ms[i] = g.n(60000)
		}
		slices.Sort(ms)
		t := Table{Name: name}
		for i := 0; i <= n; i++ {
			row := make([]string, len(Columns))
			for j, c := range Columns {
				if c.Type == Timestamp {
					if i == n {
						row[j] = "TIMESTAMP '" + sentinelTS + "'"
					} else {
						row[j] = tsLiteral(ms[i])
					}
					continue
				}
				if c.Name == "k" {
					if g.p(0.1) {
						row[j] = "NULL"
					} else {
						row[j] = strconv.Itoa(g.n(4))
					}
					continue
				}
				row[j] = g.value(c.Type, true)
			}
			t.Rows = append(t.Rows, row)
		}
		out = append(out, t)
	}
	return out
}

func tsLiteral(ms int) string {
	t, _ := time.Parse("2006-01-02 15:04:05", epoch)
	t = t.Add(time.Duration(ms) * time.Millisecond)
	return "TIMESTAMP '" + t.Format("2006-01-02 15:04:05.000") + "'"
}

// value is a literal of type t: edge values often, NULL sometimes. data: a table value (gaps that concern stored
// values apply; an INSERT's NULL needs no type).
func (g *Gen) value(t Type, data bool) string {
	if g.p(0.12) {
		if data {
			return "NULL"
		}
		return "CAST(NULL AS " + typeSQL[t] + ")"
	}
	v := g.raw(t)
	switch t {
	case Int4:
		return v
	case Numeric:
		if data {
			return v
		}
		return "CAST(" + v + " AS NUMERIC(12,3))"
	case Text:
		return "'" + strings.ReplaceAll(v, "'", "''") + "'"
	case Bool:
		return strings.ToUpper(v)
	case Timestamp:
		return "TIMESTAMP '" + v + "'"
	case Int2, Int8:
		return "CAST(" + v + " AS " + typeSQL[t] + ")"
	default:
		return "CAST('" + v + "' AS " + typeSQL[t] + ")"
	}
}

// raw is a value of type t in text form (what CAST(text AS t) reads).
func (g *Gen) raw(t Type) string {
	switch t {
	case Int2:
		return pick(g, []string{"0", "-1", "1", "7", "-32768", "32767", "100", "-250", "3"})
	case Int4:
		return pick(g, []string{"0", "-1", "1", "42", "-2147483648", "2147483647", "1000", "-7", "5", "65536"})
	case Int8:
		return pick(g, []string{"0", "-1", "1", "-9223372036854775808", "9223372036854775807", "123456789012", "-5", "4294967296"})
	case Float4:
		vs := []string{"0", "-1", "1.5", "0.1", "1e-37", "-2.25", "1e6", "3.4e38"}
		if g.gap(GapSumDoubleOverflow) {
			vs = vs[:len(vs)-1]
		}
		return pick(g, vs)
	case Float8:
		vs := []string{"0", "-1", "1.5", "0.1", "2.5", "-0.5", "1e-300", "1e300", "3.141592653589793", "-1e15", "Infinity", "-Infinity"}
		if !g.gap(GapSumDoubleOverflow) {
			vs = append(vs, "1.7976931348623157e308", "-1e308")
		}
		vs = append(vs, "NaN")
		if !g.gap(GapNegativeZero) {
			vs = append(vs, "-0")
		}
		return pick(g, vs)
	case Numeric:
		return pick(g, []string{"0", "-1", "1.5", "0.001", "123456789.123", "-999999999.999", "2.5", "-0.5", "10"})
	case Text:
		return pick(g, []string{"", "a", "abc", "Hello World", " x ", "naïve", "a%b_c", "123", "-7", "1.5", "true", "ABC", "it's"})
	case Bool:
		return pick(g, []string{"true", "false"})
	case Timestamp:
		return strings.TrimSuffix(strings.TrimPrefix(tsLiteral(g.n(60000)), "TIMESTAMP '"), "'")
	}
	panic("raw: type")
}

// Expr is a generated expression: its text in each dialect (the same except where a function has no common
// spelling), its type, and whether its value may differ in the last digits between the engines (floats, and
// NUMERIC quotients and averages): the comparison rounds those.
type Expr struct {
	CK, PG string
	T      Type
	Approx bool
	Lit    bool // a bare literal
	Agg    bool // contains an aggregate
	// FloatAvg: contains an AVG over REAL or DOUBLE.
	FloatAvg bool
}

func same(sql string, t Type) Expr { return Expr{CK: sql, PG: sql, T: t} }

// wrap builds f(args...) in both dialects; approx is inherited.
func wrap(t Type, f func(xs []string) string, args ...Expr) Expr {
	e := Expr{T: t}
	ck := make([]string, len(args))
	pg := make([]string, len(args))
	for i, a := range args {
		ck[i], pg[i] = a.CK, a.PG
		e.Approx = e.Approx || a.Approx
		e.Agg = e.Agg || a.Agg
		e.FloatAvg = e.FloatAvg || a.FloatAvg
	}
	e.CK, e.PG = f(ck), f(pg)
	if t.isFloat() {
		e.Approx = true
	}
	return e
}

// fmtf returns a function that replaces each %s of format by the next argument (and nothing else: % is also
// the modulo operator).
func fmtf(format string) func(xs []string) string {
	return func(xs []string) string {
		parts := strings.Split(format, "%s")
		var sb strings.Builder
		for i, p := range parts {
			sb.WriteString(p)
			if i < len(xs) && i < len(parts)-1 {
				sb.WriteString(xs[i])
			}
		}
		return sb.String()
	}
}

// scope is what an expression may read: qualified column references.
type scope struct {
	cols []Expr
}

func newScope(qualify bool, tables ...string) *scope {
	s := &scope{}
	for _, t := range tables {
		for _, c := range Columns {
			ref := c.Name
			if qualify {
				ref = t + "." + c.Name
			}
			e := same(ref, c.Type)
			e.Approx = c.Type.isFloat()
			s.cols = append(s.cols, e)
		}
	}
	return s
}

func (s *scope) of(t Type) []Expr {
	var out []Expr
	for _, c := range s.cols {
		if c.T == t {
			out = append(out, c)
		}
	}
	return out
}

// expr generates an expression of type t over s with at most depth levels of nesting.
func (g *Gen) expr(s *scope, t Type, depth int) Expr {
	if depth <= 0 || g.p(0.3) {
		return g.leaf(s, t)
	}
	d := depth - 1
	switch t {
	case Int2, Int4, Int8:
		return g.intExpr(s, t, d)
	case Float4, Float8:
		return g.floatExpr(s, t, d)
	case Numeric:
		return g.numericExpr(s, d)
	case Text:
		return g.textExpr(s, d)
	case Bool:
		return g.boolExpr(s, d)
	case Timestamp:
		if g.p(0.15) {
			raw := g.raw(Timestamp)
			if g.p(0.3) {
				raws := []string{"2026-01-01", "2026-02-30 00:00:00", "not a time", "2026-01-01 00:00:01.1235"}
				if g.gap(GapTimestampPrecision) {
					raws = raws[:3]
				}
				raw = pick(g, raws)
			}
			return same("CAST('"+raw+"' AS TIMESTAMP(3))", Timestamp)
		}
		switch g.n(3) {
		case 0:
			return wrap(Timestamp, fmtf("(%s + INTERVAL '"+strconv.Itoa(1+g.n(90))+"' SECOND)"), g.expr(s, Timestamp, d))
		case 1:
			return wrap(Timestamp, fmtf("DATE_TRUNC('"+pick(g, []string{"second", "minute", "hour"})+"', %s)"), g.expr(s, Timestamp, d))
		default:
			return g.common(s, t, d)
		}
	}
	panic("expr: type")
}

// leaf is a column or a literal.
func (g *Gen) leaf(s *scope, t Type) Expr {
	if cols := s.of(t); len(cols) > 0 && g.p(0.7) {
		return pick(g, cols)
	}
	e := same(g.value(t, false), t)
	e.Lit, e.Approx = true, t.isFloat()
	if t == Float8 && g.p(0.02) {
		e.CK, e.PG = "1e400", "1e400"
	}
	return e
}

// common is CASE, COALESCE or NULLIF over type t.
func (g *Gen) common(s *scope, t Type, d int) Expr {
	switch g.n(3) {
	case 0:
		return wrap(t, fmtf("CASE WHEN %s THEN %s ELSE %s END"), g.expr(s, Bool, d), g.expr(s, t, d), g.expr(s, t, d))
	case 1:
		return wrap(t, fmtf("COALESCE(%s, %s)"), g.expr(s, t, d), g.expr(s, t, d))
	default:
		return wrap(t, fmtf("NULLIF(%s, %s)"), g.expr(s, t, d), g.expr(s, t, d))
	}
}

// cast is CAST(x AS t) from a random other type.
func (g *Gen) cast(s *scope, t Type, d int) Expr {
	from := pick(g, []Type{Int2, Int4, Int8, Float4, Float8, Numeric, Text, Bool})
	if from == Bool && !(t == Int4 || t == Text) { // Postgres casts booleans to int and text only
		from = Int4
	}
	target := typeSQL[t]
	if t == Numeric {
		wide := "NUMERIC(38,10)"
		if g.gap(GapNumericPrecision) {
			wide = "NUMERIC(20,6)"
		}
		target = pick(g, []string{"NUMERIC(12,3)", "NUMERIC(10,2)", wide, "NUMERIC(5,1)"})
		if !g.gap(GapNumericUnconstrained) && g.p(0.3) {
			target = "NUMERIC"
		}
	}
	if t == Text {
		target = "VARCHAR"
	}
	x := g.expr(s, from, d)
	if from == Text && t != Text && g.p(0.5) {
		// a string that reads as t more often than a random one does
		x = same("'"+g.raw(t)+"'", Text)
	}
	if from == Text && (t.isInt() || t == Float8) && g.p(0.3) {
		e := Expr{CK: "TRY_CAST(" + x.CK + " AS " + target + ")", PG: "try_cast_" + typeFunc[t] + "(" + x.PG + ")", T: t}
		e.Approx, e.Agg = t.isFloat(), x.Agg
		return e
	}
	e := wrap(t, fmtf("CAST(%s AS "+target+")"), x)
	if t == Numeric && from.isFloat() {
		e.Approx = true
	}
	return e
}

// typeFunc names the Postgres try_cast_<name>(text) functions that stand for TRY_CAST (see PGSetup).
var typeFunc = map[Type]string{Int2: "int2", Int4: "int4", Int8: "int8", Float8: "float8"}

// PGSetup is run once on the Postgres side: functions that stand for clinksql built-ins Postgres lacks.
const PGSetup = `
CREATE FUNCTION try_cast_int2(x text) RETURNS smallint LANGUAGE plpgsql IMMUTABLE AS
  $$ BEGIN RETURN x::smallint; EXCEPTION WHEN data_exception THEN RETURN NULL; END $$;
CREATE FUNCTION try_cast_int4(x text) RETURNS int LANGUAGE plpgsql IMMUTABLE AS
  $$ BEGIN RETURN x::int; EXCEPTION WHEN data_exception THEN RETURN NULL; END $$;
CREATE FUNCTION try_cast_int8(x text) RETURNS bigint LANGUAGE plpgsql IMMUTABLE AS
  $$ BEGIN RETURN x::bigint; EXCEPTION WHEN data_exception THEN RETURN NULL; END $$;
CREATE FUNCTION try_cast_float8(x text) RETURNS double precision LANGUAGE plpgsql IMMUTABLE AS
  $$ BEGIN RETURN x::double precision; EXCEPTION WHEN data_exception THEN RETURN NULL; END $$;
`

func (g *Gen) intExpr(s *scope, t Type, d int) Expr {
	switch g.n(10) {
	case 0, 1, 2:
		op := pick(g, []string{"+", "-", "*", "/", "%"})
		return wrap(t, fmtf("(%s "+op+" %s)"), g.expr(s, t, d), g.expr(s, t, d))
	case 3:
		if t == Int4 { // mixed widths widen
			return wrap(t, fmtf("(%s + %s)"), g.expr(s, Int2, d), g.expr(s, Int4, d))
		}
		return wrap(t, fmtf("ABS(%s)"), g.expr(s, t, d))
	case 4:
		if cols := s.of(t); len(cols) > 0 {
			return wrap(t, fmtf("(-%s)"), pick(g, cols))
		}
		return wrap(t, fmtf("(- (%s))"), g.expr(s, t, d))
	case 5:
		if t == Int4 {
			if g.p(0.5) {
				return wrap(t, fmtf("CHAR_LENGTH(%s)"), g.expr(s, Text, d))
			}
			return wrap(t, fmtf("POSITION(%s IN %s)"), g.expr(s, Text, d), g.expr(s, Text, d))
		}
		return wrap(t, fmtf("MOD(%s, %s)"), g.expr(s, t, d), g.expr(s, t, d))
	case 6, 7:
		return g.cast(s, t, d)
	default:
		return g.common(s, t, d)
	}
}

func (g *Gen) floatExpr(s *scope, t Type, d int) Expr {
	switch g.n(10) {
	case 0, 1, 2:
		op := pick(g, []string{"+", "-", "*", "/"})
		other := t
		if t == Float8 && g.p(0.3) {
			other = pick(g, []Type{Int4, Int8, Float4})
		}
		return wrap(t, fmtf("(%s "+op+" %s)"), g.expr(s, t, d), g.expr(s, other, d))
	case 3:
		if t == Float8 {
			fn := pick(g, []string{"ABS", "SQRT", "FLOOR", "CEIL", "ROUND"})
			if g.gap(GapNegativeZero) && (fn == "CEIL" || fn == "ROUND") {
				fn = "ABS"
			}
			return wrap(t, fmtf(fn+"(%s)"), g.expr(s, t, d))
		}
		return wrap(t, fmtf("ABS(%s)"), g.expr(s, t, d))
	case 4:
		if t == Float8 {
			return wrap(t, fmtf("POWER(%s, "+pick(g, []string{"2", "0.5", "3", "-1"})+")"), g.expr(s, t, d))
		}
		return g.leaf(s, t)
	case 5:
		if g.gap(GapNegativeZero) {
			return g.leaf(s, t)
		}
		if cols := s.of(t); len(cols) > 0 {
			return wrap(t, fmtf("(-%s)"), pick(g, cols))
		}
		return g.leaf(s, t)
	case 6, 7:
		return g.cast(s, t, d)
	default:
		return g.common(s, t, d)
	}
}

func (g *Gen) numericExpr(s *scope, d int) Expr {
	switch g.n(9) {
	case 0, 1, 2:
		ops := []string{"+", "-", "*"}
		if !g.gap(GapNumericDivision) {
			ops = append(ops, "/")
		}
		op := pick(g, ops)
		other := Numeric
		if g.p(0.3) {
			other = pick(g, []Type{Int2, Int4, Int8})
		}
		e := wrap(Numeric, fmtf("(%s "+op+" %s)"), g.expr(s, Numeric, d), g.expr(s, other, d))
		if op == "/" {
			e.Approx = true
		}
		return e
	case 3:
		return wrap(Numeric, fmtf("ROUND(%s, "+strconv.Itoa(g.n(3))+")"), g.expr(s, Numeric, d))
	case 4:
		return wrap(Numeric, fmtf("ABS(%s)"), g.expr(s, Numeric, d))
	case 5, 6:
		return g.cast(s, Numeric, d)
	default:
		return g.common(s, Numeric, d)
	}
}

func (g *Gen) textExpr(s *scope, d int) Expr {
	switch g.n(12) {
	case 0, 1:
		return wrap(Text, fmtf("(%s || %s)"), g.expr(s, Text, d), g.expr(s, Text, d))
	case 2:
		return wrap(Text, fmtf(pick(g, []string{"LOWER", "UPPER", "TRIM", "LTRIM", "RTRIM"})+"(%s)"), g.expr(s, Text, d))
	case 3:
		return wrap(Text, fmtf("SUBSTRING(%s, "+strconv.Itoa(g.n(4)-1)+", "+strconv.Itoa(g.n(5))+")"), g.expr(s, Text, d))
	case 4:
		return wrap(Text, fmtf("REPLACE(%s, %s, %s)"), g.expr(s, Text, d), same(pick(g, []string{"'a'", "'l'", "' '", "''"}), Text), g.expr(s, Text, d))
	case 5:
		return wrap(Text, fmtf(pick(g, []string{"LEFT", "RIGHT"})+"(%s, "+strconv.Itoa(g.n(7)-2)+")"), g.expr(s, Text, d))
	case 6:
		return wrap(Text, fmtf("CONCAT(%s, %s)"), g.expr(s, Text, d), g.expr(s, Text, d))
	case 7, 8:
		from := pick(g, []Type{Int2, Int4, Int8, Numeric, Bool, Float8, Float4, Timestamp})
		return wrap(Text, fmtf("CAST(%s AS VARCHAR)"), g.expr(s, from, d))
	default:
		return g.common(s, Text, d)
	}
}

func (g *Gen) boolExpr(s *scope, d int) Expr {
	switch g.n(11) {
	case 0, 1, 2:
		t := pick(g, []Type{Int2, Int4, Int8, Float8, Numeric, Text, Timestamp, Bool, Float4})
		u := t
		if t.isNumber() && g.p(0.4) {
			u = pick(g, []Type{Int2, Int4, Int8, Float8, Numeric})
		}
		op := pick(g, []string{"=", "<>", "<", "<=", ">", ">="})
		e := wrap(Bool, fmtf("(%s "+op+" %s)"), g.expr(s, t, d), g.expr(s, u, d))
		e.Approx = false
		return e
	case 3, 4:
		op := pick(g, []string{"AND", "OR"})
		return wrap(Bool, fmtf("(%s "+op+" %s)"), g.expr(s, Bool, d), g.expr(s, Bool, d))
	case 5:
		return wrap(Bool, fmtf("(NOT %s)"), g.expr(s, Bool, d))
	case 6:
		t := pick(g, []Type{Int4, Text, Float8, Bool, Numeric})
		e := wrap(Bool, fmtf("(%s "+pick(g, []string{"IS NULL", "IS NOT NULL"})+")"), g.expr(s, t, d))
		e.Approx = false
		return e
	case 7:
		return wrap(Bool, fmtf("(%s "+pick(g, []string{"IS TRUE", "IS NOT TRUE", "IS FALSE", "IS NOT FALSE"})+")"), g.expr(s, Bool, d))
	case 8:
		t := pick(g, []Type{Int4, Int8, Numeric, Text})
		var e Expr
		if g.p(0.5) {
			e = wrap(Bool, fmtf("(%s "+pick(g, []string{"", "NOT "})+"BETWEEN %s AND %s)"), g.expr(s, t, d), g.leaf(s, t), g.leaf(s, t))
		} else {
			e = wrap(Bool, fmtf("(%s "+pick(g, []string{"", "NOT "})+"IN (%s, %s, %s))"), g.expr(s, t, d), g.leaf(s, t), g.leaf(s, t), g.leaf(s, t))
		}
		e.Approx = false
		return e
	case 9:
		pat := pick(g, []string{"'a%'", "'%b%'", "'_'", "'%'", "''", "'H%d'", "'a\\%b%'"})
		if g.p(0.3) {
			return wrap(Bool, fmtf("STARTS_WITH(%s, %s)"), g.expr(s, Text, d), same(pick(g, []string{"'a'", "''", "'H'"}), Text))
		}
		return wrap(Bool, fmtf("(%s "+pick(g, []string{"LIKE", "NOT LIKE", "ILIKE"})+" %s)"), g.expr(s, Text, d), same(pat, Text))
	default:
		return g.common(s, Bool, d)
	}
}

// safePred is a filter that cannot fail (comparisons of columns with literals, NULL tests), for WHERE and ON:
// Postgres does not fix the order in which it evaluates a filter's conjuncts, so a failing filter may fail in one
// engine and not in the other.
func (g *Gen) safePred(s *scope) Expr {
	var parts []Expr
	for i := 0; i < 1+g.n(2); i++ {
		c := pick(g, s.cols)
		var e Expr
		switch {
		case g.p(0.15):
			e = wrap(Bool, fmtf("(%s IS "+pick(g, []string{"", "NOT "})+"NULL)"), c)
		case c.T == Bool:
			e = wrap(Bool, fmtf("(%s IS NOT "+pick(g, []string{"TRUE", "FALSE"})+")"), c)
		default:
			e = wrap(Bool, fmtf("(%s "+pick(g, []string{"=", "<>", "<", "<=", ">", ">="})+" %s)"), c, g.leaf(&scope{}, c.T))
		}
		e.Approx = false
		parts = append(parts, e)
	}
	e := parts[0]
	for _, p := range parts[1:] {
		e = wrap(Bool, fmtf("(%s "+pick(g, []string{"AND", "OR"})+" %s)"), e, p)
	}
	return e
}

// Query is a generated query in both dialects, with what the comparison needs to know about its columns.
type Query struct {
	Kind    string // project, aggregate, join, union, distinct, window
	CK, PG  string
	Approx  []bool // per output column: compare rounded (floats, quotients, averages)
	Numeric []bool // per output column: NUMERIC (see GapNumericScaleMix)
	Real    []bool // per output column: REAL (compared to RealDigits)
	// FloatAvg: the query has an AVG over REAL or DOUBLE (see GapAvgFloatSquares).
	FloatAvg bool
	// OuterJoin: the query has a LEFT, RIGHT or FULL join (see GapTransientRowError).
	OuterJoin bool
	// Tables the query reads (for the repro).
	Tables []string
}

func (q *Query) add(item Expr, items *[]string, pgItems *[]string) {
	*items = append(*items, item.CK+" AS c"+strconv.Itoa(len(*items)))
	*pgItems = append(*pgItems, item.PG+" AS c"+strconv.Itoa(len(*pgItems)))
	q.Approx = append(q.Approx, item.Approx || item.T.isFloat())
	q.Numeric = append(q.Numeric, item.T == Numeric)
	q.Real = append(q.Real, item.T == Float4)
	q.FloatAvg = q.FloatAvg || item.FloatAvg
}

var exprTypes = []Type{Int2, Int4, Int8, Float4, Float8, Numeric, Text, Bool, Timestamp}

// Query generates one query over tables.
func (g *Gen) Query(tables []string) Query {
	switch g.n(12) {
	case 0, 1, 2:
		return g.project(tables)
	case 3, 4, 5:
		return g.aggregate(tables)
	case 6, 7, 8:
		return g.join(tables)
	case 9:
		return g.union(tables)
	case 10:
		return g.distinct(tables)
	default:
		return g.window(tables)
	}
}

func finish(q Query, ck, pg []string, rest string, restPG string) Query {
	q.CK = "SELECT " + strings.Join(ck, ", ") + rest
	q.PG = "SELECT " + strings.Join(pg, ", ") + restPG
	return q
}

func (g *Gen) where(s *scope) (string, string) {
	if !g.p(0.5) {
		return "", ""
	}
	var p Expr
	if g.p(0.7) {
		p = g.safePred(s)
	} else {
		p = g.expr(s, Bool, 2)
	}
	return " WHERE " + p.CK, " WHERE " + p.PG
}

func (g *Gen) project(tables []string) Query {
	t := pick(g, tables)
	s := newScope(true, t)
	q := Query{Kind: "project", Tables: []string{t}}
	var ck, pg []string
	for i := 0; i < 1+g.n(4); i++ {
		q.add(g.expr(s, pick(g, exprTypes), 3), &ck, &pg)
	}
	w, wpg := g.where(s)
	return finish(q, ck, pg, " FROM "+t+w, " FROM "+t+wpg)
}

// aggCall is one aggregate over s.
func (g *Gen) aggCall(s *scope) Expr {
	fn := pick(g, []string{"COUNT(*)", "COUNT", "COUNT DISTINCT", "SUM", "MIN", "MAX", "AVG"})
	var argT Type
	switch fn {
	case "COUNT(*)":
		e := same("COUNT(*)", Int8)
		e.Agg = true
		return e
	case "SUM", "AVG":
		argT = pick(g, []Type{Int2, Int4, Int8, Float8, Numeric, Float4})
		if g.exactSums && argT.isFloat() {
			argT = Numeric
		}
	case "MIN", "MAX": // Postgres has no MIN/MAX of booleans (bool_and, bool_or)
		argT = pick(g, []Type{Int2, Int4, Int8, Float4, Float8, Numeric, Text, Timestamp})
	default:
		argT = pick(g, exprTypes)
	}
	var arg Expr
	if g.p(0.6) {
		arg = g.leaf(s, argT)
	} else {
		arg = g.expr(s, argT, 2)
	}
	var e Expr
	switch fn {
	case "COUNT":
		e = wrap(Int8, fmtf("COUNT(%s)"), arg)
		e.Approx = false
	case "COUNT DISTINCT":
		e = wrap(Int8, fmtf("COUNT(DISTINCT %s)"), arg)
		e.Approx = false
	case "SUM":
		rt := Int8
		switch {
		case argT == Int8 || argT == Numeric:
			rt = Numeric
		case argT.isFloat():
			rt = argT
		}
		e = wrap(rt, fmtf("SUM(%s)"), arg)
	case "AVG":
		rt := Numeric
		if argT.isFloat() {
			rt = Float8
		}
		e = wrap(rt, fmtf("AVG(%s)"), arg)
		e.Approx, e.FloatAvg = true, argT.isFloat()
	default:
		e = wrap(argT, fmtf(fn+"(%s)"), arg)
	}
	if g.p(0.1) {
		f := g.safePred(s)
		e.CK = e.CK + " FILTER (WHERE " + f.CK + ")"
		e.PG = e.PG + " FILTER (WHERE " + f.PG + ")"
	}
	e.Agg = true
	return e
}

// groupedSelect builds SELECT keys..., aggs... FROM from [WHERE] [GROUP BY keys [HAVING]] over s.
func (g *Gen) groupedSelect(q Query, s *scope, from, fromPG string, keys []Expr) Query {
	var ck, pg []string
	for _, k := range keys {
		q.add(k, &ck, &pg)
	}
	for i := 0; i < 1+g.n(3); i++ {
		q.add(g.aggCall(s), &ck, &pg)
	}
	var w, wpg string
	if q.Kind == "join" {
		// Postgres may push a WHERE below an outer join it turns into an inner one, so a filter that can fail
		// fails for rows the join would have dropped: only filters that cannot fail over joins.
		if g.p(0.4) {
			p := g.safePred(s)
			w, wpg = " WHERE "+p.CK, " WHERE "+p.PG
		}
	} else {
		w, wpg = g.where(s)
	}
	rest, restPG := " FROM "+from+w, " FROM "+fromPG+wpg
	if len(keys) > 0 {
		var kc, kp []string
		for _, k := range keys {
			kc, kp = append(kc, k.CK), append(kp, k.PG)
		}
		rest += " GROUP BY " + strings.Join(kc, ", ")
		restPG += " GROUP BY " + strings.Join(kp, ", ")
		if g.p(0.3) {
			a := g.aggCall(s)
			var lit Expr
			if a.T == Text || a.T == Bool || a.T == Timestamp {
				lit = g.leaf(&scope{}, a.T)
				for g.gap(GapConstantFolding) && strings.Contains(lit.CK, "NULL") {
					lit = g.leaf(&scope{}, a.T) // (a constant-NULL HAVING: Postgres skips the input, see the gap)
				}
			} else {
				lit = same(strconv.Itoa(g.n(5)), Int4)
			}
			op := pick(g, []string{">", ">=", "<", "=", "<>"})
			q.FloatAvg = q.FloatAvg || a.FloatAvg
			rest += " HAVING " + a.CK + " " + op + " " + lit.CK
			restPG += " HAVING " + a.PG + " " + op + " " + lit.PG
		}
	}
	return finish(q, ck, pg, rest, restPG)
}

// keys picks 0 to 2 grouping keys: columns mostly, sometimes an expression.
func (g *Gen) keys(s *scope) []Expr {
	var keys []Expr
	for i := g.n(3); i > 0; i-- {
		if g.p(0.8) {
			keys = append(keys, pick(g, s.cols))
		} else if e := g.expr(s, pick(g, []Type{Int4, Text, Bool, Numeric}), 1); !e.Lit {
			keys = append(keys, e) // (Postgres reads a literal in GROUP BY as an ordinal or refuses it)
		}
	}
	return keys
}

func (g *Gen) aggregate(tables []string) Query {
	t := pick(g, tables)
	s := newScope(true, t)
	q := Query{Kind: "aggregate", Tables: []string{t}}
	return g.groupedSelect(q, s, t, t, g.keys(s))
}

func (g *Gen) join(tables []string) Query {
	l, r := tables[0], tables[1]
	if len(tables) > 2 && g.p(0.5) {
		l, r = pick(g, tables[:2]), tables[2]
	}
	kind := pick(g, []string{"JOIN", "LEFT JOIN", "RIGHT JOIN", "FULL JOIN"})
	s := newScope(true, l, r)
	on := l + ".k = " + r + ".k"
	if g.p(0.3) {
		p := g.safePred(s)
		on += " AND " + p.CK // safe predicates have one text
	}
	from := l + " " + kind + " " + r + " ON " + on
	q := Query{Kind: "join", Tables: []string{l, r}, OuterJoin: kind != "JOIN"}
	if g.p(0.35) {
		g.exactSums = q.OuterJoin && g.gap(GapFloatRetraction)
		defer func() { g.exactSums = false }()
		return g.groupedSelect(q, s, from, from, g.keys(s))
	}
	var ck, pg []string
	for i := 0; i < 1+g.n(4); i++ {
		q.add(g.expr(s, pick(g, exprTypes), 2), &ck, &pg)
	}
	w, wpg := "", ""
	if g.p(0.4) {
		p := g.safePred(s)
		w, wpg = " WHERE "+p.CK, " WHERE "+p.PG
	}
	return finish(q, ck, pg, " FROM "+from+w, " FROM "+from+wpg)
}

func (g *Gen) union(tables []string) Query {
	var types []Type
	for i := 0; i < 1+g.n(3); i++ {
		types = append(types, pick(g, exprTypes))
	}
	q := Query{Kind: "union"}
	var ckParts, pgParts []string
	for b := 0; b < 2+g.n(2); b++ {
		t := pick(g, tables)
		q.Tables = append(q.Tables, t)
		s := newScope(true, t)
		var ck, pg []string
		bq := Query{}
		for _, ty := range types {
			bq.add(g.expr(s, ty, 2), &ck, &pg)
		}
		w, wpg := g.where(s)
		part := finish(bq, ck, pg, " FROM "+t+w, " FROM "+t+wpg)
		ckParts, pgParts = append(ckParts, part.CK), append(pgParts, part.PG)
		if b == 0 {
			q.Approx, q.Numeric, q.Real = bq.Approx, bq.Numeric, bq.Real
		} else {
			for i := range q.Approx {
				q.Approx[i] = q.Approx[i] || bq.Approx[i]
			}
		}
	}
	q.CK, q.PG = strings.Join(ckParts, " UNION ALL "), strings.Join(pgParts, " UNION ALL ")
	return q
}

func (g *Gen) distinct(tables []string) Query {
	t := pick(g, tables)
	s := newScope(true, t)
	q := Query{Kind: "distinct", Tables: []string{t}}
	var ck, pg []string
	for i := 0; i < 1+g.n(3); i++ {
		var e Expr
		if g.p(0.6) {
			e = pick(g, s.cols)
		} else {
			e = g.expr(s, pick(g, []Type{Int4, Text, Bool, Numeric, Int2}), 2)
		}
		q.add(e, &ck, &pg)
	}
	w, wpg := g.where(s)
	q = finish(q, ck, pg, " FROM "+t+w, " FROM "+t+wpg)
	q.CK = strings.Replace(q.CK, "SELECT ", "SELECT DISTINCT ", 1)
	q.PG = strings.Replace(q.PG, "SELECT ", "SELECT DISTINCT ", 1)
	return q
}

// window is a TUMBLE or HOP aggregation; Postgres computes window_start with date_bin (HOP: one row per window a
// row is in, from generate_series).
func (g *Gen) window(tables []string) Query {
	t := pick(g, tables)
	q := Query{Kind: "window", Tables: []string{t}}
	var ckFrom, pgFrom string
	if g.p(0.5) {
		size := pick(g, []int{5, 10, 20, 30})
		ckFrom = fmt.Sprintf("TABLE(TUMBLE(TABLE %s, DESCRIPTOR(ts), INTERVAL '%d' SECOND)) AS w", t, size)
		pgFrom = fmt.Sprintf("(SELECT %s.*, date_bin(INTERVAL '%d seconds', ts, TIMESTAMP '%s') AS window_start, "+
			"date_bin(INTERVAL '%d seconds', ts, TIMESTAMP '%s') + INTERVAL '%d seconds' AS window_end FROM %s) AS w",
			t, size, epoch, size, epoch, size, t)
	} else {
		slide := pick(g, []int{5, 10})
		size := slide * (2 + g.n(3))
		ckFrom = fmt.Sprintf("TABLE(HOP(TABLE %s, DESCRIPTOR(ts), INTERVAL '%d' SECOND, INTERVAL '%d' SECOND)) AS w", t, slide, size)
		pgFrom = fmt.Sprintf("(SELECT %s.*, h.ws AS window_start, h.ws + INTERVAL '%d seconds' AS window_end FROM %s, "+
			"LATERAL (SELECT date_bin(INTERVAL '%d seconds', %s.ts, TIMESTAMP '%s') - i * INTERVAL '%d seconds' AS ws "+
			"FROM generate_series(0, %d) AS i) AS h) AS w", t, size, t, slide, t, epoch, slide, size/slide-1)
	}
	s := newScope(true, "w")
	var keys []Expr
	keys = append(keys, same("w.window_start", Timestamp), same("w.window_end", Timestamp))
	if g.p(0.5) {
		keys = append(keys, pick(g, []Expr{same("w.k", Int4), same("w.f", Bool), same("w.s", Text)}))
	}
	var ck, pg []string
	for _, k := range keys {
		q.add(k, &ck, &pg)
	}
	for i := 0; i < 1+g.n(3); i++ {
		q.add(g.aggCall(s), &ck, &pg)
	}
	filter := " WHERE w.ts < TIMESTAMP '" + cutoffTS + "'"
	if g.p(0.4) {
		p := g.safePred(s)
		filter += " AND " + p.CK
	}
	var kc []string
	for _, k := range keys {
		kc = append(kc, k.CK)
	}
	group := " GROUP BY " + strings.Join(kc, ", ")
	return finish(q, ck, pg, " FROM "+ckFrom+filter+group, " FROM "+pgFrom+filter+group)
}

// CreateSQL is the DDL of table t in each dialect: an internal stream with a watermark on ts, and a table.
func CreateSQL(t string) (ck, pg string) {
	var cols []string
	for _, c := range Columns {
		cols = append(cols, c.Name+" "+typeSQL[c.Type])
	}
	ck = "CREATE STREAM " + t + " (" + strings.Join(cols, ", ") + ", WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)"
	pg = "CREATE TABLE " + t + " (" + strings.Join(cols, ", ") + ")"
	return ck, pg
}

// InsertSQL is the INSERT of rows into t, the same in both dialects.
func InsertSQL(t string, rows [][]string) string {
	var vals []string
	for _, r := range rows {
		vals = append(vals, "("+strings.Join(r, ", ")+")")
	}
	return "INSERT INTO " + t + " VALUES " + strings.Join(vals, ", ")
}
