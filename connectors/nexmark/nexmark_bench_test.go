package nexmark

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/clinksql/clinksql/connectors/connectortest"
)

// BenchmarkNexmarkBid measures an unbounded Nexmark bid source producing 8192-row batches: all seven columns, and
// only the three most queries read. The metrics count bids (rows) per second of one core.
func BenchmarkNexmarkBid(b *testing.B) {
	for _, bc := range []struct {
		name, metric string
		schema       *arrow.Schema
	}{
		{"all", "nexmark_source_bid_rows_per_sec", nexBidSchema},
		{"auction_price_date_time", "nexmark_source_bid_3cols_rows_per_sec",
			nexSchema("auction", nexBigint, "price", nexBigint, "date_time", nexTS)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			benchNexmark(b, Config{Table: "bid", Schema: bc.schema}, bc.metric+":rows/s")
		})
	}
}

// BenchmarkNexmarkOther measures the person and auction sources with all their columns.
func BenchmarkNexmarkOther(b *testing.B) {
	b.Run("person", func(b *testing.B) {
		benchNexmark(b, Config{Table: "person", Schema: nexPersonSchema}, "nexmark_source_person_rows_per_sec:rows/s")
	})
	b.Run("auction", func(b *testing.B) {
		benchNexmark(b, Config{Table: "auction", Schema: nexAuctionSchema}, "nexmark_source_auction_rows_per_sec:rows/s")
	})
}

func benchNexmark(b *testing.B, cfg Config, metric string) {
	rows := connectortest.BenchSource(b, New(cfg)(0), metric)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(rows), "ns/row")
}
