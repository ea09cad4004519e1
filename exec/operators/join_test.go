package operators

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/exec/expr"
	"github.com/clinksql/clinksql/exec/rowcodec"
	"github.com/clinksql/clinksql/sqlerr"
	"github.com/clinksql/clinksql/state"
)

// The regular join's tests drive the operator directly with a two-input harness (rjHarness): the input is a
// sequence of rows of either side with their kinds, cut into batches (a batch never mixes sides), with a barrier
// after every batch but the last and, depending on the shape, a restore from the persisted snapshot. Every shape
// must give the same changelog: the operator's output depends on row order only, not on batching, backend,
// restores or how much of its working set it kept in memory.

// Schemas of the hand-derived cases: left (k BIGINT, a TEXT), right (k BIGINT, b BIGINT).
var (
	rjLeft  = nullableSchema("k", arrow.PrimitiveTypes.Int64, "a", arrow.BinaryTypes.String)
	rjRight = nullableSchema("k", arrow.PrimitiveTypes.Int64, "b", arrow.PrimitiveTypes.Int64)
	// rjNumLeft is (k BIGINT, x BIGINT), for residuals comparing the sides.
	rjNumLeft = nullableSchema("k", arrow.PrimitiveTypes.Int64, "x", arrow.PrimitiveTypes.Int64)
)

// rjIn is one input row: side 0 (left) or 1 (right), its kind and its values (appendGoValue's Go values).
type rjIn struct {
	side int
	kind exec.RowKind
	vals []any
}

func rjL(vals ...any) rjIn { return rjIn{side: 0, vals: vals} }
func rjR(vals ...any) rjIn { return rjIn{side: 1, vals: vals} }

// as returns the row with another kind.
func (r rjIn) as(k exec.RowKind) rjIn { r.kind = k; return r }

// rjTick sets the harness clock (µs) before the next batch; it ends a batch.
type rjTick int64

// rjBatch is one call of Process.
type rjBatch struct {
	side  int
	rows  []rjIn
	clock *int64 // set the clock first
}

// opBatch is the batch as a run step.
func (bt rjBatch) opBatch() opBatch {
	b := opBatch{in: bt.side, rows: make([][]any, len(bt.rows)), kinds: make([]exec.RowKind, len(bt.rows))}
	for i, r := range bt.rows {
		b.rows[i], b.kinds[i] = r.vals, r.kind
	}
	b.kinds = changelogKinds(b.kinds)
	return b
}

// rjCut cuts an input of rjIn and rjTick items into batches of at most size rows (0: unbounded).
func rjCut(input []any, size int) []rjBatch {
	var out []rjBatch
	var cur *rjBatch
	var tick *int64
	for _, it := range input {
		switch v := it.(type) {
		case rjTick:
			t := int64(v)
			tick, cur = &t, nil
		case rjIn:
			if cur == nil || cur.side != v.side || (size > 0 && len(cur.rows) == size) {
				out = append(out, rjBatch{side: v.side, clock: tick})
				cur, tick = &out[len(out)-1], nil
			}
			cur.rows = append(cur.rows, v)
		default:
			panic(fmt.Sprintf("rj harness: input item %T", it))
		}
	}
	return out
}

// rjShapes are the shapes of the regular join's runs: opShapes with and without a working set (cache 1).
func rjShapes() []opShape {
	if testing.Short() { // a cross-section: every batching, backend, restore and cache setting at least twice
		return []opShape{
			{batch: 1}, {batch: 3, cache: 1}, {batch: 0},
			{batch: 1, restore: "every"}, {batch: 1, restore: "every", cache: 1}, {batch: 3, restore: "mid"},
			{batch: 0, restore: "mid", cache: 1},
			{batch: 1, pebble: true, restore: "every", cache: 1}, {batch: 3, pebble: true, restore: "every"},
			{batch: 0, pebble: true, restore: "mid"},
		}
	}
	var out []opShape
	for _, sh := range opShapes() {
		for _, c := range []int64{0, 1} {
			sh.cache = c
			out = append(out, sh)
		}
	}
	return out
}

// rjHarness is a regular join under test: the operator harness, emitting changelog lines ("+I 1|a|1|10") of the
// join's output schema, and the clock the join's TTL reads.
type rjHarness struct {
	*opHarness
	clock int64
}

func newRJHarness(t testing.TB, cfg RegularJoinConfig, pebble bool, cache int64) *rjHarness {
	t.Helper()
	h := &rjHarness{}
	cfg.Now = func() time.Time { return time.UnixMicro(h.clock) }
	cfg.CacheBytes = cache
	f, _, err := NewJoin(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h.opHarness = newOpHarness(t, f, pebble, cfg.Left, cfg.Right)
	h.out, h.changelog = JoinOutputSchema(cfg.Left, cfg.Right), true
	return h
}

// process runs one batch, setting the clock first when it says so.
func (h *rjHarness) process(bt rjBatch) error {
	if bt.clock != nil {
		h.clock = *bt.clock
	}
	b := bt.opBatch()
	return h.opHarness.process(b.in, b.rows, b.kinds)
}

// steps turns batches into run steps.
func (h *rjHarness) steps(batches []rjBatch) []any {
	var steps []any
	for _, bt := range batches {
		if bt.clock != nil {
			clock := *bt.clock
			steps = append(steps, opDo(func(*opHarness) error { h.clock = clock; return nil }))
		}
		steps = append(steps, bt.opBatch())
	}
	return steps
}

// rjRun runs batches with a barrier after each but the last; restoreAt(i) says whether barrier i restores.
func rjRun(t testing.TB, cfg RegularJoinConfig, batches []rjBatch, pebble bool, cache int64, restoreAt func(i int) bool) ([]string, int64, error) {
	t.Helper()
	h := newRJHarness(t, cfg, pebble, cache)
	err := h.run(h.steps(batches), func(i, _ int) (bool, bool) { return true, restoreAt(i) }, nil)
	err = errors.Join(err, h.close())
	return h.rows, h.errs.Load(), err
}

// rjCase is a hand-derived test: an input and its exact changelog.
type rjCase struct {
	name    string
	cfg     RegularJoinConfig
	input   []any
	want    []string
	errors  int64
	wantErr string    // SQLSTATE or substring
	shapes  []opShape // nil: rjShapes()
}

func runRJCase(t *testing.T, c rjCase) {
	t.Helper()
	shapes := c.shapes
	if shapes == nil {
		shapes = rjShapes()
	}
	runShapes(t, c.name, shapes, func(t *testing.T, sh opShape) {
		h := newRJHarness(t, c.cfg, sh.pebble, sh.cache)
		err := errors.Join(h.run(h.steps(rjCut(c.input, sh.batch)), sh.barrier, nil), h.close())
		got, errs := h.rows, h.errs.Load()
		if checkRunErr(t, sh, err, c.wantErr, got) {
			return
		}
		if !slices.Equal(got, c.want) {
			t.Fatalf("%s: changelog\n got  %q\n want %q", sh, got, c.want)
		}
		if errs != c.errors {
			t.Fatalf("%s: %d errors counted, want %d", sh, errs, c.errors)
		}
		if bad := rjInvalid(got); bad != "" {
			t.Fatalf("%s: invalid changelog: %s", sh, bad)
		}
	})
}

// rjInvalid applies a changelog to a multiset and describes the first retraction of a row that is not there.
func rjInvalid(log []string) string {
	_, bad := rjConsolidate(log)
	return bad
}

func rjConsolidate(log []string) (map[string]int, string) {
	set := map[string]int{}
	if err := foldChangelog(set, log); err != nil {
		return set, err.Error()
	}
	return set, ""
}

func rjCfg(typ JoinType, upd bool) RegularJoinConfig {
	return RegularJoinConfig{
		JoinSpec:     JoinSpec{Type: typ, Left: rjLeft, Right: rjRight, LeftKeys: []int{0}, RightKeys: []int{0}},
		LeftUpdating: upd, RightUpdating: upd,
	}
}

const (
	rjD = exec.Delete
	rjB = exec.UpdateBefore
	rjA = exec.UpdateAfter
)

func TestRegularJoinInner(t *testing.T) {
	runRJCase(t, rjCase{
		name: "append-only", cfg: rjCfg(JoinInner, false),
		input: []any{rjL(1, "a"), rjR(1, 10), rjR(2, 20), rjL(2, "b"), rjL(1, "c"), rjR(1, 11), rjR(3, 30), rjL(4, "d")},
		want: []string{
			"+I 1|a|1|10",
			"+I 2|b|2|20",
			"+I 1|c|1|10",
			"+I 1|a|1|11", "+I 1|c|1|11", // pairs in the order the left rows were stored
		},
	})
	runRJCase(t, rjCase{
		name: "right first", cfg: rjCfg(JoinInner, false),
		input: []any{rjR(1, 10), rjR(1, 11), rjR(2, 20), rjL(1, "a"), rjL(2, "b"), rjL(1, "c")},
		want:  []string{"+I 1|a|1|10", "+I 1|a|1|11", "+I 2|b|2|20", "+I 1|c|1|10", "+I 1|c|1|11"},
	})
	runRJCase(t, rjCase{
		name: "retractions and updates", cfg: rjCfg(JoinInner, true),
		input: []any{
			rjL(1, "a"), rjR(1, 10), rjR(1, 11),
			rjR(1, 10).as(rjB), rjR(1, 12).as(rjA), // update the right row 10 -> 12
			rjL(1, "a").as(rjD),
			rjL(1, "b"),
			rjR(1, 11).as(rjD),
		},
		want: []string{
			"+I 1|a|1|10", "+I 1|a|1|11",
			"-D 1|a|1|10", "+I 1|a|1|12",
			"-D 1|a|1|11", "-D 1|a|1|12",
			"+I 1|b|1|11", "+I 1|b|1|12", // 11 was stored before 12
			"-D 1|b|1|11",
		},
	})
	runRJCase(t, rjCase{
		name: "duplicates", cfg: rjCfg(JoinInner, true),
		input: []any{rjL(1, "a"), rjL(1, "a"), rjR(1, 10), rjL(1, "a").as(rjD), rjR(1, 10), rjL(1, "a").as(rjD), rjR(1, 10).as(rjD)},
		want: []string{
			"+I 1|a|1|10", "+I 1|a|1|10", // two copies of a
			"-D 1|a|1|10",
			"+I 1|a|1|10",                // one a left, a second 10
			"-D 1|a|1|10", "-D 1|a|1|10", // the last a leaves both copies of 10
		},
	})
	runRJCase(t, rjCase{
		name: "a key emptied and refilled", cfg: rjCfg(JoinInner, true),
		input: []any{rjL(1, "a"), rjL(1, "a").as(rjD), rjL(1, "b"), rjR(1, 10), rjL(1, "b").as(rjD), rjL(1, "c"), rjR(1, 11)},
		want:  []string{"+I 1|b|1|10", "-D 1|b|1|10", "+I 1|c|1|10", "+I 1|c|1|11"},
	})
	runRJCase(t, rjCase{
		name: "NULL keys never match", cfg: rjCfg(JoinInner, true),
		input: []any{rjL(nil, "a"), rjR(nil, 10), rjL(nil, "a").as(rjD), rjR(1, 10), rjL(1, nil)},
		want:  []string{"+I 1|NULL|1|10"},
	})
	runRJCase(t, rjCase{
		name: "retracting a row not in state is counted", cfg: rjCfg(JoinInner, true),
		input:  []any{rjR(1, 10), rjL(1, "x").as(rjD), rjL(1, "a"), rjR(1, 11).as(rjD), rjL(1, "a").as(rjB), rjL(1, "b").as(rjA)},
		want:   []string{"+I 1|a|1|10", "-D 1|a|1|10", "+I 1|b|1|10"},
		errors: 2,
	})
	runRJCase(t, rjCase{
		name: "append-only input rejects a retraction", cfg: rjCfg(JoinInner, false),
		input:   []any{rjL(1, "a"), rjR(1, 10).as(rjD)},
		wantErr: "append-only",
	})
}

func TestRegularJoinLeft(t *testing.T) {
	runRJCase(t, rjCase{
		name: "padding flips", cfg: rjCfg(JoinLeft, true),
		input: []any{
			rjL(1, "a"), rjL(2, "b"),
			rjR(1, 10), rjR(1, 11), rjR(3, 30),
			rjR(1, 10).as(rjD), rjR(1, 11).as(rjD),
			rjL(1, "a").as(rjD), rjL(2, "b").as(rjD), rjR(3, 30).as(rjD),
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
	runRJCase(t, rjCase{
		name: "matched left row retracted", cfg: rjCfg(JoinLeft, true),
		input: []any{rjR(1, 10), rjL(1, "a"), rjL(1, "a").as(rjB), rjL(1, "b").as(rjA), rjR(1, 10).as(rjD), rjL(1, "b").as(rjD)},
		want: []string{
			"+I 1|a|1|10",
			"-D 1|a|1|10", "+I 1|b|1|10",
			"-D 1|b|1|10", "+I 1|b|NULL|NULL",
			"-D 1|b|NULL|NULL",
		},
	})
	runRJCase(t, rjCase{
		name: "NULL keys padded", cfg: rjCfg(JoinLeft, true),
		input: []any{rjL(nil, "n"), rjR(nil, 5), rjL(nil, "n").as(rjD)},
		want:  []string{"+I NULL|n|NULL|NULL", "-D NULL|n|NULL|NULL"},
	})
}

func TestRegularJoinRight(t *testing.T) {
	runRJCase(t, rjCase{
		name: "padding flips", cfg: rjCfg(JoinRight, true),
		input: []any{
			rjR(1, 10), rjL(1, "a"), rjL(1, "b"),
			rjL(1, "a").as(rjB), rjL(1, "a2").as(rjA),
			rjL(1, "b").as(rjD), rjL(1, "a2").as(rjD),
			rjL(2, "c"), rjR(1, 10).as(rjD),
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
	runRJCase(t, rjCase{
		name: "duplicates, NULL keys, flips on both sides", cfg: rjCfg(JoinFull, true),
		input: []any{
			rjL(1, "a"), rjL(1, "a"), rjR(1, 10),
			rjR(nil, 5), rjL(nil, "n"),
			rjR(1, 10).as(rjD),
			rjL(1, "a").as(rjD),
			rjR(nil, 5).as(rjD),
			rjR(2, 20), rjL(2, "b"), rjR(2, 20), rjL(2, "b").as(rjD),
			rjR(9, 99).as(rjD),
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
		input = append(input, rjL(1, fmt.Sprintf("r%02d", i)))
	}
	for i := range 30 {
		if i%6 != 0 {
			input = append(input, rjL(1, fmt.Sprintf("r%02d", i)).as(rjD))
		}
	}
	input = append(input, rjR(1, 10), rjL(1, "r06").as(rjD))
	runRJCase(t, rjCase{
		name: "compaction", cfg: rjCfg(JoinInner, true), input: input,
		// Compaction happens within one batch (a write-back re-encodes without tombstones): mostly large batches.
		shapes: []opShape{{batch: 0}, {batch: 0, pebble: true, restore: "every"}, {batch: 0, restore: "every", cache: 1},
			{batch: 3, restore: "mid"}, {batch: 1, cache: 1}},
		want: []string{"+I 1|r00|1|10", "+I 1|r06|1|10", "+I 1|r12|1|10", "+I 1|r18|1|10", "+I 1|r24|1|10", "-D 1|r06|1|10"},
	})
}

// rjNumCfg joins (k, x) with (k, b) under a residual built from the joined row's columns (k, x, k, b).
func rjNumCfg(t *testing.T, typ JoinType, mode expr.ErrorMode, residual func(x, b expr.Expr) (expr.Expr, error)) RegularJoinConfig {
	t.Helper()
	r, err := residual(expr.Column(1, "x", arrow.PrimitiveTypes.Int64), expr.Column(3, "b", arrow.PrimitiveTypes.Int64))
	if err != nil {
		t.Fatal(err)
	}
	return RegularJoinConfig{
		JoinSpec: JoinSpec{Type: typ, Left: rjNumLeft, Right: rjRight, LeftKeys: []int{0}, RightKeys: []int{0},
			Residual: r, Mode: mode},
		LeftUpdating: true, RightUpdating: true,
	}
}

func TestRegularJoinResidual(t *testing.T) {
	less := func(x, b expr.Expr) (expr.Expr, error) { return expr.Call("<", x, b) }
	runRJCase(t, rjCase{
		name: "left outer x < b", cfg: rjNumCfg(t, JoinLeft, expr.ErrorsNull, less),
		input: []any{
			rjL(1, 5), rjR(1, 3), rjR(1, 7), rjL(1, 10), rjL(1, 1),
			rjR(1, 7).as(rjD),
			rjL(1, nil), rjR(1, nil), rjL(1, nil).as(rjD),
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
	runRJCase(t, rjCase{
		name: "bad values are NULL and counted", cfg: rjNumCfg(t, JoinInner, expr.ErrorsNull, div),
		input:  []any{rjR(1, 0), rjR(1, 2), rjL(1, 4), rjL(1, 6), rjR(1, 0).as(rjD)},
		want:   []string{"+I 1|4|1|2", "+I 1|6|1|2"},
		errors: 4, // 4/0 and 6/0, then again when 0 is retracted
	})
	runRJCase(t, rjCase{
		name: "bad values fail", cfg: rjNumCfg(t, JoinInner, expr.ErrorsFail, div),
		input:   []any{rjR(1, 0), rjL(1, 4)},
		wantErr: sqlerr.DivisionByZero,
	})
}

// TTL: rows expire TTL after their side last wrote their key; expired rows are forgotten without output, and the
// association counts they leave behind keep the changelog valid.
func TestRegularJoinTTL(t *testing.T) {
	inner := rjCfg(JoinInner, true)
	inner.TTL = 100
	runRJCase(t, rjCase{
		name: "inner", cfg: inner,
		input: []any{
			rjTick(0), rjL(1, "a"), rjL(2, "b"),
			rjTick(50), rjR(1, 10),
			rjTick(99), rjR(2, 20), // b was written at 0: still alive at 99
			rjTick(120), rjR(1, 12), // a expired at 100: no match; the right rows of key 1 are refreshed
			rjTick(200), rjR(1, 11),
			rjTick(210), rjL(1, "a").as(rjD), // not in state any more: counted, no output
			rjTick(220), rjR(1, 10).as(rjD), // alive (key 1's right rows were written at 200); its pair with a is forgotten
			rjL(1, "c"),
		},
		want:   []string{"+I 1|a|1|10", "+I 2|b|2|20", "+I 1|c|1|12", "+I 1|c|1|11"},
		errors: 1,
	})
	left := rjCfg(JoinLeft, true)
	left.TTL = 100
	runRJCase(t, rjCase{
		name: "left outer keeps stale associations", cfg: left,
		input: []any{
			rjTick(0), rjL(1, "a"),
			rjTick(10), rjR(1, 10),
			rjTick(60), rjL(1, "z"), // refreshes the left rows of key 1
			rjTick(150), rjL(1, "a"), // 10 expired at 110; a's count says it is paired: no padded copy
			rjTick(155), rjL(1, "a").as(rjD), rjL(1, "a").as(rjD),
			rjTick(300), rjL(1, "z").as(rjD), // z expired: counted
			rjL(1, "y"), // a fresh row of an expired key is padded again
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
		cfg := rjCfg(JoinFull, true)
		cfg.TTL = 1000
		h := newRJHarness(t, cfg, pebble, 0)
		if err := h.open("", 0); err != nil {
			t.Fatal(err)
		}
		key := rowcodec.AppendIntKey(nil, 7, false)
		kg := state.KeyGroupOf(state.CombineHash(0, state.MixInt64(7)), state.DefaultKeyGroups)
		left := state.KeyedKey(kg, rjLeftID, key)
		right := state.KeyedKey(kg, rjRightID, key)
		present := func(k []byte) bool {
			_, ok, err := h.be.Get(k)
			if err != nil {
				t.Fatal(err)
			}
			return ok
		}
		indexEntries := func() int {
			n := 0
			if err := h.be.Scan(state.KeyedKey(kg, rjTTLID, nil), func(_, _ []byte) error { n++; return nil }); err != nil {
				t.Fatal(err)
			}
			return n
		}
		step := func(clock int64, r rjIn) {
			t.Helper()
			if err := h.process(rjBatch{side: r.side, rows: []rjIn{r}, clock: &clock}); err != nil {
				t.Fatal(err)
			}
		}
		step(0, rjL(7, "a"))
		step(500, rjR(7, 1))
		if err := h.barrier(false); err != nil {
			t.Fatal(err)
		}
		if !present(left) || !present(right) || indexEntries() != 2 {
			t.Fatalf("pebble=%v: state before the deadline: left %v right %v, %d index entries", pebble, present(left), present(right), indexEntries())
		}
		h.clock = 1100 // the left rows expired (deadline 1000, index bucket 1054), the right ones not (1500, 1550)
		if err := h.barrier(true); err != nil {
			t.Fatal(err)
		}
		if present(left) || !present(right) || indexEntries() != 1 {
			t.Fatalf("pebble=%v: after the left deadline: left %v right %v, %d index entries", pebble, present(left), present(right), indexEntries())
		}
		h.clock = 1600
		if err := h.barrier(true); err != nil {
			t.Fatal(err)
		}
		if present(left) || present(right) || indexEntries() != 0 {
			t.Fatalf("pebble=%v: after both deadlines: left %v right %v, %d index entries", pebble, present(left), present(right), indexEntries())
		}
		if err := h.close(); err != nil {
			t.Fatal(err)
		}
		// Nothing is emitted for expired rows: only the pairing at 500.
		if want := []string{"+I 7|a|NULL|NULL", "-D 7|a|NULL|NULL", "+I 7|a|7|1"}; !slices.Equal(h.rows, want) {
			t.Fatalf("changelog %q, want %q", h.rows, want)
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
		cfg := rjCfg(JoinInner, false)
		tc.mod(&cfg)
		if _, _, err := NewJoin(cfg); sqlerr.Code(err) != tc.code {
			t.Errorf("%s: %v (SQLSTATE %q), want %s", tc.name, err, sqlerr.Code(err), tc.code)
		}
	}
	if _, s, err := NewJoin(rjCfg(JoinLeft, false)); err != nil || s.NumFields() != 4 || !s.Field(0).Nullable {
		t.Fatalf("valid config: schema %v, %v", s, err)
	}
}

// A row of a key group the subtask does not own is a routing bug.
func TestRegularJoinRoutingBug(t *testing.T) {
	f, _, err := NewJoin(rjCfg(JoinInner, false))
	must(t, err)
	checkForeignKeyGroup(t, f, 0, rjLeft, []int{0}, []any{1, "a"}, []any{2, "a"}, []any{3, "a"})
}

// ---- randomized: consolidated output against a model, changelog validity, restores ----

// rjRandRow is a row of either side of the random test: (k BIGINT, s TEXT, v BIGINT), all nullable, small
// domains so keys collide and rows repeat.
type rjRandRow struct {
	k *int
	s *string
	v *int
}

func (r rjRandRow) vals() []any {
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

func (r rjRandRow) text() string {
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

// rjModel is the join of the two input multisets: what the consolidated changelog must equal.
func rjModel(typ JoinType, twoKeys, residual bool, left, right []rjRandRow) map[string]int {
	match := func(l, r rjRandRow) bool {
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
				out[l.text()+"|"+r.text()]++
				n++
			}
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

func TestRegularJoinRandomized(t *testing.T) {
	t.Setenv("CLINK_STATE_FSYNC", "0")
	defaultChunk := rjChunkRows
	t.Cleanup(func() { rjChunkRows = defaultChunk })
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
		typ := JoinType(rng.IntN(4))
		residual := rng.IntN(2) == 0
		keyCols := []int{0} // one integer key: found by value
		twoKeys := seed%4 >= 2
		if twoKeys {
			keyCols = []int{0, 1} // found by canonical bytes
		}
		appendOnly := [2]bool{rng.IntN(4) == 0, rng.IntN(4) == 0}
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
		var present [2][]rjRandRow
		var batches []rjBatch
		var steps [][2][]rjRandRow // the input multisets after each batch
		randRow := func() rjRandRow {
			var r rjRandRow
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
			bt := rjBatch{side: side}
			for range 1 + rng.IntN(6) {
				p := &present[side]
				switch op := rng.IntN(10); {
				case op < 3 && len(*p) > 0 && !appendOnly[side]:
					i := rng.IntN(len(*p))
					old := (*p)[i]
					*p = slices.Delete(*p, i, i+1)
					if rng.IntN(2) == 0 {
						bt.rows = append(bt.rows, rjIn{side: side, kind: rjD, vals: old.vals()})
					} else {
						nw := randRow()
						*p = append(*p, nw)
						bt.rows = append(bt.rows, rjIn{side: side, kind: rjB, vals: old.vals()},
							rjIn{side: side, kind: rjA, vals: nw.vals()})
					}
				case op < 5 && len(*p) > 0:
					dup := (*p)[rng.IntN(len(*p))] // a duplicate of a present row
					*p = append(*p, dup)
					bt.rows = append(bt.rows, rjIn{side: side, vals: dup.vals()})
				default:
					r := randRow()
					*p = append(*p, r)
					bt.rows = append(bt.rows, rjIn{side: side, vals: r.vals()})
				}
			}
			batches = append(batches, bt)
			steps = append(steps, [2][]rjRandRow{slices.Clone(present[0]), slices.Clone(present[1])})
		}
		name := fmt.Sprintf("seed=%d/%s/keys=%v/residual=%v/appendOnly=%v", seed, typ, keyCols, residual, appendOnly)

		// Reference: no restore, everything in the working set.
		ref, errs, err := rjRun(t, cfg, batches, false, 0, func(int) bool { return false })
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if errs != 0 {
			t.Fatalf("%s: %d errors counted on a valid input", name, errs)
		}
		if bad := rjInvalid(ref); bad != "" {
			t.Fatalf("%s: %s", name, bad)
		}
		// The consolidated result after every batch equals the model of the inputs so far.
		outAt := rjOutputPerBatch(t, cfg, batches)
		for i := range batches {
			got, bad := rjConsolidate(outAt[i])
			if bad != "" {
				t.Fatalf("%s: after batch %d: %s", name, i, bad)
			}
			if want := rjModel(typ, twoKeys, residual, steps[i][0], steps[i][1]); !rjSameMultiset(got, want) {
				t.Fatalf("%s: after batch %d: consolidated\n got  %v\n want %v", name, i, got, want)
			}
		}
		// Restores at random barriers, Pebble or memory, a working set evicted at random, output and residual
		// evaluation cut into batches of 3 rows: the same changelog.
		restoreRng := rand.New(rand.NewPCG(seed, 99))
		cache := []int64{0, 1, 200, 3000}[restoreRng.IntN(4)]
		rjChunkRows = 3
		got, _, err := rjRun(t, cfg, batches, restoreRng.IntN(2) == 0, cache, func(int) bool { return restoreRng.IntN(3) == 0 })
		rjChunkRows = defaultChunk
		if err != nil {
			t.Fatalf("%s: with restores: %v", name, err)
		}
		if i := rjFirstDiff(got, ref); i >= 0 {
			t.Fatalf("%s: with restores (cache %d) the changelog differs at line %d of %d/%d:\n got  %q\n want %q",
				name, cache, i, len(got), len(ref), got[i:min(i+8, len(got))], ref[i:min(i+8, len(ref))])
		}
	}
}

// rjOutputPerBatch runs batches one by one and returns the changelog emitted up to and including each batch.
func rjOutputPerBatch(t *testing.T, cfg RegularJoinConfig, batches []rjBatch) [][]string {
	t.Helper()
	h := newRJHarness(t, cfg, false, 0)
	if err := h.open("", 0); err != nil {
		t.Fatal(err)
	}
	out := make([][]string, len(batches))
	for i, bt := range batches {
		if err := h.process(bt); err != nil {
			t.Fatal(err)
		}
		out[i] = slices.Clone(h.rows)
	}
	if err := h.close(); err != nil {
		t.Fatal(err)
	}
	return out
}

// rjFirstDiff returns the first index where a and b differ, -1 if they are equal.
func rjFirstDiff(a, b []string) int {
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

func rjSameMultiset(a, b map[string]int) bool {
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
