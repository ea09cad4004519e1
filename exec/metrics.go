package exec

import (
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/clinksql/clinksql/checkpoint"
)

// jobMetrics are the descriptors of a job's Prometheus series. Each carries the job's id as a constant label, so
// that every job is a collector of its own that registers and unregisters alone.
type jobMetrics struct {
	checkpoints, ckptDuration, ckptSize, ckptAlign, ckptInflight, ckptSwitches, ckptMode *prometheus.Desc

	rowsIn, rowsOut, busy, backpressured, watermark, watermarkLag, stateBytes *prometheus.Desc
	sourceRecords, sourceLagRecords, sourceLagBytes                           *prometheus.Desc
	sinkCommit, sinkCommitted, sinkLatency                                    *prometheus.Desc
	late, bad, restarts                                                       *prometheus.Desc

	commitMu sync.Mutex
	commits  map[string]*checkpoint.Histogram // sink node -> commit durations (this process)
	latency  map[string]*checkpoint.Histogram // sink node -> latency markers' ages (this process; latency.go)
}

func newJobMetrics(job string) *jobMetrics {
	jl := prometheus.Labels{"job_id": job}
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("clinksql_"+name, help, labels, jl)
	}
	sub := []string{"operator", "subtask"}
	return &jobMetrics{
		checkpoints:  d("checkpoints_total", "Checkpoints of the job by mode and outcome (completed, failed, aborted); job totals across restarts.", "mode", "outcome"),
		ckptDuration: d("checkpoint_duration_seconds", "Time from a checkpoint's trigger to its durable COMPLETED marker (completed checkpoints)."),
		ckptSize:     d("checkpoint_size_bytes", "Bytes a completed checkpoint persisted (what each snapshot added, in-flight logs included)."),
		ckptAlign:    d("checkpoint_align_wait_seconds", "Longest time a subtask held an input paused for a completed checkpoint's alignment."),
		ckptInflight: d("checkpoint_inflight_bytes_total", "Bytes of in-flight records captured by completed (unaligned) checkpoints."),
		ckptSwitches: d("checkpoint_adaptive_switches_total", "Flips of the adaptive checkpoint mode (aligned <-> unaligned)."),
		ckptMode:     d("checkpoint_mode", "1 for the mode the job's next checkpoint gets, 0 for the other.", "mode"),

		rowsIn:        d("operator_rows_in_total", "Rows a subtask took from its inputs (counted once across restarts).", sub...),
		rowsOut:       d("operator_rows_out_total", "Rows a subtask emitted (a source's rows read, a sink's rows written).", sub...),
		busy:          d("operator_busy_seconds_total", "Time a subtask spent working (operator code and routing), blocked time excluded.", sub...),
		backpressured: d("operator_backpressured_seconds_total", "Time a subtask was blocked on a full output channel.", sub...),
		watermark:     d("operator_watermark_seconds", "The last watermark a subtask emitted (a sink: its input watermark), Unix seconds.", sub...),
		watermarkLag:  d("operator_watermark_lag_seconds", "Wall-clock time minus the subtask's watermark.", sub...),
		stateBytes:    d("operator_state_bytes", "Size of the subtask's last persisted snapshot.", sub...),

		sourceRecords:    d("source_records_total", "Records a source subtask read.", sub...),
		sourceLagRecords: d("source_lag_records", "Records behind the end of the source's input.", sub...),
		sourceLagBytes:   d("source_lag_bytes", "Bytes behind the end of the source's input.", sub...),
		sinkCommit:       d("sink_commit_seconds", "Duration of a sink subtask's commit of a checkpoint.", "operator"),
		sinkCommitted:    d("sink_committed_bytes_total", "Bytes a sink's commits published.", "operator"),
		sinkLatency:      d("sink_latency_seconds", "Age of the latency markers reaching a sink (time since their source emitted them; JobConfig.LatencyMarkerInterval).", "operator"),

		late:     d("job_late_rows_total", "Rows dropped because the watermark had passed them."),
		bad:      d("job_bad_values_total", "Bad values turned into NULL (errors.mode = 'null')."),
		restarts: d("job_restarts_total", "Restarts of the job by cause (failure, checkpoint, deploy); totals across process restarts.", "cause"),

		commits: map[string]*checkpoint.Histogram{},
		latency: map[string]*checkpoint.Histogram{},
	}
}

func (m *jobMetrics) observeCommit(node string, d time.Duration) {
	m.commitMu.Lock()
	defer m.commitMu.Unlock()
	h := m.commits[node]
	if h == nil {
		h = &checkpoint.Histogram{}
		m.commits[node] = h
	}
	h.Observe(checkpoint.DurationBuckets, d.Seconds())
}

// commitHistogram is a copy of the commit durations of sink node (empty before its first commit).
func (m *jobMetrics) commitHistogram(node string) checkpoint.Histogram {
	m.commitMu.Lock()
	defer m.commitMu.Unlock()
	if h := m.commits[node]; h != nil {
		return h.Clone()
	}
	return checkpoint.Histogram{}
}

var _ prometheus.Collector = (*Job)(nil)

// Describe sends the descriptors of the job's series (prometheus.Collector).
func (j *Job) Describe(ch chan<- *prometheus.Desc) {
	m := j.metrics
	for _, d := range []*prometheus.Desc{m.checkpoints, m.ckptDuration, m.ckptSize, m.ckptAlign, m.ckptInflight, m.ckptSwitches,
		m.ckptMode, m.rowsIn, m.rowsOut, m.busy, m.backpressured, m.watermark, m.watermarkLag, m.stateBytes, m.sourceRecords,
		m.sourceLagRecords, m.sourceLagBytes, m.sinkCommit, m.sinkCommitted, m.sinkLatency, m.late, m.bad, m.restarts} {
		ch <- d
	}
}

// Collect sends the job's series (prometheus.Collector): its totals (persisted with the checkpoint history, so
// counters carry on across restarts of the job and of the process) and the figures of every subtask. Series
// whose value is unknown (no watermark yet, a lag the source cannot tell) are left out.
func (j *Job) Collect(ch chan<- prometheus.Metric) {
	m := j.metrics
	now := time.Now()
	t := j.history.Totals()
	for _, mode := range []checkpoint.Mode{checkpoint.Aligned, checkpoint.Unaligned} {
		for _, o := range []checkpoint.Outcome{checkpoint.Completed, checkpoint.Failed, checkpoint.Aborted} {
			ch <- prometheus.MustNewConstMetric(m.checkpoints, prometheus.CounterValue, float64(t.Checkpoints[mode][o]),
				mode.String(), strings.ToLower(o.String()))
		}
	}
	hist := func(d *prometheus.Desc, h checkpoint.Histogram, bounds []float64, labels ...string) {
		ch <- prometheus.MustNewConstHistogram(d, h.Count, h.Sum, h.Map(bounds), labels...)
	}
	hist(m.ckptDuration, t.Duration, checkpoint.DurationBuckets)
	hist(m.ckptSize, t.Size, checkpoint.SizeBuckets)
	hist(m.ckptAlign, t.AlignWait, checkpoint.DurationBuckets)
	ch <- prometheus.MustNewConstMetric(m.ckptInflight, prometheus.CounterValue, float64(t.InflightBytes))
	ch <- prometheus.MustNewConstMetric(m.ckptSwitches, prometheus.CounterValue, float64(t.AdaptiveSwitches))
	st := j.Status()
	for _, mode := range []checkpoint.Mode{checkpoint.Aligned, checkpoint.Unaligned} {
		v := 0.0
		if st.Mode == mode {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(m.ckptMode, prometheus.GaugeValue, v, mode.String())
	}
	ch <- prometheus.MustNewConstMetric(m.late, prometheus.CounterValue, float64(st.Late))
	ch <- prometheus.MustNewConstMetric(m.bad, prometheus.CounterValue, float64(st.BadValues))
	for _, cause := range []string{RestartFailure, RestartCheckpoint, RestartDeploy} {
		ch <- prometheus.MustNewConstMetric(m.restarts, prometheus.CounterValue, float64(st.RestartsByCause[cause]), cause)
	}

	for _, s := range j.subtasksAt(now) {
		lv := []string{s.Node, strconv.Itoa(s.Subtask)}
		counter := func(d *prometheus.Desc, v float64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, lv...)
		}
		gauge := func(d *prometheus.Desc, v float64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, lv...)
		}
		counter(m.rowsIn, float64(s.RowsIn))
		counter(m.rowsOut, float64(s.RowsOut))
		counter(m.busy, s.Busy.Seconds())
		counter(m.backpressured, s.Backpressured.Seconds())
		if s.Watermark != MinWatermark && s.Watermark != MaxWatermark {
			wm := time.UnixMicro(s.Watermark)
			gauge(m.watermark, float64(s.Watermark)/1e6)
			gauge(m.watermarkLag, now.Sub(wm).Seconds())
		}
		gauge(m.stateBytes, float64(s.StateBytes))
		switch s.Kind {
		case SourceNode:
			counter(m.sourceRecords, float64(s.RowsOut))
			if s.LagRecords >= 0 {
				gauge(m.sourceLagRecords, float64(s.LagRecords))
			}
			if s.LagBytes >= 0 {
				gauge(m.sourceLagBytes, float64(s.LagBytes))
			}
		}
	}
	for _, n := range j.g.Nodes {
		if n.Kind != SinkNode {
			continue
		}
		var bytes int64
		known := false
		for _, st := range j.subs[n.index] {
			b, ok := st.committedBytes()
			bytes += b
			known = known || ok
		}
		if known {
			ch <- prometheus.MustNewConstMetric(m.sinkCommitted, prometheus.CounterValue, float64(bytes), n.ID)
		}
		hist(m.sinkCommit, m.commitHistogram(n.ID), checkpoint.DurationBuckets, n.ID)
		if j.cfg.LatencyMarkerInterval > 0 {
			hist(m.sinkLatency, j.SinkLatency(n.ID), LatencyBuckets, n.ID)
		}
	}
}

// Register registers the job's collector with reg, replacing the collector of an earlier Job of the same name
// (the same job deployed again in this process: ALTER JOB RESUME).
func (j *Job) Register(reg prometheus.Registerer) error {
	err := reg.Register(j)
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		reg.Unregister(are.ExistingCollector)
		err = reg.Register(j)
	}
	return err
}
