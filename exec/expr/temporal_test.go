package expr

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// tsBatch: 2026-01-01 00:00:01.5 (Thursday), 2024-02-29 23:59:59 (Thursday, leap day), 1969-12-31
// 23:59:59.999999 (Wednesday, one microsecond before the epoch), NULL, 2026-03-15 13:45:30.123456 (Sunday)
func tsBatch(t *testing.T, mem memory.Allocator) arrow.RecordBatch {
	return batch(t, mem,
		col{"ts", TypeTimestamp, []any{int64(1767225601500000), int64(1709251199000000), int64(-1), nil, int64(1773582330123456)}},
		col{"d", TypeDate, []any{20454, 19782, -1, nil, 20527}},
	)
}

var (
	cT = Column(0, "ts", TypeTimestamp)
	cD = Column(1, "d", TypeDate)
)

func extract(field string, x Expr) func() (Expr, error) {
	return call("extract", String(field), x)
}

func TestExprTemporal(t *testing.T) {
	runCases(t, tsBatch, []exprCase{
		{name: "year", e: extract("year", cT), want: "2026,2024,1969,NULL,2026"},
		{name: "quarter", e: extract("quarter", cT), want: "1,1,4,NULL,1"},
		{name: "month", e: extract("month", cT), want: "1,2,12,NULL,3"},
		{name: "day", e: extract("day", cT), want: "1,29,31,NULL,15"},
		{name: "hour", e: extract("hour", cT), want: "0,23,23,NULL,13"},
		{name: "minute", e: extract("MINUTE", cT), want: "0,59,59,NULL,45"},
		// second, millisecond and epoch are numeric with a fraction (Postgres 14+)
		{name: "second", e: extract("second", cT), want: "1.500000,59.000000,59.999999,NULL,30.123456"},
		{name: "millisecond", e: extract("millisecond", cT), want: "1500.000,59000.000,59999.999,NULL,30123.456"},
		{name: "microsecond", e: extract("microsecond", cT), want: "1500000,59000000,59999999,NULL,30123456"},
		{name: "epoch", e: extract("epoch", cT), want: "1767225601.500000,1709251199.000000,-0.000001,NULL,1773582330.123456"},
		{name: "dow", e: extract("dow", cT), want: "4,4,3,NULL,0"},
		{name: "isodow", e: extract("isodow", cT), want: "4,4,3,NULL,7"},
		{name: "doy", e: extract("doy", cT), want: "1,60,365,NULL,74"},
		// ISO weeks: 1969-12-31 belongs to week 1 of 1970
		{name: "week", e: extract("week", cT), want: "1,9,1,NULL,11"},
		{name: "isoyear", e: extract("isoyear", cT), want: "2026,2024,1970,NULL,2026"},
		{name: "date year", e: extract("year", cD), want: "2026,2024,1969,NULL,2026"},
		{name: "interval epoch", e: extract("epoch", Interval(-90_500_000)), want: "-90.500000,-90.500000,-90.500000,-90.500000,-90.500000"},
		{name: "interval hour", e: extract("hour", Interval(25*3600_000_000)), want: "25,25,25,25,25"},
		{name: "flink hour", e: call("hour", cT), want: "0,23,23,NULL,13"},
		{name: "flink second", e: call("second", cT), want: "1,59,59,NULL,30"},
		{name: "flink dayofweek", e: call("dayofweek", cT), want: "5,5,4,NULL,1"},
		{name: "flink dayofmonth", e: call("dayofmonth", cT), want: "1,29,31,NULL,15"},
		{name: "date_format java", e: call("date_format", cT, String("yyyy-MM-dd HH:mm:ss")), want: "2026-01-01 00:00:01,2024-02-29 23:59:59,1969-12-31 23:59:59,NULL,2026-03-15 13:45:30"},
		{name: "date_format HH:mm", e: call("date_format", cT, String("HH:mm")), want: "00:00,23:59,23:59,NULL,13:45"},
		{name: "date_format day", e: call("date_format", cT, String("yyyy-MM-dd")), want: "2026-01-01,2024-02-29,1969-12-31,NULL,2026-03-15"},
		{name: "date_format millis", e: call("date_format", cT, String("SSS")), want: "500,000,999,NULL,123"},
		{name: "date_format mysql", e: call("date_format", cT, String("%Y-%m-%d %H:%i:%s")), want: "2026-01-01 00:00:01,2024-02-29 23:59:59,1969-12-31 23:59:59,NULL,2026-03-15 13:45:30"},
		{name: "date_format names", e: call("date_format", cT, String("EEE, d MMM yyyy h a 'at' mm")), want: "Thu, 1 Jan 2026 12 AM at 00,Thu, 29 Feb 2024 11 PM at 59,Wed, 31 Dec 1969 11 PM at 59,NULL,Sun, 15 Mar 2026 1 PM at 45"},
		{name: "date_format text", e: call("date_format", String("2026-01-01 10:20:30"), String("HH:mm")), want: "10:20,10:20,10:20,10:20,10:20"},
		{name: "date_trunc hour", e: call("date_trunc", String("hour"), cT), want: "2026-01-01 00:00:00,2024-02-29 23:00:00,1969-12-31 23:00:00,NULL,2026-03-15 13:00:00"},
		{name: "date_trunc month", e: call("date_trunc", String("month"), cT), want: "2026-01-01 00:00:00,2024-02-01 00:00:00,1969-12-01 00:00:00,NULL,2026-03-01 00:00:00"},
		{name: "date_trunc week", e: call("date_trunc", String("week"), cT), want: "2025-12-29 00:00:00,2024-02-26 00:00:00,1969-12-29 00:00:00,NULL,2026-03-09 00:00:00"},
		{name: "date_trunc year", e: call("date_trunc", String("year"), cT), want: "2026-01-01 00:00:00,2024-01-01 00:00:00,1969-01-01 00:00:00,NULL,2026-01-01 00:00:00"},
		{name: "date_trunc second", e: call("date_trunc", String("second"), cT), want: "2026-01-01 00:00:01,2024-02-29 23:59:59,1969-12-31 23:59:59,NULL,2026-03-15 13:45:30"},
		{name: "ts plus interval", e: call("+", cT, Interval(1_500_000)), want: "2026-01-01 00:00:03,2024-03-01 00:00:00.5,1970-01-01 00:00:01.499999,NULL,2026-03-15 13:45:31.623456"},
		{name: "ts minus interval", e: call("-", cT, Interval(3_600_000_000)), want: "2025-12-31 23:00:01.5,2024-02-29 22:59:59,1969-12-31 22:59:59.999999,NULL,2026-03-15 12:45:30.123456"},
		{name: "ts minus ts", e: call("-", cT, Timestamp(1767225600000000)), want: "00:00:01.5,-671 days -00:00:01,-20454 days -00:00:00.000001,NULL,73 days 13:45:30.123456"},
		{name: "interval times int", e: call("*", Interval(1_500_000), Int64(3)), want: "00:00:04.5,00:00:04.5,00:00:04.5,00:00:04.5,00:00:04.5"},
		{name: "date plus int", e: call("+", cD, Int32(1)), want: "2026-01-02,2024-03-01,1970-01-01,NULL,2026-03-16"},
		{name: "date minus date", e: call("-", cD, Date(20454)), want: "0,-672,-20455,NULL,73"},
		{name: "date plus interval", e: call("+", cD, Interval(3_600_000_000)), want: "2026-01-01 01:00:00,2024-02-29 01:00:00,1969-12-31 01:00:00,NULL,2026-03-15 01:00:00"},
		// beyond int64 microseconds: 22008 timestamp out of range
		{name: "ts overflow", e: call("is_null", mustCallF("+", cT, Interval(9_223_000_000_000_000_000))), want: "t,t,f,t,t", bad: 3, failErr: "22008"},
		{name: "to_timestamp text", e: call("to_timestamp", String("2026-01-01 10:00:00")), want: "2026-01-01 10:00:00,2026-01-01 10:00:00,2026-01-01 10:00:00,2026-01-01 10:00:00,2026-01-01 10:00:00"},
		{name: "to_timestamp pattern", e: call("to_timestamp", String("01/02/2026 10:00"), String("dd/MM/yyyy HH:mm")), want: "2026-02-01 10:00:00,2026-02-01 10:00:00,2026-02-01 10:00:00,2026-02-01 10:00:00,2026-02-01 10:00:00"},
		{name: "to_timestamp epoch", e: call("to_timestamp", Float64(1767225601.5)), want: "2026-01-01 00:00:01.5,2026-01-01 00:00:01.5,2026-01-01 00:00:01.5,2026-01-01 00:00:01.5,2026-01-01 00:00:01.5"},
	})
}

// Timestamps and dates before 1 AD print with BC (Postgres has no year 0) and read back to the same value.
func TestTimestampBCRoundTrip(t *testing.T) {
	for _, text := range []string{"0001-01-01 00:00:00 BC", "0044-03-15 12:30:00.5 BC", "0001-12-31 23:59:59 BC"} {
		us, err := ParseTimestamp(text)
		if err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		if got := string(AppendTimestamp(nil, us, false)); got != text {
			t.Errorf("%s read back as %s", text, got)
		}
	}
	bc, err := ParseTimestamp("0001-12-31 00:00:00 BC")
	if err != nil {
		t.Fatal(err)
	}
	ad, err := ParseTimestamp("0001-01-01 00:00:00 AD")
	if err != nil || ad-bc != 86_400_000_000 {
		t.Errorf("1 BC Dec 31 and 1 AD Jan 1 are %d us apart (err %v), want one day", ad-bc, err)
	}
	d, err := ParseDate("0044-03-15 BC")
	if err != nil || string(AppendDate(nil, int64(d))) != "0044-03-15 BC" {
		t.Errorf("date 0044-03-15 BC: %d %v", d, err)
	}
	if _, err := ParseTimestamp("0000-01-01 00:00:00 BC"); err == nil {
		t.Errorf("year 0 BC accepted")
	}
}
