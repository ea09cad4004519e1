package postgrescdc_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clinksql/clinksql/engine"
	"github.com/clinksql/clinksql/tests/pgtest"
)

// BenchmarkPostgresCDCViewLatency measures commit-to-view latency through the engine: an UPDATE committed in
// Postgres until a materialized GROUP BY over the CDC stream shows it (polled every millisecond), with
// checkpoint.interval = 100ms (the view publishes at completed checkpoints). BENCH pg_cdc_view_latency_p50 and
// _p99 in ms (the issue wants < 1 s).
func BenchmarkPostgresCDCViewLatency(b *testing.B) {
	pg := pgtest.StartT(b, pgtest.Options{Logical: true})
	c := pg.ConnectT(b)
	pgExec(b, c, `CREATE TABLE src (id INT PRIMARY KEY, k INT, v BIGINT)`)
	pgExec(b, c, `INSERT INTO src SELECT g, g % 10, 0 FROM generate_series(1, 1000) g`)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	e, err := engine.Open(engine.Config{DataDir: b.TempDir(), Alloc: mem})
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := e.Close(ctx); err != nil {
			b.Error(err)
		}
		mem.AssertSize(b, 0)
	}()
	s := e.NewSession()
	run(b, s, `SET checkpoint.interval = '100ms'`)
	run(b, s, streamDDL(pg, "slot_latency"))
	run(b, s, `CREATE MATERIALIZED VIEW mv AS SELECT k, COUNT(*) AS n, SUM(v) AS sv FROM s GROUP BY k`)
	sum := 0
	var lat []time.Duration
	b.ResetTimer()
	for i := range max(b.N, 20) {
		sum += i + 1
		pgExec(b, c, `UPDATE src SET v = v + $1 WHERE id = 10`, i+1)
		committed := time.Now()
		want := fmt.Sprintf("0|100|%d", sum)
		for {
			rows := lines(run(b, s, `SELECT k, n, sv FROM mv WHERE k = 0`))
			if len(rows) == 1 && rows[0] == want {
				break
			}
			if time.Since(committed) > time.Minute {
				b.Fatalf("view %q after a minute, want %q", rows, want)
			}
			time.Sleep(time.Millisecond)
		}
		lat = append(lat, time.Since(committed))
	}
	slices.Sort(lat)
	ms := func(q float64) float64 { return float64(lat[int(q*float64(len(lat)-1))].Microseconds()) / 1000 }
	b.ReportMetric(ms(0.5), "pg_cdc_view_latency_p50:ms")
	b.ReportMetric(ms(0.99), "pg_cdc_view_latency_p99:ms")
}
