package join

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/exec/expr"
	"github.com/clinksql/clinksql/exec/rowcodec"
	"github.com/clinksql/clinksql/sqlerr"
	"github.com/clinksql/clinksql/state"
)

// emitRows bounds the rows of one output batch, and the candidate pairs of one residual evaluation.
const emitRows = 4096

// Row flags of the time joins' row table.
const (
	flagLive      uint8 = 1 << iota
	flagRight           // the row is of input 1
	flagMatched         // interval join: the row met a partner (outer sides only)
	flagDirty           // added or changed since the last barrier (listed in dirty)
	flagStored          // in the backend
	flagNullKey         // a key column is NULL: the row never matches
	flagTombstone       // temporal join: a right row that ends its key (a Delete)
)

// timeSpec is the validated part of a JoinSpec that the interval and the window join share.
type timeSpec struct {
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

// planTimeJoin validates the shared join contract; what names the operator in messages.
func planTimeJoin(s JoinSpec, what string) (*timeSpec, error) {
	if s.Left == nil || s.Right == nil {
		return nil, internalf(what, "missing input schema")
	}
	if s.Type > JoinFull {
		return nil, internalf(what, "unknown join type %d", s.Type)
	}
	if len(s.LeftKeys) == 0 || len(s.LeftKeys) != len(s.RightKeys) {
		return nil, internalf(what, "%d left and %d right key columns", len(s.LeftKeys), len(s.RightKeys))
	}
	p := &timeSpec{spec: s, what: what, out: JoinOutputSchema(s.Left, s.Right),
		schemas: [2]*arrow.Schema{s.Left, s.Right}, keys: [2][]int{s.LeftKeys, s.RightKeys}}
	p.outer = [2]bool{s.Type == JoinLeft || s.Type == JoinFull, s.Type == JoinRight || s.Type == JoinFull}
	var keyTypes []arrow.DataType
	for i := range s.LeftKeys {
		l, r := s.LeftKeys[i], s.RightKeys[i]
		if l < 0 || l >= s.Left.NumFields() || r < 0 || r >= s.Right.NumFields() {
			return nil, internalf(what, "key pair (%d, %d) out of range", l, r)
		}
		lf, rf := s.Left.Field(l), s.Right.Field(r)
		if !arrow.TypeEqual(lf.Type, rf.Type) {
			return nil, internalf(what, "key columns %q and %q have types %s and %s (the planner casts them to one)",
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
		if p.rowEnc[side], p.cols[side], err = rowEncoding(sc, what); err != nil {
			return nil, err
		}
	}
	if s.Residual != nil {
		for _, c := range expr.Columns(s.Residual) {
			if c < 0 || c >= p.out.NumFields() {
				return nil, internalf(what, "residual condition reads column %d of %d", c, p.out.NumFields())
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

// checkTimeColumn checks that column i of sc is a timestamp.
func checkTimeColumn(sc *arrow.Schema, i int, what, role string) error {
	if i < 0 || i >= sc.NumFields() {
		return internalf(what, "%s column %d out of range (input has %d)", role, i, sc.NumFields())
	}
	if _, ok := sc.Field(i).Type.(*arrow.TimestampType); !ok {
		return errDatatype("%s column %q must be a timestamp, not %s", role, sc.Field(i).Name, sc.Field(i).Type)
	}
	return nil
}

// nullKeyRows marks the rows of rec with a NULL in any of the key columns, in scratch; nil when there is none.
func nullKeyRows(rec arrow.RecordBatch, keys []int, scratch *[]bool) []bool {
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

// rowGroup is the rows of one key (interval join) or one key in one window (window join), per side in arrival
// order.
type rowGroup struct {
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
func (g *rowGroup) appendRow(side int, id int32, t int64) {
	if n := len(g.times[side]); n > 0 && t < g.times[side][n-1] {
		g.unsorted[side] = true
	}
	g.rows[side] = append(g.rows[side], id)
	g.times[side] = append(g.times[side], t)
}

// keyBytes appends the group's canonical key bytes.
func (g *rowGroup) keyBytes(dst []byte, mode rowcodec.KeyMode) []byte {
	if mode == rowcodec.KeyInt {
		return rowcodec.AppendIntKey(dst, g.i, g.null)
	}
	return append(dst, g.s...)
}

// findGroup returns the group of key i (rowcodec.KeyInt, not NULL) in ints or of canonical key bytes s (rowcodec.KeyBytes;
// null: a key column is NULL) in strs, creating it.
func findGroup(mode rowcodec.KeyMode, ints map[int64]*rowGroup, strs map[string]*rowGroup, i int64, s string,
	null bool) *rowGroup {
	if mode == rowcodec.KeyInt {
		g := ints[i]
		if g == nil {
			g = &rowGroup{i: i}
			ints[i] = g
		}
		return g
	}
	g := strs[s]
	if g == nil {
		g = &rowGroup{s: s, null: null}
		strs[s] = g
	}
	return g
}

// compareKeys orders two groups by their canonical key bytes.
func compareGroupKeys(a, b *rowGroup, mode rowcodec.KeyMode) int {
	if mode == rowcodec.KeyInt {
		return rowcodec.CompareIntKeys(a.i, a.null, b.i, b.null)
	}
	return cmp.Compare(a.s, b.s)
}

// rowTable is the time joins' row table: one entry per kept row, column-wise, indexed by a dense row id; freed ids
// are reused. t1 and t2 are the interval join's time and bound, the window join's window start and end.
type rowTable struct {
	t1, t2 []int64
	seq    []uint64
	kg     []uint16
	flag   []uint8
	grp    []*rowGroup
	data   [][]byte
	free   []int32
	arena  []byte
	live   int
}

// arenaChunk is the size of the chunks row bytes are carved from: one allocation for many rows, freed by the
// garbage collector once every row in it is gone (rows mostly leave in arrival order).
const arenaChunk = 256 << 10

func (t *rowTable) alloc(data []byte) int32 {
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
		t.arena = make([]byte, 0, max(arenaChunk, len(data)))
	}
	start := len(t.arena)
	t.arena = append(t.arena, data...)
	t.data[id] = t.arena[start:len(t.arena):len(t.arena)]
	t.live++
	return id
}

func (t *rowTable) release(id int32) {
	t.flag[id] = 0
	t.grp[id] = nil
	t.data[id] = nil
	t.free = append(t.free, id)
	t.live--
}

// restore adds a row read back from the backend: stored, with the flags it was stored with.
func (t *rowTable) restore(row []byte, side, kg int, t1, t2 int64, seq uint64, flags uint8) int32 {
	id := t.alloc(row)
	t.t1[id], t.t2[id], t.seq[id], t.kg[id] = t1, t2, seq, uint16(kg)
	t.flag[id] = flagLive | flagStored | flags | sideFlag(side)
	return id
}

func sideFlag(side int) uint8 {
	if side == 1 {
		return flagRight
	}
	return 0
}

func (t *rowTable) side(id int32) int {
	if t.flag[id]&flagRight != 0 {
		return 1
	}
	return 0
}

// appendRowValue appends a row's backend value: ts or window fields are in the key or the prefix the caller writes; then
// flags(1) uvarint(len(key)) key row.
func appendRowValue(dst []byte, flags uint8, key, row []byte) []byte {
	dst = append(dst, flags&(flagMatched|flagNullKey|flagTombstone))
	dst = binary.AppendUvarint(dst, uint64(len(key)))
	dst = append(dst, key...)
	return append(dst, row...)
}

func parseRowValue(v []byte) (flags uint8, key, row []byte, err error) {
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

// parseTimedValue splits the backend value of a timed row (timeJoin.timed: the interval and the temporal join): its
// time, then parseRowValue's parts.
func parseTimedValue(v []byte) (ts int64, flags uint8, key, row []byte, err error) {
	if len(v) < 8 {
		return 0, 0, nil, nil, rowcodec.ErrState
	}
	flags, key, row, err = parseRowValue(v[8:])
	return int64(binary.BigEndian.Uint64(v)), flags, key, row, err
}

// parseGroupKey rebuilds a group key from its canonical bytes.
func parseGroupKey(mode rowcodec.KeyMode, key []byte) (i int64, s string, err error) {
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

// timeJoin is the part of a subtask that the interval and the window join share: the row table, the rows to write
// and delete at the next barrier, the watermark and arrival counter of the meta entry, the output, and a batch's
// loaded keys and rows.
type timeJoin struct {
	spec *timeSpec
	ctx  *exec.TaskContext
	ectx expr.Context
	wm   int64
	seq  uint64
	// meta is the meta entry's key; rowKey gives a row's backend key; timed says that a row's value starts with its
	// t1 (the interval join's time).
	meta   []byte
	rowKey func(id int32) []byte
	timed  bool

	rows    rowTable
	dirty   []int32
	deletes [][]byte
	out     pairOutput

	// Per batch.
	keys, data rowcodec.KeyRows
	nullKey    []bool
	kgs        exec.BatchKeyGroups // the loaded batch's key groups
}

// open starts the subtask: it checks its key groups, reads the meta entry and passes every stored row of its key
// groups to restore (the key after KeyedKey(kg, 1+side), and the value).
func (b *timeJoin) open(ctx *exec.TaskContext, restore func(kg, side int, uk, v []byte) error) error {
	what := b.spec.what
	if err := exec.CheckKeyGroups(ctx, what); err != nil {
		return err
	}
	b.ctx = ctx
	b.ectx = expr.Context{Alloc: ctx.Alloc, Mode: b.spec.spec.Mode, BadValues: ctx.Errors, Clock: ctx.Clock}
	b.out = pairOutput{spec: b.spec, ctx: ctx}
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
func (b *timeJoin) checkBatch(input int, bt exec.Batch) (int, error) {
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

// loadBatch loads the keys and row bytes of a batch of input s, and returns its NULL-key marks (nullKeyRows). Its
// key groups come from the hash exchange that partitioned it, or from hashing its keys (admit); endBatch ends it.
func (b *timeJoin) loadBatch(s int, bt exec.Batch) ([]bool, error) {
	p := b.spec
	rec := bt.Rec
	if err := b.keys.Load(&p.keyEnc, rec, p.keys[s]); err != nil {
		return nil, err
	}
	nullKey := nullKeyRows(rec, p.keys[s], &b.nullKey)
	b.kgs.Start(bt)
	if err := b.data.Load(&p.rowEnc[s], rec, p.cols[s]); err != nil {
		return nil, err
	}
	return nullKey, nil
}

// CopiesInput: the time joins (window, interval) keep a batch's rows as copies of their row bytes in the row
// table and its keys as new strings. A hash exchange into them recycles its parts' buffers (exec.InputCopier).
func (b *timeJoin) CopiesInput() {}

// endBatch lets go of the batch loadBatch loaded.
func (b *timeJoin) endBatch() { b.kgs.End() }

// admit returns the key group of row i of the loaded batch (input s), which the subtask must own, and whether a key
// column is NULL (nullKey: loadBatch's marks); ok is false for a row that can never be part of the output (a NULL
// key on an inner side).
func (b *timeJoin) admit(s, i int, nullKey []bool) (kg int, null, ok bool, err error) {
	if kg, err = b.kgs.Of(b.ctx, b.spec.keys[s], i, b.spec.what); err != nil {
		return 0, false, false, err
	}
	null = nullKey != nil && nullKey[i]
	return kg, null, !null || b.spec.outer[s], nil
}

// addRow adds row i of the loaded batch (input s, key group kg) to the table, dirty, with times t1 and t2 and the
// next arrival number.
func (b *timeJoin) addRow(s, i, kg int, t1, t2 int64) int32 {
	t := &b.rows
	id := t.alloc(b.data.BytesOf(i))
	t.t1[id], t.t2[id], t.seq[id], t.kg[id] = t1, t2, b.seq, uint16(kg)
	b.seq++
	t.flag[id] = flagLive | flagDirty | sideFlag(s)
	return id
}

// forget releases a row; its backend entry, if any, is deleted at the next barrier.
func (b *timeJoin) forget(id int32) {
	t := &b.rows
	if t.flag[id]&flagStored != 0 {
		b.deletes = append(b.deletes, b.rowKey(id))
	}
	t.release(id)
}

// barrier deletes the rows forgotten since the last barrier, writes those added or changed since, and the meta
// entry.
func (b *timeJoin) barrier() {
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
		if f&(flagLive|flagDirty) != flagLive|flagDirty {
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
		st.Put(b.rowKey(id), appendRowValue(v, f, key, t.data[id]))
		t.flag[id] = f&^flagDirty | flagStored
	}
	b.dirty = b.dirty[:0]
	meta := binary.BigEndian.AppendUint64(make([]byte, 0, 16), uint64(b.wm))
	st.Put(slices.Clone(b.meta), binary.BigEndian.AppendUint64(meta, b.seq))
}

// pairOutput builds output rows (left columns, then right columns) from the row table's bytes, and emits them in
// batches of at most emitRows rows.
type pairOutput struct {
	spec *timeSpec
	ctx  *exec.TaskContext
	b    *array.RecordBuilder
	dec  [2]rowDecoder // each side's columns of b
	n    int
	last int // rows of the last batch: the next one's capacity, reserved at its first row
}

// builder returns the output builder, making it (and its decoders) on first use.
func (o *pairOutput) builder() *array.RecordBuilder {
	if o.b == nil {
		o.b = array.NewRecordBuilder(o.ctx.Alloc, o.spec.out)
		nl := o.spec.spec.Left.NumFields()
		o.dec[0] = newRowDecoder(&o.spec.rowEnc[0], o.b.Fields()[:nl])
		o.dec[1] = newRowDecoder(&o.spec.rowEnc[1], o.b.Fields()[nl:])
	}
	return o.b
}

// add appends the joined row of left row l and right row r; -1 for a side padded with NULLs.
func (o *pairOutput) add(t *rowTable, l, r int32) error {
	if o.n == 0 && o.last > 1 {
		// A window fires its pairs together, batch after batch of about the same size: grown by doubling
		// instead, the copies were a sixth of q5's allocations.
		o.builder().Reserve(o.last)
	}
	fs := o.builder().Fields()
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
		if err := o.dec[side].decode(t.data[id]); err != nil {
			return err
		}
	}
	o.n++
	return nil
}

// emit adds a row and flushes a full batch.
func (o *pairOutput) emit(t *rowTable, l, r int32, out exec.Emitter) error {
	if err := o.add(t, l, r); err != nil {
		return err
	}
	if o.n == emitRows {
		return o.flush(out)
	}
	return nil
}

// record returns the rows added so far as a record (possibly empty) and starts over.
func (o *pairOutput) record() arrow.RecordBatch {
	o.last, o.n = o.n, 0
	return o.builder().NewRecordBatch()
}

func (o *pairOutput) flush(out exec.Emitter) error {
	if o.n == 0 {
		return nil
	}
	return out.Emit(exec.Batch{Rec: o.record()})
}

func (o *pairOutput) close() {
	if o.b != nil {
		o.b.Release()
		o.b = nil
	}
}

// residualMask evaluates the residual condition over the candidate pairs (ls[k], rs[k]), emitRows at a time,
// into mask (true where it is TRUE; NULL is false). scratch builds the candidate records; it must not hold
// rows.
func residualMask(spec *timeSpec, ectx *expr.Context, scratch *pairOutput, t *rowTable, ls, rs []int32, mask []bool) ([]bool, error) {
	mask = mask[:0]
	for start := 0; start < len(ls); start += emitRows {
		end := min(start+emitRows, len(ls))
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
