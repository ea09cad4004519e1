package exec_test

import (
	"context"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clinksql/clinksql/checkpoint"
	"github.com/clinksql/clinksql/exec"
)

// markerPipeline: a source at parallelism 2 -> a stateless stage (forward) -> a keyed window aggregate behind a
// hash exchange -> a 2PC sink (forward).
func markerPipeline(c seqConfig, store *txnStore) *exec.Graph {
	g := exec.NewGraph()
	src := g.AddSource("gen", 2, newSeqSource(c))
	pass := g.AddOperator("pass", 2, func(int) exec.Operator { return passThrough{} }, exec.From(src, exec.ForwardExchange()))
	agg := g.AddOperator("agg", 2, newWindowSum(windowSize), exec.From(pass, exec.HashExchange(0))).WithKeyedState()
	g.AddSink("sink", 2, newMemSink(store), exec.From(agg, exec.ForwardExchange()))
	return g
}

// Latency markers cross a stateless stage, a hash exchange and a keyed window aggregate (which does not hold
// them) to the sink, which records them; they change nothing in the output and are not counted as rows.
func TestLatencyMarkersReachTheSink(t *testing.T) {
	c := seqConfig{seed: 31, rows: 3000, batchRows: 20, keys: 17, tsStep: 7}
	want := expectedWindows(c.all(2), windowSize)
	run := func(interval time.Duration, mode checkpoint.Mode) (*exec.Job, []string) {
		store := newTxnStore()
		cfg := jobConfig(t, t.TempDir())
		cfg.CheckpointMode = mode
		cfg.ChannelCapacity = 2 // backpressure: unaligned barriers overtake queued batches and markers
		cfg.LatencyMarkerInterval = interval
		j := runToEnd(t, markerPipeline(c, store), cfg)
		return j, store.rows()
	}
	off, rows := run(0, checkpoint.Aligned)
	checkRows(t, rows, want)
	if h := off.SinkLatency("sink"); h.Count != 0 {
		t.Fatalf("markers off, yet the sink recorded %d", h.Count)
	}
	for _, mode := range []checkpoint.Mode{checkpoint.Aligned, checkpoint.Unaligned} {
		on, rows := run(time.Nanosecond, mode) // a marker after every batch
		checkRows(t, rows, want)
		h := on.SinkLatency("sink")
		// 150 batches per source subtask, a marker after each (the first one only if the clock moved since
		// the source started): they all reach a sink subtask.
		if n := uint64(c.rows / c.batchRows); h.Count < 2*(n-1) || h.Count > 2*n {
			t.Fatalf("%v: the sink recorded %d markers, want about %d", mode, h.Count, 2*n)
		}
		if h.Sum < 0 || h.Sum > 60*float64(h.Count) {
			t.Fatalf("%v: implausible latency sum %v s over %d markers", mode, h.Sum, h.Count)
		}
		if got, want := rowCounts(on), rowCounts(off); !slices.Equal(got, want) {
			t.Fatalf("%v: rows in/out per subtask %v with markers, %v without", mode, got, want)
		}
	}
}

func rowCounts(j *exec.Job) []int64 {
	var out []int64
	for _, s := range j.Subtasks() {
		out = append(out, s.RowsIn, s.RowsOut)
	}
	return out
}

// fakeClock is a clock that moves only when told to.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// lockstep is a source and a sink that take turns: the sink writes batch k (advancing the fake clock by step)
// only once the source was asked for batch k+1, which is after the runtime stamped the marker that follows batch
// k; the source produces batch k+1 only once batch k was written. So every marker is stamped before exactly one
// write and recorded after it: its age is step, exactly.
type lockstep struct {
	clock   *fakeClock
	step    time.Duration
	batches int
	gates   []chan struct{} // gates[k]: the sink may write batch k
	written []chan struct{} // written[k]: the sink wrote batch k
}

func newLockstep(clock *fakeClock, step time.Duration, batches int) *lockstep {
	l := &lockstep{clock: clock, step: step, batches: batches}
	for range batches {
		l.gates = append(l.gates, make(chan struct{}))
		l.written = append(l.written, make(chan struct{}))
	}
	return l
}

type lockstepSource struct {
	l      *lockstep
	next   int
	opened int // gates opened
	alloc  memory.Allocator
}

func (s *lockstepSource) RestoreOffset([]byte) error       { return nil }
func (s *lockstepSource) Open(ctx *exec.TaskContext) error { s.alloc = ctx.Alloc; return nil }
func (s *lockstepSource) SnapshotOffset() ([]byte, error)  { return nil, nil }
func (s *lockstepSource) Close() error                     { return nil }
func (s *lockstepSource) Produce(context.Context) (exec.SourceResult, error) {
	if s.next > s.opened { // the runtime handled batch next-1 and what follows it: the sink may write it
		close(s.l.gates[s.next-1])
		s.opened = s.next
	}
	if s.next == s.l.batches {
		return exec.SourceResult{Status: exec.Finished}, nil
	}
	if s.next > 0 {
		select {
		case <-s.l.written[s.next-1]:
		default:
			return exec.SourceResult{Status: exec.Idle, WM: exec.MinWatermark}, nil
		}
	}
	kb := array.NewInt64Builder(s.alloc)
	tb := array.NewTimestampBuilder(s.alloc, tsType)
	vb := array.NewInt64Builder(s.alloc)
	kb.Append(int64(s.next))
	tb.Append(arrow.Timestamp(s.next))
	vb.Append(int64(s.next))
	cols := []arrow.Array{kb.NewArray(), tb.NewArray(), vb.NewArray()}
	kb.Release()
	tb.Release()
	vb.Release()
	rec := array.NewRecordBatch(eventSchema, cols, 1)
	for _, c := range cols {
		c.Release()
	}
	s.next++
	return exec.SourceResult{Status: exec.Produced, Batch: exec.Batch{Rec: rec}, WM: exec.MinWatermark}, nil
}

type lockstepSink struct {
	l    *lockstep
	rows int
}

func (s *lockstepSink) Open(*exec.TaskContext) error { return nil }
func (s *lockstepSink) Write(b exec.Batch) error {
	k := s.rows
	s.rows += b.Rows()
	b.Release()
	<-s.l.gates[k]
	s.l.clock.advance(s.l.step)
	close(s.l.written[k])
	return nil
}
func (s *lockstepSink) PreCommit(uint64) error { return nil }
func (s *lockstepSink) Commit(uint64) error    { return nil }
func (s *lockstepSink) Abort(uint64) error     { return nil }
func (s *lockstepSink) Close() error           { return nil }

// Against a fake clock the sink records a marker's age exactly: stamped at the source after batch k, recorded
// after the sink wrote batch k, which moved the clock by 250 ms. The markers cross a stateless stage and a hash
// exchange on the way.
func TestLatencyMarkerAgeAgainstFakeClock(t *testing.T) {
	const batches, step = 12, 250 * time.Millisecond
	clock := &fakeClock{t: time.Unix(1_800_000_000, 0)}
	l := newLockstep(clock, step, batches)
	g := exec.NewGraph()
	src := g.AddSource("src", 1, func(int) exec.Source { return &lockstepSource{l: l} })
	pass := g.AddOperator("pass", 1, func(int) exec.Operator { return passThrough{} }, exec.From(src, exec.ForwardExchange()))
	pass2 := g.AddOperator("pass2", 1, func(int) exec.Operator { return passThrough{} }, exec.From(pass, exec.HashExchange(0)))
	g.AddSink("sink", 1, func(int) exec.Sink { return &lockstepSink{l: l} }, exec.From(pass2, exec.ForwardExchange()))
	cfg := jobConfig(t, t.TempDir())
	cfg.CheckpointInterval = 0
	cfg.LatencyMarkerInterval = 200 * time.Millisecond
	cfg.Now = clock.now
	j := runToEnd(t, g, cfg)
	h := j.SinkLatency("sink")
	// No marker after batch 0 (the clock had not moved since the source started), one after each of the others.
	if h.Count != batches-1 {
		t.Fatalf("recorded %d markers, want %d", h.Count, batches-1)
	}
	if want := step.Seconds() * float64(batches-1); math.Abs(h.Sum-want) > 1e-9 {
		t.Fatalf("latency sum %v s, want %v s (every marker %v)", h.Sum, want, step)
	}
	if p50, p99 := exec.HistogramQuantile(exec.LatencyBuckets, h, 0.5), exec.HistogramQuantile(exec.LatencyBuckets, h, 0.99); p50 <= 0.2 || p50 > 0.25 || p99 <= 0.2 || p99 > 0.25 {
		t.Fatalf("p50 %v s, p99 %v s: want both in the bucket (0.2, 0.25]", p50, p99)
	}
}

func TestHistogramQuantile(t *testing.T) {
	bounds := []float64{1, 2, 4}
	var h checkpoint.Histogram
	for _, v := range []float64{0.5, 1.5, 1.5, 3, 10} {
		h.Observe(bounds, v)
	}
	for _, c := range []struct{ q, want float64 }{{0.2, 1}, {0.4, 1.5}, {0.6, 2}, {0.8, 4}, {1, 4}} {
		if got := exec.HistogramQuantile(bounds, h, c.q); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("q%v = %v, want %v", c.q, got, c.want)
		}
	}
	if got := exec.HistogramQuantile(bounds, checkpoint.Histogram{}, 0.5); got != 0 {
		t.Errorf("empty: %v", got)
	}
}
