package exec_test

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/exec/join"
)

// The window join's inputs: (key, window_start, window_end, val), each row in the tumbling window of its event time.
var windowedSchema = arrow.NewSchema([]arrow.Field{
	{Name: "key", Type: arrow.PrimitiveTypes.Int64},
	{Name: "window_start", Type: tsType},
	{Name: "window_end", Type: tsType},
	{Name: "val", Type: arrow.PrimitiveTypes.Int64},
}, nil)

const windowedSize = 10 // microseconds

// windowedSource is a seqSource whose rows carry their tumbling window instead of their time (the shape of a
// window aggregate's output); its watermark is still the last event time.
type windowedSource struct {
	exec.Source
	alloc memory.Allocator
}

func newWindowedSource(c seqConfig) func(int) exec.Source {
	inner := newSeqSource(c)
	return func(sub int) exec.Source { return &windowedSource{Source: inner(sub)} }
}

func (s *windowedSource) Open(ctx *exec.TaskContext) error {
	s.alloc = ctx.Alloc
	return s.Source.Open(ctx)
}

func (s *windowedSource) Produce(ctx context.Context) (exec.SourceResult, error) {
	res, err := s.Source.Produce(ctx)
	if err != nil || res.Status != exec.Produced {
		return res, err
	}
	rec := res.Batch.Rec
	defer rec.Release()
	sb := array.NewTimestampBuilder(s.alloc, tsType)
	eb := array.NewTimestampBuilder(s.alloc, tsType)
	defer sb.Release()
	defer eb.Release()
	for _, ts := range rec.Column(1).(*array.Timestamp).TimestampValues() {
		start := ts - ts%windowedSize
		sb.Append(start)
		eb.Append(start + windowedSize)
	}
	starts, ends := sb.NewArray(), eb.NewArray()
	defer starts.Release()
	defer ends.Release()
	out := array.NewRecordBatch(windowedSchema, []arrow.Array{rec.Column(0), starts, ends, rec.Column(2)}, rec.NumRows())
	res.Batch = exec.Batch{Rec: out}
	return res, nil
}

// expectedWindowJoin is the model: a FULL join of left and right on key within each window (rows in the same
// window and key pair up; the rest is padded).
func expectedWindowJoin(left, right []event) []string {
	window := func(ts int64) int64 { return ts - ts%windowedSize }
	return expectedTimeJoin(left, right, func(l, r event) bool { return window(l.ts) == window(r.ts) }, window)
}

func windowJoinOp(t testing.TB) func(int) exec.Operator {
	t.Helper()
	f, _, err := join.NewWindowJoin(join.WindowJoinConfig{
		JoinSpec: join.JoinSpec{Type: join.JoinFull, Left: windowedSchema, Right: windowedSchema,
			LeftKeys: []int{0}, RightKeys: []int{0}},
		LeftStart: 1, LeftEnd: 2, RightStart: 1, RightEnd: 2,
	})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// The join output (k, ws, we, val, k, ws, we, val): the shape's columns.
var windowJoinShape = [6]int{0, 1, 3, 4, 5, 7}

// A FULL window join at parallelism 2 commits exactly the model's rows through a failure and a restore.
func TestWindowJoinPipelineRestartExact(t *testing.T) {
	a := seqConfig{seed: 51, rows: 1500, batchRows: 30, keys: 20, tsStep: 3}
	b := seqConfig{seed: 52, rows: 1500, batchRows: 50, keys: 20, tsStep: 2}
	timeJoinWithFailure(t, a, b, windowJoinOp(t), newWindowedSource, windowJoinShape, expectedWindowJoin(a.all(2), b.all(2)))
}

func TestWindowJoinUnalignedCheckpointUnderBackpressure(t *testing.T) {
	a := seqConfig{seed: 61, rows: 50, batchRows: 50, keys: 10, tsStep: 40}
	b := seqConfig{seed: 62, rows: 2000, batchRows: 10, keys: 10, tsStep: 1}
	gatedTimeJoin(a, b, newWindowedSource, windowJoinOp(t), windowJoinShape, expectedWindowJoin(a.all(1), b.all(1))).run(t)
}
