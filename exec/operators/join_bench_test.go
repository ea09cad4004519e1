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

// rjAuctionSchema is the auction side of the join benchmark: (id BIGINT, seller BIGINT, reserve BIGINT).
var rjAuctionSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "seller", Type: arrow.PrimitiveTypes.Int64},
	{Name: "reserve", Type: arrow.PrimitiveTypes.Int64},
}, nil)

const (
	benchRJBatch    = 8192
	benchRJAuctions = 100_000 // keys; each auction is inserted once
	benchRJBids     = 256     // pre-generated bid batches, re-used
	benchRJBarrier  = 128     // batches between barriers: ~1M rows
	benchRJEvery    = 4       // while auctions remain, every 4th batch is one
)

// rjAuctionBatches inserts every auction once, in a scrambled key order.
func rjAuctionBatches(mem memory.Allocator) []exec.Batch {
	var out []exec.Batch
	for start := 0; start < benchRJAuctions; start += benchRJBatch {
		b := array.NewRecordBuilder(mem, rjAuctionSchema)
		id, seller, reserve := b.Field(0).(*array.Int64Builder), b.Field(1).(*array.Int64Builder), b.Field(2).(*array.Int64Builder)
		for i := start; i < min(start+benchRJBatch, benchRJAuctions); i++ {
			k := int64(i) * 7919 % benchRJAuctions // 7919 is prime to 100000: a permutation
			id.Append(k)
			seller.Append(k % 1000)
			reserve.Append(k * 10)
		}
		out = append(out, exec.Batch{Rec: b.NewRecordBatch()})
		b.Release()
	}
	return out
}

// rjBidBatches generates bids (auction, price, date_time) with random auctions out of all 100k.
func rjBidBatches(mem memory.Allocator) []exec.Batch {
	out := make([]exec.Batch, benchRJBids)
	x := uint64(3)
	for i := range out {
		b := array.NewRecordBuilder(mem, winBidSchema)
		a, p, ts := b.Field(0).(*array.Int64Builder), b.Field(1).(*array.Int64Builder), b.Field(2).(*array.TimestampBuilder)
		for r := range benchRJBatch {
			x = state.MixInt64(x + 0x9e3779b97f4a7c15)
			a.Append(int64(x % benchRJAuctions))
			p.Append(int64(x>>32) % 10_000_000)
			ts.Append(arrow.Timestamp(int64(i*benchRJBatch + r)))
		}
		out[i] = exec.Batch{Rec: b.NewRecordBatch()}
		b.Release()
	}
	return out
}

// BenchmarkRegularJoin is the regular join's headline figure: an inner join of append-only auctions (100k keys,
// each inserted once, interleaved with the first bids) with bids on random auctions, in one goroutine calling
// Process directly on the Pebble backend the runtime gives keyed operators, with a barrier every ~1M rows whose
// snapshot is persisted with the timer stopped. It reports input rows (both sides) per second of operator time.
// Every bid is kept in state (a regular join forgets nothing), so the state grows with b.N.
func BenchmarkRegularJoin(b *testing.B) {
	b.Setenv("CLINK_STATE_FSYNC", "0")
	mem := memory.NewGoAllocator()
	auctions, bids := rjAuctionBatches(mem), rjBidBatches(mem)
	defer func() {
		for _, bt := range append(auctions, bids...) {
			bt.Release()
		}
	}()
	f, _, err := NewJoin(RegularJoinConfig{JoinSpec: JoinSpec{Type: JoinInner, Left: rjAuctionSchema, Right: winBidSchema,
		LeftKeys: []int{0}, RightKeys: []int{0}}})
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
	rows, id, na, nb := 0, uint64(0), 0, 0
	for i := 0; b.Loop(); i++ {
		input, bt := 1, bids[nb%len(bids)]
		if na < len(auctions) && i%benchRJEvery == 0 {
			input, bt = 0, auctions[na]
			na++
		} else {
			nb++
		}
		bt.Rec.Retain()
		rows += bt.Rows()
		if err := op.Process(input, bt, out); err != nil {
			b.Fatal(err)
		}
		if (i+1)%benchRJBarrier == 0 {
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
	b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "regular_join_rows_per_sec:rows/s")
	if e := ctx.Errors.Load(); e != 0 {
		b.Fatalf("%d errors", e)
	}
	if na == len(auctions) && out.rows == 0 {
		b.Fatal("no output")
	}
}
