package exec_test

import (
	"context"
	"fmt"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clinksql/clinksql/checkpoint"
	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/exec/operators"
)

// The time joins (interval and window join) in the runtime: two generator sources hashed on their key into the
// join, a shaping operator that turns joined rows into the sink's (key, start, cnt, sum) rows, and the 2PC sink.
// A joined row becomes key|start|left val|right val, -1 standing for the NULL side of an outer row.

// timeJoinOp wraps a join subtask: with tokens, its input 1 is held behind a gate (one batch per token, saying so
// on entered before it waits); with failed, the first batch after checkpoint 1 completed fails the job once (the
// restart then restores state). It keeps the join's watermark hold.
type timeJoinOp struct {
	exec.Operator
	tokens, entered chan struct{}
	failed          *atomic.Bool
	ctx             *exec.TaskContext
}

func (g *timeJoinOp) Open(ctx *exec.TaskContext) error {
	g.ctx = ctx
	return g.Operator.Open(ctx)
}

func (g *timeJoinOp) Process(input int, b exec.Batch, out exec.Emitter) error {
	if g.failed != nil && g.ctx.IsCompleted(1) && g.failed.CompareAndSwap(false, true) {
		b.Release()
		return fmt.Errorf("injected join failure")
	}
	if input == 1 && g.tokens != nil {
		g.entered <- struct{}{}
		<-g.tokens
	}
	return g.Operator.Process(input, b, out)
}

func (g *timeJoinOp) OutputWatermark(wm int64) int64 {
	if h, ok := g.Operator.(exec.WatermarkHolder); ok {
		return h.OutputWatermark(wm)
	}
	return wm
}

// timeJoinShape maps a joined row to the sink's result schema: key and start from the side present (the left
// one for a pair), cnt the left val and sum the right val, -1 for NULL. cols names the join output's left key,
// start, val, then the right ones.
type timeJoinShape struct {
	ctx  *exec.TaskContext
	cols [6]int
}

func newTimeJoinShape(cols [6]int) func(int) exec.Operator {
	return func(int) exec.Operator { return &timeJoinShape{cols: cols} }
}

func (s *timeJoinShape) Open(ctx *exec.TaskContext) error { s.ctx = ctx; return nil }

func (s *timeJoinShape) Process(_ int, b exec.Batch, out exec.Emitter) error {
	defer b.Release()
	col := func(i int) arrow.Array { return b.Rec.Column(s.cols[i]) }
	lk, lt, lv := col(0).(*array.Int64), col(1).(*array.Timestamp), col(2).(*array.Int64)
	rk, rt, rv := col(3).(*array.Int64), col(4).(*array.Timestamp), col(5).(*array.Int64)
	kb := array.NewInt64Builder(s.ctx.Alloc)
	tb := array.NewTimestampBuilder(s.ctx.Alloc, tsType)
	cb := array.NewInt64Builder(s.ctx.Alloc)
	ub := array.NewInt64Builder(s.ctx.Alloc)
	defer kb.Release()
	defer tb.Release()
	defer cb.Release()
	defer ub.Release()
	n := b.Rows()
	for i := 0; i < n; i++ {
		if lk.IsValid(i) {
			kb.Append(lk.Value(i))
			tb.Append(lt.Value(i))
			cb.Append(lv.Value(i))
		} else {
			kb.Append(rk.Value(i))
			tb.Append(rt.Value(i))
			cb.Append(-1)
		}
		if rk.IsValid(i) {
			ub.Append(rv.Value(i))
		} else {
			ub.Append(-1)
		}
	}
	cols := []arrow.Array{kb.NewArray(), tb.NewArray(), cb.NewArray(), ub.NewArray()}
	rec := array.NewRecordBatch(resultSchema, cols, int64(n))
	for _, c := range cols {
		c.Release()
	}
	return out.Emit(exec.Batch{Rec: rec})
}

func (s *timeJoinShape) OnWatermark(int64, exec.Emitter) error { return nil }
func (s *timeJoinShape) OnBarrier(checkpoint.Barrier) error    { return nil }
func (s *timeJoinShape) Close() error                          { return nil }

// timeJoinPipeline is gen-a and gen-b (made by source) hashed on column 0 into join at parallelism p, then the
// shaping operator and the sink; the join subtasks are wrapped as wrap says (nil: plain).
func timeJoinPipeline(a, b seqConfig, p int, source func(seqConfig) func(int) exec.Source,
	join func(int) exec.Operator, wrap func(exec.Operator) exec.Operator, shape [6]int, store *txnStore) *exec.Graph {
	g := exec.NewGraph()
	sa := g.AddSource("gen-a", p, source(a))
	sb := g.AddSource("gen-b", p, source(b))
	op := join
	if wrap != nil {
		op = func(sub int) exec.Operator { return wrap(join(sub)) }
	}
	j := g.AddOperator("join", p, op, exec.From(sa, exec.HashExchange(0)), exec.From(sb, exec.HashExchange(0))).WithKeyedState()
	sh := g.AddOperator("shape", p, newTimeJoinShape(shape), exec.From(j, exec.ForwardExchange()))
	g.AddSink("sink", p, newMemSink(store), exec.From(sh, exec.ForwardExchange()))
	return g
}

// timeJoinRow renders an expected joined row as resultRows does; nil is the NULL side.
func timeJoinRow(l, r *event, lstart, rstart int64) string {
	switch {
	case r == nil:
		return fmt.Sprintf("%d|%d|%d|%d", l.key, lstart, l.val, -1)
	case l == nil:
		return fmt.Sprintf("%d|%d|%d|%d", r.key, rstart, -1, r.val)
	}
	return fmt.Sprintf("%d|%d|%d|%d", l.key, lstart, l.val, r.val)
}

// Interval join model: a FULL join of left and right on key with r.ts in [l.ts + lower, l.ts + upper]. The
// sources' rows are never late (a channel's rows are in time order and its watermark is its last time), so every
// pair is found whatever the interleaving.
const ijLower, ijUpper = -5, 5

func expectedIntervalJoin(left, right []event) []string {
	var out []string
	matchedR := make([]bool, len(right))
	for _, l := range left {
		found := false
		for ri, r := range right {
			if l.key == r.key && r.ts >= l.ts+ijLower && r.ts <= l.ts+ijUpper {
				found, matchedR[ri] = true, true
				out = append(out, timeJoinRow(&l, &r, l.ts, r.ts))
			}
		}
		if !found {
			out = append(out, timeJoinRow(&l, nil, l.ts, 0))
		}
	}
	for ri, r := range right {
		if !matchedR[ri] {
			out = append(out, timeJoinRow(nil, &r, 0, r.ts))
		}
	}
	sort.Strings(out)
	return out
}

func intervalJoinOp(t testing.TB) func(int) exec.Operator {
	t.Helper()
	f, _, err := operators.NewIntervalJoin(operators.IntervalJoinConfig{
		JoinSpec: operators.JoinSpec{Type: operators.JoinFull, Left: eventSchema, Right: eventSchema,
			LeftKeys: []int{0}, RightKeys: []int{0}},
		LeftTime: 1, RightTime: 1, Lower: ijLower, Upper: ijUpper,
	})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// The join output (k, ts, val, k, ts, val): the shape's columns.
var intervalJoinShape = [6]int{0, 1, 2, 3, 4, 5}

// pausedSource produces `after` batches, then idles until release is closed: a test can complete a checkpoint
// and know that input remains after it.
type pausedSource struct {
	exec.Source
	after   int
	release chan struct{}
	n       int
}

func (s *pausedSource) Produce(ctx context.Context) (exec.SourceResult, error) {
	if s.n >= s.after {
		select {
		case <-s.release:
		default:
			return exec.SourceResult{Status: exec.Idle}, nil
		}
	}
	res, err := s.Source.Produce(ctx)
	if res.Status == exec.Produced {
		s.n++
	}
	return res, err
}

func (s *pausedSource) IdleWait() <-chan struct{} { return s.release }

// timeJoinWithFailure runs a time join pipeline at parallelism 2 with periodic unaligned checkpoints: the sources pause
// after a few batches until checkpoint 1 completed, and the join's first batch after that fails the job once, so
// the restart restores the join's state (and in-flight batches) from a checkpoint taken in the middle of the
// input. It checks the committed rows and that no Arrow memory leaked.
func timeJoinWithFailure(t *testing.T, a, b seqConfig, join func(int) exec.Operator,
	source func(seqConfig) func(int) exec.Source, shape [6]int, want []string) {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	var failed atomic.Bool
	release := make(chan struct{})
	store := newTxnStore()
	cfg := jobConfig(t, t.TempDir())
	cfg.CheckpointMode = checkpoint.Unaligned
	cfg.Alloc = mem
	wrap := func(op exec.Operator) exec.Operator { return &timeJoinOp{Operator: op, failed: &failed} }
	paused := func(c seqConfig) func(int) exec.Source {
		inner := source(c)
		return func(sub int) exec.Source { return &pausedSource{Source: inner(sub), after: 10, release: release} }
	}
	j, err := exec.NewJob(timeJoinPipeline(a, b, 2, paused, join, wrap, shape, store), cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	j.Start(ctx)
	waitFor(t, func() bool { return j.Status().LastCompleted >= 1 })
	close(release)
	if err := j.Wait(ctx); err != nil {
		t.Fatalf("job: %v", err)
	}
	checkRows(t, store.rows(), want)
	if st := j.Status(); st.Restarts != 1 || st.Late != 0 || !failed.Load() {
		t.Fatalf("want 1 restart and no late rows, status %+v", st)
	}
	mem.AssertSize(t, 0)
}

// A FULL interval join at parallelism 2 commits exactly the model's rows through a failure and a restore.
func TestIntervalJoinPipelineRestartExact(t *testing.T) {
	a := seqConfig{seed: 31, rows: 1500, batchRows: 30, keys: 20, tsStep: 3}
	b := seqConfig{seed: 32, rows: 1500, batchRows: 50, keys: 20, tsStep: 2}
	timeJoinWithFailure(t, a, b, intervalJoinOp(t), newSeqSource, intervalJoinShape, expectedIntervalJoin(a.all(2), b.all(2)))
}

// startGatedTimeJoin starts a pipeline whose join holds its input 1 behind a gate and returns once input 0's few
// elements went through, input 1's channel is full and the join is stuck on it (as the union's test does).
func startGatedTimeJoin(t *testing.T, dir string, mode checkpoint.Mode, build func(wrap func(exec.Operator) exec.Operator) *exec.Graph) (*exec.Job, chan struct{}, chan struct{}) {
	tokens, entered := make(chan struct{}), make(chan struct{})
	cfg := jobConfig(t, dir)
	cfg.CheckpointInterval = 0
	cfg.CheckpointMode = mode
	cfg.ChannelCapacity = backpressureCap
	wrap := func(op exec.Operator) exec.Operator {
		return &timeJoinOp{Operator: op, tokens: tokens, entered: entered}
	}
	j, err := exec.NewJob(build(wrap), cfg)
	if err != nil {
		t.Fatal(err)
	}
	j.Start(context.Background())
	<-entered
	for i := 0; i < 5; i++ {
		tokens <- struct{}{}
		<-entered
	}
	waitFor(t, func() bool { return j.Pressure() == 1 })
	return j, tokens, entered
}

// gatedTimeJoinCheckpoints is the union's backpressure test for a join: with the join's input 1 held behind a gate,
// an unaligned checkpoint completes while an aligned one still waits behind the queued batches, and a restore
// from the unaligned checkpoint (its in-flight batches replayed into the join) gives the output of a run without
// failure.
func gatedTimeJoinCheckpoints(t *testing.T, build func(wrap func(exec.Operator) exec.Operator, store *txnStore) *exec.Graph,
	rows int, want []string) {
	t.Run("aligned waits", func(t *testing.T) {
		j, tokens, entered := startGatedTimeJoin(t, t.TempDir(), checkpoint.Aligned,
			func(wrap func(exec.Operator) exec.Operator) *exec.Graph { return build(wrap, newTxnStore()) })
		checkpointWaits(t, j, tokens, entered)
		j.Cancel()
	})
	t.Run("unaligned overtakes and replays", func(t *testing.T) {
		dir := t.TempDir()
		store := newTxnStore()
		j, tokens, entered := startGatedTimeJoin(t, dir, checkpoint.Unaligned,
			func(wrap func(exec.Operator) exec.Operator) *exec.Graph { return build(wrap, store) })
		checkpointOvertakes(t, j, tokens, entered, "join-0")
		releaseGate(tokens, entered)
		j.Cancel()
		j2 := runToEnd(t, build(nil, store), jobConfig(t, dir))
		if st := j2.Status(); st.RowsIn >= int64(rows) {
			t.Fatalf("the second run replayed from the start (%d rows in), not from the checkpoint", st.RowsIn)
		}
		checkRows(t, store.rows(), want)
	})
}

func TestIntervalJoinUnalignedCheckpointUnderBackpressure(t *testing.T) {
	a := seqConfig{seed: 41, rows: 50, batchRows: 50, keys: 10, tsStep: 40}
	b := seqConfig{seed: 42, rows: 2000, batchRows: 10, keys: 10, tsStep: 1}
	join := intervalJoinOp(t)
	gatedTimeJoinCheckpoints(t, func(wrap func(exec.Operator) exec.Operator, store *txnStore) *exec.Graph {
		return timeJoinPipeline(a, b, 1, newSeqSource, join, wrap, intervalJoinShape, store)
	}, a.rows+b.rows, expectedIntervalJoin(a.all(1), b.all(1)))
}
