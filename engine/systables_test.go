package engine

import (
	"context"
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
