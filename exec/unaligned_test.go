package exec_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/clinksql/clinksql/checkpoint"
	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/state"
)

// cannotUnalign is an operator that says it cannot capture in-flight records.
type cannotUnalign struct{ exec.Operator }

func (cannotUnalign) CanUnalign() bool { return false }

// aggPipeline runs sources a and b into the two-input aggregate (its input 1 behind g, when set), then the sink.
// With canUnalign false the aggregate cannot capture in-flight records.
func aggPipeline(a, b seqConfig, store *txnStore, g *gate, canUnalign bool) *exec.Graph {
	agg := g.wrap(newWindowSum(windowSize))
	if !canUnalign {
		gated := agg
		agg = func(sub int) exec.Operator { return cannotUnalign{gated(sub)} }
	}
	gr := exec.NewGraph()
	sa := gr.AddSource("gen-a", 1, newSeqSource(a))
	sb := gr.AddSource("gen-b", 1, newSeqSource(b))
	op := gr.AddOperator("agg", 1, agg, exec.From(sa, exec.ForwardExchange()), exec.From(sb, exec.ForwardExchange())).WithKeyedState()
	gr.AddSink("sink", 1, newMemSink(store), exec.From(op, exec.ForwardExchange()))
	return gr
}

// Under backpressure an unaligned barrier overtakes the records queued on the slow input: the checkpoint completes
// after the operator finished one or two batches, where an aligned one is still waiting behind the whole queue.
// Restoring from the unaligned checkpoint replays the captured in-flight records, so the output equals a run
// without failure (dropping them would lose those rows).
func TestUnalignedCheckpointOvertakesBackpressureAndReplays(t *testing.T) {
	a := seqConfig{seed: 11, rows: 50, batchRows: 50, keys: 10, tsStep: 40}
	b := seqConfig{seed: 12, rows: 2000, batchRows: 10, keys: 10, tsStep: 1}
	c := gatedCase{
		graph: func(g *gate, store *txnStore) *exec.Graph { return aggPipeline(a, b, store, g, true) },
		op:    "agg-0", rows: a.rows + b.rows, want: expectedWindows(events(a, b, 1), windowSize),
	}
	// An aligned checkpoint waits behind the backlog, and so does an unaligned one at an operator that cannot
	// capture in-flight records: it degrades to aligned rather than lose them.
	cannot := c
	cannot.graph = func(g *gate, store *txnStore) *exec.Graph { return aggPipeline(a, b, store, g, false) }
	t.Run("aligned waits", func(t *testing.T) { c.waits(t, checkpoint.Aligned) })
	t.Run("unaligned degrades to aligned", func(t *testing.T) { cannot.waits(t, checkpoint.Unaligned) })
	t.Run("unaligned overtakes and replays", c.overtakesAndReplays)
}

const backpressureCap = 24

// gatedCase is the backpressure test of a multi-input operator (issue 5's multi-input rule): with the operator's
// input 1 held behind a gate, an aligned checkpoint waits behind the queued batches while an unaligned one
// completes, and a restore from the unaligned checkpoint (its captured in-flight batches replayed) commits the
// output of a run without failure.
type gatedCase struct {
	// graph builds the job writing to store, the operator under test's input 1 behind g (nil: ungated).
	graph func(g *gate, store *txnStore) *exec.Graph
	op    checkpoint.ParticipantID // the operator under test's (only) subtask
	rows  int                      // of all sources together
	want  []string                 // the committed output
	// committed, when set, reads the output the job committed to store (default: store.rows()).
	committed func(testing.TB, *txnStore) []string
}

// run runs the case's two subtests.
func (c gatedCase) run(t *testing.T) {
	t.Run("aligned waits", func(t *testing.T) { c.waits(t, checkpoint.Aligned) })
	t.Run("unaligned overtakes and replays", c.overtakesAndReplays)
}

// start starts the gated job in mode and returns once input 0's elements were consumed, input 1's channel is full
// and the operator is stuck on input 1.
func (c gatedCase) start(t *testing.T, dir string, mode checkpoint.Mode, store *txnStore) (*exec.Job, *gate) {
	g := newGate()
	cfg := jobConfig(t, dir)
	cfg.CheckpointInterval = 0
	cfg.CheckpointMode = mode
	cfg.ChannelCapacity = backpressureCap
	j, err := exec.NewJob(c.graph(g, store), cfg)
	if err != nil {
		t.Fatal(err)
	}
	j.Start(context.Background())
	<-g.entered
	// Input 0's few elements (one batch, its watermark, the end-of-data watermark) are taken one per slow batch,
	// round robin: let them through, so input 0 is idle and the next thing on it will be the barrier.
	g.pass(5)
	waitFor(t, func() bool { return j.Pressure() == 1 })
	return j, g
}

// waits checks that a checkpoint in mode waits behind the gated backlog.
func (c gatedCase) waits(t *testing.T, mode checkpoint.Mode) {
	j, g := c.start(t, t.TempDir(), mode, newTxnStore())
	checkpointWaits(t, j, g)
	j.Cancel()
}

// overtakesAndReplays checks that an unaligned checkpoint overtakes the gated backlog, then restores from it with
// the gate gone and compares the committed output with want.
func (c gatedCase) overtakesAndReplays(t *testing.T) {
	dir := t.TempDir()
	store := newTxnStore()
	j, g := c.start(t, dir, checkpoint.Unaligned, store)
	checkpointOvertakes(t, j, g, c.op)
	g.release()
	j.Cancel()
	j2 := runToEnd(t, c.graph(nil, store), jobConfig(t, dir))
	if st := j2.Status(); st.Restored == 0 || st.RowsIn != int64(c.rows) {
		t.Fatalf("the second run restored checkpoint %d and counted %d rows in, want a checkpoint and every row once (%d)",
			st.Restored, st.RowsIn, c.rows)
	}
	got := store.rows()
	if c.committed != nil {
		got = c.committed(t, store)
	}
	checkRows(t, got, c.want)
}

// checkpointWaits starts checkpoint 1 on a job whose slow input is behind gate g, lets a quarter of the queued
// batches through, and fails if the checkpoint completed or the gated operator snapshotted meanwhile: an aligned
// barrier waits behind the queue. (The operator snapshots before it takes its next batch, so the snapshot is
// seen when pass returns; completion is asynchronous and might not be.) Then it opens the gate and waits for the
// checkpoint.
func checkpointWaits(t *testing.T, j *exec.Job, g *gate) {
	t.Helper()
	done := make(chan error, 1)
	go func() { _, err := j.Checkpoint(context.Background()); done <- err }()
	waitFor(t, func() bool { return j.Status().LastCompleted == 0 && barrierStaged(j, 1, "gen-a-0") })
	g.pass(backpressureCap / 4)
	if id := g.snapshotted.Load(); id != 0 {
		t.Fatalf("the gated operator snapshotted checkpoint %d with %d batches still ahead of the slow input's barrier", id, backpressureCap/4)
	}
	select {
	case err := <-done:
		t.Fatalf("aligned checkpoint completed (%v) with %d batches still ahead of the slow input's barrier", err, backpressureCap/4)
	default:
	}
	g.release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// checkpointOvertakes starts checkpoint 1 on a job whose slow input is behind gate g and fails unless it completes
// after at most three more slow batches: the unaligned barrier overtook the queue. The participant op must have
// captured in-flight records.
func checkpointOvertakes(t *testing.T, j *exec.Job, g *gate, op checkpoint.ParticipantID) {
	t.Helper()
	done := make(chan error, 1)
	go func() { _, err := j.Checkpoint(context.Background()); done <- err }()
	waitFor(t, func() bool { return barrierStaged(j, 1, "gen-a-0") })
	for i := 0; i < 3; i++ {
		g.pass(1) // the operator is stuck on the next slow batch again
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			inflight := checkpoint.SubtaskDir(j.CheckpointDir(), 1, op) + ".inflight"
			if st, err := os.Stat(inflight); err != nil || st.Size() < 100 {
				t.Fatalf("no in-flight records captured at %s: %v", op, err)
			}
			return
		case <-time.After(2 * time.Second):
		}
	}
	t.Fatal("unaligned checkpoint did not complete while the slow input was backpressured")
}

// barrierStaged reports whether participant p has persisted its part of checkpoint id: for a source, that it
// emitted the barrier.
func barrierStaged(j *exec.Job, id uint64, p checkpoint.ParticipantID) bool {
	_, err := state.OS.Stat(checkpoint.SubtaskDir(j.CheckpointDir(), id, p))
	return err == nil
}

// Pins issue 11: a restore checked for an unaligned checkpoint's in-flight log by its presence, so a deleted log
// was taken for an aligned checkpoint and its records were silently lost. The checkpoint's state now records that
// a log exists: a missing one fails the job (a CorruptError naming the file), and a damaged one too.
func TestUnalignedRestoreRefusesMissingInflightLog(t *testing.T) {
	a := seqConfig{seed: 11, rows: 50, batchRows: 50, keys: 10, tsStep: 40}
	b := seqConfig{seed: 12, rows: 2000, batchRows: 10, keys: 10, tsStep: 1}
	graph := func(g *gate, store *txnStore) *exec.Graph { return aggPipeline(a, b, store, g, true) }
	c := gatedCase{graph: graph, op: "agg-0"}
	for _, damage := range []string{"delete", "flip a byte"} {
		t.Run(damage, func(t *testing.T) {
			dir := t.TempDir()
			store := newTxnStore()
			j, g := c.start(t, dir, checkpoint.Unaligned, store)
			checkpointOvertakes(t, j, g, c.op)
			g.release()
			j.Cancel()
			<-j.Done()
			inflight := checkpoint.SubtaskDir(j.CheckpointDir(), 1, c.op) + ".inflight"
			if damage == "delete" {
				if err := os.Remove(inflight); err != nil {
					t.Fatal(err)
				}
			} else {
				data, err := os.ReadFile(inflight)
				if err != nil {
					t.Fatal(err)
				}
				data[len(data)/2] ^= 1
				if err := os.WriteFile(inflight, data, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			j2, err := exec.NewJob(graph(nil, store), jobConfig(t, dir))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			j2.Start(ctx)
			err = j2.Wait(ctx)
			if c, ok := state.IsCorrupt(err); !ok || c.Path != inflight {
				t.Fatalf("restore without its in-flight log: %v, want a CorruptError naming %s", err, inflight)
			}
		})
	}
}
