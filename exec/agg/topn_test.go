package agg

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/exec/optest"
	"github.com/clinksql/clinksql/exec/rowcodec"
	"github.com/clinksql/clinksql/sqlerr"
)

// topNEvents is the input of the Top-N tests: (k BIGINT, a BIGINT, s VARCHAR, v BIGINT).
var topNEvents = arrow.NewSchema([]arrow.Field{
	{Name: "k", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "a", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "v", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
}, nil)

const topNK, topNA, topNS, topNV = 0, 1, 2, 3

func topNOp(t testing.TB, cfg TopNConfig) (func(int) exec.Operator, *arrow.Schema) {
	t.Helper()
	return optest.MustOp(t, NewTopN, cfg, topNEvents)
}

func topNCase(t *testing.T, name string, cfg TopNConfig, batches [][]changeRow, want [][]string) changelogCase {
	f, out := topNOp(t, cfg)
	return changelogCase{name: name, schema: topNEvents, factory: f, out: out, batches: batches, want: want}
}

// tr is a topNEvents row of partition 1 with sort value a and payload s.
func tr(a any, s any) []any { return []any{1, a, s, 0} }

func asc(col int) SortKey  { return SortKey{Col: col} }
func desc(col int) SortKey { return SortKey{Col: col, Desc: true, NullsFirst: true} }

// TestTopNOne: N=1 DESC with the row number; a retraction of the top row pulls row 2 in; partitions are
// independent and disappear with their last row.
func TestTopNOne(t *testing.T) {
	cfg := TopNConfig{Partition: []int{topNK}, Order: []SortKey{desc(topNA)}, N: 1, RankOut: true, RankName: "rn",
		InputUpdating: true}
	runGacl(t, topNCase(t, "desc", cfg, [][]changeRow{
		{insRow(tr(5, "x")...), insRow(tr(7, "y")...), insRow(2, 1, "z", 0)},
		{insRow(tr(6, "w")...)}, // second place: nothing changes
		{delRow(tr(7, "y")...)}, // the top row goes: 6 moves up
		{delRow(tr(6, "w")...), delRow(tr(5, "x")...)},
		{delRow(2, 1, "z", 0)},
	}, [][]string{
		{"+I 1|7|y|0|1", "+I 2|1|z|0|1"},
		nil,
		{"-U 1|7|y|0|1", "+U 1|6|w|0|1"},
		{"-D 1|6|w|0|1"},
		{"-D 2|1|z|0|1"},
	}))
}

// TestTopNThree: N=3 ASC with and without the row number: an insert at the top shifts every position, a
// retraction pulls row 4 in.
func TestTopNThree(t *testing.T) {
	batches := [][]changeRow{
		{insRow(tr(3, "c")...), insRow(tr(1, "a")...), insRow(tr(2, "b")...), insRow(tr(4, "d")...)},
		{insRow(tr(0, "z")...)},
		{delRow(tr(1, "a")...)},
		{delRow(tr(2, "b")...), ubRow(tr(3, "c")...), uaRow(tr(9, "c")...)},
	}
	cfg := TopNConfig{Partition: []int{topNK}, Order: []SortKey{asc(topNA)}, N: 3, RankOut: true, RankName: "rn",
		InputUpdating: true}
	runGacl(t, topNCase(t, "rank", cfg, batches, [][]string{
		{"+I 1|1|a|0|1", "+I 1|2|b|0|2", "+I 1|3|c|0|3"},
		{"-U 1|1|a|0|1", "+U 1|0|z|0|1", "-U 1|2|b|0|2", "+U 1|1|a|0|2", "-U 1|3|c|0|3", "+U 1|2|b|0|3"},
		{"-U 1|1|a|0|2", "+U 1|2|b|0|2", "-U 1|2|b|0|3", "+U 1|3|c|0|3"},
		// Left: 0, 4, 9.
		{"-U 1|2|b|0|2", "+U 1|4|d|0|2", "-U 1|3|c|0|3", "+U 1|9|c|0|3"},
	}))
	cfg.RankOut = false
	runGacl(t, topNCase(t, "no-rank", cfg, batches, [][]string{
		{"+I 1|1|a|0", "+I 1|2|b|0", "+I 1|3|c|0"},
		{"-D 1|3|c|0", "+I 1|0|z|0"},
		{"-D 1|1|a|0", "+I 1|3|c|0"},
		{"-D 1|2|b|0", "-D 1|3|c|0", "+I 1|4|d|0", "+I 1|9|c|0"},
	}))
	// Append-only: only the top 3 are kept, and a row below them changes nothing.
	cfg.InputUpdating = false
	runGacl(t, topNCase(t, "append-only", cfg, [][]changeRow{batches[0], batches[1], {insRow(tr(5, "e")...)},
		{insRow(tr(1, "a")...)}}, [][]string{
		{"+I 1|1|a|0", "+I 1|2|b|0", "+I 1|3|c|0"},
		{"-D 1|3|c|0", "+I 1|0|z|0"},
		nil,
		{"-D 1|2|b|0", "+I 1|1|a|0"}, // a copy of 1|a: the top 3 are 0, 1, 1
	}))
}

// TestTopNTies: equal sort keys rank by the row's canonical bytes ("b" before "aa": shorter strings first),
// whatever the arrival order; identical rows are separate copies.
func TestTopNTies(t *testing.T) {
	cfg := TopNConfig{Order: []SortKey{asc(topNA)}, N: 1, RankOut: true, RankName: "rn", InputUpdating: true}
	runGacl(t, topNCase(t, "aa-then-b", cfg, [][]changeRow{{insRow(tr(5, "aa")...)}, {insRow(tr(5, "b")...)}},
		[][]string{{"+I 1|5|aa|0|1"}, {"-U 1|5|aa|0|1", "+U 1|5|b|0|1"}}))
	runGacl(t, topNCase(t, "b-then-aa", cfg, [][]changeRow{{insRow(tr(5, "b")...)}, {insRow(tr(5, "aa")...)}},
		[][]string{{"+I 1|5|b|0|1"}, nil}))
	runGacl(t, topNCase(t, "one-batch", cfg, [][]changeRow{{insRow(tr(5, "aa")...), insRow(tr(5, "b")...)}},
		[][]string{{"+I 1|5|b|0|1"}}))

	dup := TopNConfig{Order: []SortKey{asc(topNA)}, N: 2, RankOut: true, RankName: "rn", InputUpdating: true}
	batches := [][]changeRow{
		{insRow(tr(1, "A")...), insRow(tr(2, "B")...), insRow(tr(1, "A")...)},
		{delRow(tr(1, "A")...)},
		{delRow(tr(2, "B")...)},
	}
	runGacl(t, topNCase(t, "copies-rank", dup, batches, [][]string{
		{"+I 1|1|A|0|1", "+I 1|1|A|0|2"},
		{"-U 1|1|A|0|2", "+U 1|2|B|0|2"},
		{"-D 1|2|B|0|2"},
	}))
	dup.RankOut = false
	runGacl(t, topNCase(t, "copies", dup, batches, [][]string{
		{"+I 1|1|A|0", "+I 1|1|A|0"},
		{"-D 1|1|A|0", "+I 1|2|B|0"},
		{"-D 1|2|B|0"},
	}))
}

// TestTopNNulls: NULL sort values go where NullsFirst says, also under DESC.
func TestTopNNulls(t *testing.T) {
	batches := [][]changeRow{{insRow(tr(3, "c")...)}, {insRow(tr(nil, "n")...)}, {insRow(tr(5, "e")...)},
		{insRow(tr(4, "d")...)}}
	cfg := TopNConfig{Order: []SortKey{{Col: topNA, Desc: true, NullsFirst: true}}, N: 2, RankOut: true, RankName: "r"}
	runGacl(t, topNCase(t, "desc-nulls-first", cfg, batches, [][]string{
		{"+I 1|3|c|0|1"},
		{"-U 1|3|c|0|1", "+U 1|NULL|n|0|1", "+I 1|3|c|0|2"},
		{"-U 1|3|c|0|2", "+U 1|5|e|0|2"},
		nil,
	}))
	cfg.Order[0].NullsFirst = false
	runGacl(t, topNCase(t, "desc-nulls-last", cfg, batches, [][]string{
		{"+I 1|3|c|0|1"},
		{"+I 1|NULL|n|0|2"},
		{"-U 1|3|c|0|1", "+U 1|5|e|0|1", "-U 1|NULL|n|0|2", "+U 1|3|c|0|2"},
		{"-U 1|3|c|0|2", "+U 1|4|d|0|2"},
	}))
}

// TestTopNStrings: strings order by bytes with a prefix first, also with a 0x00 byte ("a" < "a\x00" < "ab");
// a global Top-N (no partition columns) over an append-only input.
func TestTopNStrings(t *testing.T) {
	cfg := TopNConfig{Order: []SortKey{asc(topNS)}, N: 2, RankOut: true, RankName: "rn"}
	runGacl(t, topNCase(t, "bytes", cfg, [][]changeRow{
		{insRow(tr(0, "ab")...), insRow(tr(0, "b")...)},
		{insRow(tr(0, "a\x00")...)},
		{insRow(tr(0, "a")...)},
		{insRow(tr(0, "a\x00b")...)},
	}, [][]string{
		{"+I 1|0|ab|0|1", "+I 1|0|b|0|2"},
		{"-U 1|0|ab|0|1", "+U 1|0|a\x00|0|1", "-U 1|0|b|0|2", "+U 1|0|ab|0|2"},
		{"-U 1|0|a\x00|0|1", "+U 1|0|a|0|1", "-U 1|0|ab|0|2", "+U 1|0|a\x00|0|2"},
		nil,
	}))
	cfg.Order[0].Desc = true
	runGacl(t, topNCase(t, "bytes-desc", cfg, [][]changeRow{
		{insRow(tr(0, "a")...), insRow(tr(0, "a\x00")...), insRow(tr(0, "")...)},
		{insRow(tr(0, "a\x00b")...)},
	}, [][]string{
		{"+I 1|0|a\x00|0|1", "+I 1|0|a|0|2"},
		{"-U 1|0|a\x00|0|1", "+U 1|0|a\x00b|0|1", "-U 1|0|a|0|2", "+U 1|0|a\x00|0|2"},
	}))
}

// TestTopNBadInput: an append-only Top-N fails on a retraction; a changelog Top-N ignores (and counts) the
// retraction of a row it does not hold.
func TestTopNBadInput(t *testing.T) {
	cfg := TopNConfig{Partition: []int{topNK}, Order: []SortKey{asc(topNA)}, N: 2}
	c := topNCase(t, "append-only-retraction", cfg, [][]changeRow{{insRow(tr(1, "a")...)}, {delRow(tr(1, "a")...)}}, nil)
	c.wantErr = "append-only"
	runGacl(t, c)
	cfg.InputUpdating = true
	c = topNCase(t, "retract-absent", cfg, [][]changeRow{
		{delRow(tr(1, "a")...)},
		{insRow(tr(1, "a")...), delRow(tr(1, "b")...)},
	}, [][]string{nil, {"+I 1|1|a|0"}})
	c.errors = 2
	runGacl(t, c)
}

// TestTopNSchema: the output columns and the planner-facing errors.
func TestTopNSchema(t *testing.T) {
	_, out := topNOp(t, TopNConfig{Order: []SortKey{asc(topNA)}, N: 3, RankOut: true, RankName: "row_num"})
	if out.NumFields() != 5 || out.Field(4).Name != "row_num" || !arrow.TypeEqual(out.Field(4).Type, arrow.PrimitiveTypes.Int64) {
		t.Fatalf("output schema %s", out)
	}
	for i := 0; i < 4; i++ {
		if !out.Field(i).Equal(topNEvents.Field(i)) {
			t.Fatalf("column %d is %s, want %s", i, out.Field(i), topNEvents.Field(i))
		}
	}
	_, out = topNOp(t, TopNConfig{Order: []SortKey{asc(topNA)}, N: 3})
	if !out.Equal(topNEvents) {
		t.Fatalf("output schema without the row number %s, want the input's", out)
	}
	iv := arrow.NewSchema([]arrow.Field{{Name: "i", Type: arrow.FixedWidthTypes.MonthDayNanoInterval}}, nil)
	bad := []struct {
		cfg    TopNConfig
		schema *arrow.Schema
		code   string
	}{
		{TopNConfig{Order: []SortKey{asc(topNA)}, N: 0}, topNEvents, sqlerr.InternalError},
		{TopNConfig{Order: []SortKey{asc(7)}, N: 1}, topNEvents, sqlerr.InternalError},
		{TopNConfig{Partition: []int{-1}, N: 1}, topNEvents, sqlerr.InternalError},
		{TopNConfig{Order: []SortKey{asc(topNA)}, N: 1, RankOut: true}, topNEvents, sqlerr.InternalError},
		{TopNConfig{Order: []SortKey{asc(topNA)}, N: 1, Rank: DenseRank + 1}, topNEvents, sqlerr.InternalError},
		{TopNConfig{Order: []SortKey{asc(0)}, N: 1}, iv, sqlerr.FeatureNotSupported},
	}
	for _, c := range bad {
		if _, _, err := NewTopN(c.cfg, c.schema); sqlerr.Code(err) != c.code {
			t.Errorf("%+v: %v (SQLSTATE %q), want %s", c.cfg, err, sqlerr.Code(err), c.code)
		}
	}
}

// TestTopNKeyGroupRouting: a row of a key group the subtask does not own fails the operator.
func TestTopNKeyGroupRouting(t *testing.T) {
	f, _ := topNOp(t, TopNConfig{Partition: []int{topNK}, Order: []SortKey{asc(topNA)}, N: 1})
	optest.CheckForeignKeyGroup(t, f, 0, topNEvents, []int{topNK}, []any{1, 1, "a", 0}, []any{2, 1, "a", 0}, []any{3, 1, "a", 0})
}

// The randomized test, as the group aggregate's: random changelogs, batchings, restores and evictions, checked
// after every batch against a model that sorts each partition's rows directly.

func topNRandomRow(rng *rand.Rand) []any {
	pick := func(vals ...any) any { return vals[rng.IntN(len(vals))] }
	return []any{
		pick(0, 1, 2, nil),
		pick(-2, 0, 1, 3, nil),
		pick("", "a", "b", "ab", "a\x00", nil),
		pick(0, 1),
	}
}

// compareValue orders two non-NULL test values: integers numerically, strings by bytes.
func compareValue(x, y any) int {
	if xs, ok := x.(string); ok {
		return strings.Compare(xs, y.(string))
	}
	return cmp.Compare(x.(int), y.(int))
}

// compareRows is the model's order: the sort keys, then the canonical row bytes, column by column: NULL first,
// integers numerically, strings by length (the length prefix), then bytes.
func compareRows(order []SortKey, x, y []any) int {
	if c := compareOrder(order, x, y); c != 0 {
		return c
	}
	for i := range x {
		a, b := x[i], y[i]
		switch {
		case a == nil && b == nil:
			continue
		case a == nil:
			return -1
		case b == nil:
			return 1
		}
		if as, ok := a.(string); ok {
			if c := cmp.Compare(len(as), len(b.(string))); c != 0 {
				return c
			}
		}
		if c := compareValue(a, b); c != 0 {
			return c
		}
	}
	return 0
}

// compareOrder compares two rows by the sort keys alone (0: they tie).
func compareOrder(order []SortKey, x, y []any) int {
	for _, k := range order {
		a, b := x[k.Col], y[k.Col]
		switch {
		case a == nil && b == nil:
			continue
		case a == nil || b == nil:
			if (a == nil) == k.NullsFirst {
				return -1
			}
			return 1
		}
		c := compareValue(a, b)
		if k.Desc {
			c = -c
		}
		if c != 0 {
			return c
		}
	}
	return 0
}

func rowText(row []any) string {
	f := make([]string, len(row))
	for i, v := range row {
		f[i] = "NULL"
		if v != nil {
			f[i] = fmt.Sprint(v)
		}
	}
	return strings.Join(f, "|")
}

// topNModel is the expected result rows: the rows of each partition whose rank is at most N, with their ranks.
func topNModel(cfg TopNConfig, present [][]any) []string {
	var out []string
	for _, rows := range topNModelParts(cfg, present) {
		out = append(out, rows...)
	}
	slices.Sort(out)
	return out
}

// topNModelParts is topNModel per partition (by fmt.Sprint of its key; "" without partition columns), each in rank
// order. Ranks are computed from their definitions: ROW_NUMBER the position in the model's order, RANK 1 + the rows
// with a better sort key, DENSE_RANK 1 + the distinct better sort keys.
func topNModelParts(cfg TopNConfig, present [][]any) map[string][]string {
	parts := map[string][][]any{}
	for _, r := range present {
		k := ""
		if len(cfg.Partition) > 0 {
			k = fmt.Sprint(r[cfg.Partition[0]])
		}
		parts[k] = append(parts[k], r)
	}
	out := map[string][]string{}
	for k, rows := range parts {
		rows = slices.Clone(rows)
		slices.SortFunc(rows, func(x, y []any) int { return compareRows(cfg.Order, x, y) })
		for i, r := range rows {
			rank := int64(i + 1)
			if cfg.Rank != RowNumber {
				rank = 1
				var better [][]any // distinct better sort keys
				for _, b := range rows {
					if compareOrder(cfg.Order, b, r) >= 0 {
						continue
					}
					if cfg.Rank == Rank {
						rank++
					} else if !slices.ContainsFunc(better, func(x []any) bool { return compareOrder(cfg.Order, x, b) == 0 }) {
						better = append(better, b)
						rank++
					}
				}
			}
			if rank > cfg.N {
				continue
			}
			s := rowText(r)
			if cfg.RankOut {
				s += fmt.Sprintf("|%d", rank)
			}
			out[k] = append(out[k], s)
		}
	}
	return out
}

func TestTopNRandom(t *testing.T) {
	t.Setenv("CLINK_STATE_FSYNC", "0")
	orders := [][]SortKey{
		{asc(topNA)},
		{{Col: topNA, Desc: true, NullsFirst: true}, {Col: topNS}},
		{{Col: topNS, Desc: true}, {Col: topNA, NullsFirst: true}},
	}
	seeds := 3
	if testing.Short() {
		seeds = 1
	}
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		for oi, order := range orders {
			for _, n := range []int64{1, 3} {
				for _, updating := range []bool{true, false} {
					rng := rand.New(rand.NewPCG(seed, uint64(oi)*10+uint64(n)))
					cfg := TopNConfig{Order: order, N: n, InputUpdating: updating, RankName: "rn",
						RankOut: rng.IntN(2) == 0}
					if rng.IntN(3) != 0 {
						cfg.Partition = []int{topNK}
					}
					name := fmt.Sprintf("seed=%d/order=%d/n=%d/updating=%v/rank=%v/partitioned=%v", seed, oi, n,
						updating, cfg.RankOut, cfg.Partition != nil)
					factory, out := topNOp(t, cfg)
					p, err := planTopN(cfg, topNEvents)
					if err != nil {
						t.Fatal(err)
					}
					p.maxParts = 1 + 2*(oi%2) // every barrier evicts: all partitions, or those not touched since the last
					evicting := func(int) exec.Operator { return newTopN(p) }
					rows := randomChangelog(rng, 60, updating, topNRandomRow, topNK)
					randomRuns(t, name, rng, topNEvents, rows, factory, evicting, out, func(present [][]any) []string {
						return topNModel(cfg, present)
					})
				}
			}
		}
	}
}

// TestTopNRestoreMatches: a checkpoint and restore in the middle gives exactly the changelog of a run without one,
// for large partitions (several chunks of the sorted list) over a changelog.
func TestTopNRestoreMatches(t *testing.T) {
	t.Setenv("CLINK_STATE_FSYNC", "0")
	rng := rand.New(rand.NewPCG(3, 3))
	gen := func(rng *rand.Rand) []any { return []any{rng.IntN(2), rng.IntN(5000), "s", rng.IntN(3)} }
	rows := randomChangelog(rng, 6000, true, gen, topNK)
	batches := cutChangelog(rng, rows, 400)
	for _, rank := range []bool{false, true} {
		cfg := TopNConfig{Partition: []int{topNK}, Order: []SortKey{desc(topNA)}, N: 5, RankOut: rank, RankName: "rn",
			InputUpdating: true}
		f, out := topNOp(t, cfg)
		checkRestoreMatches(t, fmt.Sprintf("rank=%v", rank), topNEvents, out, f, batches,
			func(present [][]any) []string { return topNModel(cfg, present) })
	}
}

// TestTopNTouchOrder: partitions emit in the order the batch first touched them, also when the first row of a
// partition changed nothing (it ranked below the top N) and a later one did.
func TestTopNTouchOrder(t *testing.T) {
	cfg := TopNConfig{Partition: []int{topNK}, Order: []SortKey{asc(topNA)}, N: 1, RankOut: true, RankName: "rn"}
	runGacl(t, topNCase(t, "first-touch", cfg, [][]changeRow{
		{insRow(1, 1, "p", 0)},
		{insRow(1, 5, "p", 0), insRow(2, 1, "q", 0), insRow(1, 0, "p", 0)},
	}, [][]string{
		{"+I 1|1|p|0|1"},
		{"-U 1|1|p|0|1", "+U 1|0|p|0|1", "+I 2|1|q|0|1"},
	}))
}

// TestTopNForgets: a partition whose last row was retracted, or that only saw retractions of rows it did not
// hold, leaves memory and the backend.
func TestTopNForgets(t *testing.T) {
	f, out := topNOp(t, TopNConfig{Partition: []int{topNK}, Order: []SortKey{asc(topNA)}, N: 2, InputUpdating: true})
	h := openChangelog(t, f, topNEvents, out)
	op := h.Op.(*topN)
	changelogStep(t, h, insRow(1, 1, "a", 0), insRow(1, 2, "b", 0), insRow(2, 1, "a", 0))
	if op.parts != 2 {
		t.Fatalf("%d partitions in memory, want 2", op.parts)
	}
	changelogStep(t, h, delRow(1, 1, "a", 0), delRow(1, 2, "b", 0), delRow(3, 1, "a", 0))
	if op.parts != 1 || len(op.ints) != 1 {
		t.Fatalf("%d partitions in memory (%d in the map), want 1", op.parts, len(op.ints))
	}
	if keys := stateEntries(t, h.Backend); keys != 1 {
		t.Fatalf("%d entries in the backend, want 1 (partition 2's row)", keys)
	}
}

// TestTopNRowBytes: the Top-N encodes a row's canonical bytes itself, only for rows that may enter; they are
// exactly rowcodec.KeyRows' (which older state holds), NULLs, -0 and NaN included.
func TestTopNRowBytes(t *testing.T) {
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "i", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "f", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: "ts", Type: arrow.FixedWidthTypes.Timestamp_us, Nullable: true},
		{Name: "n", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	}, nil)
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	rb := array.NewRecordBuilder(mem, sc)
	defer rb.Release()
	rng := rand.New(rand.NewPCG(7, 7))
	floats := []float64{0, math.Copysign(0, -1), 1.5, math.NaN(), math.Inf(-1)}
	for range 200 {
		null := func() bool { return rng.IntN(4) == 0 }
		if null() {
			rb.Field(0).AppendNull()
		} else {
			rb.Field(0).(*array.Int64Builder).Append(rng.Int64() - rng.Int64())
		}
		if null() {
			rb.Field(1).AppendNull()
		} else {
			rb.Field(1).(*array.StringBuilder).Append(strings.Repeat("a\x00", rng.IntN(3)))
		}
		if null() {
			rb.Field(2).AppendNull()
		} else {
			rb.Field(2).(*array.Float64Builder).Append(floats[rng.IntN(len(floats))])
		}
		if null() {
			rb.Field(3).AppendNull()
		} else {
			rb.Field(3).(*array.BooleanBuilder).Append(rng.IntN(2) == 0)
		}
		if null() {
			rb.Field(4).AppendNull()
		} else {
			rb.Field(4).(*array.TimestampBuilder).Append(arrow.Timestamp(rng.Int64N(1 << 50)))
		}
		if null() {
			rb.Field(5).AppendNull()
		} else {
			rb.Field(5).(*array.Int32Builder).Append(rng.Int32() - rng.Int32())
		}
	}
	rec := rb.NewRecordBatch()
	defer rec.Release()
	p, err := planTopN(TopNConfig{Order: []SortKey{asc(0)}, N: 1}, sc)
	if err != nil {
		t.Fatal(err)
	}
	o := newTopN(p)
	if err := o.rowAppenders(rec); err != nil {
		t.Fatal(err)
	}
	var want rowcodec.KeyRows
	if err := want.Load(&p.rowEnc, rec, p.allCols); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < int(rec.NumRows()); i++ {
		if got := o.encodeRow(nil, rec, i); string(got) != string(want.BytesOf(i)) {
			t.Fatalf("row %d: %x, want %x", i, got, want.BytesOf(i))
		}
	}
}

// TestTopNLegacyState: an append-only Top-N restored from per-entry state (written before the compact layout
// existed, here by an operator with compactMaxN 0) reads it, rewrites each partition it changes in the compact
// layout, and gives exactly the changelog of a run without restores; with evictions after every barrier, partitions
// are reloaded from a mix of both layouts.
func TestTopNLegacyState(t *testing.T) {
	t.Setenv("CLINK_STATE_FSYNC", "0")
	for seed := uint64(1); seed <= 3; seed++ {
		rng := rand.New(rand.NewPCG(seed, 15))
		rows := randomChangelog(rng, 80, false, topNRandomRow, topNK)
		batches := cutChangelog(rng, rows, 5)
		for _, n := range []int64{1, 3} {
			cfg := TopNConfig{Partition: []int{topNK}, Order: []SortKey{desc(topNA)}, N: n, RankOut: n == 3, RankName: "rn"}
			f, out := topNOp(t, cfg)
			ref := execChangelog(t, topNEvents, out, f, batches, false, func(int, int) (bool, bool) { return false, false })
			if ref.err != nil {
				t.Fatal(ref.err)
			}
			checkGroupModel(t, "legacy/reference", batches, ref.out, func(present [][]any) []string { return topNModel(cfg, present) })
			for _, evicting := range []bool{false, true} {
				for _, pebble := range []bool{false, true} {
					calls := 0
					factory := func(int) exec.Operator {
						p, err := planTopN(cfg, topNEvents)
						if err != nil {
							t.Fatal(err)
						}
						if calls++; calls == 1 {
							p.compactMaxN = 0 // the first incarnation writes per-entry state
						}
						if evicting {
							p.maxParts = 1
						}
						return newTopN(p)
					}
					first := 1 + rng.IntN(len(batches)-2)
					res := execChangelog(t, topNEvents, out, factory, batches, pebble, func(i, _ int) (bool, bool) {
						r := i == first || (i > first && rng.IntN(3) == 0)
						return r || rng.IntN(2) == 0, r
					})
					if res.err != nil {
						t.Fatal(res.err)
					}
					sameChangelog(t, fmt.Sprintf("seed=%d n=%d evicting=%v pebble=%v", seed, n, evicting, pebble), res.out, ref.out)
					if calls < 2 {
						t.Fatalf("no restore happened")
					}
				}
			}
		}
	}
}

// RANK and DENSE_RANK: the rows of rank <= N, ties included (Postgres' ranks).

// rankBatches are the rows of the RANK and DENSE_RANK cases, in partition 1 ordered by a ASC. After batch 4 the
// ranks are a:0 1, x:1 2, y:1 2, q:2 4, z:2 4, w:3 6 (RANK) or 1, 2, 2, 3, 3, 4 (DENSE_RANK).
var rankBatches = [][]changeRow{
	{insRow(tr(1, "x")...), insRow(tr(2, "z")...)},
	{insRow(tr(1, "y")...)}, // ties with x: z's rank grows (RANK: a gap)
	{insRow(tr(3, "w")...)}, // below the top set
	{insRow(tr(0, "a")...)}, // everything after it moves down
	{insRow(tr(2, "q")...)}, // ties with z, below the top set
}

// TestTopNRank: RANK() <= 3 with and without the rank column, over a changelog (a retraction moves ranks up and
// brings a tie of two rows in at once) and over an append-only input (a tie group at the boundary leaves whole).
func TestTopNRank(t *testing.T) {
	cfg := TopNConfig{Partition: []int{topNK}, Order: []SortKey{asc(topNA)}, N: 3, Rank: Rank, RankOut: true,
		RankName: "r", InputUpdating: true}
	first := [][]string{
		{"+I 1|1|x|0|1", "+I 1|2|z|0|2"},
		// (z, 2) left and (z, 3) entered: a changed rank is a -D and a +I of the pair.
		{"-D 1|2|z|0|2", "+I 1|1|y|0|1", "+I 1|2|z|0|3"},
		nil,
		{"-D 1|1|x|0|1", "-D 1|1|y|0|1", "-D 1|2|z|0|3", "+I 1|0|a|0|1", "+I 1|1|x|0|2", "+I 1|1|y|0|2"},
		nil,
	}
	runGacl(t, topNCase(t, "updating", cfg, append(slices.Clone(rankBatches), []changeRow{delRow(tr(0, "a")...)}),
		append(slices.Clone(first),
			// x, y 1; q, z 3: four rows in a top 3.
			[]string{"-D 1|0|a|0|1", "-D 1|1|x|0|2", "-D 1|1|y|0|2",
				"+I 1|1|x|0|1", "+I 1|1|y|0|1", "+I 1|2|q|0|3", "+I 1|2|z|0|3"})))
	cfg.InputUpdating = false
	runGacl(t, topNCase(t, "append-only", cfg, append(slices.Clone(rankBatches),
		[]changeRow{insRow(tr(0, "b")...)}, []changeRow{insRow(tr(0, "c")...)}),
		append(slices.Clone(first),
			[]string{"-D 1|1|x|0|2", "-D 1|1|y|0|2", "+I 1|0|b|0|1", "+I 1|1|x|0|3", "+I 1|1|y|0|3"},
			// a, b, c 1: x and y (4) leave together.
			[]string{"-D 1|1|x|0|3", "-D 1|1|y|0|3", "+I 1|0|c|0|1"})))
	cfg.InputUpdating, cfg.RankOut = true, false
	runGacl(t, topNCase(t, "no-rank-column", cfg, append(slices.Clone(rankBatches), []changeRow{delRow(tr(0, "a")...)}),
		[][]string{
			{"+I 1|1|x|0", "+I 1|2|z|0"},
			{"+I 1|1|y|0"}, // z stays in the top set: without the column its new rank changes nothing
			nil,
			{"-D 1|2|z|0", "+I 1|0|a|0"},
			nil,
			{"-D 1|0|a|0", "+I 1|2|q|0", "+I 1|2|z|0"},
		}))
}

// TestTopNDenseRank: DENSE_RANK() <= 2: ties without gaps; all rows of the two best sort keys are kept, however
// many.
func TestTopNDenseRank(t *testing.T) {
	cfg := TopNConfig{Partition: []int{topNK}, Order: []SortKey{asc(topNA)}, N: 2, Rank: DenseRank, RankOut: true,
		RankName: "r", InputUpdating: true}
	first := [][]string{
		{"+I 1|1|x|0|1", "+I 1|2|z|0|2"},
		{"+I 1|1|y|0|1"}, // z stays 2: no gap
		nil,
		{"-D 1|1|x|0|1", "-D 1|1|y|0|1", "-D 1|2|z|0|2", "+I 1|0|a|0|1", "+I 1|1|x|0|2", "+I 1|1|y|0|2"},
		nil,
	}
	runGacl(t, topNCase(t, "updating", cfg, append(slices.Clone(rankBatches), []changeRow{delRow(tr(0, "a")...)}),
		append(slices.Clone(first),
			[]string{"-D 1|0|a|0|1", "-D 1|1|x|0|2", "-D 1|1|y|0|2",
				"+I 1|1|x|0|1", "+I 1|1|y|0|1", "+I 1|2|q|0|2", "+I 1|2|z|0|2"})))
	cfg.InputUpdating = false
	runGacl(t, topNCase(t, "append-only", cfg, append(slices.Clone(rankBatches),
		[]changeRow{insRow(tr(0, "b")...)},
		[]changeRow{insRow(tr(1, "v")...)},
		[]changeRow{insRow(tr(-1, "m")...)}),
		append(slices.Clone(first),
			[]string{"+I 1|0|b|0|1"},
			[]string{"+I 1|1|v|0|2"}, // five rows in a top 2
			[]string{"-D 1|0|a|0|1", "-D 1|0|b|0|1", "-D 1|1|v|0|2", "-D 1|1|x|0|2", "-D 1|1|y|0|2",
				"+I 1|-1|m|0|1", "+I 1|0|a|0|2", "+I 1|0|b|0|2"})))
}

// TestTopNRankBoundary: ties at the boundary, also of copies of one row and of NULLs (which tie with each other),
// under DESC NULLS FIRST.
func TestTopNRankBoundary(t *testing.T) {
	for _, updating := range []bool{false, true} {
		cfg := TopNConfig{Order: []SortKey{desc(topNA)}, N: 2, Rank: Rank, RankOut: true, RankName: "r",
			InputUpdating: updating}
		batches := [][]changeRow{
			{insRow(tr(5, "x")...), insRow(tr(5, "x")...)},     // two copies, both 1
			{insRow(tr(4, "z")...)},                            // 3
			{insRow(tr(nil, "n")...), insRow(tr(nil, "m")...)}, // NULLs first, tied: the 5s move to 3
			{insRow(tr(nil, "n")...)},
		}
		want := [][]string{
			{"+I 1|5|x|0|1", "+I 1|5|x|0|1"},
			nil,
			{"-D 1|5|x|0|1", "-D 1|5|x|0|1", "+I 1|NULL|m|0|1", "+I 1|NULL|n|0|1"},
			{"+I 1|NULL|n|0|1"},
		}
		if updating {
			// Both copies of n go: below m alone, the two copies of 5 are back, at rank 2.
			batches = append(batches, []changeRow{delRow(tr(nil, "n")...), delRow(tr(nil, "n")...)})
			want = append(want, []string{"-D 1|NULL|n|0|1", "-D 1|NULL|n|0|1", "+I 1|5|x|0|2", "+I 1|5|x|0|2"})
		}
		runGacl(t, topNCase(t, fmt.Sprintf("updating=%v", updating), cfg, batches, want))
	}
}

// TestTopNRankState: an append-only RANK or DENSE_RANK keeps its top set with every tie at the boundary, one state
// entry per distinct row (not the compact layout, whose whole-partition rewrite would cost the tie's size per
// barrier), and drops a tie group, memory and backend, once it falls below the top set.
func TestTopNRankState(t *testing.T) {
	for _, f := range []RankFunc{Rank, DenseRank} {
		t.Run(f.String(), func(t *testing.T) {
			fac, out := topNOp(t, TopNConfig{Partition: []int{topNK}, Order: []SortKey{asc(topNA)}, N: 1, Rank: f})
			h := openChangelog(t, fac, topNEvents, out)
			op := h.Op.(*topN)
			if op.compact {
				t.Fatal("the compact layout for a ranking with ties")
			}
			var tie []changeRow
			for i := range 40 {
				tie = append(tie, insRow(tr(5, fmt.Sprint(i))...))
			}
			if got := changelogStep(t, h, tie...); len(got) != 40 {
				t.Fatalf("%d rows emitted for a tie of 40 at rank 1", len(got))
			}
			rows := func() int64 { return op.ints[1].list.rows }
			if rows() != 40 || stateEntries(t, h.Backend) != 40 {
				t.Fatalf("%d rows in memory, %d state entries; want the 40 of the tie", rows(), stateEntries(t, h.Backend))
			}
			if got := changelogStep(t, h, insRow(tr(6, "late")...), insRow(tr(5, "more")...)); len(got) != 1 {
				t.Fatalf("emitted %q, want the new tie only", got)
			}
			if got := changelogStep(t, h, insRow(tr(4, "best")...)); len(got) != 42 {
				t.Fatalf("emitted %d rows, want 41 -D and one +I", len(got))
			}
			if rows() != 1 || stateEntries(t, h.Backend) != 1 {
				t.Fatalf("%d rows in memory, %d state entries; want only the best row", rows(), stateEntries(t, h.Backend))
			}
			if x := op.ints[1].x; x.groups != 1 || x.lastRows != 1 {
				t.Fatalf("counts groups=%d lastRows=%d, want 1 and 1", x.groups, x.lastRows)
			}
		})
	}
}

// TestTopNRankRandom: RANK and DENSE_RANK over random changelogs (small domains: ties, copies and NULLs are
// frequent), checked against a model that computes every row's rank from its definition over the input so far:
// randomRuns (other batchings, restores on both backends, evictions), then a run with restores and evictions at
// random barriers in which every batch's output must be exactly the difference of the model's top sets before and
// after it (-D for each (row, rank) pair that left, +I for each that entered, nothing else) and, over an append-only
// input, the partitions in memory must hold exactly their top sets with the right tie counts.
func TestTopNRankRandom(t *testing.T) {
	t.Setenv("CLINK_STATE_FSYNC", "0")
	orders := [][]SortKey{
		{asc(topNA)},
		{{Col: topNA, Desc: true, NullsFirst: true}, {Col: topNS}},
		{{Col: topNS, Desc: true}, {Col: topNA, NullsFirst: true}},
	}
	seeds := 2
	if testing.Short() {
		seeds = 1
	}
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		for oi, order := range orders {
			for _, f := range []RankFunc{Rank, DenseRank} {
				for _, n := range []int64{1, 3} {
					for _, updating := range []bool{true, false} {
						rng := rand.New(rand.NewPCG(seed, uint64(oi)*100+uint64(f)*10+uint64(n)))
						cfg := TopNConfig{Order: order, N: n, Rank: f, InputUpdating: updating, RankName: "r",
							RankOut: rng.IntN(3) != 0}
						if rng.IntN(3) != 0 {
							cfg.Partition = []int{topNK}
						}
						name := fmt.Sprintf("seed=%d/order=%d/%s/n=%d/updating=%v/rank=%v/partitioned=%v", seed, oi, f,
							n, updating, cfg.RankOut, cfg.Partition != nil)
						factory, out := topNOp(t, cfg)
						p, err := planTopN(cfg, topNEvents)
						if err != nil {
							t.Fatal(err)
						}
						p.maxParts = 1 + 2*(oi%2)
						evicting := func(int) exec.Operator { return newTopN(p) }
						rows := randomChangelog(rng, 80, updating, topNRandomRow, topNK)
						model := func(present [][]any) []string { return topNModel(cfg, present) }
						randomRuns(t, name, rng, topNEvents, rows, factory, evicting, out, model)
						checkRankDiffs(t, name, rng, cfg, out, evicting, cutChangelog(rng, rows, 5))
					}
				}
			}
		}
	}
}

// checkRankDiffs runs batches with a barrier (and often a restore) after each and checks, after every
// batch, its output against the model's difference and, over an append-only input, the partitions in memory.
func checkRankDiffs(t *testing.T, name string, rng *rand.Rand, cfg TopNConfig, out *arrow.Schema,
	factory func(int) exec.Operator, batches [][]changeRow) {
	t.Helper()
	h := optest.NewHarness(t, factory, false, topNEvents)
	h.Out, h.Changelog = out, true
	steps := make([]any, len(batches))
	for i, rows := range batches {
		steps[i] = changeBatch(rows)
	}
	var present [][]any
	before := topNModelParts(cfg, nil)
	seen := 0
	plan := func(int, int) (bool, bool) { return true, rng.IntN(3) == 0 }
	err := h.Run(steps, plan, func(i int, _ optest.BatchStep, _ bool) error {
		for _, r := range batches[i] {
			if r.kind == exec.Insert || r.kind == exec.UpdateAfter {
				present = append(present, r.vals)
				continue
			}
			j := slices.IndexFunc(present, func(p []any) bool { return sameRow(p, r.vals) })
			present = slices.Delete(present, j, j+1)
		}
		after := topNModelParts(cfg, present)
		var dels, ins []string
		for k := range mapKeys(before, after) {
			d, a := multisetMinus(before[k], after[k]), multisetMinus(after[k], before[k])
			dels, ins = append(dels, d...), append(ins, a...)
		}
		var gotDels, gotIns []string
		for _, line := range h.Rows[seen:] {
			kind, row, _ := strings.Cut(line, " ")
			switch kind {
			case "-D":
				gotDels = append(gotDels, row)
			case "+I":
				gotIns = append(gotIns, row)
			default:
				return fmt.Errorf("batch %d: a %s row %q", i, kind, row)
			}
		}
		for _, l := range [][]string{dels, ins, gotDels, gotIns} {
			slices.Sort(l)
		}
		if !slices.Equal(gotDels, dels) || !slices.Equal(gotIns, ins) {
			return fmt.Errorf("batch %d: output %q,\n want -D %q\n and +I %q", i, h.Rows[seen:], dels, ins)
		}
		seen = len(h.Rows)
		before = after
		if !cfg.InputUpdating {
			return checkRankWorkingSet(h.Op.(*topN), cfg, after)
		}
		return nil
	})
	if err = errors.Join(err, h.Close()); err != nil {
		t.Fatalf("%s: diffs: %v", name, err)
	}
}

// checkRankWorkingSet checks that each partition in memory of an append-only Top-N holds as many rows as its top
// set in the model, and tie counts (when counted) that match its list.
func checkRankWorkingSet(o *topN, cfg TopNConfig, model map[string][]string) error {
	var err error
	o.forEachPart(func(p *partState) {
		k := ""
		if len(cfg.Partition) > 0 {
			k = fmt.Sprint(p.ik)
			if p.nullKey {
				k = fmt.Sprint(nil)
			}
		}
		if want := int64(len(model[k])); p.list.rows != want && err == nil {
			err = fmt.Errorf("partition %q holds %d rows, its top set %d", k, p.list.rows, want)
		}
		if p.x != nil && p.x.counted && err == nil {
			if g, l := p.list.groupCounts(); g != p.x.groups || l != p.x.lastRows {
				err = fmt.Errorf("partition %q: counts %d/%d, its list %d/%d", k, p.x.groups, p.x.lastRows, g, l)
			}
		}
	})
	return err
}

// mapKeys is the set of the keys of a and b.
func mapKeys(a, b map[string][]string) map[string]bool {
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	return keys
}

// multisetMinus is a minus b as multisets.
func multisetMinus(a, b []string) []string {
	left := map[string]int{}
	for _, s := range b {
		left[s]++
	}
	var out []string
	for _, s := range a {
		if left[s] > 0 {
			left[s]--
			continue
		}
		out = append(out, s)
	}
	return out
}
