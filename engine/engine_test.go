package engine

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clinksql/clinksql/sqlerr"
)

// testEngine opens an engine on dir with a checked allocator; the cleanup closes it and checks for leaks.
func testEngine(t *testing.T, dir string) (*Engine, *Session) {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	e, err := Open(Config{DataDir: dir, Alloc: mem})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			closeEngine(t, e)
		}
		mem.AssertSize(t, 0)
	})
	return e, e.NewSession()
}

func closeEngine(t *testing.T, e *Engine) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := e.Close(ctx); err != nil {
		t.Fatalf("close: %v", err)
	}
}

// rows runs one query and returns its rows as "a|b" lines.
func rows(t *testing.T, s *Session, sql string) []string {
	t.Helper()
	res, err := s.Execute(context.Background(), sql)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return resultLines(res[len(res)-1])
}

func mustExec(t *testing.T, s *Session, sql string) {
	t.Helper()
	if _, err := s.Execute(context.Background(), sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func equalLines(t *testing.T, what string, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("%s:\n got %q\nwant %q", what, got, want)
	}
}

// pins: DESIGN.md's clicks example end to end: an internal stream fed by INSERT VALUES, a tumbling-window
// materialized view that shows a window once the watermark passed its end (after FLUSH), and that keeps exact
// results across a restart of the engine.
func TestClicksPerMinuteAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	e, s := testEngine(t, dir)
	mustExec(t, s, `CREATE STREAM clicks (user_id BIGINT, url VARCHAR, ts TIMESTAMP(3),
		WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)`)
	mustExec(t, s, `INSERT INTO clicks VALUES
		(1, 'a', TIMESTAMP '2026-01-01 00:00:01'),
		(1, 'b', TIMESTAMP '2026-01-01 00:00:30'),
		(2, 'c', TIMESTAMP '2026-01-01 00:00:59.5')`)
	equalLines(t, "SELECT *", rows(t, s, "SELECT user_id, url, ts FROM clicks"),
		[]string{"1|a|2026-01-01 00:00:01", "1|b|2026-01-01 00:00:30", "2|c|2026-01-01 00:00:59.5"})
	mustExec(t, s, `CREATE MATERIALIZED VIEW per_minute AS
		SELECT user_id, COUNT(*) AS n, window_start, window_end
		FROM TABLE(TUMBLE(TABLE clicks, DESCRIPTOR(ts), INTERVAL '1' MINUTE))
		GROUP BY user_id, window_start, window_end`)
	// The watermark is 00:00:58.5: the first minute has not ended.
	mustExec(t, s, "FLUSH")
	equalLines(t, "before the watermark passes", rows(t, s, "SELECT * FROM per_minute"), nil)
	// 00:01:02 moves the watermark to 00:01:01, past the first window's end.
	mustExec(t, s, `INSERT INTO clicks VALUES (3, 'd', TIMESTAMP '2026-01-01 00:01:02')`)
	mustExec(t, s, "FLUSH")
	want := []string{
		"1|2|2026-01-01 00:00:00|2026-01-01 00:01:00",
		"2|1|2026-01-01 00:00:00|2026-01-01 00:01:00",
	}
	equalLines(t, "first minute", rows(t, s, "SELECT * FROM per_minute ORDER BY user_id"), want)

	closeEngine(t, e)
	_, s = testEngine(t, dir)
	equalLines(t, "after restart", rows(t, s, "SELECT * FROM per_minute ORDER BY user_id"), want)
	// A row late for the first minute is dropped; a row at 00:02:05 closes the second minute.
	mustExec(t, s, `INSERT INTO clicks VALUES (9, 'late', TIMESTAMP '2026-01-01 00:00:10'), (3, 'e', TIMESTAMP '2026-01-01 00:02:05')`)
	mustExec(t, s, "FLUSH")
	want = append(want, "3|1|2026-01-01 00:01:00|2026-01-01 00:02:00")
	equalLines(t, "second minute", rows(t, s, "SELECT * FROM per_minute ORDER BY window_start, user_id"), want)
	jobs := rows(t, s, "SELECT 1") // the session works after restart
	equalLines(t, "select 1", jobs, []string{"1"})
}

// pins: statement errors carry their SQLSTATE and the position of the offending name.
func TestErrorsHaveCodeAndPosition(t *testing.T) {
	_, s := testEngine(t, t.TempDir())
	mustExec(t, s, `CREATE STREAM clicks (user_id BIGINT, ts TIMESTAMP)`)
	cases := []struct {
		sql, code string
		pos       int
	}{
		{"SELECT nope FROM clicks", sqlerr.UndefinedColumn, 7},
		{"SELECT user_id FROM nothing", sqlerr.UndefinedTable, 20},
		{"SELECT user_id FROM clicks WHERE user_id", sqlerr.DatatypeMismatch, 33},
		{"SELECT 1/0", sqlerr.DivisionByZero, sqlerr.NoPos},
	}
	for _, c := range cases {
		_, err := s.Execute(context.Background(), c.sql)
		e := sqlerr.As(err)
		if e == nil || e.Code != c.code || (c.pos != sqlerr.NoPos && e.Pos != c.pos) {
			t.Errorf("%s: got %+v, want code %s at %d", c.sql, e, c.code, c.pos)
		}
	}
}

// pins: FLUSH reflects every row inserted before it even when the jobs checkpoint unaligned (FLUSH's own
// checkpoint is aligned: an unaligned barrier overtakes rows and leaves them for the next checkpoint).
func TestFlushUnderUnalignedCheckpoints(t *testing.T) {
	_, s := testEngine(t, t.TempDir())
	mustExec(t, s, `SET checkpoint.mode = 'unaligned'`)
	mustExec(t, s, `SET checkpoint.interval = '0'`)
	mustExec(t, s, `SET parallelism = 2`)
	mustExec(t, s, `CREATE STREAM ev (k BIGINT, ts TIMESTAMP, WATERMARK FOR ts AS ts)`)
	mustExec(t, s, `CREATE MATERIALIZED VIEW per_sec AS SELECT k, COUNT(*) AS n, window_start
		FROM TABLE(TUMBLE(TABLE ev, DESCRIPTOR(ts), INTERVAL '1' SECOND)) GROUP BY k, window_start, window_end`)
	for i := 1; i <= 15; i++ {
		// Second i-1 gets two rows of keys i and i+1; the row at second i closes it.
		mustExec(t, s, fmt.Sprintf(`INSERT INTO ev VALUES (%d, TIMESTAMP '2026-01-01 00:00:%02d.1'), (%d, TIMESTAMP '2026-01-01 00:00:%02d.2')`, i, i-1, i+1, i-1))
		mustExec(t, s, fmt.Sprintf(`INSERT INTO ev VALUES (0, TIMESTAMP '2026-01-01 00:00:%02d')`, i))
		mustExec(t, s, "FLUSH")
		got := rows(t, s, "SELECT COUNT(*), SUM(n) FROM per_sec WHERE k > 0")
		// After round i: seconds 0..i-1 fired, each with two keyed rows (the closing rows have k = 0).
		if want := fmt.Sprintf("%d|%d", 2*i, 2*i); len(got) != 1 || got[0] != want {
			t.Fatalf("round %d: %q, want %s", i, got, want)
		}
	}
}

// pins: with errors.mode = 'fail' a bad value fails the job at once (a restart would meet the same row), and SHOW
// JOBS says where and why; with the default mode it becomes NULL and is counted.
func TestErrorsModeFailFailsTheJob(t *testing.T) {
	_, s := testEngine(t, t.TempDir())
	mustExec(t, s, `CREATE STREAM nums (a INT, b INT)`)
	mustExec(t, s, `INSERT INTO nums VALUES (6, 3), (1, 0)`)
	mustExec(t, s, `CREATE STREAM q (v INT)`)
	mustExec(t, s, `INSERT INTO q SELECT a / b FROM nums`) // default: NULL and counted
	mustExec(t, s, `SET errors.mode = 'fail'`)
	mustExec(t, s, `CREATE STREAM q2 (v INT)`)
	mustExec(t, s, `INSERT INTO q2 SELECT a / b FROM nums`)
	// Without restarts it fails within milliseconds; ten restarts with backoff would take over 20 s.
	deadline := time.Now().Add(5 * time.Second)
	for {
		jobs := rows(t, s, "SHOW JOBS")
		first, second := strings.Split(jobs[0], "|"), strings.Split(jobs[1], "|")
		if second[2] == "FAILED" {
			// id|query|state|bounded|last_checkpoint|rows_in|rows_out|late_rows|bad_values|suppressed_rows|error
			if !strings.Contains(second[10], "division by zero") || first[2] != "RUNNING" {
				t.Fatalf("SHOW JOBS: %q", jobs)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("job-2 did not fail: %q", jobs)
		}
		time.Sleep(10 * time.Millisecond)
	}
	flushFails(t, s, "job-2", sqlerr.DivisionByZero, "division by zero") // FLUSH cannot reach q2
	mustExec(t, s, "DROP JOB job-2")
	mustExec(t, s, "FLUSH")
	equalLines(t, "q", rows(t, s, "SELECT v FROM q"), []string{"2", "NULL"})
	if bad := strings.Split(rows(t, s, "SHOW JOBS")[0], "|")[8]; bad != "1" {
		t.Fatalf("bad_values of job-1 = %s, want 1", bad)
	}
}

// pins: a prepared statement's untyped $n take the type of where they are used (an INSERT's target column, the
// other side of a comparison, LIMIT), and their text values are read as those types at execution.
func TestPreparedParameters(t *testing.T) {
	_, s := testEngine(t, t.TempDir())
	mustExec(t, s, `CREATE STREAM s (a BIGINT, ts TIMESTAMP(3), note VARCHAR)`)
	ctx := context.Background()
	ins, err := s.Prepare(ctx, `INSERT INTO s VALUES ($1, $2, $3)`, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(ins.ParamOIDs); got != "[20 1114 1043]" || ins.Columns != nil {
		t.Fatalf("insert params %s, columns %v", got, ins.Columns)
	}
	str := func(v string) *string { return &v }
	for i, v := range [][]*string{{str("5"), str("2026-01-01 00:00:01"), str("x")}, {str("-2"), str("2026-01-01 00:00:02.5"), nil}} {
		res, err := s.ExecutePrepared(ctx, ins, v)
		if err != nil || res.Tag != "INSERT 0 1" {
			t.Fatalf("insert %d: %v %v", i, res, err)
		}
	}
	if _, err := s.ExecutePrepared(ctx, ins, []*string{str("x"), nil, nil}); sqlerr.Code(err) != sqlerr.InvalidTextRep {
		t.Fatalf("bad bigint text: %v", err)
	}
	sel, err := s.Prepare(ctx, `SELECT a, ts FROM s WHERE a > $1 AND note IS NULL LIMIT $2`, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(sel.ParamOIDs); got != "[20 20]" || len(sel.Columns) != 2 || sel.Columns[1].OID != 1114 {
		t.Fatalf("select params %s, columns %+v", got, sel.Columns)
	}
	res, err := s.ExecutePrepared(ctx, sel, []*string{str("-3"), str("10")})
	if err != nil || len(res.Rows) != 1 || *res.Rows[0][0] != "-2" || *res.Rows[0][1] != "2026-01-01 00:00:02.5" {
		t.Fatalf("select: %+v %v", res, err)
	}
	// A declared type wins over inference.
	typed, err := s.Prepare(ctx, `SELECT $1 AS v`, []uint32{23})
	if err != nil || fmt.Sprint(typed.ParamOIDs) != "[23]" || typed.Columns[0].OID != 23 {
		t.Fatalf("typed: %+v %v", typed, err)
	}
	if _, err := s.Prepare(ctx, `SELECT 1; SELECT 2`, nil); sqlerr.Code(err) != sqlerr.SyntaxError {
		t.Fatalf("two statements: %v", err)
	}
}

// pins: once WaitBounded returned (clinksql exec --wait), a finished bounded job is recorded as FINISHED, so the
// next open does not re-deploy it.
func TestFinishedJobIsNotRedeployed(t *testing.T) {
	dir := t.TempDir()
	for round := 0; round < 3; round++ {
		e, s := testEngine(t, dir)
		if round == 0 {
			mustExec(t, s, `CREATE STREAM g (id BIGINT) WITH (connector = 'datagen', 'number-of-rows' = '50',
				'fields.id.kind' = 'sequence', 'fields.id.start' = '1')`)
			mustExec(t, s, `CREATE STREAM copy (id BIGINT)`)
			mustExec(t, s, `INSERT INTO copy SELECT id FROM g`)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			if err := e.WaitBounded(ctx, nil); err != nil {
				t.Fatal(err)
			}
			cancel()
		}
		if got := strings.Split(rows(t, s, "SHOW JOBS")[0], "|")[2]; got != "FINISHED" {
			t.Fatalf("round %d: job-1 is %s", round, got)
		}
		equalLines(t, "copy", rows(t, s, "SELECT COUNT(*), SUM(id) FROM copy"), []string{"50|1275"})
		closeEngine(t, e)
	}
}
