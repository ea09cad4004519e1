package checkpoint

import (
	"context"
	"errors"
	"sync"
)

// Task is one captured checkpoint waiting to be made durable by a SnapshotWorker.
type Task struct {
	ID uint64
	// Persist makes the capture durable (the slow write and fsync). It runs on the worker goroutine.
	Persist func() error
	// Ack reports the outcome to the coordinator. It is called only after Persist returned, with Persist's
	// error: an ok-ack implies the snapshot is on disk (ack-after-durable).
	Ack func(err error)
	// Release, if set, frees the capture when the task is dropped by CancelAndJoin without being persisted.
	Release func()
}

// ErrWorkerClosed is returned by Enqueue after DrainAndJoin or CancelAndJoin.
var ErrWorkerClosed = errors.New("checkpoint: snapshot worker closed")

// SnapshotWorker persists one subtask's captured checkpoints off the subtask goroutine, in capture order, and acks
// each only after its Persist returned. Capture is cheap and happens on the subtask goroutine at the barrier;
// the durable write is slow and happens here, so record processing runs ahead of the disk, by at most one
// checkpoint: the queue holds one captured-but-not-started task behind the one being persisted, and Enqueue
// blocks while it is full. That bounds memory and is the backpressure from a slow disk onto the dataflow.
type SnapshotWorker struct {
	mu     sync.Mutex
	queue  []Task // at most one: the slot token below guards admission
	closed workerState
	slot   chan struct{} // holds a token while the queue has room
	wake   chan struct{} // cap 1: queue or state changed
	stop   chan struct{} // closed by DrainAndJoin / CancelAndJoin: unblocks waiting Enqueues
	done   chan struct{} // closed when the goroutine exits
}

type workerState uint8

const (
	running workerState = iota
	draining
	cancelled
)

// NewSnapshotWorker starts the worker goroutine. End it with DrainAndJoin or CancelAndJoin.
func NewSnapshotWorker() *SnapshotWorker {
	w := &SnapshotWorker{
		slot: make(chan struct{}, 1),
		wake: make(chan struct{}, 1),
		stop: make(chan struct{}),
		done: make(chan struct{}),
	}
	w.slot <- struct{}{}
	go w.run()
	return w
}

// Enqueue hands a captured checkpoint to the worker. It blocks while a task is already waiting behind the one
// being persisted, until the worker starts the waiting one, ctx is done (the job was cancelled: it returns
// ctx.Err()) or the worker is closed (ErrWorkerClosed). A task Enqueue did not accept was neither persisted nor
// acked nor released: the caller still owns it.
func (w *SnapshotWorker) Enqueue(ctx context.Context, t Task) error {
	select {
	case <-w.slot:
	case <-w.stop:
		return ErrWorkerClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	w.mu.Lock()
	if w.closed != running {
		w.mu.Unlock()
		w.slot <- struct{}{}
		return ErrWorkerClosed
	}
	w.queue = append(w.queue, t)
	w.mu.Unlock()
	w.signal()
	return nil
}

// DrainAndJoin is the clean end of input: it persists and acks every task already enqueued, so a checkpoint the
// coordinator awaits still completes, then stops the worker and waits for it.
func (w *SnapshotWorker) DrainAndJoin() { w.close(draining) }

// CancelAndJoin is a cancel: tasks not yet started are dropped without an ack (and Released); an un-acked
// checkpoint simply never completes. It also cuts short a DrainAndJoin in progress on another goroutine. A task whose Persist is already running finishes, and its ack IS delivered:
// Persist returned, so the ack is true, and the coordinator ignores acks it no longer wants.
func (w *SnapshotWorker) CancelAndJoin() { w.close(cancelled) }

func (w *SnapshotWorker) close(s workerState) {
	w.mu.Lock()
	first := w.closed == running
	if first || s == cancelled { // a cancel may cut short a drain in progress, never the reverse
		w.closed = s
	}
	w.mu.Unlock()
	if first {
		close(w.stop)
	}
	w.signal()
	<-w.done
}

func (w *SnapshotWorker) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *SnapshotWorker) run() {
	defer close(w.done)
	for {
		w.mu.Lock()
		for len(w.queue) == 0 && w.closed == running {
			w.mu.Unlock()
			<-w.wake
			w.mu.Lock()
		}
		if w.closed == cancelled {
			dropped := w.queue
			w.queue = nil
			w.mu.Unlock()
			for _, t := range dropped {
				if t.Release != nil {
					t.Release()
				}
			}
			return
		}
		if len(w.queue) == 0 { // draining, backlog done
			w.mu.Unlock()
			return
		}
		t := w.queue[0]
		w.queue = w.queue[1:]
		w.mu.Unlock()
		w.slot <- struct{}{} // t started: the slot behind it is free again
		err := t.Persist()
		t.Ack(err) // only now: ack-after-durable
	}
}
