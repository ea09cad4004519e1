package join

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/exec/rowcodec"
	"github.com/clinksql/clinksql/state"
)

// WindowJoin: Flink's window join (Nexmark q8's shape): two windowed inputs joined per window. Contract:
//
//   - Inputs: input 0 is the left side, input 1 the right; both append-only (a row kind other than Insert fails
//     the operator, as in the window aggregate). Each row carries the window_start and window_end of its window
//     (LeftStart/LeftEnd, RightStart/RightEnd: timestamps of any unit). Routing as for every keyed operator: a
//     hash exchange on the keys (exec.HashKeys); a row of a key group outside TaskContext.KeyGroups fails.
//   - Match: equal window_start and window_end, keys equal (a NULL key never matches), Residual TRUE. A row with
//     a NULL key is dropped at arrival on an inner side and emitted padded when its window fires on an outer one.
//   - Firing: rows are buffered per window and key; when the watermark reaches a window's end (wm >= end: the
//     upstream window aggregate emits the window at that same watermark, just before forwarding it), the rows
//     of both sides are joined and the window forgotten. A row whose window_end <= the watermark at arrival is
//     late: dropped, counted in TaskContext.Late. A NULL window_start or window_end is dropped and counted in
//     TaskContext.Errors.
//   - Output: JoinOutputSchema, inserts only, ordered by window_end, window_start, key bytes; within a window and
//     key, nested-loop order: each left row in arrival order with its partners in right arrival order (or,
//     when it has none and the left side is outer, the left row padded with NULLs), then the unmatched right
//     rows in arrival order when the right side is outer. Batches hold at most emitRows rows.
//   - Output watermark: forwarded as it is, as Flink's window join does. Every row emitted at watermark wm has
//     window_end <= wm, but window_end > the watermark forwarded before (its window had not fired), so its
//     window_end columns are never late downstream; its window_start and other time columns are older, which a
//     downstream operator windowing over them must tolerate (as in Flink).
//   - State: rows live in memory; OnBarrier writes the rows added since the last barrier and deletes those of
//     the windows fired since, plus the watermark and the arrival counter; Open rebuilds the windows with a
//     Scan of its key groups.
//
// State layout (side 0 left, 1 right):
//
//	KeyedKey(kg, 1+side, end(8) start(8) seq(8))   flags(1) uvarint(len(key)) key row
//	OperatorKey("windowjoin/meta")                  watermark(8) next seq(8)
//
// end and start are sign-flipped big endian (rowcodec.AppendOrderedInt), seq the row's arrival number; flags holds
// flagNullKey; key and row are canonical bytes as in the interval join.

var windowMetaKey = state.OperatorKey("windowjoin/meta")

// windowJoinPlan is the validated window join, shared by its subtasks.
type windowJoinPlan struct {
	*timeSpec
	start, end [2]int
}

// NewWindowJoin validates cfg and returns the operator factory and its output schema (JoinOutputSchema). Errors
// are sqlerr errors: 42804 for a window column that is not a timestamp or a residual condition that is not
// boolean, 0A000 for a key or column type the join cannot keep, XX000 for a malformed config (a planner bug).
func NewWindowJoin(cfg WindowJoinConfig) (func(subtask int) exec.Operator, *arrow.Schema, error) {
	spec, err := planTimeJoin(cfg.JoinSpec, "window join")
	if err != nil {
		return nil, nil, err
	}
	for _, c := range []struct {
		sc   *arrow.Schema
		i    int
		role string
	}{
		{cfg.Left, cfg.LeftStart, "left window_start"}, {cfg.Left, cfg.LeftEnd, "left window_end"},
		{cfg.Right, cfg.RightStart, "right window_start"}, {cfg.Right, cfg.RightEnd, "right window_end"},
	} {
		if err := checkTimeColumn(c.sc, c.i, "window join", c.role); err != nil {
			return nil, nil, err
		}
	}
	p := &windowJoinPlan{timeSpec: spec, start: [2]int{cfg.LeftStart, cfg.RightStart}, end: [2]int{cfg.LeftEnd, cfg.RightEnd}}
	return func(int) exec.Operator { return &windowJoin{p: p} }, spec.out, nil
}

// joinWindow is one window's rows by key.
type joinWindow struct {
	start, end int64
	ints       map[int64]*rowGroup  // rowcodec.KeyInt
	strs       map[string]*rowGroup // rowcodec.KeyBytes, NULL keys included (flagged null)
	null       *rowGroup            // rowcodec.KeyInt: the NULL key
}

func (w *joinWindow) Window() exec.WindowID { return exec.WindowID{Start: w.start, End: w.end} }

// windowJoin is one subtask of a window join.
type windowJoin struct {
	timeJoin
	p    *windowJoinPlan
	wins map[exec.WindowID]*joinWindow
	// nextFire is at most the smallest end of a buffered window: OnWatermark below it has nothing to do.
	nextFire int64

	scratch pairOutput

	// Per batch.
	startScr, endScr []int64
	// Per firing.
	due      []*joinWindow
	groups   []*rowGroup
	ls, rs   []int32
	mask     []bool
	matchedR []bool
}

var _ exec.Operator = (*windowJoin)(nil)

func (j *windowJoin) Open(ctx *exec.TaskContext) error {
	j.timeJoin = timeJoin{spec: j.p.timeSpec, meta: windowMetaKey, rowKey: j.stateKey}
	j.scratch = pairOutput{spec: j.p.timeSpec, ctx: ctx}
	j.nextFire = math.MaxInt64
	j.wins = map[exec.WindowID]*joinWindow{}
	return j.open(ctx, j.restoreRow)
}

// restoreRow rebuilds one buffered row from its backend entry; a key group's rows of one side come in (end,
// start, seq) order, so every group's lists are in arrival order again.
func (j *windowJoin) restoreRow(kg, side int, uk, v []byte) error {
	if len(uk) != 24 {
		return rowcodec.ErrState
	}
	end, start, seq := rowcodec.OrderedInt(uk), rowcodec.OrderedInt(uk[8:]), binary.BigEndian.Uint64(uk[16:])
	flags, key, row, err := parseRowValue(v)
	if err != nil {
		return err
	}
	ki, ks, err := parseGroupKey(j.p.keyEnc.Mode, key)
	if err != nil {
		return err
	}
	t := &j.rows
	id := t.restore(row, side, kg, start, end, seq, flags&flagNullKey)
	g := j.group(j.window(start, end), ki, ks, flags&flagNullKey != 0)
	t.grp[id] = g
	g.rows[side] = append(g.rows[side], id)
	return nil
}

func (j *windowJoin) window(start, end int64) *joinWindow {
	id := exec.WindowID{Start: start, End: end}
	w := j.wins[id]
	if w == nil {
		w = &joinWindow{start: start, end: end}
		if j.p.keyEnc.Mode == rowcodec.KeyInt {
			w.ints = map[int64]*rowGroup{}
		} else {
			w.strs = map[string]*rowGroup{}
		}
		j.wins[id] = w
		j.nextFire = min(j.nextFire, end)
	}
	return w
}

// group returns the group of a key in w, creating it; s is the canonical key bytes (rowcodec.KeyBytes), null whether
// a key column is NULL.
func (j *windowJoin) group(w *joinWindow, i int64, s string, null bool) *rowGroup {
	if j.p.keyEnc.Mode == rowcodec.KeyInt && null {
		if w.null == nil {
			w.null = &rowGroup{null: true}
		}
		return w.null
	}
	return findGroup(j.p.keyEnc.Mode, w.ints, w.strs, i, s, null)
}

// groupOfRow returns the group of row i of the batch (keys loaded in j.keys) in w, creating it.
func (j *windowJoin) groupOfRow(w *joinWindow, i int, null bool) *rowGroup {
	if j.p.keyEnc.Mode == rowcodec.KeyInt {
		return j.group(w, j.keys.Ints[i], "", null)
	}
	if g := w.strs[string(j.keys.BytesOf(i))]; g != nil { // no allocation for the lookup
		return g
	}
	return j.group(w, 0, string(j.keys.BytesOf(i)), null)
}

func (j *windowJoin) Process(input int, b exec.Batch, _ exec.Emitter) error {
	defer b.Release()
	n, err := j.checkBatch(input, b)
	if n == 0 || err != nil {
		return err
	}
	s := input
	p := j.p
	rec := b.Rec
	startCol, ok1 := rec.Column(p.start[s]).(*array.Timestamp)
	endCol, ok2 := rec.Column(p.end[s]).(*array.Timestamp)
	if !ok1 || !ok2 {
		return fmt.Errorf("window join: window columns are %s and %s", rec.Column(p.start[s]).DataType(),
			rec.Column(p.end[s]).DataType())
	}
	starts, ends := rowcodec.Micros(startCol, &j.startScr), rowcodec.Micros(endCol, &j.endScr)
	timeNulls := startCol.NullN() > 0 || endCol.NullN() > 0
	nullKey, err := j.loadBatch(s, b)
	defer j.endBatch()
	if err != nil {
		return err
	}
	t := &j.rows
	var late, bad int64
	var w *joinWindow
	for i := 0; i < n; i++ {
		if timeNulls && (startCol.IsNull(i) || endCol.IsNull(i)) {
			bad++
			continue
		}
		start, end := starts[i], ends[i]
		if end <= j.wm {
			late++
			continue
		}
		kg, null, ok, err := j.admit(s, i, nullKey)
		if err != nil {
			return err
		}
		if !ok {
			continue // it can never be part of the output
		}
		if w == nil || w.start != start || w.end != end {
			w = j.window(start, end)
		}
		g := j.groupOfRow(w, i, null)
		id := j.addRow(s, i, kg, start, end)
		if null {
			t.flag[id] |= flagNullKey
		}
		t.grp[id] = g
		g.rows[s] = append(g.rows[s], id)
		j.dirty = append(j.dirty, id)
	}
	j.ctx.Late.Add(late)
	j.ctx.Errors.Add(bad)
	return nil
}

func (j *windowJoin) OnWatermark(wm int64, out exec.Emitter) error {
	if wm <= j.wm {
		return nil
	}
	j.wm = wm
	if wm < j.nextFire {
		return nil
	}
	j.due, j.nextFire = exec.DueWindows(j.wins, wm, j.due[:0])
	mode := j.p.keyEnc.Mode
	for _, w := range j.due {
		j.groups = rowcodec.AppendGroups(j.groups[:0], w.null, w.null != nil, w.ints, w.strs)
		slices.SortFunc(j.groups, func(a, b *rowGroup) int { return compareGroupKeys(a, b, mode) })
		for _, g := range j.groups {
			if err := j.fireGroup(g, out); err != nil {
				return err
			}
			for _, list := range g.rows {
				for _, id := range list {
					j.forget(id)
				}
			}
		}
		delete(j.wins, exec.WindowID{Start: w.start, End: w.end})
	}
	j.due = j.due[:0]
	return j.out.flush(out)
}

// fireGroup emits the join of one key's rows in one window.
func (j *windowJoin) fireGroup(g *rowGroup, out exec.Emitter) error {
	t := &j.rows
	L, R := g.rows[0], g.rows[1]
	outerL, outerR := j.p.outer[0], j.p.outer[1]
	if g.null || len(L) == 0 || len(R) == 0 {
		if outerL {
			for _, l := range L {
				if err := j.out.emit(t, l, -1, out); err != nil {
					return err
				}
			}
		}
		if outerR {
			for _, r := range R {
				if err := j.out.emit(t, -1, r, out); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if j.p.spec.Residual == nil { // every pair matches: no outer rows
		for _, l := range L {
			for _, r := range R {
				if err := j.out.emit(t, l, r, out); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if cap(j.matchedR) < len(R) {
		j.matchedR = make([]bool, len(R))
	}
	matchedR := j.matchedR[:len(R)]
	clear(matchedR)
	// Left rows in chunks of about emitRows candidate pairs: the residual is evaluated a chunk at a time.
	for start := 0; start < len(L); {
		j.ls, j.rs = j.ls[:0], j.rs[:0]
		end := start
		for end < len(L) && (end == start || len(j.ls)+len(R) <= emitRows) {
			for _, r := range R {
				j.ls = append(j.ls, L[end])
				j.rs = append(j.rs, r)
			}
			end++
		}
		var err error
		if j.mask, err = residualMask(j.p.timeSpec, &j.ectx, &j.scratch, t, j.ls, j.rs, j.mask); err != nil {
			return err
		}
		k := 0
		for _, l := range L[start:end] {
			found := false
			for ri, r := range R {
				if j.mask[k] {
					found, matchedR[ri] = true, true
					if err := j.out.emit(t, l, r, out); err != nil {
						return err
					}
				}
				k++
			}
			if !found && outerL {
				if err := j.out.emit(t, l, -1, out); err != nil {
					return err
				}
			}
		}
		start = end
	}
	if outerR {
		for ri, r := range R {
			if !matchedR[ri] {
				if err := j.out.emit(t, -1, r, out); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func (j *windowJoin) stateKey(id int32) []byte {
	t := &j.rows
	uk := make([]byte, 0, 24)
	uk = rowcodec.AppendOrderedInt(uk, t.t2[id])
	uk = rowcodec.AppendOrderedInt(uk, t.t1[id])
	uk = binary.BigEndian.AppendUint64(uk, t.seq[id])
	return state.KeyedKey(int(t.kg[id]), byte(1+t.side(id)), uk)
}

func (j *windowJoin) OnBarrier(uint64) error {
	j.barrier()
	return nil
}

func (j *windowJoin) Close() error {
	j.out.close()
	j.scratch.close()
	return nil
}
