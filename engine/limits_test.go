package engine

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clinksql/clinksql/sql/sqlerr"
)

// pins: statement_timeout reads Postgres' units (a bare number is milliseconds), shows as Postgres shows it, and
// refuses what Postgres refuses with 22023.
func TestStatementTimeoutSetting(t *testing.T) {
	for _, c := range []struct{ in, shown string }{
		{"5000", "5s"}, {"'5s'", "5s"}, {"'5 s'", "5s"}, {"'1.5s'", "1500ms"}, {"'2min'", "2min"}, {"'90s'", "90s"},
		{"'120 s'", "2min"}, {"'1h'", "1h"}, {"'1d'", "1d"}, {"'1500us'", "2ms"}, {"0", "0"}, {"DEFAULT", "0"},
	} {
		s := (&Engine{}).NewSession()
		if _, err := s.Execute(context.Background(), "SET statement_timeout = "+c.in); err != nil {
			t.Fatalf("SET statement_timeout = %s: %v", c.in, err)
		}
		if got := s.Var("statement_timeout"); got != c.shown {
			t.Errorf("SET statement_timeout = %s shows %q, want %q", c.in, got, c.shown)
		}
	}
	for _, bad := range []string{"'abc'", "'5 parsecs'", "-1", "'3000000000'", "'s'"} {
		s := (&Engine{}).NewSession()
		_, err := s.Execute(context.Background(), "SET statement_timeout = "+bad)
		if sqlerr.Code(err) != sqlerr.InvalidParameter {
			t.Errorf("SET statement_timeout = %s: got %v, want 22023", bad, err)
		}
	}
}

// pins: an ad-hoc SELECT that runs past statement_timeout fails with 57014 and the timeout's message (it used to
// run on), and a SELECT that ends (at its LIMIT, at the end of its input), is cancelled or times out leaves no
// scratch directory, no goroutine and no Arrow memory behind.
func TestSelectTimeoutAndCleanup(t *testing.T) {
	dir := t.TempDir()
	e, s := testEngine(t, dir)
	mustExec(t, s, `CREATE STREAM endless (id BIGINT) WITH (connector = 'datagen', 'fields.id.kind' = 'sequence')`)
	mustExec(t, s, `CREATE STREAM tens (id BIGINT) WITH (connector = 'datagen', 'fields.id.kind' = 'sequence',
		'number-of-rows' = '10')`)
	mem := e.cfg.Alloc.(*memory.CheckedAllocator)
	baseline := runtime.NumGoroutine()
	released := func(what string) {
		t.Helper()
		if n, err := os.ReadDir(filepath.Join(dir, "tmp")); err != nil && !os.IsNotExist(err) || len(n) > 0 {
			t.Fatalf("%s: scratch directories left: %v %v", what, n, err)
		}
		if n := mem.CurrentAlloc(); n != 0 {
			t.Fatalf("%s: %d bytes of Arrow memory left", what, n)
		}
		// The dataflow's goroutines are joined before the statement returns; only the runtime's own may lag.
		for deadline := time.Now().Add(10 * time.Second); runtime.NumGoroutine() > baseline; {
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<20)
				t.Fatalf("%s: %d goroutines, %d before:\n%s", what, runtime.NumGoroutine(), baseline, buf[:runtime.Stack(buf, true)])
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	equalLines(t, "LIMIT", rows(t, s, "SELECT id FROM endless LIMIT 3"), []string{"0", "1", "2"})
	released("a SELECT ended by its LIMIT")
	equalLines(t, "bounded", rows(t, s, "SELECT count(*) FROM tens"), []string{"10"})
	released("a SELECT at the end of its input")

	const never = "SELECT id FROM endless WHERE id < 0 LIMIT 1"
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	_, err := s.Execute(ctx, never)
	cancel()
	if e := sqlerr.As(err); e.Code != sqlerr.QueryCanceled || e.Msg != "canceling statement due to user request" {
		t.Fatalf("cancelled: %v", err)
	}
	released("a cancelled SELECT")

	mustExec(t, s, "SET statement_timeout = 200")
	_, err = s.Execute(context.Background(), never)
	if e := sqlerr.As(err); e.Code != sqlerr.QueryCanceled || e.Msg != "canceling statement due to statement timeout" {
		t.Fatalf("timed out: %v", err)
	}
	released("a SELECT past statement_timeout")
}
