package join

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/exec/expr"
	"github.com/clinksql/clinksql/exec/optest"
)

var (
	lookupLeft  = optest.NullableSchema("k", arrow.PrimitiveTypes.Int64, "a", arrow.BinaryTypes.String)
	lookupRight = optest.NullableSchema("id", arrow.PrimitiveTypes.Int64, "name", arrow.BinaryTypes.String)
)

// fakeTable is a lookup table in memory: id -> names; it records the keys of every Lookup and fails the first
// fail calls.
type fakeTable struct {
	rows   map[int64][]string
	asked  [][]int64
	fail   int
	closed bool
}

func (f *fakeTable) Lookup(_ context.Context, alloc memory.Allocator, keys arrow.RecordBatch) (arrow.RecordBatch, error) {
	if f.fail > 0 {
		f.fail--
		return nil, errors.New("connection refused")
	}
	col := keys.Column(0).(*array.Int64)
	ids := slices.Clone(col.Int64Values())
	f.asked = append(f.asked, ids)
	var rows [][]any
	for _, id := range ids {
		for _, n := range f.rows[id] {
			rows = append(rows, []any{int(id), n})
		}
	}
	return optest.BuildBatch(alloc, lookupRight, rows).Rec, nil
}

func (f *fakeTable) Close() error { f.closed = true; return nil }

func lookupConfig(typ JoinType, table *fakeTable) LookupJoinConfig {
	return LookupJoinConfig{
		JoinSpec: JoinSpec{Type: typ, Left: lookupLeft, Right: lookupRight, LeftKeys: []int{0}, RightKeys: []int{0}},
		Table:    func(int) exec.LookupTable { return table },
	}
}

// Output over every batch shape: a key with two rows, a key with none, a NULL key, a residual condition.
func TestLookupJoinTypes(t *testing.T) {
	input := []any{[]any{1, "a1"}, []any{2, "a2"}, []any{3, "a3"}, []any{nil, "a4"}, []any{1, "a5"}}
	table := func() *fakeTable { return &fakeTable{rows: map[int64][]string{1: {"x", "y"}, 2: {"z"}}} }
	for _, tc := range []struct {
		name     string
		typ      JoinType
		residual bool
		want     []string
	}{
		{"inner", JoinInner, false, []string{"1|a1|1|x", "1|a1|1|y", "2|a2|2|z", "1|a5|1|x", "1|a5|1|y"}},
		{"left", JoinLeft, false, []string{"1|a1|1|x", "1|a1|1|y", "2|a2|2|z", "3|a3|NULL|NULL", "NULL|a4|NULL|NULL",
			"1|a5|1|x", "1|a5|1|y"}},
		// name <> 'x': key 1 keeps y; a left row whose rows all fail is padded.
		{"left residual", JoinLeft, true, []string{"1|a1|1|y", "2|a2|2|z", "3|a3|NULL|NULL", "NULL|a4|NULL|NULL",
			"1|a5|1|y"}},
	} {
		cfg := lookupConfig(tc.typ, nil)
		cfg.CacheRows = 100
		cfg.Table = func(int) exec.LookupTable { return table() }
		if tc.residual {
			cfg.Residual = callExpr(t, "<>", colExpr(3, "name", arrow.BinaryTypes.String), expr64s("x"))
		}
		f, _, err := NewLookupJoin(cfg)
		if err != nil {
			t.Fatal(err)
		}
		optest.RunCase(t, optest.Case{Name: tc.name, Schema: lookupLeft, Input: input, Op: f, TimeCol: -1, Want: tc.want})
	}
}

// The cache: one Lookup per batch for the keys it does not hold (a missing key cached too), hits while fresh, a
// lookup again past the TTL (seeing the table's new rows), eviction of the least recently used past CacheRows,
// retries of a failed lookup.
func TestLookupJoinCache(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	table := &fakeTable{rows: map[int64][]string{1: {"x", "y"}, 2: {"z"}}}
	cfg := lookupConfig(JoinLeft, table)
	cfg.CacheRows, cfg.CacheTTL, cfg.MaxRetries, cfg.Backoff = 4, 10*time.Second, 2, time.Millisecond
	cfg.Now = func() time.Time { return now }
	f, _, err := NewLookupJoin(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h := optest.NewHarness(t, f, false, lookupLeft)
	optest.Must(t, h.Open("", 0))
	step := func(rows [][]any, wantAsked [][]int64, want ...string) {
		t.Helper()
		table.asked = nil
		h.Rows = nil
		optest.Must(t, h.Process(0, rows, nil))
		if !slices.EqualFunc(table.asked, wantAsked, slices.Equal[[]int64]) {
			t.Fatalf("looked up %v, want %v", table.asked, wantAsked)
		}
		if !slices.Equal(h.Rows, want) {
			t.Fatalf("emitted %q, want %q", h.Rows, want)
		}
	}
	// 1 (two rows), 3 (none) and 2 (one): one lookup of the three, in first-row order; cache 2 + 1 + 1 = 4 rows.
	step([][]any{{1, "a"}, {3, "b"}, {1, "c"}, {2, "d"}}, [][]int64{{1, 3, 2}},
		"1|a|1|x", "1|a|1|y", "3|b|NULL|NULL", "1|c|1|x", "1|c|1|y", "2|d|2|z")
	// 5 s later: all cached, even 3 (missing); the table's change is not seen.
	now = now.Add(5 * time.Second)
	table.rows[3] = []string{"new"}
	step([][]any{{3, "e"}, {2, "f"}}, nil, "3|e|NULL|NULL", "2|f|2|z")
	// 4 is new: caching it (1 row) evicts the least recently used, key 1 (2 rows: 2 + 1 + 1 + 1 = 5 > 4).
	step([][]any{{4, "g"}}, [][]int64{{4}}, "4|g|NULL|NULL")
	step([][]any{{1, "h"}}, [][]int64{{1}}, "1|h|1|x", "1|h|1|y")
	// 11 s after they were cached, 3 and 2 are past the TTL: looked up again, 3 now has a row.
	now = now.Add(6 * time.Second)
	step([][]any{{3, "i"}, {2, "j"}}, [][]int64{{3, 2}}, "3|i|3|new", "2|j|2|z")
	// A failing lookup is tried again (2 retries), then succeeds.
	table.fail = 2
	step([][]any{{7, "k"}}, [][]int64{{7}}, "7|k|NULL|NULL")
	// Past the retries, the operator fails.
	table.fail = 3
	if err := h.Process(0, [][]any{{8, "l"}}, nil); err == nil {
		t.Fatal("a lookup failing past its retries did not fail the join")
	}
	optest.Must(t, h.Close())
	if !table.closed {
		t.Fatal("the table was not closed")
	}
}

func TestLookupCacheBounds(t *testing.T) {
	c := newLookupCache(3, 0)
	now := time.Now()
	c.put("a", [][]byte{{1}, {2}, {3}, {4}}, now) // larger than the cache: not cached
	if _, ok := c.get("a", now); ok || c.rows != 0 {
		t.Fatalf("a 4-row key was cached in a 3-row cache (rows %d)", c.rows)
	}
	c.put("b", nil, now)
	c.put("c", [][]byte{{1}, {2}}, now)
	if _, ok := c.get("b", now); !ok || c.rows != 3 {
		t.Fatalf("b missing or rows %d", c.rows)
	}
	c.put("d", nil, now) // evicts c, the least recently used
	if _, ok := c.get("c", now); ok || c.rows != 2 {
		t.Fatalf("c still cached or rows %d", c.rows)
	}
}

func expr64s(s string) expr.Expr { return expr.String(s) }

// pins: the residual condition reads the job's processing-time clock (a hand-set one here, years after the wall
// clock): before, it read the wall clock, so PROCTIME() in a lookup join's ON differed from the rest of the job.
func TestLookupJoinResidualReadsTheJobClock(t *testing.T) {
	t0 := time.Date(2040, 1, 1, 0, 0, 0, 0, time.UTC)
	cfg := lookupConfig(JoinInner, &fakeTable{rows: map[int64][]string{1: {"x"}}})
	// PROCTIME() > 2039-01-01: true on the job's clock, false on the wall clock.
	cfg.Residual = callExpr(t, ">", expr.ProcTime(), expr.TimestampTZ(t0.AddDate(-1, 0, 0).UnixMicro()))
	f, _, err := NewLookupJoin(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h := optest.NewHarness(t, f, false, lookupLeft)
	h.Clock = exec.NewManualClock(t0)
	optest.Must(t, h.Open("", 0))
	optest.Must(t, h.Process(0, [][]any{[]any{1, "a1"}}, nil))
	optest.Must(t, h.Finish())
	optest.Must(t, h.Close())
	if want := []string{"1|a1|1|x"}; !slices.Equal(h.Rows, want) {
		t.Fatalf("rows %v, want %v", h.Rows, want)
	}
}
