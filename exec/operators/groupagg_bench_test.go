package operators

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clinksql/clinksql/checkpoint"
	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/state"
)

// BenchmarkGroupAggregate is the group aggregate's headline figure: COUNT(*), SUM(price) GROUP BY auction over
// the window benchmark's append-only bids (10k auctions, batches of 8192 rows), on the Pebble backend the runtime
// gives keyed operators, in one goroutine, with a barrier every ~1M rows whose snapshot is persisted with the timer
// stopped (the runtime persists on another goroutine). Every batch emits its changelog (about 5.6k groups touched,
// each a -U/+U pair). It reports input rows per second of operator time.
func BenchmarkGroupAggregate(b *testing.B) {
	b.Setenv("CLINK_STATE_FSYNC", "0")
	mem := memory.NewGoAllocator()
	batches := winBidBatches(mem)
	defer func() {
		for _, bt := range batches {
			bt.Release()
		}
	}()
	f, _, err := NewGroupAggregate(GroupAggConfig{Keys: []int{0},
		Aggs: []AggSpec{{Func: AggCountStar, Arg: -1, Filter: -1}, {Func: AggSum, Arg: 1, Filter: -1}}}, winBidSchema)
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	be, err := state.OpenPebble(state.Options{Dir: filepath.Join(dir, "work")})
	if err != nil {
		b.Fatal(err)
	}
	defer be.Close()
	op := f(0)
	ctx := &exec.TaskContext{KeyGroups: state.KeyGroupRange{End: state.DefaultKeyGroups},
		MaxKeyGroups: state.DefaultKeyGroups, State: be, Alloc: mem, Late: &exec.Counter{}, Errors: &exec.Counter{}}
	if err := op.Open(ctx); err != nil {
		b.Fatal(err)
	}
	defer op.Close()
	out := &discardEmitter{}
	b.ReportAllocs()
	b.ResetTimer()
	rows, id := 0, uint64(0)
	for i := 0; b.Loop(); i++ {
		bt := batches[i%len(batches)]
		bt.Rec.Retain()
		if err := op.Process(0, bt, out); err != nil {
			b.Fatal(err)
		}
		rows += benchWinBatch
		if (i+1)%benchWinBarrier == 0 {
			id++
			if err := op.OnBarrier(checkpoint.Barrier{ID: id}); err != nil {
				b.Fatal(err)
			}
			snap, err := be.Capture(id)
			if err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			if err := snap.Persist(filepath.Join(dir, fmt.Sprintf("chk-%d", id))); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
	}
	b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "group_agg_rows_per_sec:rows/s")
	b.ReportMetric(float64(out.rows)/float64(rows), "out_rows/row")
}
