package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/clinksql/clinksql/state"
)

// Config configures a Coordinator. Only Dir is required.
type Config struct {
	// Dir is the job's checkpoint directory, <data>/jobs/<job>/checkpoints.
	Dir string
	// FS is the file-system seam; nil means state.OS.
	FS state.FS
	// DefaultMode is stamped on barriers when neither a per-trigger override nor a resolver decides.
	DefaultMode Mode
	// Interval is the periodic trigger cadence of Start; 0 disables periodic checkpoints.
	Interval time.Duration
	// MaxInFlight caps the checkpoints the periodic trigger lets collect acks at once (a tick that finds the cap
	// reached is skipped); default 2. Explicit Trigger calls are not capped.
	MaxInFlight int
	// Timeout fails a checkpoint that has not completed in time, like any other failure; default 10 minutes.
	Timeout time.Duration
	// Retain is how many newest completed checkpoints are kept on disk; default 2.
	Retain int
	// FirstID is a lower bound for the first id this coordinator issues. The id actually used is never below
	// NextID(FS, Dir), so ids any durable file names are never reused.
	FirstID uint64

	// Confirmers, when set, makes the coordinator track confirmations (a job with a sink whose commit cannot be
	// re-executed after a crash): at the commit broadcast of checkpoint id its confirmation set is seeded with
	// these participants (the sink subtasks); Confirm removes one whose commit of id returned without error, and
	// when the set drains CONFIRMED-<id> is written beside COMPLETED-<id>. Retention then keeps the newest confirmed
	// checkpoint and prunes commit receipts (see retain).
	Confirmers []ParticipantID
	// OnComplete runs after checkpoint id's COMPLETED marker is durable and LastCompleted advanced: this is where
	// sinks commit (the seed's commit broadcast). Retention runs after it returns. Its error (a commit that
	// failed) is what WaitCompleted(id) returns; the marker stays, so recovery commits what it could not. It does
	// not run for a checkpoint that completes while the job is draining (Stop called, or a failure rewinding it):
	// see ErrCommitDeferred.
	OnComplete func(id uint64) error
	// OnAbort runs once for every checkpoint that ends without completing: sinks discard the staged
	// transaction of id.
	OnAbort func(id uint64, reason error)
	// OnFailure runs once, for the first failed checkpoint: the job must rewind (whole-job restart from the last
	// completed checkpoint), because the aborted checkpoint's staged output is gone and only a replay restores it.
	OnFailure func(id uint64, err error)

	// History, when set, receives a Record of every checkpoint once its outcome is decided, and counts the
	// adaptive policy's switches (EnableAdaptive) in its Totals.
	History *History

	Logger *slog.Logger
}

// AckStats is what a participant reports about its part of a checkpoint (Report): the bytes it persisted, the
// in-flight bytes it captured, and how long alignment held one of its inputs paused.
type AckStats struct {
	Bytes, InflightBytes int64
	AlignWait            time.Duration
}

// Errors of the coordinator's lifecycle.
var (
	// ErrRewinding: a checkpoint failed; the job must restart from its last completed checkpoint with a new
	// Coordinator, and this one issues no more.
	ErrRewinding = errors.New("checkpoint: a checkpoint failed, the job is rewinding")
	// ErrStopped: Stop was called.
	ErrStopped = errors.New("checkpoint: coordinator stopped")
	// ErrFinished: the final (terminal) checkpoint was already triggered.
	ErrFinished = errors.New("checkpoint: final checkpoint already triggered")
	// ErrTimeout: a checkpoint did not complete within Config.Timeout.
	ErrTimeout = errors.New("checkpoint: timed out")
	// ErrUnknownCheckpoint: WaitCompleted on an id this coordinator never issued and no marker names.
	ErrUnknownCheckpoint = errors.New("checkpoint: unknown checkpoint")
	// ErrCommitDeferred: the checkpoint completed (its marker is durable, it is the restore point) while the job
	// was draining for a restart or a stop, so the sinks were not told to commit it: a broadcast into a
	// half-torn-down job commits some sinks and not others. The next incarnation's sink recovery commits it
	// (Open commits every staged transaction whose checkpoint has a marker).
	ErrCommitDeferred = errors.New("checkpoint: completed while the job was draining; its commit is left to recovery")
)

type ckptState uint8

const (
	collecting ckptState = iota // waiting for acks
	finishing                   // every ack in; marker write queued
	publishing                  // marker write in progress: its result alone decides the outcome
	completed
	aborted
)

type ckpt struct {
	b       Barrier
	pending map[ParticipantID]struct{}
	state   ckptState
	started time.Time
	timer   *time.Timer
	done    chan struct{} // closed once the outcome's callbacks returned
	err     error         // the outcome; valid after done is closed
	stats   AckStats      // summed over Report calls (AlignWait: the max)
	failed  bool          // aborted as a failure (rewind), not discarded
}

type event struct {
	k      *ckpt
	reason error // nil: complete k; else abort it
	rewind bool  // this abort is the first failure: call OnFailure
	// keepStaged: do not call OnAbort. The marker write failed after its rename, so the marker may survive on
	// disk; discarding the staged output would lose the interval if it does. The next incarnation's sink recovery
	// decides by the marker it finds, exactly as after a crash at this point.
	keepStaged bool
}

// Coordinator is the in-process checkpoint lifecycle of one job incarnation: it issues barriers, tracks acks, and
// completes a checkpoint by making its COMPLETED marker durable, then advancing the restore point, then letting
// sinks commit. A failure (failed ack, timeout, marker write error, Abort) rewinds the whole job: the coordinator
// reports it once through OnFailure and refuses new triggers, and the next incarnation builds a new Coordinator.
//
// Callbacks (OnComplete, OnAbort, OnFailure) run on a coordinator goroutine, one at a time, in the order the
// outcomes were decided, never under the coordinator's lock: they may call any method except WaitCompleted on a
// checkpoint whose outcome is still to come (that outcome's callbacks would wait behind the caller). Injectors
// run under the trigger lock, in id order, and must not call Trigger or Stop.
//
// Safe for concurrent use.
type Coordinator struct {
	cfg Config
	fs  state.FS
	log *slog.Logger

	// trigMu serialises id allocation with injection, so every source receives barriers in id order.
	trigMu sync.Mutex
	// markerMu is held across a marker write; Stop takes it to wait out a write in progress, so that once Stop
	// returns no marker appears and the restore point no longer moves.
	markerMu sync.Mutex

	mu            sync.Mutex
	participants  map[ParticipantID]struct{}
	injectors     []func(Barrier)
	resolver      func() Mode
	firstID       uint64
	nextID        uint64
	ckpts         map[uint64]*ckpt
	finished      []uint64 // finished ids still in ckpts, oldest first, for WaitCompleted
	lastCompleted uint64
	floor         uint64 // rewind floor: the lowest failed id; 0 = none
	reported      bool   // OnFailure was queued
	stopped       bool
	final         bool
	durations     []time.Duration // ring of recent completion durations
	durNext       int
	events        []event
	confirming    map[uint64]map[ParticipantID]struct{} // seeded at broadcast, drained by Confirm
	draining      bool
	drains        sync.WaitGroup // the goroutine running callbacks; Stop waits for it

	startOnce sync.Once
	loopStop  context.CancelFunc
	loopDone  chan struct{}
}

const (
	keepFinished  = 128  // finished checkpoints remembered for WaitCompleted
	keepDurations = 1024 // completion durations remembered for Durations
)

// NewCoordinator opens the checkpoint directory and numbers the first checkpoint above every id a durable record
// there names.
func NewCoordinator(cfg Config) (*Coordinator, error) {
	if cfg.Dir == "" {
		return nil, errors.New("checkpoint: Config.Dir is required")
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Minute
	}
	if cfg.Retain <= 0 {
		cfg.Retain = 2
	}
	if cfg.MaxInFlight <= 0 {
		cfg.MaxInFlight = 2
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	fsys := fsOrOS(cfg.FS)
	if err := fsys.MkdirAll(cfg.Dir); err != nil {
		return nil, fmt.Errorf("checkpoint dir %s: %w", cfg.Dir, err)
	}
	next, err := NextID(fsys, cfg.Dir)
	if err != nil {
		return nil, err
	}
	latest, hasLatest, err := LatestCompleted(fsys, cfg.Dir)
	if err != nil {
		return nil, err
	}
	next = max(next, cfg.FirstID)
	if hasLatest && next > latest+1 {
		// The seed asks the recovery log to state the gap whenever numbering skips ids named by files of a dead
		// incarnation or deleted by retention.
		log.Info("checkpoint: numbers new checkpoints from "+strconv.FormatUint(next, 10), "restore_point", latest)
	}
	return &Coordinator{
		cfg:           cfg,
		fs:            fsys,
		log:           log,
		participants:  map[ParticipantID]struct{}{},
		firstID:       next,
		nextID:        next,
		ckpts:         map[uint64]*ckpt{},
		confirming:    map[uint64]map[ParticipantID]struct{}{},
		lastCompleted: latest,
	}, nil
}

// Register adds participant p to the ack set of every checkpoint triggered from now on.
func (c *Coordinator) Register(p ParticipantID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.participants[p] = struct{}{}
}

// Deregister removes a finished participant: it leaves the ack set of later checkpoints and of those already
// triggered that still wait for it (which may complete them now). Call it only after p's last ack was delivered
// (after its SnapshotWorker drained) and p will never snapshot again: a checkpoint completed without p's snapshot
// is one whose barrier reached p's consumers after p had finished, so the runtime must have recorded p as
// finished durably (a restore from it must not replay p).
func (c *Coordinator) Deregister(p ParticipantID) {
	c.mu.Lock()
	delete(c.participants, p)
	for _, id := range c.inFlightLocked() {
		k := c.ckpts[id]
		if _, ok := k.pending[p]; ok && k.state == collecting {
			delete(k.pending, p)
			if len(k.pending) == 0 {
				c.collectedLocked(k)
			}
		}
	}
	c.unlockAndDrain()
}

// SetInjectors sets the functions that push a barrier into each source (between its produce calls).
func (c *Coordinator) SetInjectors(inj []func(Barrier)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.injectors = slices.Clone(inj)
}

// SetModeResolver decides the mode of each triggered checkpoint that has no explicit override (nil: DefaultMode).
// It is called once per such trigger, under the trigger lock.
func (c *Coordinator) SetModeResolver(r func() Mode) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.resolver = r
}

// EnableAdaptive installs an AdaptivePolicy over pressure as the mode resolver: pressure is sampled once per
// trigger, and each flip of the policy counts in the history's Totals.AdaptiveSwitches (Config.History).
func (c *Coordinator) EnableAdaptive(pressure func() float64, cfg AdaptiveConfig) *AdaptivePolicy {
	p := NewAdaptivePolicy(cfg)
	c.SetModeResolver(func() Mode {
		m, switched := p.observe(pressure())
		if switched {
			if h := c.cfg.History; h != nil {
				if err := h.Update(func(t *Totals) { t.AdaptiveSwitches++ }); err != nil {
					c.log.Warn("checkpoint history: could not persist", "err", err)
				}
			}
			c.log.Info("checkpoint: adaptive mode switched", "mode", m.String())
		}
		return m
	})
	return p
}

// Trigger starts a checkpoint with the resolved mode: the resolver's decision, else DefaultMode.
func (c *Coordinator) Trigger() (Barrier, error) { return c.trigger(nil, false) }

// TriggerMode starts a checkpoint stamped m, overriding resolver and default.
func (c *Coordinator) TriggerMode(m Mode) (Barrier, error) { return c.trigger(&m, false) }

// TriggerFinal starts the terminal checkpoint of a bounded job (always aligned); no trigger follows it.
func (c *Coordinator) TriggerFinal() (Barrier, error) { return c.trigger(nil, true) }

func (c *Coordinator) trigger(override *Mode, terminal bool) (Barrier, error) {
	c.trigMu.Lock()
	defer c.trigMu.Unlock()

	c.mu.Lock()
	err := c.refuseLocked()
	resolver := c.resolver
	c.mu.Unlock()
	if err != nil {
		return Barrier{}, err
	}
	mode := c.cfg.DefaultMode
	switch {
	case terminal:
		mode = Aligned // no more records are coming; nothing to overtake
	case override != nil:
		mode = *override
	case resolver != nil:
		mode = resolver() // outside mu: the pressure probe may take its own locks
	}

	c.mu.Lock()
	if err := c.refuseLocked(); err != nil { // a failure or Stop may have landed while resolving
		c.mu.Unlock()
		return Barrier{}, err
	}
	b := Barrier{ID: c.nextID, Terminal: terminal, Mode: mode}
	c.nextID++
	k := &ckpt{
		b:       b,
		pending: make(map[ParticipantID]struct{}, len(c.participants)),
		started: time.Now(),
		done:    make(chan struct{}),
	}
	for p := range c.participants {
		k.pending[p] = struct{}{}
	}
	c.ckpts[b.ID] = k
	c.final = c.final || terminal
	id := b.ID
	k.timer = time.AfterFunc(c.cfg.Timeout, func() { c.expire(id) })
	injectors := c.injectors
	nobody := len(k.pending) == 0
	c.mu.Unlock()

	for _, inj := range injectors {
		inj(b)
	}

	if nobody { // no participant to wait for: complete it (after injection, so barriers still flow in order)
		c.mu.Lock()
		if k.state == collecting {
			c.collectedLocked(k)
		}
		c.unlockAndDrain()
	}
	return b, nil
}

func (c *Coordinator) refuseLocked() error {
	switch {
	case c.stopped:
		return ErrStopped
	case c.floor != 0:
		return fmt.Errorf("%w (checkpoint %d failed)", ErrRewinding, c.floor)
	case c.final:
		return ErrFinished
	}
	return nil
}

// Acknowledge records participant p's outcome for checkpoint id. err != nil (p could not snapshot) fails the
// checkpoint. An ack for an unknown, completed or aborted id, or from a participant not awaited, is ignored.
func (c *Coordinator) Acknowledge(id uint64, p ParticipantID, err error) {
	c.mu.Lock()
	k := c.ckpts[id]
	if k == nil || k.state != collecting {
		c.mu.Unlock()
		return
	}
	if _, ok := k.pending[p]; !ok {
		c.mu.Unlock()
		return
	}
	if err != nil {
		c.abortLocked(k, fmt.Errorf("checkpoint %d: participant %s: %w", id, p, err), true)
	} else {
		delete(k.pending, p)
		if len(k.pending) == 0 {
			c.collectedLocked(k)
		}
	}
	c.unlockAndDrain()
}

// Report adds participant p's figures for checkpoint id to its record (the history's bytes and align wait). Call it
// before p's Acknowledge; a report for an id not collecting acks, or from a participant not awaited, is ignored.
func (c *Coordinator) Report(id uint64, p ParticipantID, st AckStats) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := c.ckpts[id]
	if k == nil || k.state != collecting {
		return
	}
	if _, ok := k.pending[p]; !ok {
		return
	}
	k.stats.Bytes += st.Bytes
	k.stats.InflightBytes += st.InflightBytes
	k.stats.AlignWait = max(k.stats.AlignWait, st.AlignWait)
}

// Abort ends checkpoint id without completing it (idempotent; OnAbort fires once). It is a failure like any
// other: sinks discard the staged output of id, and a job that went on without replaying it would silently lose
// that interval, so the job rewinds (OnFailure) and id becomes the rewind floor. Unknown and finished ids are
// ignored, and so is a checkpoint whose marker is being written: that write alone decides it.
func (c *Coordinator) Abort(id uint64, reason error) {
	if reason == nil {
		reason = errors.New("aborted")
	}
	c.mu.Lock()
	if k := c.ckpts[id]; k != nil && (k.state == collecting || k.state == finishing) {
		c.abortLocked(k, fmt.Errorf("checkpoint %d aborted: %w", id, reason), true)
	}
	c.unlockAndDrain()
}

func (c *Coordinator) expire(id uint64) {
	c.mu.Lock()
	if k := c.ckpts[id]; k != nil && k.state == collecting {
		waiting := make([]string, 0, len(k.pending))
		for p := range k.pending {
			waiting = append(waiting, string(p))
		}
		slices.Sort(waiting)
		c.abortLocked(k, fmt.Errorf("checkpoint %d: %w after %s, waiting on %v", id, ErrTimeout, c.cfg.Timeout, waiting), true)
	}
	c.unlockAndDrain()
}

// collectedLocked: every ack of k is in.
func (c *Coordinator) collectedLocked(k *ckpt) {
	k.timer.Stop()
	if c.floor != 0 && k.b.ID > c.floor {
		// Rewind floor: completing it would make a restore point past the failed checkpoint's discarded output,
		// and the job would restore from it minus one interval.
		c.abortLocked(k, fmt.Errorf("checkpoint %d discarded: %w (checkpoint %d failed)", k.b.ID, ErrRewinding, c.floor), false)
		return
	}
	k.state = finishing
	c.events = append(c.events, event{k: k})
}

// abortLocked ends k without completing it; rewind makes it a job failure (rewind floor, OnFailure once).
func (c *Coordinator) abortLocked(k *ckpt, reason error, rewind bool) {
	k.state = aborted
	k.timer.Stop()
	first := false
	if rewind && !c.stopped {
		k.failed = true
		if c.floor == 0 || k.b.ID < c.floor {
			c.floor = k.b.ID
		}
		first = !c.reported
		c.reported = true
	}
	c.events = append(c.events, event{k: k, reason: reason, rewind: first})
}

// unlockAndDrain releases mu and makes sure a goroutine runs the queued outcomes. Callbacks therefore never run
// under mu nor on a caller's goroutine, so a callback that calls back into the coordinator cannot deadlock.
func (c *Coordinator) unlockAndDrain() {
	start := !c.draining && len(c.events) > 0
	if start {
		c.draining = true
	}
	c.mu.Unlock()
	if start {
		c.drains.Add(1)
		go func() {
			defer c.drains.Done()
			c.drain()
		}()
	}
}

func (c *Coordinator) drain() {
	for {
		c.mu.Lock()
		if len(c.events) == 0 {
			c.draining = false
			c.mu.Unlock()
			return
		}
		ev := c.events[0]
		c.events = c.events[1:]
		c.mu.Unlock()
		if ev.reason == nil {
			c.complete(ev.k)
		} else {
			c.aborted(ev)
		}
	}
}

func (c *Coordinator) complete(k *ckpt) {
	id := k.b.ID
	c.markerMu.Lock()
	c.mu.Lock()
	if k.state != finishing { // aborted after its acks were in (Abort, Stop): its abort event is queued
		c.mu.Unlock()
		c.markerMu.Unlock()
		return
	}
	var reason error
	switch {
	case c.stopped:
		reason = ErrStopped
	case c.floor != 0 && id > c.floor: // a failure landed between the last ack and now
		reason = fmt.Errorf("checkpoint %d discarded: %w (checkpoint %d failed)", id, ErrRewinding, c.floor)
	}
	if reason != nil {
		c.abortLocked(k, reason, false)
		c.mu.Unlock()
		c.markerMu.Unlock()
		return
	}
	k.state = publishing
	c.mu.Unlock()

	// The marker is durable before anything treats id as complete: a crash before this line leaves id an
	// uncompleted checkpoint, never a committed sink transaction without a restore point behind it.
	err := WriteMarker(c.fs, c.cfg.Dir, id)

	if err != nil {
		// A failed directory fsync comes after the rename: the marker's name exists but may not survive a power
		// loss. Take it back, so that nothing in this process restores from it, and keep the staged output (see
		// event.keepStaged) in case the removal is not durable either.
		keep := false
		if _, serr := c.fs.Stat(MarkerPath(c.cfg.Dir, id)); serr == nil {
			keep = true
			if rerr := c.fs.Remove(MarkerPath(c.cfg.Dir, id)); rerr != nil {
				c.log.Warn("checkpoint: could not remove a COMPLETED marker whose write failed", "checkpoint", id, "err", rerr)
			}
		}
		c.mu.Lock()
		c.abortLocked(k, fmt.Errorf("checkpoint %d: COMPLETED marker: %w", id, err), true)
		c.events[len(c.events)-1].keepStaged = keep // the event abortLocked just queued
		c.mu.Unlock()
		c.markerMu.Unlock()
		return
	}
	c.mu.Lock()
	// The restore point advances only after the marker is durable: a restart deciding its restore point in
	// between would redeploy from a checkpoint its successor cannot see.
	k.state = completed
	c.lastCompleted = max(c.lastCompleted, id)
	dur := time.Since(k.started)
	if len(c.durations) < keepDurations {
		c.durations = append(c.durations, dur)
	} else {
		c.durations[c.durNext] = dur
		c.durNext = (c.durNext + 1) % keepDurations
	}
	inFlight := map[uint64]bool{}
	for _, f := range c.inFlightLocked() {
		inFlight[f] = true
	}
	issued := c.nextID - 1
	// Draining: Stop was called or a failure is rewinding the job while the marker was written. The seed keeps
	// the marker but does not broadcast the commit: sinks being torn down would commit some of their
	// transactions and not others, and a completed checkpoint with partial external commits cannot be repaired
	// at restore granularity. The restart's sink recovery commits it as one decision.
	draining := c.stopped || c.floor != 0
	c.mu.Unlock()
	c.markerMu.Unlock()

	if draining {
		c.log.Info("checkpoint completed while the job is draining: marker kept, commit left to recovery", "checkpoint", id)
		c.record(k, Completed, dur, "completed while the job was draining: its commit is left to recovery")
		c.finish(k, fmt.Errorf("checkpoint %d: %w", id, ErrCommitDeferred))
		return
	}
	c.log.Debug("checkpoint completed", "checkpoint", id, "mode", k.b.Mode.String(), "duration", dur)
	if len(c.cfg.Confirmers) > 0 {
		// Seeded at the broadcast, before any sink commits: a confirmation can only drain a set that exists.
		set := make(map[ParticipantID]struct{}, len(c.cfg.Confirmers))
		for _, p := range c.cfg.Confirmers {
			set[p] = struct{}{}
		}
		c.mu.Lock()
		c.confirming[id] = set
		c.mu.Unlock()
	}
	// Sinks commit only now, after the marker: a crash mid-commit still finds COMPLETED-<id> and recovery
	// commits the rest.
	var cerr error
	if c.cfg.OnComplete != nil {
		cerr = c.cfg.OnComplete(id)
	}
	if err := retain(c.fs, c.cfg.Dir, c.cfg.Retain, inFlight, issued, len(c.cfg.Confirmers) > 0); err != nil {
		c.log.Warn("checkpoint retention failed", "checkpoint", id, "err", err)
	}
	why := ""
	if cerr != nil {
		why = cerr.Error()
	}
	c.record(k, Completed, dur, why)
	c.finish(k, cerr)
}

// record adds k's record to the history (if any). Called on the drain goroutine, once per checkpoint.
func (c *Coordinator) record(k *ckpt, o Outcome, dur time.Duration, reason string) {
	h := c.cfg.History
	if h == nil {
		return
	}
	c.mu.Lock()
	st := k.stats
	c.mu.Unlock()
	r := Record{ID: k.b.ID, Mode: k.b.Mode, Trigger: k.started, Duration: dur, AlignWait: st.AlignWait,
		Bytes: st.Bytes, InflightBytes: st.InflightBytes, Outcome: o, Reason: reason}
	if err := h.Add(r); err != nil {
		c.log.Warn("checkpoint history: could not persist", "checkpoint", k.b.ID, "err", err)
	}
}

// Confirm records that participant p (a sink subtask in Config.Confirmers) committed checkpoint id without error.
// The call that drains id's confirmation set writes CONFIRMED-<id> (durable when Confirm returns) and returns that
// write's error. A confirmation for an id that was not broadcast, or from a participant not awaited, is ignored.
// Call it from OnComplete, after p's commit returned.
func (c *Coordinator) Confirm(id uint64, p ParticipantID) error {
	c.mu.Lock()
	set := c.confirming[id]
	if _, ok := set[p]; !ok {
		c.mu.Unlock()
		return nil
	}
	delete(set, p)
	drained := len(set) == 0
	if drained {
		delete(c.confirming, id)
	}
	c.mu.Unlock()
	if !drained {
		return nil
	}
	if err := WriteConfirmed(c.fs, c.cfg.Dir, id); err != nil {
		return fmt.Errorf("checkpoint %d: CONFIRMED marker: %w", id, err)
	}
	c.log.Debug("checkpoint confirmed", "checkpoint", id)
	return nil
}

func (c *Coordinator) aborted(ev event) {
	id := ev.k.b.ID
	if ev.rewind {
		c.log.Warn("checkpoint failure -> whole-job restart", "checkpoint", id, "err", ev.reason)
	} else {
		c.log.Info("checkpoint aborted", "checkpoint", id, "reason", ev.reason)
	}
	if c.cfg.OnAbort != nil && !ev.keepStaged {
		c.cfg.OnAbort(id, ev.reason)
	}
	c.mu.Lock()
	o := Aborted
	if ev.k.failed {
		o = Failed
	}
	c.mu.Unlock()
	c.record(ev.k, o, time.Since(ev.k.started), ev.reason.Error())
	c.mu.Lock()
	report := ev.rewind && !c.stopped
	c.mu.Unlock()
	if report && c.cfg.OnFailure != nil {
		c.cfg.OnFailure(id, ev.reason)
	}
	c.finish(ev.k, ev.reason)
}

func (c *Coordinator) finish(k *ckpt, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k.err = err
	close(k.done)
	c.finished = append(c.finished, k.b.ID)
	if len(c.finished) > keepFinished {
		delete(c.ckpts, c.finished[0])
		c.finished = c.finished[1:]
	}
}

// inFlightLocked lists, ascending, the checkpoints not yet decided.
func (c *Coordinator) inFlightLocked() []uint64 {
	var ids []uint64
	for id, k := range c.ckpts {
		if k.state == collecting || k.state == finishing || k.state == publishing {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// InFlight is the number of checkpoints triggered and not yet decided.
func (c *Coordinator) InFlight() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.inFlightLocked())
}

// LastCompleted is the restore point: the newest checkpoint whose COMPLETED marker is durable (read from disk at
// construction, then advanced by completions). 0 means none.
func (c *Coordinator) LastCompleted() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lastCompleted
}

// Durations returns the trigger-to-durable-marker times of recent completed checkpoints (up to 1024), oldest
// first, for benchmark percentiles.
func (c *Coordinator) Durations() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.durations) < keepDurations {
		return slices.Clone(c.durations)
	}
	return append(slices.Clone(c.durations[c.durNext:]), c.durations[:c.durNext]...)
}

// WaitCompleted blocks until checkpoint id completed and OnComplete (and retention) returned: nil, or
// OnComplete's error. It returns the reason if id was aborted or failed, ErrCommitDeferred if id completed while
// the job was draining (nobody committed it yet), ctx.Err() if ctx ends first, and ErrUnknownCheckpoint for an id
// not issued yet. For an id this coordinator no longer tracks (issued long ago, or by an earlier incarnation) it
// answers from the marker on disk.
func (c *Coordinator) WaitCompleted(ctx context.Context, id uint64) error {
	c.mu.Lock()
	k := c.ckpts[id]
	next := c.nextID
	c.mu.Unlock()
	if k == nil {
		if id >= next {
			return fmt.Errorf("%w %d", ErrUnknownCheckpoint, id)
		}
		if IsCompleted(c.fs, c.cfg.Dir, id) {
			return nil
		}
		return fmt.Errorf("%w %d (no COMPLETED marker)", ErrUnknownCheckpoint, id)
	}
	select {
	case <-k.done:
		c.mu.Lock()
		defer c.mu.Unlock()
		return k.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Start runs the periodic trigger every Config.Interval until ctx ends or Stop is called; with Interval 0 it does
// nothing. Ticks do not wait for the previous checkpoint's acks, but a tick that finds MaxInFlight checkpoints
// still undecided is skipped. Timeouts need no loop: each checkpoint arms its own timer at trigger.
func (c *Coordinator) Start(ctx context.Context) {
	if c.cfg.Interval <= 0 {
		return
	}
	c.startOnce.Do(func() {
		ctx, cancel := context.WithCancel(ctx)
		c.mu.Lock()
		c.loopStop, c.loopDone = cancel, make(chan struct{})
		c.mu.Unlock()
		go func() {
			defer close(c.loopDone)
			t := time.NewTicker(c.cfg.Interval)
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
					if _, err := c.tick(); err != nil {
						return // stopped, rewinding or finished: no trigger will ever succeed again
					}
				}
			}
		}()
	})
}

// tick is one periodic trigger attempt; it reports whether it triggered.
func (c *Coordinator) tick() (bool, error) {
	if c.InFlight() >= c.cfg.MaxInFlight {
		return false, nil
	}
	if _, err := c.Trigger(); err != nil {
		return false, err
	}
	return true, nil
}

// Stop ends the periodic trigger and every timeout, and aborts the checkpoints still in flight (OnAbort, no
// OnFailure: the job is going away, not rewinding). Later triggers are refused and later acks ignored. A
// checkpoint whose marker is being written completes or fails by that write, but is not committed
// (ErrCommitDeferred). When Stop returns, no marker write is in progress or will start, so the restore point on
// disk is final for this incarnation; callbacks already queued may still be finishing on the coordinator's goroutine (Drain waits for
// them). Call it before the participants are torn down.
func (c *Coordinator) Stop() {
	c.mu.Lock()
	c.stopped = true
	stop, done := c.loopStop, c.loopDone
	for _, id := range c.inFlightLocked() {
		// A checkpoint whose marker is being written is left to the write: it completes or fails by it.
		if k := c.ckpts[id]; k.state != publishing {
			c.abortLocked(k, fmt.Errorf("checkpoint %d: %w", id, ErrStopped), false)
		}
	}
	c.unlockAndDrain()
	if stop != nil {
		stop()
		<-done
	}
	c.markerMu.Lock() // wait out a marker write in progress; none starts after stopped is set
	c.markerMu.Unlock()
}

// Drain waits until every queued callback (and retention) has run: after Stop and Drain nothing of this
// coordinator touches the job's files. Never call it from a callback.
func (c *Coordinator) Drain() { c.drains.Wait() }
