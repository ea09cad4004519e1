package streamlog

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clinksql/clinksql/exec"
)

// A Tail follows a materialized view's changelog for a subscriber (the engine's SUBSCRIBE): first the view's
// contents as of one checkpoint of its writing job (the snapshot), then the changes of each later checkpoint, in
// order, each stamped with the checkpoint that made it visible. It reads the published segments at its own pace,
// like any reader of the log: the job writing the log never waits for it.
//
// Time is the writing job's checkpoint id. A job's segment names carry the checkpoint they were staged at
// (seg-<seq>-<job>-<op>-<subtask>-<checkpoint>), and commits run in checkpoint order, so the segments of
// checkpoint N (one per sink subtask that had rows) are all published once the job's commit broadcast of N
// ended; the engine says so with Advance(N) (exec.JobConfig.AfterCommit). A Tail hands out the changes of N only
// then, so every time it reports is a consistent state of the view. The frontier starts, at Open, at the highest
// checkpoint a segment names (an earlier process committed those). A segment published late for a checkpoint at
// or below a time already reported (one that sink recovery committed after a crash) gets the last reported time
// instead: times never go back.
//
// A Tail is used by one goroutine, except Lag, which any goroutine may call.
type Tail struct {
	l     *Log
	alloc memory.Allocator

	snapshot   bool   // the snapshot is still to come
	withRows   bool   // the snapshot's rows are handed out (SNAPSHOT = false skips them)
	seq        uint64 // the next segment to read
	time       uint64 // the time of the last changes handed out
	progressed uint64 // the last progress time handed out
	queue      []TailEvent
	// lagFrom is the first segment whose changes have not all been handed out (Lag counts from it).
	lagFrom atomic.Uint64
	closed  bool
}

// TailEvent is what a Tail hands out: changes at a time, or progress.
type TailEvent struct {
	Time uint64
	// Progress: every later event has a time at or above Time (Batch is empty).
	Progress bool
	// Snapshot marks the rows of the snapshot (inserts: the view's rows at Time).
	Snapshot bool
	// Batch holds changes at Time with their row kinds as the log has them; the receiver releases it.
	Batch exec.Batch
}

// ErrDropped is Tail.Next's error once the log was dropped (DROP of its view).
var ErrDropped = errors.New("the log was dropped")

// NewTail starts a subscriber's reader of l. With snapshot false, the snapshot's rows are skipped: the first
// changes are those after the frontier at the first Next.
func (l *Log) NewTail(alloc memory.Allocator, snapshot bool) *Tail {
	if alloc == nil {
		alloc = memory.DefaultAllocator
	}
	return &Tail{l: l, alloc: alloc, snapshot: true, withRows: snapshot, seq: 1} // lagFrom 0: snapshot pending
}

// Advance records that the writing job's commit broadcast of checkpoint id ended with every sink subtask
// committed: the log holds every segment of every checkpoint up to id. It wakes the subscribers.
func (l *Log) Advance(id uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if id > l.frontier {
		l.frontier = id
		l.wakeLocked()
	}
}

// Frontier returns the highest checkpoint the log is complete up to (Advance).
func (l *Log) Frontier() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.frontier
}

// Drop marks the log as dropped (its object is gone, its files are about to be): subscribers end with ErrDropped.
func (l *Log) Drop() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.dropped {
		l.dropped = true
		l.wakeLocked()
	}
}

// Notify returns a channel closed when a segment arrives, the frontier advances or the log is dropped.
func (l *Log) Notify() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.notify
}

func (l *Log) wakeLocked() {
	if l.notify == nil { // a Log built without Open (tests)
		l.notify = make(chan struct{})
	}
	close(l.notify)
	l.notify = make(chan struct{})
}

// published returns the name of segment seq if it is published, and whether the log was dropped.
func (l *Log) published(seq uint64) (name string, ok, dropped bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if seq < l.next {
		name, ok = l.names[seq]
	}
	return name, ok, l.dropped
}

// segmentCheckpoint is the checkpoint in a segment's name that a job's sink staged it at; 0 for a segment of
// INSERT ... VALUES (Append), which belongs to no checkpoint.
func segmentCheckpoint(name string) uint64 {
	txn, ok := segmentTxnName(name)
	if !ok || txn == "" {
		return 0
	}
	txn = strings.TrimSuffix(txn, ".arrow")
	i := strings.LastIndexByte(txn, '-')
	if i < 0 {
		return 0
	}
	n, err := strconv.ParseUint(txn[i+1:], 10, 64)
	if err != nil {
		return 0
	}
	return n
}

// BytesFrom returns the size of the published segments from seq on: how far a reader at seq is behind.
func (l *Log) BytesFrom(seq uint64) int64 {
	l.mu.Lock()
	next := l.next
	l.mu.Unlock()
	if seq >= next {
		return 0
	}
	l.sizeMu.Lock()
	defer l.sizeMu.Unlock()
	for s := uint64(len(l.sizes)) + 1; s < next; s++ {
		name, ok, _ := l.published(s)
		var n int64
		if ok {
			if fi, err := l.fsys.Stat(filepath.Join(l.dir, name)); err == nil {
				n = fi.Size()
			}
		}
		l.sizes = append(l.sizes, n)
	}
	var total int64
	for s := seq; s < next; s++ {
		total += l.sizes[s-1]
	}
	return total
}

// Wait returns a channel closed when Next may have something new. Take it before the Next that returned
// nothing, so that nothing published in between is missed.
func (t *Tail) Wait() <-chan struct{} { return t.l.Notify() }

// Lag returns the size of the log's segments whose changes the Tail has not handed out yet (0 before the
// snapshot: the snapshot is the view's contents, not a backlog).
func (t *Tail) Lag() int64 {
	if t.snapshotPending() {
		return 0
	}
	return t.l.BytesFrom(t.lagFrom.Load())
}

func (t *Tail) snapshotPending() bool { return t.lagFrom.Load() == 0 }

// Next returns the next event if one is available now (ok false: none yet, wait on Wait). Its errors: ErrDropped,
// and a segment that cannot be read (missing or damaged; Tail is then at that segment, which it names).
func (t *Tail) Next() (ev TailEvent, ok bool, err error) {
	if t.closed {
		return TailEvent{}, false, errors.New("tail closed")
	}
	for {
		if len(t.queue) > 0 {
			ev = t.queue[0]
			t.queue[0] = TailEvent{}
			t.queue = t.queue[1:]
			if len(t.queue) == 0 {
				t.queue = nil
				t.lagFrom.Store(t.seq)
			}
			return ev, true, nil
		}
		if t.snapshot {
			if err := t.takeSnapshot(); err != nil {
				return TailEvent{}, false, err
			}
			continue
		}
		// The frontier first: every segment of a checkpoint up to it is published already, so when segment seq is
		// not, everything up to the frontier was handed out.
		frontier := t.l.Frontier()
		name, published, dropped := t.l.published(t.seq)
		if dropped {
			return TailEvent{}, false, ErrDropped
		}
		if published {
			if c := segmentCheckpoint(name); c <= frontier {
				batches, err := t.l.readSegment(name, t.alloc)
				if err != nil {
					return TailEvent{}, false, fmt.Errorf("segment %d: %w", t.seq, err)
				}
				at := max(c, t.time, t.progressed)
				for _, b := range batches {
					if b.Rows() == 0 {
						b.Release()
						continue
					}
					t.queue = append(t.queue, TailEvent{Time: at, Batch: b})
				}
				t.time = at
				t.seq++
				if len(t.queue) == 0 {
					t.lagFrom.Store(t.seq)
				}
				continue
			}
		}
		if frontier+1 > t.progressed {
			t.progressed = frontier + 1
			return TailEvent{Time: t.progressed, Progress: true}, true, nil
		}
		return TailEvent{}, false, nil
	}
}

// takeSnapshot reads every segment of the checkpoints up to the frontier and folds them into the view's rows at
// the frontier, followed by progress to the frontier + 1.
func (t *Tail) takeSnapshot() error {
	frontier := t.l.Frontier()
	var all []exec.Batch
	seq := uint64(1)
	for {
		name, ok, dropped := t.l.published(seq)
		if dropped {
			releaseBatches(all)
			return ErrDropped
		}
		if !ok || segmentCheckpoint(name) > frontier {
			break
		}
		if t.withRows {
			batches, err := t.l.readSegment(name, t.alloc)
			if err != nil {
				releaseBatches(all)
				return fmt.Errorf("segment %d: %w", seq, err)
			}
			all = append(all, batches...)
		}
		seq++
	}
	rows, err := consolidate(t.alloc, all)
	releaseBatches(all)
	if err != nil {
		return err
	}
	for _, b := range rows {
		t.queue = append(t.queue, TailEvent{Time: frontier, Snapshot: true, Batch: b})
	}
	t.snapshot = false
	t.seq, t.time, t.progressed = seq, frontier, frontier+1
	t.queue = append(t.queue, TailEvent{Time: frontier + 1, Progress: true})
	t.lagFrom.Store(seq)
	return nil
}

// Close releases what the Tail holds.
func (t *Tail) Close() {
	t.closed = true
	for _, ev := range t.queue {
		ev.Batch.Release()
	}
	t.queue = nil
}
