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

// BenchmarkTopN: the top 3 bids by price per auction (ROW_NUMBER() OVER (PARTITION BY auction ORDER BY price
// DESC) <= 3, with the row number) over the window benchmark's append-only bids, on Pebble with a barrier every
// ~1M rows persisted with the timer stopped, as BenchmarkGroupAggregate.
func BenchmarkTopN(b *testing.B) {
	b.Setenv("CLINK_STATE_FSYNC", "0")
	mem := memory.NewGoAllocator()
	batches := winBidBatches(mem)
	defer func() {
		for _, bt := range batches {
			bt.Release()
		}
	}()
	f, _, err := NewTopN(TopNConfig{Partition: []int{0}, Order: []SortKey{{Col: 1, Desc: true, NullsFirst: true}},
		N: 3, RankOut: true, RankName: "rn"}, winBidSchema)
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
	b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "topn_rows_per_sec:rows/s")
	b.ReportMetric(float64(out.rows)/float64(rows), "out_rows/row")
}
