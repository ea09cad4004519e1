package expr

import (
	"math"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/sqlerr"
)

// exprCase is one table row: an expression over the test batch, the text forms expected (comma-joined, NULL for
// NULL) in ErrorsNull mode with the number of bad values counted, and the SQLSTATE ErrorsFail mode must return
// ("" when it must succeed with the same result).
type exprCase struct {
	name    string
	e       func() (Expr, error)
	want    string
	bad     int64
	failErr string
}

func runCases(t *testing.T, mk func(t *testing.T, mem memory.Allocator) arrow.RecordBatch, cases []exprCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			mem := checked(t)
			rec := mk(t, mem)
			defer rec.Release()
			e, err := c.e()
			if err != nil {
				t.Fatalf("bind: %v", err)
			}
			var bad exec.Counter
			got, err := evalTexts(t, mem, e, rec, ErrorsNull, &bad)
			if err != nil {
				t.Fatalf("%s: %v", e, err)
			}
			if join(got) != c.want {
				t.Errorf("%s = %s, want %s", e, join(got), c.want)
			}
			if bad.Load() != c.bad {
				t.Errorf("%s: %d bad values counted, want %d", e, bad.Load(), c.bad)
			}
			got, err = evalTexts(t, mem, e, rec, ErrorsFail, nil)
			switch {
			case c.failErr == "" && err != nil:
				t.Errorf("%s in fail mode: %v", e, err)
			case c.failErr != "" && codeOf(err) != c.failErr:
				t.Errorf("%s in fail mode: error %v (code %q), want code %s", e, err, codeOf(err), c.failErr)
			case c.failErr == "" && join(got) != c.want:
				t.Errorf("%s in fail mode = %s, want %s", e, join(got), c.want)
			}
		})
	}
}

// numBatch: i (bigint), j (bigint), k (integer), s (smallint), f (double), d (decimal(10,2)), e (decimal(5,3))
func numBatch(t *testing.T, mem memory.Allocator) arrow.RecordBatch {
	return batch(t, mem,
		col{"i", TypeBigint, []any{int64(7), int64(-7), int64(math.MaxInt64), int64(math.MinInt64), nil, int64(0)}},
		col{"j", TypeBigint, []any{int64(2), int64(2), int64(1), int64(-1), int64(3), int64(0)}},
		col{"k", TypeInt, []any{5, -5, math.MaxInt32, math.MinInt32, 1, nil}},
		col{"s", TypeSmallint, []any{3, 4, math.MaxInt16, math.MinInt16, nil, 0}},
		col{"f", TypeDouble, []any{1.5, -2.0, 0.0, nil, 10.0, 3.0}},
		col{"d", TypeDecimal(10, 2), []any{"1.50", "-2.25", "99999999.99", nil, "0.01", "0.00"}},
		col{"e", TypeDecimal(5, 3), []any{"0.908", "1.000", "-0.500", "2.000", nil, "0.001"}},
	)
}

var (
	ci = Column(0, "i", TypeBigint)
	cj = Column(1, "j", TypeBigint)
	ck = Column(2, "k", TypeInt)
	cs = Column(3, "s", TypeSmallint)
	cf = Column(4, "f", TypeDouble)
	cd = Column(5, "d", TypeDecimal(10, 2))
	ce = Column(6, "e", TypeDecimal(5, 3))
)

func call(name string, args ...Expr) func() (Expr, error) {
	return func() (Expr, error) { return Call(name, args...) }
}

func dec(t string) Expr {
	e, err := Decimal(t)
	if err != nil {
		panic(err)
	}
	return e
}

func TestExprArithmetic(t *testing.T) {
	runCases(t, numBatch, []exprCase{
		// MaxInt64 + 2 and MinInt64 + -1 overflow (the second is what arrow's checked add misses)
		{name: "add", e: call("+", ci, cj), want: "9,-5,NULL,NULL,NULL,0", bad: 2, failErr: sqlerr.NumericOutOfRange},
		{name: "add const", e: call("+", ci, Int64(1)), want: "8,-6,NULL,-9223372036854775807,NULL,1", bad: 1, failErr: sqlerr.NumericOutOfRange},
		// MinInt64 - 1 overflows; MaxInt64 - (-1) too? j = 1 there: MaxInt64 - 1 fits. MinInt64 - (-1) fits.
		{name: "sub", e: call("-", ci, cj), want: "5,-9,9223372036854775806,-9223372036854775807,NULL,0"},
		{name: "sub overflow", e: call("-", Int64(math.MinInt64), ci), want: "NULL,-9223372036854775801,NULL,0,NULL,-9223372036854775808", bad: 2, failErr: sqlerr.NumericOutOfRange},
		// MinInt64 * -1 overflows
		{name: "mul", e: call("*", ci, cj), want: "14,-14,9223372036854775807,NULL,NULL,0", bad: 1, failErr: sqlerr.NumericOutOfRange},
		{name: "mul const", e: call("*", ci, Int64(2)), want: "14,-14,NULL,NULL,NULL,0", bad: 2, failErr: sqlerr.NumericOutOfRange},
		// integer division truncates toward zero (-7/2 = -3); MinInt64 / -1 overflows; x / 0 is 22012
		{name: "div", e: call("/", ci, cj), want: "3,-3,9223372036854775807,NULL,NULL,NULL", bad: 2, failErr: sqlerr.NumericOutOfRange},
		{name: "div const", e: call("/", ci, Int64(2)), want: "3,-3,4611686018427387903,-4611686018427387904,NULL,0"},
		{name: "div const 1", e: call("/", ci, Int64(1)), want: "7,-7,9223372036854775807,-9223372036854775808,NULL,0"},
		{name: "div const 3", e: call("/", ci, Int64(3)), want: "2,-2,3074457345618258602,-3074457345618258602,NULL,0"},
		{name: "div by zero const", e: call("/", ci, Int64(0)), want: "NULL,NULL,NULL,NULL,NULL,NULL", bad: 5, failErr: sqlerr.DivisionByZero},
		// % has the dividend's sign (-7 % 2 = -1); MinInt64 % -1 = 0
		{name: "mod", e: call("%", ci, cj), want: "1,-1,0,0,NULL,NULL", bad: 1, failErr: sqlerr.DivisionByZero},
		{name: "mod const", e: call("%", ci, Int64(7)), want: "0,0,0,-1,NULL,0"},
		{name: "mod fn", e: call("mod", ci, Int64(4)), want: "3,-3,3,0,NULL,0"},
		// integer + bigint promotes to bigint; int + int stays int and overflows as integer
		{name: "int plus bigint", e: call("+", ck, cj), want: "7,-3,2147483648,-2147483649,4,NULL"},
		{name: "int overflow", e: call("+", ck, Int32(1)), want: "6,-4,NULL,-2147483647,2,NULL", bad: 1, failErr: sqlerr.NumericOutOfRange},
		{name: "smallint times smallint", e: call("*", cs, cs), want: "9,16,NULL,NULL,NULL,0", bad: 2, failErr: sqlerr.NumericOutOfRange},
		{name: "neg", e: call("neg", ci), want: "-7,7,-9223372036854775807,NULL,NULL,0", bad: 1, failErr: sqlerr.NumericOutOfRange},
		{name: "abs", e: call("abs", ci), want: "7,7,9223372036854775807,NULL,NULL,0", bad: 1, failErr: sqlerr.NumericOutOfRange},
		// floats: arrow kernels; division by zero is 22012 like Postgres' float8div
		{name: "float add int", e: call("+", cf, cj), want: "3.5,0,1,NULL,13,3"},
		{name: "float div", e: call("/", Float64(3), cf), want: "2,-1.5,NULL,NULL,0.3,1", bad: 1, failErr: sqlerr.DivisionByZero},
		{name: "float neg", e: call("neg", cf), want: "-1.5,2,-0,NULL,-10,-3"},
		// decimal(10,2) + decimal(5,3): scale 3, precision max(8, 2) + 3 + 1 = 12
		{name: "dec add", e: call("+", cd, ce), want: "2.408,-1.250,99999999.490,NULL,NULL,0.001"},
		// decimal * decimal: scale 2 + 3 = 5 (1.50 * 0.908 = 1.36200)
		{name: "dec mul", e: call("*", cd, ce), want: "1.36200,-2.25000,-49999999.99500,NULL,NULL,0.00000"},
		// bigint * decimal(3,3) literal: 0.908 has scale 3; 7 * 0.908 = 6.356
		{name: "int times dec", e: call("*", ci, dec("0.908")), want: "6.356,-6.356,8374821809464136432.756,-8374821809464136433.664,NULL,0.000"},
		// decimal(10,2) / decimal(5,3): scale max(16, 2, 3) = 16 (11 integer digits fit), rounded half away from
		// zero: 1.50/0.908 = 1.65198237885462555..., -2.25/1 = -2.25, 99999999.99/-0.5 = -199999999.98, 0.00/0.001 = 0
		{name: "dec div", e: call("/", cd, ce), want: "1.6519823788546256,-2.2500000000000000,-199999999.9800000000000000,NULL,NULL,0.0000000000000000"},
		// decimal(5,3) / decimal(10,2): scale 16; 0.908/1.50 = 0.60533..., 1/-2.25 = -0.444..., -0.5/99999999.99 = -5.0000000005e-9
		{name: "dec div zero", e: call("/", ce, cd), want: "0.6053333333333333,-0.4444444444444444,-0.0000000050000000,NULL,NULL,NULL", bad: 1, failErr: sqlerr.DivisionByZero},
		// Two constants take Postgres' per-value scale: 10.0/4 has 16 places, 1.0/3 has 20 (the quotient's first
		// base-10000 digit is a weight lower), 5/2.0 has 16.
		{name: "dec const div", e: call("/", dec("10.0"), Int32(4)), want: "2.5000000000000000,2.5000000000000000,2.5000000000000000,2.5000000000000000,2.5000000000000000,2.5000000000000000"},
		{name: "dec const div small", e: call("/", dec("1.0"), Int32(3)), want: "0.33333333333333333333,0.33333333333333333333,0.33333333333333333333,0.33333333333333333333,0.33333333333333333333,0.33333333333333333333"},
		// numeric mod keeps the dividend's sign: 1.50 % 0.908 = 0.592
		{name: "dec mod", e: call("%", cd, ce), want: "0.592,-0.250,0.490,NULL,NULL,0.000"},
		{name: "dec neg", e: call("neg", cd), want: "-1.50,2.25,-99999999.99,NULL,-0.01,0.00"},
		// decimal with a float is a double
		{name: "dec plus float", e: call("+", cd, cf), want: "3,-4.25,99999999.99,NULL,10.01,3"},
		// 10^35 (DECIMAL(36,0)) * DECIMAL(5,3): precision 42 capped at 38, scale 3, so 35 integer digits: 10^35 * 1
		// and 10^35 * 2 overflow
		{name: "dec overflow", e: call("*", dec("100000000000000000000000000000000000"), ce), want: "90800000000000000000000000000000000.000,NULL,-50000000000000000000000000000000000.000,NULL,NULL,100000000000000000000000000000000.000", bad: 2, failErr: sqlerr.NumericOutOfRange},
		{name: "string literal adopts int", e: call("+", ci, String("1")), want: "8,-6,NULL,-9223372036854775807,NULL,1", bad: 1, failErr: sqlerr.NumericOutOfRange},
		{name: "null literal", e: call("+", ci, Null()), want: "NULL,NULL,NULL,NULL,NULL,NULL"},
		{name: "round float", e: call("round", cf), want: "2,-2,0,NULL,10,3"},
		{name: "round dec", e: call("round", cd, Int64(1)), want: "1.5,-2.3,100000000.0,NULL,0.0,0.0"},
		{name: "round dec 0", e: call("round", ce), want: "1,1,-1,2,NULL,0"},
		{name: "floor dec", e: call("floor", cd), want: "1,-3,99999999,NULL,0,0"},
		{name: "ceil dec", e: call("ceil", cd), want: "2,-2,100000000,NULL,1,0"},
		{name: "floor float", e: call("floor", cf), want: "1,-2,0,NULL,10,3"},
		{name: "sqrt", e: call("sqrt", cf), want: "1.224744871391589,NULL,0,NULL,3.1622776601683795,1.7320508075688772", bad: 1, failErr: "2201F"},
		{name: "power", e: call("power", cf, Int64(2)), want: "2.25,4,0,NULL,100,9"},
		{name: "power zero negative", e: call("power", cf, Int64(-1)), want: "0.6666666666666666,-0.5,NULL,NULL,0.1,0.3333333333333333", bad: 1, failErr: "2201F"},
	})
}
