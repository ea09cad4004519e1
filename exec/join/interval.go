package join

import (
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"

	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/exec/rowcodec"
	"github.com/clinksql/clinksql/sqlerr"
	"github.com/clinksql/clinksql/state"
)

// IntervalJoin: Flink's time-interval join. Contract:
//
//   - Inputs: input 0 is the left side, input 1 the right; both append-only (a row kind other than Insert fails
//     the operator). The planner routes both by a hash exchange on LeftKeys / RightKeys (exec.HashKeys), so a
//     subtask sees every row of its keys; a row of a key group outside TaskContext.KeyGroups fails the operator.
//   - Match: keys equal (canonical bytes, rowcodec.Encoding; a NULL key never matches), left.ts + Lower <= right.ts
//     <= left.ts + Upper, and Residual TRUE (evaluated vectorized over the candidate pairs of a batch, with Mode
//     as its bad-value policy counting into TaskContext.Errors).
//   - Watermark convention (the window aggregate's): at watermark wm a row with time t >= wm may still arrive, one
//     with t < wm may not. So a row is late, dropped and counted in TaskContext.Late, when its own time is below
//     the combined watermark at arrival: rows older than the watermark may already have lost partners, since
//     the other side keeps a row only while a partner can still arrive on time (below). A NULL time is dropped
//     and counted in TaskContext.Errors.
//   - Bound: the last time a partner of a row can have: left ts + Upper, right ts - Lower (saturating). A row is
//     kept (memory, then state) until the watermark passes its bound, wm > bound, the first watermark at which no
//     on-time row can match it any more; then it is dropped, and if its side is outer (Left/Full for left rows,
//     Right/Full for right rows) and it never matched, it is emitted padded with NULLs. Rows whose bound is
//     already passed when they arrive (only with Upper < 0 or Lower > 0) still match the rows kept, and fire at
//     the next watermark. A row with a NULL key (inner side: dropped at once) fires the same way, at its bound.
//   - Output: JoinOutputSchema, inserts only. A pair is emitted when its later row arrives (in Process): rows of
//     the batch in order, each with its partners in their arrival order. Outer rows are emitted in OnWatermark,
//     ordered by (row time, key bytes, arrival). The order is a function of the input order alone (batching,
//     barriers and restores do not change it). Batches hold at most emitRows rows.
//   - Output watermark (exec.WatermarkHolder): OutputWatermark(wm) = wm - max(Upper, -Lower, 0), saturating.
//     With W the watermark forwarded before an emission (the hold of the previous combined watermark P): an
//     outer left row fires at the first combined wm > l.ts + Upper, so P <= l.ts + Upper (or l arrived on time
//     after P, l.ts >= P) and l.ts >= P - Upper; an outer right row likewise has r.ts >= P + Lower; a pair
//     emitted in Process at combined P has its arriving row at >= P and its kept partner with bound >= P (it
//     was not dropped), so l.ts >= P - Upper and r.ts >= P + Lower. Every time column of an emitted row is
//     therefore >= P - max(Upper, -Lower) >= W: nothing the join emits is late downstream. max(Upper, -Lower)
//     is never negative (Lower <= Upper); the 0 documents that the watermark is never pushed ahead.
//   - State: the working set lives in memory; OnBarrier writes the rows added or newly matched since the last
//     barrier and deletes the stored rows dropped since, plus the watermark and the arrival counter; Open
//     rebuilds the working set with a Scan of its key groups, so a restore neither re-emits nor loses a row.
//
// State layout (side 0 left, 1 right):
//
//	KeyedKey(kg, 1+side, seq(8))    ts(8, big endian) flags(1) uvarint(len(key)) key row
//	OperatorKey("intervaljoin/meta") watermark(8) next seq(8)
//
// seq is the row's arrival number (unique in the subtask); flags holds flagMatched and flagNullKey; key is the
// canonical key bytes and row the canonical bytes of every column of the row's side (rowcodec.Encoding over all
// columns: a NULL marker, then the value).

var intervalMetaKey = state.OperatorKey("intervaljoin/meta")

// intervalPlan is the validated interval join, shared by its subtasks.
type intervalPlan struct {
	*timeSpec
	time [2]int
	// lo and hi: a row of side s at time t matches rows of the other side with times in [t+lo[s], t+hi[s]].
	lo, hi [2]int64
	// reach: a row's bound is t + reach[side].
	reach [2]int64
	hold  int64
}

// NewIntervalJoin validates cfg and returns the operator factory and its output schema (JoinOutputSchema). Errors
// are sqlerr errors: 42804 for a time column that is not a timestamp or a residual condition that is not
// boolean, 0A000 for a key or column type the join cannot keep, 22023 for Lower > Upper, XX000 for a malformed
// config (a planner bug).
func NewIntervalJoin(cfg IntervalJoinConfig) (func(subtask int) exec.Operator, *arrow.Schema, error) {
	spec, err := planTimeJoin(cfg.JoinSpec, "interval join")
	if err != nil {
		return nil, nil, err
	}
	if err := checkTimeColumn(cfg.Left, cfg.LeftTime, "interval join", "left time"); err != nil {
		return nil, nil, err
	}
	if err := checkTimeColumn(cfg.Right, cfg.RightTime, "interval join", "right time"); err != nil {
		return nil, nil, err
	}
	if cfg.Lower > cfg.Upper {
		return nil, nil, sqlerr.New(sqlerr.InvalidParameter, sqlerr.NoPos,
			"interval join lower bound %d must not be greater than its upper bound %d", cfg.Lower, cfg.Upper)
	}
	if cfg.Lower == math.MinInt64 {
		return nil, nil, sqlerr.New(sqlerr.InvalidParameter, sqlerr.NoPos, "interval join lower bound out of range")
	}
	p := &intervalPlan{timeSpec: spec, time: [2]int{cfg.LeftTime, cfg.RightTime}}
	p.lo = [2]int64{cfg.Lower, -cfg.Upper}
	p.hi = [2]int64{cfg.Upper, -cfg.Lower}
	p.reach = [2]int64{cfg.Upper, -cfg.Lower}
	p.hold = max(cfg.Upper, -cfg.Lower, 0)
	return func(int) exec.Operator { return &intervalJoin{p: p} }, spec.out, nil
}

// intervalJoin is one subtask of an interval join.
type intervalJoin struct {
	timeJoin
	p *intervalPlan
	// The groups of the keys with kept rows (never a NULL key).
	ints map[int64]*rowGroup
	strs map[string]*rowGroup
	// Every kept row is in one of the fifos (per side fifosPerSide queues, each in bound order: a row goes to the
	// queue whose last bound is the largest not above its own, so rows arriving in time order never reach the
	// heap, nor do rows of up to fifosPerSide upstream subtasks each in time order, interleaved by batch) or heap
	// (the others, ordered by bound): OnWatermark takes what the watermark passed, smallest bound first.
	fifo [2][fifosPerSide]boundQueue
	heap []heapEntry

	// kept builds the kept side's columns of candidate pairs, per side; cc is arrow compute's context (take,
	// filter) on TaskContext.Alloc.
	kept    [2]*array.RecordBuilder
	keptDec [2]rowDecoder
	cc      context.Context
	// spare holds groups emptied by drop, for reuse (with their lists' capacity).
	spare []*rowGroup

	// Per batch.
	tsScratch []int64
	arrived   []int32     // rows of the batch taken in, in order
	keep      []bool      // per arrived row: kept past the batch
	agrp      []*rowGroup // per arrived row: its key's group, nil for none (a NULL key, or not kept and no group)
	arow      []int32     // per arrived row: its row in the batch
	candA     []int32     // candidate pairs: the arriving row ...
	candRow   []int32     // ... its row in the batch ...
	candS     []int32     // ... and the kept row of the other side
	fired     []int32
}

var (
	_ exec.Operator        = (*intervalJoin)(nil)
	_ exec.WatermarkHolder = (*intervalJoin)(nil)
)

// OutputWatermark holds the forwarded watermark back by max(Upper, -Lower, 0): see the contract above.
func (j *intervalJoin) OutputWatermark(wm int64) int64 { return exec.AddSat(wm, -j.p.hold) }

func (j *intervalJoin) Open(ctx *exec.TaskContext) error {
	j.timeJoin = timeJoin{spec: j.p.timeSpec, meta: intervalMetaKey, rowKey: j.stateKey, timed: true}
	j.cc = computeCtx(ctx.Alloc)
	j.ints = map[int64]*rowGroup{}
	j.strs = map[string]*rowGroup{}
	if err := j.open(ctx, j.restoreRow); err != nil {
		return err
	}
	j.heapify()
	return nil
}

// restoreRow rebuilds one kept row from its backend entry.
func (j *intervalJoin) restoreRow(kg, side int, uk, v []byte) error {
	if len(uk) != 8 {
		return rowcodec.ErrState
	}
	ts, flags, key, row, err := parseTimedValue(v)
	if err != nil {
		return err
	}
	t := &j.rows
	id := t.restore(row, side, kg, ts, exec.AddSat(ts, j.p.reach[side]), binary.BigEndian.Uint64(uk), flags)
	ki, ks, err := parseGroupKey(j.p.keyEnc.Mode, key)
	if err != nil {
		return err
	}
	var g *rowGroup
	if flags&flagNullKey != 0 {
		g = &rowGroup{i: ki, s: ks, null: true}
	} else {
		g = j.group(ki, ks)
		g.appendRow(side, id, ts)
	}
	t.grp[id] = g
	j.heap = append(j.heap, heapEntry{bound: t.t2[id], id: id})
	return nil
}

// group returns the group of a (non-NULL) key, creating it.
func (j *intervalJoin) group(i int64, s string) *rowGroup {
	var g *rowGroup
	if j.p.keyEnc.Mode == rowcodec.KeyInt {
		if g = j.ints[i]; g != nil {
			return g
		}
		g = j.spareGroup()
		g.i = i
		j.ints[i] = g
		return g
	}
	if g = j.strs[s]; g != nil {
		return g
	}
	g = j.spareGroup()
	g.s = s
	j.strs[s] = g
	return g
}

func (j *intervalJoin) spareGroup() *rowGroup {
	n := len(j.spare)
	if n == 0 {
		return &rowGroup{}
	}
	g := j.spare[n-1]
	j.spare[n-1] = nil
	j.spare = j.spare[:n-1]
	return g
}

func (j *intervalJoin) Process(input int, b exec.Batch, out exec.Emitter) error {
	defer b.Release()
	n, err := j.checkBatch(input, b)
	if n == 0 || err != nil {
		return err
	}
	s, o := input, 1-input
	p := j.p
	rec := b.Rec
	tsCol, ok := rec.Column(p.time[s]).(*array.Timestamp)
	if !ok {
		return fmt.Errorf("interval join: time column is %s", rec.Column(p.time[s]).DataType())
	}
	ts := rowcodec.Micros(tsCol, &j.tsScratch)
	tsNulls := tsCol.NullN() > 0
	nullKey, err := j.loadBatch(s, b)
	defer j.endBatch()
	if err != nil {
		return err
	}
	t := &j.rows
	mode := p.keyEnc.Mode
	lo, hi, reach := p.lo[s], p.hi[s], p.reach[s]
	j.arrived, j.keep = j.arrived[:0], j.keep[:0]
	j.agrp, j.arow = j.agrp[:0], j.arow[:0]
	j.candA, j.candS, j.candRow = j.candA[:0], j.candS[:0], j.candRow[:0]
	var late, bad int64
	// Three passes over the batch, each a short loop whose iterations are independent, so the CPU overlaps their
	// cache misses: take the rows in and find their groups; list the candidate pairs; append the kept rows to their
	// groups (a batch never meets itself: its rows probe only the other side's lists).
	for i := 0; i < n; i++ {
		if tsNulls && tsCol.IsNull(i) {
			bad++
			continue
		}
		ti := ts[i]
		if ti < j.wm {
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
		id := j.addRow(s, i, kg, ti, exec.AddSat(ti, reach))
		j.arrived = append(j.arrived, id)
		j.arow = append(j.arow, int32(i))
		// Kept past the batch while an on-time row can still match it, or until its outer row fires.
		j.keep = append(j.keep, t.t2[id] >= j.wm || p.outer[s])
		keep := j.keep[len(j.keep)-1]
		if null {
			// Never matched, so in no group's lists; the group only names the key for the outer row's order.
			t.flag[id] |= flagNullKey
			g := &rowGroup{null: true}
			if mode == rowcodec.KeyBytes {
				g.s = string(j.keys.BytesOf(i))
			}
			t.grp[id] = g
			j.agrp = append(j.agrp, nil)
			continue
		}
		var g *rowGroup
		if mode == rowcodec.KeyInt {
			g = j.ints[j.keys.Ints[i]]
		} else {
			g = j.strs[string(j.keys.BytesOf(i))] // no allocation for the lookup
		}
		if g == nil && keep {
			if mode == rowcodec.KeyInt {
				g = j.group(j.keys.Ints[i], "")
			} else {
				g = j.group(0, string(j.keys.BytesOf(i)))
			}
		}
		j.agrp = append(j.agrp, g) // nil: no rows of the key, and this one is not kept
	}
	for a, g := range j.agrp {
		if g == nil {
			continue
		}
		id, i := j.arrived[a], j.arow[a]
		ti := t.t1[id]
		if times := g.times[o]; len(times) > 0 {
			from, to := exec.AddSat(ti, lo), exec.AddSat(ti, hi)
			rows := g.rows[o]
			if !g.unsorted[o] {
				k := 0
				if len(times) > 16 {
					k, _ = slices.BinarySearch(times, from)
				} else {
					for k < len(times) && times[k] < from {
						k++
					}
				}
				for ; k < len(times) && times[k] <= to; k++ {
					j.candA = append(j.candA, id)
					j.candRow = append(j.candRow, i)
					j.candS = append(j.candS, rows[k])
				}
			} else {
				for k, v := range times {
					if v >= from && v <= to {
						j.candA = append(j.candA, id)
						j.candRow = append(j.candRow, i)
						j.candS = append(j.candS, rows[k])
					}
				}
			}
		}
	}
	for a, g := range j.agrp {
		if g != nil && j.keep[a] {
			id := j.arrived[a]
			t.grp[id] = g
			g.appendRow(s, id, t.t1[id])
		}
	}
	j.ctx.Late.Add(late)
	j.ctx.Errors.Add(bad)
	if err := j.emitPairs(s, rec, out); err != nil {
		return err
	}
	for k, id := range j.arrived {
		if !j.keep[k] {
			t.release(id)
			continue
		}
		j.dirty = append(j.dirty, id)
		j.queue(s, id)
	}
	return nil
}

// emitPairs emits the candidate pairs of the batch rec (side s arriving) that satisfy the residual condition, in
// candidate order, and marks their rows matched. A chunk of pairs becomes one record: the arriving side's columns
// are taken from rec with arrow's take kernel, the kept side's are decoded from the row table; the residual
// condition is evaluated over that record, which is then filtered by it.
func (j *intervalJoin) emitPairs(s int, rec arrow.RecordBatch, out exec.Emitter) error {
	o := 1 - s
	for start := 0; start < len(j.candA); start += emitRows {
		end := min(start+emitRows, len(j.candA))
		taken, err := exec.TakeRows(j.cc, j.ctx.Alloc, exec.Batch{Rec: rec}, j.candRow[start:end])
		if err != nil {
			return err
		}
		if j.kept[o] == nil {
			j.kept[o] = array.NewRecordBuilder(j.ctx.Alloc, j.p.schemas[o])
			j.keptDec[o] = newRowDecoder(&j.p.rowEnc[o], j.kept[o].Fields())
		}
		kb, dec := j.kept[o], &j.keptDec[o]
		kb.Reserve(end - start)
		for _, id := range j.candS[start:end] {
			if err := dec.decode(j.rows.data[id]); err != nil {
				taken.Release()
				return err
			}
		}
		kept := kb.NewRecordBatch()
		cols := make([]arrow.Array, 0, j.p.out.NumFields())
		sides := [2]arrow.RecordBatch{taken.Rec, kept}
		if s == 1 {
			sides[0], sides[1] = kept, taken.Rec
		}
		for _, r := range sides {
			cols = append(cols, r.Columns()...)
		}
		pairs := array.NewRecordBatch(j.p.out, cols, int64(end-start))
		taken.Release()
		kept.Release()
		if j.p.spec.Residual != nil {
			if pairs, err = j.filter(pairs, start); err != nil {
				return err
			}
		} else {
			for k := start; k < end; k++ {
				j.matched(j.candA[k])
				j.matched(j.candS[k])
			}
		}
		if pairs.NumRows() == 0 {
			pairs.Release()
			continue
		}
		if err := out.Emit(exec.Batch{Rec: pairs}); err != nil {
			return err
		}
	}
	return nil
}

// filter evaluates the residual condition over a chunk of candidate pairs (candidates start...), marks the rows
// of the pairs it keeps matched and returns those pairs. It takes over pairs.
func (j *intervalJoin) filter(pairs arrow.RecordBatch, start int) (arrow.RecordBatch, error) {
	defer pairs.Release()
	res, err := j.p.spec.Residual.Eval(&j.ectx, pairs)
	if err != nil {
		return nil, err
	}
	defer res.Release()
	mask := res.(*array.Boolean)
	nulls := mask.NullN() > 0
	n := 0
	for k := 0; k < mask.Len(); k++ {
		if mask.Value(k) && (!nulls || mask.IsValid(k)) {
			j.matched(j.candA[start+k])
			j.matched(j.candS[start+k])
			n++
		}
	}
	if n == mask.Len() {
		pairs.Retain()
		return pairs, nil
	}
	return compute.FilterRecordBatch(j.cc, pairs, res, compute.DefaultFilterOptions())
}

// matched flags a row of an outer side as matched; a stored row is written again at the next barrier.
func (j *intervalJoin) matched(id int32) {
	t := &j.rows
	f := t.flag[id]
	if f&flagMatched != 0 || !j.p.outer[t.side(id)] {
		return
	}
	t.flag[id] = f | flagMatched
	if f&(flagStored|flagDirty) == flagStored {
		t.flag[id] |= flagDirty
		j.dirty = append(j.dirty, id)
	}
}

func (j *intervalJoin) OnWatermark(wm int64, out exec.Emitter) error {
	if wm <= j.wm {
		return nil
	}
	j.wm = wm
	t := &j.rows
	j.fired = j.fired[:0]
	for {
		src, b := -1, int64(0)
		if len(j.heap) > 0 {
			src, b = 2, j.heap[0].bound
		}
		var from *boundQueue
		for side := range j.fifo {
			for k := range j.fifo[side] {
				if q := &j.fifo[side][k]; q.len() > 0 && (src < 0 || q.first().bound < b) {
					src, b, from = side, q.first().bound, q
				}
			}
		}
		if src < 0 || (b >= wm && wm != exec.MaxWatermark) {
			break
		}
		if src == 2 {
			j.fired = append(j.fired, j.heapPop())
		} else {
			j.fired = append(j.fired, from.pop())
		}
	}
	if len(j.fired) == 0 {
		return nil
	}
	// The outer rows first, in (time, key bytes, arrival) order; fired is reused for them after the rest.
	n := len(j.fired)
	for _, id := range j.fired[:n] {
		if j.p.outer[t.side(id)] && t.flag[id]&flagMatched == 0 {
			j.fired = append(j.fired, id)
		}
	}
	outer := j.fired[n:]
	mode := j.p.keyEnc.Mode
	slices.SortFunc(outer, func(a, b int32) int {
		return cmp.Or(cmp.Compare(t.t1[a], t.t1[b]), compareGroupKeys(t.grp[a], t.grp[b], mode), cmp.Compare(t.seq[a], t.seq[b]))
	})
	for _, id := range outer {
		l, r := id, int32(-1)
		if t.side(id) == 1 {
			l, r = -1, id
		}
		if err := j.out.emit(t, l, r, out); err != nil {
			return err
		}
	}
	if err := j.out.flush(out); err != nil {
		return err
	}
	for _, id := range j.fired[:n] {
		j.drop(id)
	}
	j.fired = j.fired[:0]
	return nil
}

// drop forgets a row; its backend entry, if any, is deleted at the next barrier.
func (j *intervalJoin) drop(id int32) {
	t := &j.rows
	side := t.side(id)
	if g := t.grp[id]; !g.null {
		list, times := g.rows[side], g.times[side]
		// Rows mostly leave in arrival order: a long list drops its head by reslicing, a short one moves its
		// rest down and keeps its capacity for the next append.
		if len(list) > 16 && list[0] == id {
			list, times = list[1:], times[1:]
		} else if k := slices.Index(list, id); k >= 0 {
			for ; k+1 < len(list); k++ { // short: a loop beats memmove's call
				list[k], times[k] = list[k+1], times[k+1]
			}
			list, times = list[:len(list)-1], times[:len(times)-1]
		}
		g.rows[side], g.times[side] = list, times
		if len(list) == 0 {
			g.unsorted[side] = false
		}
		if len(g.rows[0]) == 0 && len(g.rows[1]) == 0 {
			if j.p.keyEnc.Mode == rowcodec.KeyInt {
				delete(j.ints, g.i)
			} else {
				delete(j.strs, g.s)
			}
			// No row names the group any more: keep it, with its lists' capacity, for the next new key.
			*g = rowGroup{rows: [2][]int32{g.rows[0][:0], g.rows[1][:0]}, times: [2][]int64{g.times[0][:0], g.times[1][:0]}}
			if len(j.spare) < 4096 {
				j.spare = append(j.spare, g)
			}
		}
	}
	j.forget(id)
}

func (j *intervalJoin) stateKey(id int32) []byte {
	t := &j.rows
	var seq [8]byte
	binary.BigEndian.PutUint64(seq[:], t.seq[id])
	return state.KeyedKey(int(t.kg[id]), byte(1+t.side(id)), seq[:])
}

func (j *intervalJoin) OnBarrier(uint64) error {
	j.barrier()
	return nil
}

func (j *intervalJoin) Close() error {
	j.out.close()
	for i, b := range j.kept {
		if b != nil {
			b.Release()
			j.kept[i] = nil
		}
	}
	return nil
}

// fifosPerSide is the bound-ordered queues per side. After a hash exchange a subtask's input interleaves the
// batches of its upstream subtasks, each in time order but not in order with each other: with one queue the rows
// of all but one went to the heap (q7 at parallelism 2 spent 4% of its CPU in heap pops); one queue per upstream
// subtask keeps them all out of it, up to this many.
const fifosPerSide = 4

// queue adds a kept row of side s: to the side's queue with the largest last bound not above the row's (an
// empty one if none), so each queue stays in bound order; to the heap when every queue's last bound is above it.
func (j *intervalJoin) queue(s int, id int32) {
	b := j.rows.t2[id]
	var best, empty *boundQueue
	for k := range j.fifo[s] {
		q := &j.fifo[s][k]
		switch {
		case q.len() == 0:
			if empty == nil {
				empty = q
			}
		case q.last().bound <= b && (best == nil || q.last().bound > best.last().bound):
			best = q
		}
	}
	if best == nil {
		best = empty
	}
	if best != nil {
		best.q = append(best.q, heapEntry{bound: b, id: id})
		return
	}
	j.heapPush(id)
}

// boundQueue is a FIFO of kept rows in bound order.
type boundQueue struct {
	q    []heapEntry
	head int
}

func (q *boundQueue) len() int          { return len(q.q) - q.head }
func (q *boundQueue) first() *heapEntry { return &q.q[q.head] }
func (q *boundQueue) last() *heapEntry  { return &q.q[len(q.q)-1] }

func (q *boundQueue) pop() int32 {
	id := q.q[q.head].id
	q.head++
	if q.head == len(q.q) {
		q.q, q.head = q.q[:0], 0
	} else if q.head >= 1024 && q.head*2 >= len(q.q) {
		n := copy(q.q, q.q[q.head:])
		q.q, q.head = q.q[:n], 0
	}
	return id
}

// heapEntry is a kept row in the heap, with its bound: comparisons do not touch the row table.
type heapEntry struct {
	bound int64
	id    int32
}

func (j *intervalJoin) heapPush(id int32) {
	h := append(j.heap, heapEntry{bound: j.rows.t2[id], id: id})
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if h[i].bound >= h[p].bound {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
	j.heap = h
}

func (j *intervalJoin) heapPop() int32 {
	h := j.heap
	top := h[0].id
	n := len(h) - 1
	h[0] = h[n]
	j.heap = h[:n]
	j.heapDown(0)
	return top
}

func (j *intervalJoin) heapDown(i int) {
	h := j.heap
	for {
		c := 2*i + 1
		if c >= len(h) {
			return
		}
		if c+1 < len(h) && h[c+1].bound < h[c].bound {
			c++
		}
		if h[c].bound >= h[i].bound {
			return
		}
		h[i], h[c] = h[c], h[i]
		i = c
	}
}

func (j *intervalJoin) heapify() {
	for i := len(j.heap)/2 - 1; i >= 0; i-- {
		j.heapDown(i)
	}
}
