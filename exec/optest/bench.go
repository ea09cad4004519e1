package optest

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/state"
)

// BidSchema is the bid shape of the keyed benchmarks: (auction BIGINT, price BIGINT, date_time TIMESTAMP(6)).
var BidSchema = arrow.NewSchema([]arrow.Field{
	{Name: "auction", Type: arrow.PrimitiveTypes.Int64},
	{Name: "price", Type: arrow.PrimitiveTypes.Int64},
	{Name: "date_time", Type: &arrow.TimestampType{Unit: arrow.Microsecond}},
}, nil)

// KeyedBench is one keyed-operator benchmark for RunKeyedBench: the operator, what it is fed, and how.
type KeyedBench struct {
	Op     exec.Operator    // the operator under test, not yet opened
	Mem    memory.Allocator // the allocator of the batches, the operator's too
	Memory bool             // the memory state backend rather than Pebble, the one the runtime gives keyed operators
	// step feeds the i-th b.Loop iteration's batches (i from 0), each through feed with its input.
	Step BenchStep
	// watermark, if set, gives the watermark OnWatermark receives after the i-th step.
	Watermark func(i int) int64
	// rewind, if set, is called with the timer stopped before every step i > 0 that is a multiple of cycle: it
	// moves the pre-generated batches' times forward so they can be fed again.
	Rewind  func()
	Cycle   int
	Barrier int    // steps between barriers
	Metric  string // "<name>:rows/s", the figure of input rows per second of operator time
}

// BenchStep feeds one step of a benchmark: feed(input, batch) for each of its batches, in order.
type BenchStep func(i int, feed func(input int, bt exec.Batch))

// KeyedBenchResult is what a keyed benchmark fed and got, for its own figures and checks.
type KeyedBenchResult struct {
	Rows, Out    int   // input rows fed, output rows emitted
	Late, Errors int64 // the task's Late and Errors counters
}

// RunKeyedBench measures a keyed operator in one goroutine calling its methods directly: each b.Loop iteration is
// one step (Process for each of its batches, then OnWatermark if kb.watermark is set), and every kb.barrier steps
// an OnBarrier whose snapshot is captured, then persisted with the timer stopped (the runtime persists on another
// goroutine). It reports input rows per second of operator time as kb.metric.
func RunKeyedBench(b *testing.B, kb KeyedBench) KeyedBenchResult {
	b.Setenv("CLINK_STATE_FSYNC", "0")
	dir := b.TempDir()
	var be state.Backend
	var err error
	if kb.Memory {
		be, err = state.OpenMemory(state.Options{})
	} else {
		be, err = state.OpenPebble(state.Options{Dir: filepath.Join(dir, "work")})
	}
	if err != nil {
		b.Fatal(err)
	}
	defer be.Close()
	op := kb.Op
	ctx := &exec.TaskContext{KeyGroups: state.KeyGroupRange{End: state.DefaultKeyGroups},
		MaxKeyGroups: state.DefaultKeyGroups, State: be, Alloc: kb.Mem, Late: &exec.Counter{}, Errors: &exec.Counter{}}
	if err := op.Open(ctx); err != nil {
		b.Fatal(err)
	}
	defer op.Close()
	out := &DiscardEmitter{}
	rows := 0
	feed := func(input int, bt exec.Batch) {
		rows += bt.Rows()
		bt.Rec.Retain()
		if err := op.Process(input, bt, out); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	id := uint64(0)
	for i := 0; b.Loop(); i++ {
		if kb.Rewind != nil && i > 0 && i%kb.Cycle == 0 {
			b.StopTimer()
			kb.Rewind()
			b.StartTimer()
		}
		kb.Step(i, feed)
		if kb.Watermark != nil {
			if err := op.OnWatermark(kb.Watermark(i), out); err != nil {
				b.Fatal(err)
			}
		}
		if (i+1)%kb.Barrier == 0 {
			id++
			if err := op.OnBarrier(id); err != nil {
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
	b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), kb.Metric)
	return KeyedBenchResult{Rows: rows, Out: out.Rows, Late: ctx.Late.Load(), Errors: ctx.Errors.Load()}
}

// FeedInTurn is the step of a one-input benchmark: the batches to input 0, one a step, over and over.
func FeedInTurn(batches []exec.Batch) BenchStep {
	return func(i int, feed func(int, exec.Batch)) { feed(0, batches[i%len(batches)]) }
}

// BidBatches generates n batches of rows bids in BidSchema (auction, price, date_time), from seed: random
// auctions out of keys, random prices, times from 0 advancing step µs a row.
func BidBatches(mem memory.Allocator, n, rows, keys, step int, seed uint64) []exec.Batch {
	out := make([]exec.Batch, n)
	x := seed
	for i := range out {
		b := array.NewRecordBuilder(mem, BidSchema)
		a, p, ts := b.Field(0).(*array.Int64Builder), b.Field(1).(*array.Int64Builder), b.Field(2).(*array.TimestampBuilder)
		for r := range rows {
			x = state.MixInt64(x + 0x9e3779b97f4a7c15)
			a.Append(int64(x % uint64(keys)))
			p.Append(int64(x>>32) % 10_000_000)
			ts.Append(arrow.Timestamp(int64(i*rows+r) * int64(step)))
		}
		out[i] = exec.Batch{Rec: b.NewRecordBatch()}
		b.Release()
	}
	return out
}

// LastBidTime is the last event time (date_time) of a batch in BidSchema.
func LastBidTime(bt exec.Batch) int64 {
	ts := bt.Rec.Column(2).(*array.Timestamp).TimestampValues()
	return int64(ts[len(ts)-1])
}

// ShiftTimes moves every batch's event times forward by d, so the batches can be fed again after the last.
func ShiftTimes(batches []exec.Batch, d int64) {
	for _, bt := range batches {
		v := bt.Rec.Column(2).(*array.Timestamp).TimestampValues()
		for i := range v {
			v[i] += arrow.Timestamp(d)
		}
	}
}

type DiscardEmitter struct{ Rows int }

func (d *DiscardEmitter) Emit(b exec.Batch) error { d.Rows += b.Rows(); b.Release(); return nil }

// ReleaseBatches releases a benchmark's pre-generated batches.
func ReleaseBatches(bs []exec.Batch) {
	for _, b := range bs {
		b.Release()
	}
}
