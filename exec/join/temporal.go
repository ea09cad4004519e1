package join

import (
	"container/heap"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/exec/rowcodec"
	"github.com/clinksql/clinksql/state"
)

// TemporalJoin: Flink's event-time temporal join, `l JOIN r FOR SYSTEM_TIME AS OF l.ts ON l.k = r.k`: each left row
// joins the version of its key that the right input (a versioned table) held at the left row's time. Contract:
//
//   - Inputs: input 0 is the left side, append-only (another row kind fails the operator); input 1 the right side,
//     a changelog whose key (RightKeys) identifies a version: an Insert or UpdateAfter row is the version of its
//     key valid from its time on, a Delete row ends the key from its time on (a tombstone version), an
//     UpdateBefore row is ignored (the UpdateAfter that follows it is the new version). A right row's time is its
//     RightTime, or the combined watermark at its arrival when that is greater (below).  An append-only right
//     input is a versioned table too: each row is the next version of its key. Both inputs are routed by a hash
//     exchange on their keys (exec.HashKeys); a row of a key group outside TaskContext.KeyGroups fails.
//   - Match: the version of a left row at time t is the right row of its key (keys equal, a NULL key never
//     matches) with the greatest time <= t, the later arrival among equal times; none when there is no such row
//     or it is a tombstone. The pair is emitted when Residual, over the pair, is TRUE; an INNER join drops the left
//     row otherwise, a LEFT join emits it padded with NULLs. Only JoinInner and JoinLeft are accepted.
//   - Watermark convention (the interval join's): at watermark wm a row with time >= wm may still arrive. A left
//     row waits until the combined watermark passes its time (wm > t): then every on-time version at or below t
//     has arrived, and the row fires. A left row below the combined watermark at arrival is late (dropped,
//     counted in TaskContext.Late). A right row below it takes effect at the watermark instead: it is the version
//     of every left row not fired yet (all at or above the watermark) and of none that fired. A table's UPDATE
//     that keeps a row's time, or a DELETE (whose row carries the time of the version it ends), thus applies to
//     every row the join has not emitted, and cleanup (below) never drops a version that a later arrival would
//     be compared with. A NULL time on either side is dropped and counted in TaskContext.Errors.
//   - Output: JoinOutputSchema, inserts only, emitted in OnWatermark in (left time, left arrival) order; batches
//     hold at most emitRows rows. A fired row's left time is >= the watermark forwarded before (it was not late
//     and had not fired), so the watermark is forwarded unchanged: the left time column is never late downstream.
//   - Cleanup: after firing at wm, a key keeps of its versions older than wm only the newest (the one a left row
//     at wm or later can still need), and not even that one when it is a tombstone; a key with neither versions
//     nor waiting left rows is forgotten.
//   - State: the working set lives in memory; OnBarrier writes the rows added since the last barrier and deletes
//     those dropped since, plus the watermark and arrival counter; Open rebuilds it with a Scan of its key groups.
//
// State layout (side 0 left, 1 right):
//
//	KeyedKey(kg, 1+side, seq(8))      ts(8, big endian) flags(1) uvarint(len(key)) key row
//	OperatorKey("temporaljoin/meta")  watermark(8) next seq(8)
//
// seq is the row's arrival number; flags holds flagNullKey (a waiting left row of an outer join) and flagTombstone
// (a right row that ends its key).

var temporalMetaKey = state.OperatorKey("temporaljoin/meta")

// TemporalJoinConfig is an event-time temporal join: LeftTime is the left rows' time attribute, RightTime the
// versions' time.
type TemporalJoinConfig struct {
	JoinSpec
	LeftTime, RightTime int
}

type temporalPlan struct {
	*timeSpec
	time [2]int
}

// NewTemporalJoin validates cfg and returns the operator factory and its output schema (JoinOutputSchema). Errors
// are sqlerr errors: 42804 for a time column that is not a timestamp or a residual condition that is not boolean,
// 0A000 for a join type other than INNER and LEFT or a column type the join cannot keep, XX000 for a malformed
// config (a planner bug).
func NewTemporalJoin(cfg TemporalJoinConfig) (func(subtask int) exec.Operator, *arrow.Schema, error) {
	if cfg.Type != JoinInner && cfg.Type != JoinLeft {
		return nil, nil, errTimeJoin("a temporal join is INNER or LEFT, not %s", cfg.Type)
	}
	spec, err := planTimeJoin(cfg.JoinSpec, "temporal join")
	if err != nil {
		return nil, nil, err
	}
	if err := checkTimeColumn(cfg.Left, cfg.LeftTime, "temporal join", "left time"); err != nil {
		return nil, nil, err
	}
	if err := checkTimeColumn(cfg.Right, cfg.RightTime, "temporal join", "version time"); err != nil {
		return nil, nil, err
	}
	p := &temporalPlan{timeSpec: spec, time: [2]int{cfg.LeftTime, cfg.RightTime}}
	return func(int) exec.Operator { return &temporalJoin{p: p} }, spec.out, nil
}

// temporalJoin is one subtask of a temporal join. A key's group holds its waiting left rows in rows[0] and its
// versions in rows[1], both in arrival order.
type temporalJoin struct {
	timeJoin
	p    *temporalPlan
	ints map[int64]*rowGroup
	strs map[string]*rowGroup
	// waiting is the left rows not fired yet, a heap by (time, arrival).
	waiting leftHeap
	// versioned is the groups that may have versions to clean: more than one, or a tombstone.
	versioned map[*rowGroup]struct{}
	scratch   pairOutput

	// Per batch and per firing.
	tsScr  []int64
	due    []int32
	vers   []int32
	ls, rs []int32
	mask   []bool
}

var _ exec.Operator = (*temporalJoin)(nil)

// leftHeap orders waiting left rows by time, then arrival.
type leftHeap struct {
	t   *rowTable
	ids []int32
}

func (h *leftHeap) Len() int { return len(h.ids) }
func (h *leftHeap) Less(a, b int) bool {
	x, y := h.ids[a], h.ids[b]
	if h.t.t1[x] != h.t.t1[y] {
		return h.t.t1[x] < h.t.t1[y]
	}
	return h.t.seq[x] < h.t.seq[y]
}
func (h *leftHeap) Swap(a, b int) { h.ids[a], h.ids[b] = h.ids[b], h.ids[a] }
func (h *leftHeap) Push(x any)    { h.ids = append(h.ids, x.(int32)) }
func (h *leftHeap) Pop() any {
	n := len(h.ids)
	x := h.ids[n-1]
	h.ids = h.ids[:n-1]
	return x
}

func (j *temporalJoin) Open(ctx *exec.TaskContext) error {
	j.timeJoin = timeJoin{spec: j.p.timeSpec, meta: temporalMetaKey, rowKey: j.stateKey, timed: true}
	j.scratch = pairOutput{spec: j.p.timeSpec, ctx: ctx}
	j.ints = map[int64]*rowGroup{}
	j.strs = map[string]*rowGroup{}
	j.versioned = map[*rowGroup]struct{}{}
	j.waiting = leftHeap{t: &j.rows}
	if err := j.open(ctx, j.restoreRow); err != nil {
		return err
	}
	heap.Init(&j.waiting)
	return nil
}

// restoreRow rebuilds one row from its backend entry; a key group's rows of a side come in arrival order.
func (j *temporalJoin) restoreRow(kg, side int, uk, v []byte) error {
	if len(uk) != 8 {
		return rowcodec.ErrState
	}
	ts, flags, key, row, err := parseTimedValue(v)
	if err != nil {
		return err
	}
	ki, ks, err := parseGroupKey(j.p.keyEnc.Mode, key)
	if err != nil {
		return err
	}
	t := &j.rows
	id := t.restore(row, side, kg, ts, 0, binary.BigEndian.Uint64(uk), flags)
	var g *rowGroup
	if flags&flagNullKey != 0 {
		g = &rowGroup{i: ki, s: ks, null: true}
	} else {
		g = findGroup(j.p.keyEnc.Mode, j.ints, j.strs, ki, ks, false)
	}
	t.grp[id] = g
	g.rows[side] = append(g.rows[side], id)
	if side == 0 {
		j.waiting.ids = append(j.waiting.ids, id)
	} else {
		j.noteVersion(g, id)
	}
	return nil
}

// noteVersion lists g for cleanup once version id makes it cleanable.
func (j *temporalJoin) noteVersion(g *rowGroup, id int32) {
	if len(g.rows[1]) > 1 || j.rows.flag[id]&flagTombstone != 0 {
		j.versioned[g] = struct{}{}
	}
}

// groupOfRow returns the group of row i of the loaded batch (not a NULL key), creating it.
func (j *temporalJoin) groupOfRow(i int) *rowGroup {
	if j.p.keyEnc.Mode == rowcodec.KeyInt {
		return findGroup(rowcodec.KeyInt, j.ints, j.strs, j.keys.Ints[i], "", false)
	}
	if g := j.strs[string(j.keys.BytesOf(i))]; g != nil { // no allocation for the lookup
		return g
	}
	return findGroup(rowcodec.KeyBytes, j.ints, j.strs, 0, string(j.keys.BytesOf(i)), false)
}

func (j *temporalJoin) Process(input int, b exec.Batch, _ exec.Emitter) error {
	defer b.Release()
	if input != 0 && input != 1 {
		return fmt.Errorf("temporal join: input %d (it has two)", input)
	}
	n := b.Rows()
	if n == 0 {
		return nil
	}
	s := input
	if s == 0 {
		for _, k := range b.Kinds {
			if k != exec.Insert {
				return fmt.Errorf("temporal join: left row of kind %s (the left input must be append-only)", k)
			}
		}
	}
	col, ok := b.Rec.Column(j.p.time[s]).(*array.Timestamp)
	if !ok {
		return fmt.Errorf("temporal join: time column is %s", b.Rec.Column(j.p.time[s]).DataType())
	}
	times := rowcodec.Micros(col, &j.tsScr)
	nullKey, err := j.loadBatch(s, b)
	defer j.endBatch()
	if err != nil {
		return err
	}
	t := &j.rows
	var late, bad int64
	for i := 0; i < n; i++ {
		kind := b.Kind(i)
		if kind == exec.UpdateBefore {
			continue // its UpdateAfter is the new version
		}
		if col.IsNull(i) {
			bad++
			continue
		}
		ts := times[i]
		if ts < j.wm {
			if s == 0 {
				late++
				continue
			}
			ts = j.wm
		}
		kg, null, ok, err := j.admit(s, i, nullKey)
		if err != nil {
			return err
		}
		if !ok {
			continue // a right row with a NULL key, or an inner join's left row with one: never in the output
		}
		var g *rowGroup
		if null {
			g = &rowGroup{null: true}
			if j.p.keyEnc.Mode == rowcodec.KeyBytes {
				g.s = string(j.keys.BytesOf(i))
			}
		} else {
			g = j.groupOfRow(i)
		}
		id := j.addRow(s, i, kg, ts, 0)
		if null {
			t.flag[id] |= flagNullKey
		}
		if kind == exec.Delete {
			t.flag[id] |= flagTombstone
		}
		t.grp[id] = g
		g.rows[s] = append(g.rows[s], id)
		j.dirty = append(j.dirty, id)
		if s == 0 {
			heap.Push(&j.waiting, id)
		} else {
			j.noteVersion(g, id)
		}
	}
	j.ctx.Late.Add(late)
	j.ctx.Errors.Add(bad)
	return nil
}

// version returns the version of g valid at time ts, -1 for none.
func (j *temporalJoin) version(g *rowGroup, ts int64) int32 {
	t := &j.rows
	best := int32(-1)
	for _, id := range g.rows[1] {
		if t.t1[id] > ts {
			continue
		}
		if best < 0 || t.t1[id] > t.t1[best] || t.t1[id] == t.t1[best] && t.seq[id] > t.seq[best] {
			best = id
		}
	}
	if best >= 0 && t.flag[best]&flagTombstone != 0 {
		return -1
	}
	return best
}

func (j *temporalJoin) OnWatermark(wm int64, out exec.Emitter) error {
	if wm <= j.wm {
		return nil
	}
	j.wm = wm
	t := &j.rows
	j.due, j.vers = j.due[:0], j.vers[:0]
	for j.waiting.Len() > 0 && t.t1[j.waiting.ids[0]] < wm {
		id := heap.Pop(&j.waiting).(int32)
		v := int32(-1)
		if g := t.grp[id]; !g.null {
			v = j.version(g, t.t1[id])
		}
		j.due, j.vers = append(j.due, id), append(j.vers, v)
	}
	if j.p.spec.Residual != nil && len(j.due) > 0 {
		j.ls, j.rs = j.ls[:0], j.rs[:0]
		for k, l := range j.due {
			if j.vers[k] >= 0 {
				j.ls, j.rs = append(j.ls, l), append(j.rs, j.vers[k])
			}
		}
		var err error
		if j.mask, err = residualMask(j.p.timeSpec, &j.ectx, &j.scratch, t, j.ls, j.rs, j.mask); err != nil {
			return err
		}
		m := 0
		for k := range j.due {
			if j.vers[k] >= 0 {
				if !j.mask[m] {
					j.vers[k] = -1
				}
				m++
			}
		}
	}
	for k, l := range j.due {
		if j.vers[k] >= 0 || j.p.outer[0] {
			if err := j.out.emit(t, l, j.vers[k], out); err != nil {
				return err
			}
		}
	}
	// The fired rows leave their groups; then old versions go.
	for _, l := range j.due {
		g := t.grp[l]
		if i := slices.Index(g.rows[0], l); i >= 0 {
			g.rows[0] = slices.Delete(g.rows[0], i, i+1)
		}
		j.forget(l)
		if !g.null {
			j.dropIfEmpty(g)
		}
	}
	for g := range j.versioned {
		j.clean(g, wm)
	}
	return j.out.flush(out)
}

// clean drops the versions of g older than wm but the newest of them (unless that one is a tombstone).
func (j *temporalJoin) clean(g *rowGroup, wm int64) {
	t := &j.rows
	keep := int32(-1)
	for _, id := range g.rows[1] {
		if t.t1[id] < wm && (keep < 0 || t.t1[id] > t.t1[keep] || t.t1[id] == t.t1[keep] && t.seq[id] > t.seq[keep]) {
			keep = id
		}
	}
	if keep >= 0 && t.flag[keep]&flagTombstone != 0 {
		keep = -1
	}
	vs := g.rows[1][:0]
	tomb := false
	for _, id := range g.rows[1] {
		if t.t1[id] < wm && id != keep {
			j.forget(id)
			continue
		}
		tomb = tomb || t.flag[id]&flagTombstone != 0
		vs = append(vs, id)
	}
	g.rows[1] = vs
	if len(vs) <= 1 && !tomb {
		delete(j.versioned, g)
	}
	j.dropIfEmpty(g)
}

// dropIfEmpty forgets a group with neither versions nor waiting rows.
func (j *temporalJoin) dropIfEmpty(g *rowGroup) {
	if len(g.rows[0]) > 0 || len(g.rows[1]) > 0 {
		return
	}
	delete(j.versioned, g)
	if j.p.keyEnc.Mode == rowcodec.KeyInt {
		delete(j.ints, g.i)
	} else {
		delete(j.strs, g.s)
	}
}

func (j *temporalJoin) stateKey(id int32) []byte {
	t := &j.rows
	return state.KeyedKey(int(t.kg[id]), byte(1+t.side(id)), binary.BigEndian.AppendUint64(nil, t.seq[id]))
}

func (j *temporalJoin) OnBarrier(uint64) error {
	j.barrier()
	return nil
}

func (j *temporalJoin) Close() error {
	j.out.close()
	j.scratch.close()
	return nil
}
