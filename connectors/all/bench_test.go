package all_test

import (
	"math"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/clinksql/clinksql/connectors/connectortest"
	"github.com/clinksql/clinksql/connectors/datagen"
	"github.com/clinksql/clinksql/exec"
)

// bidSchema is Nexmark's bid without its extra column: the shape the sink benchmark targets.
var bidSchema = arrow.NewSchema([]arrow.Field{
	{Name: "auction", Type: arrow.PrimitiveTypes.Int64},
	{Name: "bidder", Type: arrow.PrimitiveTypes.Int64},
	{Name: "price", Type: arrow.PrimitiveTypes.Int64},
	{Name: "channel", Type: arrow.BinaryTypes.String},
	{Name: "url", Type: arrow.BinaryTypes.String},
	{Name: "date_time", Type: &arrow.TimestampType{Unit: arrow.Millisecond}},
}, nil)

const ts2026ms = 20454 * 86_400_000 // 2026-01-01 in milliseconds

func bidGenerator(rows int64, batch int) exec.Source {
	return datagen.New(datagen.Config{
		Schema: bidSchema,
		Fields: []datagen.Field{
			{Kind: datagen.Sequence, Start: 1000, End: math.MaxInt64},
			{Kind: datagen.Random, Min: 1, Max: 100_000},
			{Kind: datagen.Random, Min: 1, Max: 10_000_000},
			{Kind: datagen.Random, Length: 8},
			{Kind: datagen.Random, Length: 40},
			{Kind: datagen.Sequence, Start: ts2026ms, End: math.MaxInt64, Step: 1},
		},
		Seed: 1, Rows: rows, BatchRows: batch,
	})
}

// BenchmarkGenerator measures the generator producing the bid shape in 8192-row batches.
func BenchmarkGenerator(b *testing.B) {
	connectortest.BenchSource(b, bidGenerator(0, 8192), "generator_rows_per_sec:rows/s")
}
