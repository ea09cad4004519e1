package engine

import (
	"math"
	"path/filepath"
	"time"

	"github.com/clinksql/clinksql/catalog"
	"github.com/clinksql/clinksql/checkpoint"
	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/sql/planner"
	"github.com/clinksql/clinksql/state"
)

// The observation API: what a running engine shows of its jobs. SHOW JOBS, SHOW CHECKPOINTS, the clink_catalog
// system tables (systables.go), EXPLAIN ANALYZE and the HTTP JSON API all read these, so that they never disagree.
// Each call is a snapshot; none holds the engine's lock while it asks a job for its figures.

// JobInfo is one job of the catalog as SHOW JOBS and clink_catalog.jobs show it. Pointers are nil (NULL, JSON
// null) where the value is unknown: a job not running has no rates, watermark or lag.
type JobInfo struct {
	JobID string `json:"job_id"`
	Query string `json:"query"`
	// State is RUNNING, RESTARTING, FINISHED, FAILED, STOPPED or DROPPED.
	State     string     `json:"state"`
	Bounded   bool       `json:"bounded"`
	StartedAt *time.Time `json:"started_at"`
	// Restarts is the job's total across process restarts.
	Restarts       int64  `json:"restarts"`
	LastError      string `json:"last_error"`
	LastCheckpoint uint64 `json:"last_checkpoint"`
	// RowsIn are the rows its sources produced, RowsOut the rows its sinks wrote; the rates are over the last
	// few seconds.
	RowsIn        int64   `json:"rows_in"`
	RowsOut       int64   `json:"rows_out"`
	RowsInPerSec  float64 `json:"rows_in_per_sec"`
	RowsOutPerSec float64 `json:"rows_out_per_sec"`
	// TotalRows is what its bounded sources hold in all, when every one of them knows it.
	TotalRows *int64 `json:"total_rows"`
	// Watermark is the least input watermark over its sinks; WatermarkLagMs how far it is behind now.
	Watermark      *time.Time `json:"watermark"`
	WatermarkLagMs *int64     `json:"watermark_lag_ms"`
	// SourceLagRecords are the records its sources are behind the end of their inputs, summed over the sources
	// that know it.
	SourceLagRecords     *int64 `json:"source_lag_records"`
	LateRows             int64  `json:"late_rows"`
	BadValues            int64  `json:"bad_values"`
	SuppressedRows       int64  `json:"suppressed_rows"`
	CheckpointsCompleted int64  `json:"checkpoints_completed"`
	CheckpointsFailed    int64  `json:"checkpoints_failed"`
	AdaptiveSwitches     int64  `json:"adaptive_switches"`
	// CheckpointMode is the mode the job's next barrier gets (aligned or unaligned), "" when it is not running.
	CheckpointMode string `json:"checkpoint_mode"`
}

// OperatorInfo is one subtask of a running job's operator (clink_catalog.operators).
type OperatorInfo struct {
	JobID      string `json:"job_id"`
	OperatorID string `json:"operator_id"`
	// Label is what EXPLAIN calls the operator; Kind is source, operator or sink.
	Label         string  `json:"label"`
	Kind          string  `json:"kind"`
	Subtask       int     `json:"subtask"`
	Parallelism   int     `json:"parallelism"`
	RowsIn        int64   `json:"rows_in"`
	RowsOut       int64   `json:"rows_out"`
	RowsInPerSec  float64 `json:"rows_in_per_sec"`
	RowsOutPerSec float64 `json:"rows_out_per_sec"`
	// BusyRatio and BackpressureRatio are the shares of the last few seconds spent in the operator's code and
	// blocked on a full output (Flink's busy and backpressured time per second, divided by 1000).
	BusyRatio         float64    `json:"busy_ratio"`
	BackpressureRatio float64    `json:"backpressure_ratio"`
	Watermark         *time.Time `json:"watermark"`
	StateBytes        int64      `json:"state_bytes"`
	// LagRecords is a source's records behind the end of its input, nil when unknown or not a source.
	LagRecords *int64 `json:"lag_records"`
	LateRows   int64  `json:"late_rows"`
	BadValues  int64  `json:"bad_values"`
}

// EdgeInfo is one edge of a job's dataflow (clink_catalog.edges): operator ids, and how rows are routed, as EXPLAIN
// names it (forward, hash[keys], broadcast, rebalance).
type EdgeInfo struct {
	JobID        string `json:"job_id"`
	FromOperator string `json:"from_operator"`
	ToOperator   string `json:"to_operator"`
	Exchange     string `json:"exchange"`
}

// CheckpointInfo is one checkpoint of a job's history (SHOW CHECKPOINTS, clink_catalog.checkpoints).
type CheckpointInfo struct {
	JobID        string    `json:"job_id"`
	CheckpointID uint64    `json:"checkpoint_id"`
	Mode         string    `json:"mode"`
	TriggerTime  time.Time `json:"trigger_time"`
	// DurationMs is from the trigger to the durable COMPLETED marker (or the failure); AlignMs the longest a
	// subtask held an input paused for its alignment.
	DurationMs     float64 `json:"duration_ms"`
	AlignMs        float64 `json:"align_ms"`
	BytesPersisted int64   `json:"bytes_persisted"`
	InflightBytes  int64   `json:"inflight_bytes"`
	// Outcome is COMPLETED, FAILED, ABORTED or IN_PROGRESS; Reason says why one failed or was aborted.
	Outcome string `json:"outcome"`
	Reason  string `json:"reason"`
}

// Ready reports whether Open re-deployed the jobs of the catalog (the HTTP /readyz), and the engine is not closed.
func (e *Engine) Ready() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.ready && !e.closed
}

// JobInfos returns every job of the catalog, in SHOW JOBS order.
func (e *Engine) JobInfos() []JobInfo {
	specs := e.cat.Jobs()
	out := make([]JobInfo, 0, len(specs))
	for _, spec := range specs {
		out = append(out, e.jobInfo(spec))
	}
	return out
}

// JobInfo returns one job of the catalog.
func (e *Engine) JobInfo(id string) (JobInfo, bool) {
	spec, ok := e.cat.Job(id)
	if !ok {
		return JobInfo{}, false
	}
	return e.jobInfo(spec), true
}

// running returns job id as deployed, nil if it is not.
func (e *Engine) running(id string) *runningJob {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.jobs[id]
}

// jobStateNames are how SHOW JOBS words exec's job states.
var jobStateNames = map[exec.JobState]string{exec.JobCreated: "RUNNING", exec.JobRunning: "RUNNING",
	exec.JobFinished: "FINISHED", exec.JobRestarting: "RESTARTING", exec.JobFailed: "FAILED", exec.JobCancelled: "STOPPED"}

func (e *Engine) jobInfo(spec *catalog.JobSpec) JobInfo {
	info := JobInfo{JobID: spec.ID, Query: spec.Statement}
	if !spec.Created.IsZero() {
		created := spec.Created.UTC()
		info.StartedAt = &created
	}
	rj := e.running(spec.ID)
	if rj == nil {
		info.LastCheckpoint = e.latestCompleted(spec.ID)
		_, totals := e.persistedHistory(spec.ID)
		if !totals.StartedAt.IsZero() {
			started := totals.StartedAt.UTC()
			info.StartedAt = &started
		}
		info.Restarts = totals.RestartCount()
		info.CheckpointsCompleted = totals.Outcomes(checkpoint.Completed)
		info.CheckpointsFailed = totals.Outcomes(checkpoint.Failed) + totals.Outcomes(checkpoint.Aborted)
		info.AdaptiveSwitches = totals.AdaptiveSwitches
		info.State = storedState(spec)
		switch info.State {
		case "FINISHED":
			info.Bounded = true // only a job whose sources all end finishes
		case "FAILED":
			info.LastError = spec.Failed
		}
		return info
	}
	js := rj.job.Status()
	info.State = jobStateNames[js.State]
	info.Bounded = rj.plan.Bounded
	info.LastCheckpoint = js.LastCompleted
	if info.LastCheckpoint == 0 { // none completed in this run yet: the one it restored from, if any
		info.LastCheckpoint = e.latestCompleted(spec.ID)
	}
	if js.Err != nil && (js.State == exec.JobFailed || js.State == exec.JobRestarting) {
		info.LastError, _ = failureOf(js)
	}
	if !js.StartedAt.IsZero() {
		started := js.StartedAt.UTC()
		info.StartedAt = &started
	}
	info.Restarts = int64(js.Restarts)
	info.RowsIn, info.RowsOut = js.RowsIn, js.RowsOut
	info.LateRows, info.BadValues, info.SuppressedRows = js.Late, js.BadValues, js.Suppressed
	info.CheckpointsCompleted, info.CheckpointsFailed = js.CheckpointsCompleted, js.CheckpointsFailed
	info.AdaptiveSwitches = js.AdaptiveSwitches
	if js.State == exec.JobRunning || js.State == exec.JobRestarting {
		info.CheckpointMode = js.Mode.String()
		if wm := watermarkTime(js.Watermark); wm != nil {
			lag := time.Since(*wm).Milliseconds()
			info.Watermark, info.WatermarkLagMs = wm, &lag
		}
		total, allKnown := int64(0), true
		var lag int64
		lagKnown := false
		for _, st := range rj.job.Subtasks() {
			switch st.Kind {
			case exec.SourceNode:
				info.RowsInPerSec += st.RowsOutPerSec
				if st.Total >= 0 {
					total += st.Total
				} else {
					allKnown = false
				}
				if st.LagRecords >= 0 {
					lag += st.LagRecords
					lagKnown = true
				}
			case exec.SinkNode:
				info.RowsOutPerSec += st.RowsOutPerSec
			}
		}
		if allKnown && rj.plan.Bounded {
			info.TotalRows = &total
		}
		if lagKnown {
			info.SourceLagRecords = &lag
		}
	}
	return info
}

// latestCompleted is the id of the newest completed checkpoint in a job's directory, 0 for none. It lists the
// directory, so jobInfo asks it only where the running job has no figure of its own.
func (e *Engine) latestCompleted(id string) uint64 {
	last, _, _ := checkpoint.LatestCompleted(state.OS, e.checkpointDir(id))
	return last
}

// storedState is the state of a job not deployed, as its catalog entry records it.
func storedState(spec *catalog.JobSpec) string {
	switch {
	case spec.Stopped && spec.Dropped:
		return "DROPPED"
	case spec.Stopped:
		return "FINISHED"
	case spec.Failed != "": // failed in an earlier process, and not re-deployed
		return "FAILED"
	}
	return "STOPPED"
}

// jobState is JobInfo's State alone, without the figures (and the reads of the job's directory) JobInfo gathers.
func (e *Engine) jobState(spec *catalog.JobSpec) string {
	if rj := e.running(spec.ID); rj != nil {
		return jobStateNames[rj.job.Status().State]
	}
	return storedState(spec)
}

// checkpointDir is where a job's checkpoints are.
func (e *Engine) checkpointDir(id string) string { return filepath.Join(e.jobDir(id), "checkpoints") }

// OperatorInfos returns one row per subtask of every operator of a running job, in graph order; none for a job
// not running.
func (e *Engine) OperatorInfos(job string) []OperatorInfo {
	rj := e.running(job)
	if rj == nil {
		return nil
	}
	subs := rj.job.Subtasks()
	out := make([]OperatorInfo, 0, len(subs))
	for _, st := range subs {
		op := OperatorInfo{JobID: job, OperatorID: st.Node, Label: st.Label, Kind: nodeKindName(st.Kind),
			Subtask: st.Subtask, Parallelism: st.Parallelism, RowsIn: st.RowsIn, RowsOut: st.RowsOut,
			RowsInPerSec: st.RowsInPerSec, RowsOutPerSec: st.RowsOutPerSec, BusyRatio: st.BusyRatio,
			BackpressureRatio: st.BackpressureRatio, Watermark: watermarkTime(st.Watermark),
			StateBytes: st.StateBytes, LateRows: st.LateRows, BadValues: st.BadValues}
		if st.Kind == exec.SourceNode && st.LagRecords >= 0 {
			lag := st.LagRecords
			op.LagRecords = &lag
		}
		out = append(out, op)
	}
	return out
}

func nodeKindName(k exec.NodeKind) string {
	switch k {
	case exec.SourceNode:
		return "source"
	case exec.SinkNode:
		return "sink"
	}
	return "operator"
}

// watermarkTime is a watermark (microseconds) as a time, nil for none (MinWatermark) or an ended input.
func watermarkTime(wm int64) *time.Time {
	if wm == exec.MinWatermark || wm == exec.MaxWatermark {
		return nil
	}
	t := time.UnixMicro(wm).UTC()
	return &t
}

// EdgeInfos returns the edges of a job's dataflow, in graph order: from its plan when it is deployed, else from
// its statement planned again (none for a dropped job, or one whose statement no longer plans: what it reads is
// gone).
func (e *Engine) EdgeInfos(job string) []EdgeInfo {
	var plan *planner.Physical
	if rj := e.running(job); rj != nil {
		plan = rj.plan
	} else if spec, ok := e.cat.Job(job); ok && !spec.Dropped {
		p, err := PlanJob(e, spec)
		if err != nil {
			return nil
		}
		plan = p
	} else {
		return nil
	}
	var out []EdgeInfo
	for _, n := range plan.Nodes {
		for _, in := range n.Inputs {
			out = append(out, EdgeInfo{JobID: job, FromOperator: in.From.ID, ToOperator: n.ID, Exchange: in.Exchange.String()})
		}
	}
	return out
}

// CheckpointInfos returns the checkpoint history of one job ("" = every job, in SHOW JOBS order), oldest first.
func (e *Engine) CheckpointInfos(job string) []CheckpointInfo {
	var out []CheckpointInfo
	for _, spec := range e.cat.Jobs() {
		if job != "" && spec.ID != job {
			continue
		}
		for _, r := range e.checkpointHistory(spec.ID) {
			out = append(out, CheckpointInfo{JobID: spec.ID, CheckpointID: r.ID, Mode: r.Mode.String(),
				TriggerTime: r.Trigger.UTC(), DurationMs: millis(r.Duration), AlignMs: millis(r.AlignWait),
				BytesPersisted: r.Bytes, InflightBytes: r.InflightBytes, Outcome: r.Outcome.String(), Reason: r.Reason})
		}
	}
	return out
}

// checkpointHistory is a job's history: the running job's own, else the one persisted in its checkpoint
// directory (which covers its earlier runs either way).
func (e *Engine) checkpointHistory(id string) exec.CheckpointHistory {
	if rj := e.running(id); rj != nil {
		return rj.job.Checkpoints()
	}
	recs, _ := e.persistedHistory(id)
	return recs
}

// persistedHistory reads the history of a job that is not running. A damaged file (the job would refuse to
// start over it with XX001 naming it) is logged and reads as none: the tables still show the other jobs.
func (e *Engine) persistedHistory(id string) (exec.CheckpointHistory, checkpoint.Totals) {
	recs, totals, err := checkpoint.ReadHistory(state.OS, e.checkpointDir(id))
	if err != nil {
		e.log.Warn("reading a job's checkpoint history", "job", id, "err", err)
	}
	return recs, totals
}

func millis(d time.Duration) float64 { return math.Round(float64(d)/float64(time.Microsecond)) / 1000 }
