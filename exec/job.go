package exec

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clinksql/clinksql/checkpoint"
	"github.com/clinksql/clinksql/state"
)

// JobConfig configures a job.
type JobConfig struct {
	// Name is the job's id; it names its files (sinks put it in every file name).
	Name string
	// Dir is the job's directory, <data>/jobs/<job>: checkpoints in Dir/checkpoints, Pebble stores in Dir/state.
	Dir string
	FS  state.FS // nil: state.OS
	// Alloc is the Arrow allocator of every subtask; nil: memory.DefaultAllocator.
	Alloc memory.Allocator
	// Logger receives the job's lifecycle (started, restarted with the cause, finished, failed, stopped) at INFO
	// and WARN, and its checkpoint failures; the job adds its own "job" attribute, so it must not carry one.
	Logger *slog.Logger

	CheckpointInterval time.Duration // 0: no periodic checkpoints
	CheckpointTimeout  time.Duration // 0: 10 minutes
	CheckpointMode     checkpoint.Mode
	// Adaptive, when set, lets measured channel pressure choose the mode of each checkpoint.
	Adaptive *checkpoint.AdaptiveConfig
	Retain   int // completed checkpoints kept; 0: 2
	// HistorySize is how many checkpoint records the job's history keeps (Checkpoints); 0: 100.
	HistorySize int

	ChannelCapacity int // elements per channel; 0: 16

	// StateCacheBytes is each keyed-state store's in-memory budget (state.Options.CacheBytes); 0: the state
	// package's default (state.DefaultCacheBytes, sized from the machine).
	StateCacheBytes int64

	// LatencyMarkerInterval, when positive, has every source subtask emit a latency marker after a batch once
	// this long has passed since its last one; the sinks record the markers' age (latency.go, Job.SinkLatency,
	// clinksql_sink_latency_seconds). 0: no markers.
	LatencyMarkerInterval time.Duration
	// WatermarkMaxDrift, when positive, holds an aligned source subtask (Node.AlignWatermark) whose watermark is
	// more than this ahead of the slowest aligned one until that one catches up (align.go). 0: no alignment.
	WatermarkMaxDrift time.Duration
	// Now is the clock latency markers are stamped and timed with; nil: time.Now. Tests pass a fake one.
	Now func() time.Time
	// Clock is the processing-time clock (proctime.go): what PROCTIME() reads and processing-time windows fire
	// by, through TaskContext.Clock and the operators' ProcessingTimer. nil: the wall clock. Tests pass a
	// ManualClock.
	Clock ProcessingClock

	// Committed, when set, is called once per Job with a checkpoint it completed (or restored from), before any
	// sink commits output of that checkpoint: the caller records durably that the job has published, and passes
	// the id back as Checkpointed when it runs the job again. An error fails the incarnation.
	Committed func(id uint64) error
	// Checkpointed is a checkpoint an earlier run of the job completed (Committed's record), 0 for none. A job
	// with one must restore from a completed checkpoint: finding none (its checkpoint directory lost or damaged)
	// fails it at once, since starting from scratch would publish its output again.
	Checkpointed uint64
	// AfterCommit, when set, is called with a checkpoint once every sink subtask committed it without error (at
	// the end of its commit broadcast, on the coordinator's goroutine, in checkpoint order): what the sinks
	// published for it is all visible. It must not block. A materialized view's subscribers (engine's SUBSCRIBE)
	// learn from it that the view's changelog is complete up to that checkpoint.
	AfterCommit func(id uint64)

	RestartBudget  int           // restarts allowed within RestartWindow; 0: 10
	RestartWindow  time.Duration // 0: 10 minutes
	RestartBackoff time.Duration // first backoff, doubled per restart up to 5 s; 0: 100 ms

	// In-doubt resolution (jobs with a sink whose commit is not recoverable, Node.CommitNotRecoverable) holds the
	// deploy while it runs. Past InDoubtDeadline it is cancelled and the job restores from the newest confirmed
	// checkpoint; a walk still running InDoubtGrace after that is hung and fails the job. Transport errors are
	// retried after InDoubtBackoff, doubled per retry up to 5 s. Defaults: 1 minute, 30 s, 100 ms.
	InDoubtDeadline time.Duration
	InDoubtGrace    time.Duration
	InDoubtBackoff  time.Duration
}

func (c *JobConfig) defaults() {
	if c.FS == nil {
		c.FS = state.OS
	}
	if c.Alloc == nil {
		c.Alloc = memory.DefaultAllocator
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.CheckpointTimeout == 0 {
		c.CheckpointTimeout = 10 * time.Minute
	}
	if c.Retain == 0 {
		c.Retain = 2
	}
	if c.HistorySize == 0 {
		c.HistorySize = checkpoint.DefaultHistorySize
	}
	if c.ChannelCapacity == 0 {
		c.ChannelCapacity = 16
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Clock == nil {
		c.Clock = WallClock{}
	}
	if c.RestartBudget == 0 {
		c.RestartBudget = 10
	}
	if c.RestartWindow == 0 {
		c.RestartWindow = 10 * time.Minute
	}
	if c.RestartBackoff == 0 {
		c.RestartBackoff = 100 * time.Millisecond
	}
	if c.InDoubtDeadline == 0 {
		c.InDoubtDeadline = time.Minute
	}
	if c.InDoubtGrace == 0 {
		c.InDoubtGrace = 30 * time.Second
	}
	if c.InDoubtBackoff == 0 {
		c.InDoubtBackoff = 100 * time.Millisecond
	}
}

// JobState is where a job is in its life.
type JobState uint8

const (
	JobCreated JobState = iota
	JobRunning
	JobRestarting
	JobFinished
	JobFailed
	JobCancelled
)

func (s JobState) String() string {
	return [...]string{"CREATED", "RUNNING", "RESTARTING", "FINISHED", "FAILED", "CANCELLED"}[s]
}

// JobStatus is a point-in-time view of a job.
type JobStatus struct {
	State         JobState
	LastCompleted uint64 // last completed checkpoint, 0 if none
	Restored      uint64 // the checkpoint the current (or last) incarnation restored from, 0 if none
	// StartedAt is when the job was first deployed in this data directory (persisted with its checkpoint
	// history), zero if it never started.
	StartedAt time.Time
	// Restarts is the job's total of restarts, across process restarts (persisted); RestartsByCause splits it by
	// cause (RestartFailure, RestartCheckpoint, RestartDeploy).
	Restarts        int
	RestartsByCause map[string]int64
	// Job totals across restarts (persisted): checkpoints completed, and failed (those a stop or a rewind
	// discarded, outcome ABORTED, are in neither: see Checkpoints); adaptive mode flips.
	CheckpointsCompleted, CheckpointsFailed, AdaptiveSwitches int64
	// Mode is the mode the next barrier gets (adaptive: the current decision).
	Mode checkpoint.Mode
	// Watermark is the min input watermark over the sink subtasks, MinWatermark if none.
	Watermark int64
	// Err is the last runtime failure; FailedOperator names the operator subtask that raised it.
	Err            error
	FailedOperator string
	// The counts below count each row once across restarts: a restart rewinds them to the restored checkpoint's
	// (see keyCounts).
	RowsIn    int64 // rows produced by sources
	RowsOut   int64 // rows written to sinks
	Late      int64 // rows dropped as late (behind the watermark)
	BadValues int64 // bad values turned into NULL (errors.mode = 'null')
	// Suppressed counts replayed rows a sink whose commit is not recoverable did not write again because a commit
	// receipt shows they are published (replay suppression); it is not rewound by restarts.
	Suppressed int64
	AlignWait  time.Duration
}

// Job runs a graph: it deploys one incarnation after another, each restored from the last completed checkpoint,
// until the input ends, the job is cancelled, or failures exhaust the restart budget.
type Job struct {
	g     *Graph
	cfg   JobConfig
	cpDir string

	mu       sync.Mutex
	status   JobStatus
	inc      *incarnation
	restarts []time.Time
	cancel   context.CancelFunc
	done     chan struct{}
	// recorded is set once Committed succeeded.
	recorded atomic.Bool
	// incarnations counts the deploys of this Job (the log tells a start from a restart by it).
	incarnations int

	stats   jobStats
	subs    [][]*subStats // per node index, per subtask
	history *checkpoint.History
	metrics *jobMetrics
}

type jobStats struct {
	rowsIn, rowsOut, alignWait, late, errors, suppressed Counter
}

// NewJob validates the graph and prepares a job; Start runs it.
func NewJob(g *Graph, cfg JobConfig) (*Job, error) {
	if err := g.Validate(); err != nil {
		return nil, err
	}
	if cfg.Name == "" || cfg.Dir == "" {
		return nil, errors.New("job: Name and Dir are required")
	}
	cfg.defaults()
	cfg.Logger = cfg.Logger.With("job", cfg.Name) // once: every line of the job, its coordinator and subtasks
	j := &Job{g: g, cfg: cfg, cpDir: filepath.Join(cfg.Dir, "checkpoints"), done: make(chan struct{})}
	h, err := checkpoint.OpenHistory(cfg.FS, j.cpDir, cfg.HistorySize)
	if err != nil {
		return nil, err
	}
	j.history = h
	j.subs = newSubStats(g, &j.stats)
	j.metrics = newJobMetrics(cfg.Name)
	return j, nil
}

// CheckpointDir is where the job's checkpoints and COMPLETED markers live.
func (j *Job) CheckpointDir() string { return j.cpDir }

// Start runs the job in the background until it finishes, fails or ctx is cancelled.
func (j *Job) Start(ctx context.Context) {
	ctx, cancel := context.WithCancel(ctx)
	j.mu.Lock()
	j.cancel = cancel
	j.status.State = JobRunning
	j.mu.Unlock()
	if j.history.Totals().StartedAt.IsZero() {
		now := time.Now().UTC()
		if err := j.history.Update(func(t *checkpoint.Totals) { t.StartedAt = now }); err != nil {
			j.cfg.Logger.Warn("checkpoint history: could not persist the start time", "err", err)
		}
	}
	go j.sampleLoop()
	go func() {
		defer close(j.done)
		defer cancel()
		j.run(ctx)
	}()
}

// Wait blocks until the job ended (or ctx is done) and returns its final error: nil when it finished.
func (j *Job) Wait(ctx context.Context) error {
	select {
	case <-j.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	st := j.Status()
	switch st.State {
	case JobFinished:
		return nil
	case JobCancelled:
		return context.Canceled
	}
	return fmt.Errorf("job %s failed in %s: %w", j.cfg.Name, st.FailedOperator, st.Err)
}

// Done is closed when the job ended.
func (j *Job) Done() <-chan struct{} { return j.done }

// Cancel stops the job at once: nothing more is checkpointed; the next run resumes from the last completed
// checkpoint.
func (j *Job) Cancel() {
	j.mu.Lock()
	cancel := j.cancel
	j.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	<-j.done
}

// Status returns the job's current status.
func (j *Job) Status() JobStatus {
	j.mu.Lock()
	st := j.status
	j.mu.Unlock()
	st.RowsIn = j.stats.rowsIn.Load()
	st.RowsOut = j.stats.rowsOut.Load()
	st.AlignWait = time.Duration(j.stats.alignWait.Load())
	st.Late = j.stats.late.Load()
	st.BadValues = j.stats.errors.Load()
	st.Suppressed = j.stats.suppressed.Load()
	t := j.history.Totals()
	st.StartedAt = t.StartedAt
	st.Restarts = int(t.RestartCount())
	st.RestartsByCause = t.Restarts
	if st.RestartsByCause == nil {
		st.RestartsByCause = map[string]int64{}
	}
	st.CheckpointsCompleted = t.Outcomes(checkpoint.Completed)
	st.CheckpointsFailed = t.Outcomes(checkpoint.Failed)
	st.AdaptiveSwitches = t.AdaptiveSwitches
	st.Mode = j.cfg.CheckpointMode
	if inc := j.current(); inc != nil && inc.adaptive != nil {
		st.Mode = inc.adaptive.Mode()
	}
	st.Watermark = j.sinkWatermark()
	return st
}

// Checkpoint triggers a checkpoint now and waits until it completed and every sink committed it.
func (j *Job) Checkpoint(ctx context.Context) (uint64, error) {
	id, err := j.TriggerCheckpoint()
	if err != nil {
		return 0, err
	}
	return id, j.WaitCheckpoint(ctx, id)
}

// Flush takes an aligned checkpoint and waits until it completed and every sink committed it: everything the
// sources emitted before the barrier has been processed by every operator and committed by every sink (an
// unaligned barrier would overtake records and leave them for the next checkpoint). SQL's FLUSH.
func (j *Job) Flush(ctx context.Context) (uint64, error) {
	for {
		inc := j.current()
		if inc != nil {
			b, err := inc.coord.TriggerMode(checkpoint.Aligned)
			if err == nil {
				if err = inc.coord.WaitCompleted(ctx, b.ID); err == nil {
					return b.ID, nil
				}
			}
			if ctx.Err() != nil {
				return 0, ctx.Err()
			}
			// Refused or failed: this incarnation is ending (a restart after a failure, or the end of a bounded
			// job). Flush the next one, if there is one.
		}
		for j.current() == inc {
			select {
			case <-j.done:
				return 0, errJobNotRunning
			case <-ctx.Done():
				return 0, ctx.Err()
			case <-time.After(time.Millisecond):
			}
		}
	}
}

// TriggerCheckpoint starts a checkpoint and returns its id once its barrier was handed to every source.
func (j *Job) TriggerCheckpoint() (uint64, error) {
	inc := j.current()
	if inc == nil {
		return 0, errJobNotRunning
	}
	b, err := inc.coord.Trigger()
	return b.ID, err
}

// WaitCheckpoint waits until checkpoint id completed and every sink committed it; an error if it failed or the
// job restarted first.
func (j *Job) WaitCheckpoint(ctx context.Context, id uint64) error {
	inc := j.current()
	if inc == nil {
		return errJobNotRunning
	}
	return inc.coord.WaitCompleted(ctx, id)
}

var errJobNotRunning = errors.New("job is not running")

// Permanent is implemented by errors that a restart cannot cure (a data error the query must fail on):
// the job fails instead of restarting.
type Permanent interface {
	Permanent() bool
}

func isPermanent(err error) bool {
	var p Permanent
	return errors.As(err, &p) && p.Permanent()
}

// AdaptiveSwitches counts the adaptive mode's flips in the current incarnation (0 when the job is not adaptive).
func (j *Job) AdaptiveSwitches() uint64 {
	inc := j.current()
	if inc == nil || inc.adaptive == nil {
		return 0
	}
	return inc.adaptive.Switches()
}

// CheckpointDurations returns the trigger-to-completion times of the current incarnation's recent checkpoints,
// oldest first.
func (j *Job) CheckpointDurations() []time.Duration {
	inc := j.current()
	if inc == nil {
		return nil
	}
	return inc.coord.Durations()
}

func (j *Job) current() *incarnation {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.inc
}

// Stop takes an aligned checkpoint, waits for it to commit, then cancels the job: a graceful stop that the next
// run resumes from exactly. A job still deploying or restarting is waited for; a job that is finishing by itself
// (its final checkpoint under way) is left to finish; a job that already ended is only cancelled.
func (j *Job) Stop(ctx context.Context) error {
	_, err := j.Flush(ctx)
	if errors.Is(err, errJobNotRunning) {
		err = nil // it ended meanwhile: nothing left to checkpoint
	}
	j.Cancel()
	return err
}

// Pressure is the max fill level (len/cap) over the current incarnation's channels: the adaptive mode's signal.
func (j *Job) Pressure() float64 {
	inc := j.current()
	if inc == nil {
		return 0
	}
	return inc.pressure()
}

func (j *Job) setState(s JobState, err error, op string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.status.State = s
	if err != nil {
		j.status.Err, j.status.FailedOperator = err, op
	}
}

func (j *Job) run(ctx context.Context) {
	log := j.cfg.Logger
	backoff := j.cfg.RestartBackoff
	for {
		finished, op, err := j.runIncarnation(ctx)
		switch {
		case finished:
			j.setState(JobFinished, nil, "")
			st := j.Status()
			log.Info("job finished", "last_checkpoint", st.LastCompleted, "rows_in", st.RowsIn, "rows_out", st.RowsOut)
			return
		case ctx.Err() != nil:
			j.setState(JobCancelled, nil, "")
			log.Info("job stopped", "last_checkpoint", j.Status().LastCompleted)
			return
		}
		now := time.Now()
		j.mu.Lock()
		kept := j.restarts[:0]
		for _, t := range j.restarts {
			if now.Sub(t) < j.cfg.RestartWindow {
				kept = append(kept, t)
			}
		}
		j.restarts = kept
		// A permanent failure (a bad value with errors.mode = 'fail') would fail the same way after every restore:
		// the job fails at once.
		exhausted := len(j.restarts) >= j.cfg.RestartBudget || isPermanent(err)
		if !exhausted {
			j.restarts = append(j.restarts, now)
		}
		j.mu.Unlock()
		if !exhausted {
			cause := restartCause(op)
			if err := j.history.Update(func(t *checkpoint.Totals) {
				if t.Restarts == nil {
					t.Restarts = map[string]int64{}
				}
				t.Restarts[cause]++
			}); err != nil {
				log.Warn("checkpoint history: could not persist the restart count", "err", err)
			}
		}
		if exhausted {
			// WARN, not ERROR: the job's failure is its users' to fix (SHOW JOBS, ALTER JOB RESUME), not the
			// server's malfunction.
			cause := "an error a restart cannot cure"
			if !isPermanent(err) {
				cause = fmt.Sprintf("restart budget exhausted (%d restarts within %s)", j.cfg.RestartBudget, j.cfg.RestartWindow)
			}
			log.Warn("job failed", "operator", op, "err", err, "cause", cause)
			j.setState(JobFailed, err, op)
			return
		}
		log.Warn("job failure -> whole-job restart from the last completed checkpoint", "operator", op, "err", err, "backoff", backoff)
		j.setState(JobRestarting, err, op)
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			j.setState(JobCancelled, nil, "")
			return
		}
		backoff = min(2*backoff, 5*time.Second)
		j.setState(JobRunning, nil, "")
	}
}

// incarnation is one deployment of the graph, from a restore to its end.
type incarnation struct {
	job      *Job
	ctx      context.Context
	cancel   context.CancelFunc
	coord    *checkpoint.Coordinator
	adaptive *checkpoint.AdaptivePolicy
	cpDir    string
	fs       state.FS
	stats    *jobStats
	restored uint64

	subtasks    []*subtask
	sinks       []sinkRef
	listeners   []CheckpointListener
	chans       []*channel
	sourcesLeft atomic.Int64
	allFinished chan struct{}

	// deferredClose: opened sinks of in-doubt nodes, closed once the coordinator drained (closeInDoubtSinks).
	deferredMu    sync.Mutex
	deferredClose []sinkRef

	failMu  sync.Mutex
	failErr error
	failOp  string
}

// fail records the first runtime failure and tears the incarnation down.
func (inc *incarnation) fail(op string, err error) {
	inc.failMu.Lock()
	defer inc.failMu.Unlock()
	if inc.failErr == nil {
		inc.failErr, inc.failOp = err, op
		inc.cancel()
	}
}

func (inc *incarnation) failure() (op string, err error) {
	inc.failMu.Lock()
	defer inc.failMu.Unlock()
	return inc.failOp, inc.failErr
}

func (inc *incarnation) sourceFinished() {
	if inc.sourcesLeft.Add(-1) == 0 {
		close(inc.allFinished)
	}
}

func (inc *incarnation) pressure() float64 {
	p := 0.0
	for _, ch := range inc.chans {
		if f := ch.fill(); f > p {
			p = f
		}
	}
	return p
}

// runIncarnation deploys the graph restored from the last completed checkpoint and runs it to its end.
func (j *Job) runIncarnation(parent context.Context) (finished bool, op string, err error) {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	inc := &incarnation{job: j, ctx: ctx, cancel: cancel, cpDir: j.cpDir, fs: j.cfg.FS, stats: &j.stats, allFinished: make(chan struct{})}
	// Counted once: every incarnation starts from the restored checkpoint's counts, which its subtasks add back
	// as they restore (keyCounts); what a failed incarnation did past it is replayed.
	j.stats.rowsIn.Store(0)
	j.stats.rowsOut.Store(0)
	j.stats.late.Store(0)
	j.stats.errors.Store(0)
	j.rewindSubStats()
	if err := j.cfg.FS.MkdirAll(j.cpDir); err != nil {
		return false, "deploy", err
	}
	confirmers := j.confirmers()
	if len(confirmers) > 0 {
		// Before the restore point is chosen, and holding the deploy: nothing opens (and fences) a sink while
		// the walk settles the transactions of the completed-but-unconfirmed checkpoints.
		if err := j.resolveInDoubt(ctx); err != nil {
			return false, "in-doubt resolution", err
		}
	}
	restored, err := j.restorePoint()
	if err != nil {
		return false, "deploy", err
	}
	ok := restored > 0
	if !ok && j.cfg.Checkpointed > 0 && !j.fellBackPastAll() {
		return false, "deploy", state.Corrupt(j.cpDir, nil, "job %s completed checkpoint %d, but no COMPLETED marker "+
			"is left: its checkpoints are missing, and starting over would publish its output a second time", j.cfg.Name, j.cfg.Checkpointed)
	}
	if ok {
		inc.restored = restored
		// A sink's recovery may commit output of the restore point: the record goes first.
		if err := j.recordCommitted(restored); err != nil {
			return false, "deploy", err
		}
	}
	coord, err := checkpoint.NewCoordinator(checkpoint.Config{
		Dir:         j.cpDir,
		FS:          j.cfg.FS,
		DefaultMode: j.cfg.CheckpointMode,
		Interval:    j.cfg.CheckpointInterval,
		Timeout:     j.cfg.CheckpointTimeout,
		Retain:      j.cfg.Retain,
		Logger:      j.cfg.Logger,
		History:     j.history,
		Confirmers:  confirmers,
		OnComplete:  inc.onComplete,
		OnAbort:     inc.onAbort,
		OnFailure: func(id uint64, err error) {
			inc.fail("checkpoint", fmt.Errorf("checkpoint %d failed: %w", id, err))
		},
	})
	if err != nil {
		return false, "deploy", err
	}
	inc.coord = coord
	if j.cfg.Adaptive != nil {
		inc.adaptive = coord.EnableAdaptive(inc.pressure, *j.cfg.Adaptive)
	}
	run, err := inc.deploy(j.g, j.cfg)
	if err != nil {
		for _, s := range inc.subtasks {
			s.finish(false)
		}
		inc.closeInDoubtSinks()
		return false, "deploy", err
	}
	j.mu.Lock()
	j.inc = inc
	j.status.LastCompleted = inc.restored
	j.status.Restored = inc.restored
	j.incarnations++
	first := j.incarnations == 1
	j.mu.Unlock()
	if first {
		j.cfg.Logger.Info("job started", "restored_checkpoint", inc.restored)
	} else {
		j.cfg.Logger.Info("job restarted", "restored_checkpoint", inc.restored, "restarts", j.history.Totals().RestartCount())
	}
	defer func() {
		j.mu.Lock()
		j.inc = nil
		j.mu.Unlock()
		for _, s := range inc.subtasks {
			s.st.setProgress(nil, nil) // closed: their lag is unknown until the next deploy
		}
	}()

	var wg sync.WaitGroup
	for _, r := range run {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r()
		}()
	}
	coord.Start(ctx)
	finalDone := make(chan struct{})
	go func() {
		select {
		case <-inc.allFinished:
		case <-ctx.Done():
			return
		}
		// End of input everywhere: one final coordinated checkpoint; the job is finished only once its sinks
		// committed the tail (a crash before that replays the tail, never duplicates it).
		b, err := coord.TriggerFinal()
		if err != nil {
			inc.fail("checkpoint", err)
			return
		}
		if err := coord.WaitCompleted(ctx, b.ID); err != nil {
			inc.fail("checkpoint", fmt.Errorf("final checkpoint %d: %w", b.ID, err))
			return
		}
		close(finalDone)
	}()
	select {
	case <-finalDone:
		wg.Wait()
		coord.Stop()
		coord.Drain()
		inc.closeInDoubtSinks()
		inc.releaseChannels()
		op, err := inc.failure()
		return err == nil, op, err
	case <-ctx.Done():
	}
	// Before the participants go: no checkpoint may complete while the job is torn down (the rewind floor).
	coord.Stop()
	wg.Wait()
	coord.Drain()
	inc.closeInDoubtSinks()
	inc.releaseChannels()
	op, err = inc.failure()
	return false, op, err
}

// releaseChannels drops the batches left in the channels of a torn-down incarnation (every runner has stopped,
// so nothing sends or receives any more), then the buffers their part pools hold.
func (inc *incarnation) releaseChannels() {
	for _, ch := range inc.chans {
		for {
			select {
			case e := <-ch.c:
				if e.Kind == KindBatch {
					e.Batch.Release()
				}
				continue
			default:
			}
			break
		}
		if ch.parts != nil {
			ch.parts.drain()
		}
	}
}

// restorePoint picks the checkpoint to restore from, 0 for none: the newest completed one if it verifies
// (marker, every participant's snapshot, in-flight logs). If it is damaged, the newest older retained checkpoint
// that verifies, but only when no sink published output of a checkpoint after that one (restoring it would
// publish that output again): then the newer markers are abandoned. Otherwise the damage is the error, with why
// the job cannot fall back.
//
// A job that tracks confirmations restores only from confirmed checkpoints (in-doubt resolution ran first).
func (j *Job) restorePoint() (uint64, error) {
	list := checkpoint.CompletedIDs
	if len(j.confirmers()) > 0 {
		list = checkpoint.ConfirmedIDs
	}
	ids, err := list(j.cfg.FS, j.cpDir)
	if err != nil || len(ids) == 0 {
		return 0, err
	}
	latest := ids[len(ids)-1]
	verr := j.verifyCheckpoint(latest)
	if verr == nil {
		return latest, nil
	}
	if _, ok := state.IsCorrupt(verr); !ok {
		return 0, verr
	}
	var older uint64
	for i := len(ids) - 2; i >= 0 && older == 0; i-- {
		if j.verifyCheckpoint(ids[i]) == nil {
			older = ids[i]
		}
	}
	if older == 0 {
		return 0, fmt.Errorf("checkpoint %d is damaged and no older retained checkpoint verifies: %w", latest, verr)
	}
	if err := j.refuseFallbackIfPublished(older, latest, "is damaged", verr, false); err != nil {
		return 0, err
	}
	if err := checkpoint.Abandon(j.cfg.FS, j.cpDir, ids[slices.Index(ids, older)+1:]); err != nil {
		return 0, err
	}
	j.cfg.Logger.Warn("damaged checkpoint: falling back to an older one (no sink published after it)",
		"damaged", latest, "restored", older, "err", verr)
	return older, nil
}

// verifyCheckpoint checks that checkpoint id can be restored: its marker, every participant's snapshot, and the
// in-flight logs of unaligned subtasks read back as written.
func (j *Job) verifyCheckpoint(id uint64) error {
	if err := checkpoint.VerifyMarker(j.cfg.FS, j.cpDir, id); err != nil {
		return err
	}
	if len(j.confirmers()) > 0 {
		if err := checkpoint.VerifyConfirmed(j.cfg.FS, j.cpDir, id); err != nil {
			return err
		}
	}
	for _, n := range j.g.Nodes {
		for sub := 0; sub < n.Parallelism; sub++ {
			path := checkpoint.SubtaskDir(j.cpDir, id, participantID(n, sub))
			if err := state.VerifySnapshot(j.cfg.FS, path, n.State == KeyedState); err != nil {
				return err
			}
			if _, err := j.cfg.FS.Stat(path + inflightSuffix); err == nil {
				if _, err := state.ReadFramed(j.cfg.FS, path+inflightSuffix); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// participantID names subtask sub of n in checkpoints.
func participantID(n *Node, sub int) checkpoint.ParticipantID {
	return checkpoint.ParticipantID(fmt.Sprintf("%s-%d", n.ID, sub))
}

// recordCommitted calls cfg.Committed the first time a checkpoint of the job completes or is restored from.
func (j *Job) recordCommitted(id uint64) error {
	if j.cfg.Committed == nil || j.recorded.Load() {
		return nil
	}
	if err := j.cfg.Committed(id); err != nil {
		return fmt.Errorf("recording checkpoint %d: %w", id, err)
	}
	j.recorded.Store(true)
	return nil
}

// onComplete is the commit broadcast of checkpoint id: every sink commits and every listener hears of it, even
// when one commit fails (the others' transactions are as complete as theirs; skipping them would leave them to
// the restart for no reason). The errors are joined; any fails the incarnation, and the next one's sink recovery
// commits what this one could not (the marker is durable). An incarnation already torn down (a failure or a
// cancel landed) broadcasts nothing: its sinks may be closing, and a partial broadcast is what the seed forbids.
func (inc *incarnation) onComplete(id uint64) error {
	inc.job.mu.Lock()
	if id > inc.job.status.LastCompleted {
		inc.job.status.LastCompleted = id
	}
	inc.job.mu.Unlock()
	if inc.ctx.Err() != nil {
		return fmt.Errorf("checkpoint %d: %w", id, checkpoint.ErrCommitDeferred)
	}
	if err := inc.job.recordCommitted(id); err != nil {
		// Nothing of id is published; the next incarnation records it before its recovery.
		inc.fail("commit", err)
		return err
	}
	var errs []error
	confirm := len(inc.job.confirmers()) > 0
	for _, s := range inc.sinks {
		t0 := time.Now()
		err := s.sink.Commit(id)
		took := time.Since(t0)
		s.st.lastCommit.Store(int64(took))
		inc.job.metrics.observeCommit(s.st.node.ID, took)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if confirm {
			// The last confirmation writes CONFIRMED-<id>; a sink whose commit failed never confirms, and the
			// restart's in-doubt resolution settles id.
			if err := inc.coord.Confirm(id, s.pid); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if len(errs) == 0 {
		// Every subtask of every sink committed id: now the work that needs the whole node's files in place.
		for _, s := range inc.sinks {
			if f, ok := s.sink.(CommitFinisher); ok {
				if err := f.FinishCommit(id, s.wms.at(id)); err != nil {
					errs = append(errs, err)
				}
			}
		}
	}
	for _, s := range inc.sinks {
		s.wms.forget(id)
	}
	for _, l := range inc.listeners {
		l.NotifyCheckpointComplete(id)
	}
	if err := errors.Join(errs...); err != nil {
		err = fmt.Errorf("commit checkpoint %d: %w", id, err)
		inc.fail("commit", err)
		return err
	}
	if f := inc.job.cfg.AfterCommit; f != nil {
		f(id)
	}
	return nil
}

func (inc *incarnation) onAbort(id uint64, reason error) {
	for _, s := range inc.sinks {
		_ = s.sink.Abort(id) // idempotent; a staged file left behind is deleted by the next Open's recovery
	}
	for _, l := range inc.listeners {
		l.NotifyCheckpointAborted(id)
	}
}

// deploy builds channels, opens every subtask's state and returns one runner func per subtask.
func (inc *incarnation) deploy(g *Graph, cfg JobConfig) ([]func(), error) {
	alignedChain := inDoubtChain(g)
	// inbound[node][subtask] lists the subtask's input channels, edge by edge.
	inbound := make([][][]*input, len(g.Nodes))
	outbound := make([][]*output, len(g.Nodes))
	for _, n := range g.Nodes {
		inbound[n.index] = make([][]*input, n.Parallelism)
		outbound[n.index] = make([]*output, n.Parallelism)
		for s := range outbound[n.index] {
			outbound[n.index][s] = &output{ctx: inc.ctx, alloc: cfg.Alloc, st: inc.job.subs[n.index][s]}
		}
	}
	newChan := func() *channel {
		ch := newChannel(cfg.ChannelCapacity)
		inc.chans = append(inc.chans, ch)
		return ch
	}
	for _, n := range g.Nodes {
		for logical, in := range n.Inputs {
			up := in.From
			for u := 0; u < up.Parallelism; u++ {
				ed := &outEdge{exchange: in.Exchange, keyGroups: g.KeyGroups, markerRR: u}
				for d := 0; d < n.Parallelism; d++ {
					if in.Exchange.Kind == Forward && d != u {
						continue
					}
					ch := newChan()
					ed.chans = append(ed.chans, ch)
					inbound[n.index][d] = append(inbound[n.index][d], &input{ch: ch, logical: logical, wm: MinWatermark})
				}
				outbound[up.index][u].edges = append(outbound[up.index][u].edges, ed)
			}
		}
	}

	backends, err := inc.openBackends(g, cfg)
	if err != nil {
		return nil, err
	}
	defer func() { // a deploy that failed half way: the backends no subtask took
		for _, bs := range backends {
			for _, b := range bs {
				if b != nil {
					b.Close()
				}
			}
		}
	}()
	var runs []func()
	var injectors []func(checkpoint.Barrier)
	slots := 0 // the aligned source subtasks, each its aligner slot
	for _, n := range g.Nodes {
		if n.Kind == SourceNode && n.AlignWatermark {
			slots += n.Parallelism
		}
	}
	var align *aligner
	if cfg.WatermarkMaxDrift > 0 && slots > 1 {
		align = newAligner(cfg.WatermarkMaxDrift, slots)
	}
	slot := 0
	sinkWMs := map[*Node]*barrierWatermarks{}
	for _, n := range g.Nodes {
		for sub := 0; sub < n.Parallelism; sub++ {
			s := inc.newSubtask(g, cfg, n, sub, backends[n.index][sub])
			backends[n.index][sub] = nil // the subtask owns it now
			inc.coord.Register(s.pid)
			switch n.Kind {
			case SourceNode:
				s.out = outbound[n.index][sub]
				src := n.newSource(sub)
				if p, ok := src.(SourceProgress); ok {
					s.st.setProgress(p, nil)
				}
				if l, ok := src.(CheckpointListener); ok {
					inc.listeners = append(inc.listeners, l)
				}
				if align != nil && n.AlignWatermark {
					s.align, s.alignSlot = align, slot
					slot++
				}
				q := newBarrierQueue()
				injectors = append(injectors, q.inject)
				inc.sourcesLeft.Add(1)
				runs = append(runs, inc.runner(s, func() error { return s.runSource(inc.ctx, src, q) }))
			case OperatorNode:
				s.out = outbound[n.index][sub]
				op := n.newOperator(sub)
				if _, ok := op.(InputCopier); ok {
					for _, in := range inbound[n.index][sub] {
						in.ch.parts = newPartPool(cfg.Alloc)
					}
				}
				canUnalign := !alignedChain[n]
				if u, ok := op.(Unaligner); ok && canUnalign {
					canUnalign = u.CanUnalign()
				}
				ins := inbound[n.index][sub]
				runs = append(runs, inc.runner(s, func() error { return s.runOperator(op, ins, canUnalign) }))
			case SinkNode:
				sink := n.newSink(sub)
				if n.CommitNotRecoverable {
					if _, ok := sink.(InDoubtSink); !ok {
						return nil, fmt.Errorf("sink %s: its commit is not recoverable, but it does not stage handles (InDoubtSink)", n.ID)
					}
				}
				if p, ok := sink.(SinkProgress); ok {
					s.st.setProgress(nil, p)
				}
				if sinkWMs[n] == nil {
					sinkWMs[n] = newBarrierWatermarks(n.Parallelism)
				}
				s.barrierWMs = sinkWMs[n]
				inc.sinks = append(inc.sinks, sinkRef{pid: s.pid, sink: sink, st: s.st, wms: s.barrierWMs})
				ins := inbound[n.index][sub]
				runs = append(runs, inc.runner(s, func() error { return s.runSink(sink, ins) }))
			}
		}
	}
	inc.coord.SetInjectors(injectors)
	return runs, nil
}

// maxConcurrentOpens bounds the state backends a deploy opens at once.
const maxConcurrentOpens = 16

// openBackends opens (restoring) the state backend of every subtask of g, all at once: a keyed store's open
// waits on the disk (files created and synced), and one after the other they made a deploy take a few
// milliseconds per keyed subtask, which parallelism multiplies. On an error it closes what it opened.
func (inc *incarnation) openBackends(g *Graph, cfg JobConfig) ([][]state.Backend, error) {
	backends := make([][]state.Backend, len(g.Nodes))
	errs := make([][]error, len(g.Nodes))
	var wg sync.WaitGroup
	limit := make(chan struct{}, maxConcurrentOpens) // a job of many subtasks opens a bounded number at a time
	for _, n := range g.Nodes {
		backends[n.index] = make([]state.Backend, n.Parallelism)
		errs[n.index] = make([]error, n.Parallelism)
		for sub := 0; sub < n.Parallelism; sub++ {
			wg.Add(1)
			limit <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-limit }()
				backends[n.index][sub], errs[n.index][sub] = inc.openBackend(cfg, n, sub)
			}()
		}
	}
	wg.Wait()
	var first error
	for _, n := range g.Nodes {
		for _, err := range errs[n.index] {
			if err != nil && first == nil {
				first = err
			}
		}
	}
	if first != nil {
		for _, bs := range backends {
			for _, b := range bs {
				if b != nil {
					b.Close()
				}
			}
		}
		return nil, first
	}
	return backends, nil
}

// backendOptions are the state options of subtask sub of n.
func (inc *incarnation) backendOptions(cfg JobConfig, n *Node, sub int) state.Options {
	pid := participantID(n, sub)
	opts := state.Options{FS: cfg.FS}
	if inc.restored > 0 {
		opts.RestorePath = checkpoint.SubtaskDir(inc.cpDir, inc.restored, pid)
	}
	if n.State == KeyedState {
		opts.Dir = filepath.Join(cfg.Dir, "state", string(pid))
		opts.CacheBytes = cfg.StateCacheBytes
		// The files a keyed snapshot's chain names live outside the checkpoint directories that retention
		// deletes; what no retained checkpoint names any more goes when the chain is re-based.
		opts.SharedDir = filepath.Join(inc.cpDir, "shared", string(pid))
		opts.LiveSnapshots = func() ([]string, error) {
			return filepath.Glob(filepath.Join(inc.cpDir, "chk-*", string(pid)))
		}
	}
	return opts
}

func (inc *incarnation) openBackend(cfg JobConfig, n *Node, sub int) (state.Backend, error) {
	opts := inc.backendOptions(cfg, n, sub)
	var backend state.Backend
	var err error
	if n.State == KeyedState {
		backend, err = state.OpenPebble(opts)
	} else {
		backend, err = state.OpenMemory(opts)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: open state: %w", participantID(n, sub), err)
	}
	return backend, nil
}

// newSubtask makes subtask sub of n over its opened backend.
func (inc *incarnation) newSubtask(g *Graph, cfg JobConfig, n *Node, sub int, backend state.Backend) *subtask {
	pid := participantID(n, sub)
	opts := inc.backendOptions(cfg, n, sub)
	s := &subtask{inc: inc, node: n, index: sub, pid: pid, backend: backend, worker: checkpoint.NewSnapshotWorker(),
		st: inc.job.subs[n.index][sub]}
	s.tctx = &TaskContext{
		Job: cfg.Name, Operator: n.ID, Subtask: sub, Parallelism: n.Parallelism,
		KeyGroups: state.RangeOf(sub, g.KeyGroups, n.Parallelism), MaxKeyGroups: g.KeyGroups,
		State: backend, Restored: inc.restored, Alloc: cfg.Alloc, FS: cfg.FS,
		IsCompleted: func(id uint64) bool { return checkpoint.IsCompleted(cfg.FS, inc.cpDir, id) },
		Log:         cfg.Logger.With("subtask", string(pid)),
		Errors:      &s.st.bad,
		Late:        &s.st.late,
		Clock:       cfg.Clock,
	}
	if inc.restored > 0 {
		// What the restored snapshot holds: the state size until the next checkpoint, and the files the next one
		// does not add.
		s.notePersisted(opts.RestorePath)
	}
	inc.subtasks = append(inc.subtasks, s)
	return s
}

// runner wraps a subtask's loop: a clean return drains its snapshot worker; an error fails the incarnation.
func (inc *incarnation) runner(s *subtask, loop func() error) func() {
	return func() {
		err := loop()
		s.st.endBusy() // a loop that returned mid-work
		clean := err == nil
		if err != nil && !errors.Is(err, context.Canceled) {
			inc.fail(string(s.pid), err)
		}
		s.finish(clean)
	}
}

func (s *subtask) runOperator(op Operator, ins []*input, canUnalign bool) error {
	if err := s.restoreCounts(); err != nil {
		return err
	}
	var hold func(int64) int64
	if h, ok := op.(WatermarkHolder); ok {
		hold = h.OutputWatermark
	}
	open := op.Open
	if st, ok := op.(Starter); ok {
		open = func(tc *TaskContext) error {
			if err := op.Open(tc); err != nil {
				return err
			}
			return st.Start(s.out)
		}
	}
	var timers *timerService
	if pt, ok := op.(ProcessingTimer); ok {
		timers = &timerService{op: pt, clock: s.inc.job.cfg.Clock, out: s.out}
	}
	return s.runInputs(ins, canUnalign, open, op.Close, handlers{
		timers:      timers,
		hold:        hold,
		process:     func(logical int, b Batch) error { return op.Process(logical, b, s.out) },
		onWatermark: func(wm int64) error { return op.OnWatermark(wm, s.out) },
		snapshot:    func(b checkpoint.Barrier) error { return op.OnBarrier(b.ID) },
		forward:     s.out.broadcast,
		marker:      s.out.marker,
	})
}

func (s *subtask) runSink(sink Sink, ins []*input) error {
	if err := s.restoreCounts(); err != nil {
		return err
	}
	h := handlers{
		process: func(_ int, b Batch) error {
			s.st.rowsOut.Add(int64(b.Rows()))
			return sink.Write(b)
		},
		onWatermark: func(int64) error { return nil },
		snapshot: func(b checkpoint.Barrier) error {
			s.barrierWMs.record(s.index, b.ID, s.inputWM())
			return sink.PreCommit(b.ID)
		},
		forward: func(Element) error { return nil },
		marker:  s.recordMarker,
	}
	ids, ok := sink.(InDoubtSink)
	if !s.node.CommitNotRecoverable || !ok {
		return s.runInputs(ins, true, sink.Open, sink.Close, h)
	}
	d := &inDoubtSub{s: s, horizons: map[uint64]int64{}}
	s.indoubt = d
	s.tctx.Receipt = d.receipt
	write := h.process
	h.process = func(logical int, b Batch) error {
		b, dropped, err := d.suppress(b)
		if err != nil {
			return err
		}
		// Rows published by the dead incarnation (its receipt says so): counted as written, not written again.
		s.st.rowsOut.Add(int64(dropped))
		if b.Rows() == 0 {
			b.Release()
			return nil
		}
		return write(logical, b)
	}
	h.onWatermark = d.onWatermark
	h.snapshot = func(b checkpoint.Barrier) error {
		s.barrierWMs.record(s.index, b.ID, s.inputWM())
		if err := sink.PreCommit(b.ID); err != nil {
			return err
		}
		return d.stage(ids, b.ID, s.inputWM())
	}
	open := func(tc *TaskContext) error {
		// Markers and receipts first: the open fences the transactional identity.
		if err := d.beforeOpen(s.inc.ctx, len(ins)); err != nil {
			return err
		}
		if err := sink.Open(tc); err != nil {
			return err
		}
		s.inc.deferredMu.Lock()
		s.inc.deferredClose = append(s.inc.deferredClose, sinkRef{pid: s.pid, sink: sink})
		s.inc.deferredMu.Unlock()
		return nil
	}
	// Closed by the incarnation once nothing can commit any more: the final checkpoint's commit comes after the
	// runner ended. Barriers are taken aligned: one overtaking queued rows could split the rows a watermark fired,
	// and the horizon recorded at it would no longer separate what the transaction holds (armSuppression).
	return s.runInputs(ins, false, open, func() error { return nil }, h)
}

// runInputs restores the runner's own state, opens the operator or sink, and runs it to the end of its inputs.
func (s *subtask) runInputs(ins []*input, canUnalign bool, open func(*TaskContext) error, close func() error, h handlers) (err error) {
	r := newInputRunner(s.inc.ctx, s, ins, canUnalign, h)
	r.timers = h.timers
	s.inputWM = func() int64 { return r.combined }
	if err := r.restore(); err != nil {
		r.release()
		return err
	}
	if err := open(s.tctx); err != nil {
		r.release()
		return fmt.Errorf("open: %w", err)
	}
	s.st.wm.Store(r.held(r.combined)) // the restored watermark, as the operator holds it
	defer func() {
		if cerr := close(); err == nil && cerr != nil {
			err = cerr
		}
	}()
	return r.run()
}

// inDoubtChain is the set of operators that feed a sink whose commit is not recoverable through forward edges
// alone (the window aggregate that fires its rows and the projections after it): they take every barrier aligned.
// An unaligned barrier overtaking their queued input would put rows fired at a watermark into the checkpoint before
// that watermark reached the sink, above the horizon its receipt records, and a fallback's replay suppression
// would publish them again.
func inDoubtChain(g *Graph) map[*Node]bool {
	chain := map[*Node]bool{}
	for _, n := range g.Nodes {
		if n.Kind != SinkNode || !n.CommitNotRecoverable {
			continue
		}
		for cur := n; len(cur.Inputs) == 1 && cur.Inputs[0].Exchange.Kind == Forward; {
			cur = cur.Inputs[0].From
			if cur.Kind != OperatorNode {
				break
			}
			chain[cur] = true
		}
	}
	return chain
}
