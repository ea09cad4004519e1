package pgwire

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/clinksql/clinksql/internal/promtest"
	"github.com/prometheus/client_golang/prometheus"
)

// gathered is the value of the series of name with the label k=v ("" for none), as reg exposes it; -1 when absent.
func gathered(t *testing.T, reg prometheus.Gatherer, name, label string) float64 {
	t.Helper()
	want := map[string]string{}
	if k, v, ok := strings.Cut(label, "="); ok {
		want[k] = v
	}
	if v, ok := promtest.Value(t, reg, name, want); ok {
		return v
	}
	return -1
}

// Pins: sessions or statements not counted, or counted under the wrong outcome, over the simple and the extended
// protocol; the open-sessions gauge not falling when a client leaves.
func TestMetricsCountSessionsAndStatements(t *testing.T) {
	reg := prometheus.NewRegistry()
	ts := startServer(t, Config{Registerer: reg})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a, b := ts.connect(t), ts.connect(t)
	open := func() float64 { return gathered(t, reg, "clinksql_pgwire_connections_open", "") }
	if n, o := gathered(t, reg, "clinksql_pgwire_connections_total", ""), open(); n != 2 || o != 2 {
		t.Fatalf("two sessions: %v started, %v open", n, o)
	}
	// Simple protocol: two statements in one query, then a failing one.
	if _, err := a.Exec(ctx, "SELECT 1; SELECT 2"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Exec(ctx, "SELECT nope"); err == nil {
		t.Fatal("SELECT nope ran")
	}
	// Extended protocol (pgx prepares a statement with parameters): one that runs, one that fails at execution.
	var n int
	if err := b.QueryRow(ctx, "SELECT CAST($1 AS INT) + 1", "41").Scan(&n); err != nil || n != 42 {
		t.Fatalf("extended: %d, %v", n, err)
	}
	if _, err := b.Exec(ctx, "SELECT 1 / CAST($1 AS INT)", "0"); err == nil {
		t.Fatal("division by zero ran")
	}
	ok := gathered(t, reg, "clinksql_pgwire_statements_total", "outcome=ok")
	failed := gathered(t, reg, "clinksql_pgwire_statements_total", "outcome=error")
	if ok != 3 || failed != 2 {
		t.Fatalf("statements: %v ok, %v error; want 3 and 2", ok, failed)
	}
	if err := a.Close(ctx); err != nil {
		t.Fatal(err)
	}
	// The server sees the hang-up on its own goroutine: wait for the gauge to follow.
	for deadline := time.Now().Add(30 * time.Second); open() != 1; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("after a client left: %v sessions open, want 1", open())
		}
	}
}
