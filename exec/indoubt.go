package exec

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clinksql/clinksql/checkpoint"
	"github.com/clinksql/clinksql/state"
)

// This file is the runtime side of the seed's protocol for sinks whose commit cannot be re-executed after a crash
// (Node.CommitNotRecoverable, InDoubtSink): handles, confirmations, in-doubt resolution, commit receipts,
// unresolved markers and replay suppression. checkpoint/doc.go lists the failure stories and where each is
// prevented; docs/checkpointing.md describes what a user sees.

// inDoubtNodes lists the sink nodes whose commit is not recoverable, in graph order.
func (j *Job) inDoubtNodes() []*Node {
	var ns []*Node
	for _, n := range j.g.Nodes {
		if n.Kind == SinkNode && n.CommitNotRecoverable {
			ns = append(ns, n)
		}
	}
	return ns
}

// confirmers are the participants whose commits confirm a checkpoint: every sink subtask of a job that tracks
// confirmations, none otherwise (the job then behaves exactly as before: no tracking, no CONFIRMED markers).
func (j *Job) confirmers() []checkpoint.ParticipantID {
	if len(j.inDoubtNodes()) == 0 {
		return nil
	}
	var ps []checkpoint.ParticipantID
	for _, n := range j.g.Nodes {
		if n.Kind == SinkNode {
			for sub := 0; sub < n.Parallelism; sub++ {
				ps = append(ps, participantID(n, sub))
			}
		}
	}
	return ps
}

// resolverOf is the InDoubtResolver of a sink node: a sink instance that is never opened.
func resolverOf(n *Node, sub int) (InDoubtResolver, error) {
	r, ok := n.newSink(sub).(InDoubtResolver)
	if !ok {
		return nil, fmt.Errorf("sink %s: its commit is not recoverable, but it has no in-doubt resolver", n.ID)
	}
	return r, nil
}

// inDoubtError is a refusal of the in-doubt machinery. permanent: a restart would meet the same answer (an
// operator must act), so the job fails at once.
type inDoubtError struct {
	msg       string
	permanent bool
	err       error
}

func (e *inDoubtError) Error() string {
	if e.err != nil {
		return e.msg + ": " + e.err.Error()
	}
	return e.msg
}
func (e *inDoubtError) Unwrap() error   { return e.err }
func (e *inDoubtError) Permanent() bool { return e.permanent }

// ---- in-doubt resolution (before restore-point selection) ----

// walkHandle is one sink subtask's handle in a checkpoint the walk looks at.
type walkHandle struct {
	node *Node
	sub  int
	pid  checkpoint.ParticipantID
}

func (j *Job) walkHandles() []walkHandle {
	var hs []walkHandle
	for _, n := range j.inDoubtNodes() {
		for sub := 0; sub < n.Parallelism; sub++ {
			hs = append(hs, walkHandle{node: n, sub: sub, pid: participantID(n, sub)})
		}
	}
	return hs
}

// walk is one run of in-doubt resolution over the completed-but-unconfirmed checkpoints ids (ascending, all
// above the newest confirmed one). It returns the ids it confirmed and, when it stopped early, why.
type walkResult struct {
	confirmed []uint64
	stopped   bool
	err       error // an unreadable handle (XX001), or the cancel
}

// resolveInDoubt runs in-doubt resolution before the restore point is chosen, holding the deploy while it runs:
// each completed-but-unconfirmed checkpoint above the newest confirmed one, in id order, is committed through
// its handles (a receipt is proof with no wire call; the rest go to the resolver) and confirmed when every handle
// is; the first checkpoint that cannot be leaves unresolved markers for itself and every completed checkpoint
// above it, which are then abandoned, and the job restores from the newest confirmed checkpoint.
//
// The walk runs under JobConfig.InDoubtDeadline: past it the walk is cancelled, writes its markers and returns;
// a walk still running InDoubtGrace after its cancel is taken as hung and fails the job.
func (j *Job) resolveInDoubt(parent context.Context) error {
	fsys, dir := j.cfg.FS, j.cpDir
	completed, err := checkpoint.CompletedIDs(fsys, dir)
	if err != nil {
		return err
	}
	confirmed, err := checkpoint.ConfirmedIDs(fsys, dir)
	if err != nil {
		return err
	}
	var floor uint64
	if len(confirmed) > 0 {
		floor = confirmed[len(confirmed)-1]
	}
	var ids []uint64
	for _, id := range completed {
		if id > floor {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	resolvers := map[*Node]InDoubtResolver{}
	for _, n := range j.inDoubtNodes() {
		r, err := resolverOf(n, 0)
		if err != nil {
			return err
		}
		resolvers[n] = r
	}
	log := j.cfg.Logger
	log.Info("in-doubt resolution: checkpoints completed but not confirmed", "checkpoints", ids, "confirmed", floor)
	ctx, cancel := context.WithTimeout(parent, j.cfg.InDoubtDeadline)
	defer cancel()
	done := make(chan walkResult, 1)
	go func() { done <- j.walk(ctx, ids, resolvers) }()
	var res walkResult
	select {
	case res = <-done:
	case <-ctx.Done():
		select {
		case res = <-done:
		case <-time.After(j.cfg.InDoubtGrace):
			// The walk ignores its cancel: it may still commit transactions and write markers behind a deploy.
			// Nothing may deploy over it.
			return &inDoubtError{permanent: true, msg: fmt.Sprintf("job %s: in-doubt resolution of checkpoints %v "+
				"did not stop within %s of its cancel (deadline %s): it is hung, the job fails rather than deploy "+
				"over it", j.cfg.Name, ids, j.cfg.InDoubtGrace, j.cfg.InDoubtDeadline)}
		}
	}
	if !res.stopped {
		log.Info("in-doubt resolution: every completed checkpoint committed and confirmed", "checkpoints", res.confirmed)
		return nil
	}
	if parent.Err() != nil {
		return parent.Err()
	}
	if c, ok := state.IsCorrupt(res.err); ok {
		return c // markers for the rest are written; an operator must look at the damaged handle
	}
	// Fall back to the newest confirmed checkpoint: the completed ones above it are abandoned (never restore
	// points again; a recoverable sink's recovery no longer commits them), their unsettled handles are marked.
	confirmed, err = checkpoint.ConfirmedIDs(fsys, dir)
	if err != nil {
		return err
	}
	target := uint64(0)
	if len(confirmed) > 0 {
		target = confirmed[len(confirmed)-1]
	}
	var above []uint64
	for _, id := range ids {
		if id > target {
			above = append(above, id)
		}
	}
	if err := j.refuseFallbackIfPublished(target, above[0], "is in doubt", res.err, true); err != nil {
		return err
	}
	// Newest first: a crash part way leaves a contiguous run of completed checkpoints above the target, so a later
	// walk can never confirm a checkpoint above one it abandoned (restoring from it would skip that interval).
	desc := slices.Clone(above)
	slices.Reverse(desc)
	if err := checkpoint.Abandon(fsys, dir, desc); err != nil {
		return err
	}
	log.Warn("in-doubt resolution stopped: restoring from the newest confirmed checkpoint; replay of receipted "+
		"intervals is suppressed, unresolved transactions are settled when their sink opens",
		"restore", target, "abandoned", above, "err", res.err)
	return nil
}

// walk resolves ids in order (see resolveInDoubt). It checks ctx before every probe and every store write, and
// between a probe's answer and acting on it; the unresolved markers of an early stop are the one store effect a
// cancel does not suppress.
func (j *Job) walk(ctx context.Context, ids []uint64, resolvers map[*Node]InDoubtResolver) walkResult {
	fsys, dir, log := j.cfg.FS, j.cpDir, j.cfg.Logger
	var res walkResult
	handles := j.walkHandles()
	for i, id := range ids {
		settled := true
		for _, wh := range handles {
			if err := ctx.Err(); err != nil {
				return j.stopWalk(res, ids[i:], err)
			}
			if checkpoint.HasReceipt(fsys, dir, wh.node.ID, wh.sub, id) {
				// The receipt is proof that the commit executed: no wire call.
				log.Info("in-doubt resolution: commit receipt taken as proof", "checkpoint", id, "sink", wh.node.ID, "subtask", wh.sub)
				continue
			}
			h, err := checkpoint.ReadStagedHandle(fsys, checkpoint.HandlePath(dir, id, wh.pid), id, wh.pid)
			if errors.Is(err, fs.ErrNotExist) {
				err = state.Corrupt(checkpoint.HandlePath(dir, id, wh.pid), err, "missing: checkpoint %d completed, "+
					"so every sink subtask stored its handle before acking it", id)
			}
			if err != nil {
				return j.stopWalk(res, ids[i:], err)
			}
			if len(h.Handle) == 0 {
				continue // nothing staged
			}
			v, err := j.probe(ctx, resolvers[wh.node], wh, h)
			if err == nil {
				err = ctx.Err() // between the answer and acting on it
			}
			if err != nil {
				return j.stopWalk(res, ids[i:], err)
			}
			log.Info("in-doubt resolution: handle probed", "checkpoint", id, "sink", wh.node.ID, "subtask", wh.sub, "verdict", v.String())
			if v != VerdictCommitted {
				settled = false // every handle is still probed before deciding: a refusal must not leave later ones unproven
				continue
			}
			// A commit proven over the wire gets its receipt, or replay suppression could not see it.
			if err := ctx.Err(); err != nil {
				return j.stopWalk(res, ids[i:], err)
			}
			if err := checkpoint.WriteStagedHandle(fsys, checkpoint.ReceiptPath(dir, wh.node.ID, wh.sub, id), h); err != nil {
				return j.stopWalk(res, ids[i:], fmt.Errorf("commit receipt: %w", err))
			}
		}
		if !settled {
			return j.stopWalk(res, ids[i:], fmt.Errorf("checkpoint %d: a transaction is not proven committed", id))
		}
		if err := ctx.Err(); err != nil {
			return j.stopWalk(res, ids[i:], err)
		}
		if err := checkpoint.WriteConfirmed(fsys, dir, id); err != nil {
			return j.stopWalk(res, ids[i:], err)
		}
		log.Info("in-doubt resolution: checkpoint committed and confirmed", "checkpoint", id)
		res.confirmed = append(res.confirmed, id)
	}
	return res
}

// probe asks the resolver to commit h, retrying transport errors with backoff until ctx ends.
func (j *Job) probe(ctx context.Context, r InDoubtResolver, wh walkHandle, h checkpoint.StagedHandle) (Verdict, error) {
	backoff := j.cfg.InDoubtBackoff
	for {
		if err := ctx.Err(); err != nil {
			return VerdictUnknown, err
		}
		v, err := r.ResolveCommit(ctx, h.Handle)
		if err == nil {
			return v, nil
		}
		j.cfg.Logger.Warn("in-doubt resolution: no answer, retrying", "checkpoint", h.ID, "sink", wh.node.ID,
			"subtask", wh.sub, "err", err, "backoff", backoff)
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return VerdictUnknown, fmt.Errorf("%w (last transport error: %v)", ctx.Err(), err)
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// stopWalk ends the walk early at ids[0]: every handle without a receipt staged in ids[0] and in every completed
// checkpoint above it gets an unresolved marker - whatever the cancel says, since the marker is what makes the
// sink's next open settle the transaction instead of fencing it blind.
func (j *Job) stopWalk(res walkResult, ids []uint64, cause error) walkResult {
	fsys, dir := j.cfg.FS, j.cpDir
	res.stopped, res.err = true, cause
	var marked []string
	for _, id := range ids {
		for _, wh := range j.walkHandles() {
			if checkpoint.HasReceipt(fsys, dir, wh.node.ID, wh.sub, id) {
				continue
			}
			h, err := checkpoint.ReadStagedHandle(fsys, checkpoint.HandlePath(dir, id, wh.pid), id, wh.pid)
			if err != nil {
				if _, ok := state.IsCorrupt(res.err); !ok && !errors.Is(err, fs.ErrNotExist) {
					res.err = errors.Join(res.err, err)
				}
				continue
			}
			if len(h.Handle) == 0 {
				continue
			}
			if err := checkpoint.WriteStagedHandle(fsys, checkpoint.UnresolvedPath(dir, wh.node.ID, wh.sub, id), h); err != nil {
				res.err = errors.Join(res.err, fmt.Errorf("unresolved marker: %w", err))
				continue
			}
			marked = append(marked, fmt.Sprintf("%s/sub%d-%d", wh.node.ID, wh.sub, id))
		}
	}
	j.cfg.Logger.Warn("in-doubt resolution stopped", "at", ids[0], "cause", cause, "unresolved_markers", marked)
	return res
}

// fellBackPastAll reports whether a job that tracks confirmations has no restore point because in-doubt
// resolution fell back past every completed checkpoint (they are abandoned, not lost): the job then starts from
// scratch with its receipts suppressing what it published, instead of failing as a job whose checkpoints vanished.
func (j *Job) fellBackPastAll() bool {
	if len(j.confirmers()) == 0 {
		return false
	}
	ids, err := checkpoint.AbandonedIDs(j.cfg.FS, j.cpDir)
	return err == nil && len(ids) > 0
}

// refuseFallbackIfPublished refuses a restore from target instead of checkpoint from (which "is damaged" or "is in
// doubt": why) when a sink already published output of a checkpoint after target (restoring it would publish that
// output again). Sinks whose commit is not recoverable are skipped when skipInDoubt is set: receipts and replay
// suppression cover them.
func (j *Job) refuseFallbackIfPublished(target, from uint64, why string, cause error, skipInDoubt bool) error {
	for _, n := range j.g.Nodes {
		if n.Kind != SinkNode || (skipInDoubt && n.CommitNotRecoverable) {
			continue
		}
		ctx := &TaskContext{Job: j.cfg.Name, Operator: n.ID, Parallelism: n.Parallelism, FS: j.cfg.FS}
		pc, ok := n.newSink(0).(PublishChecker)
		if !ok {
			return fmt.Errorf("checkpoint %d %s, and falling back to checkpoint %d is refused: sink %s "+
				"cannot tell whether it published output after it: %w", from, why, target, n.ID, cause)
		}
		published, err := pc.PublishedAfter(ctx, target)
		if err != nil {
			return err
		}
		if published != "" {
			return fmt.Errorf("checkpoint %d %s, and falling back to checkpoint %d is refused: sink %s "+
				"already published output after it (%s), which the fallback would publish again: %w",
				from, why, target, n.ID, published, cause)
		}
	}
	return nil
}

// ---- the sink subtask side: handles, receipts, markers, suppression ----

// inDoubtSub is what the runtime keeps for one subtask of an InDoubtSink node.
type inDoubtSub struct {
	s *subtask
	// staged is the handle of the barrier being snapshotted: set by the sink's snapshot, written (durable before
	// the ack) by the persist task of the same checkpoint.
	staged *checkpoint.StagedHandle

	mu       sync.Mutex
	horizons map[uint64]int64 // id -> horizon of the handles staged by this incarnation, until receipted

	// Replay suppression, subtask goroutine only: while suppressing, replayed rows whose row time is at or below
	// horizon are dropped (they belong to receipted checkpoints above the restore point). keep is the filter
	// mask's scratch.
	suppressing bool
	horizon     int64
	suppressed  int64
	keep        []byte
}

// stage runs right after PreCommit(id): the handle, with the input watermark at the barrier.
func (d *inDoubtSub) stage(sink InDoubtSink, id uint64, wm int64) error {
	h, err := sink.Handle(id)
	if err != nil {
		return fmt.Errorf("handle of checkpoint %d: %w", id, err)
	}
	d.staged = &checkpoint.StagedHandle{ID: id, Participant: d.s.pid, Horizon: wm, Handle: h}
	d.mu.Lock()
	d.horizons[id] = wm
	d.mu.Unlock()
	return nil
}

// persistHandle is part of the persist task of checkpoint id: the handle is durable before the subtask acks.
func (d *inDoubtSub) persistHandle(id uint64) func() error {
	h := d.staged
	d.staged = nil
	if h == nil || h.ID != id {
		return func() error { return fmt.Errorf("%s: no handle staged for checkpoint %d", d.s.pid, id) }
	}
	path := checkpoint.HandlePath(d.s.inc.cpDir, id, d.s.pid)
	return func() error { return checkpoint.WriteStagedHandle(d.s.inc.fs, path, *h) }
}

// receipt is TaskContext.Receipt: the external system acknowledged the commit of id.
func (d *inDoubtSub) receipt(id uint64) error {
	s := d.s
	d.mu.Lock()
	horizon, ok := d.horizons[id]
	d.mu.Unlock()
	h := checkpoint.StagedHandle{ID: id, Participant: s.pid, Horizon: horizon}
	if !ok {
		// Staged by an earlier incarnation: its handle file has the horizon.
		staged, err := checkpoint.ReadStagedHandle(s.inc.fs, checkpoint.HandlePath(s.inc.cpDir, id, s.pid), id, s.pid)
		if err != nil {
			return fmt.Errorf("%s: commit receipt of checkpoint %d: %w", s.pid, id, err)
		}
		h = staged
	}
	path := checkpoint.ReceiptPath(s.inc.cpDir, s.node.ID, s.index, id)
	if err := checkpoint.WriteStagedHandle(s.inc.fs, path, h); err != nil {
		return fmt.Errorf("%s: commit receipt of checkpoint %d: %w", s.pid, id, err)
	}
	d.mu.Lock()
	for k := range d.horizons {
		if k <= id {
			delete(d.horizons, k)
		}
	}
	d.mu.Unlock()
	return nil
}

// beforeOpen consumes the subtask's unresolved markers, then arms replay suppression from its receipts above the
// restore point. channels is the number of the subtask's input channels.
func (d *inDoubtSub) beforeOpen(ctx context.Context, channels int) error {
	if err := d.consumeMarkers(ctx); err != nil {
		return err
	}
	return d.armSuppression(channels)
}

// consumeMarkers settles each unresolved marker of the subtask with a read-only Describe before the sink opens
// (its open fences the transactional identity, after which the broker can no longer name the fate).
func (d *inDoubtSub) consumeMarkers(ctx context.Context) error {
	s := d.s
	fsys, dir, job, op := s.inc.fs, s.inc.cpDir, s.tctx.Job, s.node.ID
	rs, err := checkpoint.ListReceipts(fsys, dir, op, s.index)
	if err != nil || len(rs.Unresolved) == 0 {
		return err
	}
	r, err := resolverOf(s.node, s.index)
	if err != nil {
		return err
	}
	for _, id := range rs.Unresolved {
		path := checkpoint.UnresolvedPath(dir, op, s.index, id)
		h, err := checkpoint.ReadStagedHandle(fsys, path, id, s.pid)
		if err != nil {
			return err
		}
		v, err := r.Describe(ctx, h.Handle)
		if err != nil {
			return &inDoubtError{msg: fmt.Sprintf("job %s: sink %s subtask %d refuses to open: the transaction of "+
				"checkpoint %d is in doubt (%s) and the external system did not answer; opening would fence it "+
				"and erase whether it committed, so the job retries", job, op, s.index, id, path), err: err}
		}
		s.tctx.Log.Info("unresolved transaction settled before open", "checkpoint", id, "verdict", v.String())
		switch v {
		case VerdictCommitted:
			if !checkpoint.HasReceipt(fsys, dir, op, s.index, id) {
				if err := checkpoint.WriteStagedHandle(fsys, checkpoint.ReceiptPath(dir, op, s.index, id), h); err != nil {
					return fmt.Errorf("%s: commit receipt of checkpoint %d: %w", s.pid, id, err)
				}
			}
		case VerdictOpen, VerdictAborted:
			// Never committed: the open's fence aborts it and the replay produces its rows again.
		default:
			return &inDoubtError{permanent: true, msg: fmt.Sprintf("job %s: sink %s subtask %d refuses to open: "+
				"whether the transaction of checkpoint %d committed cannot be told (the external system no longer "+
				"remembers it), and opening would settle it blind. Look the transaction up in the external system "+
				"(the handle is in %s): if it committed, rename that file to %s (a commit receipt: the replay skips "+
				"its rows); if it did not, delete it (the replay publishes its rows); then resume the job",
				job, op, s.index, id, path, checkpoint.ReceiptPath(dir, op, s.index, id))}
		}
		if err := fsys.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%s: retire unresolved marker: %w", s.pid, err)
		}
	}
	return nil
}

// armSuppression reads the subtask's receipts above the restore point: the replay re-produces the rows of those
// checkpoints, which the external system already has. They are exactly the replayed rows whose row time
// (Node.RowTimeColumn) is at or below the newest receipt's horizon H, the subtask's input watermark at that
// barrier: a row with row time <= H arrived before the watermark H, so before the barrier (one FIFO channel,
// taken aligned); a row that arrived before the barrier arrived before a watermark above H, so its row time is
// <= H. This holds whatever watermarks the replay produces (its batches may differ from the first run's).
func (d *inDoubtSub) armSuppression(channels int) error {
	s := d.s
	fsys, dir, op := s.inc.fs, s.inc.cpDir, s.node.ID
	rs, err := checkpoint.ListReceipts(fsys, dir, op, s.index)
	if err != nil {
		return err
	}
	restored := s.tctx.Restored
	var receipted []uint64
	for _, id := range rs.Receipts {
		if id > restored {
			receipted = append(receipted, id)
		}
	}
	if len(receipted) == 0 {
		return nil
	}
	top := receipted[len(receipted)-1]
	// The horizon separates a prefix of the replay: a staged, unreceipted transaction below the newest receipt
	// would be dropped with it (it did not commit; the sink commits in id order, so this is damage).
	for id := restored + 1; id < top; id++ {
		if slices.Contains(receipted, id) {
			continue
		}
		h, err := checkpoint.ReadStagedHandle(fsys, checkpoint.HandlePath(dir, id, s.pid), id, s.pid)
		if err == nil && len(h.Handle) > 0 {
			return &inDoubtError{permanent: true, msg: fmt.Sprintf("job %s: sink %s subtask %d: checkpoint %d has a "+
				"commit receipt but checkpoint %d below it staged a transaction without one; replay suppression "+
				"cannot separate them", s.tctx.Job, op, s.index, top, id)}
		}
	}
	if s.node.RowTimeColumn < 0 {
		return &inDoubtError{permanent: true, msg: fmt.Sprintf("job %s: sink %s subtask %d: the restore replays "+
			"checkpoints %v, which the external system already committed, and the sink's output is not fired by "+
			"the watermark (no window aggregate or window join feeds it through forward edges and projections "+
			"that keep window_end), so their rows cannot be separated from the new ones: the restore fails rather "+
			"than publish them twice", s.tctx.Job, op, s.index, receipted)}
	}
	if channels > 1 {
		// The horizon is the minimum over the channels at the barrier: a channel that was ahead delivered rows
		// with a row time above it before the barrier, which the replay would publish again.
		return &inDoubtError{permanent: true, msg: fmt.Sprintf("job %s: sink %s subtask %d: the restore replays "+
			"checkpoints %v, which the external system already committed, and the subtask reads %d input channels, "+
			"whose combined watermark cannot separate their rows from the new ones: the restore fails rather than "+
			"publish them twice (replay suppression needs one input channel per sink subtask: a forward edge)",
			s.tctx.Job, op, s.index, receipted, channels)}
	}
	h, err := checkpoint.ReadStagedHandle(fsys, checkpoint.ReceiptPath(dir, op, s.index, top), top, s.pid)
	if err != nil {
		return err
	}
	d.suppressing, d.horizon = true, h.Horizon
	s.tctx.Log.Info("replay suppression armed: replayed rows with a row time at or below the horizon are dropped",
		"receipted", receipted, "restored", restored, "horizon", wmString(h.Horizon))
	return nil
}

// suppress drops the rows of b whose row time is at or below the horizon (they are published: see
// armSuppression), counts them, and returns the rest (no rows: nothing to write; b is then released).
func (d *inDoubtSub) suppress(b Batch) (Batch, int, error) {
	if !d.suppressing || b.Rows() == 0 {
		return b, 0, nil
	}
	c := d.s.node.RowTimeColumn
	var col *array.Timestamp
	if c < int(b.Rec.NumCols()) {
		col, _ = b.Rec.Column(c).(*array.Timestamp)
	}
	if col == nil {
		err := fmt.Errorf("%s: row time column %d is not a timestamp column of %s (a planner bug)", d.s.pid, c,
			b.Rec.Schema())
		b.Release()
		return Batch{}, 0, err
	}
	limit := rowTimeLimit(col.DataType().(*arrow.TimestampType).Unit, d.horizon)
	vals := col.TimestampValues()
	n := len(vals)
	size := int(bitutil.BytesForBits(int64(n)))
	if cap(d.keep) < size {
		d.keep = make([]byte, size)
	}
	keep := d.keep[:size]
	clear(keep)
	nulls := col.NullN() > 0
	kept := 0
	for i, v := range vals {
		// A NULL row time proves nothing: the row is kept.
		if int64(v) > limit || (nulls && col.IsNull(i)) {
			bitutil.SetBit(keep, i)
			kept++
		}
	}
	dropped := n - kept
	d.suppressed += int64(dropped)
	d.s.inc.stats.suppressed.Add(int64(dropped))
	switch kept {
	case n:
		return b, 0, nil
	case 0:
		b.Release()
		return Batch{}, dropped, nil
	}
	mask := array.NewBooleanData(array.NewData(arrow.FixedWidthTypes.Boolean, n,
		[]*memory.Buffer{nil, memory.NewBufferBytes(keep)}, nil, 0, 0))
	defer mask.Release()
	ctx := compute.WithAllocator(context.Background(), d.s.tctx.Alloc)
	rec, err := compute.FilterRecordBatch(ctx, b.Rec, mask, compute.DefaultFilterOptions())
	if err != nil {
		b.Release()
		return Batch{}, 0, fmt.Errorf("%s: replay suppression: %w", d.s.pid, err)
	}
	var kinds []RowKind
	if b.Kinds != nil {
		kinds = make([]RowKind, 0, kept)
		for i, k := range b.Kinds {
			if bitutil.BitIsSet(keep, i) {
				kinds = append(kinds, k)
			}
		}
	}
	b.Release()
	return Batch{Rec: rec, Kinds: kinds}, dropped, nil
}

// rowTimeLimit is the largest raw value of unit u whose microseconds, as rowcodec.Micros reads them (floor for
// nanoseconds), are at or below horizon h.
func rowTimeLimit(u arrow.TimeUnit, h int64) int64 {
	floorDiv := func(a, b int64) int64 {
		q := a / b
		if a%b != 0 && a < 0 {
			q--
		}
		return q
	}
	switch u {
	case arrow.Second:
		return floorDiv(h, 1_000_000)
	case arrow.Millisecond:
		return floorDiv(h, 1000)
	case arrow.Nanosecond:
		if h > (math.MaxInt64-999)/1000 {
			return math.MaxInt64
		}
		if h < math.MinInt64/1000 {
			return math.MinInt64
		}
		return h*1000 + 999
	}
	return h
}

// onWatermark disarms suppression once the input watermark reaches the horizon: every row arriving after the
// watermark W has a row time above W (Node.RowTimeColumn's rule), so none is left to drop.
func (d *inDoubtSub) onWatermark(wm int64) error {
	if !d.suppressing || wm < d.horizon {
		return nil
	}
	d.suppressing = false
	d.s.tctx.Log.Info("replay suppression ended: the input watermark reached the horizon", "suppressed_rows", d.suppressed)
	return nil
}

func wmString(wm int64) string {
	switch wm {
	case MinWatermark:
		return "none"
	case MaxWatermark:
		return "end"
	}
	return fmt.Sprint(wm)
}

// closeInDoubtSinks closes the opened sinks of in-doubt nodes once nothing can commit any more (the coordinator
// drained): Commit of the final checkpoint arrives after the sink's runner ended.
func (inc *incarnation) closeInDoubtSinks() {
	inc.deferredMu.Lock()
	sinks := inc.deferredClose
	inc.deferredClose = nil
	inc.deferredMu.Unlock()
	for _, c := range sinks {
		if err := c.sink.Close(); err != nil {
			inc.job.cfg.Logger.Warn("sink close failed", "subtask", string(c.pid), "err", err)
		}
	}
}

type sinkRef struct {
	pid  checkpoint.ParticipantID
	sink Sink
	st   *subStats
	// wms are the barrier watermarks of the sink's node (CommitFinisher).
	wms *barrierWatermarks
}
