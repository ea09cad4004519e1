package engine

import (
	"testing"

	"github.com/clinksql/clinksql/internal/promtest"
)

// pins: a deployed job's series are in the engine's registry under its id from deploy to drop, clinksql_jobs
// counts the jobs by state, and a job's counters carry on across an engine restart (they are its totals).
func TestJobMetricsRegisteredFromDeployToDrop(t *testing.T) {
	dir := t.TempDir()
	e, s := testEngine(t, dir)
	mustExec(t, s, `SET checkpoint.interval = '0'`)
	mustExec(t, s, `CREATE STREAM ev (k BIGINT)`)
	mustExec(t, s, `CREATE MATERIALIZED VIEW n AS SELECT COUNT(*) AS n FROM ev`)
	mustExec(t, s, `INSERT INTO ev VALUES (1), (2), (3)`)
	for range 3 {
		mustExec(t, s, `FLUSH`)
	}
	id := ""
	e.mu.Lock()
	for k := range e.jobs {
		id = k
	}
	e.mu.Unlock()
	completed := map[string]string{"job_id": id, "mode": "aligned", "outcome": "completed"}
	before, ok := promtest.Value(t, e.Registry(), "clinksql_checkpoints_total", completed)
	if !ok || before < 3 {
		t.Fatalf("clinksql_checkpoints_total%v = %v (present %v), want at least 3", completed, before, ok)
	}
	if v, ok := promtest.Value(t, e.Registry(), "clinksql_jobs", map[string]string{"state": "RUNNING"}); !ok || v < 1 {
		t.Fatalf("clinksql_jobs{RUNNING} = %v %v", v, ok)
	}
	closeEngine(t, e)

	e2, s2 := testEngine(t, dir)
	if v, _ := promtest.Value(t, e2.Registry(), "clinksql_checkpoints_total", completed); v < before {
		t.Fatalf("after a restart clinksql_checkpoints_total%v = %v, was %v", completed, v, before)
	}
	mustExec(t, s2, `DROP MATERIALIZED VIEW n`)
	if _, ok := promtest.Value(t, e2.Registry(), "clinksql_checkpoints_total", map[string]string{"job_id": id}); ok {
		t.Fatal("a dropped job's series are still registered")
	}
	if v, ok := promtest.Value(t, e2.Registry(), "clinksql_jobs", map[string]string{"state": "RUNNING"}); !ok || v != 0 {
		t.Fatalf("clinksql_jobs{RUNNING} = %v %v after the drop", v, ok)
	}
	// clinksql_jobs counts the states JobInfos shows (it asks for the state alone).
	mustExec(t, s2, `CREATE MATERIALIZED VIEW m AS SELECT COUNT(*) AS n FROM ev`)
	want := map[string]float64{}
	for _, info := range e2.JobInfos() {
		want[info.State]++
	}
	for _, state := range jobStates {
		if v, _ := promtest.Value(t, e2.Registry(), "clinksql_jobs", map[string]string{"state": state}); v != want[state] {
			t.Fatalf("clinksql_jobs{%s} = %v, JobInfos shows %v", state, v, want[state])
		}
	}
}
