package exec_test

import (
	"testing"

	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/exec/operators"
)

// unionPipeline is gen-a and gen-b into a union, then the keyed window aggregate, then the sink; g, when set,
// holds the union's input 1.
func unionPipeline(a, b seqConfig, store *txnStore, g *gate) *exec.Graph {
	gr := exec.NewGraph()
	sa := gr.AddSource("gen-a", 1, newSeqSource(a))
	sb := gr.AddSource("gen-b", 1, newSeqSource(b))
	u := gr.AddOperator("union", 1, g.wrap(operators.NewUnion()), exec.From(sa, exec.ForwardExchange()), exec.From(sb, exec.ForwardExchange()))
	agg := gr.AddOperator("agg", 1, newWindowSum(windowSize), exec.From(u, exec.ForwardExchange())).WithKeyedState()
	gr.AddSink("sink", 1, newMemSink(store), exec.From(agg, exec.ForwardExchange()))
	return gr
}

// pins (issue 5's multi-input rule, for UNION ALL): with the union's input 1 held behind a gate, an unaligned
// checkpoint completes while an aligned one still waits behind the queued batches, and a restore from the
// unaligned checkpoint (its captured in-flight batches replayed) gives the output of a run without failure.
func TestUnionUnalignedCheckpointUnderBackpressure(t *testing.T) {
	a := seqConfig{seed: 21, rows: 50, batchRows: 50, keys: 10, tsStep: 40}
	b := seqConfig{seed: 22, rows: 2000, batchRows: 10, keys: 10, tsStep: 1}
	gatedCase{
		graph: func(g *gate, store *txnStore) *exec.Graph { return unionPipeline(a, b, store, g) },
		op:    "union-0", rows: a.rows + b.rows, want: expectedWindows(events(a, b, 1), windowSize),
	}.run(t)
}
