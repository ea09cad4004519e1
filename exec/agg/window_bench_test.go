package agg

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/exec/optest"
)

const (
	windowBenchBatch   = 8192
	windowBenchKeys    = 10_000
	windowBenchStep    = 10         // µs of event time per row: a 10 s window holds 1M rows, 100 per key
	windowBenchBarrier = 128        // batches between barriers: ~1M rows
	windowBenchBatches = 256        // pre-generated, then re-used with their times shifted
	windowBenchSize    = 10_000_000 // 10 s
)

// windowBidBatches generates the benchmark's batches: random auctions out of 10k, random prices, times advancing.
func windowBidBatches(mem memory.Allocator) []exec.Batch {
	return optest.BidBatches(mem, windowBenchBatches, windowBenchBatch, windowBenchKeys, windowBenchStep, 1)
}

// benchWindowTumble runs tumbling COUNT(*), SUM(price) GROUP BY auction over 10 s windows in one goroutine,
// calling Process and OnWatermark (the batch's last time) directly, with a barrier every ~1M rows whose snapshot
// is persisted with the timer stopped (the runtime persists on another goroutine). It reports input rows per
// second of operator time.
func benchWindowTumble(b *testing.B, pebble bool, metric string) {
	mem := memory.NewGoAllocator()
	batches := windowBidBatches(mem)
	defer optest.ReleaseBatches(batches)
	f, _, err := NewWindowAggregate(WindowAggConfig{Kind: WindowTumble, TimeCol: 2, Size: windowBenchSize, Keys: []int{0},
		Aggs: []AggSpec{{Func: AggCountStar, Arg: -1, Filter: -1}, {Func: AggSum, Arg: 1, Filter: -1}}}, optest.BidSchema)
	if err != nil {
		b.Fatal(err)
	}
	span := int64(windowBenchBatches * windowBenchBatch * windowBenchStep)
	r := optest.RunKeyedBench(b, optest.KeyedBench{Op: f(0), Mem: mem, Memory: !pebble,
		Step:      optest.FeedInTurn(batches),
		Watermark: func(i int) int64 { return optest.LastBidTime(batches[i%len(batches)]) },
		Rewind:    func() { optest.ShiftTimes(batches, span) }, Cycle: len(batches),
		Barrier: windowBenchBarrier, Metric: metric})
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
