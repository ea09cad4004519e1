package join

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/exec/expr"
	"github.com/clinksql/clinksql/exec/optest"
	"github.com/clinksql/clinksql/exec/rowcodec"
	"github.com/clinksql/clinksql/sqlerr"
	"github.com/clinksql/clinksql/state"
)

// The regular join's tests drive the operator directly with a two-input harness (regularHarness): the input is a
// sequence of rows of either side with their kinds, cut into batches (a batch never mixes sides), with a barrier
// after every batch but the last and, depending on the shape, a restore from the persisted snapshot. Every shape
// must give the same changelog: the operator's output depends on row order only, not on batching, backend,
// restores or how much of its working set it kept in memory.

// Schemas of the hand-derived cases: left (k BIGINT, a TEXT), right (k BIGINT, b BIGINT).
var (
	regularLeft  = optest.NullableSchema("k", arrow.PrimitiveTypes.Int64, "a", arrow.BinaryTypes.String)
	regularRight = optest.NullableSchema("k", arrow.PrimitiveTypes.Int64, "b", arrow.PrimitiveTypes.Int64)
	// numLeft is (k BIGINT, x BIGINT), for residuals comparing the sides.
	numLeft = optest.NullableSchema("k", arrow.PrimitiveTypes.Int64, "x", arrow.PrimitiveTypes.Int64)
)

// sideRow is one input row: side 0 (left) or 1 (right), its kind and its values (AppendGoValue's Go values).
type sideRow struct {
	side int
	kind exec.RowKind
	vals []any
}

func leftRow(vals ...any) sideRow  { return sideRow{side: 0, vals: vals} }
func rightRow(vals ...any) sideRow { return sideRow{side: 1, vals: vals} }

// as returns the row with another kind.
func (r sideRow) as(k exec.RowKind) sideRow { r.kind = k; return r }

// clockTick sets the harness clock (µs) before the next batch; it ends a batch.
type clockTick int64

// regularBatch is one call of Process.
type regularBatch struct {
	side  int
	rows  []sideRow
	clock *int64 // set the clock first
}

// step is the batch as a run step.
func (bt regularBatch) step() optest.BatchStep {
	b := optest.BatchStep{In: bt.side, Rows: make([][]any, len(bt.rows)), Kinds: make([]exec.RowKind, len(bt.rows))}
	for i, r := range bt.rows {
		b.Rows[i], b.Kinds[i] = r.vals, r.kind
	}
	b.Kinds = optest.ChangelogKinds(b.Kinds)
	return b
}

// cutRegular cuts an input of sideRow and clockTick items into batches of at most size rows (0: unbounded).
func cutRegular(input []any, size int) []regularBatch {
	var out []regularBatch
	var cur *regularBatch
	var tick *int64
	for _, it := range input {
		switch v := it.(type) {
		case clockTick:
			t := int64(v)
			tick, cur = &t, nil
		case sideRow:
			if cur == nil || cur.side != v.side || (size > 0 && len(cur.rows) == size) {
				out = append(out, regularBatch{side: v.side, clock: tick})
				cur, tick = &out[len(out)-1], nil
			}
			cur.rows = append(cur.rows, v)
		default:
			panic(fmt.Sprintf("rj harness: input item %T", it))
		}
	}
	return out
}

// regularShapes are the shapes of the regular join's runs: AllShapes with and without a working set (cache 1).
func regularShapes() []optest.Shape {
	if testing.Short() { // a cross-section: every batching, backend, restore and cache setting at least twice
		return []optest.Shape{
			{Batch: 1}, {Batch: 3, Cache: 1}, {Batch: 0},
			{Batch: 1, Restore: "every"}, {Batch: 1, Restore: "every", Cache: 1}, {Batch: 3, Restore: "mid"},
			{Batch: 0, Restore: "mid", Cache: 1},
			{Batch: 1, Pebble: true, Restore: "every", Cache: 1}, {Batch: 3, Pebble: true, Restore: "every"},
			{Batch: 0, Pebble: true, Restore: "mid"},
		}
	}
	var out []optest.Shape
	for _, sh := range optest.AllShapes() {
		for _, c := range []int64{0, 1} {
			sh.Cache = c
			out = append(out, sh)
		}
	}
	return out
}

// regularHarness is a regular join under test: the operator harness, emitting changelog lines ("+I 1|a|1|10") of the
// join's output schema, and the clock the join's TTL reads.
type regularHarness struct {
	*optest.Harness
	clock int64
}

func newRJHarness(t testing.TB, cfg RegularJoinConfig, pebble bool, cache int64) *regularHarness {
	t.Helper()
	h := &regularHarness{}
	cfg.Now = func() time.Time { return time.UnixMicro(h.clock) }
	cfg.CacheBytes = cache
	f, _, err := NewJoin(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h.Harness = optest.NewHarness(t, f, pebble, cfg.Left, cfg.Right)
	h.Out, h.Changelog = JoinOutputSchema(cfg.Left, cfg.Right), true
	return h
}

// process runs one batch, setting the clock first when it says so.
func (h *regularHarness) process(bt regularBatch) error {
	if bt.clock != nil {
		h.clock = *bt.clock
	}
	b := bt.step()
	return h.Harness.Process(b.In, b.Rows, b.Kinds)
}

// steps turns batches into run steps.
func (h *regularHarness) steps(batches []regularBatch) []any {
	var steps []any
	for _, bt := range batches {
		if bt.clock != nil {
			clock := *bt.clock
			steps = append(steps, optest.DoStep(func(*optest.Harness) error { h.clock = clock; return nil }))
		}
		steps = append(steps, bt.step())
	}
	return steps
}

// runRegular runs batches with a barrier after each but the last; restoreAt(i) says whether barrier i restores.
func runRegular(t testing.TB, cfg RegularJoinConfig, batches []regularBatch, pebble bool, cache int64, restoreAt func(i int) bool) ([]string, int64, error) {
	t.Helper()
	h := newRJHarness(t, cfg, pebble, cache)
	err := h.Run(h.steps(batches), func(i, _ int) (bool, bool) { return true, restoreAt(i) }, nil)
	err = errors.Join(err, h.Close())
	return h.Rows, h.Errs.Load(), err
}

// regularCase is a hand-derived test: an input and its exact changelog.
type regularCase struct {
	name    string
	cfg     RegularJoinConfig
	input   []any
	want    []string
	errors  int64
	wantErr string         // SQLSTATE or substring
	shapes  []optest.Shape // nil: regularShapes()
}

func runRJCase(t *testing.T, c regularCase) {
	t.Helper()
	shapes := c.shapes
	if shapes == nil {
		shapes = regularShapes()
	}
	optest.RunShapes(t, c.name, shapes, func(t *testing.T, sh optest.Shape) {
		h := newRJHarness(t, c.cfg, sh.Pebble, sh.Cache)
		err := errors.Join(h.Run(h.steps(cutRegular(c.input, sh.Batch)), sh.Barrier, nil), h.Close())
		got, errs := h.Rows, h.Errs.Load()
		if optest.CheckRunErr(t, sh, err, c.wantErr, got) {
			return
		}
		if !slices.Equal(got, c.want) {
			t.Fatalf("%s: changelog\n got  %q\n want %q", sh, got, c.want)
		}
		if errs != c.errors {
			t.Fatalf("%s: %d errors counted, want %d", sh, errs, c.errors)
		}
		if bad := invalidRows(got); bad != "" {
			t.Fatalf("%s: invalid changelog: %s", sh, bad)
		}
	})
}

// invalidRows applies a changelog to a multiset and describes the first retraction of a row that is not there.
func invalidRows(log []string) string {
	_, bad := consolidateLog(log)
	return bad
}

func consolidateLog(log []string) (map[string]int, string) {
	set := map[string]int{}
	if err := optest.FoldChangelog(set, log); err != nil {
		return set, err.Error()
	}
	return set, ""
}

func regularCfg(typ JoinType, upd bool) RegularJoinConfig {
	return RegularJoinConfig{
		JoinSpec:     JoinSpec{Type: typ, Left: regularLeft, Right: regularRight, LeftKeys: []int{0}, RightKeys: []int{0}},
		LeftUpdating: upd, RightUpdating: upd,
	}
}

const (
	kindD = exec.Delete
	kindB = exec.UpdateBefore
	kindA = exec.UpdateAfter
)

func TestRegularJoinInner(t *testing.T) {
	runRJCase(t, regularCase{
		name: "append-only", cfg: regularCfg(JoinInner, false),
		input: []any{leftRow(1, "a"), rightRow(1, 10), rightRow(2, 20), leftRow(2, "b"), leftRow(1, "c"), rightRow(1, 11), rightRow(3, 30), leftRow(4, "d")},
		want: []string{
			"+I 1|a|1|10",
			"+I 2|b|2|20",
			"+I 1|c|1|10",
			"+I 1|a|1|11", "+I 1|c|1|11", // pairs in the order the left rows were stored
		},
	})
	runRJCase(t, regularCase{
		name: "right first", cfg: regularCfg(JoinInner, false),
		input: []any{rightRow(1, 10), rightRow(1, 11), rightRow(2, 20), leftRow(1, "a"), leftRow(2, "b"), leftRow(1, "c")},
		want:  []string{"+I 1|a|1|10", "+I 1|a|1|11", "+I 2|b|2|20", "+I 1|c|1|10", "+I 1|c|1|11"},
	})
	runRJCase(t, regularCase{
		name: "retractions and updates", cfg: regularCfg(JoinInner, true),
		input: []any{
			leftRow(1, "a"), rightRow(1, 10), rightRow(1, 11),
			rightRow(1, 10).as(kindB), rightRow(1, 12).as(kindA), // update the right row 10 -> 12
			leftRow(1, "a").as(kindD),
			leftRow(1, "b"),
			rightRow(1, 11).as(kindD),
		},
		want: []string{
			"+I 1|a|1|10", "+I 1|a|1|11",
			"-D 1|a|1|10", "+I 1|a|1|12",
			"-D 1|a|1|11", "-D 1|a|1|12",
			"+I 1|b|1|11", "+I 1|b|1|12", // 11 was stored before 12
			"-D 1|b|1|11",
		},
	})
	runRJCase(t, regularCase{
		name: "duplicates", cfg: regularCfg(JoinInner, true),
		input: []any{leftRow(1, "a"), leftRow(1, "a"), rightRow(1, 10), leftRow(1, "a").as(kindD), rightRow(1, 10), leftRow(1, "a").as(kindD), rightRow(1, 10).as(kindD)},
		want: []string{
			"+I 1|a|1|10", "+I 1|a|1|10", // two copies of a
			"-D 1|a|1|10",
			"+I 1|a|1|10",                // one a left, a second 10
			"-D 1|a|1|10", "-D 1|a|1|10", // the last a leaves both copies of 10
		},
	})
	runRJCase(t, regularCase{
		name: "a key emptied and refilled", cfg: regularCfg(JoinInner, true),
		input: []any{leftRow(1, "a"), leftRow(1, "a").as(kindD), leftRow(1, "b"), rightRow(1, 10), leftRow(1, "b").as(kindD), leftRow(1, "c"), rightRow(1, 11)},
		want:  []string{"+I 1|b|1|10", "-D 1|b|1|10", "+I 1|c|1|10", "+I 1|c|1|11"},
	})
	runRJCase(t, regularCase{
		name: "NULL keys never match", cfg: regularCfg(JoinInner, true),
		input: []any{leftRow(nil, "a"), rightRow(nil, 10), leftRow(nil, "a").as(kindD), rightRow(1, 10), leftRow(1, nil)},
		want:  []string{"+I 1|NULL|1|10"},
	})
	runRJCase(t, regularCase{
		name: "retracting a row not in state is counted", cfg: regularCfg(JoinInner, true),
		input:  []any{rightRow(1, 10), leftRow(1, "x").as(kindD), leftRow(1, "a"), rightRow(1, 11).as(kindD), leftRow(1, "a").as(kindB), leftRow(1, "b").as(kindA)},
		want:   []string{"+I 1|a|1|10", "-D 1|a|1|10", "+I 1|b|1|10"},
		errors: 2,
	})
	runRJCase(t, regularCase{
		name: "append-only input rejects a retraction", cfg: regularCfg(JoinInner, false),
		input:   []any{leftRow(1, "a"), rightRow(1, 10).as(kindD)},
		wantErr: "append-only",
	})
}

func TestRegularJoinLeft(t *testing.T) {
	runRJCase(t, regularCase{
		name: "padding flips", cfg: regularCfg(JoinLeft, true),
		input: []any{
			leftRow(1, "a"), leftRow(2, "b"),
			rightRow(1, 10), rightRow(1, 11), rightRow(3, 30),
			rightRow(1, 10).as(kindD), rightRow(1, 11).as(kindD),
			leftRow(1, "a").as(kindD), leftRow(2, "b").as(kindD), rightRow(3, 30).as(kindD),
		},
		want: []string{
			"+I 1|a|NULL|NULL", "+I 2|b|NULL|NULL",
			"-D 1|a|NULL|NULL", "+I 1|a|1|10",
			"+I 1|a|1|11",
			"-D 1|a|1|10",
			"-D 1|a|1|11", "+I 1|a|NULL|NULL",
			"-D 1|a|NULL|NULL", "-D 2|b|NULL|NULL",
		},
	})
	runRJCase(t, regularCase{
		name: "matched left row retracted", cfg: regularCfg(JoinLeft, true),
		input: []any{rightRow(1, 10), leftRow(1, "a"), leftRow(1, "a").as(kindB), leftRow(1, "b").as(kindA), rightRow(1, 10).as(kindD), leftRow(1, "b").as(kindD)},
		want: []string{
			"+I 1|a|1|10",
			"-D 1|a|1|10", "+I 1|b|1|10",
			"-D 1|b|1|10", "+I 1|b|NULL|NULL",
			"-D 1|b|NULL|NULL",
		},
	})
	runRJCase(t, regularCase{
		name: "NULL keys padded", cfg: regularCfg(JoinLeft, true),
		input: []any{leftRow(nil, "n"), rightRow(nil, 5), leftRow(nil, "n").as(kindD)},
		want:  []string{"+I NULL|n|NULL|NULL", "-D NULL|n|NULL|NULL"},
	})
}

func TestRegularJoinRight(t *testing.T) {
	runRJCase(t, regularCase{
		name: "padding flips", cfg: regularCfg(JoinRight, true),
		input: []any{
			rightRow(1, 10), leftRow(1, "a"), leftRow(1, "b"),
			leftRow(1, "a").as(kindB), leftRow(1, "a2").as(kindA),
			leftRow(1, "b").as(kindD), leftRow(1, "a2").as(kindD),
			leftRow(2, "c"), rightRow(1, 10).as(kindD),
		},
		want: []string{
			"+I NULL|NULL|1|10",
			"-D NULL|NULL|1|10", "+I 1|a|1|10",
			"+I 1|b|1|10",
			"-D 1|a|1|10", "+I 1|a2|1|10",
			"-D 1|b|1|10",
			"-D 1|a2|1|10", "+I NULL|NULL|1|10",
			"-D NULL|NULL|1|10",
		},
	})
}

func TestRegularJoinFull(t *testing.T) {
	runRJCase(t, regularCase{
		name: "duplicates, NULL keys, flips on both sides", cfg: regularCfg(JoinFull, true),
		input: []any{
			leftRow(1, "a"), leftRow(1, "a"), rightRow(1, 10),
			rightRow(nil, 5), leftRow(nil, "n"),
			rightRow(1, 10).as(kindD),
			leftRow(1, "a").as(kindD),
			rightRow(nil, 5).as(kindD),
			rightRow(2, 20), leftRow(2, "b"), rightRow(2, 20), leftRow(2, "b").as(kindD),
			rightRow(9, 99).as(kindD),
		},
		want: []string{
			"+I 1|a|NULL|NULL", "+I 1|a|NULL|NULL",
			"-D 1|a|NULL|NULL", "+I 1|a|1|10", "-D 1|a|NULL|NULL", "+I 1|a|1|10", // per copy of a
			"+I NULL|NULL|NULL|5", "+I NULL|n|NULL|NULL",
			"-D 1|a|1|10", "+I 1|a|NULL|NULL", "-D 1|a|1|10", "+I 1|a|NULL|NULL",
			"-D 1|a|NULL|NULL",
			"-D NULL|NULL|NULL|5",
			"+I NULL|NULL|2|20",
			"-D NULL|NULL|2|20", "+I 2|b|2|20",
			"+I 2|b|2|20", // the second copy of 20 is matched at once
			"-D 2|b|2|20", "+I NULL|NULL|2|20", "-D 2|b|2|20", "+I NULL|NULL|2|20",
		},
		errors: 1,
	})
}

// Many distinct rows of one key, most retracted in one batch: the entry finds rows through its slot map and
// compacts its tombstones mid-batch; the survivors keep their order.
func TestRegularJoinManyRowsOneKey(t *testing.T) {
	var input []any
	for i := range 30 {
		input = append(input, leftRow(1, fmt.Sprintf("r%02d", i)))
	}
	for i := range 30 {
		if i%6 != 0 {
			input = append(input, leftRow(1, fmt.Sprintf("r%02d", i)).as(kindD))
		}
	}
	input = append(input, rightRow(1, 10), leftRow(1, "r06").as(kindD))
	runRJCase(t, regularCase{
		name: "compaction", cfg: regularCfg(JoinInner, true), input: input,
		// Compaction happens within one batch (a write-back re-encodes without tombstones): mostly large batches.
		shapes: []optest.Shape{{Batch: 0}, {Batch: 0, Pebble: true, Restore: "every"}, {Batch: 0, Restore: "every", Cache: 1},
			{Batch: 3, Restore: "mid"}, {Batch: 1, Cache: 1}},
		want: []string{"+I 1|r00|1|10", "+I 1|r06|1|10", "+I 1|r12|1|10", "+I 1|r18|1|10", "+I 1|r24|1|10", "-D 1|r06|1|10"},
	})
}

// numCfg joins (k, x) with (k, b) under a residual built from the joined row's columns (k, x, k, b).
func numCfg(t *testing.T, typ JoinType, mode expr.ErrorMode, residual func(x, b expr.Expr) (expr.Expr, error)) RegularJoinConfig {
	t.Helper()
	r, err := residual(expr.Column(1, "x", arrow.PrimitiveTypes.Int64), expr.Column(3, "b", arrow.PrimitiveTypes.Int64))
	if err != nil {
		t.Fatal(err)
	}
	return RegularJoinConfig{
		JoinSpec: JoinSpec{Type: typ, Left: numLeft, Right: regularRight, LeftKeys: []int{0}, RightKeys: []int{0},
			Residual: r, Mode: mode},
		LeftUpdating: true, RightUpdating: true,
	}
}

func TestRegularJoinResidual(t *testing.T) {
	less := func(x, b expr.Expr) (expr.Expr, error) { return expr.Call("<", x, b) }
	runRJCase(t, regularCase{
		name: "left outer x < b", cfg: numCfg(t, JoinLeft, expr.ErrorsNull, less),
		input: []any{
			leftRow(1, 5), rightRow(1, 3), rightRow(1, 7), leftRow(1, 10), leftRow(1, 1),
			rightRow(1, 7).as(kindD),
			leftRow(1, nil), rightRow(1, nil), leftRow(1, nil).as(kindD),
		},
		want: []string{
			"+I 1|5|NULL|NULL",
			"-D 1|5|NULL|NULL", "+I 1|5|1|7", // 3 does not match 5
			"+I 1|10|NULL|NULL",
			"+I 1|1|1|3", "+I 1|1|1|7",
			"-D 1|5|1|7", "+I 1|5|NULL|NULL", "-D 1|1|1|7",
			"+I 1|NULL|NULL|NULL", // NULL < b is not TRUE
			"-D 1|NULL|NULL|NULL",
		},
	})
	div := func(x, b expr.Expr) (expr.Expr, error) {
		q, err := expr.Call("/", x, b)
		if err != nil {
			return nil, err
		}
		return expr.Call(">", q, expr.Int64(0))
	}
	runRJCase(t, regularCase{
		name: "bad values are NULL and counted", cfg: numCfg(t, JoinInner, expr.ErrorsNull, div),
		input:  []any{rightRow(1, 0), rightRow(1, 2), leftRow(1, 4), leftRow(1, 6), rightRow(1, 0).as(kindD)},
		want:   []string{"+I 1|4|1|2", "+I 1|6|1|2"},
		errors: 4, // 4/0 and 6/0, then again when 0 is retracted
	})
	runRJCase(t, regularCase{
		name: "bad values fail", cfg: numCfg(t, JoinInner, expr.ErrorsFail, div),
		input:   []any{rightRow(1, 0), leftRow(1, 4)},
		wantErr: sqlerr.DivisionByZero,
	})
}

// TTL: rows expire TTL after their side last wrote their key; expired rows are forgotten without output, and the
// association counts they leave behind keep the changelog valid.
func TestRegularJoinTTL(t *testing.T) {
	inner := regularCfg(JoinInner, true)
	inner.TTL = 100
	runRJCase(t, regularCase{
		name: "inner", cfg: inner,
		input: []any{
			clockTick(0), leftRow(1, "a"), leftRow(2, "b"),
			clockTick(50), rightRow(1, 10),
			clockTick(99), rightRow(2, 20), // b was written at 0: still alive at 99
			clockTick(120), rightRow(1, 12), // a expired at 100: no match; the right rows of key 1 are refreshed
			clockTick(200), rightRow(1, 11),
			clockTick(210), leftRow(1, "a").as(kindD), // not in state any more: counted, no output
			clockTick(220), rightRow(1, 10).as(kindD), // alive (key 1's right rows were written at 200); its pair with a is forgotten
			leftRow(1, "c"),
		},
		want:   []string{"+I 1|a|1|10", "+I 2|b|2|20", "+I 1|c|1|12", "+I 1|c|1|11"},
		errors: 1,
	})
	left := regularCfg(JoinLeft, true)
	left.TTL = 100
	runRJCase(t, regularCase{
		name: "left outer keeps stale associations", cfg: left,
		input: []any{
			clockTick(0), leftRow(1, "a"),
			clockTick(10), rightRow(1, 10),
			clockTick(60), leftRow(1, "z"), // refreshes the left rows of key 1
			clockTick(150), leftRow(1, "a"), // 10 expired at 110; a's count says it is paired: no padded copy
			clockTick(155), leftRow(1, "a").as(kindD), leftRow(1, "a").as(kindD),
			clockTick(300), leftRow(1, "z").as(kindD), // z expired: counted
			leftRow(1, "y"), // a fresh row of an expired key is padded again
		},
		want: []string{
			"+I 1|a|NULL|NULL",
			"-D 1|a|NULL|NULL", "+I 1|a|1|10",
			"+I 1|z|1|10",
			"+I 1|y|NULL|NULL",
		},
		errors: 1,
	})
}

// The TTL index sweep removes the state of a key nobody touches again; before the deadline it is kept.
func TestRegularJoinTTLSweepRemovesState(t *testing.T) {
	t.Setenv("CLINK_STATE_FSYNC", "0")
	for _, pebble := range []bool{false, true} {
		cfg := regularCfg(JoinFull, true)
		cfg.TTL = 1000
		h := newRJHarness(t, cfg, pebble, 0)
		if err := h.Open("", 0); err != nil {
			t.Fatal(err)
		}
		key := rowcodec.AppendIntKey(nil, 7, false)
		kg := state.KeyGroupOf(state.CombineHash(0, state.MixInt64(7)), state.DefaultKeyGroups)
		left := state.KeyedKey(kg, leftStateID, key)
		right := state.KeyedKey(kg, rightStateID, key)
		present := func(k []byte) bool {
			_, ok, err := h.Backend.Get(k)
			if err != nil {
				t.Fatal(err)
			}
			return ok
		}
		indexEntries := func() int {
			n := 0
			if err := h.Backend.Scan(state.KeyedKey(kg, ttlStateID, nil), func(_, _ []byte) error { n++; return nil }); err != nil {
				t.Fatal(err)
			}
			return n
		}
		step := func(clock int64, r sideRow) {
			t.Helper()
			if err := h.process(regularBatch{side: r.side, rows: []sideRow{r}, clock: &clock}); err != nil {
				t.Fatal(err)
			}
		}
		step(0, leftRow(7, "a"))
		step(500, rightRow(7, 1))
		if err := h.Barrier(false); err != nil {
			t.Fatal(err)
		}
		if !present(left) || !present(right) || indexEntries() != 2 {
			t.Fatalf("pebble=%v: state before the deadline: left %v right %v, %d index entries", pebble, present(left), present(right), indexEntries())
		}
		h.clock = 1100 // the left rows expired (deadline 1000, index bucket 1054), the right ones not (1500, 1550)
		if err := h.Barrier(true); err != nil {
			t.Fatal(err)
		}
		if present(left) || !present(right) || indexEntries() != 1 {
			t.Fatalf("pebble=%v: after the left deadline: left %v right %v, %d index entries", pebble, present(left), present(right), indexEntries())
		}
		h.clock = 1600
		if err := h.Barrier(true); err != nil {
			t.Fatal(err)
		}
		if present(left) || present(right) || indexEntries() != 0 {
			t.Fatalf("pebble=%v: after both deadlines: left %v right %v, %d index entries", pebble, present(left), present(right), indexEntries())
		}
		if err := h.Close(); err != nil {
			t.Fatal(err)
		}
		// Nothing is emitted for expired rows: only the pairing at 500.
		if want := []string{"+I 7|a|NULL|NULL", "-D 7|a|NULL|NULL", "+I 7|a|7|1"}; !slices.Equal(h.Rows, want) {
			t.Fatalf("changelog %q, want %q", h.Rows, want)
		}
	}
}

func TestRegularJoinConfigErrors(t *testing.T) {
	dur := arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int64}, {Name: "d", Type: arrow.FixedWidthTypes.Duration_us}}, nil)
	f32 := arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int32}}, nil)
	notBool, _ := expr.Call("+", expr.Column(1, "b", arrow.PrimitiveTypes.Int64), expr.Int64(1))
	for _, tc := range []struct {
		name string
		mod  func(*RegularJoinConfig)
		code string
	}{
		{"key out of range", func(c *RegularJoinConfig) { c.LeftKeys = []int{2} }, sqlerr.InternalError},
		{"key count", func(c *RegularJoinConfig) { c.RightKeys = []int{0, 1} }, sqlerr.InternalError},
		{"no keys", func(c *RegularJoinConfig) { c.LeftKeys, c.RightKeys = nil, nil }, sqlerr.InternalError},
		{"key types differ", func(c *RegularJoinConfig) { c.RightKeys = []int{1}; c.LeftKeys = []int{1} }, sqlerr.DatatypeMismatch},
		{"key types differ in width", func(c *RegularJoinConfig) { c.Right = f32 }, sqlerr.DatatypeMismatch},
		{"unhashable key", func(c *RegularJoinConfig) { c.Left, c.Right, c.LeftKeys, c.RightKeys = dur, dur, []int{1}, []int{1} }, sqlerr.FeatureNotSupported},
		{"column without a state encoding", func(c *RegularJoinConfig) { c.Right = dur }, sqlerr.FeatureNotSupported},
		{"residual not boolean", func(c *RegularJoinConfig) { c.Residual = notBool }, sqlerr.DatatypeMismatch},
		{"residual column out of range", func(c *RegularJoinConfig) {
			c.Residual = expr.Column(4, "x", arrow.FixedWidthTypes.Boolean)
		}, sqlerr.InternalError},
		{"negative TTL", func(c *RegularJoinConfig) { c.TTL = -1 }, sqlerr.InternalError},
		{"join type", func(c *RegularJoinConfig) { c.Type = 9 }, sqlerr.InternalError},
	} {
		cfg := regularCfg(JoinInner, false)
		tc.mod(&cfg)
		if _, _, err := NewJoin(cfg); sqlerr.Code(err) != tc.code {
			t.Errorf("%s: %v (SQLSTATE %q), want %s", tc.name, err, sqlerr.Code(err), tc.code)
		}
	}
	if _, s, err := NewJoin(regularCfg(JoinLeft, false)); err != nil || s.NumFields() != 4 || !s.Field(0).Nullable {
		t.Fatalf("valid config: schema %v, %v", s, err)
	}
}

// A row of a key group the subtask does not own is a routing bug.
func TestRegularJoinRoutingBug(t *testing.T) {
	f, _, err := NewJoin(regularCfg(JoinInner, false))
	optest.Must(t, err)
	optest.CheckForeignKeyGroup(t, f, 0, regularLeft, []int{0}, []any{1, "a"}, []any{2, "a"}, []any{3, "a"})
}

// ---- randomized: consolidated output against a model, changelog validity, restores ----

// randomRow is a row of either side of the random test: (k BIGINT, s TEXT, v BIGINT), all nullable, small
// domains so keys collide and rows repeat.
type randomRow struct {
	k *int
	s *string
	v *int
}

func (r randomRow) vals() []any {
	out := make([]any, 3)
	if r.k != nil {
		out[0] = *r.k
	}
	if r.s != nil {
		out[1] = *r.s
	}
	if r.v != nil {
		out[2] = *r.v
	}
	return out
}

func (r randomRow) text() string {
	n := func(p *int) string {
		if p == nil {
			return "NULL"
		}
		return fmt.Sprint(*p)
	}
	s := "NULL"
	if r.s != nil {
		s = *r.s
	}
	return n(r.k) + "|" + s + "|" + n(r.v)
}

// regularModel is the join of the two input multisets: what the consolidated changelog must equal.
func regularModel(typ JoinType, twoKeys, residual bool, left, right []randomRow) map[string]int {
	match := func(l, r randomRow) bool {
		if l.k == nil || r.k == nil || *l.k != *r.k {
			return false
		}
		if twoKeys && (l.s == nil || r.s == nil || *l.s != *r.s) {
			return false
		}
		return !residual || (l.v != nil && r.v != nil && *l.v <= *r.v)
	}
	out := map[string]int{}
	for _, l := range left {
		n := 0
		for _, r := range right {
			if match(l, r) {
				if typ < JoinSemi {
					out[l.text()+"|"+r.text()]++
				}
				n++
			}
		}
		if (n > 0 && typ == JoinSemi) || (n == 0 && typ == JoinAnti) {
			out[l.text()+"|NULL|NULL|NULL"]++
		}
		if n == 0 && (typ == JoinLeft || typ == JoinFull) {
			out[l.text()+"|NULL|NULL|NULL"]++
		}
	}
	if typ == JoinRight || typ == JoinFull {
		for _, r := range right {
			n := 0
			for _, l := range left {
				if match(l, r) {
					n++
				}
			}
			if n == 0 {
				out["NULL|NULL|NULL|"+r.text()]++
			}
		}
	}
	return out
}

func TestRegularJoinRandomized(t *testing.T) { testRegularRandomized(t, false) }

// TestRegularJoinStaticRandomized is the randomized test with both inputs append-only, so at least one side is
// static (its rows kept in chunks): chunks appended at every barrier, rewritten as one when a probed key reaches
// maxChunks, dropped from memory when not probed, and restored mid-stream.
func TestRegularJoinStaticRandomized(t *testing.T) { testRegularRandomized(t, true) }

// TestRegularJoinEpochWrap is the static randomized test with the batch epochs wrapping around early on: every
// entry's probe epoch is reset, which must change nothing in the output.
func TestRegularJoinEpochWrap(t *testing.T) {
	firstEpoch = math.MaxUint32 - 5
	t.Cleanup(func() { firstEpoch = 0 })
	testRegularRandomized(t, true)
}

func testRegularRandomized(t *testing.T, static bool) {
	t.Setenv("CLINK_STATE_FSYNC", "0")
	defaultChunk := chunkRows
	t.Cleanup(func() { chunkRows = defaultChunk })
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "v", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	}, nil)
	seeds := 40
	if testing.Short() {
		seeds = 16
	}
	for seed := range uint64(seeds) {
		rng := rand.New(rand.NewPCG(seed, 7))
		// Odd seeds: one hot key with many distinct rows (the slot index and tombstone compaction).
		keys, vals := 4, 4
		if seed%2 == 1 {
			keys, vals = 1, 40
		}
		typ := JoinType(rng.IntN(6)) // inner, the outer joins, semi and anti
		residual := rng.IntN(2) == 0
		keyCols := []int{0} // one integer key: found by value
		twoKeys := seed%4 >= 2
		if twoKeys {
			keyCols = []int{0, 1} // found by canonical bytes
		}
		appendOnly := [2]bool{rng.IntN(4) == 0, rng.IntN(4) == 0}
		if static {
			appendOnly = [2]bool{true, true}
			typ = []JoinType{JoinInner, JoinLeft, JoinRight, JoinSemi, JoinAnti}[seed%5]
		}
		cfg := RegularJoinConfig{
			JoinSpec:     JoinSpec{Type: typ, Left: schema, Right: schema, LeftKeys: keyCols, RightKeys: keyCols},
			LeftUpdating: !appendOnly[0], RightUpdating: !appendOnly[1],
		}
		if residual {
			r, err := expr.Call("<=", expr.Column(2, "v", arrow.PrimitiveTypes.Int64), expr.Column(5, "v", arrow.PrimitiveTypes.Int64))
			if err != nil {
				t.Fatal(err)
			}
			cfg.Residual = r
		}
		// A valid input changelog: retract only rows present; updates as -U/+U pairs.
		var present [2][]randomRow
		var batches []regularBatch
		var steps [][2][]randomRow // the input multisets after each batch
		randRow := func() randomRow {
			var r randomRow
			if rng.IntN(8) != 0 {
				k := rng.IntN(keys)
				r.k = &k
			}
			if rng.IntN(8) != 0 {
				v := rng.IntN(vals)
				r.v = &v
			}
			if rng.IntN(8) != 0 {
				s := []string{"x", "y"}[rng.IntN(2)]
				r.s = &s
			}
			return r
		}
		for range 20 + rng.IntN(60) {
			side := rng.IntN(2)
			bt := regularBatch{side: side}
			for range 1 + rng.IntN(6) {
				p := &present[side]
				switch op := rng.IntN(10); {
				case op < 3 && len(*p) > 0 && !appendOnly[side]:
					i := rng.IntN(len(*p))
					old := (*p)[i]
					*p = slices.Delete(*p, i, i+1)
					if rng.IntN(2) == 0 {
						bt.rows = append(bt.rows, sideRow{side: side, kind: kindD, vals: old.vals()})
					} else {
						nw := randRow()
						*p = append(*p, nw)
						bt.rows = append(bt.rows, sideRow{side: side, kind: kindB, vals: old.vals()},
							sideRow{side: side, kind: kindA, vals: nw.vals()})
					}
				case op < 5 && len(*p) > 0:
					dup := (*p)[rng.IntN(len(*p))] // a duplicate of a present row
					*p = append(*p, dup)
					bt.rows = append(bt.rows, sideRow{side: side, vals: dup.vals()})
				default:
					r := randRow()
					*p = append(*p, r)
					bt.rows = append(bt.rows, sideRow{side: side, vals: r.vals()})
				}
			}
			batches = append(batches, bt)
			steps = append(steps, [2][]randomRow{slices.Clone(present[0]), slices.Clone(present[1])})
		}
		name := fmt.Sprintf("seed=%d/%s/keys=%v/residual=%v/appendOnly=%v", seed, typ, keyCols, residual, appendOnly)

		// Reference: no restore, everything in the working set.
		ref, errs, err := runRegular(t, cfg, batches, false, 0, func(int) bool { return false })
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if errs != 0 {
			t.Fatalf("%s: %d errors counted on a valid input", name, errs)
		}
		if bad := invalidRows(ref); bad != "" {
			t.Fatalf("%s: %s", name, bad)
		}
		// The consolidated result after every batch equals the model of the inputs so far.
		outAt := outputPerBatch(t, cfg, batches)
		for i := range batches {
			got, bad := consolidateLog(outAt[i])
			if bad != "" {
				t.Fatalf("%s: after batch %d: %s", name, i, bad)
			}
			if want := regularModel(typ, twoKeys, residual, steps[i][0], steps[i][1]); !sameMultiset(got, want) {
				t.Fatalf("%s: after batch %d: consolidated\n got  %v\n want %v", name, i, got, want)
			}
		}
		// Restores at random barriers, Pebble or memory, a working set evicted at random, output and residual
		// evaluation cut into batches of 3 rows: the same changelog.
		restoreRng := rand.New(rand.NewPCG(seed, 99))
		cache := []int64{0, 1, 200, 3000}[restoreRng.IntN(4)]
		chunkRows = 3
		got, _, err := runRegular(t, cfg, batches, restoreRng.IntN(2) == 0, cache, func(int) bool { return restoreRng.IntN(3) == 0 })
		chunkRows = defaultChunk
		if err != nil {
			t.Fatalf("%s: with restores: %v", name, err)
		}
		if i := firstDiff(got, ref); i >= 0 {
			t.Fatalf("%s: with restores (cache %d) the changelog differs at line %d of %d/%d:\n got  %q\n want %q",
				name, cache, i, len(got), len(ref), got[i:min(i+8, len(got))], ref[i:min(i+8, len(ref))])
		}
	}
}

// outputPerBatch runs batches one by one and returns the changelog emitted up to and including each batch.
func outputPerBatch(t *testing.T, cfg RegularJoinConfig, batches []regularBatch) [][]string {
	t.Helper()
	h := newRJHarness(t, cfg, false, 0)
	if err := h.Open("", 0); err != nil {
		t.Fatal(err)
	}
	out := make([][]string, len(batches))
	for i, bt := range batches {
		if err := h.process(bt); err != nil {
			t.Fatal(err)
		}
		out[i] = slices.Clone(h.Rows)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	return out
}

// firstDiff returns the first index where a and b differ, -1 if they are equal.
func firstDiff(a, b []string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	if len(a) != len(b) {
		return min(len(a), len(b))
	}
	return -1
}

func sameMultiset(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, n := range a {
		if b[k] != n {
			return false
		}
	}
	return true
}

// TestRegularJoinTTLStaticChunks: a static side's expired key loses its head and every chunk, through the working
// set (no restore) or through the sweep's backend path (restored, nothing in memory), and a row added after the
// expiry starts the key's chunks over.
func TestRegularJoinTTLStaticChunks(t *testing.T) {
	t.Setenv("CLINK_STATE_FSYNC", "0")
	for _, restore := range []bool{false, true} {
		for _, pebble := range []bool{false, true} {
			cfg := regularCfg(JoinInner, false)
			cfg.TTL = 1000
			h := newRJHarness(t, cfg, pebble, 0)
			if err := h.Open("", 0); err != nil {
				t.Fatal(err)
			}
			kg := state.KeyGroupOf(state.CombineHash(0, state.MixInt64(7)), state.DefaultKeyGroups)
			count := func(id byte) int {
				n := 0
				if err := h.Backend.Scan(state.KeyedKey(kg, id, nil), func(_, _ []byte) error { n++; return nil }); err != nil {
					t.Fatal(err)
				}
				return n
			}
			check := func(what string, heads, leftChunks, rightChunks int) {
				t.Helper()
				if got := [3]int{count(leftStateID) + count(rightStateID), count(chunkStateID), count(chunkStateID + 1)}; got != [3]int{heads, leftChunks, rightChunks} {
					t.Fatalf("restore=%v pebble=%v %s: heads, left chunks, right chunks %v, want %v", restore, pebble, what, got, [3]int{heads, leftChunks, rightChunks})
				}
			}
			step := func(clock int64, r sideRow) {
				t.Helper()
				if err := h.process(regularBatch{side: r.side, rows: []sideRow{r}, clock: &clock}); err != nil {
					t.Fatal(err)
				}
			}
			barrier := func(clock int64) {
				t.Helper()
				h.clock = clock
				if err := h.Barrier(restore); err != nil {
					t.Fatal(err)
				}
			}
			step(0, leftRow(7, "a"))
			barrier(0)
			step(100, leftRow(7, "b"))
			barrier(100)
			check("two left chunks", 1, 2, 0)
			step(500, rightRow(7, 1))
			barrier(500)
			check("a right row", 2, 2, 1)
			barrier(1200) // the left rows expired (last write 100), the right row not (500)
			check("the left side expired", 1, 0, 1)
			step(1250, leftRow(7, "c"))
			barrier(1250)
			check("a left row again", 2, 1, 1)
			barrier(1700) // the right row expired
			check("the right side expired", 1, 1, 0)
			if err := h.Close(); err != nil {
				t.Fatal(err)
			}
			if want := []string{"+I 7|a|7|1", "+I 7|b|7|1", "+I 7|c|7|1"}; !slices.Equal(h.Rows, want) {
				t.Fatalf("restore=%v pebble=%v: changelog %q, want %q", restore, pebble, h.Rows, want)
			}
		}
	}
}

// TestRegularJoinStaticRestoresOneValueFormat: a static side restored from values in the one-value format (as
// written before static sides kept chunks: here by the same join with updating inputs, whose inner values have
// the same format) reads them, keeps adding rows to them, and gives the changelog a static join gives from the
// start.
func TestRegularJoinStaticRestoresOneValueFormat(t *testing.T) {
	t.Setenv("CLINK_STATE_FSYNC", "0")
	var first, second []regularBatch
	n := 0
	for b := range 12 {
		bt := regularBatch{side: b % 2}
		for r := range 5 {
			k := (b*5 + r) % 3
			n++
			if bt.side == 0 {
				bt.rows = append(bt.rows, leftRow(k, "a"+strconv.Itoa(n)))
			} else {
				bt.rows = append(bt.rows, rightRow(k, n))
			}
		}
		if b < 6 {
			first = append(first, bt)
		} else {
			second = append(second, bt)
		}
	}
	static := regularCfg(JoinInner, false)
	want, _, err := runRegular(t, static, append(slices.Clone(first), second...), false, 0, func(int) bool { return false })
	if err != nil {
		t.Fatal(err)
	}
	for _, cache := range []int64{0, 1} {
		old := newRJHarness(t, regularCfg(JoinInner, true), false, cache)
		if err := old.Open("", 0); err != nil {
			t.Fatal(err)
		}
		for _, bt := range first {
			if err := old.process(bt); err != nil {
				t.Fatal(err)
			}
		}
		if err := old.Op.OnBarrier(1); err != nil {
			t.Fatal(err)
		}
		snap, err := old.Backend.Capture(1)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "chk-1")
		if err := snap.Persist(path); err != nil {
			t.Fatal(err)
		}
		if err := old.Close(); err != nil {
			t.Fatal(err)
		}
		h := newRJHarness(t, static, false, cache)
		if err := h.Open(path, 1); err != nil {
			t.Fatal(err)
		}
		for i, bt := range second {
			if err := h.process(bt); err != nil {
				t.Fatal(err)
			}
			if err := h.Barrier(i%2 == 1); err != nil {
				t.Fatal(err)
			}
		}
		if err := h.Close(); err != nil {
			t.Fatal(err)
		}
		if got := append(slices.Clone(old.Rows), h.Rows...); !slices.Equal(got, want) {
			t.Fatalf("cache %d: changelog\n got  %q\n want %q", cache, got, want)
		}
	}
}
