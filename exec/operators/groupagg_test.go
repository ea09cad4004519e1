package operators

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clinksql/clinksql/checkpoint"
	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/exec/expr"
	"github.com/clinksql/clinksql/sql/sqlerr"
	"github.com/clinksql/clinksql/state"
)

// The changelog harness of the group aggregate and Top-N tests: it feeds explicit batches of rows with row kinds
// to an operator and records its output per input batch, as "+I 1|2" lines (kind, then the Postgres text form of
// the row). Between batches it takes barriers, and where asked a full restore: OnBarrier, Capture, Persist, Close
// of the operator and the backend, a fresh backend opened from the persisted snapshot and a fresh operator. It
// checks that every output batch has the declared schema, that an all-insert batch carries nil Kinds, that
// watermarks emit nothing, and that nothing stays allocated.

type gaclRow struct {
	kind exec.RowKind
	vals []any
}

func gaIns(v ...any) gaclRow { return gaclRow{exec.Insert, v} }
func gaDel(v ...any) gaclRow { return gaclRow{exec.Delete, v} }
func gaUB(v ...any) gaclRow  { return gaclRow{exec.UpdateBefore, v} }
func gaUA(v ...any) gaclRow  { return gaclRow{exec.UpdateAfter, v} }

// gaclShape is how a run takes checkpoints: restore "" (barriers only), "mid" (a restore after the middle batch)
// or "every" (after every batch).
type gaclShape struct {
	pebble  bool
	restore string
}

func (s gaclShape) String() string { return fmt.Sprintf("pebble=%v/restore=%q", s.pebble, s.restore) }

func gaclShapes() []gaclShape {
	var out []gaclShape
	for _, pb := range []bool{false, true} {
		for _, r := range []string{"", "mid", "every"} {
			out = append(out, gaclShape{pebble: pb, restore: r})
		}
	}
	return out
}

type gaclRunner struct {
	t       testing.TB
	mem     *memory.CheckedAllocator
	dir     string
	schema  *arrow.Schema
	out     *arrow.Schema
	factory func(int) exec.Operator
	pebble  bool
	be      state.Backend
	op      exec.Operator
	errs    exec.Counter
	nextID  uint64
	cur     []string
	bad     error
	ctxHook func(*exec.TaskContext)
}

// Emit records an output batch.
func (r *gaclRunner) Emit(b exec.Batch) error {
	defer b.Release()
	if !b.Rec.Schema().Equal(r.out) && r.bad == nil {
		r.bad = fmt.Errorf("output schema %s, want %s", b.Rec.Schema(), r.out)
	}
	if b.Kinds != nil {
		if len(b.Kinds) != b.Rows() {
			r.bad = fmt.Errorf("%d kinds for %d rows", len(b.Kinds), b.Rows())
		} else if !slices.ContainsFunc(b.Kinds, func(k exec.RowKind) bool { return k != exec.Insert }) {
			r.bad = fmt.Errorf("an all-insert output batch carries Kinds")
		}
	}
	for i, s := range batchText(exec.Batch{Rec: b.Rec}) {
		r.cur = append(r.cur, b.Kind(i).String()+" "+s)
	}
	return nil
}

func (r *gaclRunner) open(restorePath string, id uint64) error {
	opts := state.Options{RestorePath: restorePath, SharedDir: filepath.Join(r.dir, "shared")}
	var err error
	if r.pebble {
		opts.Dir = filepath.Join(r.dir, fmt.Sprintf("work-%d", id))
		r.be, err = state.OpenPebble(opts)
	} else {
		r.be, err = state.OpenMemory(opts)
	}
	if err != nil {
		return err
	}
	ctx := &exec.TaskContext{Job: "j1", Operator: "op", Parallelism: 1,
		KeyGroups: state.KeyGroupRange{End: state.DefaultKeyGroups}, MaxKeyGroups: state.DefaultKeyGroups,
		State: r.be, Restored: id, Alloc: r.mem, Errors: &r.errs, Late: &exec.Counter{}}
	if r.ctxHook != nil {
		r.ctxHook(ctx)
	}
	r.op = r.factory(0)
	return r.op.Open(ctx)
}

// barrier checkpoints and, with restore, reopens everything from the persisted snapshot.
func (r *gaclRunner) barrier(restore bool) error {
	r.nextID++
	id := r.nextID
	if err := r.op.OnBarrier(checkpoint.Barrier{ID: id}); err != nil {
		return err
	}
	snap, err := r.be.Capture(id)
	if err != nil {
		return err
	}
	if !restore {
		snap.Release()
		return nil
	}
	path := filepath.Join(r.dir, fmt.Sprintf("chk-%d", id))
	if err := snap.Persist(path); err != nil {
		return err
	}
	err = errors.Join(r.op.Close(), r.be.Close())
	r.op, r.be = nil, nil
	if err != nil {
		return err
	}
	return r.open(path, id)
}

// gaclResult is one run: the output per input batch, the Errors count, the first error.
type gaclResult struct {
	out    [][]string
	errors int64
	err    error
}

// gaclExec runs batches through a fresh operator. after(i) says what follows batch i (not the last): a barrier,
// and whether a restore.
func gaclExec(t testing.TB, schema, out *arrow.Schema, factory func(int) exec.Operator, batches [][]gaclRow,
	pebble bool, after func(i int) (barrier, restore bool)) gaclResult {
	t.Helper()
	r := &gaclRunner{t: t, dir: t.TempDir(), schema: schema, out: out, factory: factory, pebble: pebble}
	r.mem = memory.NewCheckedAllocator(memory.NewGoAllocator())
	res := gaclResult{}
	res.err = r.run(batches, after, &res)
	if r.op != nil {
		res.err = errors.Join(res.err, r.op.Close())
	}
	if r.be != nil {
		res.err = errors.Join(res.err, r.be.Close())
	}
	res.errors = r.errs.Load()
	r.mem.AssertSize(t, 0)
	return res
}

func (r *gaclRunner) run(batches [][]gaclRow, after func(i int) (bool, bool), res *gaclResult) error {
	if err := r.open("", 0); err != nil {
		return err
	}
	for i, rows := range batches {
		vals := make([][]any, len(rows))
		var kinds []exec.RowKind
		for j, row := range rows {
			vals[j] = row.vals
			if row.kind != exec.Insert && kinds == nil {
				kinds = make([]exec.RowKind, len(rows))
			}
		}
		if kinds != nil {
			for j, row := range rows {
				kinds[j] = row.kind
			}
		}
		b := buildBatch(r.mem, r.schema, vals)
		b.Kinds = kinds
		r.cur = nil
		err := r.op.Process(0, b, r)
		res.out = append(res.out, r.cur)
		if err != nil {
			return err
		}
		if r.bad != nil {
			return r.bad
		}
		r.cur = nil
		if err := r.op.OnWatermark(int64(i), r); err != nil {
			return err
		}
		if len(r.cur) > 0 {
			return fmt.Errorf("a watermark emitted %q", r.cur)
		}
		if i == len(batches)-1 {
			break
		}
		if barrier, restore := after(i); barrier {
			if err := r.barrier(restore); err != nil {
				return err
			}
		}
	}
	return nil
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
	t.Setenv("CLINK_STATE_FSYNC", "0")
	t.Run(c.name, func(t *testing.T) {
		for _, sh := range gaclShapes() {
			mid := (len(c.batches) - 1) / 2
			res := gaclExec(t, c.schema, c.out, c.factory, c.batches, sh.pebble, func(i int) (bool, bool) {
				return true, sh.restore == "every" || (sh.restore == "mid" && i == mid)
			})
			if c.wantErr != "" {
				if res.err == nil || (sqlerr.Code(res.err) != c.wantErr && !strings.Contains(res.err.Error(), c.wantErr)) {
					t.Fatalf("%s: error %v, want %s", sh, res.err, c.wantErr)
				}
				continue
			}
			if res.err != nil {
				t.Fatalf("%s: %v", sh, res.err)
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
		}
	})
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
	f, out, err := NewGroupAggregate(cfg, schema)
	if err != nil {
		t.Fatal(err)
	}
	return f, out
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

// TestGroupAggGlobal: without keys there is one group, which exists from its first row on, also when every row
// was retracted again.
func TestGroupAggGlobal(t *testing.T) {
	cfg := GroupAggConfig{InputUpdating: true, Aggs: []AggSpec{gaSpec(AggCountStar, -1, -1), gaSpec(AggSum, gaV, -1),
		gaSpec(AggMax, gaV, -1)}}
	runGacl(t, gaCase(t, "global", cfg, [][]gaclRow{
		{gaIns(gr(1, 5)...), gaIns(gr(2, 7)...)},
		{gaDel(gr(2, 7)...), gaDel(gr(1, 5)...)},
		{gaIns(gr(1, 3)...)},
	}, [][]string{
		{"+I 2|12|7"},
		{"-U 2|12|7", "+U 0|NULL|NULL"},
		{"-U 0|NULL|NULL", "+U 1|3|3"},
	}))
	// A first batch that adds and retracts its only row: the group exists (it saw a row) however it is batched.
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
		{"+I 1|5|5"},
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
	batch := buildBatch(mem, schema, [][]any{{1, 5, "0"}})
	hashes, _ := exec.HashKeys(batch.Rec, []int{0}, nil)
	be, _ := state.OpenMemory(state.Options{})
	defer be.Close()
	acc := binary.AppendUvarint(nil, 1)                         // rows
	acc = binary.AppendVarint(acc, 1)                           // values summed
	acc = binary.BigEndian.AppendUint64(acc, 0)                 // high word
	acc = binary.BigEndian.AppendUint64(acc, uint64(1<<63-1-1)) // low word
	be.Put(state.KeyedKey(state.KeyGroupOf(hashes[0], state.DefaultKeyGroups), gaStateID, winAppendIntKey(nil, 1, false)), acc)
	op := f(0)
	if err := op.Open(&exec.TaskContext{State: be, Alloc: mem, MaxKeyGroups: state.DefaultKeyGroups,
		KeyGroups: state.KeyGroupRange{End: state.DefaultKeyGroups}}); err != nil {
		t.Fatal(err)
	}
	defer op.Close()
	err := op.Process(0, batch, &discardEmitter{})
	if sqlerr.Code(err) != sqlerr.NumericOutOfRange || err.Error() != "bigint out of range" {
		t.Fatalf("MaxInt64-1 + 5: %v (SQLSTATE %q), want 22003 bigint out of range", err, sqlerr.Code(err))
	}
}

// TestGroupAggKeyGroupRouting: a row of a key group the subtask does not own fails the operator.
func TestGroupAggKeyGroupRouting(t *testing.T) {
	mem := checkedAlloc(t)
	f, _ := gaOp(t, GroupAggConfig{Keys: []int{gaK}, Aggs: []AggSpec{gaSpec(AggCountStar, -1, -1)}}, gaEvents)
	batch := buildBatch(mem, gaEvents, [][]any{gr(1, 1), gr(2, 1), gr(3, 1)})
	hashes, _ := exec.HashKeys(batch.Rec, []int{gaK}, nil)
	own := state.KeyGroupOf(hashes[0], state.DefaultKeyGroups)
	be, _ := state.OpenMemory(state.Options{})
	defer be.Close()
	op := f(0)
	if err := op.Open(&exec.TaskContext{State: be, Alloc: mem, MaxKeyGroups: state.DefaultKeyGroups,
		KeyGroups: state.KeyGroupRange{Start: own, End: own + 1}}); err != nil {
		t.Fatal(err)
	}
	defer op.Close()
	if err := op.Process(0, batch, &discardEmitter{}); err == nil || !strings.Contains(err.Error(), "key group") {
		t.Fatalf("rows of foreign key groups: %v, want a routing error", err)
	}
}

// TestGroupAggOutputSchema: the key columns, then the aggregates with exactly the window aggregate's result types
// and names; the window aggregate's validation errors.
func TestGroupAggOutputSchema(t *testing.T) {
	fields := []arrow.Field{
		{Name: "i16", Type: arrow.PrimitiveTypes.Int16},
		{Name: "i64", Type: arrow.PrimitiveTypes.Int64},
		{Name: "d", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}},
		{Name: "d20", Type: &arrow.Decimal128Type{Precision: 30, Scale: 20}},
		{Name: "r", Type: arrow.PrimitiveTypes.Float32},
		{Name: "s", Type: arrow.BinaryTypes.String},
		{Name: "dt", Type: arrow.FixedWidthTypes.Date32},
		{Name: "b", Type: arrow.FixedWidthTypes.Boolean},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Millisecond}},
	}
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
func gaModel(keyed bool, present [][]any, everAdded bool) []string {
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
	if !keyed && everAdded && len(groups) == 0 {
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
	for _, r := range rows {
		if r[gaV] != nil {
			vs = append(vs, int64(r[gaV].(int)))
			if r[gaF] == true {
				fvs = append(fvs, int64(r[gaV].(int)))
			}
		}
		if r[gaS] != nil {
			ss = append(ss, r[gaS].(string))
		}
		if r[gaD] != nil {
			ds = append(ds, gaCents(r[gaD].(string)))
			if r[gaF] == true {
				fds = append(fds, gaCents(r[gaD].(string)))
			}
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

// gaFold applies one batch's output to the folded result multiset; a retraction of a row not in it is an error.
func gaFold(fold map[string]int, out []string) error {
	for _, line := range out {
		kind, row, _ := strings.Cut(line, " ")
		switch kind {
		case "+I", "+U":
			fold[row]++
		case "-U", "-D":
			if fold[row] == 0 {
				return fmt.Errorf("%s of a row not in the result: %q", kind, row)
			}
			if fold[row]--; fold[row] == 0 {
				delete(fold, row)
			}
		default:
			return fmt.Errorf("bad output line %q", line)
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
func gaCheckModel(t *testing.T, what string, batches [][]gaclRow, out [][]string, model func([][]any, bool) []string) {
	t.Helper()
	fold := map[string]int{}
	var present [][]any
	everAdded := false
	for i, b := range batches {
		for _, r := range b {
			if r.kind == exec.Insert || r.kind == exec.UpdateAfter {
				present = append(present, r.vals)
				everAdded = true
				continue
			}
			j := slices.IndexFunc(present, func(p []any) bool { return gaSameRow(p, r.vals) })
			present = slices.Delete(present, j, j+1)
		}
		if err := gaFold(fold, out[i]); err != nil {
			t.Fatalf("%s: batch %d: %v", what, i, err)
		}
		if got, want := gaFolded(fold), model(present, everAdded); !slices.Equal(got, want) {
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
	factory, evicting func(int) exec.Operator, out *arrow.Schema, model func([][]any, bool) []string) {
	t.Helper()
	batches := gaCut(rng, rows, 6)
	always := func(int) (bool, bool) { return true, false }
	ref := gaclExec(t, schema, out, factory, batches, false, always)
	if ref.err != nil {
		t.Fatalf("%s: reference: %v", name, ref.err)
	}
	gaCheckModel(t, name+"/reference", batches, ref.out, model)
	other := gaCut(rng, rows, 3)
	res := gaclExec(t, schema, out, factory, other, false, func(int) (bool, bool) { return rng.IntN(2) == 0, false })
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
		res := gaclExec(t, schema, out, v.factory, batches, v.pebble, func(i int) (bool, bool) {
			return restores[i] || rng.IntN(2) == 0, restores[i]
		})
		if res.err != nil {
			t.Fatalf("%s/%s: %v", name, v.what, res.err)
		}
		if !slices.EqualFunc(res.out, ref.out, slices.Equal) {
			for i := range ref.out {
				if i >= len(res.out) || !slices.Equal(res.out[i], ref.out[i]) {
					t.Fatalf("%s/%s: batch %d differs from the uninterrupted run:\n got  %q\n want %q", name, v.what, i,
						res.out[min(i, len(res.out)-1)], ref.out[i])
				}
			}
		}
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
				gaRandomRuns(t, name, rng, gaEvents, rows, factory, evicting, out, func(present [][]any, ever bool) []string {
					return gaModel(keyed, present, ever)
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
		ref := gaclExec(t, gaEvents, out, f, batches, false, func(int) (bool, bool) { return false, false })
		if ref.err != nil {
			t.Fatal(ref.err)
		}
		for _, pebble := range []bool{false, true} {
			mid := len(batches) / 2
			res := gaclExec(t, gaEvents, out, f, batches, pebble, func(i int) (bool, bool) { return i == mid, i == mid })
			if res.err != nil {
				t.Fatal(res.err)
			}
			if !slices.EqualFunc(res.out, ref.out, slices.Equal) {
				t.Fatalf("keys %v pebble=%v: a restore changed the changelog", keys, pebble)
			}
		}
	}
}

// TestGroupAggForgets: a group whose last row was retracted, or that only saw retractions of rows it did not hold,
// leaves memory and the backend; above maxGroups a barrier evicts the groups a checkpoint interval did not touch,
// and they come back from the backend intact.
func TestGroupAggForgets(t *testing.T) {
	mem := checkedAlloc(t)
	p, err := planGroupAgg(GroupAggConfig{Keys: []int{gaK}, Aggs: []AggSpec{gaSpec(AggSum, gaV, -1)},
		InputUpdating: true}, gaEvents)
	if err != nil {
		t.Fatal(err)
	}
	p.maxGroups = 2
	be, _ := state.OpenMemory(state.Options{})
	defer be.Close()
	op := newGroupAgg(p)
	if err := op.Open(&exec.TaskContext{State: be, Alloc: mem, MaxKeyGroups: state.DefaultKeyGroups,
		KeyGroups: state.KeyGroupRange{End: state.DefaultKeyGroups}}); err != nil {
		t.Fatal(err)
	}
	defer op.Close()
	r := &gaclRunner{out: op.p.out}
	step := func(rows ...gaclRow) []string {
		t.Helper()
		vals := make([][]any, len(rows))
		kinds := make([]exec.RowKind, len(rows))
		for i, row := range rows {
			vals[i], kinds[i] = row.vals, row.kind
		}
		b := buildBatch(mem, gaEvents, vals)
		b.Kinds = kinds
		r.cur = nil
		if err := op.Process(0, b, r); err != nil {
			t.Fatal(err)
		}
		if err := op.OnBarrier(checkpoint.Barrier{}); err != nil {
			t.Fatal(err)
		}
		return r.cur
	}
	backend := func() int {
		n := 0
		if err := be.Scan(nil, func(_, _ []byte) error { n++; return nil }); err != nil {
			t.Fatal(err)
		}
		return n
	}
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
