package exec_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/clinksql/clinksql/checkpoint"
	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/internal/promtest"
	"github.com/clinksql/clinksql/state"
)

// commits is how many transactions the store committed.
func (s *txnStore) commitCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.commits
}

// afterCommitSource holds its source at half its batches (Idle) until the store committed something, so that the
// job has a restore point before its input ends.
type afterCommitSource struct {
	exec.Source
	store         *txnStore
	produced, max int
}

func (s *afterCommitSource) Produce(ctx context.Context) (exec.SourceResult, error) {
	if s.produced >= s.max && s.store.commitCount() == 0 {
		return exec.SourceResult{Status: exec.Idle, WM: exec.MinWatermark}, nil
	}
	res, err := s.Source.Produce(ctx)
	if res.Status == exec.Produced {
		s.produced++
	}
	return res, err
}

// failAfterCommitOp fails once, at its first batch after the store committed: the restart restores a checkpoint.
type failAfterCommitOp struct {
	exec.Operator
	store  *txnStore
	failed *atomic.Bool
}

func (f *failAfterCommitOp) Process(input int, b exec.Batch, out exec.Emitter) error {
	if f.store.commitCount() > 0 && f.failed.CompareAndSwap(false, true) {
		b.Release()
		return errors.New("injected operator failure")
	}
	return f.Operator.Process(input, b, out)
}

// Per-subtask figures count each row once across a restart from a checkpoint, like the job's: the sources' rows
// out sum to the rows read, the aggregate takes every row in once, the sinks write exactly what was committed;
// the job's watermark is its sinks' (+inf once the input ended); the edges are the graph's; the restart is
// counted under its cause.
func TestNewSubtaskStatsCountOnceAcrossRestart(t *testing.T) {
	a := seqConfig{seed: 5, rows: 4000, batchRows: 20, keys: 30, tsStep: 5}
	b := seqConfig{seed: 6, rows: 4000, batchRows: 20, keys: 30, tsStep: 5}
	store := newTxnStore()
	held := func(c seqConfig) func(int) exec.Source {
		return func(sub int) exec.Source {
			return &afterCommitSource{Source: newSeqSource(c)(sub), store: store, max: c.rows / c.batchRows / 2}
		}
	}
	var failed atomic.Bool
	g := exec.NewGraph()
	sa := g.AddSource("gen-a", 2, held(a))
	sb := g.AddSource("gen-b", 2, held(b))
	agg := g.AddOperator("agg", 2, func(sub int) exec.Operator {
		return &countingOp{Operator: &failAfterCommitOp{Operator: newWindowSum(windowSize)(sub), store: store, failed: &failed}}
	}, exec.From(sa, exec.HashExchange(0)), exec.From(sb, exec.HashExchange(0))).WithKeyedState()
	agg.Label = "WindowSum"
	g.AddSink("sink", 2, newMemSink(store), exec.From(agg, exec.ForwardExchange()))
	j := runToEnd(t, g, jobConfig(t, t.TempDir()))
	checkRows(t, store.rows(), expectedWindows(events(a, b, 2), windowSize))
	if st := j.Status(); st.Restored == 0 || !failed.Load() {
		t.Fatalf("want a restart from a checkpoint, status %+v", st)
	}

	subs := j.Subtasks()
	if len(subs) != 8 {
		t.Fatalf("%d subtasks, want 8: %+v", len(subs), subs)
	}
	sum := map[string][2]int64{} // node -> rows in, rows out
	var late, bad int64
	for i, s := range subs {
		want := []string{"gen-a", "gen-a", "gen-b", "gen-b", "agg", "agg", "sink", "sink"}[i]
		if s.Node != want || s.Subtask != i%2 || s.Parallelism != 2 {
			t.Fatalf("subtask %d is %s/%d of %d, want %s/%d of 2", i, s.Node, s.Subtask, s.Parallelism, want, i%2)
		}
		if s.Node == "agg" && (s.Label != "WindowSum" || s.Kind != exec.OperatorNode) {
			t.Fatalf("agg: label %q kind %v", s.Label, s.Kind)
		}
		if s.Watermark != exec.MaxWatermark {
			t.Fatalf("%s/%d: watermark %d after the end of input, want MaxWatermark", s.Node, s.Subtask, s.Watermark)
		}
		if s.LagRecords != -1 || s.LagBytes != -1 || s.Total != -1 {
			t.Fatalf("%s/%d: lag %d/%d/%d from a source without progress, want -1", s.Node, s.Subtask, s.LagRecords, s.LagBytes, s.Total)
		}
		c := sum[s.Node]
		sum[s.Node] = [2]int64{c[0] + s.RowsIn, c[1] + s.RowsOut}
		late += s.LateRows
		bad += s.BadValues
	}
	committed := int64(len(store.rows()))
	if got := sum["gen-a"]; got != [2]int64{0, int64(2 * a.rows)} {
		t.Fatalf("gen-a rows in/out %v, want 0/%d", got, 2*a.rows)
	}
	if got := sum["agg"]; got != [2]int64{int64(2 * (a.rows + b.rows)), committed} {
		t.Fatalf("agg rows in/out %v, want %d/%d", got, 2*(a.rows+b.rows), committed)
	}
	if got := sum["sink"]; got != [2]int64{committed, committed} {
		t.Fatalf("sink rows in/out %v, want %d/%d", got, committed, committed)
	}
	st := j.Status()
	if late != st.Late || bad != st.BadValues || st.Late != int64(2*(a.rows+b.rows)) {
		t.Fatalf("late %d bad %d over the subtasks, status %+v", late, bad, st)
	}
	if st.Watermark != exec.MaxWatermark || st.Restarts != 1 || st.RestartsByCause[exec.RestartFailure] != 1 ||
		st.CheckpointsCompleted == 0 || st.StartedAt.IsZero() {
		t.Fatalf("status %+v", st)
	}
	edges := j.Edges()
	if len(edges) != 3 ||
		edges[0].From != "gen-a" || edges[1].From != "gen-b" || edges[2].From != "agg" || edges[2].To != "sink" ||
		edges[0].Exchange.String() != "hash[0]" || edges[2].Exchange.String() != "forward" {
		t.Fatalf("edges %+v", edges)
	}
}

// subtaskOf returns the figures of node's subtask sub.
func subtaskOf(t testing.TB, j *exec.Job, node string, sub int) exec.SubtaskStats {
	t.Helper()
	for _, s := range j.Subtasks() {
		if s.Node == node && s.Subtask == sub {
			return s
		}
	}
	t.Fatalf("no subtask %s/%d", node, sub)
	return exec.SubtaskStats{}
}

// A source blocked on a full channel shows backpressured time, and an operator stuck in its Process busy time,
// while they are stuck (not only once the call returns); the sink, which waits for input, is neither.
func TestNewBusyAndBackpressuredWhileStuck(t *testing.T) {
	a := seqConfig{seed: 11, rows: 50, batchRows: 50, keys: 10, tsStep: 40}
	b := seqConfig{seed: 12, rows: 2000, batchRows: 10, keys: 10, tsStep: 1}
	c := gatedCase{graph: func(g *gate, store *txnStore) *exec.Graph { return aggPipeline(a, b, store, g, true) }}
	j, g := c.start(t, t.TempDir(), checkpoint.Aligned, newTxnStore())
	defer j.Cancel()
	defer g.release()
	waitFor(t, func() bool {
		return subtaskOf(t, j, "gen-b", 0).Backpressured > 0 && subtaskOf(t, j, "agg", 0).Busy > 0
	})
	first := subtaskOf(t, j, "gen-b", 0).Backpressured
	waitFor(t, func() bool { return subtaskOf(t, j, "gen-b", 0).Backpressured > first }) // still growing
	if s := subtaskOf(t, j, "sink", 0); s.Backpressured != 0 {
		t.Fatalf("the sink has no output, yet %v backpressured", s.Backpressured)
	}
	// The same figures as series, with the watermark of a running source.
	reg := prometheus.NewRegistry()
	if err := j.Register(reg); err != nil {
		t.Fatal(err)
	}
	genB := map[string]string{"job_id": "job", "operator": "gen-b", "subtask": "0"}
	if v, ok := promtest.Value(t, reg, "clinksql_operator_backpressured_seconds_total", genB); !ok || v <= 0 {
		t.Fatalf("backpressured seconds of gen-b: %v %v", v, ok)
	}
	if v, ok := promtest.Value(t, reg, "clinksql_operator_busy_seconds_total", map[string]string{"operator": "agg"}); !ok || v <= 0 {
		t.Fatalf("busy seconds of agg: %v %v", v, ok)
	}
	wm := subtaskOf(t, j, "gen-b", 0).Watermark
	if v, ok := promtest.Value(t, reg, "clinksql_operator_watermark_seconds", genB); !ok || wm == exec.MinWatermark || v != float64(wm)/1e6 {
		t.Fatalf("watermark of gen-b: %v %v, want %d us", v, ok, wm)
	}
	if _, ok := promtest.Value(t, reg, "clinksql_operator_watermark_lag_seconds", genB); !ok {
		t.Fatal("no watermark lag for gen-b")
	}
}

// Each checkpoint's record carries what its participants persisted: an unaligned one its captured in-flight
// bytes (the in-flight log's payload), an aligned one that waited behind a backlog its align wait; a subtask's
// state size is its last snapshot's.
func TestNewCheckpointRecordsBytesAndAlignWait(t *testing.T) {
	a := seqConfig{seed: 11, rows: 50, batchRows: 50, keys: 10, tsStep: 40}
	b := seqConfig{seed: 12, rows: 2000, batchRows: 10, keys: 10, tsStep: 1}
	c := gatedCase{graph: func(g *gate, store *txnStore) *exec.Graph { return aggPipeline(a, b, store, g, true) }}

	t.Run("unaligned", func(t *testing.T) {
		j, g := c.start(t, t.TempDir(), checkpoint.Unaligned, newTxnStore())
		checkpointOvertakes(t, j, g, "agg-0")
		g.release()
		j.Cancel()
		recs := j.Checkpoints() // the released job may have taken its final checkpoint too
		if len(recs) == 0 || recs[0].ID != 1 || recs[0].Mode != checkpoint.Unaligned || recs[0].Outcome != checkpoint.Completed {
			t.Fatalf("history %+v", recs)
		}
		logs, err := filepath.Glob(checkpoint.SubtaskDir(j.CheckpointDir(), 1, "*") + ".inflight") // agg's, the sink's (empty)
		if err != nil || len(logs) == 0 {
			t.Fatal(logs, err)
		}
		var want int64
		for _, l := range logs {
			fi, err := os.Stat(l)
			if err != nil {
				t.Fatal(err)
			}
			want += fi.Size() - 17 // the frame's header and trailer
		}
		if recs[0].InflightBytes != want || want < 100 {
			t.Fatalf("in-flight bytes %d, want the logs' payloads %d", recs[0].InflightBytes, want)
		}
		small := recs[0].InflightBytes
		for _, p := range []checkpoint.ParticipantID{"gen-a-0", "gen-b-0", "sink-0"} {
			fi, err := os.Stat(checkpoint.SubtaskDir(j.CheckpointDir(), 1, p))
			if err != nil {
				t.Fatal(err)
			}
			small += fi.Size()
			if s := subtaskOf(t, j, string(p[:len(p)-2]), 0); s.StateBytes != fi.Size() {
				t.Fatalf("%s: state bytes %d, its snapshot has %d", p, s.StateBytes, fi.Size())
			}
		}
		if recs[0].Bytes <= small { // plus the keyed store's listing and tables
			t.Fatalf("bytes %d, want more than the small snapshots and the log (%d)", recs[0].Bytes, small)
		}
		if s := subtaskOf(t, j, "agg", 0); s.StateBytes <= 0 {
			t.Fatalf("agg: state bytes %d", s.StateBytes)
		}
	})
	t.Run("aligned", func(t *testing.T) {
		j, g := c.start(t, t.TempDir(), checkpoint.Aligned, newTxnStore())
		checkpointWaits(t, j, g)
		j.Cancel()
		recs := j.Checkpoints()
		if len(recs) == 0 || recs[0].Mode != checkpoint.Aligned || recs[0].AlignWait <= 0 || recs[0].InflightBytes != 0 ||
			recs[0].Bytes <= 0 || recs[0].Duration < recs[0].AlignWait {
			t.Fatalf("history %+v", recs)
		}
	})
}

// The checkpoint history and the job's totals survive the job: a new Job over the same directory (a process
// restart) shows the same records, restarts and start time before it runs, and goes on from them. A damaged
// history fails NewJob with XX001 naming the file.
func TestNewHistorySurvivesNewJob(t *testing.T) {
	a := seqConfig{seed: 5, rows: 2000, batchRows: 20, keys: 30, tsStep: 5}
	var countdown atomic.Int64
	countdown.Store(100)
	dir := t.TempDir()
	cfg := jobConfig(t, dir)
	j := runToEnd(t, flakyPipeline(a, a, newTxnStore(), &countdown, false), cfg)
	st, recs := j.Status(), j.Checkpoints()
	if st.Restarts != 1 || st.CheckpointsCompleted == 0 || len(recs) == 0 {
		t.Fatalf("status %+v, %d records", st, len(recs))
	}

	j2, err := exec.NewJob(flakyPipeline(a, a, newTxnStore(), new(atomic.Int64), false), cfg)
	if err != nil {
		t.Fatal(err)
	}
	st2, recs2 := j2.Status(), j2.Checkpoints()
	if st2.Restarts != 1 || st2.RestartsByCause[exec.RestartFailure] != 1 || !st2.StartedAt.Equal(st.StartedAt) ||
		st2.CheckpointsCompleted != st.CheckpointsCompleted || st2.CheckpointsFailed != st.CheckpointsFailed ||
		len(recs2) != len(recs) || recs2[len(recs2)-1].ID != recs[len(recs)-1].ID {
		t.Fatalf("a new job over the same directory: status %+v and %d records, want %+v and %d", st2, len(recs2), st, len(recs))
	}

	path := filepath.Join(j.CheckpointDir(), checkpoint.HistoryFile)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)-20] ^= 1
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = exec.NewJob(flakyPipeline(a, a, newTxnStore(), new(atomic.Int64), false), cfg)
	if c, ok := state.IsCorrupt(err); !ok || c.Path != path {
		t.Fatalf("NewJob over a damaged history: %v, want a corruption of %s", err, path)
	}
}

// progressSource tells its lag: the rows it has not produced yet (and ten bytes each), of rows in total.
type progressSource struct {
	exec.Source
	rows     int64
	produced atomic.Int64
}

func (p *progressSource) Produce(ctx context.Context) (exec.SourceResult, error) {
	res, err := p.Source.Produce(ctx)
	if res.Status == exec.Produced {
		p.produced.Add(int64(res.Batch.Rows()))
	}
	return res, err
}

func (p *progressSource) Progress() (int64, int64, int64) {
	left := p.rows - p.produced.Load()
	return left, 10 * left, p.rows
}

// progressSink counts 100 bytes per commit, in its own counter and in the test's.
type progressSink struct {
	exec.Sink
	mine  atomic.Int64
	total *atomic.Int64
}

func (p *progressSink) Commit(id uint64) error {
	p.mine.Add(100)
	p.total.Add(100)
	return p.Sink.Commit(id)
}

func (p *progressSink) CommittedBytes() int64 { return p.mine.Load() }

// A source's lag and total come from its SourceProgress while it runs (and are unknown, -1, once it is closed);
// a sink's committed bytes from its SinkProgress, and the runtime times its commits.
func TestNewSourceAndSinkProgress(t *testing.T) {
	gate := make(chan struct{})
	c := seqConfig{seed: 3, rows: 1000, batchRows: 10, keys: 5, tsStep: 10, gate: gate}
	var committed atomic.Int64
	g := exec.NewGraph()
	src := g.AddSource("gen", 1, func(sub int) exec.Source {
		return &progressSource{Source: newSeqSource(c)(sub), rows: int64(c.rows)}
	})
	g.AddSink("sink", 1, func(sub int) exec.Sink {
		return &progressSink{Sink: discardSink{}, total: &committed}
	}, exec.From(src, exec.ForwardExchange()))
	j, err := exec.NewJob(g, jobConfig(t, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	j.Start(ctx)
	for range 30 {
		gate <- struct{}{}
	}
	waitFor(t, func() bool { // the 30th batch is out: 700 rows left
		s := subtaskOf(t, j, "gen", 0)
		return s.LagRecords == 700 && s.LagBytes == 7000 && s.Total == 1000
	})
	close(gate)
	if err := j.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	s := subtaskOf(t, j, "sink", 0)
	if s.CommittedBytes == 0 || s.CommittedBytes != committed.Load() || s.LastCommit <= 0 {
		t.Fatalf("sink: committed %d bytes (its commits: %d), last commit %v", s.CommittedBytes, committed.Load(), s.LastCommit)
	}
	if s := subtaskOf(t, j, "gen", 0); s.LagRecords != -1 || s.Total != -1 {
		t.Fatalf("a closed source's lag %d of %d, want -1", s.LagRecords, s.Total)
	}
}
