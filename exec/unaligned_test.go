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

// backpressured is a two-input aggregate whose input 1 is processed one batch per token: the bottleneck. Before
// waiting for a token it says so on entered, so a test knows where the operator stands.
func backpressured(tokens, entered chan struct{}, canUnalign bool) func(int) exec.Operator {
	return func(sub int) exec.Operator {
		w := newWindowSum(windowSize)(sub).(*windowSum)
		w.slowInput = 1
		w.slow = func() {
			entered <- struct{}{}
			<-tokens
		}
		if !canUnalign {
			return cannotUnalign{w}
		}
		return w
	}
}

// cannotUnalign is an operator that says it cannot capture in-flight records.
type cannotUnalign struct{ *windowSum }

func (cannotUnalign) CanUnalign() bool { return false }

const backpressureCap = 24

// startBackpressured runs source a (one batch) and slow source b into the backpressured aggregate and returns
// once a's elements were consumed, b's channel is full and the operator is stuck on input 1.
func startBackpressured(t *testing.T, dir string, mode checkpoint.Mode, canUnalign bool, tokens, entered chan struct{}, store *txnStore, a, b seqConfig) *exec.Job {
	g := exec.NewGraph()
	sa := g.AddSource("gen-a", 1, newSeqSource(a))
	sb := g.AddSource("gen-b", 1, newSeqSource(b))
	agg := g.AddOperator("agg", 1, backpressured(tokens, entered, canUnalign),
		exec.From(sa, exec.ForwardExchange()), exec.From(sb, exec.ForwardExchange())).WithKeyedState()
	g.AddSink("sink", 1, newMemSink(store), exec.From(agg, exec.ForwardExchange()))
	cfg := jobConfig(t, dir)
	cfg.CheckpointInterval = 0
	cfg.CheckpointMode = mode
	cfg.ChannelCapacity = backpressureCap
	j, err := exec.NewJob(g, cfg)
	if err != nil {
		t.Fatal(err)
	}
	j.Start(context.Background())
	<-entered
	// Input 0's few elements (one batch, its watermark, the end-of-data watermark) are taken one per slow batch,
	// round robin: let them through, so input 0 is idle and the next thing on it will be the barrier.
	for i := 0; i < 5; i++ {
		tokens <- struct{}{}
		<-entered
	}
	waitFor(t, func() bool { return j.Pressure() == 1 })
	return j
}

// Under backpressure an unaligned barrier overtakes the records queued on the slow input: the checkpoint completes
// after the operator finished one or two batches, where an aligned one is still waiting behind the whole queue.
// Restoring from the unaligned checkpoint replays the captured in-flight records, so the output equals a run
// without failure (dropping them would lose those rows).
func TestUnalignedCheckpointOvertakesBackpressureAndReplays(t *testing.T) {
	a := seqConfig{seed: 11, rows: 50, batchRows: 50, keys: 10, tsStep: 40}
	b := seqConfig{seed: 12, rows: 2000, batchRows: 10, keys: 10, tsStep: 1}
	want := expectedWindows(events(a, b, 1), windowSize)

	// An aligned checkpoint waits behind the backlog, and so does an unaligned one at an operator that cannot
	// capture in-flight records: it degrades to aligned rather than lose them.
	for _, tc := range []struct {
		name       string
		mode       checkpoint.Mode
		canUnalign bool
	}{{"aligned waits", checkpoint.Aligned, true}, {"unaligned degrades to aligned", checkpoint.Unaligned, false}} {
		t.Run(tc.name, func(t *testing.T) { waitsBehindBacklog(t, tc.mode, tc.canUnalign, a, b) })
	}

	t.Run("unaligned overtakes and replays", func(t *testing.T) {
		dir := t.TempDir()
		tokens, entered := make(chan struct{}), make(chan struct{})
		store := newTxnStore()
		j := startBackpressured(t, dir, checkpoint.Unaligned, true, tokens, entered, store, a, b)

		checkpointOvertakes(t, j, tokens, entered, "agg-0")
		releaseGate(tokens, entered)
		j.Cancel()
		// Restore from the unaligned checkpoint with the bottleneck gone.
		j2 := runToEnd(t, pipelineOneEach(a, b, store), jobConfig(t, dir))
		if st := j2.Status(); st.RowsIn >= int64(a.rows+b.rows) {
			t.Fatalf("the second run replayed from the start (%d rows in), not from the checkpoint", st.RowsIn)
		}
		checkRows(t, store.rows(), want)
	})
}

func waitsBehindBacklog(t *testing.T, mode checkpoint.Mode, canUnalign bool, a, b seqConfig) {
	tokens, entered := make(chan struct{}), make(chan struct{})
	j := startBackpressured(t, t.TempDir(), mode, canUnalign, tokens, entered, newTxnStore(), a, b)
	checkpointWaits(t, j, tokens, entered)
	j.Cancel()
}

// checkpointWaits starts checkpoint 1 on a job whose slow input is gated (tokens, entered), lets a quarter of the
// queued batches through, and fails if the checkpoint completed meanwhile: an aligned barrier waits behind the
// queue. Then it opens the gate and waits for the checkpoint.
func checkpointWaits(t *testing.T, j *exec.Job, tokens, entered chan struct{}) {
	t.Helper()
	done := make(chan error, 1)
	go func() { _, err := j.Checkpoint(context.Background()); done <- err }()
	waitFor(t, func() bool { return j.Status().LastCompleted == 0 && barrierStaged(j, 1, "gen-a-0") })
	for i := 0; i < backpressureCap/4; i++ {
		tokens <- struct{}{}
		<-entered
	}
	select {
	case err := <-done:
		t.Fatalf("aligned checkpoint completed (%v) with %d batches still ahead of the slow input's barrier", err, backpressureCap/4)
	default:
	}
	releaseGate(tokens, entered)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// checkpointOvertakes starts checkpoint 1 on a job whose slow input is gated and fails unless it completes after at
// most three more slow batches: the unaligned barrier overtook the queue. The participant op must have captured
// in-flight records.
func checkpointOvertakes(t *testing.T, j *exec.Job, tokens, entered chan struct{}, op checkpoint.ParticipantID) {
	t.Helper()
	done := make(chan error, 1)
	go func() { _, err := j.Checkpoint(context.Background()); done <- err }()
	waitFor(t, func() bool { return barrierStaged(j, 1, "gen-a-0") })
	for i := 0; i < 3; i++ {
		tokens <- struct{}{}
		<-entered // the operator is stuck on the next slow batch again
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

// releaseGate lets every gated batch through from now on.
func releaseGate(tokens, entered chan struct{}) {
	go func() {
		for range entered {
		}
	}()
	close(tokens)
}

func pipelineOneEach(a, b seqConfig, store *txnStore) *exec.Graph {
	g := exec.NewGraph()
	sa := g.AddSource("gen-a", 1, newSeqSource(a))
	sb := g.AddSource("gen-b", 1, newSeqSource(b))
	agg := g.AddOperator("agg", 1, newWindowSum(windowSize),
		exec.From(sa, exec.ForwardExchange()), exec.From(sb, exec.ForwardExchange())).WithKeyedState()
	g.AddSink("sink", 1, newMemSink(store), exec.From(agg, exec.ForwardExchange()))
	return g
}

// barrierStaged reports whether participant p has persisted its part of checkpoint id: for a source, that it
// emitted the barrier.
func barrierStaged(j *exec.Job, id uint64, p checkpoint.ParticipantID) bool {
	_, err := state.OS.Stat(checkpoint.SubtaskDir(j.CheckpointDir(), id, p))
	return err == nil
}
