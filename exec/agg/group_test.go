package agg

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
	"github.com/clinksql/clinksql/exec/optest"
	"github.com/clinksql/clinksql/exec/rowcodec"
	"github.com/clinksql/clinksql/sqlerr"
	"github.com/clinksql/clinksql/state"
)

// The changelog harness of the group aggregate and Top-N tests: it feeds explicit batches of rows with row kinds
// to an operator in Harness and records its output per input batch, as "+I 1|2" lines (kind, then the Postgres
// text form of the row). After every batch comes a watermark; between batches, barriers, and where asked a full
// restore. It checks, besides Harness's checks (the declared output schema, nil Kinds on an all-insert batch,
// nothing emitted in OnBarrier, nothing left allocated), that watermarks and the end of input emit nothing.

type changeRow struct {
	kind exec.RowKind
	vals []any
}

func insRow(v ...any) changeRow { return changeRow{exec.Insert, v} }
func delRow(v ...any) changeRow { return changeRow{exec.Delete, v} }
func ubRow(v ...any) changeRow  { return changeRow{exec.UpdateBefore, v} }
func uaRow(v ...any) changeRow  { return changeRow{exec.UpdateAfter, v} }

// changeBatch is a batch of changelog rows as a run step.
func changeBatch(rows []changeRow) optest.BatchStep {
	b := optest.BatchStep{Rows: make([][]any, len(rows)), Kinds: make([]exec.RowKind, len(rows))}
	for i, r := range rows {
		b.Rows[i], b.Kinds[i] = r.vals, r.kind
	}
	b.Kinds = optest.ChangelogKinds(b.Kinds)
	return b
}

// changelogShapes are how a case runs: memory or Pebble; restore "" (barriers only), "mid" (a restore after the
// middle batch) or "every" (after every batch). The batches are the case's.
func changelogShapes() []optest.Shape {
	return slices.DeleteFunc(optest.AllShapes(), func(s optest.Shape) bool { return s.Batch != 0 })
}

// changelogResult is one run: the output per input batch, the Errors count, the first error.
type changelogResult struct {
	out    [][]string
	errors int64
	err    error
}

// execChangelog runs batches through a fresh operator. plan(i, n) says what follows batch i (not the last): a barrier,
// and whether a restore.
func execChangelog(t testing.TB, schema, out *arrow.Schema, factory func(int) exec.Operator, batches [][]changeRow,
	pebble bool, plan func(i, n int) (barrier, restore bool)) changelogResult {
	t.Helper()
	h := optest.NewHarness(t, factory, pebble, schema)
	h.Out, h.Changelog = out, true
	steps := make([]any, len(batches))
	for i, rows := range batches {
		steps[i] = changeBatch(rows)
	}
	var res changelogResult
	seen := 0 // the output rows of the batches before
	res.err = h.Run(steps, plan, func(i int, _ optest.BatchStep, _ bool) error {
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

// changelogCase is a hand-derived changelog test: want[i] is the output of batches[i], in order.
type changelogCase struct {
	name    string
	schema  *arrow.Schema
	factory func(int) exec.Operator
	out     *arrow.Schema
	batches [][]changeRow
	want    [][]string
	errors  int64
	wantErr string // SQLSTATE or substring: the run must fail with it
}

// runGacl runs c in every shape; each must give exactly c.want.
func runGacl(t *testing.T, c changelogCase) {
	t.Helper()
	optest.RunShapes(t, c.name, changelogShapes(), func(t *testing.T, sh optest.Shape) {
		res := execChangelog(t, c.schema, c.out, c.factory, c.batches, sh.Pebble, sh.Barrier)
		if optest.CheckRunErr(t, sh, res.err, c.wantErr, res.out) {
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

// openChangelog opens an operator of newOp on a memory backend in a changelog harness, for tests of what the operator
// keeps; the test's cleanup closes it.
func openChangelog(t *testing.T, newOp func(int) exec.Operator, schema, out *arrow.Schema) *optest.Harness {
	t.Helper()
	h := optest.NewHarness(t, newOp, false, schema)
	h.Out, h.Changelog = out, true
	optest.Must(t, h.Open("", 0))
	t.Cleanup(func() { optest.Must(t, h.Close()) })
	return h
}

// changelogStep feeds one batch of changelog rows and takes a barrier; it returns the rows emitted.
func changelogStep(t *testing.T, h *optest.Harness, rows ...changeRow) []string {
	t.Helper()
	n := len(h.Rows)
	b := changeBatch(rows)
	optest.Must(t, h.Process(0, b.Rows, b.Kinds))
	optest.Must(t, h.Barrier(false))
	return h.Rows[n:]
}

// stateEntries counts the entries of a backend.
func stateEntries(t *testing.T, be state.Backend) int {
	t.Helper()
	n := 0
	optest.Must(t, be.Scan(nil, func(_, _ []byte) error { n++; return nil }))
	return n
}

// groupEvents is the input of the group aggregate tests: (k BIGINT, v BIGINT, s VARCHAR, d DECIMAL(10,2),
// f BOOLEAN, x DOUBLE).
var groupEvents = arrow.NewSchema([]arrow.Field{
	{Name: "k", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "v", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "d", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}, Nullable: true},
	{Name: "f", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "x", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
}, nil)

const groupK, groupV, groupS, groupD, groupF, groupX = 0, 1, 2, 3, 4, 5

// gr is a groupEvents row with k and v; the other columns NULL.
func gr(k, v any) []any { return []any{k, v, nil, nil, nil, nil} }

func groupSpec(f AggFunc, arg, filter int) AggSpec { return AggSpec{Func: f, Arg: arg, Filter: filter} }

func groupOp(t testing.TB, cfg GroupAggConfig, schema *arrow.Schema) (func(int) exec.Operator, *arrow.Schema) {
	t.Helper()
	return optest.MustOp(t, NewGroupAggregate, cfg, schema)
}

func groupCase(t *testing.T, name string, cfg GroupAggConfig, batches [][]changeRow, want [][]string) changelogCase {
	f, out := groupOp(t, cfg, groupEvents)
	return changelogCase{name: name, schema: groupEvents, factory: f, out: out, batches: batches, want: want}
}

func groupRows(rows ...[]any) []changeRow {
	out := make([]changeRow, len(rows))
	for i, r := range rows {
		out[i] = insRow(r...)
	}
	return out
}

// TestGroupAggRetract: every numeric aggregate under inserts and retractions; MAX retracting its current extreme;
// a group disappearing and reappearing; a batch whose changes cancel out emits nothing.
func TestGroupAggRetract(t *testing.T) {
	cfg := GroupAggConfig{Keys: []int{groupK}, InputUpdating: true, Aggs: []AggSpec{
		groupSpec(AggCountStar, -1, -1), groupSpec(AggCount, groupV, -1), groupSpec(AggSum, groupV, -1), groupSpec(AggAvg, groupV, -1),
		groupSpec(AggMin, groupV, -1), groupSpec(AggMax, groupV, -1), groupSpec(AggCountDistinct, groupV, -1),
	}}
	const avg = ".0000000000000000"
	runGacl(t, groupCase(t, "keyed", cfg, [][]changeRow{
		{insRow(gr(1, 10)...), insRow(gr(1, 20)...), insRow(gr(2, 5)...)},
		// k=1 loses its maximum 20 and gains another 10: max falls back to 10, one distinct value left.
		{delRow(gr(1, 20)...), insRow(gr(1, 10)...)},
		// k=2's only row goes: -D with its last result.
		{delRow(gr(2, 5)...)},
		// k=2 comes back with a NULL v: count(*) 1, count(v) 0, the rest NULL, distinct 0.
		{insRow(gr(2, nil)...)},
		// An insert and its retraction in one batch: k=2's result does not change, nothing is emitted. k=1 as an
		// update pair: -U 10 then +U 30 (sum 10+30 = 40, avg 20, min 10, max 30, distinct 2).
		{insRow(gr(2, 7)...), delRow(gr(2, 7)...), ubRow(gr(1, 10)...), uaRow(gr(1, 30)...)},
		// k=1's last rows go; k=3 appears in the same batch, after k=1 was touched.
		{delRow(gr(1, 10)...), insRow(gr(3, -4)...), delRow(gr(1, 30)...)},
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
	cfg := GroupAggConfig{Keys: []int{groupK}, InputUpdating: true, Aggs: []AggSpec{
		groupSpec(AggMin, groupS, -1), groupSpec(AggMax, groupS, -1), groupSpec(AggMin, groupD, -1), groupSpec(AggMax, groupX, -1),
	}}
	row := func(s, d, x any) []any { return []any{1, nil, s, d, nil, x} }
	runGacl(t, groupCase(t, "strings-decimals-floats", cfg, [][]changeRow{
		{insRow(row("b", "1.50", 2.5)...), insRow(row("a", "-1.00", 1.0)...), insRow(row("a", "-1.00", 1.0)...),
			insRow(row("ab", "3.00", -7.0)...)},
		// One copy of the minimum "a" / -1.00 goes: unchanged, nothing emitted.
		{delRow(row("a", "-1.00", 1.0)...)},
		// The other copy goes: min "ab", min(d) 1.50; max(x) still 2.5.
		{delRow(row("a", "-1.00", 1.0)...)},
		// The maximum "b" goes (with max(x) 2.5): max "ab", max(x) -7.
		{delRow(row("b", "1.50", 2.5)...)},
		// NaN is above every number.
		{insRow(row(nil, nil, math.NaN())...)},
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
	cfg := GroupAggConfig{Keys: []int{groupK}, InputUpdating: true, Aggs: []AggSpec{
		groupSpec(AggCountStar, -1, groupF), groupSpec(AggSum, groupV, groupF), groupSpec(AggCountStar, -1, -1),
	}}
	row := func(v, f any) []any { return []any{1, v, nil, nil, f, nil} }
	runGacl(t, groupCase(t, "filter", cfg, [][]changeRow{
		{insRow(row(1, true)...), insRow(row(2, false)...), insRow(row(4, nil)...)},
		{delRow(row(1, true)...)},
		{insRow(row(8, true)...), delRow(row(2, false)...)},
		{delRow(row(4, nil)...)},
		{delRow(row(8, true)...)},
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
	cfg := GroupAggConfig{Keys: []int{groupK}, InputUpdating: true, Aggs: []AggSpec{
		groupSpec(AggSum, groupX, -1), groupSpec(AggAvg, groupX, -1),
	}}
	row := func(x any) []any { return []any{1, nil, nil, nil, nil, x} }
	runGacl(t, groupCase(t, "specials", cfg, [][]changeRow{
		{insRow(row(1.5)...), insRow(row(math.NaN())...)},
		{delRow(row(math.NaN())...)},
		{insRow(row(math.Inf(1))...)},
		{insRow(row(math.Inf(-1))...)},
		{delRow(row(math.Inf(1))...), delRow(row(math.Inf(-1))...), insRow(row(0.5)...)},
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
	cfg := GroupAggConfig{Keys: []int{groupK}, InputUpdating: true, Aggs: []AggSpec{
		groupSpec(AggSum, groupX, -1), groupSpec(AggAvg, groupX, -1),
	}}
	row := func(x any) []any { return []any{1, nil, nil, nil, nil, x} }
	c := groupCase(t, "null", cfg, [][]changeRow{
		{insRow(row(1e308)...)},
		{insRow(row(1e308)...)},
		{insRow(row(math.Inf(1))...)},
		{delRow(row(1e308)...), delRow(row(1e308)...), delRow(row(math.Inf(1))...), insRow(row(2.5)...)},
	}, [][]string{
		{"+I 1|1e+308|1e+308"},
		{"-U 1|1e+308|1e+308", "+U 1|NULL|NULL"},
		nil,
		{"-U 1|NULL|NULL", "+U 1|2.5|2.5"},
	})
	c.errors = 2 // SUM and AVG
	runGacl(t, c)
	cfg.Mode = expr.ErrorsFail
	c = groupCase(t, "fail", cfg, [][]changeRow{{insRow(row(1e308)...)}, {insRow(row(math.Inf(1))...)}, {insRow(row(1e308)...)}}, nil)
	c.wantErr = "22003"
	runGacl(t, c)
}

// TestGroupAggNegativeZeroKey: -0 and 0 are one group (keys compare as SQL does), which prints its key as its
// first row spelled it, also once it was restored or loaded again by a row that spells it otherwise, so that
// every -U names the row that was emitted.
func TestGroupAggNegativeZeroKey(t *testing.T) {
	cfg := GroupAggConfig{Keys: []int{groupX}, Aggs: []AggSpec{groupSpec(AggCountStar, -1, -1), groupSpec(AggSum, groupX, -1)}}
	row := func(x any) []any { return []any{1, nil, nil, nil, nil, x} }
	negZero := math.Copysign(0, -1)
	runGacl(t, groupCase(t, "zero-first", cfg, [][]changeRow{
		{insRow(row(0.0)...)},
		{insRow(row(negZero)...)},
		{insRow(row(negZero)...)},
	}, [][]string{
		{"+I 0|1|0"},
		{"-U 0|1|0", "+U 0|2|0"},
		{"-U 0|2|0", "+U 0|3|0"},
	}))
	runGacl(t, groupCase(t, "negative-first", cfg, [][]changeRow{
		{insRow(row(negZero)...)},
		{insRow(row(0.0)...)},
		{insRow(row(negZero)...)},
	}, [][]string{
		{"+I -0|1|-0"},
		{"-U -0|1|-0", "+U -0|2|0"},
		{"-U -0|2|0", "+U -0|3|0"},
	}))
}

// TestGroupAggGlobal: without keys there is one group, which exists from the start (Start emits its row over no
// rows, and not again after a restore), also when every row was retracted again.
func TestGroupAggGlobal(t *testing.T) {
	cfg := GroupAggConfig{InputUpdating: true, Aggs: []AggSpec{groupSpec(AggCountStar, -1, -1), groupSpec(AggSum, groupV, -1),
		groupSpec(AggMax, groupV, -1)}}
	runGacl(t, groupCase(t, "global", cfg, [][]changeRow{
		{insRow(gr(1, 5)...), insRow(gr(2, 7)...)},
		{delRow(gr(2, 7)...), delRow(gr(1, 5)...)},
		{insRow(gr(1, 3)...)},
	}, [][]string{
		{"+I 0|NULL|NULL", "-U 0|NULL|NULL", "+U 2|12|7"},
		{"-U 2|12|7", "+U 0|NULL|NULL"},
		{"-U 0|NULL|NULL", "+U 1|3|3"},
	}))
	// A first batch that adds and retracts its only row changes nothing.
	runGacl(t, groupCase(t, "first-batch-cancels", cfg, [][]changeRow{
		{insRow(gr(1, 5)...), delRow(gr(1, 5)...)},
		{insRow(gr(1, 2)...)},
	}, [][]string{
		{"+I 0|NULL|NULL"},
		{"-U 0|NULL|NULL", "+U 1|2|2"},
	}))
	// Append-only: COUNT(*) and SUM(int), MAX keeping only the extreme.
	app := cfg
	app.InputUpdating = false
	runGacl(t, groupCase(t, "append-only", app, [][]changeRow{
		{insRow(gr(1, 5)...)},
		{insRow(gr(1, nil)...)},
		{insRow(gr(1, 2)...), insRow(gr(1, 9)...)},
	}, [][]string{
		{"+I 0|NULL|NULL", "-U 0|NULL|NULL", "+U 1|5|5"},
		{"-U 1|5|5", "+U 2|5|5"},
		{"-U 2|5|5", "+U 4|16|9"},
	}))
}

// TestGroupAggDistinct: SELECT DISTINCT is keys without aggregates; over an append-only input it emits only +I
// (and nil Kinds), over a changelog a key leaves with its last row.
func TestGroupAggDistinct(t *testing.T) {
	cfg := GroupAggConfig{Keys: []int{groupK, groupS}}
	row := func(k, s any) []any { return []any{k, nil, s, nil, nil, nil} }
	runGacl(t, groupCase(t, "append-only", cfg, [][]changeRow{
		{insRow(row(1, "a")...), insRow(row(1, "a")...), insRow(row(2, "b")...)},
		{insRow(row(1, "a")...), insRow(row(nil, nil)...), insRow(row(2, "a")...)},
		{insRow(row(nil, nil)...)},
	}, [][]string{
		{"+I 1|a", "+I 2|b"},
		{"+I NULL|NULL", "+I 2|a"},
		nil,
	}))
	cfg.InputUpdating = true
	runGacl(t, groupCase(t, "updating", cfg, [][]changeRow{
		{insRow(row(1, "a")...), insRow(row(1, "a")...), insRow(row(2, "b")...)},
		{delRow(row(1, "a")...)},
		{ubRow(row(1, "a")...), uaRow(row(2, "b")...)},
		{insRow(row(1, "a")...)},
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
	cfg := GroupAggConfig{Keys: []int{groupK}, Aggs: []AggSpec{groupSpec(AggCountStar, -1, -1)}}
	c := groupCase(t, "append-only-retraction", cfg, [][]changeRow{{insRow(gr(1, 1)...)}, {delRow(gr(1, 1)...)}}, nil)
	c.wantErr = "append-only"
	runGacl(t, c)
	cfg.InputUpdating = true
	c = groupCase(t, "retract-absent", cfg, [][]changeRow{
		{delRow(gr(1, 1)...)},
		{insRow(gr(1, 1)...), delRow(gr(1, 1)...), delRow(gr(1, 1)...)},
		{insRow(gr(1, 1)...)},
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
	f, out := groupOp(t, GroupAggConfig{Keys: []int{0}, Aggs: []AggSpec{groupSpec(AggSum, 2, -1)}}, schema)
	runGacl(t, changelogCase{name: "decimal", schema: schema, factory: f, out: out, wantErr: "22003",
		batches: [][]changeRow{{insRow(1, 1, big)}, {insRow(1, 1, big)}}})

	// SUM(int) is BIGINT; 2^32 rows are out of a test's reach, so the group starts from state as a checkpoint
	// would have written it: one row, sum MaxInt64 - 1.
	f, out = groupOp(t, GroupAggConfig{Keys: []int{0}, Aggs: []AggSpec{groupSpec(AggSum, 1, -1)}}, schema)
	if !arrow.TypeEqual(out.Field(1).Type, arrow.PrimitiveTypes.Int64) {
		t.Fatalf("SUM(int) is %s", out.Field(1).Type)
	}
	mem := optest.CheckedAlloc(t)
	batch := optest.BuildBatch(mem, schema, [][]any{{1, 5, "0"}})
	hashes, _ := exec.HashKeys(batch.Rec, []int{0}, nil)
	be, _ := state.OpenMemory(state.Options{})
	defer be.Close()
	acc := binary.AppendUvarint(nil, 1)                         // rows
	acc = binary.AppendVarint(acc, 1)                           // values summed
	acc = binary.BigEndian.AppendUint64(acc, 0)                 // high word
	acc = binary.BigEndian.AppendUint64(acc, uint64(1<<63-1-1)) // low word
	be.Put(state.KeyedKey(state.KeyGroupOf(hashes[0], state.DefaultKeyGroups), groupStateID, rowcodec.AppendIntKey(nil, 1, false)), acc)
	op := f(0)
	if err := op.Open(&exec.TaskContext{State: be, Alloc: mem, MaxKeyGroups: state.DefaultKeyGroups,
		KeyGroups: state.KeyGroupRange{End: state.DefaultKeyGroups}}); err != nil {
		t.Fatal(err)
	}
	defer op.Close()
	err := op.Process(0, batch, &optest.DiscardEmitter{})
	if sqlerr.Code(err) != sqlerr.NumericOutOfRange || err.Error() != "bigint out of range" {
		t.Fatalf("MaxInt64-1 + 5: %v (SQLSTATE %q), want 22003 bigint out of range", err, sqlerr.Code(err))
	}
}

// TestGroupAggKeyGroupRouting: a row of a key group the subtask does not own fails the operator.
func TestGroupAggKeyGroupRouting(t *testing.T) {
	f, _ := groupOp(t, GroupAggConfig{Keys: []int{groupK}, Aggs: []AggSpec{groupSpec(AggCountStar, -1, -1)}}, groupEvents)
	optest.CheckForeignKeyGroup(t, f, 0, groupEvents, []int{groupK}, gr(1, 1), gr(2, 1), gr(3, 1))
}

// TestGroupAggOutputSchema: the key columns, then the aggregates with exactly the window aggregate's result types
// and names; the window aggregate's validation errors.
func TestGroupAggOutputSchema(t *testing.T) {
	fields := slices.Concat(aggArgFields, []arrow.Field{aggTimeField})
	schema := arrow.NewSchema(fields, nil)
	var aggs []AggSpec
	for _, fn := range []AggFunc{AggCount, AggCountStar, AggCountDistinct, AggSum, AggMin, AggMax, AggAvg} {
		for c := range fields {
			a := groupSpec(fn, c, -1)
			if fn == AggCountStar {
				if c > 0 {
					continue
				}
				a = groupSpec(fn, -1, 7)
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
		{GroupAggConfig{Aggs: []AggSpec{groupSpec(AggSum, 5, -1)}}, sqlerr.UndefinedFunction},
		{GroupAggConfig{Aggs: []AggSpec{groupSpec(AggAvg, 6, -1)}}, sqlerr.UndefinedFunction},
		{GroupAggConfig{Aggs: []AggSpec{groupSpec(AggSum, 1, 2)}}, sqlerr.DatatypeMismatch},
		{GroupAggConfig{Keys: []int{42}}, sqlerr.InternalError},
		{GroupAggConfig{Aggs: []AggSpec{groupSpec(AggCountStar, 1, -1)}}, sqlerr.InternalError},
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

// groupRandomAggs is what the random test computes; groupModelRow renders the same for one group.
var groupRandomAggs = []AggSpec{
	groupSpec(AggCountStar, -1, -1), groupSpec(AggCount, groupV, -1), groupSpec(AggSum, groupV, -1), groupSpec(AggAvg, groupV, -1),
	groupSpec(AggMin, groupV, -1), groupSpec(AggMax, groupV, -1), groupSpec(AggCountDistinct, groupV, -1), groupSpec(AggMin, groupS, -1),
	groupSpec(AggMax, groupS, -1), groupSpec(AggSum, groupV, groupF), groupSpec(AggSum, groupD, -1), groupSpec(AggMin, groupD, groupF),
	groupSpec(AggSum, groupX, -1), groupSpec(AggMax, groupX, -1), groupSpec(AggCountDistinct, groupS, -1),
}

// groupRandomRow draws a groupEvents row from small domains, so groups, ties, duplicates and NULLs are frequent. d is
// decimal text with 2 places; x is one of a few exactly summable floats, NaN or an infinity.
func groupRandomRow(rng *rand.Rand) []any {
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

// randomChangelog returns a random changelog of gen's rows (the multiset is valid at every prefix; an update's new
// row usually keeps column keyCol). Append-only inputs only insert.
func randomChangelog(rng *rand.Rand, rows int, updating bool, gen func(*rand.Rand) []any, keyCol int) []changeRow {
	var present [][]any
	var out []changeRow
	for len(out) < rows {
		if updating && len(present) > 0 && rng.IntN(3) == 0 {
			i := rng.IntN(len(present))
			row := present[i]
			present[i] = present[len(present)-1]
			present = present[:len(present)-1]
			if rng.IntN(2) == 0 {
				out = append(out, delRow(row...))
				continue
			}
			out = append(out, ubRow(row...))
			// An update: the new row follows at once, usually of the same key.
			nr := gen(rng)
			if rng.IntN(4) != 0 {
				nr[keyCol] = row[keyCol]
			}
			present = append(present, nr)
			out = append(out, uaRow(nr...))
			continue
		}
		nr := gen(rng)
		present = append(present, nr)
		out = append(out, insRow(nr...))
	}
	return out
}

// cutChangelog cuts rows into random batches of 1 to maxBatch rows.
func cutChangelog(rng *rand.Rand, rows []changeRow, maxBatch int) [][]changeRow {
	var out [][]changeRow
	for len(rows) > 0 {
		n := min(len(rows), 1+rng.IntN(maxBatch))
		out = append(out, rows[:n])
		rows = rows[n:]
	}
	return out
}

// groupModel is the expected result rows of the input multiset: one text row per group.
func groupModel(keyed bool, present [][]any) []string {
	groups := map[string][][]any{}
	var order []string
	for _, r := range present {
		k := "NULL"
		if !keyed {
			k = ""
		} else if r[groupK] != nil {
			k = fmt.Sprint(r[groupK])
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
		row := groupModelRow(groups[k])
		if keyed {
			row = k + "|" + row
		}
		out = append(out, row)
	}
	slices.Sort(out)
	return out
}

func cents(s string) int64 {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var a, b int64
	fmt.Sscanf(strings.Replace(s, ".", " ", 1), "%d %d", &a, &b)
	if neg {
		return -(a*100 + b)
	}
	return a*100 + b
}

func fixedText(v *big.Int, scale int) string {
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

// groupModelRow computes groupRandomAggs over one group's rows.
func groupModelRow(rows [][]any) string {
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
		if r[groupV] != nil {
			addNum(&vs, &fvs, int64(r[groupV].(int)), r[groupF])
		}
		if r[groupS] != nil {
			ss = append(ss, r[groupS].(string))
		}
		if r[groupD] != nil {
			addNum(&ds, &fds, cents(r[groupD].(string)), r[groupF])
		}
		if r[groupX] != nil {
			xs = append(xs, r[groupX].(float64))
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
	cents := func(c int64) string { return fixedText(big.NewInt(c), 2) }
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
		add(fixedText(q, 16))
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

func foldedRows(fold map[string]int) []string {
	var out []string
	for r, n := range fold {
		for ; n > 0; n-- {
			out = append(out, r)
		}
	}
	slices.Sort(out)
	return out
}

// checkGroupModel folds a run's output batch by batch and compares it with model(rows of the input up to the batch).
func checkGroupModel(t *testing.T, what string, batches [][]changeRow, out [][]string, model func([][]any) []string) {
	t.Helper()
	fold := map[string]int{}
	var present [][]any
	for i, b := range batches {
		for _, r := range b {
			if r.kind == exec.Insert || r.kind == exec.UpdateAfter {
				present = append(present, r.vals)
				continue
			}
			j := slices.IndexFunc(present, func(p []any) bool { return sameRow(p, r.vals) })
			present = slices.Delete(present, j, j+1)
		}
		if err := optest.FoldChangelog(fold, out[i]); err != nil {
			t.Fatalf("%s: batch %d: %v", what, i, err)
		}
		if got, want := foldedRows(fold), model(present); !slices.Equal(got, want) {
			t.Fatalf("%s: after batch %d (output %q):\n got  %q\n want %q", what, i, out[i], got, want)
		}
	}
}

func sameRow(a, b []any) bool {
	return slices.EqualFunc(a, b, func(x, y any) bool {
		if fx, ok := x.(float64); ok && fx != fx {
			fy, ok := y.(float64)
			return ok && fy != fy
		}
		return x == y
	})
}

// randomRuns runs one random input in several shapes: the reference (memory backend, a barrier after each batch),
// a second random batching, Pebble with random restores, and an eviction-happy working set with restores. Each is
// checked against the model; the shapes with the reference's batching must reproduce its changelog exactly.
func randomRuns(t *testing.T, name string, rng *rand.Rand, schema *arrow.Schema, rows []changeRow,
	factory, evicting func(int) exec.Operator, out *arrow.Schema, model func([][]any) []string) {
	t.Helper()
	batches := cutChangelog(rng, rows, 6)
	always := func(int, int) (bool, bool) { return true, false }
	ref := execChangelog(t, schema, out, factory, batches, false, always)
	if ref.err != nil {
		t.Fatalf("%s: reference: %v", name, ref.err)
	}
	checkGroupModel(t, name+"/reference", batches, ref.out, model)
	other := cutChangelog(rng, rows, 3)
	res := execChangelog(t, schema, out, factory, other, false, func(int, int) (bool, bool) { return rng.IntN(2) == 0, false })
	if res.err != nil {
		t.Fatalf("%s: other batching: %v", name, res.err)
	}
	checkGroupModel(t, name+"/other-batching", other, res.out, model)
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
		res := execChangelog(t, schema, out, v.factory, batches, v.pebble, func(i, _ int) (bool, bool) {
			return restores[i] || rng.IntN(2) == 0, restores[i]
		})
		if res.err != nil {
			t.Fatalf("%s/%s: %v", name, v.what, res.err)
		}
		sameChangelog(t, name+"/"+v.what, res.out, ref.out)
	}
}

// sameChangelog checks that a run's output per batch is exactly that of the uninterrupted run.
func sameChangelog(t *testing.T, what string, got, ref [][]string) {
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

// checkRestoreMatches runs batches without barriers (checked against model, when set), then on both backends
// with one checkpoint and restore after the middle batch: the changelog must be exactly the same.
func checkRestoreMatches(t *testing.T, what string, schema, out *arrow.Schema, f func(int) exec.Operator,
	batches [][]changeRow, model func([][]any) []string) {
	t.Helper()
	ref := execChangelog(t, schema, out, f, batches, false, func(int, int) (bool, bool) { return false, false })
	if ref.err != nil {
		t.Fatalf("%s: %v", what, ref.err)
	}
	if model != nil {
		checkGroupModel(t, what+"/reference", batches, ref.out, model)
	}
	mid := len(batches) / 2
	for _, pebble := range []bool{false, true} {
		res := execChangelog(t, schema, out, f, batches, pebble, func(i, _ int) (bool, bool) { return i == mid, i == mid })
		if res.err != nil {
			t.Fatalf("%s pebble=%v: %v", what, pebble, res.err)
		}
		sameChangelog(t, fmt.Sprintf("%s pebble=%v: a restore changed the changelog", what, pebble), res.out, ref.out)
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
				cfg := GroupAggConfig{Aggs: groupRandomAggs, InputUpdating: updating}
				if keyed {
					cfg.Keys = []int{groupK}
				}
				factory, out := groupOp(t, cfg, groupEvents)
				p, err := planGroupAgg(cfg, groupEvents)
				if err != nil {
					t.Fatal(err)
				}
				p.maxGroups = 2 // every barrier evicts
				evicting := func(int) exec.Operator { return newGroupAgg(p) }
				rows := randomChangelog(rng, 60, updating, groupRandomRow, groupK)
				randomRuns(t, name, rng, groupEvents, rows, factory, evicting, out, func(present [][]any) []string {
					return groupModel(keyed, present)
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
	rows := randomChangelog(rng, 200, true, groupRandomRow, groupK)
	batches := cutChangelog(rng, rows, 10)
	for _, keys := range [][]int{{groupK}, {groupS, groupK}, nil} {
		f, out := groupOp(t, GroupAggConfig{Keys: keys, Aggs: groupRandomAggs, InputUpdating: true}, groupEvents)
		checkRestoreMatches(t, fmt.Sprintf("keys %v", keys), groupEvents, out, f, batches, nil)
	}
}

// TestGroupAggForgets: a group whose last row was retracted, or that only saw retractions of rows it did not hold,
// leaves memory and the backend; above maxGroups a barrier evicts the groups a checkpoint interval did not touch,
// and they come back from the backend intact.
func TestGroupAggForgets(t *testing.T) {
	p, err := planGroupAgg(GroupAggConfig{Keys: []int{groupK}, Aggs: []AggSpec{groupSpec(AggSum, groupV, -1)},
		InputUpdating: true}, groupEvents)
	if err != nil {
		t.Fatal(err)
	}
	p.maxGroups = 2
	h := openChangelog(t, func(int) exec.Operator { return newGroupAgg(p) }, groupEvents, p.out)
	op := h.Op.(*groupAgg)
	step := func(rows ...changeRow) []string { t.Helper(); return changelogStep(t, h, rows...) }
	backend := func() int { t.Helper(); return stateEntries(t, h.Backend) }
	step(insRow(gr(1, 1)...), insRow(gr(2, 2)...))
	step(delRow(gr(1, 1)...), delRow(gr(3, 1)...))
	if op.live != 1 || backend() != 1 {
		t.Fatalf("%d groups in memory, %d in the backend, want 1 and 1", op.live, backend())
	}
	// Three groups: over maxGroups, so the barrier evicts 2 (untouched since the previous barrier).
	step(insRow(gr(4, 4)...), insRow(gr(5, 5)...))
	if op.live != 2 || op.complete || backend() != 3 {
		t.Fatalf("after eviction: %d groups in memory (complete %v), %d in the backend", op.live, op.complete, backend())
	}
	if got := step(insRow(gr(2, 10)...)); !slices.Equal(got, []string{"-U 2|2", "+U 2|12"}) {
		t.Fatalf("an evicted group came back as %q", got)
	}
}
