package join

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/exec/optest"
)

// auctionSchema is the auction side of the join benchmark: (id BIGINT, seller BIGINT, reserve BIGINT).
var auctionSchema = arrow.NewSchema([]arrow.Field{
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

// auctionBatches inserts every auction once, in a scrambled key order.
func auctionBatches(mem memory.Allocator) []exec.Batch {
	var out []exec.Batch
	for start := 0; start < benchRJAuctions; start += benchRJBatch {
		b := array.NewRecordBuilder(mem, auctionSchema)
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

// regularBidBatches generates bids (auction, price, date_time) with random auctions out of all 100k.
func regularBidBatches(mem memory.Allocator) []exec.Batch {
	return optest.BidBatches(mem, benchRJBids, benchRJBatch, benchRJAuctions, 1, 3)
}

// BenchmarkRegularJoin is the regular join's headline figure: an inner join of append-only auctions (100k keys,
// each inserted once, interleaved with the first bids) with bids on random auctions, in one goroutine calling
// Process directly on the Pebble backend the runtime gives keyed operators, with a barrier every ~1M rows whose
// snapshot is persisted with the timer stopped. It reports input rows (both sides) per second of operator time.
// Every bid is kept in state (a regular join forgets nothing), so the state grows with b.N.
func BenchmarkRegularJoin(b *testing.B) {
	mem := memory.NewGoAllocator()
	auctions, bids := auctionBatches(mem), regularBidBatches(mem)
	defer optest.ReleaseBatches(auctions)
	defer optest.ReleaseBatches(bids)
	f, _, err := NewJoin(RegularJoinConfig{JoinSpec: JoinSpec{Type: JoinInner, Left: auctionSchema, Right: optest.BidSchema,
		LeftKeys: []int{0}, RightKeys: []int{0}}})
	if err != nil {
		b.Fatal(err)
	}
	na, nb := 0, 0
	r := optest.RunKeyedBench(b, optest.KeyedBench{Op: f(0), Mem: mem,
		Step: func(i int, feed func(int, exec.Batch)) {
			if na < len(auctions) && i%benchRJEvery == 0 {
				feed(0, auctions[na])
				na++
			} else {
				feed(1, bids[nb%len(bids)])
				nb++
			}
		},
		Barrier: benchRJBarrier, Metric: "regular_join_rows_per_sec:rows/s"})
	if r.Errors != 0 {
		b.Fatalf("%d errors", r.Errors)
	}
	if na == len(auctions) && r.Out == 0 {
		b.Fatal("no output")
	}
}
