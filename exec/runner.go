package exec

import (
	"context"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"reflect"
	"sync"
	"time"

	"github.com/clinksql/clinksql/checkpoint"
	"github.com/clinksql/clinksql/state"
)

// Runner-owned keys in a subtask's state.
var (
	keyInputWatermarks = state.OperatorKey(StateKeyInputWatermarks)
	keySourceOffset    = state.OperatorKey(StateKeySourceOffset)
	keySourceWatermark = state.OperatorKey(StateKeySourceWatermark)
	// keyCounts is a subtask's counts up to the checkpoint (rows emitted - a source's rows read, a sink's rows
	// written -, late rows, bad values, rows taken from the inputs): a restart rewinds the job's counts to what
	// the restored checkpoint counted, so what the restart replays is counted once. Checkpoints of older builds
	// hold the first three only.
	keyCounts = state.OperatorKey(StateKeyCounts)
	// keyInflight is set in the state of a checkpoint that has an in-flight log (unaligned here), so a restore
	// tells a log that was never written from one that went missing.
	keyInflight = state.OperatorKey(StateKeyInflight)
)

// inflightSuffix names the in-flight log of an unaligned checkpoint: beside the subtask's snapshot directory, as
// chk-<id>/<participant>.inflight.
const inflightSuffix = ".inflight"

// subtask is what every runner shares: its place in the job, its state and its snapshot worker.
type subtask struct {
	inc     *incarnation
	node    *Node
	index   int
	pid     checkpoint.ParticipantID
	backend state.Backend
	tctx    *TaskContext
	worker  *checkpoint.SnapshotWorker
	out     *output // nil for sinks
	// st holds the subtask's figures (counts since the job started, restored: see keyCounts), owned by the job.
	st *subStats
	// inflightKey mirrors whether keyInflight is set in backend (so an aligned checkpoint deletes it only once).
	inflightKey bool
	// indoubt is set for the subtasks of a sink whose commit is not recoverable (indoubt.go).
	indoubt *inDoubtSub
	// inputWM is the subtask's combined input watermark (operators and sinks; set by runInputs).
	inputWM func() int64
	// barrierWMs, for a sink subtask, records its input watermark at each barrier for its node (CommitFinisher).
	barrierWMs *barrierWatermarks
	// align, for an aligned source subtask, is the job's watermark alignment, alignSlot its slot there (align.go).
	align     *aligner
	alignSlot int
	// prevFiles are the files of the subtask's last persisted snapshot (snapshot worker only; notePersisted).
	prevFiles map[string]int64
}

// restoreCounts reads the subtask's counts at the restored checkpoint and adds them to its figures, whose parents
// carry them to the job's (rows in for a source's output, rows out for a sink's).
func (s *subtask) restoreCounts() error {
	v, ok, err := s.backend.Get(keyCounts)
	if err != nil || !ok {
		return err
	}
	c, err := DecodeCounts(v)
	if err != nil {
		return fmt.Errorf("%s: restored %w", s.pid, err)
	}
	s.st.rowsOut.Add(c.RowsOut)
	s.st.late.Add(c.Late)
	s.st.bad.Add(c.BadValues)
	s.st.rowsIn.Add(c.RowsIn)
	return nil
}

// stageCounts records the subtask's counts for the checkpoint being taken (before its capture).
func (s *subtask) stageCounts() {
	c := SubtaskCounts{RowsOut: s.st.rowsOut.Load(), Late: s.st.late.Load(), BadValues: s.st.bad.Load(), RowsIn: s.st.rowsIn.Load()}
	s.backend.Put(keyCounts, c.encode())
}

func (s *subtask) dir(id uint64) string { return checkpoint.SubtaskDir(s.inc.cpDir, id, s.pid) }

// enqueue hands persist work to the worker; ack reports its result. cleanup frees what the task holds exactly
// once: after it persisted, when a cancel dropped it, or when the worker did not take it.
func (s *subtask) enqueue(ctx context.Context, id uint64, persist func() error, ack func(error), cleanup func()) error {
	err := s.worker.Enqueue(ctx, checkpoint.Task{
		ID: id,
		Persist: func() error {
			defer cleanup()
			return persist()
		},
		Ack:     ack,
		Release: cleanup,
	})
	if err != nil {
		cleanup()
	}
	return err
}

// ack reports the subtask's figures for checkpoint id (read when the ack runs, after the persist that filled
// them) and acks it.
func (s *subtask) ack(id uint64, st *checkpoint.AckStats) func(error) {
	return func(err error) {
		if err == nil {
			s.inc.coord.Report(id, s.pid, *st)
		}
		s.inc.coord.Acknowledge(id, s.pid, err)
	}
}

// notePersisted reads the size of the snapshot just persisted at path (on the snapshot worker; at deploy, the
// restored one): the subtask's state size is all of its files, what the checkpoint added those the previous
// snapshot did not have (a keyed store's new delta and listing; the whole file of a small state). An unreadable
// size counts as nothing.
func (s *subtask) notePersisted(path string) (added int64) {
	files, err := state.SnapshotFiles(s.inc.fs, path, s.node.State == KeyedState)
	if err != nil {
		s.tctx.Log.Warn("reading the size of a persisted snapshot", "path", path, "err", err)
		return 0
	}
	var total int64
	for p, n := range files {
		total += n
		if _, ok := s.prevFiles[p]; !ok {
			added += n
		}
	}
	s.prevFiles = files
	s.st.stateBytes.Store(total)
	return added
}

// captureAndEnqueue captures the backend for barrier b and queues its persist. With a nil log the persist task
// acks the checkpoint; otherwise the log's task will, once the log is complete. alignWait is how long alignment
// held one of the subtask's inputs for b.
func (s *subtask) captureAndEnqueue(ctx context.Context, b checkpoint.Barrier, log *inflightLog, alignWait time.Duration) error {
	switch {
	case log != nil && !s.inflightKey:
		s.backend.Put(keyInflight, []byte{1})
		s.inflightKey = true
	case log == nil && s.inflightKey:
		s.backend.Delete(keyInflight)
		s.inflightKey = false
	}
	snap, err := s.backend.Capture(b.ID)
	if err != nil {
		s.inc.coord.Acknowledge(b.ID, s.pid, fmt.Errorf("%s: capture: %w", s.pid, err))
		return err
	}
	dir := s.dir(b.ID)
	handle := func() error { return nil }
	if s.indoubt != nil {
		handle = s.indoubt.persistHandle(b.ID)
	}
	stats := &checkpoint.AckStats{AlignWait: alignWait}
	persist := func() error {
		if err := s.inc.fs.MkdirAll(filepath.Dir(dir)); err != nil {
			return err
		}
		// The handle is durable before the ack: COMPLETED-<id> then implies every sink subtask's handle of id.
		if err := handle(); err != nil {
			return err
		}
		// A file: the small state, or a keyed store's chain listing (state.SnapshotFiles).
		if err := snap.Persist(dir); err != nil {
			return err
		}
		stats.Bytes = s.notePersisted(dir)
		return nil
	}
	if log == nil {
		return s.enqueue(ctx, b.ID, persist, s.ack(b.ID, stats), snap.Release)
	}
	return s.enqueue(ctx, b.ID, persist, func(err error) { log.stateErr, log.stateBytes = err, stats.Bytes }, snap.Release)
}

// enqueueLog queues the persist of a complete in-flight log and the checkpoint's ack.
func (s *subtask) enqueueLog(ctx context.Context, log *inflightLog) error {
	dir := s.dir(log.id)
	alloc := s.tctx.Alloc
	stats := &checkpoint.AckStats{}
	persist := func() error {
		if log.stateErr != nil {
			return log.stateErr
		}
		data, err := encodeInflight(log.elements, alloc)
		if err != nil {
			return err
		}
		if err := state.WriteFramed(s.inc.fs, dir+inflightSuffix, data); err != nil {
			return err
		}
		stats.InflightBytes = int64(len(data))
		stats.Bytes = log.stateBytes + stats.InflightBytes
		return nil
	}
	return s.enqueue(ctx, log.id, persist, s.ack(log.id, stats), log.release)
}

// finish joins the worker (draining on a clean end, dropping on cancel) and closes the state.
func (s *subtask) finish(clean bool) {
	if clean {
		s.worker.DrainAndJoin()
	} else {
		s.worker.CancelAndJoin()
	}
	s.backend.Close()
}

// ---- sources ----

// runSource drives a source subtask: barriers enter here only between Produce calls.
func (s *subtask) runSource(ctx context.Context, src Source, barriers *barrierQueue) (err error) {
	wm := MinWatermark
	if v, ok, err := s.backend.Get(keySourceWatermark); err != nil {
		return err
	} else if ok && len(v) == 8 {
		wm = int64(binary.BigEndian.Uint64(v))
	}
	if err := s.restoreCounts(); err != nil {
		return err
	}
	if v, ok, err := s.backend.Get(keySourceOffset); err != nil {
		return err
	} else if ok {
		if err := src.RestoreOffset(v); err != nil {
			return fmt.Errorf("restore offset: %w", err)
		}
	}
	if err := src.Open(s.tctx); err != nil {
		return fmt.Errorf("open: %w", err)
	}
	defer func() {
		if cerr := src.Close(); err == nil && cerr != nil {
			err = cerr
		}
	}()
	s.st.wm.Store(wm)
	s.publishWM(wm, false)
	if wm != MinWatermark {
		if err := s.out.broadcast(WatermarkElement(wm)); err != nil {
			return err
		}
	}
	finished := false
	idleSince := time.Time{}
	idleSent := false
	markers := newMarkerClock(s.inc.job.cfg)
	var heldSince time.Time // when watermark alignment began to hold the subtask; zero while it is not held
	heldWarned := false
	for {
		for _, b := range barriers.takeAll() {
			if s.node.ModeOverride != nil && !b.Terminal {
				b.Mode = *s.node.ModeOverride
			}
			// Stage the offset for exactly this barrier: checkpoint N must never record N+1's offset.
			off, err := snapshotOffset(src, b.ID)
			if err != nil {
				s.inc.coord.Acknowledge(b.ID, s.pid, err)
				return fmt.Errorf("snapshot offset: %w", err)
			}
			s.backend.Put(keySourceOffset, off)
			s.backend.Put(keySourceWatermark, binary.BigEndian.AppendUint64(nil, uint64(wm)))
			s.stageCounts()
			if err := s.captureAndEnqueue(ctx, b, nil, 0); err != nil {
				return err
			}
			if err := s.out.broadcast(BarrierElement(b)); err != nil {
				return err
			}
			if b.Terminal {
				return s.out.broadcast(Element{Kind: KindEnd})
			}
		}
		if finished {
			select {
			case <-barriers.ready:
				continue
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		if s.align != nil {
			if held := s.align.hold(s.alignSlot, wm); held != nil {
				// Ahead of the slowest aligned source: wait for it, taking barriers meanwhile.
				if heldSince.IsZero() {
					heldSince = time.Now()
				}
				var warn <-chan time.Time
				if !heldWarned {
					warn = time.After(alignWarnAfter - time.Since(heldSince))
				}
				select {
				case <-held:
				case <-barriers.ready:
				case <-warn:
					heldWarned = true
					s.tctx.Log.Warn("source held by watermark alignment: the slowest source of the job is behind by "+
						"more than watermark.alignment.max_drift and has not caught up", "held_for", time.Since(heldSince).Round(time.Second),
						"watermark_us", wm, "slowest_us", s.align.slowest(s.alignSlot))
				case <-ctx.Done():
					return ctx.Err()
				}
				continue
			}
			heldSince, heldWarned = time.Time{}, false
		}
		s.st.startBusy() // ended below, or by the runner when the loop returns
		res, err := src.Produce(ctx)
		if err != nil {
			return err
		}
		switch res.Status {
		case Produced:
			idleSince, idleSent = time.Time{}, false
			// Published before the batch goes out: whatever its rows lead to downstream, the other sources
			// already know where this one is.
			s.publishWM(max(wm, res.WM), false)
			err := s.out.Emit(res.Batch)
			if err == nil && res.WM > wm {
				wm = res.WM
				s.st.wm.Store(wm)
				err = s.out.broadcast(WatermarkElement(wm))
			}
			if err == nil {
				if t, due := markers.due(); due {
					err = s.out.marker(Element{Kind: KindMarker, Marker: t})
				}
			}
			s.st.endBusy()
			if err != nil {
				return err
			}
		case Idle:
			// A multi-split source's watermark can advance with no new rows: a split that went idle stops holding
			// it back. Forward it, or windows its other splits closed wait for rows that may never come.
			if res.WM > wm {
				wm = res.WM
				s.st.wm.Store(wm)
				if err := s.out.broadcast(WatermarkElement(wm)); err != nil {
					return err
				}
			}
			s.publishWM(max(wm, res.WM), true)
			if idleSince.IsZero() {
				idleSince = time.Now()
			}
			if to := s.node.IdleTimeout; to > 0 && !idleSent && time.Since(idleSince) >= to {
				idleSent = true
				if err := s.out.broadcast(Element{Kind: KindWatermark, WM: wm, Idle: true}); err != nil {
					return err
				}
			}
			s.st.endBusy() // waiting for data is idle time
			// A source that can say when it has data again is woken by that; the others are polled.
			var wake <-chan struct{}
			poll := time.Millisecond
			if w, ok := src.(IdleWaiter); ok {
				if wake = w.IdleWait(); wake != nil {
					poll = 50 * time.Millisecond
				}
			}
			select {
			case <-barriers.ready:
			case <-wake:
			case <-time.After(poll):
			case <-ctx.Done():
				return ctx.Err()
			}
		case Finished:
			finished = true
			wm = MaxWatermark
			s.st.wm.Store(wm)
			s.publishWM(wm, false)
			if err := s.out.broadcast(WatermarkElement(MaxWatermark)); err != nil {
				return err
			}
			s.st.endBusy()
			s.inc.sourceFinished()
		}
	}
}

// publishWM tells the job's watermark alignment, if the subtask takes part, its watermark and whether it is idle.
func (s *subtask) publishWM(wm int64, idle bool) {
	if s.align != nil {
		s.align.update(s.alignSlot, wm, idle)
	}
}

// barrierQueue hands barriers from the coordinator's injector to a source's loop.
type barrierQueue struct {
	mu    sync.Mutex
	queue []checkpoint.Barrier
	ready chan struct{}
}

func newBarrierQueue() *barrierQueue { return &barrierQueue{ready: make(chan struct{}, 1)} }

func (q *barrierQueue) inject(b checkpoint.Barrier) {
	q.mu.Lock()
	q.queue = append(q.queue, b)
	q.mu.Unlock()
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

func (q *barrierQueue) takeAll() []checkpoint.Barrier {
	q.mu.Lock()
	defer q.mu.Unlock()
	bs := q.queue
	q.queue = nil
	return bs
}

// ---- operators and sinks ----

// input is one channel into a subtask: its own alignment input.
type input struct {
	ch      *channel
	logical int
	queue   []Element // received (drained, or replayed from an in-flight log) but not processed yet
	closed  bool
	wm      int64
	idle    bool
	seen    uint64 // the newest barrier id taken off the channel
}

// handlers is what differs between an operator and a sink subtask.
type handlers struct {
	process     func(logical int, b Batch) error
	onWatermark func(wm int64) error
	// snapshot runs at a barrier before the state capture: the operator flushes its write-back state, a sink
	// pre-commits.
	snapshot func(b checkpoint.Barrier) error
	// forward sends a watermark, barrier or end of input downstream.
	forward func(e Element) error
	// marker forwards a latency marker (an operator: to one channel of each output edge) or records it (a sink).
	marker func(e Element) error
	// hold maps the combined input watermark to the one forwarded (an operator that emits rows older than its
	// input watermark holds it back); nil forwards it as it is.
	hold func(wm int64) int64
	// timers, for an operator that is a ProcessingTimer, fires its processing-time timers; nil otherwise.
	timers *timerService
}

type inputRunner struct {
	s        *subtask
	ctx      context.Context
	h        handlers
	inputs   []*input
	aligner  *checkpoint.Aligner
	logs     map[uint64]*inflightLog
	combined int64
	idleOut  bool
	rr       int
	cases    []reflect.SelectCase
	caseIdx  []int
	// timers is set when the operator is a ProcessingTimer (proctime.go).
	timers *timerService
}

func newInputRunner(ctx context.Context, s *subtask, inputs []*input, canUnalign bool, h handlers) *inputRunner {
	a := checkpoint.NewAligner(len(inputs), canUnalign)
	if s.node.ModeOverride != nil {
		a.SetOverride(*s.node.ModeOverride)
	}
	return &inputRunner{s: s, ctx: ctx, h: h, inputs: inputs, aligner: a, logs: map[uint64]*inflightLog{}, combined: MinWatermark}
}

// restore reads the runner's own checkpointed state: input watermarks and the in-flight records of an
// unaligned checkpoint, which go first into each input's queue.
func (r *inputRunner) restore() error {
	v, ok, err := r.s.backend.Get(keyInputWatermarks)
	if err != nil {
		return err
	}
	if ok {
		if combined, wms, err := DecodeInputWatermarks(v); err == nil && len(wms) == len(r.inputs) {
			r.combined = combined
			for i, in := range r.inputs {
				in.wm = wms[i]
			}
		}
	}
	if r.s.tctx.Restored == 0 {
		return nil
	}
	if _, ok, err := r.s.backend.Get(keyInflight); err != nil {
		return err
	} else if !ok {
		return nil // the checkpoint was aligned here
	}
	r.s.inflightKey = true
	path := r.s.dir(r.s.tctx.Restored) + inflightSuffix
	data, err := state.MustReadFramed(r.s.inc.fs, path)
	if err != nil {
		return err
	}
	elems, err := decodeInflight(data, r.s.tctx.Alloc)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	for _, le := range elems {
		if le.input >= len(r.inputs) {
			return fmt.Errorf("%s: input %d out of range", path, le.input)
		}
		r.inputs[le.input].queue = append(r.inputs[le.input].queue, le.e)
	}
	return nil
}

func (r *inputRunner) saveWatermarks() {
	v := make([]byte, 8*(len(r.inputs)+1))
	binary.BigEndian.PutUint64(v, uint64(r.combined))
	for i, in := range r.inputs {
		binary.BigEndian.PutUint64(v[8*(i+1):], uint64(in.wm))
	}
	r.s.backend.Put(keyInputWatermarks, v)
}

// release drops every batch the runner still holds (queues and open logs) when it stops.
func (r *inputRunner) release() {
	for _, in := range r.inputs {
		for _, e := range in.queue {
			if e.Kind == KindBatch {
				e.Batch.Release()
			}
		}
		in.queue = nil
	}
	for id, l := range r.logs {
		l.release()
		delete(r.logs, id)
	}
}

func (r *inputRunner) allClosed() bool {
	for _, in := range r.inputs {
		if !in.closed {
			return false
		}
	}
	return true
}

// run processes elements until every input ended, then forwards end of input.
func (r *inputRunner) run() error {
	defer r.release()
	for !r.allClosed() {
		if err := r.drainAhead(); err != nil {
			return err
		}
		if err := r.overtake(); err != nil {
			return err
		}
		if r.allClosed() {
			break
		}
		i, e, err := r.next()
		if err != nil {
			return err
		}
		// Due processing-time timers fire before the element is handled: a barrier injected after the clock
		// passed a window's end then finds the window fired, so what a checkpoint holds follows the clock.
		if err := r.timers.fire(); err != nil {
			return err
		}
		if i < 0 {
			continue // woken by a timer, not an element
		}
		r.s.st.startBusy()
		err = r.handle(i, e)
		r.s.st.endBusy()
		if err != nil {
			return err
		}
	}
	if err := r.advanceWatermark(); err != nil {
		return err
	}
	return r.h.forward(Element{Kind: KindEnd})
}

// received logs an element taken off channel i into every open unaligned checkpoint that input i still owes a
// barrier for: such records precede that barrier at their source but are in no state captured for it.
func (r *inputRunner) received(i int, e Element) {
	if e.Kind == KindBarrier && e.Barrier.ID > r.inputs[i].seen {
		r.inputs[i].seen = e.Barrier.ID
	}
	if e.Kind != KindBatch && e.Kind != KindWatermark {
		return
	}
	for _, id := range r.aligner.PendingUnaligned(i) {
		if l := r.logs[id]; l != nil {
			l.add(i, e)
		}
	}
}

// drainAhead moves everything already buffered on an input into its queue when an unaligned barrier is on its
// way there: the input owes a barrier of an open unaligned checkpoint, or its producer announced one. The
// barrier then overtakes the records in front of it instead of waiting for them to be processed.
func (r *inputRunner) drainAhead() error {
	for i, in := range r.inputs {
		for !in.closed && !endsWithControl(in.queue) && r.barrierAhead(i) {
			var e Element
			got := false
			select {
			case e = <-in.ch.c:
				got = true
			default:
			}
			if !got { // nothing more is buffered
				break
			}
			if e.Kind == KindBarrier && r.owes(i, e.Barrier.ID) {
				r.received(i, e)
				if err := r.apply(r.aligner.OnBarrier(i, e.Barrier), -1, nil); err != nil {
					return err
				}
				continue
			}
			r.received(i, e)
			in.queue = append(in.queue, e)
		}
	}
	return nil
}

func (r *inputRunner) barrierAhead(i int) bool {
	if len(r.aligner.PendingUnaligned(i)) > 0 {
		return true
	}
	return r.aligner.CanUnalign() && r.inputs[i].ch.announced.Load() > r.inputs[i].seen
}

// overtake delivers an unaligned barrier that a drain left at the end of an input's queue ahead of the records
// in front of it; those records precede the barrier at their source and are in no state it captures, so they go
// into its in-flight log (and are still processed afterwards, in the next epoch).
func (r *inputRunner) overtake() error {
	for i, in := range r.inputs {
		if !endsWithControl(in.queue) || r.aligner.Paused(i) {
			continue
		}
		last := in.queue[len(in.queue)-1]
		if last.Kind != KindBarrier || !r.aligner.Unaligns(last.Barrier) {
			continue
		}
		in.queue[len(in.queue)-1] = Element{}
		in.queue = in.queue[:len(in.queue)-1]
		if err := r.apply(r.aligner.OnBarrier(i, last.Barrier), i, in.queue); err != nil {
			return err
		}
	}
	return nil
}

func (r *inputRunner) owes(i int, id uint64) bool {
	for _, p := range r.aligner.PendingUnaligned(i) {
		if p == id {
			return true
		}
	}
	return false
}

// endsWithControl reports whether a queue ends in a barrier or end of input that must be handled in order before
// anything behind it is taken off the channel.
func endsWithControl(q []Element) bool {
	return len(q) > 0 && (q[len(q)-1].Kind == KindBarrier || q[len(q)-1].Kind == KindEnd)
}

// next returns the next element to handle: queued elements first (round robin over unpaused inputs), then a
// blocking receive on the unpaused inputs with empty queues, which a due processing-time timer ends with i = -1.
func (r *inputRunner) next() (int, Element, error) {
	n := len(r.inputs)
	for k := 0; k < n; k++ {
		i := (r.rr + k) % n
		in := r.inputs[i]
		if len(in.queue) > 0 && !r.aligner.Paused(i) {
			r.rr = i + 1
			e := in.queue[0]
			in.queue[0] = Element{}
			in.queue = in.queue[1:]
			return i, e, nil
		}
	}
	// Poll the channels round robin from where the last element came from: inputs take turns in a fixed order,
	// so no input starves and a run is repeatable.
	for k := 0; k < n; k++ {
		i := (r.rr + k) % n
		in := r.inputs[i]
		if in.closed || len(in.queue) > 0 || r.aligner.Paused(i) {
			continue
		}
		select {
		case e := <-in.ch.c:
			r.rr = i + 1
			r.received(i, e)
			return i, e, nil
		default:
		}
	}
	r.cases = r.cases[:0]
	r.caseIdx = r.caseIdx[:0]
	for i, in := range r.inputs {
		if in.closed || r.aligner.Paused(i) || len(in.queue) > 0 {
			continue
		}
		r.cases = append(r.cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(in.ch.c)})
		r.caseIdx = append(r.caseIdx, i)
	}
	var i int
	var e Element
	timer := r.timers.waitChan()
	switch len(r.caseIdx) {
	case 0:
		return 0, Element{}, fmt.Errorf("%s: no input to read (alignment wedged)", r.s.pid)
	case 1:
		i = r.caseIdx[0]
		select {
		case e = <-r.inputs[i].ch.c:
		case <-timer:
			return -1, Element{}, nil
		case <-r.ctx.Done():
			return 0, Element{}, r.ctx.Err()
		}
	default:
		r.cases = append(r.cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(r.ctx.Done())})
		if timer != nil {
			r.cases = append(r.cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(timer)})
		}
		chosen, v, _ := reflect.Select(r.cases)
		if chosen == len(r.caseIdx) {
			return 0, Element{}, r.ctx.Err()
		}
		if chosen > len(r.caseIdx) {
			return -1, Element{}, nil
		}
		i = r.caseIdx[chosen]
		e = v.Interface().(Element)
	}
	r.rr = i + 1
	r.received(i, e)
	return i, e, nil
}

func (r *inputRunner) handle(i int, e Element) error {
	in := r.inputs[i]
	switch e.Kind {
	case KindBatch:
		if in.idle {
			in.idle = false
		}
		r.s.st.rowsIn.Add(int64(e.Batch.Rows()))
		return r.h.process(in.logical, e.Batch)
	case KindWatermark:
		if e.WM > in.wm {
			in.wm = e.WM
		}
		in.idle = e.Idle
		return r.advanceWatermark()
	case KindBarrier:
		return r.apply(r.aligner.OnBarrier(i, e.Barrier), -1, nil)
	case KindMarker:
		// Not a row and not state: it passes the operator by, after everything before it on its channel.
		if r.h.marker == nil {
			return nil
		}
		return r.h.marker(e)
	case KindEnd:
		in.closed = true
		in.wm = MaxWatermark
		for _, adv := range r.aligner.OnInputClosed(i) {
			if err := r.apply(adv, -1, nil); err != nil {
				return err
			}
		}
		return r.advanceWatermark()
	}
	return fmt.Errorf("unknown element kind %v", e.Kind)
}

// advanceWatermark recomputes the min over inputs (finished = +inf, idle inputs excluded) and, when it moved,
// lets the operator fire and forwards it.
func (r *inputRunner) advanceWatermark() error {
	wm, active, open := MaxWatermark, false, false
	for _, in := range r.inputs {
		if in.closed {
			continue
		}
		open = true
		if in.idle {
			continue
		}
		active = true
		if in.wm < wm {
			wm = in.wm
		}
	}
	if open && !active {
		if !r.idleOut {
			r.idleOut = true
			return r.h.forward(Element{Kind: KindWatermark, WM: r.held(r.combined), Idle: true})
		}
		return nil
	}
	r.idleOut = false
	if wm <= r.combined {
		return nil
	}
	r.combined = wm
	if err := r.h.onWatermark(wm); err != nil {
		return err
	}
	out := r.held(wm)
	r.s.st.wm.Store(out)
	return r.h.forward(WatermarkElement(out))
}

// held is the watermark forwarded for combined input watermark wm.
func (r *inputRunner) held(wm int64) int64 {
	if r.h.hold == nil || wm == MaxWatermark || wm == MinWatermark {
		return wm
	}
	return r.h.hold(wm)
}

// apply carries out what the aligner decided for one barrier delivery. overtaken lists the records of input
// `from` that the barrier overtook (queued ahead of it, not processed): an unaligned checkpoint logs them.
func (r *inputRunner) apply(adv checkpoint.Advance, from int, overtaken []Element) error {
	b := adv.Barrier
	switch {
	case adv.Forward && adv.UnalignedFirst:
		if err := r.snapshot(b); err != nil {
			return err
		}
		log := &inflightLog{id: b.ID}
		if err := r.s.captureAndEnqueue(r.ctx, b, log, 0); err != nil {
			log.release()
			return err
		}
		if err := r.h.forward(BarrierElement(b)); err != nil {
			log.release()
			return err
		}
		// What is queued on the inputs that still owe this barrier was received before it and is in no state
		// just captured: it starts the log, after what the barrier overtook on its own input. A queue may end in
		// that very barrier; it is delivered now.
		for _, e := range overtaken {
			log.add(from, e)
		}
		var owed []int
		for _, i := range r.aligner.PendingInputs(b.ID) {
			in := r.inputs[i]
			for _, e := range in.queue {
				log.add(i, e)
			}
			if len(in.queue) > 0 {
				last := in.queue[len(in.queue)-1]
				if last.Kind == KindBarrier && last.Barrier.ID == b.ID {
					in.queue = in.queue[:len(in.queue)-1]
					owed = append(owed, i)
				}
			}
		}
		if adv.Complete {
			return r.s.enqueueLog(r.ctx, log)
		}
		r.logs[b.ID] = log
		for _, i := range owed {
			if err := r.apply(r.aligner.OnBarrier(i, b), -1, nil); err != nil {
				return err
			}
		}
		return nil
	case adv.Forward: // aligned: every alive input delivered the barrier
		r.s.inc.stats.alignWait.Add(int64(adv.AlignWait))
		if err := r.snapshot(b); err != nil {
			return err
		}
		if err := r.s.captureAndEnqueue(r.ctx, b, nil, adv.AlignWait); err != nil {
			return err
		}
		return r.h.forward(BarrierElement(b))
	case adv.Complete: // unaligned: the last input delivered; the in-flight log is complete
		log := r.logs[b.ID]
		delete(r.logs, b.ID)
		if log == nil {
			return fmt.Errorf("%s: unaligned checkpoint %d completed without a log", r.s.pid, b.ID)
		}
		return r.s.enqueueLog(r.ctx, log)
	}
	return nil
}

// snapshot lets the operator write its state (or the sink pre-commit) and records the runner's watermarks.
func (r *inputRunner) snapshot(b checkpoint.Barrier) error {
	if err := r.h.snapshot(b); err != nil {
		r.s.inc.coord.Acknowledge(b.ID, r.s.pid, err)
		return fmt.Errorf("snapshot for checkpoint %d: %w", b.ID, err)
	}
	r.saveWatermarks()
	r.s.stageCounts()
	return nil
}

// snapshotOffset is src's offset at barrier id: SnapshotOffsetAt(id) for a CheckpointOffsetter.
func snapshotOffset(src Source, id uint64) ([]byte, error) {
	if co, ok := src.(CheckpointOffsetter); ok {
		return co.SnapshotOffsetAt(id)
	}
	return src.SnapshotOffset()
}
