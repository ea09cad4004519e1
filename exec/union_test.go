package exec_test

import (
	"context"
	"testing"

	"github.com/clinksql/clinksql/checkpoint"
	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/exec/operators"
)

// gatedUnion is the UNION ALL operator with its input 1 held behind a gate: one batch per token, saying so on
// entered before it waits.
type gatedUnion struct {
	exec.Operator
	tokens, entered chan struct{}
}

func (g *gatedUnion) Process(input int, b exec.Batch, out exec.Emitter) error {
	if input == 1 {
		g.entered <- struct{}{}
		<-g.tokens
	}
	return g.Operator.Process(input, b, out)
}

// unionPipeline is gen-a and gen-b into a union, then the keyed window aggregate, then the sink; gate, when set,
// holds the union's input 1.
func unionPipeline(a, b seqConfig, store *txnStore, tokens, entered chan struct{}) *exec.Graph {
	g := exec.NewGraph()
	sa := g.AddSource("gen-a", 1, newSeqSource(a))
	sb := g.AddSource("gen-b", 1, newSeqSource(b))
	union := operators.NewUnion()
	if tokens != nil {
		plain := union
		union = func(sub int) exec.Operator {
			return &gatedUnion{Operator: plain(sub), tokens: tokens, entered: entered}
		}
	}
	u := g.AddOperator("union", 1, union, exec.From(sa, exec.ForwardExchange()), exec.From(sb, exec.ForwardExchange()))
	agg := g.AddOperator("agg", 1, newWindowSum(windowSize), exec.From(u, exec.ForwardExchange())).WithKeyedState()
	g.AddSink("sink", 1, newMemSink(store), exec.From(agg, exec.ForwardExchange()))
	return g
}

// pins (issue 5's multi-input rule, for UNION ALL): with the union's input 1 held behind a gate, an unaligned
// checkpoint completes while an aligned one still waits behind the queued batches, and a restore from the
// unaligned checkpoint (its captured in-flight batches replayed) gives the output of a run without failure.
func TestUnionUnalignedCheckpointUnderBackpressure(t *testing.T) {
	a := seqConfig{seed: 21, rows: 50, batchRows: 50, keys: 10, tsStep: 40}
	b := seqConfig{seed: 22, rows: 2000, batchRows: 10, keys: 10, tsStep: 1}
	want := expectedWindows(events(a, b, 1), windowSize)

	start := func(t *testing.T, dir string, mode checkpoint.Mode, store *txnStore) (*exec.Job, chan struct{}, chan struct{}) {
		tokens, entered := make(chan struct{}), make(chan struct{})
		cfg := jobConfig(t, dir)
		cfg.CheckpointInterval = 0
		cfg.CheckpointMode = mode
		cfg.ChannelCapacity = backpressureCap
		j, err := exec.NewJob(unionPipeline(a, b, store, tokens, entered), cfg)
		if err != nil {
			t.Fatal(err)
		}
		j.Start(context.Background())
		<-entered
		// Let input 0's few elements (its batch and watermarks, taken round robin) through.
		for i := 0; i < 5; i++ {
			tokens <- struct{}{}
			<-entered
		}
		waitFor(t, func() bool { return j.Pressure() == 1 })
		return j, tokens, entered
	}
	t.Run("aligned waits", func(t *testing.T) {
		j, tokens, entered := start(t, t.TempDir(), checkpoint.Aligned, newTxnStore())
		checkpointWaits(t, j, tokens, entered)
		j.Cancel()
	})

	t.Run("unaligned overtakes and replays", func(t *testing.T) {
		dir := t.TempDir()
		store := newTxnStore()
		j, tokens, entered := start(t, dir, checkpoint.Unaligned, store)
		checkpointOvertakes(t, j, tokens, entered, "union-0")
		releaseGate(tokens, entered)
		j.Cancel()
		j2 := runToEnd(t, unionPipeline(a, b, store, nil, nil), jobConfig(t, dir))
		if st := j2.Status(); st.RowsIn >= int64(a.rows+b.rows) {
			t.Fatalf("the second run replayed from the start (%d rows in), not from the checkpoint", st.RowsIn)
		}
		checkRows(t, store.rows(), want)
	})
}
