package engine

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/clinksql/clinksql/sqlerr"
)

// pins: clink_catalog.jobs and checkpoints are relations a SELECT filters, joins, sorts and aggregates, with the
// observation API's rows; a continuous job cannot read them (0A000) and an unknown one is 42P01, both at the
// relation's position.
func TestSystemTablesSelect(t *testing.T) {
	_, s := testEngine(t, t.TempDir())
	mustExec(t, s, `CREATE STREAM nums (a INT)`)
	mustExec(t, s, `CREATE STREAM out1 (a INT)`)
	mustExec(t, s, `INSERT INTO out1 SELECT a FROM nums WHERE a > 1`)
	mustExec(t, s, `INSERT INTO nums VALUES (1), (2), (3)`)
	mustExec(t, s, "FLUSH")
	equalLines(t, "jobs", rows(t, s, `SELECT job_id, state, bounded, rows_in, rows_out, started_at IS NULL, total_rows
		FROM clink_catalog.jobs WHERE state = 'RUNNING' ORDER BY job_id`), []string{"job-1|RUNNING|f|3|2|f|NULL"})
	equalLines(t, "checkpoints join jobs", rows(t, s, `SELECT j.job_id, count(*) > 0, min(c.outcome)
		FROM clink_catalog.jobs j JOIN clink_catalog.checkpoints c ON c.job_id = j.job_id GROUP BY j.job_id`),
		[]string{"job-1|t|COMPLETED"})
	equalLines(t, "edges", rows(t, s, `SELECT count(*) FROM clink_catalog.edges WHERE job_id = 'job-1'`), []string{"2"})
	cases := []struct {
		sql, code string
		pos       int
	}{
		{"SELECT * FROM clink_catalog.nope", sqlerr.UndefinedTable, 14},
		{"INSERT INTO out1 SELECT 1 FROM clink_catalog.jobs", sqlerr.FeatureNotSupported, 31},
		{"CREATE MATERIALIZED VIEW mv AS SELECT count(*) FROM clink_catalog.checkpoints", sqlerr.FeatureNotSupported, 52},
	}
	for _, c := range cases {
		_, err := s.Execute(context.Background(), c.sql)
		e := sqlerr.As(err)
		if e == nil {
			t.Fatalf("%s: %v, want code %s", c.sql, err, c.code)
		}
		if e.Code != c.code || e.Pos != c.pos {
			t.Errorf("%s: got %s at %d (%v), want code %s at %d", c.sql, e.Code, e.Pos, e, c.code, c.pos)
		}
	}
}

// pins: SHOW JOBS keeps its columns first (id ... error) and adds the jobs table's others; SHOW CHECKPOINTS [FOR
// job] is the checkpoints table (the same rows); an unknown job is 42704 at its position.
func TestShowJobsAndCheckpointsAreTheSystemTables(t *testing.T) {
	_, s := testEngine(t, t.TempDir())
	mustExec(t, s, `SET checkpoint.interval = '0'`) // only FLUSH checkpoints: SHOW and SELECT see the same history
	mustExec(t, s, `CREATE STREAM nums (a INT)`)
	mustExec(t, s, `CREATE MATERIALIZED VIEW n AS SELECT a FROM nums`)
	mustExec(t, s, `INSERT INTO nums VALUES (1), (2)`)
	mustExec(t, s, "FLUSH")
	mustExec(t, s, "FLUSH")
	res, err := s.Execute(context.Background(), "SHOW JOBS")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range res[0].Columns {
		names = append(names, c.Name)
	}
	equalLines(t, "SHOW JOBS columns", names, []string{"id", "query", "state", "bounded", "last_checkpoint", "rows_in",
		"rows_out", "late_rows", "bad_values", "suppressed_rows", "error", "started_at", "restarts", "rows_in_per_sec",
		"rows_out_per_sec", "total_rows", "watermark", "watermark_lag_ms", "source_lag_records", "checkpoints_completed",
		"checkpoints_failed", "adaptive_switches", "checkpoint_mode"})
	res, err = s.Execute(context.Background(), "SHOW CHECKPOINTS FOR job-1")
	if err != nil {
		t.Fatal(err)
	}
	names = nil
	for _, c := range res[0].Columns {
		names = append(names, c.Name)
	}
	equalLines(t, "SHOW CHECKPOINTS columns", names, []string{"job_id", "checkpoint_id", "mode", "trigger_time",
		"duration_ms", "align_ms", "bytes_persisted", "inflight_bytes", "outcome", "reason"})
	show := rows(t, s, "SHOW CHECKPOINTS FOR job-1")
	if len(show) < 2 {
		t.Fatalf("SHOW CHECKPOINTS FOR job-1 after two FLUSHes: %q", show)
	}
	sel := rows(t, s, `SELECT job_id, checkpoint_id, mode, trigger_time, duration_ms, align_ms, bytes_persisted,
		inflight_bytes, outcome, reason FROM clink_catalog.checkpoints WHERE job_id = 'job-1' ORDER BY checkpoint_id`)
	equalLines(t, "SHOW CHECKPOINTS vs clink_catalog.checkpoints", show, sel)
	equalLines(t, "SHOW CHECKPOINTS", rows(t, s, "SHOW CHECKPOINTS"), show)
	_, err = s.Execute(context.Background(), "SHOW CHECKPOINTS FOR job-9")
	if e := sqlerr.As(err); e == nil || e.Code != sqlerr.UndefinedObject || e.Pos != 21 {
		t.Fatalf("SHOW CHECKPOINTS FOR job-9: %v, want 42704 at 21", err)
	}
}

// pins: EXPLAIN ANALYZE <job> is the plan EXPLAIN gives for the job's statement with one line of live figures under
// each operator (the rows are exact after FLUSH); an unknown job is 42704 at its position, a job that is not
// deployed 55000.
func TestExplainAnalyzeJob(t *testing.T) {
	_, s := testEngine(t, t.TempDir())
	mustExec(t, s, `SET checkpoint.interval = '0'`) // only FLUSH checkpoints
	mustExec(t, s, `CREATE STREAM nums (a INT)`)
	mustExec(t, s, `CREATE STREAM big (a INT)`)
	mustExec(t, s, `INSERT INTO big SELECT a FROM nums WHERE a > 1`)
	mustExec(t, s, `INSERT INTO nums VALUES (1), (2), (3)`)
	mustExec(t, s, "FLUSH")
	got := rows(t, s, "EXPLAIN ANALYZE job-1")
	if len(got) == 0 || got[0] != "job job-1: RUNNING, last checkpoint 1, restarts 0" {
		t.Fatalf("EXPLAIN ANALYZE job-1: %q", got)
	}
	var plan, actual []string
	for _, l := range got[1:] {
		if strings.HasPrefix(strings.TrimSpace(l), "actual: ") {
			actual = append(actual, strings.TrimSpace(l))
		} else {
			plan = append(plan, l)
		}
	}
	equalLines(t, "EXPLAIN ANALYZE's plan", plan, rows(t, s, "EXPLAIN INSERT INTO big SELECT a FROM nums WHERE a > 1"))
	// sink, calc, source: the plan prints the sink first.
	want := []string{`rows_in=2 rows_out=2 `, `rows_in=3 rows_out=2 `, `rows_in=0 rows_out=3 `}
	if len(actual) != len(want) {
		t.Fatalf("figures lines %q, want one per operator", actual)
	}
	re := regexp.MustCompile(`^actual: (rows_in=\d+ rows_out=\d+ )rows_in/s=[0-9.]+ rows_out/s=[0-9.]+ busy=[0-9.]+ backpressure=[0-9.]+ watermark=\S+ state_bytes=\d+$`)
	for i, l := range actual {
		m := re.FindStringSubmatch(l)
		if m == nil || m[1] != want[i] {
			t.Errorf("figures %q, want %q and the rest", l, want[i])
		}
	}
	for sql, code := range map[string]string{"EXPLAIN ANALYZE job-7": sqlerr.UndefinedObject} {
		_, err := s.Execute(context.Background(), sql)
		if e := sqlerr.As(err); e == nil || e.Code != code || e.Pos != 16 {
			t.Errorf("%s: %v, want %s at 16", sql, err, code)
		}
	}
}

// pins: a job that is not deployed (FAILED in an earlier process) still shows its dataflow's edges, planned again
// from its statement, the same as while it ran; it shows no operators (nothing runs).
func TestEdgesOfAJobNotDeployed(t *testing.T) {
	dir := t.TempDir()
	e, s := testEngine(t, dir)
	mustExec(t, s, `SET checkpoint.interval = '0'`)
	mustExec(t, s, `SET errors.mode = 'fail'`)
	mustExec(t, s, `CREATE STREAM nums (a INT, b INT)`)
	mustExec(t, s, `CREATE STREAM q (v INT)`)
	mustExec(t, s, `INSERT INTO q SELECT a / b FROM nums`)
	const edges = `SELECT from_operator, to_operator, exchange FROM clink_catalog.edges WHERE job_id = 'job-1'`
	before := rows(t, s, edges)
	if len(before) == 0 {
		t.Fatal("no edges while job-1 runs")
	}
	mustExec(t, s, `INSERT INTO nums VALUES (1, 0)`)
	flushFails(t, s, "job-1", sqlerr.DivisionByZero, "division by zero")
	waitJobState(t, s, "job-1", "FAILED")
	closeEngine(t, e)
	e2, s2 := testEngine(t, dir)
	if e2.running("job-1") != nil {
		t.Fatal("a FAILED job was re-deployed")
	}
	equalLines(t, "edges of the FAILED job", rows(t, s2, edges), before)
	equalLines(t, "its operators", rows(t, s2, `SELECT count(*) FROM clink_catalog.operators`), []string{"0"})
}
