package exec_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clinksql/clinksql/exec"
)

// stuckSource produces a one-row batch every millisecond whose time is ts (its watermark), forever: a source whose
// event time a test moves by hand. ts MinWatermark: rows without a watermark.
type stuckSource struct {
	ts    *atomic.Int64
	alloc memory.Allocator
}

func (s *stuckSource) RestoreOffset([]byte) error       { return nil }
func (s *stuckSource) Open(ctx *exec.TaskContext) error { s.alloc = ctx.Alloc; return nil }
func (s *stuckSource) SnapshotOffset() ([]byte, error)  { return []byte{}, nil }
func (s *stuckSource) Close() error                     { return nil }
func (s *stuckSource) Produce(ctx context.Context) (exec.SourceResult, error) {
	select {
	case <-time.After(time.Millisecond):
	case <-ctx.Done():
		return exec.SourceResult{}, ctx.Err()
	}
	ts := s.ts.Load()
	rec := eventRecord(s.alloc, []event{{ts: max(ts, 0)}})
	return exec.SourceResult{Status: exec.Produced, Batch: exec.Batch{Rec: rec}, WM: ts}, nil
}

// syncBuffer is a bytes.Buffer the job's goroutines may log into while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// inputRows counts the rows of each input.
type inputRows struct {
	exec.Stateless
	mu   sync.Mutex
	rows [2]int
}

func (p *inputRows) Open(*exec.TaskContext) error { return nil }
func (p *inputRows) Process(in int, b exec.Batch, _ exec.Emitter) error {
	p.mu.Lock()
	p.rows[in] += b.Rows()
	p.mu.Unlock()
	b.Release()
	return nil
}
func (p *inputRows) OnWatermark(int64, exec.Emitter) error { return nil }
func (p *inputRows) of(in int) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.rows[in]
}

// alignGraph: source a (seqConfig a, parallelism 1) and the stuck source b, both aligned, into p.
func alignGraph(p *inputRows, a seqConfig, bTS *atomic.Int64) *exec.Graph {
	g := exec.NewGraph()
	sa := g.AddSource("a", 1, newSeqSource(a)).WithWatermarkAlignment()
	sb := g.AddSource("b", 1, func(int) exec.Source { return &stuckSource{ts: bTS} }).WithWatermarkAlignment()
	op := g.AddOperator("rows", 1, func(int) exec.Operator { return p },
		exec.From(sa, exec.ForwardExchange()), exec.From(sb, exec.ForwardExchange()))
	g.AddSink("sink", 1, func(int) exec.Sink { return discardSink{} }, exec.From(op, exec.ForwardExchange()))
	return g
}

// With a max drift, a source whose watermark is ahead of the slowest aligned source by more than the drift stops
// producing until that one catches up, and still takes barriers meanwhile: a checkpoint completes while it is held.
func TestWatermarkAlignmentHoldsTheLeadingSource(t *testing.T) {
	gateA := make(chan struct{})
	a := seqConfig{seed: 1, rows: 1000, batchRows: 100, keys: 3, tsStep: 10, gate: gateA} // batch k ends at ts 1000k-10
	var bTS atomic.Int64
	bTS.Store(990)
	p := &inputRows{}
	cfg := jobConfig(t, t.TempDir())
	cfg.CheckpointInterval = 0 // the test takes its own
	cfg.WatermarkMaxDrift = 500 * time.Microsecond
	var logs syncBuffer
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	defer exec.SetAlignWarnAfter(30 * time.Millisecond)()
	j, err := exec.NewJob(alignGraph(p, a, &bTS), cfg)
	if err != nil {
		t.Fatal(err)
	}
	j.Start(context.Background())
	defer j.Cancel()

	waitFor(t, func() bool { return p.of(1) > 0 }) // b's watermark 990 is published before its first row goes out
	close(gateA)
	// a's batch 1 (watermark 990) is level with b; batch 2 takes it to 1990, more than 500 past b: held there.
	waitFor(t, func() bool { return p.of(0) >= 200 })
	time.Sleep(50 * time.Millisecond)
	if got := p.of(0); got != 200 {
		t.Fatalf("source a produced %d rows while b stayed at 990; want 200 (held at watermark 1990)", got)
	}
	// Held that long, it says so, naming where the slowest is.
	waitFor(t, func() bool { return strings.Contains(logs.String(), "source held by watermark alignment") })
	if l := logs.String(); !strings.Contains(l, "slowest_us=990") || !strings.Contains(l, "watermark_us=1990") {
		t.Fatalf("the warning does not say where a and the slowest are:\n%s", l)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := j.Checkpoint(ctx); err != nil {
		t.Fatalf("checkpoint while source a was held: %v", err)
	}
	if got := p.of(0); got != 200 {
		t.Fatalf("source a produced %d rows by the checkpoint; want still 200", got)
	}
	bTS.Store(3500) // a may go on until it passes 4000: batches 3 and 4 (2990, 3990), then batch 5 (4990) is held
	waitFor(t, func() bool { return p.of(0) >= 500 })
	time.Sleep(50 * time.Millisecond)
	if got := p.of(0); got != 500 {
		t.Fatalf("source a produced %d rows with b at 3500; want 500 (held at watermark 4990)", got)
	}
	bTS.Store(exec.MaxWatermark - 1)
	waitFor(t, func() bool { return p.of(0) == 1000 })
}

// Without a max drift (and for a source that never has a watermark) nothing is held: a runs to its end while b
// stays at 990.
func TestWatermarkAlignmentOffOrWithoutWatermarkHoldsNothing(t *testing.T) {
	for _, tc := range []struct {
		name  string
		drift time.Duration
		bTS   int64
	}{
		{"off", 0, 990},
		{"b without watermark", 500 * time.Microsecond, exec.MinWatermark},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := seqConfig{seed: 1, rows: 1000, batchRows: 100, keys: 3, tsStep: 10}
			var bTS atomic.Int64
			bTS.Store(tc.bTS)
			p := &inputRows{}
			cfg := jobConfig(t, t.TempDir())
			cfg.WatermarkMaxDrift = tc.drift
			j, err := exec.NewJob(alignGraph(p, a, &bTS), cfg)
			if err != nil {
				t.Fatal(err)
			}
			j.Start(context.Background())
			defer j.Cancel()
			waitFor(t, func() bool { return p.of(1) > 0 })
			waitFor(t, func() bool { return p.of(0) == 1000 })
		})
	}
}
