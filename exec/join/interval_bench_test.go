package join

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/exec/optest"
)

const (
	benchIJBatch   = 8192
	benchIJKeys    = 10_000
	benchIJStep    = 200       // µs of event time per row of one side: 5k rows/s per side
	benchIJBound   = 2_000_000 // ±2 s: a row meets ~2 rows of the other side (4 s × 5k/s over 10k keys)
	benchIJBarrier = 128       // batches between barriers: ~1M rows
	benchIJBatches = 64        // per side, pre-generated, then re-used with their times shifted
)

// intervalBenchBatches generates one side's batches in BidSchema (auction, price, date_time): random keys out of
// 10k, times advancing benchIJStep per row.
func intervalBenchBatches(mem memory.Allocator, seed uint64) []exec.Batch {
	return optest.BidBatches(mem, benchIJBatches, benchIJBatch, benchIJKeys, benchIJStep, seed)
}

// BenchmarkIntervalJoin is the interval join's headline figure: an inner join of two bid streams on auction with
// right.date_time within ±2 s of left.date_time, on the Pebble backend the runtime gives keyed operators. One
// goroutine calls Process for a left and a right batch of the same event-time span in turn, then OnWatermark
// (their common last time), with a barrier every ~1M rows whose snapshot is persisted with the timer stopped (the
// runtime persists on another goroutine). It reports input rows of both sides per second of operator time.
func BenchmarkIntervalJoin(b *testing.B) {
	mem := memory.NewGoAllocator()
	sides := [2][]exec.Batch{intervalBenchBatches(mem, 1), intervalBenchBatches(mem, 2)}
	defer optest.ReleaseBatches(sides[0])
	defer optest.ReleaseBatches(sides[1])
	f, _, err := NewIntervalJoin(IntervalJoinConfig{
		JoinSpec: JoinSpec{Type: JoinInner, Left: optest.BidSchema, Right: optest.BidSchema, LeftKeys: []int{0}, RightKeys: []int{0}},
		LeftTime: 2, RightTime: 2, Lower: -benchIJBound, Upper: benchIJBound,
	})
	if err != nil {
		b.Fatal(err)
	}
	span := int64(benchIJBatches * benchIJBatch * benchIJStep)
	r := optest.RunKeyedBench(b, optest.KeyedBench{Op: f(0), Mem: mem,
		Step: func(i int, feed func(int, exec.Batch)) {
			for side, bs := range sides {
				feed(side, bs[i%benchIJBatches])
			}
		},
		Watermark: func(i int) int64 { return optest.LastBidTime(sides[0][i%benchIJBatches]) },
		Rewind: func() {
			optest.ShiftTimes(sides[0], span)
			optest.ShiftTimes(sides[1], span)
		}, Cycle: benchIJBatches,
		Barrier: benchIJBarrier / 2, // a step is a batch of each side
		Metric:  "interval_join_rows_per_sec:rows/s"})
	b.ReportMetric(float64(r.Out)/float64(r.Rows), "out/in")
	if r.Late != 0 {
		b.Fatalf("%d rows late", r.Late)
	}
}
