package exec

import (
	"time"

	"github.com/clinksql/clinksql/checkpoint"
)

// Latency markers (JobConfig.LatencyMarkerInterval) time the way from a source to the sinks, as Flink's do:
//
//   - A source subtask emits a marker, stamped with the clock (JobConfig.Now), right after a batch it emitted, once
//     the interval has passed since its last marker. The marker follows that batch (and its watermark) on every
//     output edge, so its age at a sink is the time the rows emitted just before it took to get there. A source
//     with no rows emits none: there is nothing to time.
//   - Every subtask forwards a marker when it reaches it in its input, after the elements before it on that
//     channel and without handing it to the operator: a window holds its rows until it fires, but not markers,
//     so a marker times the queues and the processing on its way, not a window's firing delay. A subtask with
//     several inputs forwards each marker it takes.
//   - On an edge with several channels (hash, rebalance, broadcast) a marker goes to one channel, round robin (see
//     output.marker); on a forward edge to its one channel.
//   - A sink subtask records now - stamp into its node's histogram (Job.SinkLatency, the Prometheus series
//     clinksql_sink_latency_seconds), before the sink's pre-commit and commit: the age when its result reached the
//     sink's Write, not when a commit published it.
//
// Markers are not rows (no count, no Process, no Write) and not state: an unaligned barrier overtakes them like
// any element, and an in-flight log leaves them out, so a restore replays none.

// LatencyBuckets are the upper bounds, in seconds, of the sink latency histograms: 1 ms steps to 30 ms, where a
// pipeline that keeps up lives, then coarser to a minute.
var LatencyBuckets = []float64{
	0.0005, 0.001, 0.002, 0.003, 0.004, 0.005, 0.006, 0.007, 0.008, 0.009, 0.010, 0.011, 0.012, 0.013, 0.014,
	0.015, 0.016, 0.017, 0.018, 0.019, 0.020, 0.022, 0.024, 0.026, 0.028, 0.030, 0.035, 0.040, 0.045, 0.050,
	0.060, 0.070, 0.080, 0.090, 0.100, 0.125, 0.150, 0.175, 0.200, 0.250, 0.300, 0.400, 0.500, 0.750, 1, 1.5,
	2, 3, 5, 7.5, 10, 15, 20, 30, 60,
}

// markerClock decides when a source subtask emits its next marker.
type markerClock struct {
	every time.Duration
	now   func() time.Time
	last  time.Time
}

func newMarkerClock(cfg JobConfig) *markerClock {
	m := &markerClock{every: cfg.LatencyMarkerInterval, now: cfg.Now}
	if m.every > 0 {
		m.last = m.now()
	}
	return m
}

// due reports whether a marker is due now, and its stamp (Unix nanoseconds) if so. Off, it reads no clock.
func (m *markerClock) due() (int64, bool) {
	if m.every <= 0 {
		return 0, false
	}
	t := m.now()
	if t.Sub(m.last) < m.every {
		return 0, false
	}
	m.last = t
	return t.UnixNano(), true
}

// recordMarker is a sink subtask's handling of a marker: its age goes into the node's histogram.
func (s *subtask) recordMarker(e Element) error {
	age := s.inc.job.cfg.Now().Sub(time.Unix(0, e.Marker))
	s.inc.job.metrics.observeLatency(s.node.ID, max(age, 0))
	return nil
}

func (m *jobMetrics) observeLatency(node string, d time.Duration) {
	m.commitMu.Lock()
	defer m.commitMu.Unlock()
	h := m.latency[node]
	if h == nil {
		h = &checkpoint.Histogram{}
		m.latency[node] = h
	}
	h.Observe(LatencyBuckets, d.Seconds())
}

// SinkLatency is a copy of the latency markers' ages recorded by the subtasks of sink node, in seconds over
// LatencyBuckets, since the Job was made (empty with markers off or before the first one arrived).
func (j *Job) SinkLatency(node string) checkpoint.Histogram {
	m := j.metrics
	m.commitMu.Lock()
	defer m.commitMu.Unlock()
	if h := m.latency[node]; h != nil {
		return h.Clone()
	}
	return checkpoint.Histogram{}
}

// HistogramQuantile estimates the q-quantile (0 < q <= 1) of a cumulative histogram over bounds, interpolating
// linearly inside the bucket it falls in (from 0 for the first); past the last bound it is the last bound. 0 for
// an empty histogram.
func HistogramQuantile(bounds []float64, h checkpoint.Histogram, q float64) float64 {
	if h.Count == 0 || len(h.Buckets) != len(bounds) {
		return 0
	}
	rank := q * float64(h.Count)
	prevBound, prevCount := 0.0, 0.0
	for i, b := range bounds {
		c := float64(h.Buckets[i])
		if c >= rank {
			if c == prevCount {
				return b
			}
			return prevBound + (b-prevBound)*(rank-prevCount)/(c-prevCount)
		}
		prevBound, prevCount = b, c
	}
	return bounds[len(bounds)-1]
}
