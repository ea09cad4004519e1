package exec_test

import (
	"strings"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"

	"github.com/clinksql/clinksql/checkpoint"
	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/internal/promtest"
)

// checkCheckpointsTotal compares clinksql_checkpoints_total with the counts by mode and outcome of recs.
func checkCheckpointsTotal(t *testing.T, reg prometheus.Gatherer, recs []checkpoint.Record) {
	t.Helper()
	for _, mode := range []checkpoint.Mode{checkpoint.Aligned, checkpoint.Unaligned} {
		for _, o := range []checkpoint.Outcome{checkpoint.Completed, checkpoint.Failed, checkpoint.Aborted} {
			n := 0
			for _, r := range recs {
				if r.Mode == mode && r.Outcome == o {
					n++
				}
			}
			labels := map[string]string{"job_id": "job", "mode": mode.String(), "outcome": strings.ToLower(o.String())}
			if got, ok := promtest.Value(t, reg, "clinksql_checkpoints_total", labels); !ok || got != float64(n) {
				t.Fatalf("clinksql_checkpoints_total%v = %v (present %v), want %d", labels, got, ok, n)
			}
		}
	}
}

// A job is a Prometheus collector of the contract's series, with the job, operator and subtask labels; its
// counters are the job's totals, so a new Job over the same directory (a process restart) registered in its
// place carries on from them instead of starting at zero. The names pass promlint.
func TestNewJobMetricsCarryOnAcrossNewJob(t *testing.T) {
	a := seqConfig{seed: 5, rows: 2000, batchRows: 20, keys: 30, tsStep: 5}
	var countdown atomic.Int64
	countdown.Store(100)
	cfg := jobConfig(t, t.TempDir())
	cfg.HistorySize = 10000 // every checkpoint, to count them here
	reg := prometheus.NewRegistry()
	j, err := exec.NewJob(flakyPipeline(a, a, newTxnStore(), &countdown, false), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Register(reg); err != nil {
		t.Fatal(err)
	}
	runJob(t, j)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if problems, err := promlint.NewWithMetricFamilies(mfs).Lint(); err != nil || len(problems) > 0 {
		t.Fatalf("lint: %v %+v", err, problems)
	}
	recs := j.Checkpoints()
	checkCheckpointsTotal(t, reg, recs)
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"clinksql_job_restarts_total", map[string]string{"job_id": "job", "cause": "failure"}, 1},
		{"clinksql_job_restarts_total", map[string]string{"job_id": "job", "cause": "checkpoint"}, 0},
		{"clinksql_operator_rows_in_total", map[string]string{"job_id": "job", "operator": "agg", "subtask": "0"}, float64(subtaskOf(t, j, "agg", 0).RowsIn)},
		{"clinksql_source_records_total", map[string]string{"job_id": "job", "operator": "gen-b", "subtask": "1"}, float64(a.rows)},
		{"clinksql_operator_state_bytes", map[string]string{"job_id": "job", "operator": "agg", "subtask": "1"}, float64(subtaskOf(t, j, "agg", 1).StateBytes)},
		{"clinksql_checkpoint_mode", map[string]string{"job_id": "job", "mode": "aligned"}, 1},
		{"clinksql_checkpoint_mode", map[string]string{"job_id": "job", "mode": "unaligned"}, 0},
		{"clinksql_checkpoint_duration_seconds", map[string]string{"job_id": "job"}, float64(j.Status().CheckpointsCompleted)},
		{"clinksql_sink_commit_seconds", map[string]string{"job_id": "job", "operator": "sink"}, -1},
	} {
		got, ok := promtest.Value(t, reg, c.name, c.labels)
		if !ok || (c.want >= 0 && got != c.want) || (c.want < 0 && got <= 0) {
			t.Errorf("%s%v = %v (present %v), want %v", c.name, c.labels, got, ok, c.want)
		}
	}
	// Finished: every watermark is +inf, which no series shows; the sources tell no lag.
	for _, name := range []string{"clinksql_operator_watermark_seconds", "clinksql_source_lag_records", "clinksql_sink_committed_bytes_total"} {
		if _, ok := promtest.Value(t, reg, name, nil); ok {
			t.Errorf("%s present, want it left out (unknown)", name)
		}
	}

	j2, err := exec.NewJob(flakyPipeline(a, a, newTxnStore(), new(atomic.Int64), false), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := j2.Register(reg); err != nil { // in the place of j
		t.Fatal(err)
	}
	checkCheckpointsTotal(t, reg, recs)
	if got, _ := promtest.Value(t, reg, "clinksql_job_restarts_total", map[string]string{"cause": "failure"}); got != 1 {
		t.Fatalf("restarts after a new job: %v, want 1", got)
	}
}
