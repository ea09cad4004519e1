package operators

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/exec/expr"
	"github.com/clinksql/clinksql/exec/rowcodec"
	"github.com/clinksql/clinksql/sqlerr"
	"github.com/clinksql/clinksql/state"
)

// The changelog harness of the group aggregate and Top-N tests: it feeds explicit batches of rows with row kinds
// to an operator in Harness and records its output per input batch, as "+I 1|2" lines (kind, then the Postgres
// text form of the row). After every batch comes a watermark; between batches, barriers, and where asked a full
// restore. It checks, besides Harness's checks (the declared output schema, nil Kinds on an all-insert batch,
// nothing emitted in OnBarrier, nothing left allocated), that watermarks and the end of input emit nothing.

type gaclRow struct {
	kind exec.RowKind
	vals []any
}

func gaIns(v ...any) gaclRow { return gaclRow{exec.Insert, v} }
func gaDel(v ...any) gaclRow { return gaclRow{exec.Delete, v} }
func gaUB(v ...any) gaclRow  { return gaclRow{exec.UpdateBefore, v} }
func gaUA(v ...any) gaclRow  { return gaclRow{exec.UpdateAfter, v} }

// gaclBatch is a batch of changelog rows as a run step.
func gaclBatch(rows []gaclRow) BatchStep {
	b := BatchStep{Rows: make([][]any, len(rows)), Kinds: make([]exec.RowKind, len(rows))}
	for i, r := range rows {
		b.Rows[i], b.Kinds[i] = r.vals, r.kind
	}
	b.Kinds = ChangelogKinds(b.Kinds)
	return b
}

// gaclShapes are how a case runs: memory or Pebble; restore "" (barriers only), "mid" (a restore after the
// middle batch) or "every" (after every batch). The batches are the case's.
func gaclShapes() []Shape {
	return slices.DeleteFunc(AllShapes(), func(s Shape) bool { return s.Batch != 0 })
}

// gaclResult is one run: the output per input batch, the Errors count, the first error.
type gaclResult struct {
	out    [][]string
	errors int64
	err    error
}

// gaclExec runs batches through a fresh operator. plan(i, n) says what follows batch i (not the last): a barrier,
// and whether a restore.
func gaclExec(t testing.TB, schema, out *arrow.Schema, factory func(int) exec.Operator, batches [][]gaclRow,
	pebble bool, plan func(i, n int) (barrier, restore bool)) gaclResult {
	t.Helper()
	h := NewHarness(t, factory, pebble, schema)
	h.Out, h.Changelog = out, true
	steps := make([]any, len(batches))
	for i, rows := range batches {
		steps[i] = gaclBatch(rows)
	}
	var res gaclResult
	seen := 0 // the output rows of the batches before
	res.err = h.Run(steps, plan, func(i int, _ BatchStep, _ bool) error {
		res.out = append(res.out, slices.Clone(h.Rows[seen:]))
		seen = len(h.Rows)
		if err := h.Watermark(0, int64(i)); err != nil {
			return err
		}
		if len(h.Rows) > seen {
			return fmt.Errorf("a watermark emitted %q", h.Rows[seen:])
		}
		return nil
	})
	if res.err == nil && len(h.Rows) > seen {
		res.err = fmt.Errorf("the end of input emitted %q", h.Rows[seen:])
	}
	res.err = errors.Join(res.err, h.Close())
	res.errors = h.Errs.Load()
	return res
}

// gaclCase is a hand-derived changelog test: want[i] is the output of batches[i], in order.
type gaclCase struct {
	name    string
	schema  *arrow.Schema
	factory func(int) exec.Operator
	out     *arrow.Schema
	batches [][]gaclRow
	want    [][]string
	errors  int64
	wantErr string // SQLSTATE or substring: the run must fail with it
}

// runGacl runs c in every shape; each must give exactly c.want.
func runGacl(t *testing.T, c gaclCase) {
	t.Helper()
	RunShapes(t, c.name, gaclShapes(), func(t *testing.T, sh Shape) {
		res := gaclExec(t, c.schema, c.out, c.factory, c.batches, sh.Pebble, sh.Barrier)
		if CheckRunErr(t, sh, res.err, c.wantErr, res.out) {
			return
		}
		for i := range c.want {
			var got []string
			if i < len(res.out) {
				got = res.out[i]
			}
			if !slices.Equal(got, c.want[i]) {
				t.Fatalf("%s: batch %d:\n got  %q\n want %q", sh, i, got, c.want[i])
			}
		}
		if res.errors != c.errors {
			t.Fatalf("%s: errors %d, want %d", sh, res.errors, c.errors)
		}
	})
}

// gaclOpen opens an operator of newOp on a memory backend in a changelog harness, for tests of what the operator
// keeps; the test's cleanup closes it.
func gaclOpen(t *testing.T, newOp func(int) exec.Operator, schema, out *arrow.Schema) *Harness {
	t.Helper()
	h := NewHarness(t, newOp, false, schema)
	h.Out, h.Changelog = out, true
	must(t, h.Open("", 0))
	t.Cleanup(func() { must(t, h.Close()) })
	return h
}

// gaclStep feeds one batch of changelog rows and takes a barrier; it returns the rows emitted.
func gaclStep(t *testing.T, h *Harness, rows ...gaclRow) []string {
	t.Helper()
	n := len(h.Rows)
	b := gaclBatch(rows)
	must(t, h.Process(0, b.Rows, b.Kinds))
	must(t, h.Barrier(false))
	return h.Rows[n:]
}

// stateEntries counts the entries of a backend.
func stateEntries(t *testing.T, be state.Backend) int {
	t.Helper()
	n := 0
	must(t, be.Scan(nil, func(_, _ []byte) error { n++; return nil }))
	return n
}

// gaEvents is the input of the group aggregate tests: (k BIGINT, v BIGINT, s VARCHAR, d DECIMAL(10,2),
// f BOOLEAN, x DOUBLE).
var gaEvents = arrow.NewSchema([]arrow.Field{
	{Name: "k", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "v", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "d", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}, Nullable: true},
	{Name: "f", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "x", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
}, nil)

const gaK, gaV, gaS, gaD, gaF, gaX = 0, 1, 2, 3, 4, 5

// gr is a gaEvents row with k and v; the other columns NULL.
func gr(k, v any) []any { return []any{k, v, nil, nil, nil, nil} }

func gaSpec(f AggFunc, arg, filter int) AggSpec { return AggSpec{Func: f, Arg: arg, Filter: filter} }

func gaOp(t testing.TB, cfg GroupAggConfig, schema *arrow.Schema) (func(int) exec.Operator, *arrow.Schema) {
	t.Helper()
	return MustOp(t, NewGroupAggregate, cfg, schema)
}

func gaCase(t *testing.T, name string, cfg GroupAggConfig, batches [][]gaclRow, want [][]string) gaclCase {
	f, out := gaOp(t, cfg, gaEvents)
	return gaclCase{name: name, schema: gaEvents, factory: f, out: out, batches: batches, want: want}
}

func gaRows(rows ...[]any) []gaclRow {
	out := make([]gaclRow, len(rows))
	for i, r := range rows {
		out[i] = gaIns(r...)
	}
	return out
}

// TestGroupAggRetract: every numeric aggregate under inserts and retractions; MAX retracting its current extreme;
// a group disappearing and reappearing; a batch whose changes cancel out emits nothing.
func TestGroupAggRetract(t *testing.T) {
	cfg := GroupAggConfig{Keys: []int{gaK}, InputUpdating: true, Aggs: []AggSpec{
		gaSpec(AggCountStar, -1, -1), gaSpec(AggCount, gaV, -1), gaSpec(AggSum, gaV, -1), gaSpec(AggAvg, gaV, -1),
		gaSpec(AggMin, gaV, -1), gaSpec(AggMax, gaV, -1), gaSpec(AggCountDistinct, gaV, -1),
	}}
	const avg = ".0000000000000000"
	runGacl(t, gaCase(t, "keyed", cfg, [][]gaclRow{
		{gaIns(gr(1, 10)...), gaIns(gr(1, 20)...), gaIns(gr(2, 5)...)},
		// k=1 loses its maximum 20 and gains another 10: max falls back to 10, one distinct value left.
		{gaDel(gr(1, 20)...), gaIns(gr(1, 10)...)},
		// k=2's only row goes: -D with its last result.
		{gaDel(gr(2, 5)...)},
		// k=2 comes back with a NULL v: count(*) 1, count(v) 0, the rest NULL, distinct 0.
		{gaIns(gr(2, nil)...)},
		// An insert and its retraction in one batch: k=2's result does not change, nothing is emitted. k=1 as an
		// update pair: -U 10 then +U 30 (sum 10+30 = 40, avg 20, min 10, max 30, distinct 2).
		{gaIns(gr(2, 7)...), gaDel(gr(2, 7)...), gaUB(gr(1, 10)...), gaUA(gr(1, 30)...)},
		// k=1's last rows go; k=3 appears in the same batch, after k=1 was touched.
		{gaDel(gr(1, 10)...), gaIns(gr(3, -4)...), gaDel(gr(1, 30)...)},
	}, [][]string{
		{"+I 1|2|2|30|15" + avg + "|10|20|2", "+I 2|1|1|5|5" + avg + "|5|5|1"},
		{"-U 1|2|2|30|15" + avg + "|10|20|2", "+U 1|2|2|20|10" + avg + "|10|10|1"},
		{"-D 2|1|1|5|5" + avg + "|5|5|1"},
		{"+I 2|1|0|NULL|NULL|NULL|NULL|0"},
		{"-U 1|2|2|20|10" + avg + "|10|10|1", "+U 1|2|2|40|20" + avg + "|10|30|2"},
		{"-D 1|2|2|40|20" + avg + "|10|30|2", "+I 3|1|1|-4|-4" + avg + "|-4|-4|1"},
	}))
}

// TestGroupAggMinMaxMultiset: MIN/MAX over a changelog keep every value with its count: retracting one copy of the
// extreme keeps it, retracting the last copy moves to the next value; strings compare by bytes.
func TestGroupAggMinMaxMultiset(t *testing.T) {
	cfg := GroupAggConfig{Keys: []int{gaK}, InputUpdating: true, Aggs: []AggSpec{
		gaSpec(AggMin, gaS, -1), gaSpec(AggMax, gaS, -1), gaSpec(AggMin, gaD, -1), gaSpec(AggMax, gaX, -1),
	}}
	row := func(s, d, x any) []any { return []any{1, nil, s, d, nil, x} }
	runGacl(t, gaCase(t, "strings-decimals-floats", cfg, [][]gaclRow{
		{gaIns(row("b", "1.50", 2.5)...), gaIns(row("a", "-1.00", 1.0)...), gaIns(row("a", "-1.00", 1.0)...),
			gaIns(row("ab", "3.00", -7.0)...)},
		// One copy of the minimum "a" / -1.00 goes: unchanged, nothing emitted.
		{gaDel(row("a", "-1.00", 1.0)...)},
		// The other copy goes: min "ab", min(d) 1.50; max(x) still 2.5.
		{gaDel(row("a", "-1.00", 1.0)...)},
		// The maximum "b" goes (with max(x) 2.5): max "ab", max(x) -7.
		{gaDel(row("b", "1.50", 2.5)...)},
		// NaN is above every number.
		{gaIns(row(nil, nil, math.NaN())...)},
	}, [][]string{
		{"+I 1|a|b|-1.00|2.5"},
		nil,
		{"-U 1|a|b|-1.00|2.5", "+U 1|ab|b|1.50|2.5"},
		{"-U 1|ab|b|1.50|2.5", "+U 1|ab|ab|3.00|-7"},
		{"-U 1|ab|ab|3.00|-7", "+U 1|ab|ab|3.00|NaN"},
	}))
}

// TestGroupAggFilter: FILTER (WHERE f) counts a row only where f is TRUE, for inserts and retractions alike; the
// group's existence follows all its rows.
func TestGroupAggFilter(t *testing.T) {
	cfg := GroupAggConfig{Keys: []int{gaK}, InputUpdating: true, Aggs: []AggSpec{
		gaSpec(AggCountStar, -1, gaF), gaSpec(AggSum, gaV, gaF), gaSpec(AggCountStar, -1, -1),
	}}
	row := func(v, f any) []any { return []any{1, v, nil, nil, f, nil} }
	runGacl(t, gaCase(t, "filter", cfg, [][]gaclRow{
		{gaIns(row(1, true)...), gaIns(row(2, false)...), gaIns(row(4, nil)...)},
		{gaDel(row(1, true)...)},
		{gaIns(row(8, true)...), gaDel(row(2, false)...)},
		{gaDel(row(4, nil)...)},
		{gaDel(row(8, true)...)},
	}, [][]string{
		{"+I 1|1|1|3"},
		// Only rows with f false or NULL left: the filtered count is 0 and the filtered sum NULL, the group exists.
		{"-U 1|1|1|3", "+U 1|0|NULL|2"},
		{"-U 1|0|NULL|2", "+U 1|1|8|2"},
		{"-U 1|1|8|2", "+U 1|1|8|1"},
		{"-D 1|1|8|1"},
	}))
}

// TestGroupAggFloatSum: NaN and infinities leave a float sum again when they are retracted; SUM(real) is REAL.
func TestGroupAggFloatSum(t *testing.T) {
	cfg := GroupAggConfig{Keys: []int{gaK}, InputUpdating: true, Aggs: []AggSpec{
		gaSpec(AggSum, gaX, -1), gaSpec(AggAvg, gaX, -1),
	}}
	row := func(x any) []any { return []any{1, nil, nil, nil, nil, x} }
	runGacl(t, gaCase(t, "specials", cfg, [][]gaclRow{
		{gaIns(row(1.5)...), gaIns(row(math.NaN())...)},
		{gaDel(row(math.NaN())...)},
		{gaIns(row(math.Inf(1))...)},
		{gaIns(row(math.Inf(-1))...)},
		{gaDel(row(math.Inf(1))...), gaDel(row(math.Inf(-1))...), gaIns(row(0.5)...)},
	}, [][]string{
		{"+I 1|NaN|NaN"},
		{"-U 1|NaN|NaN", "+U 1|1.5|1.5"},
		{"-U 1|1.5|1.5", "+U 1|Infinity|Infinity"},
		{"-U 1|Infinity|Infinity", "+U 1|NaN|NaN"},
		{"-U 1|NaN|NaN", "+U 1|2|1"},
	}))
}

// TestGroupAggFloatOverflow: a float sum whose finite part overflows is NULL and counted with expr.ErrorsNull
// (until no value is left), a 22003 error with expr.ErrorsFail, as Postgres' float8pl; an infinity in the input is
// no overflow.
func TestGroupAggFloatOverflow(t *testing.T) {
	cfg := GroupAggConfig{Keys: []int{gaK}, InputUpdating: true, Aggs: []AggSpec{
		gaSpec(AggSum, gaX, -1), gaSpec(AggAvg, gaX, -1),
	}}
	row := func(x any) []any { return []any{1, nil, nil, nil, nil, x} }
	c := gaCase(t, "null", cfg, [][]gaclRow{
		{gaIns(row(1e308)...)},
		{gaIns(row(1e308)...)},
		{gaIns(row(math.Inf(1))...)},
		{gaDel(row(1e308)...), gaDel(row(1e308)...), gaDel(row(math.Inf(1))...), gaIns(row(2.5)...)},
	}, [][]string{
		{"+I 1|1e+308|1e+308"},
		{"-U 1|1e+308|1e+308", "+U 1|NULL|NULL"},
		nil,
		{"-U 1|NULL|NULL", "+U 1|2.5|2.5"},
	})
	c.errors = 2 // SUM and AVG
	runGacl(t, c)
	cfg.Mode = expr.ErrorsFail
	c = gaCase(t, "fail", cfg, [][]gaclRow{{gaIns(row(1e308)...)}, {gaIns(row(math.Inf(1))...)}, {gaIns(row(1e308)...)}}, nil)
	c.wantErr = "22003"
	runGacl(t, c)
}

// TestGroupAggNegativeZeroKey: -0 and 0 are one group (keys compare as SQL does), which prints its key as its
// first row spelled it, also once it was restored or loaded again by a row that spells it otherwise, so that
// every -U names the row that was emitted.
func TestGroupAggNegativeZeroKey(t *testing.T) {
	cfg := GroupAggConfig{Keys: []int{gaX}, Aggs: []AggSpec{gaSpec(AggCountStar, -1, -1), gaSpec(AggSum, gaX, -1)}}
	row := func(x any) []any { return []any{1, nil, nil, nil, nil, x} }
	negZero := math.Copysign(0, -1)
	runGacl(t, gaCase(t, "zero-first", cfg, [][]gaclRow{
		{gaIns(row(0.0)...)},
		{gaIns(row(negZero)...)},
		{gaIns(row(negZero)...)},
	}, [][]string{
		{"+I 0|1|0"},
		{"-U 0|1|0", "+U 0|2|0"},
		{"-U 0|2|0", "+U 0|3|0"},
	}))
	runGacl(t, gaCase(t, "negative-first", cfg, [][]gaclRow{
		{gaIns(row(negZero)...)},
		{gaIns(row(0.0)...)},
		{gaIns(row(negZero)...)},
	}, [][]string{
		{"+I -0|1|-0"},
		{"-U -0|1|-0", "+U -0|2|0"},
		{"-U -0|2|0", "+U -0|3|0"},
	}))
}

// TestGroupAggGlobal: without keys there is one group, which exists from the start (Start emits its row over no
// rows, and not again after a restore), also when every row was retracted again.
func TestGroupAggGlobal(t *testing.T) {
	cfg := GroupAggConfig{InputUpdating: true, Aggs: []AggSpec{gaSpec(AggCountStar, -1, -1), gaSpec(AggSum, gaV, -1),
		gaSpec(AggMax, gaV, -1)}}
	runGacl(t, gaCase(t, "global", cfg, [][]gaclRow{
		{gaIns(gr(1, 5)...), gaIns(gr(2, 7)...)},
		{gaDel(gr(2, 7)...), gaDel(gr(1, 5)...)},
		{gaIns(gr(1, 3)...)},
	}, [][]string{
		{"+I 0|NULL|NULL", "-U 0|NULL|NULL", "+U 2|12|7"},
		{"-U 2|12|7", "+U 0|NULL|NULL"},
		{"-U 0|NULL|NULL", "+U 1|3|3"},
	}))
	// A first batch that adds and retracts its only row changes nothing.
	runGacl(t, gaCase(t, "first-batch-cancels", cfg, [][]gaclRow{
		{gaIns(gr(1, 5)...), gaDel(gr(1, 5)...)},
		{gaIns(gr(1, 2)...)},
	}, [][]string{
		{"+I 0|NULL|NULL"},
		{"-U 0|NULL|NULL", "+U 1|2|2"},
	}))
	// Append-only: COUNT(*) and SUM(int), MAX keeping only the extreme.
	app := cfg
	app.InputUpdating = false
	runGacl(t, gaCase(t, "append-only", app, [][]gaclRow{
		{gaIns(gr(1, 5)...)},
		{gaIns(gr(1, nil)...)},
		{gaIns(gr(1, 2)...), gaIns(gr(1, 9)...)},
	}, [][]string{
		{"+I 0|NULL|NULL", "-U 0|NULL|NULL", "+U 1|5|5"},
		{"-U 1|5|5", "+U 2|5|5"},
		{"-U 2|5|5", "+U 4|16|9"},
	}))
}

// TestGroupAggDistinct: SELECT DISTINCT is keys without aggregates; over an append-only input it emits only +I
// (and nil Kinds), over a changelog a key leaves with its last row.
func TestGroupAggDistinct(t *testing.T) {
	cfg := GroupAggConfig{Keys: []int{gaK, gaS}}
	row := func(k, s any) []any { return []any{k, nil, s, nil, nil, nil} }
	runGacl(t, gaCase(t, "append-only", cfg, [][]gaclRow{
		{gaIns(row(1, "a")...), gaIns(row(1, "a")...), gaIns(row(2, "b")...)},
		{gaIns(row(1, "a")...), gaIns(row(nil, nil)...), gaIns(row(2, "a")...)},
		{gaIns(row(nil, nil)...)},
	}, [][]string{
		{"+I 1|a", "+I 2|b"},
		{"+I NULL|NULL", "+I 2|a"},
		nil,
	}))
	cfg.InputUpdating = true
	runGacl(t, gaCase(t, "updating", cfg, [][]gaclRow{
		{gaIns(row(1, "a")...), gaIns(row(1, "a")...), gaIns(row(2, "b")...)},
		{gaDel(row(1, "a")...)},
		{gaUB(row(1, "a")...), gaUA(row(2, "b")...)},
		{gaIns(row(1, "a")...)},
	}, [][]string{
		{"+I 1|a", "+I 2|b"},
		nil,
		{"-D 1|a"},
		{"+I 1|a"},
	}))
}

// TestGroupAggBadInput: an append-only aggregate fails on a retraction; a changelog aggregate ignores (and counts)
// the retraction of a row its group does not hold.
func TestGroupAggBadInput(t *testing.T) {
	cfg := GroupAggConfig{Keys: []int{gaK}, Aggs: []AggSpec{gaSpec(AggCountStar, -1, -1)}}
	c := gaCase(t, "append-only-retraction", cfg, [][]gaclRow{{gaIns(gr(1, 1)...)}, {gaDel(gr(1, 1)...)}}, nil)
	c.wantErr = "append-only"
	runGacl(t, c)
	cfg.InputUpdating = true
	c = gaCase(t, "retract-absent", cfg, [][]gaclRow{
		{gaDel(gr(1, 1)...)},
		{gaIns(gr(1, 1)...), gaDel(gr(1, 1)...), gaDel(gr(1, 1)...)},
		{gaIns(gr(1, 1)...)},
	}, [][]string{nil, nil, {"+I 1|1"}})
	c.errors = 2
	runGacl(t, c)
}

// TestGroupAggOverflow: SUM(int) beyond BIGINT and decimal sums beyond 38 digits are 22003 errors.
func TestGroupAggOverflow(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.PrimitiveTypes.Int64},
		{Name: "i", Type: arrow.PrimitiveTypes.Int32},
		{Name: "d", Type: &arrow.Decimal128Type{Precision: 38, Scale: 0}},
	}, nil)
	big := "90000000000000000000000000000000000000"
	f, out := gaOp(t, GroupAggConfig{Keys: []int{0}, Aggs: []AggSpec{gaSpec(AggSum, 2, -1)}}, schema)
	runGacl(t, gaclCase{name: "decimal", schema: schema, factory: f, out: out, wantErr: "22003",
		batches: [][]gaclRow{{gaIns(1, 1, big)}, {gaIns(1, 1, big)}}})

	// SUM(int) is BIGINT; 2^32 rows are out of a test's reach, so the group starts from state as a checkpoint
	// would have written it: one row, sum MaxInt64 - 1.
	f, out = gaOp(t, GroupAggConfig{Keys: []int{0}, Aggs: []AggSpec{gaSpec(AggSum, 1, -1)}}, schema)
	if !arrow.TypeEqual(out.Field(1).Type, arrow.PrimitiveTypes.Int64) {
		t.Fatalf("SUM(int) is %s", out.Field(1).Type)
	}
	mem := checkedAlloc(t)
	batch := BuildBatch(mem, schema, [][]any{{1, 5, "0"}})
	hashes, _ := exec.HashKeys(batch.Rec, []int{0}, nil)
	be, _ := state.OpenMemory(state.Options{})
	defer be.Close()
	acc := binary.AppendUvarint(nil, 1)                         // rows
	acc = binary.AppendVarint(acc, 1)                           // values summed
	acc = binary.BigEndian.AppendUint64(acc, 0)                 // high word
	acc = binary.BigEndian.AppendUint64(acc, uint64(1<<63-1-1)) // low word
	be.Put(state.KeyedKey(state.KeyGroupOf(hashes[0], state.DefaultKeyGroups), gaStateID, rowcodec.AppendIntKey(nil, 1, false)), acc)
	op := f(0)
	if err := op.Open(&exec.TaskContext{State: be, Alloc: mem, MaxKeyGroups: state.DefaultKeyGroups,
		KeyGroups: state.KeyGroupRange{End: state.DefaultKeyGroups}}); err != nil {
		t.Fatal(err)
	}
	defer op.Close()
	err := op.Process(0, batch, &DiscardEmitter{})
	if sqlerr.Code(err) != sqlerr.NumericOutOfRange || err.Error() != "bigint out of range" {
		t.Fatalf("MaxInt64-1 + 5: %v (SQLSTATE %q), want 22003 bigint out of range", err, sqlerr.Code(err))
	}
}

// TestGroupAggKeyGroupRouting: a row of a key group the subtask does not own fails the operator.
func TestGroupAggKeyGroupRouting(t *testing.T) {
	f, _ := gaOp(t, GroupAggConfig{Keys: []int{gaK}, Aggs: []AggSpec{gaSpec(AggCountStar, -1, -1)}}, gaEvents)
	CheckForeignKeyGroup(t, f, 0, gaEvents, []int{gaK}, gr(1, 1), gr(2, 1), gr(3, 1))
}

// TestGroupAggOutputSchema: the key columns, then the aggregates with exactly the window aggregate's result types
// and names; the window aggregate's validation errors.
func TestGroupAggOutputSchema(t *testing.T) {
	fields := slices.Concat(aggArgFields, []arrow.Field{aggTimeField})
	schema := arrow.NewSchema(fields, nil)
	var aggs []AggSpec
	for _, fn := range []AggFunc{AggCount, AggCountStar, AggCountDistinct, AggSum, AggMin, AggMax, AggAvg} {
		for c := range fields {
			a := gaSpec(fn, c, -1)
			if fn == AggCountStar {
				if c > 0 {
					continue
				}
				a = gaSpec(fn, -1, 7)
			}
			if _, err := newAggKind(fn, fields[c].Type); err == nil || fn == AggCountStar {
				aggs = append(aggs, a)
			}
		}
	}
	aggs[0].Name = "n"
	cfg := GroupAggConfig{Keys: []int{5, 0}, Aggs: aggs}
	_, got, err := NewGroupAggregate(cfg, schema)
	if err != nil {
		t.Fatal(err)
	}
	_, win, err := NewWindowAggregate(WindowAggConfig{Kind: WindowTumble, TimeCol: 8, Size: sec, Keys: cfg.Keys,
		Aggs: aggs}, schema)
	if err != nil {
		t.Fatal(err)
	}
	want := slices.Concat(win.Fields()[:2], win.Fields()[4:])
	if !slices.EqualFunc(got.Fields(), want, func(a, b arrow.Field) bool { return a.Equal(b) }) {
		t.Fatalf("output schema\n got  %s\n want %s", got, arrow.NewSchema(want, nil))
	}
	bad := []struct {
		cfg  GroupAggConfig
		code string
	}{
		{GroupAggConfig{Aggs: []AggSpec{gaSpec(AggSum, 5, -1)}}, sqlerr.UndefinedFunction},
		{GroupAggConfig{Aggs: []AggSpec{gaSpec(AggAvg, 6, -1)}}, sqlerr.UndefinedFunction},
		{GroupAggConfig{Aggs: []AggSpec{gaSpec(AggSum, 1, 2)}}, sqlerr.DatatypeMismatch},
		{GroupAggConfig{Keys: []int{42}}, sqlerr.InternalError},
		{GroupAggConfig{Aggs: []AggSpec{gaSpec(AggCountStar, 1, -1)}}, sqlerr.InternalError},
		{GroupAggConfig{}, sqlerr.InternalError},
	}
	for _, c := range bad {
		if _, _, err := NewGroupAggregate(c.cfg, schema); sqlerr.Code(err) != c.code {
			t.Errorf("%+v: %v (SQLSTATE %q), want %s", c.cfg, err, sqlerr.Code(err), c.code)
		}
	}
}

// The randomized test: random changelogs (a retraction only ever takes out a row that is in), random batchings,
// random barrier and restore points, an eviction-happy working set. Every run's output, folded into a multiset
// after each batch (it must never go negative), must equal a direct model computed from the input multiset; and
// the runs with restores and evictions must reproduce the uninterrupted run's changelog exactly.

// gaRandomAggs is what the random test computes; gaModelRow renders the same for one group.
var gaRandomAggs = []AggSpec{
	gaSpec(AggCountStar, -1, -1), gaSpec(AggCount, gaV, -1), gaSpec(AggSum, gaV, -1), gaSpec(AggAvg, gaV, -1),
	gaSpec(AggMin, gaV, -1), gaSpec(AggMax, gaV, -1), gaSpec(AggCountDistinct, gaV, -1), gaSpec(AggMin, gaS, -1),
	gaSpec(AggMax, gaS, -1), gaSpec(AggSum, gaV, gaF), gaSpec(AggSum, gaD, -1), gaSpec(AggMin, gaD, gaF),
	gaSpec(AggSum, gaX, -1), gaSpec(AggMax, gaX, -1), gaSpec(AggCountDistinct, gaS, -1),
}

// gaRandomRow draws a gaEvents row from small domains, so groups, ties, duplicates and NULLs are frequent. d is
// decimal text with 2 places; x is one of a few exactly summable floats, NaN or an infinity.
func gaRandomRow(rng *rand.Rand) []any {
	pick := func(vals ...any) any { return vals[rng.IntN(len(vals))] }
	return []any{
		pick(0, 1, 2, 3, 4, nil),
		pick(-3, -1, 0, 2, 5, 7, nil),
		pick("", "a", "b", "ab", "\x00z", nil),
		pick("1.25", "-0.50", "3.00", nil),
		pick(true, false, nil),
		pick(1.5, -2.0, 0.25, math.NaN(), math.Inf(1), math.Inf(-1), nil),
	}
}

// gaRandomInput returns a random changelog of gen's rows (the multiset is valid at every prefix; an update's new
// row usually keeps column keyCol). Append-only inputs only insert.
func gaRandomInput(rng *rand.Rand, rows int, updating bool, gen func(*rand.Rand) []any, keyCol int) []gaclRow {
	var present [][]any
	var out []gaclRow
	for len(out) < rows {
		if updating && len(present) > 0 && rng.IntN(3) == 0 {
			i := rng.IntN(len(present))
			row := present[i]
			present[i] = present[len(present)-1]
			present = present[:len(present)-1]
			if rng.IntN(2) == 0 {
				out = append(out, gaDel(row...))
				continue
			}
			out = append(out, gaUB(row...))
			// An update: the new row follows at once, usually of the same key.
			nr := gen(rng)
			if rng.IntN(4) != 0 {
				nr[keyCol] = row[keyCol]
			}
			present = append(present, nr)
			out = append(out, gaUA(nr...))
			continue
		}
		nr := gen(rng)
		present = append(present, nr)
		out = append(out, gaIns(nr...))
	}
	return out
}

// gaCut cuts rows into random batches of 1 to maxBatch rows.
func gaCut(rng *rand.Rand, rows []gaclRow, maxBatch int) [][]gaclRow {
	var out [][]gaclRow
	for len(rows) > 0 {
		n := min(len(rows), 1+rng.IntN(maxBatch))
		out = append(out, rows[:n])
		rows = rows[n:]
	}
	return out
}

// gaModel is the expected result rows of the input multiset: one text row per group.
func gaModel(keyed bool, present [][]any) []string {
	groups := map[string][][]any{}
	var order []string
	for _, r := range present {
		k := "NULL"
		if !keyed {
			k = ""
		} else if r[gaK] != nil {
			k = fmt.Sprint(r[gaK])
		}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], r)
	}
	if !keyed && len(groups) == 0 { // the global group exists from the start
		groups[""], order = nil, []string{""}
	}
	var out []string
	for _, k := range order {
		row := gaModelRow(groups[k])
		if keyed {
			row = k + "|" + row
		}
		out = append(out, row)
	}
	slices.Sort(out)
	return out
}

func gaCents(s string) int64 {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var a, b int64
	fmt.Sscanf(strings.Replace(s, ".", " ", 1), "%d %d", &a, &b)
	if neg {
		return -(a*100 + b)
	}
	return a*100 + b
}

func gaFixed(v *big.Int, scale int) string {
	neg := v.Sign() < 0
	digits := new(big.Int).Abs(v).String()
	for len(digits) <= scale {
		digits = "0" + digits
	}
	s := digits[:len(digits)-scale] + "." + digits[len(digits)-scale:]
	if neg {
		s = "-" + s
	}
	return s
}

// gaModelRow computes gaRandomAggs over one group's rows.
func gaModelRow(rows [][]any) string {
	var f []string
	add := func(s string) { f = append(f, s) }
	null := func(ok bool, s string) string {
		if !ok {
			return "NULL"
		}
		return s
	}
	var vs, fvs []int64
	var ss []string
	var ds, fds []int64
	var xs []float64
	// addNum adds v to all, and to filtered where the row's f is TRUE.
	addNum := func(all, filtered *[]int64, v int64, f any) {
		*all = append(*all, v)
		if f == true {
			*filtered = append(*filtered, v)
		}
	}
	for _, r := range rows {
		if r[gaV] != nil {
			addNum(&vs, &fvs, int64(r[gaV].(int)), r[gaF])
		}
		if r[gaS] != nil {
			ss = append(ss, r[gaS].(string))
		}
		if r[gaD] != nil {
			addNum(&ds, &fds, gaCents(r[gaD].(string)), r[gaF])
		}
		if r[gaX] != nil {
			xs = append(xs, r[gaX].(float64))
		}
	}
	sum := func(v []int64) int64 {
		var s int64
		for _, x := range v {
			s += x
		}
		return s
	}
	distinct := func(n int, key func(i int) string) int {
		m := map[string]bool{}
		for i := 0; i < n; i++ {
			m[key(i)] = true
		}
		return len(m)
	}
	cents := func(c int64) string { return gaFixed(big.NewInt(c), 2) }
	add(fmt.Sprint(len(rows)))
	add(fmt.Sprint(len(vs)))
	add(null(len(vs) > 0, fmt.Sprint(sum(vs))))
	if len(vs) > 0 { // avg: sum * 10^16 / n, half away from zero
		num := new(big.Int).Mul(big.NewInt(sum(vs)), new(big.Int).Exp(big.NewInt(10), big.NewInt(16), nil))
		n := big.NewInt(int64(len(vs)))
		q, r := new(big.Int).QuoRem(num, n, new(big.Int))
		if new(big.Int).Lsh(new(big.Int).Abs(r), 1).Cmp(n) >= 0 {
			q.Add(q, big.NewInt(int64(num.Sign())))
		}
		add(gaFixed(q, 16))
	} else {
		add("NULL")
	}
	add(null(len(vs) > 0, fmt.Sprint(slices.Min(append([]int64{math.MaxInt64}, vs...)))))
	add(null(len(vs) > 0, fmt.Sprint(slices.Max(append([]int64{math.MinInt64}, vs...)))))
	add(fmt.Sprint(distinct(len(vs), func(i int) string { return fmt.Sprint(vs[i]) })))
	add(null(len(ss) > 0, slices.Min(append([]string{"\xff"}, ss...))))
	add(null(len(ss) > 0, slices.Max(append([]string{""}, ss...))))
	add(null(len(fvs) > 0, fmt.Sprint(sum(fvs))))
	add(null(len(ds) > 0, cents(sum(ds))))
	add(null(len(fds) > 0, cents(slices.Min(append([]int64{math.MaxInt64}, fds...)))))
	if len(xs) > 0 {
		var s float64
		var nan, pinf, ninf bool
		maxX := math.Inf(-1)
		for _, x := range xs {
			switch {
			case x != x:
				nan = true
			case math.IsInf(x, 1):
				pinf = true
			case math.IsInf(x, -1):
				ninf = true
			default:
				s += x
			}
			if x != x || (maxX == maxX && x > maxX) {
				maxX = x
			}
		}
		switch {
		case nan || (pinf && ninf):
			s = math.NaN()
		case pinf:
			s = math.Inf(1)
		case ninf:
			s = math.Inf(-1)
		}
		add(string(expr.AppendFloat8(nil, s)))
		add(string(expr.AppendFloat8(nil, maxX)))
	} else {
		add("NULL")
		add("NULL")
	}
	add(fmt.Sprint(distinct(len(ss), func(i int) string { return ss[i] })))
	return strings.Join(f, "|")
}

// foldChangelog applies changelog lines ("+I 1|2") to a result multiset; a retraction of a row not in it is an
// error.
func foldChangelog(fold map[string]int, log []string) error {
	for i, line := range log {
		kind, row, _ := strings.Cut(line, " ")
		switch kind {
		case "+I", "+U":
			fold[row]++
		case "-U", "-D":
			if fold[row] == 0 {
				return fmt.Errorf("line %d: %s of %q, which is not in the result", i, kind, row)
			}
			if fold[row]--; fold[row] == 0 {
				delete(fold, row)
			}
		default:
			return fmt.Errorf("line %d: bad changelog line %q", i, line)
		}
	}
	return nil
}

func gaFolded(fold map[string]int) []string {
	var out []string
	for r, n := range fold {
		for ; n > 0; n-- {
			out = append(out, r)
		}
	}
	slices.Sort(out)
	return out
}

// gaCheckModel folds a run's output batch by batch and compares it with model(rows of the input up to the batch).
func gaCheckModel(t *testing.T, what string, batches [][]gaclRow, out [][]string, model func([][]any) []string) {
	t.Helper()
	fold := map[string]int{}
	var present [][]any
	for i, b := range batches {
		for _, r := range b {
			if r.kind == exec.Insert || r.kind == exec.UpdateAfter {
				present = append(present, r.vals)
				continue
			}
			j := slices.IndexFunc(present, func(p []any) bool { return gaSameRow(p, r.vals) })
			present = slices.Delete(present, j, j+1)
		}
		if err := foldChangelog(fold, out[i]); err != nil {
			t.Fatalf("%s: batch %d: %v", what, i, err)
		}
		if got, want := gaFolded(fold), model(present); !slices.Equal(got, want) {
			t.Fatalf("%s: after batch %d (output %q):\n got  %q\n want %q", what, i, out[i], got, want)
		}
	}
}

func gaSameRow(a, b []any) bool {
	return slices.EqualFunc(a, b, func(x, y any) bool {
		if fx, ok := x.(float64); ok && fx != fx {
			fy, ok := y.(float64)
			return ok && fy != fy
		}
		return x == y
	})
}

// gaRandomRuns runs one random input in several shapes: the reference (memory backend, a barrier after each batch),
// a second random batching, Pebble with random restores, and an eviction-happy working set with restores. Each is
// checked against the model; the shapes with the reference's batching must reproduce its changelog exactly.
func gaRandomRuns(t *testing.T, name string, rng *rand.Rand, schema *arrow.Schema, rows []gaclRow,
	factory, evicting func(int) exec.Operator, out *arrow.Schema, model func([][]any) []string) {
	t.Helper()
	batches := gaCut(rng, rows, 6)
	always := func(int, int) (bool, bool) { return true, false }
	ref := gaclExec(t, schema, out, factory, batches, false, always)
	if ref.err != nil {
		t.Fatalf("%s: reference: %v", name, ref.err)
	}
	gaCheckModel(t, name+"/reference", batches, ref.out, model)
	other := gaCut(rng, rows, 3)
	res := gaclExec(t, schema, out, factory, other, false, func(int, int) (bool, bool) { return rng.IntN(2) == 0, false })
	if res.err != nil {
		t.Fatalf("%s: other batching: %v", name, res.err)
	}
	gaCheckModel(t, name+"/other-batching", other, res.out, model)
	restores := map[int]bool{}
	for i := range batches {
		restores[i] = rng.IntN(3) == 0
	}
	variants := []struct {
		what    string
		pebble  bool
		factory func(int) exec.Operator
	}{{"pebble-restores", true, factory}, {"memory-restores-evicting", false, evicting}, {"pebble-restores-evicting", true, evicting}}
	if testing.Short() { // Pebble opens dominate the time: one Pebble shape is enough for a quick run
		variants = variants[:2]
	}
	for _, v := range variants {
		res := gaclExec(t, schema, out, v.factory, batches, v.pebble, func(i, _ int) (bool, bool) {
			return restores[i] || rng.IntN(2) == 0, restores[i]
		})
		if res.err != nil {
			t.Fatalf("%s/%s: %v", name, v.what, res.err)
		}
		gaSameChangelog(t, name+"/"+v.what, res.out, ref.out)
	}
}

// gaSameChangelog checks that a run's output per batch is exactly that of the uninterrupted run.
func gaSameChangelog(t *testing.T, what string, got, ref [][]string) {
	t.Helper()
	for i := range max(len(got), len(ref)) {
		var g, r []string
		if i < len(got) {
			g = got[i]
		}
		if i < len(ref) {
			r = ref[i]
		}
		if i >= len(got) || i >= len(ref) || !slices.Equal(g, r) {
			t.Fatalf("%s: batch %d of %d/%d differs from the uninterrupted run:\n got  %q\n want %q", what, i,
				len(got), len(ref), g, r)
		}
	}
}

// gaCheckRestoreMatches runs batches without barriers (checked against model, when set), then on both backends
// with one checkpoint and restore after the middle batch: the changelog must be exactly the same.
func gaCheckRestoreMatches(t *testing.T, what string, schema, out *arrow.Schema, f func(int) exec.Operator,
	batches [][]gaclRow, model func([][]any) []string) {
	t.Helper()
	ref := gaclExec(t, schema, out, f, batches, false, func(int, int) (bool, bool) { return false, false })
	if ref.err != nil {
		t.Fatalf("%s: %v", what, ref.err)
	}
	if model != nil {
		gaCheckModel(t, what+"/reference", batches, ref.out, model)
	}
	mid := len(batches) / 2
	for _, pebble := range []bool{false, true} {
		res := gaclExec(t, schema, out, f, batches, pebble, func(i, _ int) (bool, bool) { return i == mid, i == mid })
		if res.err != nil {
			t.Fatalf("%s pebble=%v: %v", what, pebble, res.err)
		}
		gaSameChangelog(t, fmt.Sprintf("%s pebble=%v: a restore changed the changelog", what, pebble), res.out, ref.out)
	}
}

func TestGroupAggRandom(t *testing.T) {
	t.Setenv("CLINK_STATE_FSYNC", "0")
	seeds := 6
	if testing.Short() {
		seeds = 3
	}
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		for _, updating := range []bool{true, false} {
			for _, keyed := range []bool{true, false} {
				name := fmt.Sprintf("seed=%d/updating=%v/keyed=%v", seed, updating, keyed)
				rng := rand.New(rand.NewPCG(seed, 99))
				cfg := GroupAggConfig{Aggs: gaRandomAggs, InputUpdating: updating}
				if keyed {
					cfg.Keys = []int{gaK}
				}
				factory, out := gaOp(t, cfg, gaEvents)
				p, err := planGroupAgg(cfg, gaEvents)
				if err != nil {
					t.Fatal(err)
				}
				p.maxGroups = 2 // every barrier evicts
				evicting := func(int) exec.Operator { return newGroupAgg(p) }
				rows := gaRandomInput(rng, 60, updating, gaRandomRow, gaK)
				gaRandomRuns(t, name, rng, gaEvents, rows, factory, evicting, out, func(present [][]any) []string {
					return gaModel(keyed, present)
				})
			}
		}
	}
}

// TestGroupAggRestoreMatches: the same input with a checkpoint and restore in the middle gives exactly the
// changelog of a run without one, on both backends, keyed by strings and integers (the two lookup paths).
func TestGroupAggRestoreMatches(t *testing.T) {
	t.Setenv("CLINK_STATE_FSYNC", "0")
	rng := rand.New(rand.NewPCG(7, 7))
	rows := gaRandomInput(rng, 200, true, gaRandomRow, gaK)
	batches := gaCut(rng, rows, 10)
	for _, keys := range [][]int{{gaK}, {gaS, gaK}, nil} {
		f, out := gaOp(t, GroupAggConfig{Keys: keys, Aggs: gaRandomAggs, InputUpdating: true}, gaEvents)
		gaCheckRestoreMatches(t, fmt.Sprintf("keys %v", keys), gaEvents, out, f, batches, nil)
	}
}

// TestGroupAggForgets: a group whose last row was retracted, or that only saw retractions of rows it did not hold,
// leaves memory and the backend; above maxGroups a barrier evicts the groups a checkpoint interval did not touch,
// and they come back from the backend intact.
func TestGroupAggForgets(t *testing.T) {
	p, err := planGroupAgg(GroupAggConfig{Keys: []int{gaK}, Aggs: []AggSpec{gaSpec(AggSum, gaV, -1)},
		InputUpdating: true}, gaEvents)
	if err != nil {
		t.Fatal(err)
	}
	p.maxGroups = 2
	h := gaclOpen(t, func(int) exec.Operator { return newGroupAgg(p) }, gaEvents, p.out)
	op := h.Op.(*groupAgg)
	step := func(rows ...gaclRow) []string { t.Helper(); return gaclStep(t, h, rows...) }
	backend := func() int { t.Helper(); return stateEntries(t, h.Backend) }
	step(gaIns(gr(1, 1)...), gaIns(gr(2, 2)...))
	step(gaDel(gr(1, 1)...), gaDel(gr(3, 1)...))
	if op.live != 1 || backend() != 1 {
		t.Fatalf("%d groups in memory, %d in the backend, want 1 and 1", op.live, backend())
	}
	// Three groups: over maxGroups, so the barrier evicts 2 (untouched since the previous barrier).
	step(gaIns(gr(4, 4)...), gaIns(gr(5, 5)...))
	if op.live != 2 || op.complete || backend() != 3 {
		t.Fatalf("after eviction: %d groups in memory (complete %v), %d in the backend", op.live, op.complete, backend())
	}
	if got := step(gaIns(gr(2, 10)...)); !slices.Equal(got, []string{"-U 2|2", "+U 2|12"}) {
		t.Fatalf("an evicted group came back as %q", got)
	}
}
