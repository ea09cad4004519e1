package agg

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/exec/rowcodec"
	"github.com/clinksql/clinksql/state"
)

// State layout of the group aggregate in the subtask's backend:
//
//	KeyedKey(kg, groupStateID, key)   one group: uvarint row count, then each aggregate's encode, in SELECT order,
//	                               then the row bytes of its key when they differ (groupKeys.gShow)
//
// key is the group's canonical key bytes (package rowcodec; empty for a global aggregate). After a barrier the backend
// holds exactly the groups that exist: a keyed group whose row count fell to 0 is deleted (the global one stays,
// with its count of 0).
//
// The working set: groups live in memory, column-wise and indexed by a dense group id, found through a Go map by
// int64 key or canonical key bytes. A group not in memory is loaded by a Get of its key when the backend may hold
// it (after a restore, or after an eviction), else created empty without touching the backend. Put and Delete go
// only to the write-back cache: a dirty group is written at OnBarrier, a group that ceases to exist is deleted
// when it does. Above maxGroups a barrier evicts the groups not touched since the previous barrier; so does the end
// of an input batch, after writing the dirty groups back early (the backend keeps them until the next barrier's
// checkpoint takes them).
const groupStateID = 1

// Group flags of the window and the group aggregate.
const (
	flagLive    uint8 = 1 << iota
	flagDirty         // changed since the last barrier (listed in the operator's dirty)
	flagStored        // in the backend (the window aggregate: under its storedStart, storedEnd)
	flagNullKey       // rowcodec.KeyInt: the key is NULL
	flagExists        // global aggregate: it has seen a row, so it exists even with a row count of 0
)

// groupAgg is one subtask of a GroupAggregate.
type groupAgg struct {
	exec.NoTimers // results are emitted per batch; the runtime forwards the watermark
	p             *groupPlan
	ctx           *exec.TaskContext
	maxGroups     int // this subtask's share of the working set bound (Open)
	aggs          []groupAccumulator
	keyed         bool
	updating      bool

	// The group table, indexed by group id: the keys, and
	groupKeys
	gCount []int64 // rows in the group
	gFlag  []uint8
	gSeq   []uint32 // the batch that last touched the group
	gEpoch []uint32 // the barrier interval that last touched the group

	ints *intTable
	strs map[string]int32
	null int32 // the NULL key's group (rowcodec.KeyInt), the only group (rowcodec.KeyNone); -1 when none
	live int
	// complete: every group of the backend is in memory, so a group not found is new (no Get needed).
	complete bool
	dirty    []int32
	seq      uint32
	epoch    uint32

	// Per batch.
	kgs      exec.BatchKeyGroups
	keys     rowcodec.KeyRows
	rows     []int32
	grps     []int32
	neg      []bool
	frows    [][]int32
	fgrps    [][]int32
	fneg     [][]bool
	touched  []int32
	prevHad  []bool
	prevOff  []int32
	prevBuf  []byte
	nextBuf  []byte
	keyBuf   []byte
	valBuf   []byte
	outRows  []outRow
	gone     []int32 // groups to free after the output is built
	grpOf    []int32 // the group of each row
	load     []int32 // groups created by the batch that the backend may hold
	loadBuf  []byte  // their state keys, end to end
	loadOff  []int32
	loadKeys [][]byte
	// batchEntryBytes is the largest key and value written at a barrier so far, to size the next batch.
	batchEntryBytes int
	out             *array.RecordBuilder
	decoders        []resultDecoder // per aggregate column of out
	ov              aggOverflow
}

var _ exec.Operator = (*groupAgg)(nil)

func newGroupAgg(p *groupPlan) *groupAgg {
	a := &groupAgg{p: p, groupKeys: groupKeys{mode: p.keyEnc.Mode}, keyed: len(p.cfg.Keys) > 0,
		updating: p.cfg.InputUpdating, null: -1, ov: aggOverflow{mode: p.cfg.Mode}}
	for _, k := range p.aggs {
		a.aggs = append(a.aggs, newGroupAccumulator(k, p.cfg.InputUpdating, &a.ov))
	}
	a.frows = make([][]int32, len(p.aggs))
	a.fgrps = make([][]int32, len(p.aggs))
	a.fneg = make([][]bool, len(p.aggs))
	return a
}

var errStopScan = errors.New("stop")

func (a *groupAgg) Open(ctx *exec.TaskContext) error {
	if err := exec.CheckKeyGroups(ctx, "group aggregate"); err != nil {
		return err
	}
	a.ctx = ctx
	a.maxGroups = exec.WorkingSetShare(ctx, a.p.maxGroups, minGroupsShare)
	a.ov.errors = ctx.Errors
	a.ints = newIntTable(0)
	a.strs = map[string]int32{}
	a.seq, a.epoch = 1, 1
	empty, err := stateEmpty(ctx, groupStateID)
	if err != nil {
		return fmt.Errorf("group aggregate: %w", err)
	}
	a.complete = empty
	return nil
}

// stateEmpty reports whether the backend holds no keyed state of id in the subtask's key groups: then nothing
// needs to be looked up in it until the operator evicts something.
func stateEmpty(ctx *exec.TaskContext, id byte) (bool, error) {
	for kg := ctx.KeyGroups.Start; kg < ctx.KeyGroups.End; kg++ {
		err := ctx.State.Scan(state.KeyedKey(kg, id, nil), func(_, _ []byte) error { return errStopScan })
		if errors.Is(err, errStopScan) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
	}
	return true, nil
}

// allocGroup returns a free group id with empty accumulators.
func (a *groupAgg) allocGroup() int32 {
	g, grown := a.allocKey()
	if grown {
		a.gCount = append(a.gCount, 0)
		a.gFlag = append(a.gFlag, 0)
		a.gSeq = append(a.gSeq, 0)
		a.gEpoch = append(a.gEpoch, 0)
		for _, ag := range a.aggs {
			ag.grow()
		}
	}
	return g
}

// freeGroup forgets g (its backend entry, if any, is the caller's business).
func (a *groupAgg) freeGroup(g int32) {
	switch a.p.keyEnc.Mode {
	case rowcodec.KeyInt:
		if a.gFlag[g]&flagNullKey != 0 {
			a.null = -1
		} else {
			a.ints.delete(a.gInt[g])
		}
	case rowcodec.KeyBytes:
		delete(a.strs, a.gStr[g])
	default:
		a.null = -1
	}
	a.gFlag[g], a.gCount[g], a.gSeq[g] = 0, 0, 0
	for _, ag := range a.aggs {
		ag.reset(g)
	}
	a.freeKey(g)
	a.live--
}

func (a *groupAgg) stateKey(g int32) []byte {
	a.keyBuf = a.keyBytes(a.keyBuf[:0], g, a.gFlag[g]&flagNullKey != 0)
	return state.KeyedKey(int(a.gKG[g]), groupStateID, a.keyBuf)
}

// newGroup creates the group of row i of the current batch, empty; when the backend may hold it (not complete),
// it is listed in load, and loadGroups fills it in from the backend before the batch counts its rows.
func (a *groupAgg) newGroup(i int) (int32, error) {
	kg, err := a.kgs.Of(a.ctx, a.p.cfg.Keys, i, "group aggregate")
	if err != nil {
		return 0, err
	}
	g := a.allocGroup()
	a.gFlag[g] = flagLive
	a.live++
	null := a.setKey(g, kg, &a.keys, i)
	switch {
	case a.mode == rowcodec.KeyInt && !null:
		a.ints.set(a.gInt[g], g)
	case a.mode == rowcodec.KeyBytes:
		a.strs[a.gStr[g]] = g
	default: // rowcodec.KeyNone, or a NULL rowcodec.KeyInt key
		if null {
			a.gFlag[g] |= flagNullKey
		}
		a.null = g
	}
	if !a.complete {
		a.load = append(a.load, g)
	}
	return g, nil
}

// loadGroups reads the groups of load from the backend in one batched lookup (state.GetMany: the keys in one
// arena, the misses read from Pebble in key order) and restores those it holds.
func (a *groupAgg) loadGroups() error {
	a.loadBuf, a.loadKeys = a.loadBuf[:0], a.loadKeys[:0]
	offs := a.loadOff[:0]
	for _, g := range a.load {
		offs = append(offs, int32(len(a.loadBuf)))
		a.keyBuf = a.keyBytes(a.keyBuf[:0], g, a.gFlag[g]&flagNullKey != 0)
		a.loadBuf = appendKeyedKey(a.loadBuf, int(a.gKG[g]), groupStateID, a.keyBuf)
	}
	offs = append(offs, int32(len(a.loadBuf)))
	for j := range a.load {
		a.loadKeys = append(a.loadKeys, a.loadBuf[offs[j]:offs[j+1]:offs[j+1]])
	}
	a.loadOff = offs
	err := state.GetMany(a.ctx.State, a.loadKeys, func(j int, v []byte) error {
		g := a.load[j]
		if err := a.restoreGroup(g, v); err != nil {
			return fmt.Errorf("group aggregate: restore a group of key group %d: %w", a.gKG[g], err)
		}
		return nil
	})
	clear(a.loadKeys)
	a.load = a.load[:0]
	return err
}

// appendKeyedKey appends state.KeyedKey(kg, id, key) to dst without allocating.
func appendKeyedKey(dst []byte, kg int, id byte, key []byte) []byte {
	dst = append(dst, byte(kg>>8), byte(kg), id)
	return append(dst, key...)
}

func (a *groupAgg) restoreGroup(g int32, v []byte) error {
	n, rest, err := rowcodec.GetUvarint(v)
	if err != nil {
		return err
	}
	a.gCount[g] = int64(n)
	a.gFlag[g] |= flagStored
	if !a.keyed {
		a.gFlag[g] |= flagExists
	}
	for _, ag := range a.aggs {
		if rest, err = ag.decode(rest, g); err != nil {
			return err
		}
	}
	return a.restoreShow(g, rest)
}

var _ exec.Starter = (*groupAgg)(nil)

// Start emits a global aggregate's row over no rows (COUNT 0, the rest NULL), as Postgres answers and Flink and
// RisingWave emit, unless the restored state holds the group: then that row (or a later one) was emitted before.
// The first row retracts it (-U/+U) like any other change.
func (a *groupAgg) Start(out exec.Emitter) error {
	kg := state.KeyGroupOf(0, a.ctx.MaxKeyGroups) // exec.HashKeys over no key columns is 0
	if a.keyed || !a.ctx.KeyGroups.Contains(kg) {
		return nil
	}
	g := a.allocGroup()
	a.gFlag[g] = flagLive
	a.gKG[g] = uint16(kg)
	a.live++
	a.null = g
	if !a.complete {
		v, ok, err := a.ctx.State.Get(a.stateKey(g))
		if err != nil {
			return err
		}
		if ok {
			if err := a.restoreGroup(g, v); err != nil {
				return fmt.Errorf("group aggregate: restore the global group: %w", err)
			}
			return nil
		}
	}
	a.gFlag[g] |= flagExists
	a.touched, a.prevHad = append(a.touched[:0], g), append(a.prevHad[:0], false)
	a.prevBuf, a.prevOff = a.prevBuf[:0], append(a.prevOff[:0], 0, 0)
	return a.emit(out)
}

// present reports whether g exists: a keyed group while it holds a row, the global one once it saw a row.
func (a *groupAgg) present(g int32) bool {
	if a.keyed {
		return a.gCount[g] > 0
	}
	return a.gFlag[g]&flagExists != 0
}

// CopiesInput: what the group aggregate keeps of a batch are copies, as the window aggregate's (CopiesInput
// there). A hash exchange into it recycles its parts' buffers (exec.InputCopier).
func (a *groupAgg) CopiesInput() {}

func (a *groupAgg) Process(_ int, b exec.Batch, out exec.Emitter) error {
	defer b.Release()
	n := b.Rows()
	if n == 0 {
		return nil
	}
	kinds := b.Kinds
	if kinds != nil {
		all := true
		for _, k := range kinds {
			if k == exec.UpdateBefore || k == exec.Delete {
				if !a.updating {
					return fmt.Errorf("group aggregate: input row of kind %s (the input is append-only)", k)
				}
				all = false
				break
			}
		}
		if all {
			kinds = nil
		}
	}
	a.kgs.Start(b)
	defer a.kgs.End()
	if a.seq++; a.seq == 0 { // wrapped: forget every mark
		clear(a.gSeq)
		a.seq = 1
	}
	if err := a.keys.Load(&a.p.keyEnc, b.Rec, a.p.cfg.Keys); err != nil {
		return err
	}
	if err := a.assign(n, kinds); err != nil {
		return err
	}
	// Results before the batch, then the updates, then the results after it.
	a.prevBuf, a.prevOff = a.prevBuf[:0], append(a.prevOff[:0], 0)
	for t, g := range a.touched {
		if a.prevHad[t] {
			var err error
			if a.prevBuf, err = a.result(a.prevBuf, g); err != nil {
				return err
			}
		}
		a.prevOff = append(a.prevOff, int32(len(a.prevBuf)))
	}
	if err := a.update(b.Rec); err != nil {
		return err
	}
	if err := a.emit(out); err != nil {
		return err
	}
	if a.live > a.maxGroups {
		// The working set stays bounded between barriers too: the groups go to the backend's write-back cache
		// (compact, and in the next checkpoint like any write) and leave memory.
		a.writeBack()
		a.evict()
	}
	return nil
}

// assign finds (or creates) the group of every row, counts the rows in and out, and lists the groups the batch
// touches in the order of first touch. A retraction of a group that holds no row is dropped here.
func (a *groupAgg) assign(n int, kinds []exec.RowKind) error {
	a.rows, a.grps, a.neg = a.rows[:0], a.grps[:0], a.neg[:0]
	a.touched, a.prevHad = a.touched[:0], a.prevHad[:0]
	mode := a.p.keyEnc.Mode
	keyNulls := a.keys.Nulls
	ints := a.keys.Ints
	// The group of every row first, so that the groups the backend may hold are read in one batch.
	a.load = a.load[:0]
	grpOf := slices.Grow(a.grpOf[:0], n)[:n]
	a.grpOf = grpOf
	prefetch := mode == rowcodec.KeyInt && len(ints) >= n
	for i := 0; i < n; i++ {
		if prefetch && i%prefetchChunk == 0 { // start the cache misses of the next keys together
			prefetchSink.Store(a.ints.prefetch(ints[i:min(i+prefetchChunk, n)]))
		}
		var g int32
		var ok bool
		switch {
		case mode == rowcodec.KeyInt && (keyNulls == nil || keyNulls.IsValid(i)):
			g, ok = a.ints.get(ints[i])
		case mode == rowcodec.KeyBytes:
			g, ok = a.strs[string(a.keys.BytesOf(i))]
		default: // rowcodec.KeyNone, or a NULL rowcodec.KeyInt key
			g, ok = a.null, a.null >= 0
		}
		if !ok {
			var err error
			if g, err = a.newGroup(i); err != nil {
				return err
			}
		}
		grpOf[i] = g
	}
	if len(a.load) > 0 {
		if err := a.loadGroups(); err != nil {
			return err
		}
	}
	var ignored int64
	for i, g := range grpOf {
		if a.gSeq[g] != a.seq {
			a.gSeq[g] = a.seq
			a.gEpoch[g] = a.epoch
			a.touched = append(a.touched, g)
			a.prevHad = append(a.prevHad, a.present(g))
		}
		retract := kinds != nil && (kinds[i] == exec.UpdateBefore || kinds[i] == exec.Delete)
		if retract {
			if a.gCount[g] == 0 {
				ignored++
				continue
			}
			a.gCount[g]--
		} else {
			a.gCount[g]++
			a.gFlag[g] |= flagExists
		}
		a.rows = append(a.rows, int32(i))
		a.grps = append(a.grps, g)
		if kinds != nil {
			a.neg = append(a.neg, retract)
		}
	}
	if ignored > 0 {
		a.ctx.Errors.Add(ignored)
	}
	return nil
}

// update runs every aggregate over the batch's assignments, through its FILTER.
func (a *groupAgg) update(rec arrow.RecordBatch) error {
	var neg []bool
	if len(a.neg) > 0 {
		neg = a.neg
	}
	for i, ag := range a.aggs {
		spec := a.p.cfg.Aggs[i]
		rows, grps, ng := a.rows, a.grps, neg
		if spec.Filter >= 0 {
			rows, grps, ng = a.filter(i, rec.Column(spec.Filter).(*array.Boolean), neg)
		}
		if len(rows) == 0 {
			continue
		}
		var col arrow.Array
		if spec.Arg >= 0 {
			col = rec.Column(spec.Arg)
		}
		if err := ag.update(col, rows, grps, ng); err != nil {
			return err
		}
	}
	return nil
}

// filter keeps the assignments of rows where cond is true (NULL is false).
func (a *groupAgg) filter(i int, cond *array.Boolean, neg []bool) ([]int32, []int32, []bool) {
	fr, fg, fn := filterAssignments(cond, a.rows, a.grps, neg, a.frows[i][:0], a.fgrps[i][:0], a.fneg[i][:0])
	a.frows[i], a.fgrps[i], a.fneg[i] = fr, fg, fn
	if neg == nil {
		fn = nil
	}
	return fr, fg, fn
}

// result appends g's result row: each aggregate's result bytes.
func (a *groupAgg) result(dst []byte, g int32) ([]byte, error) {
	var err error
	for _, ag := range a.aggs {
		if dst, err = ag.result(dst, g); err != nil {
			return nil, err
		}
	}
	return dst, nil
}

func (a *groupAgg) markDirty(g int32) {
	if a.gFlag[g]&flagDirty == 0 {
		a.gFlag[g] |= flagDirty
		a.dirty = append(a.dirty, g)
	}
}

// outRow is one output row being assembled: a group and its result bytes (in prevBuf or nextBuf).
type outRow struct {
	kind   exec.RowKind
	g      int32
	next   bool
	lo, hi int32
}

// emit compares each touched group's result before and after the batch and emits the difference. The rows are
// decided first and built column by column in writeRows; groups that ceased to exist are freed only after that,
// since their keys are still needed.
func (a *groupAgg) emit(out exec.Emitter) error {
	a.nextBuf, a.outRows, a.gone = a.nextBuf[:0], a.outRows[:0], a.gone[:0]
	for t, g := range a.touched {
		had, has := a.prevHad[t], a.present(g)
		plo, phi := a.prevOff[t], a.prevOff[t+1]
		switch {
		case !had && !has: // only retractions of rows it did not hold
			a.gone = append(a.gone, g)
			continue
		case had && !has:
			a.outRows = append(a.outRows, outRow{kind: exec.Delete, g: g, lo: plo, hi: phi})
			if a.gFlag[g]&flagStored != 0 {
				a.ctx.State.Delete(a.stateKey(g))
			}
			a.gone = append(a.gone, g)
		default:
			a.markDirty(g)
			nlo := int32(len(a.nextBuf))
			var err error
			if a.nextBuf, err = a.result(a.nextBuf, g); err != nil {
				return err
			}
			nhi := int32(len(a.nextBuf))
			switch {
			case !had:
				a.outRows = append(a.outRows, outRow{kind: exec.Insert, g: g, next: true, lo: nlo, hi: nhi})
			case string(a.prevBuf[plo:phi]) != string(a.nextBuf[nlo:nhi]):
				a.outRows = append(a.outRows, outRow{kind: exec.UpdateBefore, g: g, lo: plo, hi: phi},
					outRow{kind: exec.UpdateAfter, g: g, next: true, lo: nlo, hi: nhi})
			default:
				a.nextBuf = a.nextBuf[:nlo] // unchanged: nothing to emit
			}
		}
		if len(a.outRows) >= windowEmitRows {
			if err := a.writeRows(out); err != nil {
				return err
			}
		}
	}
	if err := a.writeRows(out); err != nil {
		return err
	}
	for _, g := range a.gone {
		a.freeGroup(g)
	}
	return nil
}

// resultDecoder appends the value whose canonical bytes start src to its column's builder and returns the rest.
type resultDecoder func(src []byte) ([]byte, error)

// resultDecoderFor picks the decoder of one output column once: the common result types append without a type
// switch per value (the builder is reserved for the batch first), the others through rowcodec.DecodeValue.
func resultDecoderFor(b array.Builder, t arrow.DataType) resultDecoder {
	switch bb := b.(type) {
	case *array.Int64Builder:
		return func(src []byte) ([]byte, error) {
			if len(src) < 8 {
				return nil, rowcodec.ErrState
			}
			bb.UnsafeAppend(rowcodec.OrderedInt(src))
			return src[8:], nil
		}
	case *array.Decimal128Builder:
		return func(src []byte) ([]byte, error) {
			if len(src) < 16 {
				return nil, rowcodec.ErrState
			}
			bb.UnsafeAppend(rowcodec.DecimalFrom(src))
			return src[16:], nil
		}
	case *array.Float64Builder:
		return func(src []byte) ([]byte, error) {
			if len(src) < 8 {
				return nil, rowcodec.ErrState
			}
			bb.UnsafeAppend(rowcodec.FloatFromOrdered(binary.BigEndian.Uint64(src)))
			return src[8:], nil
		}
	}
	return func(src []byte) ([]byte, error) { return rowcodec.DecodeValue(b, t, src) }
}

// writeRows builds the output rows collected so far into a batch and emits it.
func (a *groupAgg) writeRows(out exec.Emitter) error {
	rows := a.outRows
	if len(rows) == 0 {
		return nil
	}
	a.outRows = a.outRows[:0]
	if a.out == nil {
		a.out = array.NewRecordBuilder(a.ctx.Alloc, a.p.out)
		nk := len(a.p.cfg.Keys)
		for i, t := range a.p.resEnc.Types {
			a.decoders = append(a.decoders, resultDecoderFor(a.out.Field(nk+i), t))
		}
	}
	a.out.Reserve(len(rows))
	nk := len(a.p.cfg.Keys)
	switch a.p.keyEnc.Mode {
	case rowcodec.KeyInt:
		kb := a.out.Field(0)
		ib, _ := kb.(*array.Int64Builder)
		for _, r := range rows {
			switch {
			case a.gFlag[r.g]&flagNullKey != 0:
				kb.AppendNull()
			case ib != nil:
				ib.UnsafeAppend(a.gInt[r.g])
			default:
				rowcodec.AppendInt64(kb, a.gInt[r.g])
			}
		}
	case rowcodec.KeyBytes:
		kbs := a.out.Fields()[:nk]
		for _, r := range rows {
			if err := a.p.keyEnc.DecodeKey(kbs, rowcodec.StringBytes(a.showKey(r.g))); err != nil {
				return err
			}
		}
	}
	res := a.out.Fields()[nk:]
	update := false
	kinds := make([]exec.RowKind, len(rows))
	for j, r := range rows {
		kinds[j] = r.kind
		update = update || r.kind != exec.Insert
		buf := a.prevBuf
		if r.next {
			buf = a.nextBuf
		}
		src := buf[r.lo:r.hi]
		for c, dec := range a.decoders {
			if len(src) == 0 {
				return rowcodec.ErrState
			}
			null := src[0] == 0
			src = src[1:]
			if null {
				res[c].AppendNull()
				continue
			}
			var err error
			if src, err = dec(src); err != nil {
				return err
			}
		}
		if len(src) != 0 {
			return fmt.Errorf("group aggregate: %d stray bytes after a result", len(src))
		}
	}
	b := exec.Batch{Rec: a.out.NewRecordBatch()}
	if update {
		b.Kinds = kinds
	}
	return out.Emit(b)
}

// OnBarrier writes the groups changed since the last barrier into the write-back cache, then shrinks the working
// set if it grew past maxGroups.
func (a *groupAgg) OnBarrier(uint64) error {
	a.writeBack()
	if a.live > a.maxGroups {
		a.evict()
	}
	a.epoch++
	return nil
}

// writeBack writes the dirty groups into the backend's write-back cache as one batch (state.WriteBatch: the
// backend keeps it as one block of memory rather than an entry and two allocations per group), sized from the
// previous one's entries.
func (a *groupAgg) writeBack() {
	wb := state.NewBatch(len(a.dirty), len(a.dirty)*a.batchEntryBytes)
	for _, g := range a.dirty {
		if a.gFlag[g]&(flagDirty|flagLive) != flagDirty|flagLive {
			continue
		}
		a.valBuf = binary.AppendUvarint(a.valBuf[:0], uint64(a.gCount[g]))
		for _, ag := range a.aggs {
			a.valBuf = ag.encode(a.valBuf, g)
		}
		a.valBuf = a.appendShow(a.valBuf, g)
		a.keyBuf = a.keyBytes(a.keyBuf[:0], g, a.gFlag[g]&flagNullKey != 0)
		a.loadBuf = appendKeyedKey(a.loadBuf[:0], int(a.gKG[g]), groupStateID, a.keyBuf)
		wb.Put(a.loadBuf, a.valBuf)
		a.batchEntryBytes = max(a.batchEntryBytes, len(a.loadBuf)+len(a.valBuf))
		a.gFlag[g] = a.gFlag[g]&^flagDirty | flagStored
	}
	if wb.Len() > 0 {
		state.WriteBatch(a.ctx.State, wb)
	}
	a.dirty = a.dirty[:0]
}

// evict drops the groups not touched since the previous barrier from memory, and all of them if that is not
// enough; they are all clean (OnBarrier just wrote them), so the backend has them.
//
// The key maps are built anew from the groups that stay rather than deleted from: a Go map keeps a deleted slot
// as a tombstone that every later miss probes past (lookups of new keys would slow down barrier after barrier),
// and deleting most of a large map costs a cache miss per key where inserting the few that stay costs little.
func (a *groupAgg) evict() {
	intKeys, strKeys := a.p.keyEnc.Mode == rowcodec.KeyInt, a.p.keyEnc.Mode == rowcodec.KeyBytes
	if intKeys {
		a.ints = nil
	}
	if strKeys {
		a.strs = nil
	}
	for pass := 0; pass < 2 && a.live > a.maxGroups; pass++ {
		for g, f := range a.gFlag {
			if f&flagLive != 0 && (pass == 1 || a.gEpoch[g] != a.epoch) {
				a.freeGroup(int32(g))
			}
		}
	}
	a.complete = false
	switch {
	case intKeys:
		a.ints = newIntTable(max(a.live, a.maxGroups)) // sized for the working set it grows back to: no rehash
		for g, f := range a.gFlag {
			if f&(flagLive|flagNullKey) == flagLive {
				a.ints.set(a.gInt[g], int32(g))
			}
		}
	case strKeys:
		a.strs = make(map[string]int32, a.live)
		for g, f := range a.gFlag {
			if f&flagLive != 0 {
				a.strs[a.gStr[g]] = int32(g)
			}
		}
	}
}

func (a *groupAgg) Close() error {
	if a.out != nil {
		a.out.Release()
		a.out = nil
	}
	return nil
}
