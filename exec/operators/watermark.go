package operators

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/clinksql/clinksql/exec"
)

// WatermarkFunc returns the watermark the rows of one batch imply (a stream's WATERMARK FOR expression,
// maximised over the batch); ok is false when no row has an event time.
type WatermarkFunc func(ctx *exec.TaskContext, rec arrow.RecordBatch) (wm int64, ok bool, err error)

// WithWatermark wraps a source so that it emits the running maximum of fn over its batches as its watermark, and
// keeps that maximum in its offset: after a restore the watermark does not go back.
func WithWatermark(src exec.Source, fn WatermarkFunc) exec.Source {
	return &watermarked{src: src, fn: fn, wm: exec.MinWatermark}
}

type watermarked struct {
	src exec.Source
	fn  WatermarkFunc
	ctx *exec.TaskContext
	wm  int64
}

func (w *watermarked) RestoreOffset(offset []byte) error {
	if len(offset) < 8 {
		return fmt.Errorf("watermarked source: offset of %d bytes", len(offset))
	}
	w.wm = int64(binary.BigEndian.Uint64(offset))
	return w.src.RestoreOffset(offset[8:])
}

func (w *watermarked) SnapshotOffset() ([]byte, error) {
	inner, err := w.src.SnapshotOffset()
	if err != nil {
		return nil, err
	}
	return w.withWatermark(inner), nil
}

// SnapshotOffsetAt forwards barrier id to a wrapped exec.CheckpointOffsetter (SnapshotOffset for the others).
func (w *watermarked) SnapshotOffsetAt(id uint64) ([]byte, error) {
	co, ok := w.src.(exec.CheckpointOffsetter)
	if !ok {
		return w.SnapshotOffset()
	}
	inner, err := co.SnapshotOffsetAt(id)
	if err != nil {
		return nil, err
	}
	return w.withWatermark(inner), nil
}

// NotifyCheckpointComplete forwards to a wrapped exec.CheckpointListener.
func (w *watermarked) NotifyCheckpointComplete(id uint64) {
	if l, ok := w.src.(exec.CheckpointListener); ok {
		l.NotifyCheckpointComplete(id)
	}
}

// NotifyCheckpointAborted forwards to a wrapped exec.CheckpointListener.
func (w *watermarked) NotifyCheckpointAborted(id uint64) {
	if l, ok := w.src.(exec.CheckpointListener); ok {
		l.NotifyCheckpointAborted(id)
	}
}

// withWatermark is an offset of the wrapped source's, the running watermark before it.
func (w *watermarked) withWatermark(inner []byte) []byte {
	out := make([]byte, 8, 8+len(inner))
	binary.BigEndian.PutUint64(out, uint64(w.wm))
	return append(out, inner...)
}

func (w *watermarked) Open(ctx *exec.TaskContext) error {
	w.ctx = ctx
	return w.src.Open(ctx)
}

func (w *watermarked) Produce(ctx context.Context) (exec.SourceResult, error) {
	res, err := w.src.Produce(ctx)
	if err != nil {
		return res, err
	}
	if res.Status == exec.Produced && res.Batch.Rows() > 0 {
		wm, ok, err := w.fn(w.ctx, res.Batch.Rec)
		if err != nil {
			res.Batch.Release()
			return exec.SourceResult{}, err
		}
		if ok && wm > w.wm {
			w.wm = wm
		}
	}
	if res.Status != exec.Finished {
		res.WM = max(res.WM, w.wm)
	}
	return res, nil
}

func (w *watermarked) Close() error { return w.src.Close() }

// IdleWait forwards the wrapped source's wake-up channel, if it has one.
func (w *watermarked) IdleWait() <-chan struct{} {
	if iw, ok := w.src.(exec.IdleWaiter); ok {
		return iw.IdleWait()
	}
	return nil
}

// MaxTimestamp returns the largest non-NULL value of a TIMESTAMP (or BIGINT) array in microseconds.
func MaxTimestamp(arr arrow.Array) (int64, bool) {
	switch a := arr.(type) {
	case *array.Timestamp:
		return maxValid(a.TimestampValues(), arr)
	case *array.Int64:
		return maxValid(a.Int64Values(), arr)
	}
	return 0, false
}

func maxValid[T ~int64](vals []T, arr arrow.Array) (int64, bool) {
	best, ok := int64(0), false
	nulls := arr.NullN() > 0
	for i, v := range vals {
		if (!nulls || arr.IsValid(i)) && (!ok || int64(v) > best) {
			best, ok = int64(v), true
		}
	}
	return best, ok
}

// Progress forwards the wrapped source's exec.SourceProgress; everything is unknown (-1) when it has none.
func (w *watermarked) Progress() (lagRecords, lagBytes, total int64) {
	if sp, ok := w.src.(exec.SourceProgress); ok {
		return sp.Progress()
	}
	return -1, -1, -1
}
