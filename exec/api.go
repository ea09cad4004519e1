package exec

import (
	"context"
	"log/slog"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clinksql/clinksql/state"
)

// TaskContext is what the runtime hands one subtask of an operator, source or sink at Open.
type TaskContext struct {
	Job         string
	Operator    string // the operator's id, unique in the job
	Subtask     int
	Parallelism int
	// KeyGroups is the range of key groups this subtask owns out of MaxKeyGroups.
	KeyGroups    state.KeyGroupRange
	MaxKeyGroups int
	// State is the subtask's checkpointed state, already restored from the job's last completed checkpoint when
	// there is one. Only the subtask's goroutine touches it; the runtime captures it at each barrier after
	// OnBarrier returns.
	State state.Backend
	// Restored is the id of the checkpoint State was restored from, 0 for a fresh start.
	Restored uint64
	Alloc    memory.Allocator
	FS       state.FS
	// IsCompleted reports whether checkpoint id has a durable COMPLETED marker: what a 2PC sink's recovery needs
	// to decide whether a staged file is committed or deleted.
	IsCompleted func(id uint64) bool
	Log         *slog.Logger
	// Errors counts bad values an operator turned into NULL instead of failing (DESIGN.md's data-error policy),
	// and Late the rows a window or interval operator dropped because the watermark had passed them. Both are
	// job-wide (shared by all subtasks and incarnations) and shown by SHOW JOBS.
	Errors *Counter
	Late   *Counter
	// Receipt is set for the subtasks of an InDoubtSink (nil otherwise). The sink calls it the instant the external
	// system acknowledged the commit of checkpoint id, before doing anything else: the runtime writes the commit
	// receipt <checkpoint dir>/receipts/<operator>/sub<K>-<id> durably (framed, fsync), with the watermark horizon
	// it recorded with the handle of id. Recovery takes a receipt as proof that id committed (no wire call), and
	// replay suppression drops the replayed rows of a receipted interval. It may be called from the goroutine
	// that runs Commit.
	Receipt func(id uint64) error
	// Clock is the job's processing-time clock (JobConfig.Clock): what PROCTIME() reads and what a
	// processing-time window assigns rows and fires by. Never nil in a running job.
	Clock ProcessingClock
}

// Emitter sends an operator's output downstream. Emit takes over the batch's reference; the runtime routes the rows
// through the output exchange (forward, hash, broadcast) and blocks while downstream channels are full, which is
// the backpressure.
type Emitter interface {
	Emit(b Batch) error
}

// Operator is one subtask's processing logic over Arrow batches. The runtime calls its methods from the subtask's
// goroutine only, in stream order:
//
//   - Open once, with state already restored;
//   - Process for each batch of logical input `input` (the index of the upstream edge the batch came through, so a
//     join tells left from right; the channels of one edge are merged in this index). Process owns b and must
//     release it;
//   - OnWatermark when the combined watermark (min over inputs, a finished input counting as MaxWatermark)
//     advances; timers and windows fire here. The runtime forwards the watermark after OnWatermark returns, so
//     output emitted here precedes it downstream;
//   - OnBarrier before the runtime captures State for checkpoint id: the operator writes what it keeps in memory
//     and has changed since the last barrier into State (the write-back cache). It must not emit. Whether the
//     checkpoint is aligned, unaligned or terminal is the runtime's business: the operator's duty is the same;
//   - Close once at the end, after the final OnWatermark(MaxWatermark) at end of input, or on cancel.
//
// An error from any method is a runtime failure of the job, which restarts it from its last completed checkpoint.
//
// An operator with nothing to do in OnWatermark embeds NoTimers; one that keeps no state and holds no resources
// embeds Stateless (OnBarrier and Close do nothing). Every implementation is pinned with
// var _ exec.Operator = (*op)(nil).
type Operator interface {
	Open(ctx *TaskContext) error
	Process(input int, b Batch, out Emitter) error
	OnWatermark(wm int64, out Emitter) error
	OnBarrier(id uint64) error
	Close() error
}

// NoTimers is embedded by an operator that fires nothing on the watermark: its OnWatermark does nothing, and the
// runtime forwards the watermark as it does after every OnWatermark.
type NoTimers struct{}

// OnWatermark does nothing.
func (NoTimers) OnWatermark(int64, Emitter) error { return nil }

// Stateless is embedded by an operator that keeps nothing across batches: no checkpointed state (OnBarrier does
// nothing: the runtime's capture of State finds nothing of it) and nothing to release (Close does nothing).
type Stateless struct{}

// OnBarrier does nothing.
func (Stateless) OnBarrier(uint64) error { return nil }

// Close does nothing.
func (Stateless) Close() error { return nil }

// Starter is implemented by operators that have output before any input: a global aggregate's row over no rows.
// The runtime calls Start once, right after Open (state restored) and before any input, barrier or watermark; it may
// emit. An operator whose restored state shows it emitted that output before must not emit it again.
type Starter interface {
	Start(out Emitter) error
}

// Unaligner is implemented by multi-input operators that cannot take an unaligned checkpoint (their in-flight
// records cannot be captured and replayed); unaligned barriers degrade to aligned at such an operator. Operators
// that do not implement it can unalign: the runtime captures in-flight records generically.
type Unaligner interface {
	CanUnalign() bool
}

// WatermarkHolder is implemented by operators that emit rows older than their input watermark (an interval
// join's outer rows, emitted when the watermark passes their bound): the runtime forwards OutputWatermark(wm)
// instead of wm, so those rows are not late downstream. OutputWatermark must be monotone and at most wm; it is not
// called for MinWatermark or MaxWatermark, which are forwarded as they are.
type WatermarkHolder interface {
	OutputWatermark(wm int64) int64
}

// SourceStatus says what Produce returned.
type SourceStatus uint8

const (
	// Produced: Batch holds rows (and WM the source's watermark after them).
	Produced SourceStatus = iota
	// Idle: nothing right now; the runtime calls again soon and, past the idle timeout, stops letting this source
	// hold the watermark back.
	Idle
	// Finished: the source is exhausted (a bounded source); Produce is not called again.
	Finished
)

// SourceResult is one call's output.
type SourceResult struct {
	Status SourceStatus
	Batch  Batch
	// WM is the source's watermark after this batch (a multi-split source returns the min over its splits).
	// MinWatermark when it has none yet. An Idle result may advance it too (a split that went idle no longer
	// holds it back); the runtime forwards it.
	WM int64
}

// Source produces batches for one subtask. Its methods run on the subtask's goroutine. The runtime injects
// barriers only between Produce calls: it calls SnapshotOffset, stages the bytes under the barrier's id and emits
// the barrier, so the offset recorded for checkpoint N is exactly the position after the last record before
// barrier N.
type Source interface {
	// RestoreOffset is called before Open with the bytes SnapshotOffset returned for the restored checkpoint.
	RestoreOffset(offset []byte) error
	Open(ctx *TaskContext) error
	Produce(ctx context.Context) (SourceResult, error)
	// SnapshotOffset returns the read position to resume from: everything produced so far is before it.
	SnapshotOffset() ([]byte, error)
	Close() error
}

// IdleWaiter is implemented by sources that know when data arrives (a stream log): after Produce returned Idle,
// the runtime waits on IdleWait's channel (or a barrier, or a long poll interval) instead of polling every
// millisecond.
type IdleWaiter interface {
	IdleWait() <-chan struct{}
}

// CheckpointOffsetter is implemented by sources that must know which checkpoint an offset belongs to (a source
// that acks or confirms on NotifyCheckpointComplete(id) what checkpoint id covered): the runtime calls
// SnapshotOffsetAt(id) instead of SnapshotOffset at barrier id. Ids are increasing; a checkpoint that never
// completes is followed by a higher one.
type CheckpointOffsetter interface {
	SnapshotOffsetAt(id uint64) ([]byte, error)
}

// CheckpointListener is implemented by sources whose consume is irreversible (a broker ack) and by anything else
// that must act once a checkpoint is globally durable or known aborted. Calls come from the coordinator's
// goroutine, not the subtask's.
type CheckpointListener interface {
	NotifyCheckpointComplete(id uint64)
	NotifyCheckpointAborted(id uint64)
}

// PublishChecker is implemented by sinks that can tell, before any Open, whether output of a checkpoint above
// after is published (visible to readers) for the operator of ctx, any subtask: a restore falls back from a
// damaged checkpoint to an older one only when no sink published anything the fallback would publish again.
// It returns the name of one published file, "" for none. A sink without it is taken to have published.
type PublishChecker interface {
	PublishedAfter(ctx *TaskContext, after uint64) (string, error)
}

// Verdict is what is known about a staged transaction after in-doubt resolution asked the external system.
type Verdict uint8

const (
	VerdictUnknown   Verdict = iota // could not tell (no answer, fenced without proof, ended without record)
	VerdictCommitted                // proven committed (by this call or before it)
	VerdictAborted                  // proven never to commit
	VerdictOpen                     // still open and never committed: the next Open's fence aborts it (Describe only)
)

func (v Verdict) String() string {
	switch v {
	case VerdictCommitted:
		return "committed"
	case VerdictAborted:
		return "aborted"
	case VerdictOpen:
		return "open"
	}
	return "unknown"
}

// InDoubtSink is implemented by a Sink whose Commit cannot be re-executed after a crash (Kafka: a new producer
// with the same transactional id aborts the open transaction). Its node must be marked with
// Node.WithCommitNotRecoverable (the planner does so from the connector's capability); the runtime then tracks
// confirmations, stores handles, resolves in-doubt checkpoints before restoring and suppresses replay of
// receipted intervals (checkpoint/doc.go, docs/checkpointing.md).
//
//   - Commit(id): commit every staged transaction with id <= id in order, calling TaskContext.Receipt after
//     each acknowledgement.
//   - PreCommit(id): flush all records of the open transaction (every produce acknowledged), stage it under id,
//     begin the next transaction lazily (on the next Write).
//   - Close: leave staged (barrier-sealed) transactions open, never abort them: a restart's in-doubt resolution
//     decides them.
//   - Open: fail with a clear error when the external system does not answer (never fence blindly). Sinks do not
//     read receipts or markers: the runtime consumes .unresolved markers before Open (through Describe).
type InDoubtSink interface {
	Sink
	// Handle returns the resume handle PreCommit(id) staged: what another process needs to commit that
	// transaction (Kafka: transactional id, producer id, epoch, and the partitions/offset ranges written). nil if
	// PreCommit(id) staged nothing (no rows). Called by the runtime on the subtask goroutine right after
	// PreCommit(id); the runtime stores it checksummed in that subtask's own checkpoint directory (never in any
	// other subtask's).
	Handle(id uint64) ([]byte, error)
}

// InDoubtResolver settles handles of a dead incarnation. The runtime gets it from the sink node (a sink instance
// that is never opened, like PublishChecker) before any subtask opens.
type InDoubtResolver interface {
	// ResolveCommit commits the transaction of handle with the dead producer's identity (Kafka: a wire-level
	// EndTxn(commit)), disambiguating a refusal (DescribeTransactions, then the partitions' control records), and
	// says what is known after. An error means transport failure (retryable); Unknown means the answers did not
	// prove anything.
	ResolveCommit(ctx context.Context, handle []byte) (Verdict, error)
	// Describe only looks, never commits or fences: used at Open for .unresolved markers. An error means no
	// broker answered: the runtime then refuses to open the sink (retry later), because a blind fence would erase
	// whether it committed.
	Describe(ctx context.Context, handle []byte) (Verdict, error)
}

// Sink is a two-phase-commit sink subtask.
//
//   - Open recovers staged work of earlier incarnations: it commits every staged transaction whose checkpoint
//     IsCompleted, and deletes the rest, including in-progress files.
//   - Write appends a batch to the in-progress transaction (subtask goroutine; takes over b's reference).
//   - PreCommit(id) is phase 1 at barrier id: seal the in-progress transaction durably under id (subtask
//     goroutine). Nothing is visible yet.
//   - Commit(id) is phase 2, after checkpoint id completed: make every staged transaction with an id <= id
//     visible. Abort(id) discards staged transaction id. Both are idempotent and may be called from another
//     goroutine than Write, concurrently with it.
//   - Close releases resources; it leaves staged transactions for the next Open to decide.
type Sink interface {
	Open(ctx *TaskContext) error
	Write(b Batch) error
	PreCommit(id uint64) error
	Commit(id uint64) error
	Abort(id uint64) error
	Close() error
}
