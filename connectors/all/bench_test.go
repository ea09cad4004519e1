package all_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clinksql/clinksql/connectors/connectortest"
	"github.com/clinksql/clinksql/connectors/datagen"
	"github.com/clinksql/clinksql/connectors/file"
	pqconn "github.com/clinksql/clinksql/connectors/parquet"
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

// benchBatches pre-generates the batches the sink benchmarks write, so only the sink is measured.
func benchBatches(b *testing.B, mem memory.Allocator, n, rows int) []exec.Batch {
	src := bidGenerator(int64(n*rows), rows)
	if err := src.Open(connectortest.NewTask(mem, connectortest.TaskOpts{})); err != nil {
		b.Fatal(err)
	}
	var out []exec.Batch
	for len(out) < n {
		res, err := src.Produce(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		out = append(out, res.Batch)
	}
	src.Close()
	return out
}

// benchSink writes 8192-row batches of six columns into a 2PC sink, with a PreCommit and Commit (a complete
// file, staged and renamed) every 1M rows, and reports rows per second including the commits.
func benchSink(b *testing.B, newSink func(dir string) exec.Sink, metric string) {
	b.Setenv("CLINK_STATE_FSYNC", "0")
	const batchRows, commitRows = 8192, 1 << 20
	mem := memory.NewGoAllocator()
	batches := benchBatches(b, mem, 32, batchRows)
	defer func() {
		for _, bt := range batches {
			bt.Release()
		}
	}()
	s := newSink(b.TempDir())
	if err := s.Open(connectortest.NewTask(mem, connectortest.TaskOpts{})); err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	commit := func(id uint64) {
		if err := s.PreCommit(id); err != nil {
			b.Fatal(err)
		}
		if err := s.Commit(id); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	id, rows := uint64(0), 0
	for i := 0; b.Loop(); i++ {
		bt := batches[i%len(batches)]
		bt.Rec.Retain()
		if err := s.Write(bt); err != nil {
			b.Fatal(err)
		}
		rows += batchRows
		if rows%commitRows == 0 {
			id++
			commit(id)
		}
	}
	commit(id + 1)
	b.ReportMetric(float64(rows)/time.Since(start).Seconds(), metric)
	b.StopTimer()
}

// BenchmarkParquetSink2PC measures the Parquet sink end to end.
func BenchmarkParquetSink2PC(b *testing.B) {
	benchSink(b, func(dir string) exec.Sink {
		return pqconn.NewSink(pqconn.SinkConfig{Path: dir, Schema: bidSchema})
	}, "parquet_sink_2pc_rows_per_sec:rows/s")
}

// BenchmarkFileSinkCSV is the same for CSV.
func BenchmarkFileSinkCSV(b *testing.B) {
	benchSink(b, func(dir string) exec.Sink {
		return file.NewSink(file.SinkConfig{Path: dir, Format: "csv", Schema: bidSchema})
	}, "csv_sink_2pc_rows_per_sec:rows/s")
}
