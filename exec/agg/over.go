package agg

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/exec/expr"
	"github.com/clinksql/clinksql/exec/rowcodec"
	"github.com/clinksql/clinksql/sqlerr"
	"github.com/clinksql/clinksql/state"
)

// The over aggregate: agg(...) OVER (PARTITION BY p ORDER BY ts ROWS|RANGE BETWEEN ... PRECEDING AND CURRENT ROW)
// and LAG(x, k, default) OVER (PARTITION BY p ORDER BY ts), Flink's over aggregation.
//
// Contract:
//
//   - Input: append-only (a retraction fails the operator), ordered by nothing; TimeCol is its time attribute,
//     ascending. A row waits until the watermark reaches its time (wm >= ts), then is processed in time order
//     within its partition (rows of equal time in arrival order) and emitted once, with one value per function
//     appended: append-only output, every input row at most once. A row whose time is at or below the watermark
//     already processed is late: dropped and counted in TaskContext.Late (its frame, and the frames of rows
//     after it, were computed without it). A NULL time is a bad value: dropped, counted in TaskContext.Errors.
//   - Frames (every aggregate of one operator shares one): ROWS n PRECEDING is the row and the n rows before it
//     in the partition's order; RANGE d PRECEDING is the rows whose time is within d before the row's, the row's
//     peers (equal time) included, later ones too; Preceding -1 is UNBOUNDED PRECEDING (every row so far, and
//     under RANGE the row's peers). An aggregate of a frame is Postgres': COUNT of the non-NULL values (COUNT(*)
//     of rows), SUM/AVG/MIN/MAX of the non-NULL values, NULL when there is none; FILTER (WHERE ...) as in GROUP BY.
//   - LAG(x, k, default): x of the k-th row before the row in its partition's order (k >= 1; ROWS order whatever
//     the frame), or the default column's value at the row when there is none.
//   - Output: the input columns, then one column per function (the aggregate's result type; LAG's the argument's),
//     in batches per watermark: partitions in the order of their key bytes, a partition's rows in time order.
//   - Watermarks: forwarded after the rows they released, so a row is never late downstream; TimeCol stays a time
//     attribute.
//
// State (keyed, in memory, written back at each barrier; Open rebuilds it with a Scan of its key groups):
//
//	KeyedKey(kg, 1, partition key bytes)   the partition: uvarint pending count, per pending row (time, arrival
//	                                       number, row bytes); uvarint frame count, per frame row (time, row
//	                                       bytes); with an unbounded frame, each aggregate's accumulator
//	OperatorKey("over/wm")                 the watermark processed (8 bytes) and the next arrival number
//
// A partition keeps its pending rows, and of the rows processed those a later row's frame or LAG can still
// reach: the last n (ROWS n, and the largest LAG offset), those within d of the watermark (RANGE d: a later row's
// time is above the watermark). An unbounded frame keeps its accumulators instead (exact bits, as the group
// aggregate's). A RANGE frame's partition whose rows all fell out of reach is deleted at the next barrier; a ROWS
// frame's last rows are kept for as long as the partition may get another row (as in Flink, without TTL).
//
// At each watermark every partition with due rows is processed: its frame rows and due rows are decoded into one
// record, the accumulators rebuilt from the frame rows (bounded frames), each due row added, the rows that left the
// frame retracted (the group form's retractable accumulators: MIN/MAX keep the values' multiset), and the result
// appended.
type OverConfig struct {
	Partition []int
	TimeCol   int
	Range     bool  // RANGE; else ROWS
	Preceding int64 // ROWS: rows; RANGE: microseconds; -1: UNBOUNDED PRECEDING
	Funcs     []OverFunc
	// Mode is what a float SUM or AVG that overflows does (as in GroupAggConfig).
	Mode expr.ErrorMode
}

// OverFunc is one function of an over aggregate: an aggregate (Func, Arg, Filter as in AggSpec), or, with Lag,
// LAG(Arg, Offset, Default column or -1 for NULL).
type OverFunc struct {
	Func    AggFunc
	Arg     int
	Filter  int
	Lag     bool
	Offset  int64
	Default int
	Name    string
}

const overStateID = 1

var overWMKey = state.OperatorKey("over/wm")

type overPlan struct {
	cfg     OverConfig
	in, out *arrow.Schema
	partEnc rowcodec.Encoding
	rowEnc  rowcodec.Encoding
	allCols []int
	aggs    []aggKind // per function (zero for LAG)
	resEnc  rowcodec.Encoding
	keep    int64 // rows kept of a partition's processed rows besides RANGE's: ROWS n and the largest LAG offset
}

// NewOverAggregate validates cfg against the input schema and returns the operator factory and the output schema.
// Errors are sqlerr errors (42883 for an aggregate its argument type has no form of, 0A000 for a column the
// operator cannot keep), XX000 for a malformed config.
func NewOverAggregate(cfg OverConfig, in *arrow.Schema) (func(subtask int) exec.Operator, *arrow.Schema, error) {
	p := &overPlan{cfg: cfg, in: in}
	bad := func(format string, args ...any) error {
		return sqlerr.New(sqlerr.InternalError, sqlerr.NoPos, "over aggregate: "+format, args...)
	}
	if cfg.TimeCol < 0 || cfg.TimeCol >= in.NumFields() || in.Field(cfg.TimeCol).Type.ID() != arrow.TIMESTAMP {
		return nil, nil, bad("time column %d is not a timestamp", cfg.TimeCol)
	}
	if len(cfg.Funcs) == 0 || cfg.Preceding < -1 {
		return nil, nil, bad("no function, or a negative frame")
	}
	var partTypes []arrow.DataType
	for _, c := range cfg.Partition {
		if c < 0 || c >= in.NumFields() {
			return nil, nil, bad("partition column %d out of range", c)
		}
		if !rowcodec.GroupKeyType(in.Field(c).Type) {
			return nil, nil, sqlerr.New(sqlerr.FeatureNotSupported, sqlerr.NoPos, "cannot partition by %q of type %s", in.Field(c).Name, in.Field(c).Type)
		}
		partTypes = append(partTypes, in.Field(c).Type)
	}
	p.partEnc = rowcodec.Encoding{Types: partTypes, Mode: rowcodec.KeyBytes}
	var err error
	if p.rowEnc, p.allCols, err = rowcodec.RowEncoding(in, func(f arrow.Field) error {
		return sqlerr.New(sqlerr.FeatureNotSupported, sqlerr.NoPos, "an OVER window cannot keep column %q of type %s in its state", f.Name, f.Type)
	}); err != nil {
		return nil, nil, err
	}
	fields := slices.Clone(in.Fields())
	var resTypes []arrow.DataType
	if !cfg.Range && cfg.Preceding > 0 {
		p.keep = cfg.Preceding
	}
	for i, f := range cfg.Funcs {
		name := f.Name
		if name == "" {
			name = fmt.Sprintf("over%d", i)
		}
		if f.Lag {
			if f.Arg < 0 || f.Arg >= in.NumFields() || f.Offset < 1 || f.Default >= in.NumFields() {
				return nil, nil, bad("LAG(%d, %d, %d)", f.Arg, f.Offset, f.Default)
			}
			t := in.Field(f.Arg).Type
			if f.Default >= 0 && !arrow.TypeEqual(in.Field(f.Default).Type, t) {
				return nil, nil, bad("LAG default of type %s for a %s argument", in.Field(f.Default).Type, t)
			}
			p.keep = max(p.keep, f.Offset)
			p.aggs = append(p.aggs, aggKind{})
			fields = append(fields, arrow.Field{Name: name, Type: t, Nullable: true})
			resTypes = append(resTypes, t)
			continue
		}
		var argType arrow.DataType = arrow.Null
		if f.Arg >= 0 {
			if f.Arg >= in.NumFields() {
				return nil, nil, bad("argument column %d out of range", f.Arg)
			}
			argType = in.Field(f.Arg).Type
		}
		if f.Filter >= in.NumFields() || (f.Filter >= 0 && in.Field(f.Filter).Type.ID() != arrow.BOOL) {
			return nil, nil, bad("filter column %d", f.Filter)
		}
		k, err := newAggKind(f.Func, argType)
		if err != nil {
			return nil, nil, err
		}
		p.aggs = append(p.aggs, k)
		fields = append(fields, arrow.Field{Name: name, Type: k.out, Nullable: k.nullable})
		resTypes = append(resTypes, k.out)
	}
	p.resEnc = rowcodec.Encoding{Types: resTypes, Mode: rowcodec.KeyBytes}
	p.out = arrow.NewSchema(fields, nil)
	return func(int) exec.Operator { return newOverAgg(p) }, p.out, nil
}

// overRow is a kept row: its time, arrival number (pending rows) and canonical row bytes.
type overRow struct {
	ts  int64
	seq uint64
	row string
}

type overPart struct {
	key     string
	kg      uint16
	g       int32 // the accumulators' group (unbounded frames)
	pending []overRow
	frame   []overRow
	minTS   int64 // the earliest pending time
	dirty   bool
	stored  bool
}

type overAgg struct {
	p     *overPlan
	ctx   *exec.TaskContext
	ov    aggOverflow
	accs  []groupAccumulator // per function, nil for LAG
	parts map[string]*overPart
	dirty []*overPart
	dels  [][]byte
	wm    int64
	seq   uint64
	ng    int32
	free  []int32

	kgs   exec.BatchKeyGroups
	pkeys rowcodec.KeyRows
	rows  rowcodec.KeyRows
	tsBuf []int64

	// per firing
	due              []*overPart
	rb               *array.RecordBuilder
	inB, resB        []array.Builder
	lagAp            [][2]rowcodec.ValueAppender // per function: LAG's argument and default appenders over rec
	lagScr           [][2][]int64                // their scratch (integers narrower than 64 bits)
	resBuf           []byte
	one, grp, negOne []int32
	neg              []bool
}

func newOverAgg(p *overPlan) *overAgg {
	o := &overAgg{p: p, ov: aggOverflow{mode: p.cfg.Mode}}
	for _, k := range p.aggs {
		if k.out == nil {
			o.accs = append(o.accs, nil)
			continue
		}
		o.accs = append(o.accs, newGroupAccumulator(k, true, &o.ov))
	}
	return o
}

func (o *overAgg) Open(ctx *exec.TaskContext) error {
	if err := exec.CheckKeyGroups(ctx, "over aggregate"); err != nil {
		return err
	}
	o.ctx, o.ov.errors = ctx, ctx.Errors
	o.parts = map[string]*overPart{}
	o.wm = exec.MinWatermark
	if v, ok, err := ctx.State.Get(overWMKey); err != nil {
		return err
	} else if ok {
		if len(v) < 8 {
			return fmt.Errorf("over aggregate: malformed watermark in state")
		}
		o.wm = int64(binary.BigEndian.Uint64(v))
		seq, n := binary.Uvarint(v[8:])
		if n <= 0 {
			return fmt.Errorf("over aggregate: malformed arrival number in state")
		}
		o.seq = seq
	}
	for kg := ctx.KeyGroups.Start; kg < ctx.KeyGroups.End; kg++ {
		prefix := state.KeyedKey(kg, overStateID, nil)
		if err := ctx.State.Scan(prefix, func(k, v []byte) error { return o.restorePart(kg, string(k[len(prefix):]), v) }); err != nil {
			return fmt.Errorf("over aggregate: restore key group %d: %w", kg, err)
		}
	}
	return nil
}

func (o *overAgg) newPart(key string, kg int) *overPart {
	p := &overPart{key: key, kg: uint16(kg), g: -1, minTS: exec.MaxWatermark}
	if o.unbounded() {
		if n := len(o.free); n > 0 {
			p.g, o.free = o.free[n-1], o.free[:n-1]
		} else {
			p.g = o.ng
			o.ng++
			for _, a := range o.accs {
				if a != nil {
					a.grow()
				}
			}
		}
	}
	o.parts[key] = p
	return p
}

func (o *overAgg) unbounded() bool { return o.p.cfg.Preceding < 0 }

func (o *overAgg) restorePart(kg int, key string, v []byte) error {
	p := o.newPart(key, kg)
	p.stored = true
	readRows := func(withSeq bool) ([]overRow, error) {
		n, k := binary.Uvarint(v)
		if k <= 0 {
			return nil, rowcodec.ErrState
		}
		v = v[k:]
		rows := make([]overRow, 0, n)
		for range n {
			if len(v) < 8 {
				return nil, rowcodec.ErrState
			}
			r := overRow{ts: rowcodec.OrderedInt(v)}
			v = v[8:]
			if withSeq {
				if r.seq, k = binary.Uvarint(v); k <= 0 {
					return nil, rowcodec.ErrState
				}
				v = v[k:]
			}
			l, k := binary.Uvarint(v)
			if k <= 0 || uint64(len(v)-k) < l {
				return nil, rowcodec.ErrState
			}
			r.row = string(v[k : k+int(l)])
			v = v[k+int(l):]
			rows = append(rows, r)
		}
		return rows, nil
	}
	var err error
	if p.pending, err = readRows(true); err != nil {
		return err
	}
	for _, r := range p.pending {
		p.minTS = min(p.minTS, r.ts)
	}
	if p.frame, err = readRows(false); err != nil {
		return err
	}
	if o.unbounded() {
		for _, a := range o.accs {
			if a == nil {
				continue
			}
			if v, err = a.decode(v, p.g); err != nil {
				return err
			}
		}
	}
	if len(v) != 0 {
		return rowcodec.ErrState
	}
	return nil
}

func (o *overAgg) Process(_ int, b exec.Batch, _ exec.Emitter) error {
	defer b.Release()
	n := b.Rows()
	if n == 0 {
		return nil
	}
	for _, k := range b.Kinds {
		if k != exec.Insert {
			return fmt.Errorf("over aggregate: row of kind %s on an append-only input", k)
		}
	}
	rec := b.Rec
	tsCol, ok := rec.Column(o.p.cfg.TimeCol).(*array.Timestamp)
	if !ok {
		return fmt.Errorf("over aggregate: time column is %s", rec.Column(o.p.cfg.TimeCol).DataType())
	}
	ts := rowcodec.Micros(tsCol, &o.tsBuf)
	if err := o.pkeys.Load(&o.p.partEnc, rec, o.p.cfg.Partition); err != nil {
		return err
	}
	if err := o.rows.Load(&o.p.rowEnc, rec, o.p.allCols); err != nil {
		return err
	}
	o.kgs.Start(b)
	defer o.kgs.End()
	for i := range n {
		if tsCol.IsNull(i) {
			o.ctx.Errors.Add(1)
			continue
		}
		if ts[i] <= o.wm {
			o.ctx.Late.Add(1)
			continue
		}
		p := o.parts[string(o.pkeys.BytesOf(i))]
		if p == nil {
			kg, err := o.kgs.Of(o.ctx, o.p.cfg.Partition, i, "over aggregate")
			if err != nil {
				return err
			}
			p = o.newPart(string(o.pkeys.BytesOf(i)), kg)
		}
		p.pending = append(p.pending, overRow{ts: ts[i], seq: o.seq, row: string(o.rows.BytesOf(i))})
		o.seq++
		p.minTS = min(p.minTS, ts[i])
		o.markDirty(p)
	}
	return nil
}

func (o *overAgg) markDirty(p *overPart) {
	if !p.dirty {
		p.dirty = true
		o.dirty = append(o.dirty, p)
	}
}

// OnWatermark processes every pending row with time <= wm.
func (o *overAgg) OnWatermark(wm int64, out exec.Emitter) error {
	if wm <= o.wm {
		return nil
	}
	o.wm = wm
	o.due = o.due[:0]
	for _, p := range o.parts {
		if p.minTS <= wm {
			o.due = append(o.due, p)
		}
	}
	if len(o.due) == 0 {
		return nil
	}
	slices.SortFunc(o.due, func(a, b *overPart) int { return strings.Compare(a.key, b.key) })
	for _, p := range o.due {
		if err := o.fire(p, wm); err != nil {
			return err
		}
		o.markDirty(p)
	}
	return o.flush(out)
}

// fire processes p's pending rows with time <= wm into the output builders.
func (o *overAgg) fire(p *overPart, wm int64) error {
	var due, rest []overRow
	for _, r := range p.pending {
		if r.ts <= wm {
			due = append(due, r)
		} else {
			rest = append(rest, r)
		}
	}
	slices.SortFunc(due, func(a, b overRow) int {
		return cmp.Or(cmp.Compare(a.ts, b.ts), cmp.Compare(a.seq, b.seq))
	})
	p.pending = rest
	p.minTS = exec.MaxWatermark
	for _, r := range rest {
		p.minTS = min(p.minTS, r.ts)
	}
	// One record: the frame rows, then the due rows.
	all := append(slices.Clone(p.frame), due...)
	rb := array.NewRecordBuilder(o.ctx.Alloc, o.p.in)
	defer rb.Release()
	bs := rb.Fields()
	for _, r := range all {
		if err := o.p.rowEnc.DecodeKey(bs, rowcodec.StringBytes(r.row)); err != nil {
			return fmt.Errorf("over aggregate: decode a kept row: %w", err)
		}
	}
	rec := rb.NewRecordBatch()
	defer rec.Release()
	// LAG reads its argument (or default) column at other rows of rec.
	o.lagAp = o.lagAp[:0]
	if len(o.lagScr) < len(o.p.cfg.Funcs) {
		o.lagScr = make([][2][]int64, len(o.p.cfg.Funcs))
	}
	for f, fn := range o.p.cfg.Funcs {
		var arg, def rowcodec.ValueAppender
		if fn.Lag {
			var err error
			if arg, err = rowcodec.NewValueAppender(rec.Column(fn.Arg), &o.lagScr[f][0], true); err != nil {
				return err
			}
			if fn.Default >= 0 {
				if def, err = rowcodec.NewValueAppender(rec.Column(fn.Default), &o.lagScr[f][1], true); err != nil {
					return err
				}
			}
		}
		o.lagAp = append(o.lagAp, [2]rowcodec.ValueAppender{arg, def})
	}
	g := p.g
	if !o.unbounded() {
		g = 0
		if o.ng == 0 {
			o.ng = 1
			for _, a := range o.accs {
				if a != nil {
					a.grow()
				}
			}
		}
		for _, a := range o.accs {
			if a != nil {
				a.reset(0)
			}
		}
	}
	nf := len(p.frame)
	// The frame: rows [lo, hi) of rec are in the accumulators.
	lo := 0
	if !o.unbounded() {
		if err := o.update(rec, 0, nf, g, false); err != nil {
			return err
		}
	}
	for i := nf; i < len(all); {
		// Under RANGE the row's peers (equal time) enter together and share the result.
		j := i + 1
		if o.p.cfg.Range {
			for j < len(all) && all[j].ts == all[i].ts {
				j++
			}
		}
		if err := o.update(rec, i, j, g, false); err != nil {
			return err
		}
		if !o.unbounded() {
			var out int
			if o.p.cfg.Range {
				for out = lo; out < i && all[out].ts < all[i].ts-o.p.cfg.Preceding; out++ {
				}
			} else {
				out = max(lo, j-1-int(o.p.cfg.Preceding))
			}
			if out > lo {
				if err := o.update(rec, lo, out, g, true); err != nil {
					return err
				}
				lo = out
			}
		}
		for r := i; r < j; r++ {
			if err := o.appendOut(rec, all[r].row, r, g); err != nil {
				return err
			}
		}
		i = j
	}
	// What later rows can still reach.
	from := len(all)
	if o.p.cfg.Range && o.p.cfg.Preceding >= 0 {
		for from = len(all); from > 0 && all[from-1].ts >= wm-o.p.cfg.Preceding; from-- {
		}
	}
	from = min(from, max(0, len(all)-int(o.p.keep)))
	p.frame = append(p.frame[:0], all[from:]...)
	return nil
}

// update adds (neg: retracts) rows [lo, hi) of rec to group g of every aggregate, skipping filtered rows.
func (o *overAgg) update(rec arrow.RecordBatch, lo, hi int, g int32, neg bool) error {
	if lo >= hi {
		return nil
	}
	for f, a := range o.accs {
		if a == nil {
			continue
		}
		fn := o.p.cfg.Funcs[f]
		o.one, o.grp, o.neg = o.one[:0], o.grp[:0], o.neg[:0]
		var filter *array.Boolean
		if fn.Filter >= 0 {
			filter = rec.Column(fn.Filter).(*array.Boolean)
		}
		for r := lo; r < hi; r++ {
			if filter != nil && (filter.IsNull(r) || !filter.Value(r)) {
				continue
			}
			o.one, o.grp, o.neg = append(o.one, int32(r)), append(o.grp, g), append(o.neg, neg)
		}
		if len(o.one) == 0 {
			continue
		}
		var col arrow.Array
		if fn.Arg >= 0 {
			col = rec.Column(fn.Arg)
		}
		var negs []bool
		if neg {
			negs = o.neg
		}
		if err := a.update(col, o.one, o.grp, negs); err != nil {
			return err
		}
	}
	return nil
}

// appendOut appends row r of rec (whose row bytes are row) with its functions' values to the output.
func (o *overAgg) appendOut(rec arrow.RecordBatch, row string, r int, g int32) error {
	if o.rb == nil {
		o.rb = array.NewRecordBuilder(o.ctx.Alloc, o.p.out)
		fs := o.rb.Fields()
		o.inB, o.resB = fs[:o.p.in.NumFields()], fs[o.p.in.NumFields():]
	}
	if err := o.p.rowEnc.DecodeKey(o.inB, rowcodec.StringBytes(row)); err != nil {
		return fmt.Errorf("over aggregate: decode a row: %w", err)
	}
	o.resBuf = o.resBuf[:0]
	for f, a := range o.accs {
		fn := o.p.cfg.Funcs[f]
		if fn.Lag {
			src, col, ap := r-int(fn.Offset), fn.Arg, o.lagAp[f][0]
			if src < 0 {
				src, col, ap = r, fn.Default, o.lagAp[f][1]
			}
			if col < 0 || rec.Column(col).IsNull(src) {
				o.resBuf = append(o.resBuf, 0)
				continue
			}
			o.resBuf = ap(append(o.resBuf, 1), src)
			continue
		}
		var err error
		if o.resBuf, err = a.result(o.resBuf, g); err != nil {
			return err
		}
	}
	return o.p.resEnc.DecodeKey(o.resB, o.resBuf)
}

func (o *overAgg) flush(out exec.Emitter) error {
	if o.rb == nil || o.rb.Field(0).Len() == 0 {
		return nil
	}
	return out.Emit(exec.Batch{Rec: o.rb.NewRecordBatch()})
}

func (o *overAgg) OnBarrier(uint64) error {
	st := o.ctx.State
	// A RANGE frame's rows out of every later row's reach go; a partition left with nothing goes.
	if o.p.cfg.Range && o.p.cfg.Preceding >= 0 && o.p.keep == 0 {
		for _, p := range o.parts {
			k := 0
			for k < len(p.frame) && p.frame[k].ts < o.wm-o.p.cfg.Preceding {
				k++
			}
			if k > 0 {
				p.frame = p.frame[k:]
				o.markDirty(p)
			}
		}
	}
	var buf []byte
	for _, p := range o.dirty {
		p.dirty = false
		key := state.KeyedKey(int(p.kg), overStateID, rowcodec.StringBytes(p.key))
		if len(p.pending) == 0 && len(p.frame) == 0 && !o.unbounded() {
			if p.stored {
				st.Delete(key)
			}
			delete(o.parts, p.key)
			continue
		}
		buf = binary.AppendUvarint(buf[:0], uint64(len(p.pending)))
		for _, r := range p.pending {
			buf = rowcodec.AppendOrderedInt(buf, r.ts)
			buf = binary.AppendUvarint(buf, r.seq)
			buf = rowcodec.AppendLenPrefixed(buf, r.row)
		}
		buf = binary.AppendUvarint(buf, uint64(len(p.frame)))
		for _, r := range p.frame {
			buf = rowcodec.AppendOrderedInt(buf, r.ts)
			buf = rowcodec.AppendLenPrefixed(buf, r.row)
		}
		if o.unbounded() {
			for _, a := range o.accs {
				if a != nil {
					buf = a.encode(buf, p.g)
				}
			}
		}
		st.Put(key, slices.Clone(buf))
		p.stored = true
	}
	o.dirty = o.dirty[:0]
	v := binary.BigEndian.AppendUint64(nil, uint64(o.wm))
	st.Put(slices.Clone(overWMKey), binary.AppendUvarint(v, o.seq))
	return nil
}

func (o *overAgg) Close() error {
	if o.rb != nil {
		o.rb.Release()
		o.rb = nil
	}
	return nil
}
