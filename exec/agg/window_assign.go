package agg

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/exec/expr"
)

// NewWindowAssign returns the operator of a window table function that is not aggregated (SELECT ... FROM
// TABLE(TUMBLE(...)) without GROUP BY): every input row comes out once per window it falls in (one for TUMBLE,
// size/slide for HOP, one per cumulative window for CUMULATE), with window_start and window_end appended as
// timestamp[us]. It keeps no state and drops rows with a NULL event time (counted in TaskContext.Errors). SESSION
// windows exist only once they close, so they need the aggregate.
func NewWindowAssign(cfg WindowAggConfig, in *arrow.Schema) (func(subtask int) exec.Operator, *arrow.Schema, error) {
	if cfg.TimeCol < 0 || cfg.TimeCol >= in.NumFields() {
		return nil, nil, fmt.Errorf("window assign: time column %d of %d", cfg.TimeCol, in.NumFields())
	}
	tt, ok := in.Field(cfg.TimeCol).Type.(*arrow.TimestampType)
	if !ok {
		return nil, nil, fmt.Errorf("window assign: the time column is %s, not a TIMESTAMP", in.Field(cfg.TimeCol).Type)
	}
	switch {
	case cfg.Kind == WindowTumble && cfg.Size > 0:
	case cfg.Kind == WindowHop && cfg.Size > 0 && cfg.Slide > 0:
	case cfg.Kind == WindowCumulate && cfg.Size > 0 && cfg.Step > 0 && cfg.Size%cfg.Step == 0:
	default:
		return nil, nil, fmt.Errorf("window assign: %s with size %d, slide %d, step %d is not supported without GROUP BY", cfg.Kind, cfg.Size, cfg.Slide, cfg.Step)
	}
	ts := &arrow.TimestampType{Unit: arrow.Microsecond}
	if tt.TimeZone != "" {
		ts = expr.TypeTimestampTZ
	}
	fields := append(append([]arrow.Field{}, in.Fields()...),
		arrow.Field{Name: "window_start", Type: ts, Nullable: true}, arrow.Field{Name: "window_end", Type: ts, Nullable: true})
	out := arrow.NewSchema(fields, nil)
	toMicros := expr.TimeUnitToMicros(tt.Unit)
	return func(int) exec.Operator { return &windowAssign{cfg: cfg, out: out, toMicros: toMicros} }, out, nil
}

type windowAssign struct {
	exec.NoTimers
	exec.Stateless
	cfg      WindowAggConfig
	out      *arrow.Schema
	toMicros func(int64) int64
	ctx      *exec.TaskContext
	rows     []int32
	starts   []int64
	ends     []int64
}

var _ exec.Operator = (*windowAssign)(nil)

func (w *windowAssign) Open(ctx *exec.TaskContext) error { w.ctx = ctx; return nil }

// windows appends the windows of event time t.
func (w *windowAssign) windows(t int64, row int32) {
	c := &w.cfg
	add := func(s, e int64) {
		w.rows = append(w.rows, row)
		w.starts = append(w.starts, s)
		w.ends = append(w.ends, e)
	}
	if c.zoned() {
		t = expr.ToLocal(c.Zone, t)
		local := add
		add = func(s, e int64) { local(c.instant(s), c.instant(e)) }
	}
	switch c.Kind {
	case WindowTumble:
		s := floorStart(t, c.Size, c.Offset)
		add(s, exec.AddSat(s, c.Size))
	case WindowHop:
		last := floorStart(t, c.Slide, c.Offset)
		var starts []int64
		for s := last; s > t-c.Size; s -= c.Slide {
			starts = append(starts, s)
		}
		for i := len(starts) - 1; i >= 0; i-- { // earliest window first
			add(starts[i], exec.AddSat(starts[i], c.Size))
		}
	default: // cumulate
		s := floorStart(t, c.Size, c.Offset)
		last := exec.AddSat(s, c.Size)
		for e := exec.AddSat(floorStart(t, c.Step, c.Offset), c.Step); e <= last; e += c.Step {
			add(s, e)
			if e == last {
				break
			}
		}
	}
}

func (w *windowAssign) Process(_ int, b exec.Batch, out exec.Emitter) error {
	defer b.Release()
	n := b.Rows()
	if n == 0 {
		return nil
	}
	w.rows, w.starts, w.ends = w.rows[:0], w.starts[:0], w.ends[:0]
	tcol := b.Rec.Column(w.cfg.TimeCol).(*array.Timestamp)
	vals := tcol.TimestampValues()
	nulls := tcol.NullN() > 0
	for i := range n {
		if nulls && tcol.IsNull(i) {
			w.ctx.Errors.Add(1)
			continue
		}
		w.windows(w.toMicros(int64(vals[i])), int32(i))
	}
	if len(w.rows) == 0 {
		return nil
	}
	alloc := w.ctx.Alloc
	taken, err := exec.TakeRows(context.Background(), alloc, b, w.rows)
	if err != nil {
		return err
	}
	defer taken.Release()
	ncols := int(taken.Rec.NumCols())
	cols := append(make([]arrow.Array, 0, ncols+2), taken.Rec.Columns()...)
	var added []arrow.Array
	defer func() {
		for _, c := range added {
			c.Release()
		}
	}()
	for _, v := range [][]int64{w.starts, w.ends} {
		tb := array.NewTimestampBuilder(alloc, w.out.Field(ncols).Type.(*arrow.TimestampType))
		tb.Reserve(len(v))
		for _, x := range v {
			tb.UnsafeAppend(arrow.Timestamp(x))
		}
		added = append(added, tb.NewArray())
		tb.Release()
	}
	cols = append(cols, added...)
	rec := array.NewRecordBatch(w.out, cols, int64(len(w.rows)))
	return out.Emit(exec.Batch{Rec: rec, Kinds: taken.Kinds})
}
