package exec_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/clinksql/clinksql/exec"
)

// AfterCommit hears of a checkpoint only once every sink subtask committed it, and not at all when a commit
// failed (its output is then not all visible: recovery publishes it later).
func TestAfterCommitFollowsEverySinkCommit(t *testing.T) {
	for _, failing := range []bool{false, true} {
		gate := make(chan struct{})
		a := seqConfig{seed: 13, rows: 1000, batchRows: 10, keys: 5, tsStep: 3, gate: gate}
		commits := make([]atomic.Int64, 2)
		store := newTxnStore()
		g := exec.NewGraph()
		src := g.AddSource("gen", 1, newSeqSource(a))
		agg := g.AddOperator("agg", 2, newWindowSum(windowSize), exec.From(src, exec.HashExchange(0))).WithKeyedState()
		g.AddSink("sink", 2, func(sub int) exec.Sink {
			return &countingSink{Sink: newMemSink(store)(sub), commits: &commits[sub], fail: failing && sub == 1}
		}, exec.From(agg, exec.ForwardExchange()))
		cfg := jobConfig(t, t.TempDir())
		cfg.CheckpointInterval = 0
		var mu sync.Mutex
		var heard []uint64
		var committedWhenHeard []int64
		cfg.AfterCommit = func(id uint64) {
			mu.Lock()
			defer mu.Unlock()
			heard = append(heard, id)
			committedWhenHeard = append(committedWhenHeard, commits[0].Load()+commits[1].Load())
		}
		j, err := exec.NewJob(g, cfg)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		j.Start(ctx)
		gate <- struct{}{} // deployed
		id, err := j.TriggerCheckpoint()
		if err != nil {
			t.Fatal(err)
		}
		gate <- struct{}{}
		err = j.WaitCheckpoint(ctx, id)
		j.Cancel()
		cancel()
		mu.Lock()
		if failing {
			if err == nil || len(heard) != 0 {
				t.Fatalf("failing commit: WaitCheckpoint = %v, AfterCommit heard %v; want an error and nothing heard", err, heard)
			}
		} else if err != nil || len(heard) != 1 || heard[0] != id || committedWhenHeard[0] != 2 {
			t.Fatalf("WaitCheckpoint = %v, AfterCommit heard %v with %v commits done; want [%d] after both sinks' commits",
				err, heard, committedWhenHeard, id)
		}
		mu.Unlock()
	}
}
