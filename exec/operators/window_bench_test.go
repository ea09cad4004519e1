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

// winBidSchema is the bid shape of the window benchmark: (auction BIGINT, price BIGINT, date_time TIMESTAMP(6)).
var winBidSchema = arrow.NewSchema([]arrow.Field{
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
	out := make([]exec.Batch, benchWinBatches)
	x := uint64(1)
	for i := range out {
		b := array.NewRecordBuilder(mem, winBidSchema)
		a, p, ts := b.Field(0).(*array.Int64Builder), b.Field(1).(*array.Int64Builder), b.Field(2).(*array.TimestampBuilder)
		for r := 0; r < benchWinBatch; r++ {
			x = state.MixInt64(x + 0x9e3779b97f4a7c15)
			a.Append(int64(x % benchWinKeys))
			p.Append(int64(x>>32) % 10_000_000)
			ts.Append(arrow.Timestamp(int64(i*benchWinBatch+r) * benchWinStep))
		}
		out[i] = exec.Batch{Rec: b.NewRecordBatch()}
		b.Release()
	}
	return out
}

// shiftTimes moves every batch's event times forward by d, so the batches can be fed again after the last.
func shiftTimes(batches []exec.Batch, d int64) {
	for _, bt := range batches {
		v := bt.Rec.Column(2).(*array.Timestamp).TimestampValues()
		for i := range v {
			v[i] += arrow.Timestamp(d)
		}
	}
}

type discardEmitter struct{ rows int }

func (d *discardEmitter) Emit(b exec.Batch) error { d.rows += b.Rows(); b.Release(); return nil }

// benchWindowTumble runs tumbling COUNT(*), SUM(price) GROUP BY auction over 10 s windows in one goroutine,
// calling Process and OnWatermark (the batch's last time) directly, with a barrier every ~1M rows whose snapshot
// is persisted with the timer stopped (the runtime persists on another goroutine). It reports input rows per
// second of operator time.
func benchWindowTumble(b *testing.B, pebble bool, metric string) {
	b.Setenv("CLINK_STATE_FSYNC", "0")
	mem := memory.NewGoAllocator()
	batches := winBidBatches(mem)
	defer func() {
		for _, bt := range batches {
			bt.Release()
		}
	}()
	f, _, err := NewWindowAggregate(WindowAggConfig{Kind: WindowTumble, TimeCol: 2, Size: benchWinSize, Keys: []int{0},
		Aggs: []AggSpec{{Func: AggCountStar, Arg: -1, Filter: -1}, {Func: AggSum, Arg: 1, Filter: -1}}}, winBidSchema)
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	var be state.Backend
	if pebble {
		be, err = state.OpenPebble(state.Options{Dir: filepath.Join(dir, "work")})
	} else {
		be, err = state.OpenMemory(state.Options{})
	}
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
	span := int64(benchWinBatches * benchWinBatch * benchWinStep)
	b.ReportAllocs()
	b.ResetTimer()
	rows, id := 0, uint64(0)
	for i := 0; b.Loop(); i++ {
		k := i % len(batches)
		if k == 0 && i > 0 {
			b.StopTimer()
			shiftTimes(batches, span)
			b.StartTimer()
		}
		bt := batches[k]
		bt.Rec.Retain()
		if err := op.Process(0, bt, out); err != nil {
			b.Fatal(err)
		}
		ts := bt.Rec.Column(2).(*array.Timestamp).TimestampValues()
		if err := op.OnWatermark(int64(ts[len(ts)-1]), out); err != nil {
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
	b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), metric)
	if late := ctx.Late.Load(); late != 0 {
		b.Fatalf("%d rows late", late)
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
