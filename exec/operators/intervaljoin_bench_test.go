package operators

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clinksql/clinksql/exec"
)

const (
	benchIJBatch   = 8192
	benchIJKeys    = 10_000
	benchIJStep    = 200       // µs of event time per row of one side: 5k rows/s per side
	benchIJBound   = 2_000_000 // ±2 s: a row meets ~2 rows of the other side (4 s × 5k/s over 10k keys)
	benchIJBarrier = 128       // batches between barriers: ~1M rows
	benchIJBatches = 64        // per side, pre-generated, then re-used with their times shifted
)

// ijBenchBatches generates one side's batches in winBidSchema (auction, price, date_time): random keys out of
// 10k, times advancing benchIJStep per row.
func ijBenchBatches(mem memory.Allocator, seed uint64) []exec.Batch {
	return bidBatches(mem, benchIJBatches, benchIJBatch, benchIJKeys, benchIJStep, seed)
}

// BenchmarkIntervalJoin is the interval join's headline figure: an inner join of two bid streams on auction with
// right.date_time within ±2 s of left.date_time, on the Pebble backend the runtime gives keyed operators. One
// goroutine calls Process for a left and a right batch of the same event-time span in turn, then OnWatermark
// (their common last time), with a barrier every ~1M rows whose snapshot is persisted with the timer stopped (the
// runtime persists on another goroutine). It reports input rows of both sides per second of operator time.
func BenchmarkIntervalJoin(b *testing.B) {
	mem := memory.NewGoAllocator()
	sides := [2][]exec.Batch{ijBenchBatches(mem, 1), ijBenchBatches(mem, 2)}
	defer releaseBatches(sides[0])
	defer releaseBatches(sides[1])
	f, _, err := NewIntervalJoin(IntervalJoinConfig{
		JoinSpec: JoinSpec{Type: JoinInner, Left: winBidSchema, Right: winBidSchema, LeftKeys: []int{0}, RightKeys: []int{0}},
		LeftTime: 2, RightTime: 2, Lower: -benchIJBound, Upper: benchIJBound,
	})
	if err != nil {
		b.Fatal(err)
	}
	span := int64(benchIJBatches * benchIJBatch * benchIJStep)
	r := runKeyedBench(b, keyedBench{op: f(0), mem: mem,
		step: func(i int, feed func(int, exec.Batch)) {
			for side, bs := range sides {
				feed(side, bs[i%benchIJBatches])
			}
		},
		watermark: func(i int) int64 { return lastBidTime(sides[0][i%benchIJBatches]) },
		rewind: func() {
			shiftTimes(sides[0], span)
			shiftTimes(sides[1], span)
		}, cycle: benchIJBatches,
		barrier: benchIJBarrier / 2, // a step is a batch of each side
		metric:  "interval_join_rows_per_sec:rows/s"})
	b.ReportMetric(float64(r.out)/float64(r.rows), "out/in")
	if r.late != 0 {
		b.Fatalf("%d rows late", r.late)
	}
}
