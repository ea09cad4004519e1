package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/tests/pgtest"
)

// BenchmarkPostgresSinkAppend writes rows of four columns (BIGINT, VARCHAR, TIMESTAMP, DOUBLE) through Write,
// PreCommit and Commit, a checkpoint every 64k rows, into a table on a local server (fsync off): the
// pg_sink_rows_per_sec figure of `make bench`.
func BenchmarkPostgresSinkAppend(b *testing.B) {
	pg := pgtest.StartT(b, pgtest.Options{MaxPreparedTransactions: 20})
	db := pg.ConnectT(b)
	if _, err := db.Exec(context.Background(), `CREATE TABLE t (id bigint, name text, at timestamp, amount double precision)`); err != nil {
		b.Fatal(err)
	}
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "at", Type: &arrow.TimestampType{Unit: arrow.Microsecond}, Nullable: true},
		{Name: "amount", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	}, nil)
	mem := memory.NewGoAllocator()
	const rows = 8192
	rb := array.NewRecordBuilder(mem, schema)
	defer rb.Release()
	t0 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro()
	for i := range rows {
		rb.Field(0).(*array.Int64Builder).Append(int64(i))
		rb.Field(1).(*array.StringBuilder).Append("customer-" + string(rune('a'+i%26)))
		rb.Field(2).(*array.TimestampBuilder).Append(arrow.Timestamp(t0 + int64(i)*1000))
		rb.Field(3).(*array.Float64Builder).Append(float64(i) * 0.25)
	}
	rec := rb.NewRecordBatch()
	defer rec.Release()
	cfg, err := ConfigFromOptions(schema, nil, map[string]string{"url": pg.DSN(), "table-name": "t"})
	if err != nil {
		b.Fatal(err)
	}
	s := NewSink(cfg).(*sink)
	if err := s.Open(&exec.TaskContext{Job: "bench", Operator: "sink", Parallelism: 1, Alloc: mem}); err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	b.ResetTimer()
	start := time.Now()
	id := uint64(0)
	for i := range b.N {
		rec.Retain()
		if err := s.Write(exec.Batch{Rec: rec}); err != nil {
			b.Fatal(err)
		}
		if i%8 == 7 || i == b.N-1 {
			id++
			if err := s.PreCommit(id); err != nil {
				b.Fatal(err)
			}
			if err := s.Commit(id); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.N*rows)/time.Since(start).Seconds(), "pg_sink_rows_per_sec:rows/s")
	b.StopTimer()
	var n int
	if err := db.QueryRow(context.Background(), `SELECT count(*) FROM t`).Scan(&n); err != nil || n != b.N*rows {
		b.Fatalf("the table has %d rows (%v), want %d", n, err, b.N*rows)
	}
}
