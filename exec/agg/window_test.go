package agg

import (
	"encoding/binary"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/exec/optest"
	"github.com/clinksql/clinksql/exec/rowcodec"
	"github.com/clinksql/clinksql/sqlerr"
	"github.com/clinksql/clinksql/state"
)

// windowEvents is the input of most window tests: (k BIGINT, ts TIMESTAMP(6), v BIGINT, s VARCHAR,
// d DECIMAL(10,2), f BOOLEAN).
var windowEvents = arrow.NewSchema([]arrow.Field{
	{Name: "k", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond}, Nullable: true},
	{Name: "v", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "d", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}, Nullable: true},
	{Name: "f", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
}, nil)

const (
	colK, colTS, colV, colS, colD, colF = 0, 1, 2, 3, 4, 5
	sec                                 = int64(time.Second / time.Microsecond)
	day                                 = "2026-01-01 "
)

// ev is a windowEvents row with the columns not given NULL.
func ev(k any, ts string, v any) []any { return []any{k, ts, v, nil, nil, nil} }

func windowOp(t *testing.T, cfg WindowAggConfig, schema *arrow.Schema) func(int) exec.Operator {
	t.Helper()
	f, _ := optest.MustOp(t, NewWindowAggregate, cfg, schema)
	return f
}

var countSum = []AggSpec{{Func: AggCountStar, Arg: -1, Filter: -1}, {Func: AggSum, Arg: colV, Filter: -1}}

func TestWindowTumble(t *testing.T) {
	cfg := WindowAggConfig{Kind: WindowTumble, TimeCol: colTS, Size: 10 * sec, Keys: []int{colK}, Aggs: countSum}
	input := []any{
		ev(1, "00:00:01", 10),
		ev(2, "00:00:02", 5),
		ev(nil, "00:00:03", 4),
		ev(1, "00:00:09", 7),
		ev(1, "00:00:10", 1),
		ev(2, "00:00:15", 3),
	}
	// [00:00:00, 00:00:10): NULL -> 1 row, 4; 1 -> 2 rows, 10+7 = 17; 2 -> 1 row, 5.
	// [00:00:10, 00:00:20): 1 -> 1 row, 1; 2 -> 1 row, 3. Keys in canonical order: NULL first.
	want := []string{
		"NULL|" + day + "00:00:00|" + day + "00:00:10|1|4",
		"1|" + day + "00:00:00|" + day + "00:00:10|2|17",
		"2|" + day + "00:00:00|" + day + "00:00:10|1|5",
		"1|" + day + "00:00:10|" + day + "00:00:20|1|1",
		"2|" + day + "00:00:10|" + day + "00:00:20|1|3",
	}
	optest.RunCase(t, optest.Case{Name: "keyed", Schema: windowEvents, Input: input, Op: windowOp(t, cfg, windowEvents),
		TimeCol: colTS, Delay: 5 * time.Second, Want: want})
	optest.RunCase(t, optest.Case{Name: "random-nulls", Schema: windowEvents, Input: input, Op: windowOp(t, cfg, windowEvents),
		TimeCol: colTS, Delay: 5 * time.Second, RandomNulls: true, NoNulls: []int{colK, colTS}})

	// Offset 3s and times before the epoch: floor((-1us - 3s) / 10s) * 10s + 3s = -10s + 3s = -7s, so the row at
	// -1us is in [-7s, 3s); the row at 3s starts the next window [3s, 13s).
	off := cfg
	off.Offset = 3 * sec
	optest.RunCase(t, optest.Case{Name: "offset-negative", Schema: windowEvents, TimeCol: -1, Op: windowOp(t, off, windowEvents),
		Input: []any{ev(1, "1969-12-31 23:59:59.999999", 1), ev(1, "1970-01-01 00:00:03", 2)},
		Want: []string{
			"1|1969-12-31 23:59:53|1970-01-01 00:00:03|1|1",
			"1|1970-01-01 00:00:03|1970-01-01 00:00:13|1|2",
		}})
}

func TestWindowHop(t *testing.T) {
	cfg := WindowAggConfig{Kind: WindowHop, TimeCol: colTS, Slide: 5 * sec, Size: 15 * sec, Aggs: countSum}
	// No keys: one group per window. 00:00:07 is in the windows starting at 5, 0 and -5 (s > 7-15 = -8);
	// 00:00:12 in those starting at 10, 5 and 0.
	//   [-5, 10): {07} -> 1, 1;  [0, 15): {07, 12} -> 2, 3;  [5, 20): {07, 12} -> 2, 3;  [10, 25): {12} -> 1, 2.
	optest.RunCase(t, optest.Case{Name: "global", Schema: windowEvents, TimeCol: colTS, Delay: 15 * time.Second,
		Op:    windowOp(t, cfg, windowEvents),
		Input: []any{ev(1, "00:00:07", 1), ev(2, "00:00:12", 2)},
		Want: []string{
			"2025-12-31 23:59:55|" + day + "00:00:10|1|1",
			day + "00:00:00|" + day + "00:00:15|2|3",
			day + "00:00:05|" + day + "00:00:20|2|3",
			day + "00:00:10|" + day + "00:00:25|1|2",
		}})
	// Size not a multiple of slide (4s, 10s): 3 is in [-4,6), [0,10); 9 in [0,10), [4,14), [8,18); 10 in [4,14),
	// [8,18) only (the row after 9 must not reuse 9's windows).
	//   [-4,6): 1;  [0,10): 2;  [4,14): 2;  [8,18): 2.
	odd := WindowAggConfig{Kind: WindowHop, TimeCol: colTS, Slide: 4 * sec, Size: 10 * sec, Aggs: countSum[:1]}
	optest.RunCase(t, optest.Case{Name: "uneven", Schema: windowEvents, TimeCol: colTS, Delay: 10 * time.Second,
		Op:    windowOp(t, odd, windowEvents),
		Input: []any{ev(1, "00:00:03", 1), ev(1, "00:00:09", 1), ev(1, "00:00:10", 1)},
		Want: []string{
			"2025-12-31 23:59:56|" + day + "00:00:06|1",
			day + "00:00:00|" + day + "00:00:10|2",
			day + "00:00:04|" + day + "00:00:14|2",
			day + "00:00:08|" + day + "00:00:18|2",
		}})
}

func TestWindowCumulate(t *testing.T) {
	cfg := WindowAggConfig{Kind: WindowCumulate, TimeCol: colTS, Step: 2 * sec, Size: 6 * sec, Keys: []int{colK},
		Aggs: countSum}
	// Periods [0,6) and [6,12). 1 -> [0,2),[0,4),[0,6); 3 -> [0,4),[0,6); 5 -> [0,6); 7 -> [6,8),[6,10),[6,12).
	//   [0,2): 1 row, 1;  [0,4): 1+2 = 3;  [0,6): 1+2+4 = 7;  [6,8), [6,10), [6,12): 8 each.
	input := []any{ev(1, "00:00:01", 1), ev(1, "00:00:03", 2), ev(1, "00:00:05", 4), ev(1, "00:00:07", 8)}
	w := func(s, e string, n, sum string) string { return "1|" + day + s + "|" + day + e + "|" + n + "|" + sum }
	optest.RunCase(t, optest.Case{Name: "keyed", Schema: windowEvents, Input: input, TimeCol: colTS, Delay: 6 * time.Second,
		Op: windowOp(t, cfg, windowEvents),
		Want: []string{
			w("00:00:00", "00:00:02", "1", "1"),
			w("00:00:00", "00:00:04", "2", "3"),
			w("00:00:00", "00:00:06", "3", "7"),
			w("00:00:06", "00:00:08", "1", "8"),
			w("00:00:06", "00:00:10", "1", "8"),
			w("00:00:06", "00:00:12", "1", "8"),
		}})
}

func TestWindowSession(t *testing.T) {
	cfg := WindowAggConfig{Kind: WindowSession, TimeCol: colTS, Gap: 5 * sec, Keys: []int{colK}, Aggs: countSum}
	input := []any{
		ev(1, "00:00:00", 1),  // k1: [0,5)
		ev(1, "00:00:08", 2),  // k1: [8,13), apart from [0,5)
		ev(2, "00:00:01", 4),  // k2: [1,6)
		ev(1, "00:00:04", 8),  // k1: [4,9) bridges [0,5) and [8,13): [0,13) with 1+2+8 = 11
		ev(2, "00:00:06", 16), // k2: [6,11) touches [1,6): [1,11) with 4+16 = 20
		ev(1, "00:00:20", 32), // k1: [20,25)
	}
	// By window_end: k2 [1,11) 2 rows 20; k1 [0,13) 3 rows 11; k1 [20,25) 1 row 32. The delay of 10s keeps every
	// session open until the rows that merge it arrived, whatever the batching.
	want := []string{
		"2|" + day + "00:00:01|" + day + "00:00:11|2|20",
		"1|" + day + "00:00:00|" + day + "00:00:13|3|11",
		"1|" + day + "00:00:20|" + day + "00:00:25|1|32",
	}
	optest.RunCase(t, optest.Case{Name: "merge", Schema: windowEvents, Input: input, TimeCol: colTS, Delay: 10 * time.Second,
		Op: windowOp(t, cfg, windowEvents), Want: want})
	optest.RunCase(t, optest.Case{Name: "random-nulls", Schema: windowEvents, Input: input, TimeCol: colTS,
		Delay: 10 * time.Second, Op: windowOp(t, cfg, windowEvents), RandomNulls: true, NoNulls: []int{colK, colTS}})

	// Without keys: one session sequence. 0 -> [0,5); 8 -> [8,13); 1 -> [1,6) joins [0,5): [0,6); 4 -> [4,9)
	// bridges [0,6) and [8,13): [0,13); 6 -> [6,11) joins it; 20 -> [20,25).
	//   [0,13): 5 rows, 1+2+4+8+16 = 31;  [20,25): 1 row, 32.
	global := cfg
	global.Keys = nil
	optest.RunCase(t, optest.Case{Name: "global", Schema: windowEvents, Input: input, TimeCol: colTS, Delay: 10 * time.Second,
		Op: windowOp(t, global, windowEvents),
		Want: []string{
			day + "00:00:00|" + day + "00:00:13|5|31",
			day + "00:00:20|" + day + "00:00:25|1|32",
		}})

	// Late rows with explicit watermarks.
	optest.RunCase(t, optest.Case{Name: "late", Schema: windowEvents, TimeCol: -1, Op: windowOp(t, cfg, windowEvents),
		Input: []any{
			lateEv(1, 0, 1),     // [0,5)
			optest.WM(10 * sec), // fires [0,5): 1 row, 1
			lateEv(1, 3*sec, 2), // [3,8): 8 <= 10 and no live session to join: late
			lateEv(1, 8*sec, 4), // [8,13)
			optest.WM(12 * sec),
			lateEv(1, 4*sec, 8), // [4,9) ends before the watermark but touches the live [8,13): [4,13), 4+8 = 12
		},
		Late: 1,
		Want: []string{
			"1|1970-01-01 00:00:00|1970-01-01 00:00:05|1|1",
			"1|1970-01-01 00:00:04|1970-01-01 00:00:13|2|12",
		}})
}

// lateEv is a row with a raw-microsecond event time, for tests with explicit watermarks.
func lateEv(k any, ts int64, v any) []any { return []any{k, int(ts), v, nil, nil, nil} }

func TestWindowLate(t *testing.T) {
	tumble := WindowAggConfig{Kind: WindowTumble, TimeCol: colTS, Size: 10 * sec, Keys: []int{colK}, Aggs: countSum}
	optest.RunCase(t, optest.Case{Name: "tumble", Schema: windowEvents, TimeCol: -1, Op: windowOp(t, tumble, windowEvents),
		Input: []any{
			lateEv(1, 1*sec, 1),
			optest.WM(10 * sec),             // fires [0,10): 1 row, 1
			lateEv(1, 5*sec, 2),             // [0,10) has fired: late
			lateEv(1, 12*sec, 4),            // [10,20)
			[]any{1, nil, 8, nil, nil, nil}, // NULL event time: dropped, counted as an error
		},
		Late: 1, Errors: 1,
		Want: []string{
			"1|1970-01-01 00:00:00|1970-01-01 00:00:10|1|1",
			"1|1970-01-01 00:00:10|1970-01-01 00:00:20|1|4",
		}})
	hop := WindowAggConfig{Kind: WindowHop, TimeCol: colTS, Slide: 5 * sec, Size: 10 * sec, Aggs: countSum}
	optest.RunCase(t, optest.Case{Name: "hop", Schema: windowEvents, TimeCol: -1, Op: windowOp(t, hop, windowEvents),
		Input: []any{
			lateEv(1, 1*sec, 1),  // [-5,5), [0,10)
			optest.WM(10 * sec),  // fires both: 1 row, 1 each
			lateEv(1, 7*sec, 2),  // [0,10) fired: only [5,15) takes it; not late
			lateEv(1, 2*sec, 4),  // [-5,5) and [0,10) both fired: late
			lateEv(1, 12*sec, 8), // [5,15), [10,20)
		},
		Late: 1,
		// [5,15): 2 rows, 2+8 = 10; [10,20): 1 row, 8.
		Want: []string{
			"1969-12-31 23:59:55|1970-01-01 00:00:05|1|1",
			"1970-01-01 00:00:00|1970-01-01 00:00:10|1|1",
			"1970-01-01 00:00:05|1970-01-01 00:00:15|2|10",
			"1970-01-01 00:00:10|1970-01-01 00:00:20|1|8",
		}})
}

func TestWindowAggregates(t *testing.T) {
	spec := func(f AggFunc, arg, filter int) AggSpec { return AggSpec{Func: f, Arg: arg, Filter: filter} }
	cfg := WindowAggConfig{Kind: WindowTumble, TimeCol: colTS, Size: 10 * sec, Keys: []int{colK}, Aggs: []AggSpec{
		spec(AggCount, colV, -1),         // count(v)
		spec(AggCountStar, -1, -1),       // count(*)
		spec(AggCountDistinct, colV, -1), // count(distinct v)
		spec(AggCountDistinct, colS, -1), // count(distinct s)
		spec(AggSum, colV, -1),           // sum(v)
		spec(AggSum, colV, colF),         // sum(v) filter (where f)
		spec(AggCountStar, -1, colF),     // count(*) filter (where f)
		spec(AggMin, colS, -1),           // min(s)
		spec(AggMax, colS, -1),           // max(s)
		spec(AggAvg, colV, -1),           // avg(v)
		spec(AggSum, colD, -1),           // sum(d)
		spec(AggAvg, colD, -1),           // avg(d)
		spec(AggMin, colV, -1),           // min(v)
		spec(AggMax, colD, -1),           // max(d)
	}}
	input := []any{
		[]any{1, "00:00:01", 1, "b", "1.25", true},
		[]any{1, "00:00:02", 2, "a", "2.50", false},
		[]any{1, "00:00:03", nil, nil, nil, nil},
		[]any{1, "00:00:04", 2, "c", "0.10", true},
		[]any{2, "00:00:05", nil, nil, nil, false}, // only NULLs, and FILTER rejects it
		[]any{3, "00:00:06", -2, "x", "-1.00", nil},
		[]any{3, "00:00:07", -1, "x", "0.00", nil},
		[]any{3, "00:00:08", 1, "y", "0.01", nil},
	}
	w := day + "00:00:00|" + day + "00:00:10|"
	want := []string{
		// k=1: count(v) 3, count(*) 4, distinct v {1,2} 2, distinct s {a,b,c} 3, sum 1+2+2 = 5, filtered sum
		// 1+2 = 3 over 2 rows (the NULL f is false), min 'a', max 'c', avg 5/3 = 1.6666666666666667 (rounded at
		// 16 digits), sum(d) 1.25+2.50+0.10 = 3.85, avg(d) 3.85/3 = 1.2833333333333333, min(v) 1, max(d) 2.50.
		"1|" + w + "3|4|2|3|5|3|2|a|c|1.6666666666666667|3.85|1.2833333333333333|1|2.50",
		// k=2: the window exists although every FILTER rejected its row: counts 0, the rest NULL.
		"2|" + w + "0|1|0|0|NULL|NULL|0|NULL|NULL|NULL|NULL|NULL|NULL|NULL",
		// k=3: sum -2-1+1 = -2, avg -2/3 = -0.6666666666666667 (half away from zero), distinct s {x,y} 2,
		// sum(d) -1.00+0.00+0.01 = -0.99, avg(d) -0.33, max(d) 0.01; f is NULL: filtered aggregates see nothing.
		"3|" + w + "3|3|3|2|-2|NULL|0|x|y|-0.6666666666666667|-0.99|-0.3300000000000000|-2|0.01",
	}
	optest.RunCase(t, optest.Case{Name: "all", Schema: windowEvents, Input: input, TimeCol: colTS, Op: windowOp(t, cfg, windowEvents),
		Want: want})
	optest.RunCase(t, optest.Case{Name: "random-nulls", Schema: windowEvents, Input: input, TimeCol: colTS,
		Op: windowOp(t, cfg, windowEvents), RandomNulls: true, NoNulls: []int{colK, colTS}})

	// AVG of integers prints like Postgres: avg(1, 2) = 1.5000000000000000.
	avg := WindowAggConfig{Kind: WindowTumble, TimeCol: colTS, Size: 10 * sec, Aggs: []AggSpec{spec(AggAvg, colV, -1)}}
	optest.RunCase(t, optest.Case{Name: "avg-int", Schema: windowEvents, TimeCol: colTS, Op: windowOp(t, avg, windowEvents),
		Input: []any{ev(1, "00:00:01", 1), ev(1, "00:00:02", 2)},
		Want:  []string{w + "1.5000000000000000"}})
}

func TestWindowFloats(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Millisecond}, Nullable: true},
		{Name: "x", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "r", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
	}, nil)
	spec := func(f AggFunc, arg int) AggSpec { return AggSpec{Func: f, Arg: arg, Filter: -1} }
	cfg := WindowAggConfig{Kind: WindowTumble, TimeCol: 0, Size: 10 * sec, Aggs: []AggSpec{
		spec(AggSum, 1), spec(AggAvg, 2), spec(AggMin, 1), spec(AggMax, 1), spec(AggSum, 2), spec(AggMax, 2),
		spec(AggCountDistinct, 1),
	}}
	// x: 0.1, 0.2, NaN, -0 -> sum NaN (NaN poisons the sum), min -0 (prints -0), max NaN (NaN sorts last),
	// distinct {0.1, 0.2, NaN, 0} = 4. r: 1.5, 2.5, NULL, 4 -> avg 8/3 = 2.6666666666666665 (float8), sum 8 (REAL),
	// max 4.
	// The time column is timestamp[ms]: window bounds come out in microseconds all the same.
	optest.RunCase(t, optest.Case{Name: "float", Schema: schema, TimeCol: 0, Op: windowOp(t, cfg, schema),
		Input: []any{
			[]any{"00:00:01", 0.1, 1.5},
			[]any{"00:00:02", 0.2, 2.5},
			[]any{"00:00:03", nanF, nil},
			[]any{"00:00:04", negZero, 4.0},
		},
		Want: []string{day + "00:00:00|" + day + "00:00:10|NaN|2.6666666666666665|-0|NaN|8|4|4"}})
}

var (
	negZero = func() float64 { z := 0.0; return -z }()
	nanF    = func() float64 { z := 0.0; return z / z }()
)

func TestWindowStringKeys(t *testing.T) {
	// GROUP BY s, k: two key columns take the canonical-bytes path. Canonical order: NULL (0x00) before a value;
	// strings by length, then bytes ("b" before "aa").
	cfg := WindowAggConfig{Kind: WindowTumble, TimeCol: colTS, Size: 10 * sec, Keys: []int{colS, colK},
		Aggs: []AggSpec{{Func: AggCountStar, Arg: -1, Filter: -1}, {Func: AggMin, Arg: colD, Filter: -1}}}
	row := func(k any, s any, d any) []any { return []any{k, "00:00:01", 1, s, d, nil} }
	w := "|" + day + "00:00:00|" + day + "00:00:10|"
	optest.RunCase(t, optest.Case{Name: "two-keys", Schema: windowEvents, TimeCol: colTS, Op: windowOp(t, cfg, windowEvents),
		Input: []any{row(1, "aa", "1.00"), row(1, "b", "2.00"), row(nil, "b", "3.00"), row(1, nil, nil),
			row(1, "aa", "0.50"), row(2, "aa", nil)},
		Want: []string{
			"NULL|1" + w + "1|NULL",
			"b|NULL" + w + "1|3.00",
			"b|1" + w + "1|2.00",
			"aa|1" + w + "2|0.50",
			"aa|2" + w + "1|NULL",
		}})
}

func TestWindowSumOverflow(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond}},
		{Name: "d", Type: &arrow.Decimal128Type{Precision: 38, Scale: 0}},
	}, nil)
	cfg := WindowAggConfig{Kind: WindowTumble, TimeCol: 0, Size: 10 * sec,
		Aggs: []AggSpec{{Func: AggSum, Arg: 1, Filter: -1}}}
	// 9e37 + 9e37 = 1.8e38: more than 38 digits (and than 2^127): numeric field overflow.
	big := "90000000000000000000000000000000000000"
	optest.RunCase(t, optest.Case{Name: "decimal", Schema: schema, TimeCol: -1, Op: windowOp(t, cfg, schema),
		Input: []any{[]any{"00:00:01", big}, []any{"00:00:02", big}}, WantErr: "22003"})
}

// TestWindowAvgDecimalOverflow: AVG(decimal(38,0)) is DECIMAL(38,16); an average of 1e35 needs 51 digits, more
// than 128 bits hold: 22003, not a panic converting the oversized quotient.
func TestWindowAvgDecimalOverflow(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond}},
		{Name: "d", Type: &arrow.Decimal128Type{Precision: 38, Scale: 0}},
	}, nil)
	cfg := WindowAggConfig{Kind: WindowTumble, TimeCol: 0, Size: 10 * sec,
		Aggs: []AggSpec{{Func: AggAvg, Arg: 1, Filter: -1}}}
	big := "100000000000000000000000000000000000"
	optest.RunCase(t, optest.Case{Name: "decimal", Schema: schema, TimeCol: -1, Op: windowOp(t, cfg, schema),
		Input: []any{[]any{"00:00:01", big}}, WantErr: "22003"})
}

// TestWindowSumIntOverflow: SUM(int) is BIGINT and must fail past it. 2^32 rows are out of a test's reach, so the
// accumulator starts from state written as a checkpoint would have: one value summed, MaxInt64 - 1.
func TestWindowSumIntOverflow(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.PrimitiveTypes.Int64},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond}},
		{Name: "v", Type: arrow.PrimitiveTypes.Int32},
	}, nil)
	f, out, err := NewWindowAggregate(WindowAggConfig{Kind: WindowTumble, TimeCol: 1, Size: 10 * sec, Keys: []int{0},
		Aggs: []AggSpec{{Func: AggSum, Arg: 2, Filter: -1}}}, schema)
	if err != nil {
		t.Fatal(err)
	}
	if got := out.Field(3).Type; !arrow.TypeEqual(got, arrow.PrimitiveTypes.Int64) {
		t.Fatalf("SUM(int) is %s, want int64", got)
	}
	mem := optest.CheckedAlloc(t)
	batch := optest.BuildBatch(mem, schema, [][]any{{1, 1, 5}})
	hashes, err := exec.HashKeys(batch.Rec, []int{0}, nil)
	if err != nil {
		t.Fatal(err)
	}
	be, err := state.OpenMemory(state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	uk := rowcodec.AppendOrderedInt(rowcodec.AppendOrderedInt(nil, 10*sec), 0) // window [0, 10s)
	uk = rowcodec.AppendIntKey(uk, 1, false)
	acc := binary.AppendVarint(binary.AppendVarint(nil, 1), math.MaxInt64-1)
	be.Put(state.KeyedKey(state.KeyGroupOf(hashes[0], state.DefaultKeyGroups), windowStateID, uk), acc)
	op := f(0)
	if err := op.Open(&exec.TaskContext{State: be, Alloc: mem, MaxKeyGroups: state.DefaultKeyGroups,
		KeyGroups: state.KeyGroupRange{End: state.DefaultKeyGroups}}); err != nil {
		t.Fatal(err)
	}
	defer op.Close()
	err = op.Process(0, batch, nil)
	if sqlerr.Code(err) != sqlerr.NumericOutOfRange || err.Error() != "bigint out of range" {
		t.Fatalf("MaxInt64-1 + 5: %v (SQLSTATE %q), want 22003 bigint out of range", err, sqlerr.Code(err))
	}
}

// TestWindowKeyGroupRouting: a row of a key group the subtask does not own is a routing bug, not data.
func TestWindowKeyGroupRouting(t *testing.T) {
	f := windowOp(t, WindowAggConfig{Kind: WindowTumble, TimeCol: colTS, Size: sec, Keys: []int{colK},
		Aggs: countSum}, windowEvents)
	optest.CheckForeignKeyGroup(t, f, 0, windowEvents, []int{colK}, ev(1, "00:00:01", 1), ev(2, "00:00:01", 1),
		ev(3, "00:00:01", 1))
}

// aggArgFields are columns of the types aggregates take, for the output schema tests.
var aggArgFields = []arrow.Field{
	{Name: "i16", Type: arrow.PrimitiveTypes.Int16},
	{Name: "i64", Type: arrow.PrimitiveTypes.Int64},
	{Name: "d", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}},
	{Name: "d20", Type: &arrow.Decimal128Type{Precision: 30, Scale: 20}},
	{Name: "r", Type: arrow.PrimitiveTypes.Float32},
	{Name: "s", Type: arrow.BinaryTypes.String},
	{Name: "dt", Type: arrow.FixedWidthTypes.Date32},
	{Name: "b", Type: arrow.FixedWidthTypes.Boolean},
}

// aggTimeField is the event time column of the output schema tests.
var aggTimeField = arrow.Field{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Millisecond}}

func TestWindowOutputSchema(t *testing.T) {
	schema := arrow.NewSchema(slices.Concat([]arrow.Field{aggTimeField}, aggArgFields), nil)
	a := func(f AggFunc, arg int) AggSpec { return AggSpec{Func: f, Arg: arg, Filter: -1} }
	dec := func(s int32) arrow.DataType { return &arrow.Decimal128Type{Precision: 38, Scale: s} }
	cases := []struct {
		agg  AggSpec
		want arrow.DataType
	}{
		{AggSpec{Func: AggCountStar, Arg: -1, Filter: 8}, arrow.PrimitiveTypes.Int64},
		{a(AggCountDistinct, 6), arrow.PrimitiveTypes.Int64},
		{a(AggSum, 1), arrow.PrimitiveTypes.Int64},
		{a(AggSum, 2), dec(0)},
		{a(AggSum, 3), dec(2)},
		{a(AggSum, 5), arrow.PrimitiveTypes.Float32},
		{a(AggAvg, 1), dec(16)},
		{a(AggAvg, 3), dec(16)},
		{a(AggAvg, 4), dec(20)},
		{a(AggAvg, 5), arrow.PrimitiveTypes.Float64},
		{a(AggMin, 6), arrow.BinaryTypes.String},
		{a(AggMax, 7), arrow.FixedWidthTypes.Date32},
		{a(AggMax, 0), &arrow.TimestampType{Unit: arrow.Millisecond}},
		{a(AggMin, 8), arrow.FixedWidthTypes.Boolean},
	}
	cfg := WindowAggConfig{Kind: WindowHop, TimeCol: 0, Slide: sec, Size: 2 * sec, Keys: []int{6, 1}}
	for _, c := range cases {
		cfg.Aggs = append(cfg.Aggs, c.agg)
	}
	cfg.Aggs[0].Name = "n"
	_, out, err := NewWindowAggregate(cfg, schema)
	if err != nil {
		t.Fatal(err)
	}
	wantNames := []string{"s", "i16", "window_start", "window_end", "n", "agg1"}
	for i, n := range wantNames {
		if out.Field(i).Name != n {
			t.Fatalf("column %d is %q, want %q (schema %s)", i, out.Field(i).Name, n, out)
		}
	}
	if ts := out.Field(2).Type.(*arrow.TimestampType); ts.Unit != arrow.Microsecond {
		t.Fatalf("window_start is %s, want timestamp[us]", ts)
	}
	for i, c := range cases {
		if got := out.Field(4 + i).Type; !arrow.TypeEqual(got, c.want) {
			t.Errorf("%s(%d) is %s, want %s", c.agg.Func, c.agg.Arg, got, c.want)
		}
	}

	bad := []struct {
		cfg  WindowAggConfig
		code string
	}{
		{WindowAggConfig{Kind: WindowTumble, TimeCol: 0, Size: sec, Aggs: []AggSpec{a(AggSum, 6)}}, sqlerr.UndefinedFunction},
		{WindowAggConfig{Kind: WindowTumble, TimeCol: 0, Size: sec, Aggs: []AggSpec{a(AggAvg, 7)}}, sqlerr.UndefinedFunction},
		{WindowAggConfig{Kind: WindowTumble, TimeCol: 0}, sqlerr.InvalidParameter},
		{WindowAggConfig{Kind: WindowCumulate, TimeCol: 0, Size: 5 * sec, Step: 2 * sec}, sqlerr.InvalidParameter},
		{WindowAggConfig{Kind: WindowSession, TimeCol: 1, Gap: sec}, sqlerr.DatatypeMismatch},
		{WindowAggConfig{Kind: WindowTumble, TimeCol: 0, Size: sec, Aggs: []AggSpec{{Func: AggSum, Arg: 1, Filter: 2}}},
			sqlerr.DatatypeMismatch},
		{WindowAggConfig{Kind: WindowTumble, TimeCol: 0, Size: sec, Keys: []int{42}}, sqlerr.InternalError},
	}
	for _, c := range bad {
		if _, _, err := NewWindowAggregate(c.cfg, schema); sqlerr.Code(err) != c.code {
			t.Errorf("%+v: %v (SQLSTATE %q), want %s", c.cfg, err, sqlerr.Code(err), c.code)
		}
	}
}

// batchSizes records the row counts of emitted batches.
type batchSizes struct{ sizes []int }

func (e *batchSizes) Emit(b exec.Batch) error {
	e.sizes = append(e.sizes, b.Rows())
	b.Release()
	return nil
}

// TestWindowEmitBatches: a firing of 5000 groups comes out as 4096 + 904 rows.
func TestWindowEmitBatches(t *testing.T) {
	mem := optest.CheckedAlloc(t)
	f := windowOp(t, WindowAggConfig{Kind: WindowTumble, TimeCol: colTS, Size: sec, Keys: []int{colK},
		Aggs: countSum}, windowEvents)
	var rows [][]any
	for k := 0; k < 5000; k++ {
		rows = append(rows, ev(k, "00:00:01", k))
	}
	be, _ := state.OpenMemory(state.Options{})
	defer be.Close()
	op := f(0)
	if err := op.Open(&exec.TaskContext{State: be, Alloc: mem, MaxKeyGroups: state.DefaultKeyGroups,
		KeyGroups: state.KeyGroupRange{End: state.DefaultKeyGroups}}); err != nil {
		t.Fatal(err)
	}
	defer op.Close()
	if err := op.Process(0, optest.BuildBatch(mem, windowEvents, rows), nil); err != nil {
		t.Fatal(err)
	}
	out := &batchSizes{}
	if err := op.OnWatermark(exec.MaxWatermark, out); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(out.sizes, []int{4096, 904}) {
		t.Fatalf("batches of %v rows, want [4096 904]", out.sizes)
	}
}
