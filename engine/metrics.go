package engine

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/clinksql/clinksql/exec"
)

// jobStates are the states clinksql_jobs counts (a dropped job is not counted).
var jobStates = []string{"RUNNING", "RESTARTING", "FINISHED", "FAILED", "STOPPED"}

// jobsCollector is the engine's own collector: clinksql_jobs{state}, the jobs of the catalog by state. Each
// deployed job registers its own series (exec.Job is a prometheus.Collector) from deploy to its drop, its finish
// or the engine's close.
type jobsCollector struct {
	e    *Engine
	desc *prometheus.Desc
}

func newJobsCollector(e *Engine) *jobsCollector {
	return &jobsCollector{e: e, desc: prometheus.NewDesc("clinksql_jobs", "Jobs of the catalog by state.", []string{"state"}, nil)}
}

func (c *jobsCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *jobsCollector) Collect(ch chan<- prometheus.Metric) {
	counts := map[string]int{}
	for _, spec := range c.e.cat.Jobs() {
		counts[c.e.jobState(spec)]++ // DROPPED is not among jobStates
	}
	for _, s := range jobStates {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(counts[s]), s)
	}
}

// registerJob adds a deployed job's series to the engine's registry (replacing an earlier deployment's).
func (e *Engine) registerJob(j *exec.Job, id string) {
	if err := j.Register(e.cfg.Registry); err != nil {
		e.log.Warn("job metrics not registered", "job", id, "err", err)
	}
}

// unregisterJob removes a job's series: it was dropped, it finished, or the engine closes.
func (e *Engine) unregisterJob(j *exec.Job) { e.cfg.Registry.Unregister(j) }
