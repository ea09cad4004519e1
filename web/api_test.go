package web

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/clinksql/clinksql/engine"
)

// runJob starts, on e, a continuous job counting a throttled datagen stream per key and second of event time into
// a CSV file sink, at parallelism 2 (its graph has a hash exchange) with a checkpoint every 100 ms, and returns
// its id.
func runJob(t *testing.T, e *engine.Engine) string {
	t.Helper()
	s := e.NewSession()
	for _, sql := range []string{
		`CREATE STREAM gen (id BIGINT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)
			WITH (connector = 'datagen', 'fields.id.kind' = 'sequence', 'fields.ts.kind' = 'sequence',
			'fields.ts.start' = '2026-01-01 00:00:00', 'fields.ts.step' = '10 ms', 'rows-per-second' = '2000')`,
		`CREATE SINK per_second (k BIGINT, window_end TIMESTAMP(3), n BIGINT) WITH (connector = 'file', format = 'csv', path = 'out')`,
		`SET checkpoint.interval = '100 ms'`,
		`SET parallelism = 2`,
		`INSERT INTO per_second SELECT id % 4, window_end, COUNT(*) FROM TABLE(TUMBLE(TABLE gen, DESCRIPTOR(ts), INTERVAL '1' SECOND))
			GROUP BY id % 4, window_start, window_end`,
	} {
		if _, err := s.Execute(context.Background(), sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	jobs := e.JobInfos()
	if len(jobs) != 1 {
		t.Fatalf("jobs after the INSERT: %+v", jobs)
	}
	return jobs[0].JobID
}

// await polls cond (the engine's figures move on their own) until it holds, failing after a minute.
func await(t *testing.T, what string, cond func() bool) {
	t.Helper()
	if !eventually(cond) {
		t.Fatalf("waited a minute for %s", what)
	}
}

// eventually polls cond until it holds (true) or a minute passed (false).
func eventually(cond func() bool) bool {
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			return false
		}
	}
	return true
}

// keysOf returns the keys of a JSON object in their order.
func keysOf(t *testing.T, raw json.RawMessage) []string {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("not an object: %s", raw)
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

// The contract's JSON names, in order (issue13-contract.md).
var (
	jobKeys = []string{"job_id", "query", "state", "bounded", "started_at", "restarts", "last_error", "last_checkpoint",
		"rows_in", "rows_out", "rows_in_per_sec", "rows_out_per_sec", "total_rows", "watermark", "watermark_lag_ms",
		"source_lag_records", "late_rows", "bad_values", "suppressed_rows", "checkpoints_completed",
		"checkpoints_failed", "adaptive_switches", "checkpoint_mode"}
	operatorKeys = []string{"job_id", "operator_id", "label", "kind", "subtask", "parallelism", "rows_in", "rows_out",
		"rows_in_per_sec", "rows_out_per_sec", "busy_ratio", "backpressure_ratio", "watermark", "state_bytes",
		"lag_records", "late_rows", "bad_values"}
	edgeKeys       = []string{"job_id", "from_operator", "to_operator", "exchange"}
	checkpointKeys = []string{"job_id", "checkpoint_id", "mode", "trigger_time", "duration_ms", "align_ms",
		"bytes_persisted", "inflight_bytes", "outcome", "reason"}
	// jsonTimeRE is RFC 3339 in UTC with milliseconds.
	jsonTimeRE = regexp.MustCompile(`^"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z"$`)
)

type jobAnswer struct {
	Job         json.RawMessage   `json:"job"`
	Operators   []json.RawMessage `json:"operators"`
	Edges       []json.RawMessage `json:"edges"`
	Checkpoints []json.RawMessage `json:"checkpoints"`
}

func getJSON(t *testing.T, url string, v any) response {
	t.Helper()
	r := get(t, http.DefaultClient, url, nil)
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("GET %s: Content-Type %q", url, ct)
	}
	if err := json.Unmarshal([]byte(r.body), v); err != nil {
		t.Fatalf("GET %s: %v in %s", url, err, r.body)
	}
	return r
}

// /api/jobs and /api/jobs/{id} are the engine's observation API as JSON, with the contract's names in order and
// times in RFC 3339 with milliseconds; an unknown job, or an unknown API path, is a JSON 404.
func TestAPIJobs(t *testing.T) {
	e := openEngine(t)
	s := startServer(t, Config{Addr: "127.0.0.1:0", Engine: e})
	base := "http://" + s.Addr().String()

	var empty map[string][]json.RawMessage
	if r := getJSON(t, base+"/api/jobs", &empty); r.status != 200 || r.body != "{\"jobs\":[]}\n" {
		t.Fatalf("/api/jobs without jobs: %d %s", r.status, r.body)
	}
	id := runJob(t, e)

	// Once a checkpoint completed, the job shows it, and its history has it.
	var job jobAnswer
	await(t, "a completed checkpoint in the API", func() bool {
		getJSON(t, base+"/api/jobs/"+id, &job)
		var j engine.JobInfo
		if err := json.Unmarshal(job.Job, &j); err != nil {
			t.Fatal(err)
		}
		return j.LastCheckpoint > 0 && len(job.Checkpoints) > 0 && len(job.Operators) > 0
	})
	if got := keysOf(t, job.Job); !slices.Equal(got, jobKeys) {
		t.Errorf("job keys:\n got %q\nwant %q", got, jobKeys)
	}
	var j engine.JobInfo
	json.Unmarshal(job.Job, &j)
	if j.JobID != id || j.State != "RUNNING" || j.Bounded || !strings.Contains(j.Query, "INSERT INTO per_second") {
		t.Errorf("job: %s", job.Job)
	}

	// Every subtask of the plan's operators, parallelism 2 past the source.
	subtasks := map[string][]int{}
	for _, raw := range job.Operators {
		if got := keysOf(t, raw); !slices.Equal(got, operatorKeys) {
			t.Fatalf("operator keys:\n got %q\nwant %q", got, operatorKeys)
		}
		var op engine.OperatorInfo
		json.Unmarshal(raw, &op)
		if op.JobID != id || op.Parallelism < 1 || op.Kind == "" || op.Label == "" {
			t.Errorf("operator: %s", raw)
		}
		subtasks[op.OperatorID] = append(subtasks[op.OperatorID], op.Subtask)
	}
	// The edges join the operators listed, one of them a hash exchange (the GROUP BY's).
	hash := false
	for _, raw := range job.Edges {
		if got := keysOf(t, raw); !slices.Equal(got, edgeKeys) {
			t.Fatalf("edge keys:\n got %q\nwant %q", got, edgeKeys)
		}
		var ed engine.EdgeInfo
		json.Unmarshal(raw, &ed)
		if subtasks[ed.FromOperator] == nil || subtasks[ed.ToOperator] == nil || ed.JobID != id {
			t.Errorf("edge %s joins operators not listed (%v)", raw, subtasks)
		}
		hash = hash || strings.Contains(strings.ToLower(ed.Exchange), "hash")
	}
	if !hash {
		t.Errorf("no hash exchange among the edges: %s", job.Edges)
	}
	completed := false
	for _, raw := range job.Checkpoints {
		if got := keysOf(t, raw); !slices.Equal(got, checkpointKeys) {
			t.Fatalf("checkpoint keys:\n got %q\nwant %q", got, checkpointKeys)
		}
		var fields map[string]json.RawMessage
		json.Unmarshal(raw, &fields)
		if !jsonTimeRE.Match(fields["trigger_time"]) {
			t.Errorf("trigger_time %s: want RFC 3339 with milliseconds", fields["trigger_time"])
		}
		var c engine.CheckpointInfo
		json.Unmarshal(raw, &c)
		completed = completed || (c.JobID == id && c.CheckpointID > 0 && strings.EqualFold(c.Outcome, "completed"))
	}
	if !completed {
		t.Errorf("no completed checkpoint in %s", job.Checkpoints)
	}

	var list struct{ Jobs []json.RawMessage }
	getJSON(t, base+"/api/jobs", &list)
	if len(list.Jobs) != 1 || !slices.Equal(keysOf(t, list.Jobs[0]), jobKeys) {
		t.Errorf("/api/jobs: %s", list.Jobs)
	}

	for _, path := range []string{"/api/jobs/job-99", "/api/jobs/" + id + "x", "/api/nothing"} {
		var e struct{ Error string }
		if r := getJSON(t, base+path, &e); r.status != 404 || e.Error == "" {
			t.Errorf("%s: %d %s, want a JSON 404", path, r.status, r.body)
		}
	}
}

// Times are RFC 3339 in UTC with milliseconds, also on whole seconds; nil pointers are null and a rate that is
// not a number is null rather than an error.
func TestWriteJSONTimes(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("x", 3600))
	info := engine.JobInfo{JobID: "job-1", StartedAt: &at, RowsInPerSec: float64(0) / zero}
	rec := httptest.NewRecorder()
	writeJSON(rec, 200, info)
	for _, want := range []string{`"started_at":"2026-01-02T02:04:05.000Z"`, `"watermark":null`, `"rows_in_per_sec":null`,
		`"total_rows":null`} {
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("%s: no %s", rec.Body.String(), want)
		}
	}
}

var zero float64
