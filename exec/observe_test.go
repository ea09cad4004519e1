package exec_test

import (
	"sync/atomic"
	"testing"

	"github.com/clinksql/clinksql/exec"
)

// Per-subtask figures count each row once across a restart, like the job's: the sources' rows out sum to the rows
// read, the aggregate takes every row in once, the sinks write exactly what was committed; the job's watermark is
// its sinks' (+inf once the input ended); the edges are the graph's; the restart is counted under its cause.
func TestNewSubtaskStatsCountOnceAcrossRestart(t *testing.T) {
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
	agg.Label = "WindowSum"
	g.AddSink("sink", 2, newMemSink(store), exec.From(agg, exec.ForwardExchange()))
	j := runToEnd(t, g, jobConfig(t, t.TempDir()))

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
		edges[0].Exchange.String() != "hash[0]" || edges[2].Exchange.String() != "forward[]" {
		t.Fatalf("edges %+v", edges)
	}
}
