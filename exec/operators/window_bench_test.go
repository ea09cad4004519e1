package operators

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clinksql/clinksql/exec"
)

// BidSchema is the bid shape of the window benchmark: (auction BIGINT, price BIGINT, date_time TIMESTAMP(6)).
var BidSchema = arrow.NewSchema([]arrow.Field{
	{Name: "auction", Type: arrow.PrimitiveTypes.Int64},
	{Name: "price", Type: arrow.PrimitiveTypes.Int64},
	{Name: "date_time", Type: &arrow.TimestampType{Unit: arrow.Microsecond}},
}, nil)

const (
	benchWinBatch   = 8192
	benchWinKeys    = 10_000
	benchWinStep    = 10         // µs of event time per row: a 10 s window holds 1M rows, 100 per key
	benchWinBarrier = 128        // batches between barriers: ~1M rows
	benchWinBatches = 256        // pre-generated, then re-used with their times shifted
	benchWinSize    = 10_000_000 // 10 s
)

// winBidBatches generates the benchmark's batches: random auctions out of 10k, random prices, times advancing.
func winBidBatches(mem memory.Allocator) []exec.Batch {
	return BidBatches(mem, benchWinBatches, benchWinBatch, benchWinKeys, benchWinStep, 1)
}

// benchWindowTumble runs tumbling COUNT(*), SUM(price) GROUP BY auction over 10 s windows in one goroutine,
// calling Process and OnWatermark (the batch's last time) directly, with a barrier every ~1M rows whose snapshot
// is persisted with the timer stopped (the runtime persists on another goroutine). It reports input rows per
// second of operator time.
func benchWindowTumble(b *testing.B, pebble bool, metric string) {
	mem := memory.NewGoAllocator()
	batches := winBidBatches(mem)
	defer releaseBatches(batches)
	f, _, err := NewWindowAggregate(WindowAggConfig{Kind: WindowTumble, TimeCol: 2, Size: benchWinSize, Keys: []int{0},
		Aggs: []AggSpec{{Func: AggCountStar, Arg: -1, Filter: -1}, {Func: AggSum, Arg: 1, Filter: -1}}}, BidSchema)
	if err != nil {
		b.Fatal(err)
	}
	span := int64(benchWinBatches * benchWinBatch * benchWinStep)
	r := RunKeyedBench(b, KeyedBench{Op: f(0), Mem: mem, Memory: !pebble,
		Step:      FeedInTurn(batches),
		Watermark: func(i int) int64 { return LastBidTime(batches[i%len(batches)]) },
		Rewind:    func() { ShiftTimes(batches, span) }, Cycle: len(batches),
		Barrier: benchWinBarrier, Metric: metric})
	if r.Late != 0 {
		b.Fatalf("%d rows late", r.Late)
	}
}

// BenchmarkWindowTumbleCountSum is the window aggregate's headline figure, on the Pebble backend the runtime gives
// keyed operators.
func BenchmarkWindowTumbleCountSum(b *testing.B) {
	benchWindowTumble(b, true, "window_tumble_rows_per_sec:rows/s")
}

// BenchmarkWindowTumbleCountSumMemory is the same on the memory backend.
func BenchmarkWindowTumbleCountSumMemory(b *testing.B) {
	benchWindowTumble(b, false, "window_tumble_mem_rows_per_sec:rows/s")
}
