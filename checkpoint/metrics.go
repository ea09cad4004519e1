package checkpoint

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	mode      *prometheus.CounterVec
	switches  prometheus.Counter
	completed prometheus.Counter
	failed    prometheus.Counter
	duration  prometheus.Histogram
}

// newMetrics builds the coordinator's collectors and registers them with reg (nil: unregistered). A job restarted
// in the same process builds a new Coordinator against the same registry, so an already registered collector is
// adopted rather than treated as an error.
func newMetrics(reg prometheus.Registerer, job string) metrics {
	var labels prometheus.Labels
	if job != "" {
		labels = prometheus.Labels{"job": job}
	}
	m := metrics{
		mode: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "clink_ckpt_mode_total", Help: "Checkpoint barriers issued, by the alignment mode stamped on them.",
			ConstLabels: labels,
		}, []string{"mode"}),
		switches: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "clink_ckpt_adaptive_switch_total", Help: "Adaptive checkpoint mode flips (aligned <-> unaligned).",
			ConstLabels: labels,
		}),
		completed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "clink_ckpt_completed_total", Help: "Checkpoints completed (COMPLETED marker durable).",
			ConstLabels: labels,
		}),
		failed: prometheus.NewCounter(prometheus.CounterOpts{
			Name:        "clink_ckpt_failed_total",
			Help:        "Checkpoints that ended without completing: failed, timed out, discarded during a rewind, or aborted.",
			ConstLabels: labels,
		}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "clink_ckpt_duration_seconds", Help: "Time from trigger to a durable COMPLETED marker.",
			ConstLabels: labels, Buckets: prometheus.ExponentialBuckets(0.005, 2, 14),
		}),
	}
	if reg == nil {
		return m
	}
	m.mode = register(reg, m.mode)
	m.switches = register(reg, m.switches)
	m.completed = register(reg, m.completed)
	m.failed = register(reg, m.failed)
	m.duration = register(reg, m.duration)
	return m
}

func register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing
			}
		}
		// A conflicting collector of another shape under our name is a programming error; keep counting
		// locally rather than fail a job over metrics.
	}
	return c
}
