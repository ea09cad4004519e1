package operators

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clinksql/clinksql/checkpoint"
	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/state"
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
	out := make([]exec.Batch, benchIJBatches)
	x := seed
	for i := range out {
		b := array.NewRecordBuilder(mem, winBidSchema)
		a, p, ts := b.Field(0).(*array.Int64Builder), b.Field(1).(*array.Int64Builder), b.Field(2).(*array.TimestampBuilder)
		for r := 0; r < benchIJBatch; r++ {
			x = state.MixInt64(x + 0x9e3779b97f4a7c15)
			a.Append(int64(x % benchIJKeys))
			p.Append(int64(x>>32) % 10_000_000)
			ts.Append(arrow.Timestamp(int64(i*benchIJBatch+r) * benchIJStep))
		}
		out[i] = exec.Batch{Rec: b.NewRecordBatch()}
		b.Release()
	}
	return out
}

// BenchmarkIntervalJoin is the interval join's headline figure: an inner join of two bid streams on auction with
// right.date_time within ±2 s of left.date_time, on the Pebble backend the runtime gives keyed operators. One
// goroutine calls Process for a left and a right batch of the same event-time span in turn, then OnWatermark
// (their common last time), with a barrier every ~1M rows whose snapshot is persisted with the timer stopped (the
// runtime persists on another goroutine). It reports input rows of both sides per second of operator time.
func BenchmarkIntervalJoin(b *testing.B) {
	b.Setenv("CLINK_STATE_FSYNC", "0")
	mem := memory.NewGoAllocator()
	sides := [2][]exec.Batch{ijBenchBatches(mem, 1), ijBenchBatches(mem, 2)}
	defer func() {
		for _, bs := range sides {
			for _, bt := range bs {
				bt.Release()
			}
		}
	}()
	f, _, err := NewIntervalJoin(IntervalJoinConfig{
		JoinSpec: JoinSpec{Type: JoinInner, Left: winBidSchema, Right: winBidSchema, LeftKeys: []int{0}, RightKeys: []int{0}},
		LeftTime: 2, RightTime: 2, Lower: -benchIJBound, Upper: benchIJBound,
	})
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
	span := int64(benchIJBatches * benchIJBatch * benchIJStep)
	b.ReportAllocs()
	b.ResetTimer()
	rows, id := 0, uint64(0)
	for i := 0; b.Loop(); i++ {
		k := i % benchIJBatches
		if k == 0 && i > 0 {
			b.StopTimer()
			shiftTimes(sides[0], span)
			shiftTimes(sides[1], span)
			b.StartTimer()
		}
		for side, bs := range sides {
			bt := bs[k]
			bt.Rec.Retain()
			if err := op.Process(side, bt, out); err != nil {
				b.Fatal(err)
			}
		}
		ts := sides[0][k].Rec.Column(2).(*array.Timestamp).TimestampValues()
		if err := op.OnWatermark(int64(ts[len(ts)-1]), out); err != nil {
			b.Fatal(err)
		}
		rows += 2 * benchIJBatch
		if (i+1)%(benchIJBarrier/2) == 0 {
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
	b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "interval_join_rows_per_sec:rows/s")
	b.ReportMetric(float64(out.rows)/float64(rows), "out/in")
	if late := ctx.Late.Load(); late != 0 {
		b.Fatalf("%d rows late", late)
	}
}
