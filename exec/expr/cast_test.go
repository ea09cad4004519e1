package expr

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clinksql/clinksql/sqlerr"
)

func textBatch(t *testing.T, mem memory.Allocator) arrow.RecordBatch {
	return batch(t, mem,
		col{"t", TypeText, []any{"12", "  -7 ", "12x", nil, "9223372036854775808", "1e3"}},
		col{"b", TypeText, []any{"t", "TRUE", " yes ", "0", "off", "maybe"}},
		col{"ts", TypeText, []any{"2026-01-01 00:00:01", "2026-01-01 00:00:01.5", "2026-01-01T00:00:01", "2026-01-01", "2026-02-30", nil}},
		col{"ts2", TypeText, []any{"2026-01-01 00:00:01.1234567", "2026-01-01 00:00:01+02", "  2024-02-29 23:59:59.999999  ", "2026-1-2 3:04", "01/02/2026", "2026-01-01 25:00:00"}},
		col{"iv", TypeText, []any{"10 seconds", "1 day 02:00:00", "-1 hours", "00:00:01.5", "500 ms", "1 month"}},
		col{"iv2", TypeText, []any{"10", "1.5 minutes", "2 weeks", "1h", "@ 3 days ago", "soon"}},
	)
}

var (
	ctext = Column(0, "t", TypeText)
	cbool = Column(1, "b", TypeText)
	cts1  = Column(2, "ts", TypeText)
	cts2  = Column(3, "ts2", TypeText)
	civ   = Column(4, "iv", TypeText)
	civ2  = Column(5, "iv2", TypeText)
)

func cast(x Expr, to arrow.DataType) func() (Expr, error) {
	return func() (Expr, error) { return Cast(x, to) }
}

func TestExprCastFromText(t *testing.T) {
	runCases(t, textBatch, []exprCase{
		// blanks around numbers are fine; '12x' and '1e3' are not integers; 2^63 is out of range
		{name: "bigint", e: cast(ctext, TypeBigint), want: "12,-7,NULL,NULL,NULL,NULL", bad: 3, failErr: sqlerr.InvalidTextRep},
		{name: "int", e: cast(ctext, TypeInt), want: "12,-7,NULL,NULL,NULL,NULL", bad: 3, failErr: sqlerr.InvalidTextRep},
		{name: "double", e: cast(ctext, TypeDouble), want: "12,-7,NULL,NULL,9.223372036854776e+18,1000", bad: 1, failErr: sqlerr.InvalidTextRep},
		{name: "decimal", e: cast(ctext, TypeDecimal(10, 2)), want: "12.00,-7.00,NULL,NULL,NULL,1000.00", bad: 2, failErr: sqlerr.InvalidTextRep},
		{name: "bool", e: cast(cbool, TypeBool), want: "t,t,t,f,f,NULL", bad: 1, failErr: sqlerr.InvalidTextRep},
		{name: "timestamp", e: cast(cts1, TypeTimestamp), want: "2026-01-01 00:00:01,2026-01-01 00:00:01.5,2026-01-01 00:00:01,2026-01-01 00:00:00,NULL,NULL", bad: 1, failErr: sqlerr.InvalidDatetime},
		// 7 fraction digits round to microseconds; a zone is ignored for timestamp without time zone; '01/02/2026'
		// and hour 25 are refused
		{name: "timestamp more", e: cast(cts2, TypeTimestamp), want: "2026-01-01 00:00:01.123457,2026-01-01 00:00:01,2024-02-29 23:59:59.999999,2026-01-02 03:04:00,NULL,NULL", bad: 2, failErr: sqlerr.InvalidDatetime},
		{name: "date", e: cast(cts1, TypeDate), want: "2026-01-01,2026-01-01,2026-01-01,2026-01-01,NULL,NULL", bad: 1, failErr: sqlerr.InvalidDatetime},
		// INTERVAL is a duration and prints whole days as days (Postgres keeps '26 hours' as 26:00:00).
		{name: "interval", e: cast(civ, TypeInterval), want: "00:00:10,1 day 02:00:00,-01:00:00,00:00:01.5,00:00:00.5,NULL", bad: 1, failErr: sqlerr.InvalidDatetime},
		{name: "interval more", e: cast(civ2, TypeInterval), want: "00:00:10,00:01:30,14 days,01:00:00,-3 days,NULL", bad: 1, failErr: sqlerr.InvalidDatetime},
		{name: "bytea", e: cast(String(`\x4142`), TypeBytea), want: `\x4142,\x4142,\x4142,\x4142,\x4142,\x4142`},
	})
}

func TestExprCastNumbers(t *testing.T) {
	// numBatch: i = 7, -7, MaxInt64, MinInt64, NULL, 0; f = 1.5, -2, 0, NULL, 10, 3;
	// d = 1.50, -2.25, 99999999.99, NULL, 0.01, 0.00
	runCases(t, numBatch, []exprCase{
		{name: "bigint to int", e: cast(ci, TypeInt), want: "7,-7,NULL,NULL,NULL,0", bad: 2, failErr: sqlerr.NumericOutOfRange},
		{name: "bigint to smallint", e: cast(ci, TypeSmallint), want: "7,-7,NULL,NULL,NULL,0", bad: 2, failErr: sqlerr.NumericOutOfRange},
		{name: "int to bigint", e: cast(ck, TypeBigint), want: "5,-5,2147483647,-2147483648,1,NULL"},
		{name: "bigint to double", e: cast(ci, TypeDouble), want: "7,-7,9.223372036854776e+18,-9.223372036854776e+18,NULL,0"},
		// float to integer rounds half to even (rint): 1.5 -> 2
		{name: "double to bigint", e: cast(cf, TypeBigint), want: "2,-2,0,NULL,10,3"},
		{name: "half even", e: cast(Float64(2.5), TypeBigint), want: "2,2,2,2,2,2"},
		{name: "half even 3.5", e: cast(Float64(-3.5), TypeInt), want: "-4,-4,-4,-4,-4,-4"},
		{name: "double to real", e: cast(cf, TypeReal), want: "1.5,-2,0,NULL,10,3"},
		// REAL text is rounded once to the nearest REAL (float4in): the largest one reads back.
		{name: "text to real at its limit", e: cast(String("3.4028235e+38"), TypeReal),
			want: "3.4028235e+38,3.4028235e+38,3.4028235e+38,3.4028235e+38,3.4028235e+38,3.4028235e+38"},
		{name: "double to decimal", e: cast(cf, TypeDecimal(5, 1)), want: "1.5,-2.0,0.0,NULL,10.0,3.0"},
		// numeric to integer rounds half away from zero: 1.50 -> 2, -2.25 -> -2
		{name: "decimal to bigint", e: cast(cd, TypeBigint), want: "2,-2,100000000,NULL,0,0"},
		{name: "decimal to smaller", e: cast(cd, TypeDecimal(4, 1)), want: "1.5,-2.3,NULL,NULL,0.0,0.0", bad: 1, failErr: sqlerr.NumericOutOfRange},
		{name: "bigint to decimal", e: cast(ci, TypeDecimal(5, 2)), want: "7.00,-7.00,NULL,NULL,NULL,0.00", bad: 2, failErr: sqlerr.NumericOutOfRange},
		{name: "decimal to double", e: cast(cd, TypeDouble), want: "1.5,-2.25,99999999.99,NULL,0.01,0"},
		{name: "bigint to text", e: cast(ci, TypeText), want: "7,-7,9223372036854775807,-9223372036854775808,NULL,0"},
		{name: "double to text", e: cast(cf, TypeText), want: "1.5,-2,0,NULL,10,3"},
		{name: "decimal to text", e: cast(cd, TypeText), want: "1.50,-2.25,99999999.99,NULL,0.01,0.00"},
		{name: "bool to text", e: cast(Bool(true), TypeText), want: "true,true,true,true,true,true"},
		{name: "int to bool", e: cast(cj, TypeBool), want: "t,t,t,t,t,f"},
		{name: "bool to int", e: cast(mustCallF(">", ci, Int64(0)), TypeInt), want: "1,0,1,0,NULL,0"},
		{name: "timestamp to text", e: cast(Timestamp(1767225601500000), TypeText), want: "2026-01-01 00:00:01.5,2026-01-01 00:00:01.5,2026-01-01 00:00:01.5,2026-01-01 00:00:01.5,2026-01-01 00:00:01.5,2026-01-01 00:00:01.5"},
		{name: "timestamp to date", e: cast(Timestamp(-1), TypeDate), want: "1969-12-31,1969-12-31,1969-12-31,1969-12-31,1969-12-31,1969-12-31"},
		{name: "date to timestamp", e: cast(Date(20454), TypeTimestamp), want: "2026-01-01 00:00:00,2026-01-01 00:00:00,2026-01-01 00:00:00,2026-01-01 00:00:00,2026-01-01 00:00:00,2026-01-01 00:00:00"},
	})
	if _, err := Cast(Float64(1e19), TypeBigint); sqlerr.Code(err) != sqlerr.NumericOutOfRange || err.Error() != "bigint out of range" {
		t.Errorf("1e19::bigint: %v", err)
	}
}

// REAL text past the largest REAL is out of range (22003), not infinity.
func TestExprCastTextToRealOutOfRange(t *testing.T) {
	_, err := Cast(String("3.5e38"), TypeReal)
	if sqlerr.Code(err) != sqlerr.NumericOutOfRange {
		t.Fatalf("'3.5e38'::real: %v, want 22003", err)
	}
}
