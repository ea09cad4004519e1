package engine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clinksql/clinksql/sql/parser"
	"github.com/clinksql/clinksql/sql/planner"
	"github.com/clinksql/clinksql/sqlerr"
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
	if e := sqlerr.As(err); err == nil || e.Code != sqlerr.QueryCanceled || e.Msg != "canceling statement due to user request" {
		t.Fatalf("cancelled: %v", err)
	}
	released("a cancelled SELECT")

	mustExec(t, s, "SET statement_timeout = 200")
	_, err = s.Execute(context.Background(), never)
	if e := sqlerr.As(err); err == nil || e.Code != sqlerr.QueryCanceled || e.Msg != "canceling statement due to statement timeout" {
		t.Fatalf("timed out: %v", err)
	}
	released("a SELECT past statement_timeout")
}

// rowCollector is a RowWriter that keeps what it was given; first (if set) runs once, at the first rows.
type rowCollector struct {
	cols    []Column
	batches [][][]*string
	first   func()
}

func (w *rowCollector) Columns(cols []Column) error { w.cols = cols; return nil }
func (w *rowCollector) Rows(rows [][]*string) error {
	w.batches = append(w.batches, rows)
	if w.first != nil {
		w.first()
		w.first = nil
	}
	return nil
}

func (w *rowCollector) lines() []string {
	var out []string
	for _, b := range w.batches {
		out = append(out, resultLines(&Result{Rows: b})...)
	}
	return out
}

// pins: with a RowWriter an ad-hoc SELECT hands its rows over batch by batch while its dataflow runs (it used to
// build the whole result first): a SELECT that never ends shows its first rows; OFFSET and LIMIT apply to the
// stream; an aggregate over no rows still gives its one row; ORDER BY is gathered and returned whole.
func TestSelectStreamsRows(t *testing.T) {
	_, s := testEngine(t, t.TempDir())
	mustExec(t, s, `CREATE STREAM endless (id BIGINT) WITH (connector = 'datagen', 'fields.id.kind' = 'sequence')`)
	mustExec(t, s, `CREATE STREAM tens (id BIGINT) WITH (connector = 'datagen', 'fields.id.kind' = 'sequence',
		'number-of-rows' = '10')`)

	ctx, cancel := context.WithCancel(context.Background())
	w := &rowCollector{first: cancel} // the client has seen rows: it cancels
	var results []*Result
	err := s.Run(ctx, "SELECT id FROM endless LIMIT 1000000000000", w, func(r *Result) { results = append(results, r) })
	if sqlerr.Code(err) != sqlerr.QueryCanceled || len(w.batches) == 0 || len(results) != 0 {
		t.Fatalf("never-ending SELECT: %v, %d batches, results %v", err, len(w.batches), results)
	}
	if len(w.cols) != 1 || w.cols[0].Name != "id" || *w.batches[0][0][0] != "0" {
		t.Fatalf("columns %v, first row %v", w.cols, w.batches[0][0])
	}

	for _, c := range []struct {
		sql      string
		want     []string
		streamed bool
	}{
		{"SELECT id FROM endless LIMIT 4 OFFSET 3", []string{"3", "4", "5", "6"}, true},
		{"SELECT id * 10 FROM tens WHERE id >= 8", []string{"80", "90"}, true},
		{"SELECT count(*), sum(id) FROM tens WHERE id < 0", []string{"0|NULL"}, true},
		{"SELECT id FROM tens ORDER BY id DESC LIMIT 2", []string{"9", "8"}, false},
	} {
		w := &rowCollector{}
		var res *Result
		if err := s.Run(context.Background(), c.sql, w, func(r *Result) { res = r }); err != nil {
			t.Fatalf("%s: %v", c.sql, err)
		}
		got := w.lines()
		if !c.streamed {
			got = resultLines(res)
		}
		if res.Streamed != c.streamed || c.streamed && len(w.cols) != len(res.Columns) {
			t.Fatalf("%s: streamed %v, want %v", c.sql, res.Streamed, c.streamed)
		}
		equalLines(t, c.sql, got, c.want)
		if want := fmt.Sprintf("SELECT %d", len(c.want)); res.Tag != want {
			t.Errorf("%s: tag %q, want %q", c.sql, res.Tag, want)
		}
	}
}

// pins: a SELECT that must keep its rows until its end (ORDER BY, an updating result) fails with 53200 once they
// outgrow max_result_memory, instead of growing without bound.
func TestResultMemoryLimit(t *testing.T) {
	_, s := testEngine(t, t.TempDir())
	mustExec(t, s, `CREATE STREAM many (id BIGINT) WITH (connector = 'datagen', 'fields.id.kind' = 'sequence',
		'number-of-rows' = '100000')`)
	mustExec(t, s, "SET max_result_memory = '64kB'")
	_, err := s.Execute(context.Background(), "SELECT id FROM many ORDER BY id DESC")
	if sqlerr.Code(err) != sqlerr.OutOfMemory {
		t.Fatalf("ORDER BY over 100000 rows in 64kB: %v", err)
	}
	equalLines(t, "under the limit", rows(t, s, "SELECT id FROM many WHERE id < 3 ORDER BY id DESC"), []string{"2", "1", "0"})
	// ORDER BY ... LIMIT keeps only the rows that can still be in the result.
	equalLines(t, "ORDER BY LIMIT", rows(t, s, "SELECT id FROM many ORDER BY id % 1000 DESC, id LIMIT 3 OFFSET 1"),
		[]string{"1999", "2999", "3999"})
	mustExec(t, s, "RESET max_result_memory")
	if got := rows(t, s, "SELECT id FROM many ORDER BY id DESC"); len(got) != 100000 || got[0] != "99999" {
		t.Fatalf("under the default limit: %d rows, first %v", len(got), got[:1])
	}
}

// peakAllocator records the most Arrow memory in use at once.
type peakAllocator struct {
	*memory.CheckedAllocator
	peak int
}

func (a *peakAllocator) note() { a.peak = max(a.peak, a.CurrentAlloc()) }
func (a *peakAllocator) Allocate(n int) []byte {
	b := a.CheckedAllocator.Allocate(n)
	a.note()
	return b
}
func (a *peakAllocator) Reallocate(n int, b []byte) []byte {
	b = a.CheckedAllocator.Reallocate(n, b)
	a.note()
	return b
}

// pins: INSERT ... VALUES becomes batches of planner.ValuesBatchRows rows, bound and evaluated one at a time (it
// used to evaluate every value into an array of its own and concatenate them all, several times the data's
// size at once), appended whole or not at all; the rows and their order are exact.
func TestInsertValuesInBatches(t *testing.T) {
	mem := &peakAllocator{CheckedAllocator: memory.NewCheckedAllocator(memory.NewGoAllocator())}
	e, err := Open(Config{DataDir: t.TempDir(), Alloc: mem})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		closeEngine(t, e)
		mem.AssertSize(t, 0)
	})
	s := e.NewSession()
	mustExec(t, s, "CREATE STREAM t (id BIGINT, v DOUBLE PRECISION, s VARCHAR)")
	const n = 40_000
	values := func(last string) string {
		var sb strings.Builder
		sb.WriteString("INSERT INTO t VALUES ")
		for i := range n {
			fmt.Fprintf(&sb, "(%d, %d.5, 'r%d'), ", i, i, i)
		}
		return sb.String() + last
	}
	// A bad value in the last batch: nothing is appended.
	_, err = s.Execute(context.Background(), values("('x', 0, '')"))
	if sqlerr.Code(err) != sqlerr.InvalidTextRep {
		t.Fatalf("bad last row: %v", err)
	}
	mem.peak = 0
	res, err := s.Execute(context.Background(), values(fmt.Sprintf("(%d, 0, 'last')", n)))
	if err != nil || res[0].Tag != fmt.Sprintf("INSERT 0 %d", n+1) {
		t.Fatalf("insert: %v %v", res, err)
	}
	// The batches take about 1.2 MB and one batch's values, an array each, a few hundred kB more (1.5 MB in all);
	// the values of all rows in arrays of their own took 6.3 MB.
	if limit := 3 << 20; mem.peak > limit {
		t.Errorf("INSERT of %d rows peaked at %d bytes of Arrow memory, want at most %d", n+1, mem.peak, limit)
	}
	equalLines(t, "rows", rows(t, s, "SELECT count(*), sum(id), min(s), max(v) FROM t"),
		[]string{fmt.Sprintf("%d|%d|last|%d.5", n+1, n*(n-1)/2+n, n-1)})
	equalLines(t, "order", rows(t, s, "SELECT id, s FROM t LIMIT 2 OFFSET 4095"), []string{"4095|r4095", "4096|r4096"})
}

// pins: a statement longer than max_statement_size is refused before it is parsed, with 54000, by Execute and
// Prepare alike; shorter ones run.
func TestMaxStatementSize(t *testing.T) {
	_, s := testEngine(t, t.TempDir())
	mustExec(t, s, "SET max_statement_size = '1kB'")
	if v := s.Var("max_statement_size"); v != "1kB" {
		t.Fatalf("SHOW max_statement_size = %q", v)
	}
	long := "SELECT '" + strings.Repeat("x", 1024) + "'"
	_, err := s.Execute(context.Background(), long)
	if e := sqlerr.As(err); err == nil || e.Code != sqlerr.ProgramLimitExceeded || !strings.Contains(e.Msg, "max_statement_size (1kB)") {
		t.Fatalf("Execute: %v", err)
	}
	if _, err := s.Prepare(context.Background(), long, nil); sqlerr.Code(err) != sqlerr.ProgramLimitExceeded {
		t.Fatalf("Prepare: %v", err)
	}
	equalLines(t, "short", rows(t, s, "SELECT length('"+strings.Repeat("x", 900)+"')"), []string{"900"})
	for _, bad := range []string{"'1'", "'2 parsecs'", "'-1MB'", "'2TB'", "'abc'"} {
		if _, err := s.Execute(context.Background(), "SET max_statement_size = "+bad); sqlerr.Code(err) != sqlerr.InvalidParameter {
			t.Errorf("SET max_statement_size = %s: %v", bad, err)
		}
	}
	mustExec(t, s, "RESET max_statement_size")
	if v := s.Var("max_statement_size"); v != "4MB" {
		t.Fatalf("default max_statement_size = %q", v)
	}
}

// pins: statement_timeout ends an INSERT ... VALUES between its batches with 57014, and nothing is appended.
func TestInsertValuesTimeout(t *testing.T) {
	_, s := testEngine(t, t.TempDir())
	mustExec(t, s, "CREATE STREAM t (id BIGINT)")
	var sb strings.Builder
	sb.WriteString("INSERT INTO t VALUES (0)")
	for i := 1; i < 100_000; i++ { // 25 batches: binding them takes far longer than the timeout
		fmt.Fprintf(&sb, ", (%d)", i)
	}
	mustExec(t, s, "SET statement_timeout = '1ms'")
	_, err := s.Execute(context.Background(), sb.String())
	if e := sqlerr.As(err); err == nil || e.Code != sqlerr.QueryCanceled || e.Msg != "canceling statement due to statement timeout" {
		t.Fatalf("INSERT past statement_timeout: %v", err)
	}
	mustExec(t, s, "SET statement_timeout = 0")
	equalLines(t, "nothing appended", rows(t, s, "SELECT count(*) FROM t"), []string{"0"})
}

// pins: statement_timeout ends a FLUSH that waits for a job longer than that with 57014 (FLUSH used to wait
// however long its jobs took); without the timeout the same FLUSH completes.
func TestFlushTimeout(t *testing.T) {
	_, s := testEngine(t, t.TempDir())
	mustExec(t, s, "CREATE STREAM t (id BIGINT)")
	var sb strings.Builder
	sb.WriteString("INSERT INTO t VALUES (0)")
	for i := 1; i < 50_000; i++ {
		fmt.Fprintf(&sb, ", (%d)", i)
	}
	mustExec(t, s, sb.String())
	// The job deploys, reads 50000 rows and checkpoints: far longer than a millisecond.
	mustExec(t, s, "CREATE MATERIALIZED VIEW c AS SELECT id % 7 AS k, count(*) AS n FROM t GROUP BY id % 7")
	mustExec(t, s, "SET statement_timeout = '1ms'")
	_, err := s.Execute(context.Background(), "FLUSH")
	if e := sqlerr.As(err); err == nil || e.Code != sqlerr.QueryCanceled || e.Msg != "canceling statement due to statement timeout" {
		t.Fatalf("FLUSH past statement_timeout: %v", err)
	}
	mustExec(t, s, "SET statement_timeout = 0")
	mustExec(t, s, "FLUSH")
	equalLines(t, "view", rows(t, s, "SELECT sum(n) FROM c"), []string{"50000"})
}

// pins (issue 11, item 4): an INSERT ... VALUES larger than largeStatement runs piece by piece
// (insertInPieces), with exactly the rows, the errors (a bad value, rows of another width in a later piece), their
// positions and the all-or-nothing append that running the statement whole gives (ExecuteStmt of the parsed
// statement is that path).
func TestLargeInsertValuesInPieces(t *testing.T) {
	_, s := testEngine(t, t.TempDir())
	ctx := context.Background()
	mustExec(t, s, `CREATE STREAM pieces (k BIGINT, s VARCHAR, d DOUBLE PRECISION)`)
	mustExec(t, s, `CREATE STREAM whole (k BIGINT, s VARCHAR, d DOUBLE PRECISION)`)
	// bad: the row whose k is 'x'; short: the first row of two values only (-1: none).
	insertWith := func(target string, bad, short int) string {
		var b strings.Builder
		fmt.Fprintf(&b, "INSERT INTO %s VALUES ", target)
		for i := 0; b.Len() <= largeStatement; i++ {
			if i > 0 {
				b.WriteString(",\n")
			}
			k := fmt.Sprint(i)
			if i == bad {
				k = "'x'"
			}
			if short >= 0 && i >= short {
				fmt.Fprintf(&b, "(%s, 'row (%d)')", k, i%97)
				continue
			}
			fmt.Fprintf(&b, "(%s, 'row (%d), ''quoted''', %d.5e-3)", k, i%97, -i)
		}
		sql := b.String() + ";"
		if _, pieces, ok := parser.InsertValuesPieces(sql, planner.ValuesBatchRows); !ok || len(pieces) < 4 {
			t.Fatalf("the statement is not run in pieces (%v, %d pieces)", ok, len(pieces))
		}
		return sql
	}
	insert := func(target string, bad int) string { return insertWith(target, bad, -1) }
	whole := func(sql string) error {
		stmts, err := parser.Parse(sql)
		if err != nil {
			return err
		}
		_, err = s.ExecuteStmt(ctx, stmts[0])
		return err
	}
	// A bad value in a late piece: the same error at the same place, and nothing appended.
	const bad = 3*planner.ValuesBatchRows + 17
	perr := s.Run(ctx, insert("pieces", bad), nil, func(*Result) {})
	werr := whole(insert("whole", bad))
	pe, we := sqlerr.As(perr), sqlerr.As(werr)
	if perr == nil || pe.Code != we.Code || pe.Pos != we.Pos-len("whole")+len("pieces") || pe.Msg != we.Msg {
		t.Fatalf("in pieces: %#v\nwhole: %#v", pe, we)
	}
	equalLines(t, "after the error", rows(t, s, `SELECT count(*) FROM pieces`), []string{"0"})
	// Rows of another width in a later piece: refused, as one parse refuses them.
	const short = 2 * planner.ValuesBatchRows
	perr = s.Run(ctx, insertWith("pieces", -1, short), nil, func(*Result) {})
	werr = whole(insertWith("whole", -1, short))
	pe, we = sqlerr.As(perr), sqlerr.As(werr)
	if perr == nil || pe.Code != we.Code || pe.Pos != we.Pos-len("whole")+len("pieces") || pe.Msg != we.Msg {
		t.Fatalf("rows of another width in pieces: %#v\nwhole: %#v", pe, we)
	}
	equalLines(t, "after rows of another width", rows(t, s, `SELECT count(*) FROM pieces`), []string{"0"})
	// The rows.
	if err := s.Run(ctx, insert("pieces", -1), nil, func(*Result) {}); err != nil {
		t.Fatal(err)
	}
	if err := whole(insert("whole", -1)); err != nil {
		t.Fatal(err)
	}
	q := `SELECT count(*), sum(k), count(DISTINCT s), sum(d), min(s) FROM `
	got, want := rows(t, s, q+`pieces`), rows(t, s, q+`whole`)
	equalLines(t, "rows", got, want)
	if want[0] == "0|||||" || strings.HasPrefix(want[0], "0|") {
		t.Fatalf("nothing inserted: %v", want)
	}
}

// pins (issue 11, item 4): a large INSERT ... VALUES takes a small multiple of its text in memory, not the some 60
// times its whole token list and syntax tree took: while it runs, the heap above what it was before the statement
// stays under 3 times the text plus 16 MB for the work of one piece and the runtime's own (sampled every
// millisecond, with the collector run often). Parsed whole, a 2 MB INSERT took 47 times its text here.
func TestLargeInsertValuesMemory(t *testing.T) {
	_, s := testEngine(t, t.TempDir())
	ctx := context.Background()
	mustExec(t, s, `CREATE STREAM big (k BIGINT, s VARCHAR, d DOUBLE PRECISION)`)
	var b strings.Builder
	b.WriteString("INSERT INTO big VALUES ")
	for i := 0; b.Len() < 2<<20; i++ {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "(%d, 'r%d', %d.25)", i, i%1000, i)
	}
	sql := b.String()
	// Collect often, so the heap's peak is what the statement keeps live, not garbage waiting for a collection.
	defer debug.SetGCPercent(debug.SetGCPercent(5))
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base, peak := ms.HeapAlloc, ms.HeapAlloc
	stop, sampled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapAlloc)
		}
	}()
	err := s.Run(ctx, sql, nil, func(*Result) {})
	close(stop)
	<-sampled
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d bytes of text: heap %d MB above its start at the peak (%.1f times the text)", len(sql),
		(peak-base)>>20, float64(peak-base)/float64(len(sql)))
	if peak-base > 3*uint64(len(sql))+16<<20 {
		t.Fatalf("the INSERT took %.1f times its text", float64(peak-base)/float64(len(sql)))
	}
}
