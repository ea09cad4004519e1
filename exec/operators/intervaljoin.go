package operators

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

	"github.com/clinksql/clinksql/checkpoint"
	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/exec/expr"
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
//     barriers and restores do not change it). Batches hold at most tjEmitRows rows.
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
// seq is the row's arrival number (unique in the subtask); flags holds tjMatched and tjNullKey; key is the
// canonical key bytes and row the canonical bytes of every column of the row's side (rowcodec.Encoding over all
// columns: a NULL marker, then the value).

// tjEmitRows bounds the rows of one output batch, and the candidate pairs of one residual evaluation.
const tjEmitRows = 4096

// Row flags of the time joins' row table.
const (
	tjLive    uint8 = 1 << iota
	tjRight         // the row is of input 1
	tjMatched       // interval join: the row met a partner (outer sides only)
	tjDirty         // added or changed since the last barrier (listed in dirty)
	tjStored        // in the backend
	tjNullKey       // a key column is NULL: the row never matches
)

var ijMetaKey = state.OperatorKey("intervaljoin/meta")

// tjSpec is the validated part of a JoinSpec that the interval and the window join share.
type tjSpec struct {
	spec    JoinSpec
	what    string // the operator's name in messages
	out     *arrow.Schema
	schemas [2]*arrow.Schema
	keys    [2][]int
	cols    [2][]int // every column of each side, for the row encoding
	keyEnc  rowcodec.Encoding
	rowEnc  [2]rowcodec.Encoding
	outer   [2]bool
}

func tjInternalf(what, format string, args ...any) error {
	return winInternalf(what+": "+format, args...)
}

// planTimeJoin validates the shared join contract; what names the operator in messages.
func planTimeJoin(s JoinSpec, what string) (*tjSpec, error) {
	if s.Left == nil || s.Right == nil {
		return nil, tjInternalf(what, "missing input schema")
	}
	if s.Type > JoinFull {
		return nil, tjInternalf(what, "unknown join type %d", s.Type)
	}
	if len(s.LeftKeys) == 0 || len(s.LeftKeys) != len(s.RightKeys) {
		return nil, tjInternalf(what, "%d left and %d right key columns", len(s.LeftKeys), len(s.RightKeys))
	}
	p := &tjSpec{spec: s, what: what, out: JoinOutputSchema(s.Left, s.Right),
		schemas: [2]*arrow.Schema{s.Left, s.Right}, keys: [2][]int{s.LeftKeys, s.RightKeys}}
	p.outer = [2]bool{s.Type == JoinLeft || s.Type == JoinFull, s.Type == JoinRight || s.Type == JoinFull}
	var keyTypes []arrow.DataType
	for i := range s.LeftKeys {
		l, r := s.LeftKeys[i], s.RightKeys[i]
		if l < 0 || l >= s.Left.NumFields() || r < 0 || r >= s.Right.NumFields() {
			return nil, tjInternalf(what, "key pair (%d, %d) out of range", l, r)
		}
		lf, rf := s.Left.Field(l), s.Right.Field(r)
		if !arrow.TypeEqual(lf.Type, rf.Type) {
			return nil, tjInternalf(what, "key columns %q and %q have types %s and %s (the planner casts them to one)",
				lf.Name, rf.Name, lf.Type, rf.Type)
		}
		if !rowcodec.KeyType(lf.Type) {
			return nil, errTimeJoin("cannot join on %s column %q", lf.Type, lf.Name)
		}
		keyTypes = append(keyTypes, lf.Type)
	}
	p.keyEnc = rowcodec.NewKeyEncoding(keyTypes)
	for side, sc := range p.schemas {
		var err error
		if p.rowEnc[side], p.cols[side], err = joinRowEncoding(sc, what); err != nil {
			return nil, err
		}
	}
	if s.Residual != nil {
		for _, c := range expr.Columns(s.Residual) {
			if c < 0 || c >= p.out.NumFields() {
				return nil, tjInternalf(what, "residual condition reads column %d of %d", c, p.out.NumFields())
			}
		}
		if s.Residual.Type().ID() != arrow.BOOL {
			return nil, errDatatype("argument of JOIN/ON must be type boolean, not type %s", expr.TypeName(s.Residual.Type()))
		}
	}
	return p, nil
}

func errTimeJoin(format string, args ...any) error {
	return sqlerr.New(sqlerr.FeatureNotSupported, sqlerr.NoPos, format, args...)
}

func errDatatype(format string, args ...any) error {
	return sqlerr.New(sqlerr.DatatypeMismatch, sqlerr.NoPos, format, args...)
}

// tjTimeColumn checks that column i of sc is a timestamp.
func tjTimeColumn(sc *arrow.Schema, i int, what, role string) error {
	if i < 0 || i >= sc.NumFields() {
		return tjInternalf(what, "%s column %d out of range (input has %d)", role, i, sc.NumFields())
	}
	if _, ok := sc.Field(i).Type.(*arrow.TimestampType); !ok {
		return errDatatype("%s column %q must be a timestamp, not %s", role, sc.Field(i).Name, sc.Field(i).Type)
	}
	return nil
}

// tjMicros returns a timestamp column's values in microseconds (floor for nanoseconds); values under NULLs are
// unspecified. The result is the array's own buffer for microseconds, else scratch. The window aggregate reads its
// event times with it too.
func tjMicros(col *array.Timestamp, scratch *[]int64) []int64 {
	raw := rowcodec.Int64Values(col, scratch)
	var mul, div int64 = 1, 1
	switch col.DataType().(*arrow.TimestampType).Unit {
	case arrow.Microsecond:
		return raw
	case arrow.Second:
		mul = 1_000_000
	case arrow.Millisecond:
		mul = 1000
	case arrow.Nanosecond:
		div = 1000
	}
	if cap(*scratch) < len(raw) {
		*scratch = make([]int64, len(raw))
	}
	out := (*scratch)[:len(raw)]
	for i, v := range raw {
		if div != 1 {
			out[i] = winFloorDiv(v, div)
		} else {
			out[i] = v * mul
		}
	}
	return out
}

// tjNullKeys marks the rows of rec with a NULL in any of the key columns, in scratch; nil when there is none.
func tjNullKeys(rec arrow.RecordBatch, keys []int, scratch *[]bool) []bool {
	nulls := false
	for _, k := range keys {
		if rec.Column(k).NullN() > 0 {
			nulls = true
		}
	}
	if !nulls {
		return nil
	}
	n := int(rec.NumRows())
	if cap(*scratch) < n {
		*scratch = make([]bool, n)
	}
	dst := (*scratch)[:n]
	clear(dst)
	for _, k := range keys {
		col := rec.Column(k)
		if col.NullN() == 0 {
			continue
		}
		for i := range dst {
			if col.IsNull(i) {
				dst[i] = true
			}
		}
	}
	return dst
}

// tjGroup is the rows of one key (interval join) or one key in one window (window join), per side in arrival
// order.
type tjGroup struct {
	i    int64  // rowcodec.KeyInt: the key
	s    string // rowcodec.KeyBytes: the canonical key bytes
	null bool   // rowcodec.KeyInt: the key is NULL; rowcodec.KeyBytes: a key column is NULL
	rows [2][]int32
	// times (interval join) are the rows' times, parallel to rows: a probe scans them without touching the row
	// table.
	times [2][]int64
	// unsorted (interval join) is set once a side's times stop being non-decreasing in arrival order (rows out of
	// order); until then a probe binary-searches its range instead of scanning the whole list.
	unsorted [2]bool
}

// appendRow adds a row of side at time t to the group's lists, keeping track of their order.
func (g *tjGroup) appendRow(side int, id int32, t int64) {
	if n := len(g.times[side]); n > 0 && t < g.times[side][n-1] {
		g.unsorted[side] = true
	}
	g.rows[side] = append(g.rows[side], id)
	g.times[side] = append(g.times[side], t)
}

// probe calls fn for each row of side with a time in [from, to], in arrival order.
func (g *tjGroup) probe(side int, from, to int64, fn func(id int32)) {
	times := g.times[side]
	k := 0
	if !g.unsorted[side] {
		k, _ = slices.BinarySearch(times, from)
		for ; k < len(times) && times[k] <= to; k++ {
			fn(g.rows[side][k])
		}
		return
	}
	for k, v := range times {
		if v >= from && v <= to {
			fn(g.rows[side][k])
		}
	}
}

// keyBytes appends the group's canonical key bytes.
func (g *tjGroup) keyBytes(dst []byte, mode rowcodec.KeyMode) []byte {
	if mode == rowcodec.KeyInt {
		return rowcodec.AppendIntKey(dst, g.i, g.null)
	}
	return append(dst, g.s...)
}

// tjFindGroup returns the group of key i (rowcodec.KeyInt, not NULL) in ints or of canonical key bytes s (rowcodec.KeyBytes;
// null: a key column is NULL) in strs, creating it.
func tjFindGroup(mode rowcodec.KeyMode, ints map[int64]*tjGroup, strs map[string]*tjGroup, i int64, s string,
	null bool) *tjGroup {
	if mode == rowcodec.KeyInt {
		g := ints[i]
		if g == nil {
			g = &tjGroup{i: i}
			ints[i] = g
		}
		return g
	}
	g := strs[s]
	if g == nil {
		g = &tjGroup{s: s, null: null}
		strs[s] = g
	}
	return g
}

// compareKeys orders two groups by their canonical key bytes.
func tjCompareKeys(a, b *tjGroup, mode rowcodec.KeyMode) int {
	if mode == rowcodec.KeyInt {
		return rowcodec.CompareIntKeys(a.i, a.null, b.i, b.null)
	}
	return cmp.Compare(a.s, b.s)
}

// tjTable is the time joins' row table: one entry per kept row, column-wise, indexed by a dense row id; freed ids
// are reused. t1 and t2 are the interval join's time and bound, the window join's window start and end.
type tjTable struct {
	t1, t2 []int64
	seq    []uint64
	kg     []uint16
	flag   []uint8
	grp    []*tjGroup
	data   [][]byte
	free   []int32
	arena  []byte
	live   int
}

// tjArenaChunk is the size of the chunks row bytes are carved from: one allocation for many rows, freed by the
// garbage collector once every row in it is gone (rows mostly leave in arrival order).
const tjArenaChunk = 256 << 10

func (t *tjTable) alloc(data []byte) int32 {
	var id int32
	if n := len(t.free); n > 0 {
		id = t.free[n-1]
		t.free = t.free[:n-1]
	} else {
		id = int32(len(t.flag))
		t.t1 = append(t.t1, 0)
		t.t2 = append(t.t2, 0)
		t.seq = append(t.seq, 0)
		t.kg = append(t.kg, 0)
		t.flag = append(t.flag, 0)
		t.grp = append(t.grp, nil)
		t.data = append(t.data, nil)
	}
	if len(data) > cap(t.arena)-len(t.arena) {
		t.arena = make([]byte, 0, max(tjArenaChunk, len(data)))
	}
	start := len(t.arena)
	t.arena = append(t.arena, data...)
	t.data[id] = t.arena[start:len(t.arena):len(t.arena)]
	t.live++
	return id
}

func (t *tjTable) release(id int32) {
	t.flag[id] = 0
	t.grp[id] = nil
	t.data[id] = nil
	t.free = append(t.free, id)
	t.live--
}

// restore adds a row read back from the backend: stored, with the flags it was stored with.
func (t *tjTable) restore(row []byte, side, kg int, t1, t2 int64, seq uint64, flags uint8) int32 {
	id := t.alloc(row)
	t.t1[id], t.t2[id], t.seq[id], t.kg[id] = t1, t2, seq, uint16(kg)
	t.flag[id] = tjLive | tjStored | flags | tjSideFlag(side)
	return id
}

func tjSideFlag(side int) uint8 {
	if side == 1 {
		return tjRight
	}
	return 0
}

func (t *tjTable) side(id int32) int {
	if t.flag[id]&tjRight != 0 {
		return 1
	}
	return 0
}

// tjValue is a row's backend value: ts or window fields are in the key or the prefix the caller writes; then
// flags(1) uvarint(len(key)) key row.
func tjAppendValue(dst []byte, flags uint8, key, row []byte) []byte {
	dst = append(dst, flags&(tjMatched|tjNullKey))
	dst = binary.AppendUvarint(dst, uint64(len(key)))
	dst = append(dst, key...)
	return append(dst, row...)
}

func tjParseValue(v []byte) (flags uint8, key, row []byte, err error) {
	if len(v) < 1 {
		return 0, nil, nil, rowcodec.ErrState
	}
	flags = v[0]
	n, w := binary.Uvarint(v[1:])
	if w <= 0 || uint64(len(v)-1-w) < n {
		return 0, nil, nil, rowcodec.ErrState
	}
	key = v[1+w : 1+w+int(n)]
	return flags, key, v[1+w+int(n):], nil
}

// tjParseKey rebuilds a group key from its canonical bytes.
func tjParseKey(mode rowcodec.KeyMode, key []byte) (i int64, s string, err error) {
	if mode != rowcodec.KeyInt {
		return 0, string(key), nil
	}
	switch {
	case len(key) == 1 && key[0] == 0:
		return 0, "", nil
	case len(key) == 9 && key[0] == 1:
		return rowcodec.OrderedInt(key[1:]), "", nil
	}
	return 0, "", rowcodec.ErrState
}

// tjBase is the part of a subtask that the interval and the window join share: the row table, the rows to write
// and delete at the next barrier, the watermark and arrival counter of the meta entry, the output, and a batch's
// loaded keys and rows.
type tjBase struct {
	spec *tjSpec
	ctx  *exec.TaskContext
	ectx expr.Context
	wm   int64
	seq  uint64
	// meta is the meta entry's key; rowKey gives a row's backend key; timed says that a row's value starts with its
	// t1 (the interval join's time).
	meta   []byte
	rowKey func(id int32) []byte
	timed  bool

	rows    tjTable
	dirty   []int32
	deletes [][]byte
	out     tjOut

	// Per batch.
	keys, data rowcodec.KeyRows
	nullKey    []bool
	hashes     []uint64
}

// open starts the subtask: it checks its key groups, reads the meta entry and passes every stored row of its key
// groups to restore (the key after KeyedKey(kg, 1+side), and the value).
func (b *tjBase) open(ctx *exec.TaskContext, restore func(kg, side int, uk, v []byte) error) error {
	what := b.spec.what
	if err := exec.CheckKeyGroups(ctx, what); err != nil {
		return err
	}
	b.ctx = ctx
	b.ectx = expr.Context{Alloc: ctx.Alloc, Mode: b.spec.spec.Mode, BadValues: ctx.Errors}
	b.out = tjOut{spec: b.spec, ctx: ctx}
	b.wm = exec.MinWatermark
	if v, ok, err := ctx.State.Get(b.meta); err != nil {
		return err
	} else if ok {
		if len(v) != 16 {
			return fmt.Errorf("%s: malformed meta state", what)
		}
		b.wm, b.seq = int64(binary.BigEndian.Uint64(v)), binary.BigEndian.Uint64(v[8:])
	}
	for kg := ctx.KeyGroups.Start; kg < ctx.KeyGroups.End; kg++ {
		for side := 0; side < 2; side++ {
			prefix := state.KeyedKey(kg, byte(1+side), nil)
			err := ctx.State.Scan(prefix, func(k, v []byte) error { return restore(kg, side, k[len(prefix):], v) })
			if err != nil {
				return fmt.Errorf("%s: restore key group %d: %w", what, kg, err)
			}
		}
	}
	return nil
}

// checkBatch checks that a batch comes from one of the two inputs and holds inserts only, and returns its rows.
func (b *tjBase) checkBatch(input int, bt exec.Batch) (int, error) {
	if input != 0 && input != 1 {
		return 0, fmt.Errorf("%s: input %d (it has two)", b.spec.what, input)
	}
	for _, k := range bt.Kinds {
		if k != exec.Insert {
			return 0, fmt.Errorf("%s: input row of kind %s (the inputs must be append-only)", b.spec.what, k)
		}
	}
	return bt.Rows(), nil
}

// loadBatch loads the keys, key hashes and row bytes of a batch of input s, and returns its NULL-key marks
// (tjNullKeys).
func (b *tjBase) loadBatch(s int, rec arrow.RecordBatch) ([]bool, error) {
	p := b.spec
	if err := b.keys.Load(&p.keyEnc, rec, p.keys[s]); err != nil {
		return nil, err
	}
	nullKey := tjNullKeys(rec, p.keys[s], &b.nullKey)
	var err error
	if b.hashes, err = exec.HashKeys(rec, p.keys[s], b.hashes); err != nil {
		return nil, err
	}
	if err := b.data.Load(&p.rowEnc[s], rec, p.cols[s]); err != nil {
		return nil, err
	}
	return nullKey, nil
}

// admit returns the key group of row i of the loaded batch (input s), which the subtask must own, and whether a key
// column is NULL (nullKey: loadBatch's marks); ok is false for a row that can never be part of the output (a NULL
// key on an inner side).
func (b *tjBase) admit(s, i int, nullKey []bool) (kg int, null, ok bool, err error) {
	if kg, err = exec.OwnedKeyGroup(b.ctx, b.hashes[i], b.spec.what); err != nil {
		return 0, false, false, err
	}
	null = nullKey != nil && nullKey[i]
	return kg, null, !null || b.spec.outer[s], nil
}

// addRow adds row i of the loaded batch (input s, key group kg) to the table, dirty, with times t1 and t2 and the
// next arrival number.
func (b *tjBase) addRow(s, i, kg int, t1, t2 int64) int32 {
	t := &b.rows
	id := t.alloc(b.data.BytesOf(i))
	t.t1[id], t.t2[id], t.seq[id], t.kg[id] = t1, t2, b.seq, uint16(kg)
	b.seq++
	t.flag[id] = tjLive | tjDirty | tjSideFlag(s)
	return id
}

// forget releases a row; its backend entry, if any, is deleted at the next barrier.
func (b *tjBase) forget(id int32) {
	t := &b.rows
	if t.flag[id]&tjStored != 0 {
		b.deletes = append(b.deletes, b.rowKey(id))
	}
	t.release(id)
}

// barrier deletes the rows forgotten since the last barrier, writes those added or changed since, and the meta
// entry.
func (b *tjBase) barrier() {
	st := b.ctx.State
	for _, k := range b.deletes {
		st.Delete(k)
	}
	b.deletes = b.deletes[:0]
	t := &b.rows
	mode := b.spec.keyEnc.Mode
	var key []byte
	for _, id := range b.dirty {
		f := t.flag[id]
		if f&(tjLive|tjDirty) != tjLive|tjDirty {
			continue
		}
		key = t.grp[id].keyBytes(key[:0], mode)
		n := 1 + binary.MaxVarintLen32 + len(key) + len(t.data[id])
		var v []byte
		if b.timed {
			v = binary.BigEndian.AppendUint64(make([]byte, 0, 8+n), uint64(t.t1[id]))
		} else {
			v = make([]byte, 0, n)
		}
		st.Put(b.rowKey(id), tjAppendValue(v, f, key, t.data[id]))
		t.flag[id] = f&^tjDirty | tjStored
	}
	b.dirty = b.dirty[:0]
	meta := binary.BigEndian.AppendUint64(make([]byte, 0, 16), uint64(b.wm))
	st.Put(slices.Clone(b.meta), binary.BigEndian.AppendUint64(meta, b.seq))
}

// tjOut builds output rows (left columns, then right columns) from the row table's bytes, and emits them in
// batches of at most tjEmitRows rows.
type tjOut struct {
	spec *tjSpec
	ctx  *exec.TaskContext
	b    *array.RecordBuilder
	n    int
}

// add appends the joined row of left row l and right row r; -1 for a side padded with NULLs.
func (o *tjOut) add(t *tjTable, l, r int32) error {
	if o.b == nil {
		o.b = array.NewRecordBuilder(o.ctx.Alloc, o.spec.out)
	}
	fs := o.b.Fields()
	nl := o.spec.spec.Left.NumFields()
	for side, id := range [2]int32{l, r} {
		bs := fs[:nl]
		if side == 1 {
			bs = fs[nl:]
		}
		if id < 0 {
			for _, b := range bs {
				b.AppendNull()
			}
			continue
		}
		if err := o.spec.rowEnc[side].DecodeKey(bs, t.data[id]); err != nil {
			return err
		}
	}
	o.n++
	return nil
}

// emit adds a row and flushes a full batch.
func (o *tjOut) emit(t *tjTable, l, r int32, out exec.Emitter) error {
	if err := o.add(t, l, r); err != nil {
		return err
	}
	if o.n == tjEmitRows {
		return o.flush(out)
	}
	return nil
}

// record returns the rows added so far as a record (possibly empty) and starts over.
func (o *tjOut) record() arrow.RecordBatch {
	if o.b == nil {
		o.b = array.NewRecordBuilder(o.ctx.Alloc, o.spec.out)
	}
	o.n = 0
	return o.b.NewRecordBatch()
}

func (o *tjOut) flush(out exec.Emitter) error {
	if o.n == 0 {
		return nil
	}
	return out.Emit(exec.Batch{Rec: o.record()})
}

func (o *tjOut) close() {
	if o.b != nil {
		o.b.Release()
		o.b = nil
	}
}

// tjResidual evaluates the residual condition over the candidate pairs (ls[k], rs[k]), tjEmitRows at a time,
// into mask (true where it is TRUE; NULL is false). scratch builds the candidate records; it must not hold
// rows.
func tjResidual(spec *tjSpec, ectx *expr.Context, scratch *tjOut, t *tjTable, ls, rs []int32, mask []bool) ([]bool, error) {
	mask = mask[:0]
	for start := 0; start < len(ls); start += tjEmitRows {
		end := min(start+tjEmitRows, len(ls))
		for k := start; k < end; k++ {
			if err := scratch.add(t, ls[k], rs[k]); err != nil {
				return nil, err
			}
		}
		rec := scratch.record()
		res, err := spec.spec.Residual.Eval(ectx, rec)
		rec.Release()
		if err != nil {
			return nil, err
		}
		b := res.(*array.Boolean)
		nulls := b.NullN() > 0
		for k := 0; k < b.Len(); k++ {
			mask = append(mask, b.Value(k) && (!nulls || b.IsValid(k)))
		}
		res.Release()
	}
	return mask, nil
}

// ijPlan is the validated interval join, shared by its subtasks.
type ijPlan struct {
	*tjSpec
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
	if err := tjTimeColumn(cfg.Left, cfg.LeftTime, "interval join", "left time"); err != nil {
		return nil, nil, err
	}
	if err := tjTimeColumn(cfg.Right, cfg.RightTime, "interval join", "right time"); err != nil {
		return nil, nil, err
	}
	if cfg.Lower > cfg.Upper {
		return nil, nil, sqlerr.New(sqlerr.InvalidParameter, sqlerr.NoPos,
			"interval join lower bound %d must not be greater than its upper bound %d", cfg.Lower, cfg.Upper)
	}
	if cfg.Lower == math.MinInt64 {
		return nil, nil, sqlerr.New(sqlerr.InvalidParameter, sqlerr.NoPos, "interval join lower bound out of range")
	}
	p := &ijPlan{tjSpec: spec, time: [2]int{cfg.LeftTime, cfg.RightTime}}
	p.lo = [2]int64{cfg.Lower, -cfg.Upper}
	p.hi = [2]int64{cfg.Upper, -cfg.Lower}
	p.reach = [2]int64{cfg.Upper, -cfg.Lower}
	p.hold = max(cfg.Upper, -cfg.Lower, 0)
	return func(int) exec.Operator { return &intervalJoin{p: p} }, spec.out, nil
}

// intervalJoin is one subtask of an interval join.
type intervalJoin struct {
	tjBase
	p *ijPlan
	// The groups of the keys with kept rows (never a NULL key).
	ints map[int64]*tjGroup
	strs map[string]*tjGroup
	// heap holds every kept row, ordered by bound: OnWatermark pops what the watermark passed.
	heap []ijHeapEntry

	// kept builds the kept side's columns of candidate pairs, per side; cc is arrow compute's context (take,
	// filter) on TaskContext.Alloc.
	kept [2]*array.RecordBuilder
	cc   context.Context

	// Per batch.
	tsScratch []int64
	arrived   []int32 // rows of the batch taken in, in order
	keep      []bool  // per arrived row: kept past the batch
	candA     []int32 // candidate pairs: the arriving row ...
	candRow   []int32 // ... its row in the batch ...
	candS     []int32 // ... and the kept row of the other side
	fired     []int32
}

var (
	_ exec.Operator        = (*intervalJoin)(nil)
	_ exec.WatermarkHolder = (*intervalJoin)(nil)
)

// OutputWatermark holds the forwarded watermark back by max(Upper, -Lower, 0): see the contract above.
func (j *intervalJoin) OutputWatermark(wm int64) int64 { return winAddSat(wm, -j.p.hold) }

func (j *intervalJoin) Open(ctx *exec.TaskContext) error {
	j.tjBase = tjBase{spec: j.p.tjSpec, meta: ijMetaKey, rowKey: j.stateKey, timed: true}
	j.cc = joinComputeCtx(ctx.Alloc)
	j.ints = map[int64]*tjGroup{}
	j.strs = map[string]*tjGroup{}
	if err := j.open(ctx, j.restoreRow); err != nil {
		return err
	}
	j.heapify()
	return nil
}

// restoreRow rebuilds one kept row from its backend entry.
func (j *intervalJoin) restoreRow(kg, side int, uk, v []byte) error {
	if len(uk) != 8 || len(v) < 8 {
		return rowcodec.ErrState
	}
	ts := int64(binary.BigEndian.Uint64(v))
	flags, key, row, err := tjParseValue(v[8:])
	if err != nil {
		return err
	}
	t := &j.rows
	id := t.restore(row, side, kg, ts, winAddSat(ts, j.p.reach[side]), binary.BigEndian.Uint64(uk), flags)
	ki, ks, err := tjParseKey(j.p.keyEnc.Mode, key)
	if err != nil {
		return err
	}
	var g *tjGroup
	if flags&tjNullKey != 0 {
		g = &tjGroup{i: ki, s: ks, null: true}
	} else {
		g = j.group(ki, ks)
		g.appendRow(side, id, ts)
	}
	t.grp[id] = g
	j.heap = append(j.heap, ijHeapEntry{bound: t.t2[id], id: id})
	return nil
}

// group returns the group of a (non-NULL) key, creating it.
func (j *intervalJoin) group(i int64, s string) *tjGroup {
	return tjFindGroup(j.p.keyEnc.Mode, j.ints, j.strs, i, s, false)
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
	ts := tjMicros(tsCol, &j.tsScratch)
	tsNulls := tsCol.NullN() > 0
	nullKey, err := j.loadBatch(s, rec)
	if err != nil {
		return err
	}
	t := &j.rows
	mode := p.keyEnc.Mode
	lo, hi, reach := p.lo[s], p.hi[s], p.reach[s]
	j.arrived, j.keep = j.arrived[:0], j.keep[:0]
	j.candA, j.candS, j.candRow = j.candA[:0], j.candS[:0], j.candRow[:0]
	var late, bad int64
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
		id := j.addRow(s, i, kg, ti, winAddSat(ti, reach))
		j.arrived = append(j.arrived, id)
		// Kept past the batch while an on-time row can still match it, or until its outer row fires.
		j.keep = append(j.keep, t.t2[id] >= j.wm || p.outer[s])
		keep := j.keep[len(j.keep)-1]
		if null {
			// Never matched, so in no group's lists; the group only names the key for the outer row's order.
			t.flag[id] |= tjNullKey
			g := &tjGroup{null: true}
			if mode == rowcodec.KeyBytes {
				g.s = string(j.keys.BytesOf(i))
			}
			t.grp[id] = g
			continue
		}
		var g *tjGroup
		if mode == rowcodec.KeyInt {
			g = j.ints[j.keys.Ints[i]]
		} else {
			g = j.strs[string(j.keys.BytesOf(i))] // no allocation for the lookup
		}
		if g == nil {
			if !keep {
				continue
			}
			if mode == rowcodec.KeyInt {
				g = j.group(j.keys.Ints[i], "")
			} else {
				g = j.group(0, string(j.keys.BytesOf(i)))
			}
		}
		g.probe(o, winAddSat(ti, lo), winAddSat(ti, hi), func(partner int32) {
			j.candA = append(j.candA, id)
			j.candRow = append(j.candRow, int32(i))
			j.candS = append(j.candS, partner)
		})
		if keep {
			// The other side's list was read above: a batch never meets itself.
			t.grp[id] = g
			g.appendRow(s, id, ti)
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
		j.heapPush(id)
	}
	return nil
}

// emitPairs emits the candidate pairs of the batch rec (side s arriving) that satisfy the residual condition, in
// candidate order, and marks their rows matched. A chunk of pairs becomes one record: the arriving side's columns
// are taken from rec with arrow's take kernel, the kept side's are decoded from the row table; the residual
// condition is evaluated over that record, which is then filtered by it.
func (j *intervalJoin) emitPairs(s int, rec arrow.RecordBatch, out exec.Emitter) error {
	o := 1 - s
	for start := 0; start < len(j.candA); start += tjEmitRows {
		end := min(start+tjEmitRows, len(j.candA))
		taken, err := exec.TakeRows(j.cc, j.ctx.Alloc, exec.Batch{Rec: rec}, j.candRow[start:end])
		if err != nil {
			return err
		}
		if j.kept[o] == nil {
			j.kept[o] = array.NewRecordBuilder(j.ctx.Alloc, j.p.schemas[o])
		}
		kb := j.kept[o]
		for _, id := range j.candS[start:end] {
			if err := j.p.rowEnc[o].DecodeKey(kb.Fields(), j.rows.data[id]); err != nil {
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
	if f&tjMatched != 0 || !j.p.outer[t.side(id)] {
		return
	}
	t.flag[id] = f | tjMatched
	if f&(tjStored|tjDirty) == tjStored {
		t.flag[id] |= tjDirty
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
	for len(j.heap) > 0 && (j.heap[0].bound < wm || wm == exec.MaxWatermark) {
		j.fired = append(j.fired, j.heapPop())
	}
	if len(j.fired) == 0 {
		return nil
	}
	// The outer rows first, in (time, key bytes, arrival) order; fired is reused for them after the rest.
	n := len(j.fired)
	for _, id := range j.fired[:n] {
		if j.p.outer[t.side(id)] && t.flag[id]&tjMatched == 0 {
			j.fired = append(j.fired, id)
		}
	}
	outer := j.fired[n:]
	mode := j.p.keyEnc.Mode
	slices.SortFunc(outer, func(a, b int32) int {
		return cmp.Or(cmp.Compare(t.t1[a], t.t1[b]), tjCompareKeys(t.grp[a], t.grp[b], mode), cmp.Compare(t.seq[a], t.seq[b]))
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
		if k := slices.Index(list, id); k == 0 && len(list) > 16 {
			list, times = list[1:], times[1:]
		} else if k >= 0 {
			list, times = slices.Delete(list, k, k+1), slices.Delete(times, k, k+1)
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

func (j *intervalJoin) OnBarrier(checkpoint.Barrier) error {
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

// ijHeapEntry is a kept row in the heap, with its bound: comparisons do not touch the row table.
type ijHeapEntry struct {
	bound int64
	id    int32
}

func (j *intervalJoin) heapPush(id int32) {
	h := append(j.heap, ijHeapEntry{bound: j.rows.t2[id], id: id})
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
