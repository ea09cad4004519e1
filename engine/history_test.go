package engine

import (
	"context"
	"testing"

	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/sqlerr"
)

// onlyJob returns the engine's one running job.
func onlyJob(t *testing.T, e *Engine) *exec.Job {
	t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.jobs) != 1 {
		t.Fatalf("%d jobs, want 1", len(e.jobs))
	}
	for _, j := range e.jobs {
		return j.job
	}
	return nil
}

// pins: checkpoint.history is validated (1 to 10000, 22023 at the setting's name), reaches the job it starts, and
// the job's history keeps that many checkpoints, across a restart of the engine (its start time too).
func TestCheckpointHistorySetting(t *testing.T) {
	dir := t.TempDir()
	e, s := testEngine(t, dir)
	for _, bad := range []string{"0", "10001", "'many'", "-1"} {
		_, err := s.Execute(context.Background(), "SET checkpoint.history = "+bad)
		if e := sqlerr.As(err); e == nil || e.Code != sqlerr.InvalidParameter || e.Pos != 4 {
			t.Errorf("SET checkpoint.history = %s: %+v, want 22023 at 4", bad, e)
		}
	}
	mustExec(t, s, `SET checkpoint.history = 2`)
	mustExec(t, s, `SET checkpoint.interval = '0'`)
	mustExec(t, s, `CREATE STREAM ev (k BIGINT)`)
	mustExec(t, s, `CREATE MATERIALIZED VIEW n AS SELECT COUNT(*) AS n FROM ev`)
	for range 4 {
		mustExec(t, s, `FLUSH`)
	}
	j := onlyJob(t, e)
	recs, started := j.Checkpoints(), j.Status().StartedAt
	if len(recs) != 2 || recs[1].ID < 4 || started.IsZero() {
		t.Fatalf("history %+v started %v, want the last 2 of 4 checkpoints", recs, started)
	}
	closeEngine(t, e)

	e2, s2 := testEngine(t, dir)
	j2 := onlyJob(t, e2)
	// The close took one more (its stop checkpoint): the history goes on from the last before it.
	if got := j2.Checkpoints(); len(got) != 2 || got[0].ID != recs[1].ID || got[0].Bytes != recs[1].Bytes || got[1].ID <= recs[1].ID {
		t.Fatalf("after a restart: history %+v, want it to go on from %+v", got, recs)
	}
	mustExec(t, s2, `FLUSH`)
	if got := j2.Checkpoints(); len(got) != 2 || got[1].ID <= recs[1].ID || !j2.Status().StartedAt.Equal(started) {
		t.Fatalf("after a restart and a flush: history %+v, started %v (was %v)", got, j2.Status().StartedAt, started)
	}
}
