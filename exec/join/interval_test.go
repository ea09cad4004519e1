package join

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/exec/expr"
	"github.com/clinksql/clinksql/exec/optest"
	"github.com/clinksql/clinksql/exec/rowcodec"
	"github.com/clinksql/clinksql/sqlerr"
)

var (
	tsUS = &arrow.TimestampType{Unit: arrow.Microsecond}
	sec  = int64(time.Second / time.Microsecond)
	// The join tests' inputs: left (k BIGINT, ts TIMESTAMP(6), a VARCHAR), right (k BIGINT, ts TIMESTAMP(6),
	// b BIGINT). Output columns: 0 k, 1 ts, 2 a, 3 k, 4 ts, 5 b.
	intervalLeftSchema  = optest.NullableSchema("k", arrow.PrimitiveTypes.Int64, "ts", tsUS, "a", arrow.BinaryTypes.String)
	intervalRightSchema = optest.NullableSchema("k", arrow.PrimitiveTypes.Int64, "ts", tsUS, "b", arrow.PrimitiveTypes.Int64)
	intervalSchemas     = [2]*arrow.Schema{intervalLeftSchema, intervalRightSchema}
)

// jl and jr are rows of the left and right test inputs; jt is a test time in output form.
func jl(k any, ts string, a any) []any { return []any{k, ts, a} }
func jr(k any, ts string, b any) []any { return []any{k, ts, b} }
func jt(ts string) string              { return optest.TestDay + ts }

// Output rows: a left part and a right part, either NULL-padded.
func outLeft(k, ts, a string) string  { return k + "|" + jt(ts) + "|" + a }
func outRight(k, ts, b string) string { return k + "|" + jt(ts) + "|" + b }

const nullSide = "NULL|NULL|NULL"

func joinedPair(l, r string) string { return l + "|" + r }

// timeJoinOp returns the operator factory a join constructor returns for cfg; an error, or an output schema other than
// the spec's JoinOutputSchema, fails the test.
func timeJoinOp[C any](t *testing.T, newJoin func(C) (func(int) exec.Operator, *arrow.Schema, error), cfg C,
	spec JoinSpec) func(int) exec.Operator {
	t.Helper()
	f, schema, err := newJoin(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !schema.Equal(JoinOutputSchema(spec.Left, spec.Right)) {
		t.Fatalf("output schema %s", schema)
	}
	return f
}

func intervalOp(t *testing.T, cfg IntervalJoinConfig) func(int) exec.Operator {
	t.Helper()
	return timeJoinOp(t, NewIntervalJoin, cfg, cfg.JoinSpec)
}

// intervalConfig joins intervalSchemas on k with r.ts in [l.ts + lower, l.ts + upper].
func intervalConfig(typ JoinType, lower, upper int64) IntervalJoinConfig {
	return IntervalJoinConfig{
		JoinSpec: JoinSpec{Type: typ, Left: intervalLeftSchema, Right: intervalRightSchema, LeftKeys: []int{0}, RightKeys: []int{0}},
		LeftTime: 1, RightTime: 1, Lower: lower, Upper: upper,
	}
}

func colExpr(i int, name string, t arrow.DataType) expr.Expr { return expr.Column(i, name, t) }

func callExpr(t *testing.T, name string, args ...expr.Expr) expr.Expr {
	t.Helper()
	e, err := expr.Call(name, args...)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// The four join types over one script: r.ts in [l.ts - 2s, l.ts + 1s], so a left row's bound is l.ts + 1s, a
// right row's r.ts + 2s, and the output watermark is held back 2s.
func TestIntervalJoinTypes(t *testing.T) {
	script := []any{
		optest.Left(jl(1, "00:00:10", "a1")),
		optest.Right(jr(1, "00:00:09", 100)), // in [8, 11]: pairs with a1 now
		optest.Right(jr(1, "00:00:12", 101), // above a1's 11
			jr(2, "00:00:10", 102)), // no left row of key 2, ever
		optest.Left(jl(1, "00:00:13", "a2"), // [11, 14]: pairs with 101 (arrived before it)
			jl(nil, "00:00:10", "a3")), // a NULL key matches nothing
		optest.Right(jr(nil, "00:00:10", 103)),
		// 00:00:11 is a1's, 100's and a3's bound: an on-time right row at 11 could still match a1, so nothing
		// fires yet.
		optest.AllWM("00:00:11"),
		optest.Check(optest.Emitted(2)),
		optest.AllWM("00:00:11.000001"),        // now a1, 100 and a3 fire: a3 is an outer row
		optest.Left(jl(1, "00:00:11", "late")), // below the watermark: late
		optest.Right(jr(1, "00:00:11.5", 104)), // l.ts in [10.5, 13.5]: a2 (a1 is gone, and out of range anyway)
		optest.AllWM("00:00:14.5"),             // everything else fires: 103 and 102 are outer rows
		optest.Check(optest.Keyed(0)),
	}
	a1r100 := joinedPair(outLeft("1", "00:00:10", "a1"), outRight("1", "00:00:09", "100"))
	a2r101 := joinedPair(outLeft("1", "00:00:13", "a2"), outRight("1", "00:00:12", "101"))
	a2r104 := joinedPair(outLeft("1", "00:00:13", "a2"), outRight("1", "00:00:11.5", "104"))
	a3 := joinedPair(outLeft("NULL", "00:00:10", "a3"), nullSide)
	r103 := joinedPair(nullSide, outRight("NULL", "00:00:10", "103")) // (10, NULL key) sorts before (10, 2)
	r102 := joinedPair(nullSide, outRight("2", "00:00:10", "102"))
	for _, tc := range []struct {
		typ  JoinType
		want []string
	}{
		{JoinInner, []string{a1r100, a2r101, a2r104}},
		{JoinLeft, []string{a1r100, a2r101, a3, a2r104}},
		{JoinRight, []string{a1r100, a2r101, a2r104, r103, r102}},
		{JoinFull, []string{a1r100, a2r101, a3, a2r104, r103, r102}},
	} {
		optest.RunScriptCase(t, optest.ScriptCase{Name: tc.typ.String(), Schemas: intervalSchemas, Script: script,
			Op: intervalOp(t, intervalConfig(tc.typ, -2*sec, sec)), Want: tc.want, Late: 1, TimeCols: []int{1, 4}})
	}
}

// The state holds exactly the rows a future row could still match (and, for outer sides, the unmatched rows
// waiting for their bound): nothing more, nothing less.
func TestIntervalJoinStateCleanup(t *testing.T) {
	for _, tc := range []struct {
		typ       JoinType
		kept, end int
	}{
		// After 00:00:10.5 + 1us: a1 (bound 11) and 100 (bound 11.5) are kept; the right row 101 (bound 10.5)
		// is gone. A NULL-key row is kept only on an outer side, until its bound.
		{JoinInner, 2, 0},
		{JoinLeft, 3, 0},
		{JoinRight, 2, 0},
		{JoinFull, 3, 0},
	} {
		script := []any{
			optest.Left(jl(1, "00:00:10", "a1"), jl(nil, "00:00:10", "n")),
			optest.Right(jr(1, "00:00:09.5", 100), jr(1, "00:00:08.5", 101)),
			optest.Check(optest.Keyed(map[bool]int{false: 3, true: 4}[tc.typ == JoinLeft || tc.typ == JoinFull])),
			optest.AllWM("00:00:10.500001"),
			optest.Check(optest.Keyed(tc.kept)),
			optest.AllWM("00:00:11.500001"),
			optest.Check(optest.Keyed(tc.end)),
		}
		// 101 at 8.5 is in [8, 11] of a1: two pairs.
		want := []string{
			joinedPair(outLeft("1", "00:00:10", "a1"), outRight("1", "00:00:09.5", "100")),
			joinedPair(outLeft("1", "00:00:10", "a1"), outRight("1", "00:00:08.5", "101")),
		}
		if tc.typ == JoinLeft || tc.typ == JoinFull {
			want = append(want, joinedPair(outLeft("NULL", "00:00:10", "n"), nullSide))
		}
		optest.RunScriptCase(t, optest.ScriptCase{Name: tc.typ.String(), Schemas: intervalSchemas, Script: script,
			Op: intervalOp(t, intervalConfig(tc.typ, -2*sec, sec)), Want: want, TimeCols: []int{1, 4}})
	}
}

// A residual condition decides what matches: a pair it rejects leaves both rows unmatched, so an outer join pads
// them. Fired outer rows come in (time, key, arrival) order, whatever side they are from.
func TestIntervalJoinResidual(t *testing.T) {
	cfg := intervalConfig(JoinFull, -2*sec, sec)
	// b > 100 AND a <> 'x'
	cfg.Residual = callExpr(t, "and",
		callExpr(t, ">", colExpr(5, "b", arrow.PrimitiveTypes.Int64), expr.Int64(100)),
		callExpr(t, "<>", colExpr(2, "a", arrow.BinaryTypes.String), expr.String("x")))
	script := []any{
		optest.Left(jl(1, "00:00:10", "a1"), jl(1, "00:00:10.5", "x"), jl(1, "00:00:10.5", nil)),
		// 100 fails b > 100 with everything; 105 matches a1 only ('x' fails, NULL <> 'x' is NULL).
		optest.Right(jr(1, "00:00:09", 100), jr(1, "00:00:10", 105), jr(1, "00:00:10", nil)),
		optest.AllWM("00:00:20"),
	}
	optest.RunScriptCase(t, optest.ScriptCase{Name: "full", Schemas: intervalSchemas, Script: script, Op: intervalOp(t, cfg), TimeCols: []int{1, 4},
		Want: []string{
			joinedPair(outLeft("1", "00:00:10", "a1"), outRight("1", "00:00:10", "105")),
			// At 00:00:20 the unmatched rows fire by (time, key, arrival): 100 at 9, the NULL-b right row at 10
			// (a1 and 105 matched), then x and the NULL-a left row at 10.5 in arrival order.
			joinedPair(nullSide, outRight("1", "00:00:09", "100")),
			joinedPair(nullSide, outRight("1", "00:00:10", "NULL")),
			joinedPair(outLeft("1", "00:00:10.5", "x"), nullSide),
			joinedPair(outLeft("1", "00:00:10.5", "NULL"), nullSide),
		}})
}

// Negative bounds (the right row 1-3 s before the left one): a left row's bound, l.ts - 1s, can already be below
// the watermark when it arrives on time. It still matches the right rows kept, and its outer row fires at the
// next watermark; the output watermark is held back by 3s (-Lower).
func TestIntervalJoinBoundPassedOnArrival(t *testing.T) {
	script := []any{
		optest.AllWM("00:00:10"),
		optest.Right(jr(1, "00:00:10", 1), jr(2, "00:00:10", 2)), // bounds 13
		optest.Left(jl(1, "00:00:12", "p")),                      // r.ts in [9, 11]: pairs with 1
		optest.AllWM("00:00:11.5"),
		optest.Left(jl(1, "00:00:12", "q"), jl(3, "00:00:12", "z")), // bound 11 < 11.5: q pairs with 1, z has nothing
		optest.Check(optest.Emitted(2)),
		optest.AllWM("00:00:11.6"), // z fires
		optest.Check(optest.Emitted(3)),
		optest.AllWM("00:00:13.000001"), // the right rows fire: 2 never matched
	}
	optest.RunScriptCase(t, optest.ScriptCase{Name: "left-outer", Schemas: intervalSchemas, Script: script, Op: intervalOp(t, intervalConfig(JoinFull, -3*sec, -sec)),
		TimeCols: []int{1, 4},
		Want: []string{
			joinedPair(outLeft("1", "00:00:12", "p"), outRight("1", "00:00:10", "1")),
			joinedPair(outLeft("1", "00:00:12", "q"), outRight("1", "00:00:10", "1")),
			joinedPair(outLeft("3", "00:00:12", "z"), nullSide),
			joinedPair(nullSide, outRight("2", "00:00:10", "2")),
		}})
}

// Outer rows fire exactly when the watermark passes their bound, not before; the combined watermark is the
// minimum of the inputs', so one input racing ahead fires nothing.
func TestIntervalJoinFiresAtBound(t *testing.T) {
	script := []any{
		optest.Left(jl(1, "00:00:10", "a")), // bound 10.5
		optest.Right(jr(2, "00:00:10", 7)),  // bound 10.25
		optest.InputWM{In: 0, WM: "00:00:30"},
		optest.Check(optest.Emitted(0)),
		optest.InputWM{In: 1, WM: "00:00:10.25"},
		optest.Check(optest.Emitted(0)),
		optest.InputWM{In: 1, WM: "00:00:10.250001"},
		optest.Check(optest.Emitted(1)),
		optest.InputWM{In: 1, WM: "00:00:10.5"},
		optest.Check(optest.Emitted(1)),
		optest.InputWM{In: 1, WM: "00:00:10.500001"},
		optest.Check(optest.Emitted(2)),
	}
	optest.RunScriptCase(t, optest.ScriptCase{Name: "full", Schemas: intervalSchemas, Script: script, TimeCols: []int{1, 4},
		Op: intervalOp(t, intervalConfig(JoinFull, -sec/4, sec/2)),
		Want: []string{
			joinedPair(nullSide, outRight("2", "00:00:10", "7")),
			joinedPair(outLeft("1", "00:00:10", "a"), nullSide),
		}})
}

// NULL event times are dropped and counted as bad values; string and multi-column keys; timestamps of other
// units.
func TestIntervalJoinKeysAndUnits(t *testing.T) {
	left := arrow.NewSchema([]arrow.Field{
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "n", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Millisecond}, Nullable: true},
	}, nil)
	right := arrow.NewSchema([]arrow.Field{
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Nanosecond}, Nullable: true},
		{Name: "n", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	cfg := IntervalJoinConfig{
		JoinSpec: JoinSpec{Type: JoinLeft, Left: left, Right: right, LeftKeys: []int{0, 1}, RightKeys: []int{2, 1}},
		LeftTime: 2, RightTime: 0, Lower: 0, Upper: sec,
	}
	script := []any{
		optest.Left([]any{"x", 1, "00:00:01"}, []any{"x", 2, "00:00:01"}, []any{"x", nil, "00:00:01"},
			[]any{"xy", 1, nil}),
		optest.Right([]any{"00:00:01.5", 1, "x"}, []any{"00:00:02", 2, "x"}, []any{"00:00:02.000001", 1, "x"},
			[]any{"00:00:01.5", nil, "x"}, []any{nil, 1, "x"}),
	}
	optest.RunScriptCase(t, optest.ScriptCase{Name: "string-int32", Schemas: [2]*arrow.Schema{left, right}, Script: script, Op: intervalOp(t, cfg),
		Errors: 2, TimeCols: []int{2, 3},
		Want: []string{
			"x|1|" + jt("00:00:01") + "|" + jt("00:00:01.5") + "|1|x",
			"x|2|" + jt("00:00:01") + "|" + jt("00:00:02") + "|2|x",
			// at the end: the NULL-key left row
			"x|NULL|" + jt("00:00:01") + "|NULL|NULL|NULL",
		}})
}

// A changelog row fails the operator, and so does a row of a key group the subtask does not own (a routing bug).
func TestIntervalJoinRejects(t *testing.T) {
	optest.RunScriptCase(t, optest.ScriptCase{Name: "retraction", Schemas: intervalSchemas, Op: intervalOp(t, intervalConfig(JoinInner, 0, 0)),
		Script:  []any{optest.InputRows{In: 1, Rows: [][]any{jr(1, "00:00:01", 1)}, Kinds: []exec.RowKind{exec.Delete}}},
		WantErr: "append-only", Shapes: []optest.Shape{{}}})

	optest.CheckForeignKeyGroup(t, intervalOp(t, intervalConfig(JoinInner, 0, 0)), 0, intervalLeftSchema, []int{0},
		jl(1, "00:00:01", "a"), jl(2, "00:00:01", "a"), jl(3, "00:00:01", "a"))
}

func TestIntervalJoinValidation(t *testing.T) {
	ok := intervalConfig(JoinInner, -sec, sec)
	badTime := arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int64},
		{Name: "ts", Type: arrow.PrimitiveTypes.Int64}, {Name: "b", Type: arrow.PrimitiveTypes.Int64}}, nil)
	strKey := arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.BinaryTypes.String},
		{Name: "ts", Type: tsUS}, {Name: "b", Type: arrow.PrimitiveTypes.Int64}}, nil)
	interval := arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int64},
		{Name: "ts", Type: tsUS}, {Name: "i", Type: arrow.FixedWidthTypes.MonthDayNanoInterval}}, nil)
	for _, tc := range []struct {
		name string
		mod  func(c *IntervalJoinConfig)
		code string
	}{
		{"lower above upper", func(c *IntervalJoinConfig) { c.Lower, c.Upper = 2, 1 }, sqlerr.InvalidParameter},
		{"lower min int", func(c *IntervalJoinConfig) { c.Lower = math.MinInt64 }, sqlerr.InvalidParameter},
		{"time not a timestamp", func(c *IntervalJoinConfig) { c.Right = badTime }, sqlerr.DatatypeMismatch},
		{"time out of range", func(c *IntervalJoinConfig) { c.LeftTime = 3 }, sqlerr.InternalError},
		{"key out of range", func(c *IntervalJoinConfig) { c.RightKeys = []int{7} }, sqlerr.InternalError},
		{"no keys", func(c *IntervalJoinConfig) { c.LeftKeys, c.RightKeys = nil, nil }, sqlerr.InternalError},
		{"key count", func(c *IntervalJoinConfig) { c.RightKeys = []int{0, 2} }, sqlerr.InternalError},
		{"key types differ", func(c *IntervalJoinConfig) { c.Right = strKey }, sqlerr.InternalError},
		{"unhashable key", func(c *IntervalJoinConfig) {
			c.Left, c.Right, c.LeftKeys, c.RightKeys = interval, interval, []int{2}, []int{2}
		}, sqlerr.FeatureNotSupported},
		{"column not storable", func(c *IntervalJoinConfig) { c.Right = interval }, sqlerr.FeatureNotSupported},
		{"residual not boolean", func(c *IntervalJoinConfig) { c.Residual = colExpr(5, "b", arrow.PrimitiveTypes.Int64) },
			sqlerr.DatatypeMismatch},
		{"residual column out of range", func(c *IntervalJoinConfig) {
			c.Residual = colExpr(6, "x", arrow.FixedWidthTypes.Boolean)
		}, sqlerr.InternalError},
		{"bad type", func(c *IntervalJoinConfig) { c.Type = 9 }, sqlerr.InternalError},
	} {
		c := ok
		tc.mod(&c)
		if _, _, err := NewIntervalJoin(c); sqlerr.Code(err) != tc.code {
			t.Errorf("%s: %v (SQLSTATE %q), want %s", tc.name, err, sqlerr.Code(err), tc.code)
		}
	}
	if _, _, err := NewIntervalJoin(ok); err != nil {
		t.Fatal(err)
	}
	// The output watermark is held back by max(Upper, -Lower, 0), saturating.
	for _, tc := range []struct{ lower, upper, wm, want int64 }{
		{-2, 1, 100, 98}, {-1, 5, 100, 95}, {3, 5, 100, 95}, {-5, -3, 100, 95}, {0, 0, 100, 100},
		{-10, 10, math.MinInt64 + 5, math.MinInt64}, {0, math.MaxInt64, 0, -math.MaxInt64},
	} {
		f, _, err := NewIntervalJoin(intervalConfig(JoinInner, tc.lower, tc.upper))
		optest.Must(t, err)
		if got := f(0).(exec.WatermarkHolder).OutputWatermark(tc.wm); got != tc.want {
			t.Errorf("[%d, %d]: OutputWatermark(%d) = %d, want %d", tc.lower, tc.upper, tc.wm, got, tc.want)
		}
	}
}

// timeEvent is one event of a random two-input script: a batch for input in, or a watermark (rows nil) of input in
// (-1: both).
type timeEvent struct {
	in   int
	rows [][]any
	wm   int64
}

// outRow is a model's output row (left values then right values, nil for NULL) and the harness step it must be
// emitted at.
type outRow struct {
	vals []any
	step int
}

// modelText renders model rows as the harness does.
func modelText(out *arrow.Schema, rows []outRow) ([]string, []int) {
	if len(rows) == 0 {
		return nil, nil
	}
	vals := make([][]any, len(rows))
	steps := make([]int, len(rows))
	for i, r := range rows {
		vals[i], steps[i] = r.vals, r.step
	}
	b := optest.BuildBatch(memory.NewGoAllocator(), out, vals)
	defer b.Release()
	return optest.BatchText(b), steps
}

// runRandom runs events through a fresh operator in the harness with a barrier after an event one time in four
// (half of them restoring), then the end of input, and checks that the state is empty at the end.
func runRandom(t *testing.T, rng *rand.Rand, op func(int) exec.Operator, schemas [2]*arrow.Schema, events []timeEvent,
	pebble bool) *optest.Harness {
	t.Helper()
	h := optest.NewHarness(t, op, pebble, schemas[:]...)
	run := func() error {
		if err := h.Open("", 0); err != nil {
			return err
		}
		for _, e := range events {
			var err error
			if e.rows != nil {
				err = h.Process(e.in, e.rows, nil)
			} else {
				err = h.Watermark(e.in, e.wm)
			}
			if err != nil {
				return err
			}
			if rng.IntN(4) == 0 {
				if err := h.Barrier(rng.IntN(2) == 0); err != nil {
					return err
				}
			}
		}
		if err := h.Finish(); err != nil {
			return err
		}
		if err := h.Barrier(false); err != nil {
			return err
		}
		return optest.Keyed(0)(h)
	}
	if err := errors.Join(run(), h.Close()); err != nil {
		t.Fatal(err)
	}
	return h
}

// modelBase is what the naive join models of the random tests share: the join type, whether the residual
// v < w applies, the columns per side, the combined watermark, and what the operator must give: the output rows,
// each with the harness step it must be emitted at, and the late rows and bad times counted.
type modelBase struct {
	typ        JoinType
	residual   bool // v < w
	width      int
	wm         int64
	out        []outRow
	step       int
	late, errs int64
}

func newTJModel(typ JoinType, residual bool, width int) modelBase {
	return modelBase{typ: typ, residual: residual, width: width, wm: exec.MinWatermark}
}

func (m *modelBase) base() *modelBase { return m }

func (m *modelBase) outer(side int) bool {
	return m.typ == JoinFull || (side == 0 && m.typ == JoinLeft) || (side == 1 && m.typ == JoinRight)
}

// emit outputs the row of left values l and right values r, a nil side NULL-padded.
func (m *modelBase) emit(l, r []any) {
	vals := make([]any, 0, 2*m.width)
	for _, x := range [][]any{l, r} {
		if x == nil {
			x = make([]any, m.width)
		}
		vals = append(vals, x...)
	}
	m.out = append(m.out, outRow{vals: vals, step: m.step})
}

// advance moves the watermark to wm, a step, and reports whether it was ahead.
func (m *modelBase) advance(wm int64) bool {
	if wm <= m.wm {
		return false
	}
	m.wm = wm
	m.step++
	return true
}

// timeModel is a naive join model: it sees the batches and the combined watermarks the operator sees.
type timeModel interface {
	process(in int, rows [][]any)
	watermark(wm int64)
	base() *modelBase
}

// checkRandom runs events through model m (the combined watermark is the minimum of the inputs', then comes the
// end of input) and through a fresh operator (runRandom): the operator must emit exactly the model's rows, in
// its order, each at its step, and count the same late rows and bad times.
func checkRandom(t *testing.T, name string, rng *rand.Rand, op func(int) exec.Operator, schemas [2]*arrow.Schema,
	events []timeEvent, pebble bool, m timeModel) {
	t.Helper()
	inWM := [2]int64{exec.MinWatermark, exec.MinWatermark}
	for _, e := range events {
		if e.rows != nil {
			m.process(e.in, e.rows)
			continue
		}
		for i := range inWM {
			if e.in < 0 || e.in == i {
				inWM[i] = max(inWM[i], e.wm)
			}
		}
		m.watermark(min(inWM[0], inWM[1]))
	}
	m.watermark(exec.MaxWatermark)
	want := m.base()
	rows, steps := modelText(JoinOutputSchema(schemas[0], schemas[1]), want.out)

	h := runRandom(t, rng, op, schemas, events, pebble)
	if !slices.Equal(h.Rows, rows) || !slices.Equal(h.Step, steps) {
		t.Fatalf("%s:\n got  %q at steps %v\n want %q at steps %v", name, h.Rows, h.Step, rows, steps)
	}
	if h.Late.Load() != want.late || h.Errs.Load() != want.errs {
		t.Fatalf("%s: late %d errors %d, want %d and %d", name, h.Late.Load(), h.Errs.Load(), want.late, want.errs)
	}
}

// randomEvents generates a script: batches of 1-4 rows per input with times around the input's clock (some
// below the watermark: late; some NULL), keys from keys (nil: NULL) and a value column 0-9 (sometimes NULL), and
// watermarks that trail the clocks. row builds an input row from key, time and value.
func randomEvents(rng *rand.Rand, n int, keys []any, row func(in int, key any, ts any, v any) []any) []timeEvent {
	var clock [2]int64
	var out []timeEvent
	for range n {
		in := rng.IntN(2)
		if rng.IntN(5) < 3 {
			var rows [][]any
			for range 1 + rng.IntN(4) {
				clock[in] += int64(rng.IntN(3))
				var ts, v any = clock[in] + int64(rng.IntN(7)) - 3, rng.IntN(10)
				if rng.IntN(25) == 0 {
					ts = nil
				}
				if rng.IntN(8) == 0 {
					v = nil
				}
				rows = append(rows, row(in, keys[rng.IntN(len(keys))], ts, v))
			}
			out = append(out, timeEvent{in: in, rows: rows})
			continue
		}
		if rng.IntN(4) == 0 {
			in = -1
		}
		c := clock[max(in, 0)]
		if in < 0 {
			c = min(clock[0], clock[1])
		}
		out = append(out, timeEvent{in: in, wm: c - int64(rng.IntN(4))})
	}
	return out
}

// keySchemas returns the random tests' inputs: (k, ts, v BIGINT) and (k, ts, w BIGINT) with k BIGINT or
// VARCHAR, and the key values to draw from (NULL included).
func keySchemas(strKeys bool, timeCols ...string) ([2]*arrow.Schema, []any) {
	kt, keys := arrow.DataType(arrow.PrimitiveTypes.Int64), []any{0, 1, 2, -3, nil}
	if strKeys {
		// Canonical string bytes are length-prefixed: "b" sorts before "ab".
		kt, keys = arrow.BinaryTypes.String, []any{"a", "b", "ab", "ba", nil}
	}
	var schemas [2]*arrow.Schema
	for side, v := range []string{"v", "w"} {
		fields := []arrow.Field{{Name: "k", Type: kt, Nullable: true}}
		for _, tc := range timeCols {
			fields = append(fields, arrow.Field{Name: tc, Type: tsUS, Nullable: true})
		}
		fields = append(fields, arrow.Field{Name: v, Type: arrow.PrimitiveTypes.Int64, Nullable: true})
		schemas[side] = arrow.NewSchema(fields, nil)
	}
	return schemas, keys
}

// testKeyBytes is the canonical key bytes of a model key, for the model's (key bytes) order.
func testKeyBytes(k any) []byte {
	switch k := k.(type) {
	case nil:
		return []byte{0}
	case int:
		return rowcodec.AppendIntKey(nil, int64(k), false)
	case string:
		return rowcodec.AppendLenPrefixed([]byte{1}, k)
	}
	panic(k)
}

// intervalModel is the naive interval join: every arriving on-time row against every earlier row of the other side
// (nested loop), outer rows when the watermark passes their bound.
type intervalModel struct {
	modelBase
	lower, upper int64
	rows         []*intervalModelRow
}

type intervalModelRow struct {
	side           int
	vals           []any
	key            any
	ts, seq        int64
	matched, fired bool
}

func (m *intervalModel) matches(l, r *intervalModelRow) bool {
	if l.key == nil || r.key == nil || l.key != r.key || r.ts < l.ts+m.lower || r.ts > l.ts+m.upper {
		return false
	}
	if m.residual {
		v, w := l.vals[2], r.vals[2]
		return v != nil && w != nil && v.(int) < w.(int)
	}
	return true
}

func (m *intervalModel) process(in int, rows [][]any) {
	m.step++
	for _, vals := range rows {
		if vals[1] == nil {
			m.errs++
			continue
		}
		r := &intervalModelRow{side: in, vals: vals, key: vals[0], ts: vals[1].(int64), seq: int64(len(m.rows))}
		if r.ts < m.wm {
			m.late++
			continue
		}
		for _, x := range m.rows {
			if x.side == in {
				continue
			}
			l, rr := x, r
			if in == 0 {
				l, rr = r, x
			}
			if m.matches(l, rr) {
				l.matched, rr.matched = true, true
				m.emit(l.vals, rr.vals)
			}
		}
		m.rows = append(m.rows, r)
	}
}

func (m *intervalModel) watermark(wm int64) {
	if !m.advance(wm) {
		return
	}
	var fired []*intervalModelRow
	for _, x := range m.rows {
		bound := x.ts + m.upper
		if x.side == 1 {
			bound = x.ts - m.lower
		}
		if !x.fired && (bound < wm || wm == exec.MaxWatermark) {
			x.fired = true
			if !x.matched && m.outer(x.side) {
				fired = append(fired, x)
			}
		}
	}
	slices.SortFunc(fired, func(a, b *intervalModelRow) int {
		return cmp.Or(cmp.Compare(a.ts, b.ts), bytes.Compare(testKeyBytes(a.key), testKeyBytes(b.key)), cmp.Compare(a.seq, b.seq))
	})
	for _, x := range fired {
		if x.side == 0 {
			m.emit(x.vals, nil)
		} else {
			m.emit(nil, x.vals)
		}
	}
}

// A seeded randomized comparison with the nested-loop model over random join types, bounds, keys (integer and
// string, with NULLs), residual conditions, interleavings, batchings, watermarks, barriers and restores: the
// operator must emit exactly the model's rows, in the model's order, each at the model's step (a pair when its
// later row arrives, an outer row at the first watermark past its bound), count the same late rows and bad
// times, and leave no state behind.
func TestIntervalJoinRandom(t *testing.T) {
	t.Setenv("CLINK_STATE_FSYNC", "0")
	iters := 150
	if testing.Short() {
		iters = 25
	}
	for it := range iters {
		rng := rand.New(rand.NewPCG(uint64(it), 0x1a7e))
		typ := JoinType(rng.IntN(4))
		lower := int64(rng.IntN(9)) - 6
		upper := lower + int64(rng.IntN(7))
		residual := rng.IntN(3) == 0
		strKeys := rng.IntN(2) == 0
		pebble := rng.IntN(2) == 0
		schemas, keys := keySchemas(strKeys, "ts")
		events := randomEvents(rng, 10+rng.IntN(50), keys, func(_ int, k, ts, v any) []any {
			if ts != nil {
				ts = ts.(int64)
			}
			return []any{k, ts, v}
		})
		cfg := IntervalJoinConfig{
			JoinSpec: JoinSpec{Type: typ, Left: schemas[0], Right: schemas[1], LeftKeys: []int{0}, RightKeys: []int{0}},
			LeftTime: 1, RightTime: 1, Lower: lower, Upper: upper,
		}
		if residual {
			cfg.Residual = callExpr(t, "<", colExpr(2, "v", arrow.PrimitiveTypes.Int64), colExpr(5, "w", arrow.PrimitiveTypes.Int64))
		}
		name := fmt.Sprintf("seed %d: %s [%d, %d] residual=%v strKeys=%v pebble=%v", it, typ, lower, upper, residual, strKeys, pebble)
		m := &intervalModel{modelBase: newTJModel(typ, residual, 3), lower: lower, upper: upper}
		checkRandom(t, name, rng, intervalOp(t, cfg), schemas, events, pebble, m)
	}
}
