package agg

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/exec/expr"
	"github.com/clinksql/clinksql/exec/rowcodec"
	"github.com/clinksql/clinksql/state"
)

// State layout of the window aggregate in the subtask's backend:
//
//	KeyedKey(kg, windowStateID, end(8) start(8) key)   accumulators of one (window, key): each aggregate's
//	                                                   encode, in SELECT order, then the row bytes of
//	                                                   its key when they differ (groupKeys.gShow)
//	OperatorKey("window/wm")                           the watermark (8 bytes big endian)
//
// end and start are sign-flipped big endian (rowcodec.AppendOrderedInt), key is the canonical key bytes (package rowcodec).
const windowStateID = 1

var windowWMKey = state.OperatorKey("window/wm")

// pane is one window of Tumble/Hop/Cumulate with its groups by key.
type pane struct {
	start, end int64
	ints       map[int64]int32  // rowcodec.KeyInt
	strs       map[string]int32 // rowcodec.KeyBytes
	null       int32            // the NULL key's group (rowcodec.KeyInt), the only group (rowcodec.KeyNone); -1 when none
}

// groupKeys is the key part of a column-wise group table, shared by the window and the group aggregate: per
// group id its key group and key (rowcodec.KeyInt: the value, rowcodec.KeyBytes: the canonical bytes), and the ids freed for
// reuse. Whether a rowcodec.KeyInt key is NULL is a flag of the owner's table.
type groupKeys struct {
	mode rowcodec.KeyMode
	gKG  []uint16
	gInt []int64  // rowcodec.KeyInt
	gStr []string // rowcodec.KeyBytes
	// gShow (rowcodec.KeyBytes): the row bytes of the key of the row that created the group, when they differ from gStr
	// (a float -0), else "": the key prints as that row wrote it, as Postgres prints a group's first value.
	gShow []string
	free  []int32
}

// allocKey returns a freed id, or a new one with grown set: the owner then appends to its own columns.
func (k *groupKeys) allocKey() (g int32, grown bool) {
	if n := len(k.free); n > 0 {
		g = k.free[n-1]
		k.free = k.free[:n-1]
		return g, false
	}
	g = int32(len(k.gKG))
	k.gKG = append(k.gKG, 0)
	switch k.mode {
	case rowcodec.KeyInt:
		k.gInt = append(k.gInt, 0)
	case rowcodec.KeyBytes:
		k.gStr = append(k.gStr, "")
		k.gShow = append(k.gShow, "")
	}
	return g, true
}

// setKey gives g key group kg and the key of row i of keys; it reports whether that key is NULL (rowcodec.KeyInt).
func (k *groupKeys) setKey(g int32, kg int, keys *rowcodec.KeyRows, i int) (null bool) {
	k.gKG[g] = uint16(kg)
	switch k.mode {
	case rowcodec.KeyInt:
		if keys.Nulls != nil && keys.Nulls.IsNull(i) {
			return true
		}
		k.gInt[g] = keys.Ints[i]
	case rowcodec.KeyBytes:
		k.gStr[g] = string(keys.BytesOf(i))
		k.gShow[g] = keys.ExactOf(i)
	}
	return false
}

// showKey returns the bytes g's key is output from (rowcodec.KeyBytes): its row bytes, which decode like key bytes.
func (k *groupKeys) showKey(g int32) string {
	if s := k.gShow[g]; s != "" {
		return s
	}
	return k.gStr[g]
}

// appendShow appends what a group's backend value carries after its accumulators: gShow when set (an older value
// has nothing there, and a group whose key prints as its key bytes neither).
func (k *groupKeys) appendShow(dst []byte, g int32) []byte {
	if k.mode == rowcodec.KeyBytes {
		dst = append(dst, k.gShow[g]...)
	}
	return dst
}

// restoreShow reads what appendShow wrote: rest is the value after the accumulators. The stored spelling wins
// over the row that made the group load (its first row may have spelled the key otherwise, and was emitted so).
func (k *groupKeys) restoreShow(g int32, rest []byte) error {
	if k.mode != rowcodec.KeyBytes {
		if len(rest) != 0 {
			return fmt.Errorf("%d stray bytes after the accumulators", len(rest))
		}
		return nil
	}
	k.gShow[g] = string(rest)
	return nil
}

// keyBytes appends g's canonical key bytes; null says that its rowcodec.KeyInt key is NULL.
func (k *groupKeys) keyBytes(dst []byte, g int32, null bool) []byte {
	switch k.mode {
	case rowcodec.KeyInt:
		return rowcodec.AppendIntKey(dst, k.gInt[g], null)
	case rowcodec.KeyBytes:
		return append(dst, k.gStr[g]...)
	}
	return dst
}

// freeKey puts g on the free list.
func (k *groupKeys) freeKey(g int32) {
	if k.mode == rowcodec.KeyBytes {
		k.gStr[g], k.gShow[g] = "", ""
	}
	k.free = append(k.free, g)
}

// filterAssignments appends to fr, fg (and fn, when neg is not nil) the assignments rows[j], grps[j] (neg[j]) of the rows
// where cond is TRUE (NULL is false): the assignments of an aggregate with a FILTER.
func filterAssignments(cond *array.Boolean, rows, grps []int32, neg []bool, fr, fg []int32, fn []bool) (
	[]int32, []int32, []bool) {
	nulls := cond.NullN() > 0
	for j, r := range rows {
		if cond.Value(int(r)) && (!nulls || cond.IsValid(int(r))) {
			fr = append(fr, r)
			fg = append(fg, grps[j])
			if neg != nil {
				fn = append(fn, neg[j])
			}
		}
	}
	return fr, fg, fn
}

// windowAgg is one subtask of a WindowAggregate. Groups (one window and one key) are dense int32 ids into
// column-wise tables; freed ids are reused.
type windowAgg struct {
	p    *windowPlan
	ctx  *exec.TaskContext
	wm   int64
	aggs []windowAccumulator

	// The group table, indexed by group id: the keys, and
	groupKeys
	gStart, gEnd             []int64
	gStoredStart, gStoredEnd []int64
	gFlag                    []uint8
	gGen                     []uint32 // bumped each time the id is allocated (sessionEnds tells a reused id)

	panes map[exec.WindowID]*pane // Tumble, Hop, Cumulate
	// Session: the live sessions of each key, pairwise disjoint and not touching.
	sessInt  map[int64][]int32
	sessStr  map[string][]int32
	sessNull []int32 // the NULL key's (rowcodec.KeyInt) or the only key's (rowcodec.KeyNone)
	ends     sessionEnds
	// paneHint sizes a new window's map: the groups of the last window fired (windows tend to look alike).
	paneHint int
	// nextFire is at most the smallest end of a live window: OnWatermark below it has nothing to do.
	nextFire int64

	dirty   []int32  // groups flagged dirty (may repeat ids whose flag was cleared since)
	deletes [][]byte // backend keys of stored groups freed since the last barrier

	// Per batch.
	kgs        exec.BatchKeyGroups
	keys       rowcodec.KeyRows
	rows, grps []int32
	frows      [][]int32 // per aggregate with a FILTER
	fgrps      [][]int32
	tsScratch  []int64
	paneBuf    []*pane
	forward    map[int32]int32 // session: group merged away -> group it merged into, this batch
	retired    []int32         // session: groups merged away, freed after the batch's updates
	fired      []int32
	out        *array.RecordBuilder
	outRows    int
	emitLeft   int // rows the firing in progress has still to emit, this one included: the output's capacity
	ov         aggOverflow
}

var _ exec.Operator = (*windowAgg)(nil)

func newWindowAgg(p *windowPlan) *windowAgg {
	w := &windowAgg{p: p, groupKeys: groupKeys{mode: p.keyEnc.Mode}, ov: aggOverflow{mode: p.cfg.Mode}}
	for _, k := range p.aggs {
		w.aggs = append(w.aggs, newWindowAccumulator(k, &w.ov))
	}
	w.frows = make([][]int32, len(p.aggs))
	w.fgrps = make([][]int32, len(p.aggs))
	return w
}

func (w *windowAgg) Open(ctx *exec.TaskContext) error {
	if err := exec.CheckKeyGroups(ctx, "window aggregate"); err != nil {
		return err
	}
	w.ctx = ctx
	w.ov.errors = ctx.Errors
	w.wm = exec.MinWatermark
	w.nextFire = math.MaxInt64
	w.panes = map[exec.WindowID]*pane{}
	w.sessInt = map[int64][]int32{}
	w.sessStr = map[string][]int32{}
	w.forward = map[int32]int32{}
	if v, ok, err := ctx.State.Get(windowWMKey); err != nil {
		return err
	} else if ok {
		if len(v) != 8 {
			return fmt.Errorf("window aggregate: malformed watermark in state")
		}
		w.wm = int64(binary.BigEndian.Uint64(v))
	}
	for kg := ctx.KeyGroups.Start; kg < ctx.KeyGroups.End; kg++ {
		prefix := state.KeyedKey(kg, windowStateID, nil)
		if err := ctx.State.Scan(prefix, func(k, v []byte) error { return w.restoreGroup(kg, k[len(prefix):], v) }); err != nil {
			return fmt.Errorf("window aggregate: restore key group %d: %w", kg, err)
		}
	}
	return nil
}

// restoreGroup rebuilds one group from its backend entry.
func (w *windowAgg) restoreGroup(kg int, uk, v []byte) error {
	if len(uk) < 16 {
		return rowcodec.ErrState
	}
	end, start, key := rowcodec.OrderedInt(uk), rowcodec.OrderedInt(uk[8:]), uk[16:]
	g := w.allocGroup()
	w.gStart[g], w.gEnd[g], w.gKG[g] = start, end, uint16(kg)
	w.gStoredStart[g], w.gStoredEnd[g] = start, end
	w.gFlag[g] = flagLive | flagStored
	null := false
	switch w.p.keyEnc.Mode {
	case rowcodec.KeyInt:
		if len(key) == 0 || (key[0] != 0 && len(key) != 9) {
			return rowcodec.ErrState
		}
		if null = key[0] == 0; null {
			w.gFlag[g] |= flagNullKey
		} else {
			w.gInt[g] = rowcodec.OrderedInt(key[1:])
		}
	case rowcodec.KeyBytes:
		w.gStr[g] = string(key)
	}
	rest := v
	for _, a := range w.aggs {
		var err error
		if rest, err = a.decode(rest, g); err != nil {
			return err
		}
	}
	if err := w.restoreShow(g, rest); err != nil {
		return err
	}
	w.nextFire = min(w.nextFire, end)
	if w.p.cfg.Kind == WindowSession {
		w.setSessions(g, append(w.sessionsOfGroup(g), g))
		w.ends.push(sessionEnd{end: end, g: g, gen: w.gGen[g]})
		return nil
	}
	p := w.paneOf(start, end)
	switch w.p.keyEnc.Mode {
	case rowcodec.KeyNone:
		p.null = g
	case rowcodec.KeyInt:
		if null {
			p.null = g
		} else {
			p.ints[w.gInt[g]] = g
		}
	case rowcodec.KeyBytes:
		p.strs[w.gStr[g]] = g
	}
	return nil
}

// allocGroup returns a free group id with empty accumulators.
func (w *windowAgg) allocGroup() int32 {
	g, grown := w.allocKey()
	if grown {
		w.gStart = append(w.gStart, 0)
		w.gEnd = append(w.gEnd, 0)
		w.gStoredStart = append(w.gStoredStart, 0)
		w.gStoredEnd = append(w.gStoredEnd, 0)
		w.gFlag = append(w.gFlag, 0)
		w.gGen = append(w.gGen, 0)
		for _, a := range w.aggs {
			a.grow()
		}
	}
	w.gGen[g]++
	return g
}

// newGroup creates the group of row i of the current batch in window [start, end).
func (w *windowAgg) newGroup(start, end int64, i int) (int32, error) {
	kg, err := w.kgs.Of(w.ctx, w.p.cfg.Keys, i, "window aggregate")
	if err != nil {
		return 0, err
	}
	g := w.allocGroup()
	w.gStart[g], w.gEnd[g] = start, end
	w.gFlag[g] = flagLive | flagDirty
	w.dirty = append(w.dirty, g)
	if w.setKey(g, kg, &w.keys, i) {
		w.gFlag[g] |= flagNullKey
	}
	w.nextFire = min(w.nextFire, end)
	if w.p.cfg.Kind == WindowSession {
		w.ends.push(sessionEnd{end: end, g: g, gen: w.gGen[g]})
	}
	return g, nil
}

// freeGroup forgets g; its backend entry, if any, is deleted at the next barrier.
func (w *windowAgg) freeGroup(g int32) {
	if w.gFlag[g]&flagStored != 0 {
		w.deletes = append(w.deletes, w.stateKey(g, w.gStoredStart[g], w.gStoredEnd[g]))
	}
	w.gFlag[g] = 0
	for _, a := range w.aggs {
		a.reset(g)
	}
	w.freeKey(g)
}

func (w *windowAgg) markDirty(g int32) {
	if w.gFlag[g]&flagDirty == 0 {
		w.gFlag[g] |= flagDirty
		w.dirty = append(w.dirty, g)
	}
}

func (w *windowAgg) stateKey(g int32, start, end int64) []byte {
	uk := make([]byte, 0, 16+1+8)
	uk = rowcodec.AppendOrderedInt(uk, end)
	uk = rowcodec.AppendOrderedInt(uk, start)
	return state.KeyedKey(int(w.gKG[g]), windowStateID, w.keyBytes(uk, g, w.gFlag[g]&flagNullKey != 0))
}

func (w *windowAgg) paneOf(start, end int64) *pane {
	id := exec.WindowID{Start: start, End: end}
	p := w.panes[id]
	if p == nil {
		p = &pane{start: start, end: end, null: -1}
		switch w.p.keyEnc.Mode {
		case rowcodec.KeyInt:
			p.ints = make(map[int64]int32, w.paneHint)
		case rowcodec.KeyBytes:
			p.strs = make(map[string]int32, w.paneHint)
		}
		w.panes[id] = p
	}
	return p
}

// CopiesInput: what the window aggregate keeps of a batch are copies (keys through rowcodec.KeyRows and new
// strings, accumulator values, string extremes cloned). A hash exchange into it recycles its parts' buffers
// (exec.InputCopier).
func (w *windowAgg) CopiesInput() {}

func (w *windowAgg) Process(_ int, b exec.Batch, _ exec.Emitter) error {
	defer b.Release()
	n := b.Rows()
	if n == 0 {
		return nil
	}
	for _, k := range b.Kinds {
		if k != exec.Insert {
			return fmt.Errorf("window aggregate: input row of kind %s (the input must be append-only)", k)
		}
	}
	w.kgs.Start(b)
	defer w.kgs.End()
	var tsCol arrow.Array // nil: no NULL times (processing time)
	var ts []int64
	if w.p.cfg.ProcTime {
		// Every row of the batch arrives now. Never before the time fired up to (a wall clock set back across a
		// restart): such rows go to the next window instead of being late.
		now := max(w.ctx.Clock.Now().UnixMicro(), w.wm)
		ts = slices.Grow(w.tsScratch[:0], n)[:n]
		for i := range ts {
			ts[i] = now
		}
		w.tsScratch = ts
	} else {
		tc, ok := b.Rec.Column(w.p.cfg.TimeCol).(*array.Timestamp)
		if !ok {
			return fmt.Errorf("window aggregate: time column is %s", b.Rec.Column(w.p.cfg.TimeCol).DataType())
		}
		tsCol, ts = tc, rowcodec.Micros(tc, &w.tsScratch)
	}
	if err := w.keys.Load(&w.p.keyEnc, b.Rec, w.p.cfg.Keys); err != nil {
		return err
	}
	w.rows, w.grps = w.rows[:0], w.grps[:0]
	var err error
	if w.p.cfg.Kind == WindowSession {
		err = w.assignSessions(n, ts, tsCol)
	} else {
		err = w.assignWindows(n, ts, tsCol)
	}
	if err != nil {
		return err
	}
	if len(w.forward) > 0 {
		for j, g := range w.grps {
			for {
				to, ok := w.forward[g]
				if !ok {
					break
				}
				g = to
			}
			w.grps[j] = g
		}
	}
	for i, a := range w.aggs {
		spec := w.p.cfg.Aggs[i]
		rows, grps := w.rows, w.grps
		if spec.Filter >= 0 {
			rows, grps = w.filter(i, b.Rec.Column(spec.Filter).(*array.Boolean))
		}
		if len(rows) == 0 {
			continue
		}
		var col arrow.Array
		if spec.Arg >= 0 {
			col = b.Rec.Column(spec.Arg)
		}
		if err := a.update(col, rows, grps, nil); err != nil {
			return err
		}
	}
	if len(w.retired) > 0 {
		for _, g := range w.retired {
			w.freeGroup(g)
		}
		w.retired = w.retired[:0]
		clear(w.forward)
	}
	return nil
}

// filter keeps the assignments of rows where cond is true (NULL is false).
func (w *windowAgg) filter(i int, cond *array.Boolean) ([]int32, []int32) {
	w.frows[i], w.fgrps[i], _ = filterAssignments(cond, w.rows, w.grps, nil, w.frows[i][:0], w.fgrps[i][:0], nil)
	return w.frows[i], w.fgrps[i]
}

func floorStart(t, size, offset int64) int64 {
	r := (t - offset) % size
	if r < 0 {
		r += size
	}
	return t - r
}

// panesAt returns the panes of the not yet fired windows that contain t, creating them, and the interval [lo, hi)
// around t on which that set is the same, so consecutive rows in it reuse the result.
func (w *windowAgg) panesAt(t int64, dst []*pane) (_ []*pane, lo, hi int64) {
	c := &w.p.cfg
	add := func(start, end int64) {
		if end > w.wm {
			dst = append(dst, w.paneOf(start, end))
		}
	}
	if c.zoned() {
		// On the wall clock, bounds back to instants; the next row reuses nothing (the wall clock is not monotonic
		// in the instant where it goes back).
		wall := t
		t = expr.ToLocal(c.Zone, t)
		local := add
		add = func(start, end int64) { local(c.instant(start), c.instant(end)) }
		defer func() { lo, hi = wall, wall+1 }()
	}
	switch c.Kind {
	case WindowTumble:
		s := floorStart(t, c.Size, c.Offset)
		e := exec.AddSat(s, c.Size)
		add(s, e)
		return dst, s, e
	case WindowHop:
		last := floorStart(t, c.Slide, c.Offset)
		first := last
		for s := last; s > t-c.Size; s -= c.Slide {
			add(s, exec.AddSat(s, c.Size))
			first = s
		}
		return dst, max(last, first-c.Slide+c.Size), min(exec.AddSat(last, c.Slide), exec.AddSat(first, c.Size))
	default: // WindowCumulate
		s := floorStart(t, c.Size, c.Offset)
		firstEnd := exec.AddSat(floorStart(t, c.Step, c.Offset), c.Step)
		last := exec.AddSat(s, c.Size)
		for e := firstEnd; e <= last; e += c.Step {
			add(s, e)
			if e == math.MaxInt64 {
				break
			}
		}
		return dst, firstEnd - c.Step, firstEnd
	}
}

func (w *windowAgg) assignWindows(n int, ts []int64, tsCol arrow.Array) error {
	panes := w.paneBuf[:0]
	lo, hi := int64(1), int64(0) // empty: the first row computes its panes
	tsNulls := tsCol != nil && tsCol.NullN() > 0
	mode := w.p.keyEnc.Mode
	keyNulls := w.keys.Nulls
	ints := w.keys.Ints
	var late, bad int64
	for i := 0; i < n; i++ {
		if tsNulls && tsCol.IsNull(i) {
			bad++
			continue
		}
		t := ts[i]
		if t < lo || t >= hi {
			panes, lo, hi = w.panesAt(t, panes[:0])
		}
		if len(panes) == 0 {
			late++
			continue
		}
		for _, p := range panes {
			var g int32
			var ok bool
			switch {
			case mode == rowcodec.KeyInt && (keyNulls == nil || keyNulls.IsValid(i)):
				if g, ok = p.ints[ints[i]]; !ok {
					var err error
					if g, err = w.newGroup(p.start, p.end, i); err != nil {
						return err
					}
					p.ints[ints[i]] = g
				}
			case mode == rowcodec.KeyBytes:
				if g, ok = p.strs[string(w.keys.BytesOf(i))]; !ok {
					var err error
					if g, err = w.newGroup(p.start, p.end, i); err != nil {
						return err
					}
					p.strs[w.gStr[g]] = g
				}
			default: // rowcodec.KeyNone, or a NULL rowcodec.KeyInt key
				if g = p.null; g < 0 {
					var err error
					if g, err = w.newGroup(p.start, p.end, i); err != nil {
						return err
					}
					p.null = g
				}
			}
			if w.gFlag[g]&flagDirty == 0 {
				w.gFlag[g] |= flagDirty
				w.dirty = append(w.dirty, g)
			}
			w.rows = append(w.rows, int32(i))
			w.grps = append(w.grps, g)
		}
	}
	w.paneBuf = panes[:0]
	w.ctx.Late.Add(late)
	w.ctx.Errors.Add(bad)
	return nil
}

// sessionsOfRow returns the live sessions of row i's key.
func (w *windowAgg) sessionsOfRow(i int) []int32 {
	switch w.p.keyEnc.Mode {
	case rowcodec.KeyInt:
		if w.keys.Nulls == nil || w.keys.Nulls.IsValid(i) {
			return w.sessInt[w.keys.Ints[i]]
		}
	case rowcodec.KeyBytes:
		return w.sessStr[string(w.keys.BytesOf(i))]
	}
	return w.sessNull
}

func (w *windowAgg) sessionsOfGroup(g int32) []int32 {
	switch w.p.keyEnc.Mode {
	case rowcodec.KeyInt:
		if w.gFlag[g]&flagNullKey == 0 {
			return w.sessInt[w.gInt[g]]
		}
	case rowcodec.KeyBytes:
		return w.sessStr[w.gStr[g]]
	}
	return w.sessNull
}

// setSessions stores the session list of g's key.
func (w *windowAgg) setSessions(g int32, list []int32) {
	switch w.p.keyEnc.Mode {
	case rowcodec.KeyInt:
		if w.gFlag[g]&flagNullKey == 0 {
			if len(list) == 0 {
				delete(w.sessInt, w.gInt[g])
			} else {
				w.sessInt[w.gInt[g]] = list
			}
			return
		}
	case rowcodec.KeyBytes:
		if len(list) == 0 {
			delete(w.sessStr, w.gStr[g])
		} else {
			w.sessStr[w.gStr[g]] = list
		}
		return
	}
	w.sessNull = list
}

// assignSessions assigns each row to its key's session, merging the sessions it bridges. A merge folds the
// accumulators of the merged-away group into the surviving one at once; assignments made earlier in this batch
// to the merged-away group are redirected through w.forward before the updates run, and the group is freed only
// after them, so its id is not reused within the batch.
func (w *windowAgg) assignSessions(n int, ts []int64, tsCol arrow.Array) error {
	gap := w.p.cfg.Gap
	tsNulls := tsCol != nil && tsCol.NullN() > 0
	var late, bad int64
	for i := 0; i < n; i++ {
		if tsNulls && tsCol.IsNull(i) {
			bad++
			continue
		}
		t := ts[i]
		end := exec.AddSat(t, gap)
		list := w.sessionsOfRow(i)
		target := int32(-1)
		start, stop := t, end
		keep := list[:0]
		for _, g := range list {
			if w.gStart[g] <= end && w.gEnd[g] >= t { // overlaps or touches [t, end)
				start, stop = min(start, w.gStart[g]), max(stop, w.gEnd[g])
				if target < 0 {
					target = g
				} else {
					for _, a := range w.aggs {
						if err := a.merge(target, g); err != nil {
							return err
						}
					}
					w.forward[g] = target
					w.retired = append(w.retired, g)
					continue
				}
			}
			keep = append(keep, g)
		}
		if target < 0 {
			if end <= w.wm {
				late++
				continue
			}
			g, err := w.newGroup(t, end, i)
			if err != nil {
				return err
			}
			keep, target = append(keep, g), g
		} else {
			w.gStart[target], w.gEnd[target] = start, stop
			w.markDirty(target)
		}
		w.setSessions(target, keep)
		w.rows = append(w.rows, int32(i))
		w.grps = append(w.grps, target)
	}
	for _, g := range w.retired {
		// Still allocated until the updates ran, but no longer a session: it must not be written at a barrier
		// (its backend entry is deleted when it is freed).
		w.gFlag[g] &^= flagLive | flagDirty
	}
	w.ctx.Late.Add(late)
	w.ctx.Errors.Add(bad)
	return nil
}

func (w *windowAgg) OnWatermark(wm int64, out exec.Emitter) error {
	return w.fire(wm, out)
}

// fire emits and forgets every window whose end is at most wm (the watermark; the processing time for
// processing-time windows).
func (w *windowAgg) fire(wm int64, out exec.Emitter) error {
	if wm <= w.wm {
		return nil
	}
	w.wm = wm
	if wm < w.nextFire {
		return nil
	}
	if w.p.cfg.Kind == WindowSession {
		return w.fireSessions(out)
	}
	due, next := exec.DueWindows(w.panes, wm, nil)
	w.nextFire = next
	for _, p := range due {
		w.fired = rowcodec.AppendGroups(w.fired[:0], p.null, p.null >= 0, p.ints, p.strs)
		w.sortByKey(w.fired)
		w.paneHint = len(w.fired)
		for i, g := range w.fired {
			w.emitLeft = len(w.fired) - i
			if err := w.emitGroup(g, out); err != nil {
				return err
			}
			w.freeGroup(g)
		}
		delete(w.panes, exec.WindowID{Start: p.start, End: p.end})
	}
	w.emitLeft = 0 // the hint is the firing's; another emit reserves nothing ahead
	return w.flush(out)
}

func (w *windowAgg) fireSessions(out exec.Emitter) error {
	w.fired = w.fired[:0]
	for len(w.ends) > 0 && w.ends[0].end <= w.wm {
		e := w.ends.pop()
		switch g := e.g; {
		case w.gGen[g] != e.gen || w.gFlag[g]&flagLive == 0: // freed or merged away since
		case w.gEnd[g] > e.end: // extended since: queued again under its end
			w.ends.push(sessionEnd{end: w.gEnd[g], g: g, gen: e.gen})
		default:
			w.fired = append(w.fired, g)
		}
	}
	w.nextFire = math.MaxInt64
	if len(w.ends) > 0 {
		w.nextFire = w.ends[0].end // at most the smallest live end (an entry may be stale or extended)
	}
	w.sortByKey(w.fired)
	slices.SortStableFunc(w.fired, func(a, b int32) int {
		return cmp.Or(cmp.Compare(w.gEnd[a], w.gEnd[b]), cmp.Compare(w.gStart[a], w.gStart[b]))
	})
	for i, g := range w.fired {
		w.emitLeft = len(w.fired) - i
		if err := w.emitGroup(g, out); err != nil {
			return err
		}
		list := w.sessionsOfGroup(g)
		w.setSessions(g, slices.DeleteFunc(list, func(x int32) bool { return x == g }))
		w.freeGroup(g)
	}
	w.emitLeft = 0
	return w.flush(out)
}

// sortByKey orders groups by their canonical key bytes.
func (w *windowAgg) sortByKey(gs []int32) {
	switch w.p.keyEnc.Mode {
	case rowcodec.KeyInt:
		slices.SortFunc(gs, func(a, b int32) int {
			return rowcodec.CompareIntKeys(w.gInt[a], w.gFlag[a]&flagNullKey != 0, w.gInt[b], w.gFlag[b]&flagNullKey != 0)
		})
	case rowcodec.KeyBytes:
		slices.SortFunc(gs, func(a, b int32) int { return cmp.Compare(w.gStr[a], w.gStr[b]) })
	}
}

func (p *pane) Window() exec.WindowID { return exec.WindowID{Start: p.start, End: p.end} }

// emitGroup appends g's row to the output, flushing a full batch.
func (w *windowAgg) emitGroup(g int32, out exec.Emitter) error {
	if w.out == nil {
		w.out = array.NewRecordBuilder(w.ctx.Alloc, w.p.out)
	}
	if w.outRows == 0 && w.emitLeft > 1 {
		// Room for the rows this batch will get, at once: grown by doubling, a third of q5's allocations were
		// the copies (and their fresh pages).
		w.out.Reserve(min(w.emitLeft, windowEmitRows))
	}
	nk := len(w.p.cfg.Keys)
	switch w.p.keyEnc.Mode {
	case rowcodec.KeyInt:
		if w.gFlag[g]&flagNullKey != 0 {
			w.out.Field(0).AppendNull()
		} else {
			rowcodec.AppendInt64(w.out.Field(0), w.gInt[g])
		}
	case rowcodec.KeyBytes:
		if err := w.p.keyEnc.DecodeKey(w.out.Fields()[:nk], []byte(w.showKey(g))); err != nil {
			return err
		}
	}
	w.out.Field(nk).(*array.TimestampBuilder).Append(arrow.Timestamp(w.gStart[g]))
	w.out.Field(nk + 1).(*array.TimestampBuilder).Append(arrow.Timestamp(w.gEnd[g]))
	for i, a := range w.aggs {
		if err := a.appendTo(w.out.Field(nk+2+i), g); err != nil {
			return err
		}
	}
	if w.outRows++; w.outRows == windowEmitRows {
		return w.flush(out)
	}
	return nil
}

func (w *windowAgg) flush(out exec.Emitter) error {
	if w.outRows == 0 {
		return nil
	}
	w.outRows = 0
	return out.Emit(exec.Batch{Rec: w.out.NewRecordBatch()})
}

func (w *windowAgg) OnBarrier(uint64) error {
	st := w.ctx.State
	for _, k := range w.deletes {
		st.Delete(k)
	}
	w.deletes = w.deletes[:0]
	var buf []byte
	for _, g := range w.dirty {
		f := w.gFlag[g]
		if f&(flagDirty|flagLive) != flagDirty|flagLive {
			continue
		}
		if f&flagStored != 0 && (w.gStoredStart[g] != w.gStart[g] || w.gStoredEnd[g] != w.gEnd[g]) {
			st.Delete(w.stateKey(g, w.gStoredStart[g], w.gStoredEnd[g])) // a session that grew
		}
		buf = buf[:0]
		for _, a := range w.aggs {
			buf = a.encode(buf, g)
		}
		buf = w.appendShow(buf, g)
		st.Put(w.stateKey(g, w.gStart[g], w.gEnd[g]), slices.Clone(buf))
		w.gFlag[g] = f&^flagDirty | flagStored
		w.gStoredStart[g], w.gStoredEnd[g] = w.gStart[g], w.gEnd[g]
	}
	w.dirty = w.dirty[:0]
	st.Put(slices.Clone(windowWMKey), binary.BigEndian.AppendUint64(nil, uint64(w.wm)))
	return nil
}

func (w *windowAgg) Close() error {
	if w.out != nil {
		w.out.Release()
		w.out = nil
	}
	return nil
}

// procWindowAgg is a window aggregate of processing-time windows (WindowAggConfig.ProcTime): rows are assigned by
// the clock at arrival (Process), windows fire by the clock (exec.ProcessingTimer). Its "watermark" (w.wm, kept
// in state as for event time) is the processing time it fired up to. Event-time watermarks pass by, except the
// last one (end of input), which fires every open window. The open windows are state like event-time windows:
// after a restore the runner finds the earliest end through NextProcessingTime, and fires those already past at
// once.
type procWindowAgg struct{ *windowAgg }

var (
	_ exec.Operator        = procWindowAgg{}
	_ exec.ProcessingTimer = procWindowAgg{}
)

func (w procWindowAgg) Open(ctx *exec.TaskContext) error {
	if ctx.Clock == nil {
		c := *ctx
		c.Clock = exec.WallClock{}
		ctx = &c
	}
	return w.windowAgg.Open(ctx)
}

func (w procWindowAgg) OnWatermark(wm int64, out exec.Emitter) error {
	if wm != exec.MaxWatermark {
		return nil
	}
	return w.fire(wm, out)
}

func (w procWindowAgg) NextProcessingTime() (int64, bool) {
	return w.nextFire, w.nextFire != math.MaxInt64
}

func (w procWindowAgg) OnProcessingTime(now int64, out exec.Emitter) error {
	return w.fire(now, out)
}
