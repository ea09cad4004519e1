package exec_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/clinksql/clinksql/checkpoint"
	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/state"
)

// markerGateFS holds the rename that publishes COMPLETED-<id> until released.
type markerGateFS struct {
	state.FS
	marker   string
	renaming chan struct{}
	release  chan struct{}
}

func (g *markerGateFS) Rename(o, n string) error {
	if filepath.Base(n) == g.marker {
		close(g.renaming)
		<-g.release
	}
	return g.FS.Rename(o, n)
}

// countingSink counts the commits the coordinator's broadcast asks of it (recovery at Open is not one).
type countingSink struct {
	exec.Sink
	commits *atomic.Int64
	fail    bool // Commit fails, after doing nothing
}

func (c *countingSink) Commit(id uint64) error {
	c.commits.Add(1)
	if c.fail {
		return errors.New("injected commit failure")
	}
	return c.Sink.Commit(id)
}

// A checkpoint that completes while the job is draining for a restart (an operator failed while the checkpoint's
// marker was being written) keeps its marker but is not broadcast: the failed incarnation's sinks commit nothing,
// and the restart's sink recovery commits the checkpoint's staged output.
func TestCheckpointCompletingDuringRestartIsCommittedByRecovery(t *testing.T) {
	gate := make(chan struct{})
	a := seqConfig{seed: 11, rows: 1000, batchRows: 10, keys: 5, tsStep: 3, gate: gate}
	var countdown atomic.Int64 // 0: never fails; 1: the next batch fails
	var commits atomic.Int64
	store := newTxnStore()
	g := exec.NewGraph()
	src := g.AddSource("gen", 1, newSeqSource(a))
	agg := g.AddOperator("agg", 1, func(sub int) exec.Operator {
		return &flakyOp{Operator: newWindowSum(windowSize)(sub), countdown: &countdown}
	}, exec.From(src, exec.ForwardExchange()))
	g.AddSink("sink", 1, func(sub int) exec.Sink {
		return &countingSink{Sink: newMemSink(store)(sub), commits: &commits}
	}, exec.From(agg, exec.ForwardExchange()))
	fs := &markerGateFS{FS: state.OS, marker: filepath.Base(checkpoint.MarkerPath("", 1)),
		renaming: make(chan struct{}), release: make(chan struct{})}
	cfg := jobConfig(t, t.TempDir())
	cfg.CheckpointInterval = 0
	cfg.FS = fs
	j, err := exec.NewJob(g, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	j.Start(ctx)
	defer j.Cancel()
	gate <- struct{}{}
	id, err := j.TriggerCheckpoint()
	if err != nil || id != 1 {
		t.Fatalf("trigger: %d, %v", id, err)
	}
	gate <- struct{}{} // the barrier is taken after this batch
	<-fs.renaming      // every ack is in; checkpoint 1's marker is being written
	countdown.Store(1)
	gate <- struct{}{} // this batch fails the operator: the job drains for a restart
	waitFor(t, func() bool {
		_, err := j.TriggerCheckpoint()
		return errors.Is(err, checkpoint.ErrStopped)
	})
	close(fs.release)
	waitFor(t, func() bool { // the restart's sink recovery committed checkpoint 1
		store.mu.Lock()
		defer store.mu.Unlock()
		_, ok := store.committed[txnName(0, 1)]
		return ok
	})
	if n := commits.Load(); n != 0 {
		t.Fatalf("the draining incarnation's sinks were told to commit (%d commits)", n)
	}
	if st := j.Status(); st.Restarts != 1 {
		t.Fatalf("status %+v, want one restart", st)
	}
}

// listeningSource records the checkpoints it heard of.
type listeningSource struct {
	exec.Source
	mu    *sync.Mutex
	heard *[]uint64
}

func (l *listeningSource) NotifyCheckpointComplete(id uint64) {
	l.mu.Lock()
	*l.heard = append(*l.heard, id)
	l.mu.Unlock()
}
func (l *listeningSource) NotifyCheckpointAborted(uint64) {}

// One sink's failed commit does not skip the others, nor the checkpoint listeners: every one runs, the errors
// are joined, and WaitCheckpoint (FLUSH) reports the failure instead of success.
func TestCommitFailureStillRunsEveryListener(t *testing.T) {
	gate := make(chan struct{})
	a := seqConfig{seed: 12, rows: 1000, batchRows: 10, keys: 5, tsStep: 3, gate: gate}
	var mu sync.Mutex
	var heard []uint64
	commits := make([]atomic.Int64, 2)
	store := newTxnStore()
	g := exec.NewGraph()
	src := g.AddSource("gen", 1, func(sub int) exec.Source {
		return &listeningSource{Source: newSeqSource(a)(sub), mu: &mu, heard: &heard}
	})
	agg := g.AddOperator("agg", 2, newWindowSum(windowSize), exec.From(src, exec.HashExchange(0))).WithKeyedState()
	g.AddSink("sink", 2, func(sub int) exec.Sink {
		return &countingSink{Sink: newMemSink(store)(sub), commits: &commits[sub], fail: sub == 0}
	}, exec.From(agg, exec.ForwardExchange()))
	cfg := jobConfig(t, t.TempDir())
	cfg.CheckpointInterval = 0
	j, err := exec.NewJob(g, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	j.Start(ctx)
	defer j.Cancel()
	gate <- struct{}{} // deployed
	id, err := j.TriggerCheckpoint()
	if err != nil {
		t.Fatal(err)
	}
	gate <- struct{}{}
	err = j.WaitCheckpoint(ctx, id)
	if err == nil || !strings.Contains(err.Error(), "injected commit failure") {
		t.Fatalf("WaitCheckpoint = %v, want the commit failure", err)
	}
	if commits[1].Load() != 1 {
		t.Fatal("the second sink was not told to commit after the first one failed")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(heard) != 1 || heard[0] != id {
		t.Fatalf("listener heard %v, want [%d]", heard, id)
	}
}

// countingOp counts every row it processes as a bad value and as late, as an operator that
// turns values into NULL or drops late rows would.
type countingOp struct {
	exec.Operator
	ctx *exec.TaskContext
}

func (c *countingOp) Open(ctx *exec.TaskContext) error { c.ctx = ctx; return c.Operator.Open(ctx) }
func (c *countingOp) Process(input int, b exec.Batch, out exec.Emitter) error {
	n := int64(b.Rows())
	c.ctx.Errors.Add(n)
	c.ctx.Late.Add(n)
	return c.Operator.Process(input, b, out)
}

// Counts are counted once across restarts: a failed incarnation's rows past its restored checkpoint are replayed,
// and rows_in, rows_out, bad_values and late_rows rewind to the checkpoint's counts instead of adding the replay
// on top.
func TestRestartCountsRowsOnce(t *testing.T) {
	a := seqConfig{seed: 5, rows: 4000, batchRows: 20, keys: 30, tsStep: 5}
	b := seqConfig{seed: 6, rows: 4000, batchRows: 20, keys: 30, tsStep: 5}
	var countdown atomic.Int64
	countdown.Store(300)
	store := newTxnStore()
	g := exec.NewGraph()
	sa := g.AddSource("gen-a", 2, newSeqSource(a))
	sb := g.AddSource("gen-b", 2, newSeqSource(b))
	agg := g.AddOperator("agg", 2, func(sub int) exec.Operator {
		return &countingOp{Operator: &flakyOp{Operator: newWindowSum(windowSize)(sub), countdown: &countdown}}
	}, exec.From(sa, exec.HashExchange(0)), exec.From(sb, exec.HashExchange(0))).WithKeyedState()
	g.AddSink("sink", 2, newMemSink(store), exec.From(agg, exec.ForwardExchange()))
	j := runToEnd(t, g, jobConfig(t, t.TempDir()))
	checkRows(t, store.rows(), expectedWindows(events(a, b, 2), windowSize))
	st := j.Status()
	if st.Restarts != 1 {
		t.Fatalf("want 1 restart, status %+v", st)
	}
	rows := int64(2 * (a.rows + b.rows))
	if st.RowsIn != rows || st.RowsOut != int64(len(store.rows())) || st.BadValues != rows || st.Late != rows {
		t.Fatalf("rows_in %d, rows_out %d, bad_values %d, late %d; want %d, %d, %d, %d",
			st.RowsIn, st.RowsOut, st.BadValues, st.Late, rows, len(store.rows()), rows, rows)
	}
}
