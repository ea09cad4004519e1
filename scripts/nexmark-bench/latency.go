package main

import (
	"context"
	"fmt"
	"io"
	"os"
	osexec "os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/clinksql/clinksql/checkpoint"
	"github.com/clinksql/clinksql/engine"
	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/internal/gctune"
)

// Latency mode (-latency): for each query, the time from a row leaving its source to its result reaching the
// sink, at half of the query's maximum rate, with the runtime's latency markers (exec/latency.go).
//
//  1. The maximum rate: -max-rate when given (events/s, all types), else measured as the wall-clock events per
//     second of a throughput run of the query (its own `clinksql exec` process, -events events).
//  2. The query runs in this process (its collector set as the clinksql binary's, internal/gctune) on an engine
//     with latency markers every -marker-interval, its tables' generators throttled to half that rate ('next-event.rate', over all source subtasks) and unbounded. After
//     -latency-warmup the sink's marker histogram (clinksql_sink_latency_seconds, summed over sink subtasks) is
//     read, and again -latency-duration later: p50 and p99 are those of the markers recorded in between,
//     interpolated in LatencyBuckets (1 ms steps up to 30 ms).
//
// It prints `BENCH nexmark_qN_latency_p50_ms <v> ms` and `BENCH nexmark_qN_latency_p99_ms <v> ms`. Markers bypass
// the operators, as Flink's do: a window does not hold them, so q5's figure is its queueing and processing delay,
// not the 2 s slide its windows wait for (its results come that much later, by the query's definition).
type latencyOpts struct {
	bin, dir       string
	queries        []string
	events         int64
	parallelism    int
	maxRate        float64
	markerInterval time.Duration
	warmup, length time.Duration
	table          string // -table: write the section "latency" of this markdown file
}

func runLatency(o latencyOpts) error {
	gctune.Apply() // the engine runs in this process: with the binary's collector settings, as its figures are
	var rows []string
	for _, q := range o.queries {
		rate := o.maxRate
		if rate <= 0 {
			r := runQuery(o.bin, o.dir, q, o.events, o.parallelism, nil)
			if r.failed != "" {
				return fmt.Errorf("%s: measuring the maximum rate: %s", q, r.failed)
			}
			rate = perSecond(r.events, r.wall)
		}
		half := rate / 2
		h, err := measureLatency(o, q, half)
		if err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
		p50 := exec.HistogramQuantile(exec.LatencyBuckets, h, 0.5)
		p99 := exec.HistogramQuantile(exec.LatencyBuckets, h, 0.99)
		fmt.Printf("# %s: max rate %.0f ev/s, run at %.0f ev/s, parallelism %d, %d markers over %s: p90 %.2f ms, p99.9 %.2f ms, mean %.2f ms\n",
			q, rate, half, o.parallelism, h.Count, o.length, 1000*exec.HistogramQuantile(exec.LatencyBuckets, h, 0.9),
			1000*exec.HistogramQuantile(exec.LatencyBuckets, h, 0.999), 1000*h.Sum/float64(h.Count))
		fmt.Printf("BENCH nexmark_%s_latency_p50_ms %.2f ms\n", q, p50*1000)
		fmt.Printf("BENCH nexmark_%s_latency_p99_ms %.2f ms\n", q, p99*1000)
		rows = append(rows, fmt.Sprintf("| %s | %s | %s | %d | %.2f | %.2f | %.2f |\n", q, human(rate), human(half), h.Count,
			p50*1000, 1000*exec.HistogramQuantile(exec.LatencyBuckets, h, 0.9), p99*1000))
	}
	if o.table == "" {
		return nil
	}
	commit, _ := osexec.Command("git", "rev-parse", "--short", "HEAD").Output()
	var sb strings.Builder
	sb.WriteString("## Nexmark latency\n\n")
	fmt.Fprintf(&sb, "Written by `make bench-nexmark` (nexmark-bench -latency) at commit %s on %s, parallelism %d: each query "+
		"runs unbounded at half of its maximum rate (events/s of all types, the generators throttled by 'next-event.rate'), "+
		"with latency markers every %s per source subtask; after %s of warm-up, the markers reaching the sink in %s give "+
		"the time from a row leaving its source to its result reaching the sink (before the 2PC commit). Markers bypass "+
		"operators as Flink's do, so a window's firing delay (q5: the 2 s slide) is not in them.\n\n",
		strings.TrimSpace(string(commit)), time.Now().UTC().Format("2006-01-02"), o.parallelism, o.markerInterval, o.warmup, o.length)
	sb.WriteString("| query | max rate (ev/s) | run at (ev/s) | markers | p50 (ms) | p90 (ms) | p99 (ms) |\n|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		sb.WriteString(r)
	}
	return writeSection(o.table, "latency", sb.String())
}

// measureLatency runs query q unbounded at rate events/s in an engine of this process and returns the histogram
// (seconds, over exec.LatencyBuckets) of the markers recorded between the warm-up and its end.
func measureLatency(o latencyOpts, q string, rate float64) (checkpoint.Histogram, error) {
	var none checkpoint.Histogram
	data, err := os.MkdirTemp("", "nexmark-latency-"+q+"-")
	if err != nil {
		return none, err
	}
	defer os.RemoveAll(data)
	throttle := func(ddl string) string {
		return strings.Replace(ddl, "'events.num' = '${EVENTS}'",
			"'events.num' = '0', 'next-event.rate' = '"+strconv.FormatFloat(rate, 'f', 0, 64)+"'", 1)
	}
	sql, err := script(o.dir, q, 0, o.parallelism, throttle)
	if err != nil {
		return none, err
	}
	if !strings.Contains(sql, "'next-event.rate'") {
		return none, fmt.Errorf("the DDL of its tables has no 'events.num' = '${EVENTS}' to throttle")
	}
	reg := prometheus.NewRegistry()
	e, err := engine.Open(engine.Config{DataDir: data, Registry: reg, LatencyMarkerInterval: o.markerInterval})
	if err != nil {
		return none, err
	}
	defer e.Close(context.Background())
	ctx := context.Background()
	sess := e.NewSession()
	if err := sess.Run(ctx, sql, engine.NewPrinter(io.Discard, "csv"), func(*engine.Result) {}); err != nil {
		return none, err
	}
	time.Sleep(o.warmup)
	before, err := sinkLatency(reg)
	if err != nil {
		return none, err
	}
	time.Sleep(o.length)
	after, err := sinkLatency(reg)
	if err != nil {
		return none, err
	}
	h := checkpoint.Histogram{Count: after.Count - before.Count, Sum: after.Sum - before.Sum,
		Buckets: make([]uint64, len(exec.LatencyBuckets))}
	for i := range h.Buckets {
		h.Buckets[i] = after.Buckets[i] - before.Buckets[i]
	}
	if h.Count == 0 {
		return none, fmt.Errorf("no latency marker reached the sink in %s", o.length)
	}
	return h, nil
}

// sinkLatency sums the clinksql_sink_latency_seconds series of reg (every sink of the one job) over
// exec.LatencyBuckets.
func sinkLatency(reg *prometheus.Registry) (checkpoint.Histogram, error) {
	h := checkpoint.Histogram{Buckets: make([]uint64, len(exec.LatencyBuckets))}
	mfs, err := reg.Gather()
	if err != nil {
		return h, err
	}
	found := false
	for _, mf := range mfs {
		if mf.GetName() != "clinksql_sink_latency_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			found = true
			addHistogram(&h, m.GetHistogram())
		}
	}
	if !found {
		return h, fmt.Errorf("no clinksql_sink_latency_seconds series (is the job running?)")
	}
	return h, nil
}

func addHistogram(h *checkpoint.Histogram, m *dto.Histogram) {
	h.Count += m.GetSampleCount()
	h.Sum += m.GetSampleSum()
	for _, b := range m.GetBucket() {
		for i, bound := range exec.LatencyBuckets {
			if bound == b.GetUpperBound() {
				h.Buckets[i] += b.GetCumulativeCount()
			}
		}
	}
}
