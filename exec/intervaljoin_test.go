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
	"github.com/clinksql/clinksql/exec/join"
)

// The time joins (interval and window join) in the runtime: two generator sources hashed on their key into the
// join, a shaping operator that turns joined rows into the sink's (key, start, cnt, sum) rows, and the 2PC sink.
// A joined row becomes key|start|left val|right val, -1 standing for the NULL side of an outer row.

// failOnceOp fails the job once, at the first batch after checkpoint 1 completed (the restart then restores
// state). It keeps the operator's watermark hold.
// failOnceOp fails its first Process once armed: the test arms it after a checkpoint completed and before it
// releases the paused sources, so every row after the release sees it armed (the subtask's own notice of the
// completion can come after the last row).
type failOnceOp struct {
	exec.Operator
	failed, armed *atomic.Bool
}

func (o *failOnceOp) Process(input int, b exec.Batch, out exec.Emitter) error {
	if o.armed.Load() && o.failed.CompareAndSwap(false, true) {
		b.Release()
		return fmt.Errorf("injected join failure")
	}
	return o.Operator.Process(input, b, out)
}

func (o *failOnceOp) OutputWatermark(wm int64) int64 { return heldWatermark(o.Operator, wm) }

// timeJoinShape maps a joined row to the sink's result schema: key and start from the side present (the left
// one for a pair), cnt the left val and sum the right val, -1 for NULL. cols names the join output's left key,
// start, val, then the right ones.
type timeJoinShape struct {
	exec.NoTimers
	exec.Stateless
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
	rb := newResultBuilder(s.ctx.Alloc)
	for i := 0; i < b.Rows(); i++ {
		var key int64
		var start arrow.Timestamp
		cnt, sum := int64(-1), int64(-1)
		if lk.IsValid(i) {
			key, start, cnt = lk.Value(i), lt.Value(i), lv.Value(i)
		} else {
			key, start = rk.Value(i), rt.Value(i)
		}
		if rk.IsValid(i) {
			sum = rv.Value(i)
		}
		rb.append(key, start, cnt, sum)
	}
	return out.Emit(rb.batch())
}

// timeJoinPipeline is gen-a and gen-b (made by source) hashed on column 0 into join at parallelism p, then the
// shaping operator and the sink.
func timeJoinPipeline(a, b seqConfig, p int, source func(seqConfig) func(int) exec.Source,
	join func(int) exec.Operator, shape [6]int, store *txnStore) *exec.Graph {
	g := exec.NewGraph()
	sa := g.AddSource("gen-a", p, source(a))
	sb := g.AddSource("gen-b", p, source(b))
	j := g.AddOperator("join", p, join, exec.From(sa, exec.HashExchange(0)), exec.From(sb, exec.HashExchange(0))).WithKeyedState()
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
	return expectedTimeJoin(left, right, func(l, r event) bool { return r.ts >= l.ts+ijLower && r.ts <= l.ts+ijUpper },
		func(ts int64) int64 { return ts })
}

// expectedTimeJoin is the model of a FULL time join of left and right: every pair with equal keys that match, then
// each row in no pair, padded. start is the window start a row's result carries, given the row's time.
func expectedTimeJoin(left, right []event, match func(l, r event) bool, start func(ts int64) int64) []string {
	var out []string
	matchedR := make([]bool, len(right))
	for _, l := range left {
		found := false
		for ri, r := range right {
			if l.key == r.key && match(l, r) {
				found, matchedR[ri] = true, true
				out = append(out, timeJoinRow(&l, &r, start(l.ts), start(r.ts)))
			}
		}
		if !found {
			out = append(out, timeJoinRow(&l, nil, start(l.ts), 0))
		}
	}
	for ri, r := range right {
		if !matchedR[ri] {
			out = append(out, timeJoinRow(nil, &r, 0, start(r.ts)))
		}
	}
	sort.Strings(out)
	return out
}

func intervalJoinOp(t testing.TB) func(int) exec.Operator {
	t.Helper()
	f, _, err := join.NewIntervalJoin(join.IntervalJoinConfig{
		JoinSpec: join.JoinSpec{Type: join.JoinFull, Left: eventSchema, Right: eventSchema,
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
	var failed, armed atomic.Bool
	release := make(chan struct{})
	store := newTxnStore()
	cfg := jobConfig(t, t.TempDir())
	cfg.CheckpointMode = checkpoint.Unaligned
	cfg.Alloc = mem
	failing := func(sub int) exec.Operator { return &failOnceOp{Operator: join(sub), failed: &failed, armed: &armed} }
	paused := func(c seqConfig) func(int) exec.Source {
		inner := source(c)
		return func(sub int) exec.Source { return &pausedSource{Source: inner(sub), after: 10, release: release} }
	}
	j, err := exec.NewJob(timeJoinPipeline(a, b, 2, paused, failing, shape, store), cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	j.Start(ctx)
	waitFor(t, func() bool { return j.Status().LastCompleted >= 1 })
	armed.Store(true)
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

// gatedTimeJoin is the gated backpressure test (gatedCase) for a time join at parallelism 1.
func gatedTimeJoin(a, b seqConfig, source func(seqConfig) func(int) exec.Source, join func(int) exec.Operator,
	shape [6]int, want []string) gatedCase {
	return gatedCase{
		graph: func(g *gate, store *txnStore) *exec.Graph {
			return timeJoinPipeline(a, b, 1, source, g.wrap(join), shape, store)
		},
		op: "join-0", rows: a.rows + b.rows, want: want,
	}
}

func TestIntervalJoinUnalignedCheckpointUnderBackpressure(t *testing.T) {
	a := seqConfig{seed: 41, rows: 50, batchRows: 50, keys: 10, tsStep: 40}
	b := seqConfig{seed: 42, rows: 2000, batchRows: 10, keys: 10, tsStep: 1}
	gatedTimeJoin(a, b, newSeqSource, intervalJoinOp(t), intervalJoinShape, expectedIntervalJoin(a.all(1), b.all(1))).run(t)
}
