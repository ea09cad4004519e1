package join

import (
	"bytes"
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/exec/expr"
	"github.com/clinksql/clinksql/exec/optest"
	"github.com/clinksql/clinksql/sqlerr"
)

var (
	// The window join tests' inputs: left (k BIGINT, ws, we TIMESTAMP(6), a VARCHAR), right (k BIGINT, ws, we
	// TIMESTAMP(6), b BIGINT). Output columns: 0 k, 1 ws, 2 we, 3 a, 4 k, 5 ws, 6 we, 7 b.
	windowLeftSchema = optest.NullableSchema("k", arrow.PrimitiveTypes.Int64, "window_start", tsUS, "window_end", tsUS,
		"a", arrow.BinaryTypes.String)
	windowRightSchema = optest.NullableSchema("k", arrow.PrimitiveTypes.Int64, "window_start", tsUS, "window_end", tsUS,
		"b", arrow.PrimitiveTypes.Int64)
	windowSchemas = [2]*arrow.Schema{windowLeftSchema, windowRightSchema}
	// windowTimeCols are the window_end columns of the output: never below the forwarded watermark.
	windowTimeCols = []int{2, 6}
)

func windowRow(k, ws, we, v any) []any { return []any{k, ws, we, v} }

// windowSide renders one side of an output row.
func windowSide(k, ws, we, v string) string { return k + "|" + jt(ws) + "|" + jt(we) + "|" + v }

const windowNulls = "NULL|NULL|NULL|NULL"

func windowConfig(typ JoinType) WindowJoinConfig {
	return WindowJoinConfig{
		JoinSpec:  JoinSpec{Type: typ, Left: windowLeftSchema, Right: windowRightSchema, LeftKeys: []int{0}, RightKeys: []int{0}},
		LeftStart: 1, LeftEnd: 2, RightStart: 1, RightEnd: 2,
	}
}

func windowJoinOp(t *testing.T, cfg WindowJoinConfig) func(int) exec.Operator {
	t.Helper()
	return timeJoinOp(t, NewWindowJoin, cfg, cfg.JoinSpec)
}

// The four join types over one script of tumbling 10 s windows plus a window [5, 10) ending with [0, 10).
func TestWindowJoinTypes(t *testing.T) {
	script := []any{
		optest.Left(windowRow(1, "00:00:00", "00:00:10", "a1"), windowRow(1, "00:00:00", "00:00:10", "a2"),
			windowRow(2, "00:00:00", "00:00:10", "a3"), windowRow(nil, "00:00:00", "00:00:10", "an")),
		optest.Right(windowRow(1, "00:00:00", "00:00:10", 100), windowRow(3, "00:00:00", "00:00:10", 101),
			windowRow(1, "00:00:10", "00:00:20", 102), windowRow(nil, "00:00:00", "00:00:10", 103)),
		optest.Left(windowRow(1, "00:00:10", "00:00:20", "a4"), windowRow(1, "00:00:05", "00:00:10", "c1"),
			windowRow(1, nil, "00:00:10", "bad")),
		optest.Right(windowRow(1, "00:00:00", "00:00:10", 104), windowRow(1, "00:00:05", "00:00:10", 200)),
		optest.AllWM("00:00:09.999999"),
		optest.Check(optest.Emitted(0)),
		optest.AllWM("00:00:10"), // [0, 10) then [5, 10) fire
		optest.Left(windowRow(1, "00:00:00", "00:00:10", "late")),
		optest.AllWM("00:00:20"),
		optest.Check(optest.Keyed(0)),
	}
	w0 := func(k, v string) string { return windowSide(k, "00:00:00", "00:00:10", v) }
	pairs1 := []string{ // key 1 of [0, 10): nested loop, left then right arrival order
		w0("1", "a1") + "|" + w0("1", "100"), w0("1", "a1") + "|" + w0("1", "104"),
		w0("1", "a2") + "|" + w0("1", "100"), w0("1", "a2") + "|" + w0("1", "104"),
	}
	nullL, nullR := w0("NULL", "an")+"|"+windowNulls, windowNulls+"|"+w0("NULL", "103")
	a3, r101 := w0("2", "a3")+"|"+windowNulls, windowNulls+"|"+w0("3", "101")
	c1 := windowSide("1", "00:00:05", "00:00:10", "c1") + "|" + windowSide("1", "00:00:05", "00:00:10", "200")
	a4 := windowSide("1", "00:00:10", "00:00:20", "a4") + "|" + windowSide("1", "00:00:10", "00:00:20", "102")
	cat := func(parts ...any) []string {
		var out []string
		for _, p := range parts {
			switch p := p.(type) {
			case string:
				out = append(out, p)
			case []string:
				out = append(out, p...)
			}
		}
		return out
	}
	for _, tc := range []struct {
		typ  JoinType
		want []string
	}{
		{JoinInner, cat(pairs1, c1, a4)},
		{JoinLeft, cat(nullL, pairs1, a3, c1, a4)},
		{JoinRight, cat(nullR, pairs1, r101, c1, a4)},
		{JoinFull, cat(nullL, nullR, pairs1, a3, r101, c1, a4)},
	} {
		optest.RunScriptCase(t, optest.ScriptCase{Name: tc.typ.String(), Schemas: windowSchemas, Script: script, Op: windowJoinOp(t, windowConfig(tc.typ)),
			Want: tc.want, Late: 1, Errors: 1, TimeCols: windowTimeCols})
	}
}

// A residual condition decides what matches within a window and key: a left row none of whose pairs pass is
// padded (left outer) at its place in the nested loop; unmatched right rows follow.
func TestWindowJoinResidual(t *testing.T) {
	cfg := windowConfig(JoinFull)
	// a <> 'a2' AND b > 100
	cfg.Residual = callExpr(t, "and",
		callExpr(t, "<>", colExpr(3, "a", arrow.BinaryTypes.String), expr.String("a2")),
		callExpr(t, ">", colExpr(7, "b", arrow.PrimitiveTypes.Int64), expr.Int64(100)))
	script := []any{
		optest.Left(windowRow(1, "00:00:00", "00:00:10", "a1"), windowRow(1, "00:00:00", "00:00:10", "a2"),
			windowRow(1, "00:00:00", "00:00:10", "a3")),
		optest.Right(windowRow(1, "00:00:00", "00:00:10", 100), windowRow(1, "00:00:00", "00:00:10", 104),
			windowRow(1, "00:00:00", "00:00:10", nil)),
		optest.AllWM("00:00:10"),
	}
	w0 := func(v string) string { return windowSide("1", "00:00:00", "00:00:10", v) }
	optest.RunScriptCase(t, optest.ScriptCase{Name: "full", Schemas: windowSchemas, Script: script, Op: windowJoinOp(t, cfg), TimeCols: windowTimeCols,
		Want: []string{
			w0("a1") + "|" + w0("104"),
			w0("a2") + "|" + windowNulls,
			w0("a3") + "|" + w0("104"),
			windowNulls + "|" + w0("100"),
			windowNulls + "|" + w0("NULL"),
		}})
	// Inner: the same pairs.
	cfg.Type = JoinInner
	optest.RunScriptCase(t, optest.ScriptCase{Name: "inner", Schemas: windowSchemas, Script: script, Op: windowJoinOp(t, cfg), TimeCols: windowTimeCols,
		Want: []string{w0("a1") + "|" + w0("104"), w0("a3") + "|" + w0("104")}})
}

// A window's rows stay in state until it fires, then leave it.
func TestWindowJoinStateCleanup(t *testing.T) {
	script := []any{
		optest.Left(windowRow(1, "00:00:00", "00:00:10", "a1"), windowRow(2, "00:00:10", "00:00:20", "a2")),
		optest.Right(windowRow(1, "00:00:00", "00:00:10", 1), windowRow(nil, "00:00:00", "00:00:10", 2)),
		optest.Check(optest.Keyed(3)), // the inner join drops the NULL-key row at once
		optest.AllWM("00:00:10"),
		optest.Check(optest.Keyed(1)),
		optest.AllWM("00:00:20"),
		optest.Check(optest.Keyed(0)),
	}
	optest.RunScriptCase(t, optest.ScriptCase{Name: "inner", Schemas: windowSchemas, Script: script, Op: windowJoinOp(t, windowConfig(JoinInner)),
		TimeCols: windowTimeCols,
		Want:     []string{windowSide("1", "00:00:00", "00:00:10", "a1") + "|" + windowSide("1", "00:00:00", "00:00:10", "1")}})
}

func TestWindowJoinValidation(t *testing.T) {
	notTS := arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int64},
		{Name: "window_start", Type: arrow.PrimitiveTypes.Int64}, {Name: "window_end", Type: tsUS},
		{Name: "b", Type: arrow.PrimitiveTypes.Int64}}, nil)
	for _, tc := range []struct {
		name string
		mod  func(c *WindowJoinConfig)
		code string
	}{
		{"start not a timestamp", func(c *WindowJoinConfig) { c.Right = notTS }, sqlerr.DatatypeMismatch},
		{"end out of range", func(c *WindowJoinConfig) { c.LeftEnd = 4 }, sqlerr.InternalError},
		{"no keys", func(c *WindowJoinConfig) { c.LeftKeys, c.RightKeys = nil, nil }, sqlerr.InternalError},
		{"residual not boolean", func(c *WindowJoinConfig) { c.Residual = colExpr(7, "b", arrow.PrimitiveTypes.Int64) },
			sqlerr.DatatypeMismatch},
	} {
		c := windowConfig(JoinInner)
		tc.mod(&c)
		if _, _, err := NewWindowJoin(c); sqlerr.Code(err) != tc.code {
			t.Errorf("%s: %v (SQLSTATE %q), want %s", tc.name, err, sqlerr.Code(err), tc.code)
		}
	}
	optest.RunScriptCase(t, optest.ScriptCase{Name: "retraction", Schemas: windowSchemas, Op: windowJoinOp(t, windowConfig(JoinInner)),
		Script:  []any{optest.InputRows{In: 0, Rows: [][]any{windowRow(1, "00:00:00", "00:00:10", "a")}, Kinds: []exec.RowKind{exec.UpdateAfter}}},
		WantErr: "append-only", Shapes: []optest.Shape{{}}})
	if _, ok := windowJoinOp(t, windowConfig(JoinInner))(0).(exec.WatermarkHolder); ok {
		t.Fatal("the window join holds the watermark back")
	}
}

// windowModel is the naive window join: rows collected per window; at the first watermark >= its end, a window's
// rows are joined per key in nested-loop order.
type windowModel struct {
	modelBase
	rows []*windowModelRow
}

type windowModelRow struct {
	side           int
	vals           []any
	key            any
	start, end     int64
	seq            int
	fired, matched bool
}

func (m *windowModel) process(in int, rows [][]any) {
	m.step++
	for _, vals := range rows {
		if vals[1] == nil || vals[2] == nil {
			m.errs++
			continue
		}
		r := &windowModelRow{side: in, vals: vals, key: vals[0], start: vals[1].(int64), end: vals[2].(int64), seq: len(m.rows)}
		if r.end <= m.wm {
			m.late++
			continue
		}
		m.rows = append(m.rows, r)
	}
}

func (m *windowModel) watermark(wm int64) {
	if !m.advance(wm) {
		return
	}
	var due []*windowModelRow
	for _, x := range m.rows {
		if !x.fired && x.end <= wm {
			x.fired = true
			due = append(due, x)
		}
	}
	// Windows by (end, start), then keys by canonical bytes; each group's rows stay in arrival order.
	slices.SortStableFunc(due, func(a, b *windowModelRow) int {
		return cmp.Or(cmp.Compare(a.end, b.end), cmp.Compare(a.start, b.start), bytes.Compare(testKeyBytes(a.key), testKeyBytes(b.key)))
	})
	for len(due) > 0 {
		n := 1
		for n < len(due) && due[n].end == due[0].end && due[n].start == due[0].start &&
			bytes.Equal(testKeyBytes(due[n].key), testKeyBytes(due[0].key)) {
			n++
		}
		var L, R []*windowModelRow
		for _, x := range due[:n] {
			if x.side == 0 {
				L = append(L, x)
			} else {
				R = append(R, x)
			}
		}
		for _, l := range L {
			found := false
			for _, r := range R {
				if l.key != nil && (!m.residual || (l.vals[3] != nil && r.vals[3] != nil && l.vals[3].(int) < r.vals[3].(int))) {
					found, r.matched = true, true
					m.emit(l.vals, r.vals)
				}
			}
			if !found && m.outer(0) {
				m.emit(l.vals, nil)
			}
		}
		for _, r := range R {
			if !r.matched && m.outer(1) {
				m.emit(nil, r.vals)
			}
		}
		due = due[n:]
	}
}

// The seeded randomized comparison with the nested-loop model (see TestIntervalJoinRandom), over tumbling
// windows of 4 and 8 (so [4, 8) and [0, 8) end together).
func TestWindowJoinRandom(t *testing.T) {
	t.Setenv("CLINK_STATE_FSYNC", "0")
	iters := 150
	if testing.Short() {
		iters = 25
	}
	for it := range iters {
		rng := rand.New(rand.NewPCG(uint64(it), 0x3d1f))
		typ := JoinType(rng.IntN(4))
		residual := rng.IntN(3) == 0
		strKeys := rng.IntN(2) == 0
		pebble := rng.IntN(2) == 0
		schemas, keys := keySchemas(strKeys, "window_start", "window_end")
		events := randomEvents(rng, 10+rng.IntN(50), keys, func(_ int, k, ts, v any) []any {
			if ts == nil {
				return []any{k, nil, nil, v}
			}
			size := int64(4 << rng.IntN(2))
			start := ts.(int64) - ((ts.(int64)%size)+size)%size
			return []any{k, start, start + size, v}
		})
		cfg := WindowJoinConfig{
			JoinSpec:  JoinSpec{Type: typ, Left: schemas[0], Right: schemas[1], LeftKeys: []int{0}, RightKeys: []int{0}},
			LeftStart: 1, LeftEnd: 2, RightStart: 1, RightEnd: 2,
		}
		if residual {
			cfg.Residual = callExpr(t, "<", colExpr(3, "v", arrow.PrimitiveTypes.Int64), colExpr(7, "w", arrow.PrimitiveTypes.Int64))
		}
		name := fmt.Sprintf("seed %d: %s residual=%v strKeys=%v pebble=%v", it, typ, residual, strKeys, pebble)
		m := &windowModel{modelBase: newTJModel(typ, residual, 4)}
		checkRandom(t, name, rng, windowJoinOp(t, cfg), schemas, events, pebble, m)
	}
}
