package pgwire

import (
	"context"
	"testing"
	"time"
)

// BenchmarkSelectThroughPgwire reads a large SELECT (1M rows of three columns from a bounded datagen stream)
// through pgx over a real connection: the time to its first row (it streams, so this is the time to plan, deploy
// and produce one batch, not to build the result) and rows per second to the end. `make bench` prints the
// figures as BENCH lines.
func BenchmarkSelectThroughPgwire(b *testing.B) {
	const n = 1_000_000
	ts := startServer(b, Config{})
	c := ts.connect(b)
	exec(b, c, `CREATE STREAM big (id BIGINT, v DOUBLE PRECISION, s VARCHAR) WITH (connector = 'datagen',
		'fields.id.kind' = 'sequence', 'number-of-rows' = '1000000', 'fields.s.length' = '16')`)
	var first, total time.Duration
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		rows, err := c.Query(context.Background(), "SELECT id, v, s FROM big")
		if err != nil {
			b.Fatal(err)
		}
		got := 0
		for rows.Next() {
			if got == 0 {
				first += time.Since(start)
			}
			got++
		}
		if err := rows.Err(); err != nil || got != n {
			b.Fatalf("%d rows, %v", got, err)
		}
		total += time.Since(start)
	}
	b.ReportMetric(float64(first.Microseconds())/1000/float64(b.N), "select_first_row:ms")
	b.ReportMetric(float64(n*b.N)/total.Seconds(), "select_rows:rows/s")
}
