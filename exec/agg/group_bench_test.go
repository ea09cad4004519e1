package agg

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/exec/optest"
)

// BenchmarkGroupAggregate is the group aggregate's headline figure: COUNT(*), SUM(price) GROUP BY auction over
// the window benchmark's append-only bids (10k auctions, batches of 8192 rows), on the Pebble backend the runtime
// gives keyed operators, in one goroutine, with a barrier every ~1M rows whose snapshot is persisted with the timer
// stopped (the runtime persists on another goroutine). Every batch emits its changelog (about 5.6k groups touched,
// each a -U/+U pair). It reports input rows per second of operator time.
func BenchmarkGroupAggregate(b *testing.B) {
	f, _, err := NewGroupAggregate(GroupAggConfig{Keys: []int{0},
		Aggs: []AggSpec{{Func: AggCountStar, Arg: -1, Filter: -1}, {Func: AggSum, Arg: 1, Filter: -1}}}, optest.BidSchema)
	if err != nil {
		b.Fatal(err)
	}
	benchOverBids(b, f(0), "group_agg_rows_per_sec:rows/s")
}

// benchOverBids feeds op the window benchmark's append-only bids, without watermarks, on Pebble with a barrier
// every ~1M rows, and reports its output rows per input row too.
func benchOverBids(b *testing.B, op exec.Operator, metric string) {
	mem := memory.NewGoAllocator()
	batches := windowBidBatches(mem)
	defer optest.ReleaseBatches(batches)
	r := optest.RunKeyedBench(b, optest.KeyedBench{Op: op, Mem: mem, Step: optest.FeedInTurn(batches), Barrier: windowBenchBarrier,
		Metric: metric})
	b.ReportMetric(float64(r.Out)/float64(r.Rows), "out_rows/row")
}
