package expr

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clinksql/clinksql/sqlerr"
)

// cmpBatch: a bigint, b integer, d decimal(4,2), e decimal(6,4), s text, ts timestamp, p bool, q bool
func cmpBatch(t *testing.T, mem memory.Allocator) arrow.RecordBatch {
	return batch(t, mem,
		col{"a", TypeBigint, []any{1, 2, nil, 4}},
		col{"b", TypeInt, []any{1, 3, 3, nil}},
		col{"d", TypeDecimal(4, 2), []any{"1.00", "2.50", nil, "4.10"}},
		col{"e", TypeDecimal(6, 4), []any{"1.0000", "2.5000", "1.0000", "4.0999"}},
		col{"s", TypeText, []any{"a", "B", "b", nil}},
		col{"ts", TypeTimestamp, []any{int64(1767225600000000), int64(1767225601000000), int64(1767225601500000), nil}},
		col{"p", TypeBool, []any{true, false, nil, true}},
		col{"q", TypeBool, []any{true, nil, nil, false}},
	)
}

var (
	ca  = Column(0, "a", TypeBigint)
	cb  = Column(1, "b", TypeInt)
	cdd = Column(2, "d", TypeDecimal(4, 2))
	cee = Column(3, "e", TypeDecimal(6, 4))
	css = Column(4, "s", TypeText)
	cts = Column(5, "ts", TypeTimestamp)
	cp  = Column(6, "p", TypeBool)
	cq  = Column(7, "q", TypeBool)
)

func TestExprCompareLogic(t *testing.T) {
	runCases(t, cmpBatch, []exprCase{
		{name: "eq int widths", e: call("=", ca, cb), want: "t,f,NULL,NULL"},
		{name: "lt", e: call("<", ca, cb), want: "f,t,NULL,NULL"},
		{name: "ne", e: call("<>", ca, Int64(2)), want: "t,f,NULL,t"},
		{name: "ne bang", e: call("!=", ca, Int64(2)), want: "t,f,NULL,t"},
		// decimals of different scales compare by value: 1.00 = 1.0000, 4.10 > 4.0999
		{name: "dec eq scales", e: call("=", cdd, cee), want: "t,t,NULL,f"},
		{name: "dec gt scales", e: call(">", cdd, cee), want: "f,f,NULL,t"},
		{name: "int vs dec", e: call("=", ca, cdd), want: "t,f,NULL,f"},
		{name: "int vs dec literal", e: call(">=", ca, dec("2.5")), want: "f,f,NULL,t"},
		{name: "int vs double", e: call("<", ca, Float64(2.5)), want: "t,t,NULL,f"},
		// strings compare by bytes: 'B' (66) < 'b' (98)
		{name: "text bytes", e: call("<", css, String("b")), want: "t,t,f,NULL"},
		{name: "ts vs string literal", e: call(">", cts, String("2026-01-01 00:00:01")), want: "f,f,t,NULL"},
		{name: "ts le literal", e: call("<=", cts, Timestamp(1767225601000000)), want: "t,t,f,NULL"},
		{name: "ts vs date", e: call("=", cts, Date(20454)), want: "t,f,f,NULL"},
		{name: "null literal", e: call("=", ca, Null()), want: "NULL,NULL,NULL,NULL"},
		// Kleene logic: false AND NULL = false, true OR NULL = true
		{name: "and", e: call("and", cp, cq), want: "t,f,NULL,f"},
		{name: "or", e: call("or", cp, cq), want: "t,NULL,NULL,t"},
		{name: "and3", e: call("and", cp, cq, Bool(true)), want: "t,f,NULL,f"},
		{name: "not", e: call("not", cp), want: "f,t,NULL,f"},
		{name: "is null", e: call("is_null", ca), want: "f,f,t,f"},
		{name: "is not null", e: call("is_not_null", css), want: "t,t,t,f"},
		{name: "is true", e: call("is_true", cq), want: "t,f,f,f"},
		{name: "is not true", e: call("is_not_true", cq), want: "f,t,t,t"},
		{name: "is false", e: call("is_false", cq), want: "f,f,f,t"},
		{name: "is not false", e: call("is_not_false", cq), want: "t,t,t,f"},
		{name: "is null of literal", e: call("is_null", Null()), want: "t,t,t,t"},
		{name: "in", e: call("in", ca, Int64(1), Int64(4)), want: "t,f,NULL,t"},
		// x IN (1, NULL) is NULL when x is not found
		{name: "in with null", e: call("in", ca, Int64(1), Null()), want: "t,NULL,NULL,NULL"},
		{name: "in strings", e: call("in", css, String("a"), String("b")), want: "t,f,t,NULL"},
		{name: "in mixed numeric", e: call("in", cb, Int64(3), dec("1.0")), want: "t,t,t,NULL"},
		{name: "in non-constant", e: call("in", ca, cb, Int64(4)), want: "t,f,NULL,t"},
		{name: "between", e: call("between", ca, Int64(2), Int64(4)), want: "f,t,NULL,t"},
	})
}

func TestExprBindErrors(t *testing.T) {
	text := Column(0, "s", TypeText)
	big := Column(1, "i", TypeBigint)
	for _, c := range []struct {
		name, fn string
		args     []Expr
		code     string
		msg      string
	}{
		{"text plus bigint", "+", []Expr{text, big}, sqlerr.UndefinedFunction, "operator does not exist: text + bigint"},
		{"upper bigint", "upper", []Expr{big}, sqlerr.UndefinedFunction, "function upper(bigint) does not exist"},
		{"no such function", "frobnicate", []Expr{big}, sqlerr.UndefinedFunction, "function frobnicate(bigint) does not exist"},
		{"compare text bigint", "=", []Expr{text, big}, sqlerr.UndefinedFunction, "operator does not exist: text = bigint"},
		{"like on number", "like", []Expr{big, String("1%")}, sqlerr.DatatypeMismatch, "argument of LIKE must be type text, not type bigint"},
		{"and on number", "and", []Expr{big, Bool(true)}, sqlerr.DatatypeMismatch, "argument of AND must be type boolean, not type bigint"},
		{"case types", "case", []Expr{Bool(true), text, big}, sqlerr.DatatypeMismatch, "CASE types text and bigint cannot be matched"},
		{"case when not bool", "case", []Expr{big, text}, sqlerr.DatatypeMismatch, "argument of CASE/WHEN must be type boolean, not type bigint"},
		{"bad constant regex", "regexp_like", []Expr{text, String("(")}, sqlerr.InvalidRegex, ""},
		{"bad constant extract regex", "regexp_extract", []Expr{text, String("a[")}, sqlerr.InvalidRegex, ""},
		{"bad constant cast", "+", []Expr{big, String("12x")}, sqlerr.InvalidTextRep, `invalid input syntax for type bigint: "12x"`},
		{"float mod", "%", []Expr{Float64(1), Float64(2)}, sqlerr.UndefinedFunction, "operator does not exist: double precision % double precision"},
		{"ts plus ts", "+", []Expr{Timestamp(0), Timestamp(0)}, sqlerr.UndefinedFunction, "operator does not exist: timestamp without time zone + timestamp without time zone"},
		{"extract field", "extract", []Expr{String("fortnight"), Timestamp(0)}, sqlerr.InvalidParameter, ""},
		{"like escape at end", "like", []Expr{text, String(`ab\`)}, "22025", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Call(c.fn, c.args...)
			if codeOf(err) != c.code {
				t.Fatalf("error %v (code %q), want code %s", err, codeOf(err), c.code)
			}
			if c.msg != "" && err.Error() != c.msg {
				t.Errorf("message %q, want %q", err.Error(), c.msg)
			}
			if se := err.(*sqlerr.Error); se.Pos != sqlerr.NoPos {
				t.Errorf("position %d, want NoPos", se.Pos)
			}
		})
	}
	if _, err := Cast(text, TypeBool); err != nil {
		t.Errorf("text to bool: %v", err)
	}
	if _, err := Cast(Column(0, "d", TypeDate), TypeBool); sqlerr.Code(err) != "42846" {
		t.Errorf("date to bool: %v", err)
	}
	if _, err := Cast(String("12x"), TypeBigint); err == nil || err.Error() != `invalid input syntax for type bigint: "12x"` {
		t.Errorf("'12x'::bigint: %v", err)
	}
}

func TestExprStringAndFold(t *testing.T) {
	a := Column(0, "price", TypeBigint)
	for _, c := range []struct {
		e    Expr
		want string
	}{
		{mustCall(t, ">", a, Int64(10)), "(price > 10)"},
		{mustCall(t, "upper", Column(1, "", TypeText)), "upper($1)"},
		{mustCall(t, "and", mustCall(t, ">", a, Int64(1)), mustCall(t, "is_null", a)), "((price > 1) AND (price IS NULL))"},
		{mustCall(t, "case", mustCall(t, ">", a, Int64(1)), String("x"), String("y")), "CASE WHEN (price > 1) THEN 'x' ELSE 'y' END"},
		{mustCall(t, "in", a, Int64(1), Int64(2)), "(price IN (1, 2))"},
		{mustCall(t, "+", a, dec("0.5")), "(CAST(price AS DECIMAL(19,0)) + 0.5)"},
		{mustCall(t, "+", Int64(1), Int64(2)), "3"},
		{mustCall(t, "||", String("a"), String("b")), "'ab'"},
		{mustCall(t, "+", Timestamp(1767225601500000), Interval(500000)), "TIMESTAMP '2026-01-01 00:00:02'"},
		{mustCall(t, "neg", a), "(-price)"},
	} {
		if got := c.e.String(); got != c.want {
			t.Errorf("String() = %q, want %q", got, c.want)
		}
	}
	// folding: constants become literals, 1/0 stays a call so the error follows the run-time mode
	if e := mustCall(t, "*", Int64(6), Int64(7)); !IsConstant(e) {
		t.Errorf("6*7 not folded: %s", e)
	} else if v, _, _ := ConstantInt64(e); v != 42 {
		t.Errorf("6*7 = %d", v)
	}
	if e := mustCall(t, "/", Int64(1), Int64(0)); IsConstant(e) {
		t.Errorf("1/0 folded to %s", e)
	}
	iv, err := Cast(String("10 seconds"), TypeInterval)
	if err != nil {
		t.Fatal(err)
	}
	if v, null, ok := ConstantInt64(iv); !ok || null || v != 10_000_000 {
		t.Errorf("INTERVAL '10 seconds' = %d %v %v", v, null, ok)
	}
}

func TestExprCompareOtherTypes(t *testing.T) {
	mk := func(t *testing.T, mem memory.Allocator) arrow.RecordBatch {
		return batch(t, mem,
			col{"iv", TypeInterval, []any{int64(1), int64(-5), nil}},
			col{"dt", TypeDate, []any{20454, 1, nil}},
			col{"b", TypeBool, []any{true, false, nil}},
			col{"by", TypeBytea, []any{"ab", "b", nil}},
			col{"r", TypeReal, []any{1.5, -1.0, nil}},
		)
	}
	iv, dt, b := Column(0, "iv", TypeInterval), Column(1, "dt", TypeDate), Column(2, "b", TypeBool)
	by, r := Column(3, "by", TypeBytea), Column(4, "r", TypeReal)
	runCases(t, mk, []exprCase{
		{name: "interval", e: call("<", iv, Interval(0)), want: "f,t,NULL"},
		{name: "interval literal", e: call("=", iv, String("00:00:00.000001")), want: "t,f,NULL"},
		{name: "date", e: call(">", dt, String("2000-01-01")), want: "t,f,NULL"},
		{name: "bool", e: call("<", b, Bool(true)), want: "f,t,NULL"},
		{name: "bytea", e: call("<", by, String("b")), want: "t,f,NULL"},
		{name: "real", e: call(">", r, Int64(1)), want: "t,f,NULL"},
		{name: "real plus real", e: call("+", r, r), want: "3,-2,NULL"},
		{name: "greatest bool", e: call("greatest", b, Bool(false)), want: "t,f,f"},
		{name: "coalesce interval", e: call("coalesce", iv, Interval(7)), want: "00:00:00.000001,-00:00:00.000005,00:00:00.000007"},
	})
}
