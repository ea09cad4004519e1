package expr

import (
	"testing"

	"github.com/clinksql/clinksql/sqlerr"
)

func TestExprConditional(t *testing.T) {
	// numBatch: i = 7, -7, MaxInt64, MinInt64, NULL, 0; j = 2, 2, 1, -1, 3, 0; k = 5, -5, MaxInt32, MinInt32, 1,
	// NULL; f = 1.5, -2, 0, NULL, 10, 3
	runCases(t, numBatch, []exprCase{
		// the THEN 0 branch guards the division: row 6 (j = 0) never divides; row 4 (MinInt64 / -1) is bad
		{name: "case guards division", e: call("case", mustCallF("=", cj, Int64(0)), Int64(0), mustCallF("/", ci, cj)),
			want: "3,-3,9223372036854775807,NULL,NULL,0", bad: 1, failErr: sqlerr.NumericOutOfRange},
		{name: "case without else", e: call("case", mustCallF(">", ci, Int64(0)), String("pos"), mustCallF("<", ci, Int64(0)), String("neg")),
			want: "pos,neg,pos,neg,NULL,NULL"},
		// branches unify to double (int and double)
		{name: "case unify", e: call("case", mustCallF(">", ci, Int64(0)), ck, cf), want: "5,-2,2147483647,NULL,10,3"},
		{name: "case all constant", e: call("case", Bool(false), Int64(1), Int64(2)), want: "2,2,2,2,2,2"},
		{name: "coalesce", e: call("coalesce", ci, cj), want: "7,-7,9223372036854775807,-9223372036854775808,3,0"},
		{name: "coalesce unify", e: call("coalesce", Null(), ck, Int64(-1)), want: "5,-5,2147483647,-2147483648,1,-1"},
		// the division is evaluated only for row 5, where i is NULL
		{name: "coalesce lazy", e: call("coalesce", ci, mustCallF("/", cj, Int64(0))), want: "7,-7,9223372036854775807,-9223372036854775808,NULL,0",
			bad: 1, failErr: sqlerr.DivisionByZero},
		{name: "nullif", e: call("nullif", cj, Int64(2)), want: "NULL,NULL,1,-1,3,0"},
		{name: "greatest", e: call("greatest", ci, cj, Int64(0)), want: "7,2,9223372036854775807,0,3,0"},
		{name: "least", e: call("least", ci, cj), want: "2,-7,1,-9223372036854775808,3,0"},
		{name: "greatest unify", e: call("greatest", ck, cf), want: "5,-2,2147483647,-2147483648,10,3"},
		// AND evaluates its right side only where the left is not false: row 6's division by zero is not an error
		{name: "and short circuit", e: call("and", mustCallF("<>", cj, Int64(0)), mustCallF(">", mustCallF("/", ci, cj), Int64(1))),
			want: "t,f,t,NULL,NULL,f", bad: 1, failErr: sqlerr.NumericOutOfRange},
		{name: "or short circuit", e: call("or", mustCallF("=", cj, Int64(0)), mustCallF(">", mustCallF("/", ci, cj), Int64(1))),
			want: "t,f,t,NULL,NULL,t", bad: 1, failErr: sqlerr.NumericOutOfRange},
	})
}

func mustCallF(name string, args ...Expr) Expr {
	e, err := Call(name, args...)
	if err != nil {
		panic(err)
	}
	return e
}
