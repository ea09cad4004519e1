package exec_test

import (
	"context"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clinksql/clinksql/exec"
)

// oneBatchSource produces one batch of events, then stays idle (an unbounded source with nothing more to say).
type oneBatchSource struct {
	alloc memory.Allocator
	done  bool
}

func (s *oneBatchSource) RestoreOffset(b []byte) error { s.done = len(b) > 0 && b[0] == 1; return nil }
func (s *oneBatchSource) Open(ctx *exec.TaskContext) error {
	s.alloc = ctx.Alloc
	return nil
}
func (s *oneBatchSource) Produce(context.Context) (exec.SourceResult, error) {
	if s.done {
		return exec.SourceResult{Status: exec.Idle, WM: exec.MinWatermark}, nil
	}
	s.done = true
	rec := eventRecord(s.alloc, []event{{key: 1, ts: 0, val: 5}, {key: 1, ts: 0, val: 6}})
	return exec.SourceResult{Status: exec.Produced, Batch: exec.Batch{Rec: rec}, WM: exec.MinWatermark}, nil
}
func (s *oneBatchSource) SnapshotOffset() ([]byte, error) {
	if s.done {
		return []byte{1}, nil
	}
	return []byte{0}, nil
}
func (s *oneBatchSource) Close() error { return nil }

// proctimeCount counts its input rows and emits the count when the clock has passed 10 s after the first batch
// arrived: a processing-time timer and nothing else.
type proctimeCount struct {
	exec.NoTimers
	exec.Stateless
	ctx     *exec.TaskContext
	n       int64
	due     int64
	arrived chan struct{}
}

func (o *proctimeCount) Open(ctx *exec.TaskContext) error { o.ctx = ctx; return nil }

func (o *proctimeCount) Process(_ int, b exec.Batch, _ exec.Emitter) error {
	defer b.Release()
	if o.n == 0 {
		o.due = o.ctx.Clock.Now().Add(10 * time.Second).UnixMicro()
	}
	o.n += int64(b.Rows())
	close(o.arrived)
	return nil
}

func (o *proctimeCount) NextProcessingTime() (int64, bool) { return o.due, o.n > 0 && o.due > 0 }

func (o *proctimeCount) OnProcessingTime(now int64, out exec.Emitter) error {
	r := newResultBuilder(o.ctx.Alloc)
	r.append(1, 0, o.n, now)
	o.due = 0
	return out.Emit(r.batch())
}

// notifySink hands each batch's row count to a channel.
type notifySink struct{ rows chan int }

func (s *notifySink) Open(*exec.TaskContext) error { return nil }
func (s *notifySink) Write(b exec.Batch) error {
	s.rows <- b.Rows()
	b.Release()
	return nil
}
func (s *notifySink) PreCommit(uint64) error { return nil }
func (s *notifySink) Commit(uint64) error    { return nil }
func (s *notifySink) Abort(uint64) error     { return nil }
func (s *notifySink) Close() error           { return nil }

// TestProcessingTimerWakesIdleOperator: with no checkpoints, no watermarks and no input after the first batch,
// moving the job's clock past an operator's timer is what wakes its subtask, which fires the timer and emits.
func TestProcessingTimerWakesIdleOperator(t *testing.T) {
	clock := exec.NewManualClock(time.Unix(1000, 0))
	op := &proctimeCount{arrived: make(chan struct{})}
	sink := &notifySink{rows: make(chan int, 4)}
	g := exec.NewGraph()
	src := g.AddSource("src", 1, func(int) exec.Source { return &oneBatchSource{} })
	n := g.AddOperator("count", 1, func(int) exec.Operator { return op }, exec.From(src, exec.ForwardExchange()))
	g.AddSink("sink", 1, func(int) exec.Sink { return sink }, exec.From(n, exec.ForwardExchange()))
	j, err := exec.NewJob(g, exec.JobConfig{Name: "job", Dir: t.TempDir(), Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	j.Start(ctx)
	defer func() {
		cancel()
		_ = j.Wait(context.Background())
	}()
	select {
	case <-op.arrived:
	case <-ctx.Done():
		t.Fatal("the batch never reached the operator")
	}
	clock.Advance(9 * time.Second)
	select {
	case <-sink.rows:
		t.Fatal("the timer fired before its time")
	case <-time.After(100 * time.Millisecond):
	}
	clock.Advance(time.Second)
	select {
	case n := <-sink.rows:
		if n != 1 {
			t.Fatalf("the timer emitted %d rows, want 1", n)
		}
	case <-ctx.Done():
		t.Fatal("moving the clock past the timer did not wake the idle operator")
	}
}
