package postgrescdc

import (
	"context"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/clinksql/clinksql/exec"
)

// BenchmarkPostgresCDC measures the source alone streaming INSERTs committed after its slot exists: 500k rows
// (bigint, int, double, text, timestamptz, numeric(12,2)) written in 10 transactions, then decoded from pgoutput
// into Arrow batches. BENCH pg_cdc_rows_per_sec (target >= 200k rows/s per core). The server's own logical
// decoding runs concurrently on the same machine.
func BenchmarkPostgresCDC(b *testing.B) {
	const rows = 500_000
	src, c := benchSource(b, "s_bench")
	var elapsed time.Duration
	next := 0
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		for range 10 {
			pgExec(b, c, `INSERT INTO t SELECT g, g % 100, g * 0.5, 'row number ' || g, '2026-01-01 00:00:00+00'::timestamptz + g * interval '1 ms', g * 1.25
				FROM generate_series($1::bigint, $2::bigint) g`, next+1, next+rows/10)
			next += rows / 10
		}
		b.StartTimer()
		start := time.Now()
		got := 0
		for got < rows {
			res, err := src.Produce(context.Background())
			if err != nil {
				b.Fatal(err)
			}
			if res.Status == exec.Produced {
				got += res.Batch.Rows()
				res.Batch.Release()
			}
		}
		elapsed += time.Since(start)
		if got != rows {
			b.Fatalf("%d rows, want %d", got, rows)
		}
	}
	b.ReportMetric(float64(rows*b.N)/elapsed.Seconds(), "pg_cdc_rows_per_sec:rows/s")
}

// BenchmarkPostgresCDCDecode measures the source's own work per row, without the server: 200k pgoutput messages
// captured from a real slot (the columns of BenchmarkPostgresCDC) are applied again and again (handleWAL into
// Arrow builders, batches of 8192). BENCH pg_cdc_decode_rows_per_sec is rows per second of one core.
func BenchmarkPostgresCDCDecode(b *testing.B) {
	const rows = 200_000
	src, c := benchSource(b, "s_decode")
	pgExec(b, c, `INSERT INTO t SELECT g, g % 100, g * 0.5, 'row number ' || g, '2026-01-01 00:00:00+00'::timestamptz + g * interval '1 ms', g * 1.25
		FROM generate_series(1, $1::bigint) g`, rows)
	var msgs [][]byte
	inserts := 0
	for inserts < rows {
		if err := src.repl.Conn().SetReadDeadline(time.Now().Add(time.Minute)); err != nil {
			b.Fatal(err)
		}
		msg, err := src.repl.ReceiveMessage(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		if cd, ok := msg.(*pgproto3.CopyData); ok && len(cd.Data) > 25 && cd.Data[0] == 'w' {
			wal := append([]byte(nil), cd.Data[25:]...)
			msgs = append(msgs, wal)
			if wal[0] == 'I' {
				inserts++
			}
		}
	}
	// The captured Begin precedes every Insert; replaying it again starts a transaction each round.
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		for _, m := range msgs {
			if err := src.handleWAL(m); err != nil {
				b.Fatal(err)
			}
			if src.rows >= maxBatchRows {
				src.flush().Release()
			}
		}
		if src.rows > 0 {
			src.flush().Release()
		}
	}
	b.ReportMetric(float64(rows*b.N)/time.Since(start).Seconds(), "pg_cdc_decode_rows_per_sec:rows/s")
}

// benchSource starts a server with the benchmarks' table t (REPLICA IDENTITY FULL) and opens a latest-offset
// source on it over slot; the source is closed, and checked for leaks, when b ends.
func benchSource(b *testing.B, slot string) (*Source, *pgx.Conn) {
	pg, c := startPG(b)
	pgExec(b, c, `CREATE TABLE t (id BIGINT PRIMARY KEY, k INT, v DOUBLE PRECISION, s TEXT, ts TIMESTAMPTZ, n NUMERIC(12,2))`)
	pgExec(b, c, `ALTER TABLE t REPLICA IDENTITY FULL`)
	spec := specOf("id BIGINT", "k INT", "v DOUBLE", "s VARCHAR", "ts TIMESTAMP", "n DECIMAL(12,2)")
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	tc := &exec.TaskContext{Subtask: 0, Parallelism: 1, Alloc: mem, Errors: &exec.Counter{}, State: newMemState(b)}
	src := NewSource(testConfig(b, pg, "t", slot, StartupLatest), spec)(0).(*Source)
	if err := src.Open(tc); err != nil {
		src.Close()
		b.Fatal(err)
	}
	b.Cleanup(func() {
		src.Close()
		mem.AssertSize(b, 0)
	})
	return src, c
}
