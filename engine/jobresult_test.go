package engine

import (
	"context"
	"slices"
	"testing"
)

// pins (issue 11, item 2): a statement that starts a job answers as Postgres answers its kind of statement, with
// the command tag and no result set (psql and scripts expect the tag), and says the job's id in a notice; the same
// in a prepared statement's description, and for the END of a statement set.
func TestStartedJobIsATagAndANotice(t *testing.T) {
	_, s := testEngine(t, t.TempDir())
	ctx := context.Background()
	mustExec(t, s, `CREATE STREAM src (k BIGINT, v BIGINT) WITH (connector = 'datagen', 'number-of-rows' = '10')`)
	mustExec(t, s, `CREATE SINK hole (k BIGINT, v BIGINT) WITH (connector = 'blackhole')`)
	mustExec(t, s, `CREATE SINK hole2 (k BIGINT, v BIGINT) WITH (connector = 'blackhole')`)
	for _, tc := range []struct{ sql, tag, job string }{
		{`CREATE MATERIALIZED VIEW mv AS SELECT k, COUNT(*) AS n FROM src GROUP BY k`, "CREATE MATERIALIZED VIEW", "job-1"},
		{`INSERT INTO hole SELECT k, v FROM src`, "INSERT 0 0", "job-2"},
		{`BEGIN STATEMENT SET; INSERT INTO hole SELECT k, v FROM src; INSERT INTO hole2 SELECT k, v FROM src; END`, "COMMIT", "job-3"},
	} {
		res, err := s.Execute(ctx, tc.sql)
		if err != nil {
			t.Fatalf("%s: %v", tc.sql, err)
		}
		last := res[len(res)-1]
		if last.Tag != tc.tag || last.Columns != nil || last.Rows != nil ||
			!slices.Contains(last.Notices, "started job "+tc.job) {
			t.Errorf("%s: tag %q, columns %v, rows %v, notices %q; want tag %q and the notice of %s",
				tc.sql, last.Tag, last.Columns, last.Rows, last.Notices, tc.tag, tc.job)
		}
	}
	for _, sql := range []string{`CREATE MATERIALIZED VIEW mv2 AS SELECT k FROM src`, `INSERT INTO hole SELECT k, v FROM src`} {
		p, err := s.Prepare(ctx, sql, nil)
		if err != nil {
			t.Fatalf("prepare %s: %v", sql, err)
		}
		if p.Columns != nil {
			t.Errorf("prepared %s describes columns %v", sql, p.Columns)
		}
	}
}
