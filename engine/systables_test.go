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
