package checkpoint

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
)

// ackLog records acks in order.
type ackLog struct {
	mu   sync.Mutex
	acks []uint64
	errs []error
	ch   chan uint64
}

func newAckLog() *ackLog { return &ackLog{ch: make(chan uint64, 16)} }

func (l *ackLog) ack(id uint64) func(error) {
	return func(err error) {
		l.mu.Lock()
		l.acks = append(l.acks, id)
		l.errs = append(l.errs, err)
		l.mu.Unlock()
		l.ch <- id
	}
}

func (l *ackLog) snapshot() []uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]uint64(nil), l.acks...)
}

// gatedTask persists only once gate is closed, and reports that Persist started on started.
func gatedTask(id uint64, started chan<- uint64, gate <-chan struct{}, l *ackLog) Task {
	return Task{
		ID: id,
		Persist: func() error {
			started <- id
			<-gate
			return nil
		},
		Ack: l.ack(id),
	}
}

// Pins ack-after-durable: the ack of a checkpoint never precedes the return of its Persist (an early ack let
// COMPLETED-N name a snapshot that was still a .part file).
func TestWorkerAcksOnlyAfterPersistReturns(t *testing.T) {
	w := NewSnapshotWorker()
	defer w.CancelAndJoin()
	l := newAckLog()
	started := make(chan uint64, 1)
	gate := make(chan struct{})
	persisted := false
	task := Task{
		ID: 7,
		Persist: func() error {
			started <- 7
			<-gate
			persisted = true
			return nil
		},
		Ack: func(err error) {
			if !persisted {
				t.Error("ack delivered before Persist returned")
			}
			l.ack(7)(err)
		},
	}
	if err := w.Enqueue(context.Background(), task); err != nil {
		t.Fatal(err)
	}
	<-started
	// Persist is blocked on the gate: no ack may exist yet.
	select {
	case id := <-l.ch:
		t.Fatalf("ack %d arrived while Persist was still running", id)
	default:
	}
	close(gate)
	if id := <-l.ch; id != 7 {
		t.Fatalf("ack for %d, want 7", id)
	}
	if l.errs[0] != nil {
		t.Fatalf("ack error %v, want nil", l.errs[0])
	}
}

// Pins that a persist error reaches the coordinator as a failed ack (the checkpoint must fail, not complete).
func TestWorkerAcksPersistError(t *testing.T) {
	w := NewSnapshotWorker()
	defer w.DrainAndJoin()
	boom := errors.New("disk full")
	got := make(chan error, 1)
	if err := w.Enqueue(context.Background(), Task{ID: 1, Persist: func() error { return boom }, Ack: func(err error) { got <- err }}); err != nil {
		t.Fatal(err)
	}
	if err := <-got; !errors.Is(err, boom) {
		t.Fatalf("ack error %v, want %v", err, boom)
	}
}

// Pins the capacity-1 FIFO: processing runs at most one checkpoint ahead of durability, so a third Enqueue blocks
// until the first task finished, and tasks persist in capture order.
func TestWorkerQueueHoldsOneBehindThePersisting(t *testing.T) {
	w := NewSnapshotWorker()
	defer w.CancelAndJoin()
	l := newAckLog()
	started := make(chan uint64, 3)
	gates := []chan struct{}{make(chan struct{}), make(chan struct{}), make(chan struct{})}
	ctx := context.Background()
	if err := w.Enqueue(ctx, gatedTask(1, started, gates[0], l)); err != nil {
		t.Fatal(err)
	}
	<-started // 1 is persisting
	if err := w.Enqueue(ctx, gatedTask(2, started, gates[1], l)); err != nil {
		t.Fatal(err) // 2 waits in the one slot
	}
	third := make(chan error, 1)
	go func() { third <- w.Enqueue(ctx, gatedTask(3, started, gates[2], l)) }()
	select {
	case err := <-third:
		t.Fatalf("third Enqueue returned (%v) while the queue was full", err)
	case id := <-started:
		t.Fatalf("task %d started while task 1 was persisting", id)
	default:
	}
	close(gates[0]) // 1 finishes; 2 starts; the slot frees for 3
	if err := <-third; err != nil {
		t.Fatal(err)
	}
	if id := <-started; id != 2 {
		t.Fatalf("started %d, want 2 (FIFO)", id)
	}
	close(gates[1])
	if id := <-started; id != 3 {
		t.Fatalf("started %d, want 3 (FIFO)", id)
	}
	close(gates[2])
	for range 3 {
		<-l.ch
	}
	if got := l.snapshot(); len(got) != 3 || got[0] != 1 || got[1] != 2 || got[2] != 3 {
		t.Fatalf("acks %v, want [1 2 3]", got)
	}
}

// Pins that a cancelled job never blocks forever on a full queue: Enqueue returns when its context ends.
func TestWorkerEnqueueHonoursContext(t *testing.T) {
	w := NewSnapshotWorker()
	defer w.CancelAndJoin()
	l := newAckLog()
	started := make(chan uint64, 2)
	gate := make(chan struct{})
	defer close(gate)
	if err := w.Enqueue(context.Background(), gatedTask(1, started, gate, l)); err != nil {
		t.Fatal(err)
	}
	<-started
	if err := w.Enqueue(context.Background(), gatedTask(2, started, gate, l)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	res := make(chan error, 1)
	go func() { res <- w.Enqueue(ctx, gatedTask(3, started, gate, l)) }()
	cancel()
	if err := <-res; !errors.Is(err, context.Canceled) {
		t.Fatalf("Enqueue = %v, want context.Canceled", err)
	}
}

// Pins clean end of input: DrainAndJoin persists and acks the backlog, so the checkpoint the coordinator awaits
// (the final one of a bounded job) still completes.
func TestWorkerDrainPersistsBacklog(t *testing.T) {
	w := NewSnapshotWorker()
	l := newAckLog()
	started := make(chan uint64, 2)
	gate := make(chan struct{})
	ctx := context.Background()
	if err := w.Enqueue(ctx, gatedTask(1, started, gate, l)); err != nil {
		t.Fatal(err)
	}
	<-started
	if err := w.Enqueue(ctx, gatedTask(2, started, gate, l)); err != nil {
		t.Fatal(err)
	}
	joined := make(chan struct{})
	go func() { w.DrainAndJoin(); close(joined) }()
	close(gate)
	<-joined
	if got := l.snapshot(); len(got) != 2 || got[0] != 1 || got[1] != 2 {
		t.Fatalf("acks after drain %v, want [1 2]", got)
	}
	if err := w.Enqueue(ctx, gatedTask(3, started, gate, l)); !errors.Is(err, ErrWorkerClosed) {
		t.Fatalf("Enqueue after drain = %v, want ErrWorkerClosed", err)
	}
}

// Pins cancel semantics: a task not yet started is dropped without an ack (an un-acked checkpoint simply never
// completes) and released; the task already persisting finishes and its (true) ack is delivered.
func TestWorkerCancelDropsQueuedWithoutAck(t *testing.T) {
	w := NewSnapshotWorker()
	l := newAckLog()
	started := make(chan uint64, 2)
	gate := make(chan struct{})
	ctx := context.Background()
	if err := w.Enqueue(ctx, gatedTask(1, started, gate, l)); err != nil {
		t.Fatal(err)
	}
	<-started
	released := false
	queued := gatedTask(2, started, gate, l)
	queued.Release = func() { released = true }
	if err := w.Enqueue(ctx, queued); err != nil {
		t.Fatal(err)
	}
	// A third Enqueue blocked on the full queue is released by the cancel.
	blocked := make(chan error, 1)
	go func() { blocked <- w.Enqueue(ctx, gatedTask(3, started, gate, l)) }()
	joined := make(chan struct{})
	go func() { w.CancelAndJoin(); close(joined) }()
	if err := <-blocked; !errors.Is(err, ErrWorkerClosed) {
		t.Fatalf("blocked Enqueue = %v, want ErrWorkerClosed", err)
	}
	close(gate)
	<-joined
	if got := l.snapshot(); len(got) != 1 || got[0] != 1 {
		t.Fatalf("acks after cancel %v, want only [1] (the task that was persisting)", got)
	}
	if !released {
		t.Fatal("dropped task was not released")
	}
	select {
	case id := <-started:
		if id != 1 {
			t.Fatalf("task %d started after cancel", id)
		}
	default:
	}
}

// Pins that a cancel cuts short a drain in progress: a job cancelled while draining does not wait for (or ack)
// the backlog.
func TestWorkerCancelCutsShortDrain(t *testing.T) {
	w := NewSnapshotWorker()
	l := newAckLog()
	started := make(chan uint64, 2)
	gate := make(chan struct{})
	ctx := context.Background()
	if err := w.Enqueue(ctx, gatedTask(1, started, gate, l)); err != nil {
		t.Fatal(err)
	}
	<-started
	if err := w.Enqueue(ctx, gatedTask(2, started, gate, l)); err != nil {
		t.Fatal(err)
	}
	drained, cancelDone := make(chan struct{}), make(chan struct{})
	go func() { w.DrainAndJoin(); close(drained) }()
	go func() { w.CancelAndJoin(); close(cancelDone) }()
	for { // both closes have taken effect once the state reads cancelled (whatever their order)
		w.mu.Lock()
		s := w.closed
		w.mu.Unlock()
		if s == cancelled {
			break
		}
		runtime.Gosched()
	}
	close(gate)
	<-drained
	<-cancelDone
	if got := l.snapshot(); len(got) != 1 || got[0] != 1 {
		t.Fatalf("acks %v, want only [1]", got)
	}
}
