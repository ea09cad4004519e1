package agg

import (
	"testing"

	"github.com/clinksql/clinksql/exec/optest"
)

// BenchmarkTopN: the top 3 bids by price per auction (ROW_NUMBER() OVER (PARTITION BY auction ORDER BY price
// DESC) <= 3, with the row number) over the window benchmark's append-only bids, on Pebble with a barrier every
// ~1M rows persisted with the timer stopped, as BenchmarkGroupAggregate.
func BenchmarkTopN(b *testing.B) {
	f, _, err := NewTopN(TopNConfig{Partition: []int{0}, Order: []SortKey{{Col: 1, Desc: true, NullsFirst: true}},
		N: 3, RankOut: true, RankName: "rn"}, optest.BidSchema)
	if err != nil {
		b.Fatal(err)
	}
	benchOverBids(b, f(0), "topn_rows_per_sec:rows/s")
}
