package exec_test

import (
	"context"
	"slices"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/clinksql/clinksql/checkpoint"
	"github.com/clinksql/clinksql/exec"
)

// Benchmarks report figures as b.ReportMetric(v, "<name>:<unit>"); `make bench` prints them as BENCH lines.

// discardSink is a 2PC sink that keeps nothing: the benchmarks measure the runtime, not a file format.
type discardSink struct{}

func (discardSink) Open(*exec.TaskContext) error { return nil }
func (discardSink) Write(b exec.Batch) error     { b.Release(); return nil }
func (discardSink) PreCommit(uint64) error       { return nil }
func (discardSink) Commit(uint64) error          { return nil }
func (discardSink) Abort(uint64) error           { return nil }
func (discardSink) Close() error                 { return nil }

// passThrough forwards batches unchanged: a stateless stage.
type passThrough struct {
	exec.NoTimers
	exec.Stateless
}

func (passThrough) Open(*exec.TaskContext) error                        { return nil }
func (passThrough) Process(_ int, b exec.Batch, out exec.Emitter) error { return out.Emit(b) }

// throttled wraps a source so that it produces at most one batch per interval while *on is false.
type throttled struct {
	exec.Source
	every  time.Duration
	always bool
	fast   *atomic.Bool
	last   time.Time
}

func (t *throttled) Produce(ctx context.Context) (exec.SourceResult, error) {
	if t.always || t.fast == nil || !t.fast.Load() {
		if d := time.Until(t.last.Add(t.every)); d > 0 {
			return exec.SourceResult{Status: exec.Idle}, nil
		}
		t.last = time.Now()
	}
	return t.Source.Produce(ctx)
}

func percentile(ds []time.Duration, p float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[min(len(s)-1, int(p*float64(len(s))))]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func startBench(b *testing.B, g *exec.Graph, cfg exec.JobConfig) *exec.Job {
	j, err := exec.NewJob(g, cfg)
	if err != nil {
		b.Fatal(err)
	}
	j.Start(context.Background())
	return j
}

// Checkpoint duration (trigger to completion, fsync on) of a 4-stage, parallelism-2 pipeline without
// backpressure: source -> stateless stage -> keyed window aggregate (Pebble) -> 2PC sink.
func BenchmarkCheckpointDuration(b *testing.B) {
	for range b.N {
		src := seqConfig{seed: 21, rows: 1 << 30, batchRows: 256, keys: 10_000, tsStep: 10}
		g := exec.NewGraph()
		s := g.AddSource("gen", 2, func(sub int) exec.Source {
			return &throttled{Source: newSeqSource(src)(sub), every: time.Millisecond, always: true}
		})
		m := g.AddOperator("map", 2, func(int) exec.Operator { return passThrough{} }, exec.From(s, exec.ForwardExchange()))
		agg := g.AddOperator("agg", 2, newWindowSum(1_000_000), exec.From(m, exec.HashExchange(0))).WithKeyedState()
		g.AddSink("sink", 2, func(int) exec.Sink { return discardSink{} }, exec.From(agg, exec.ForwardExchange()))
		cfg := jobConfig(b, b.TempDir())
		cfg.CheckpointInterval = 100 * time.Millisecond
		j := startBench(b, g, cfg)
		time.Sleep(4 * time.Second)
		ds := j.CheckpointDurations()
		j.Cancel()
		if len(ds) < 10 {
			b.Fatalf("only %d checkpoints completed", len(ds))
		}
		b.ReportMetric(ms(percentile(ds, 0.5)), "ckpt_duration_p50:ms")
		b.ReportMetric(ms(percentile(ds, 0.99)), "ckpt_duration_p99:ms")
	}
}

// spin busy-waits: an operator that costs d per batch.
func spin(d time.Duration) {
	for start := time.Now(); time.Since(start) < d; {
	}
}

// bottleneck runs source a (a batch every 5 ms) and source b (a batch every slowEvery, or as fast as it can while
// *fast) into a two-input aggregate that costs perBatch per batch of b: when b outpaces it, b's channel is full and
// barriers on a arrive first.
func bottleneck(b *testing.B, mode checkpoint.Mode, adaptive *checkpoint.AdaptiveConfig, fast *atomic.Bool, slowEvery, perBatch time.Duration) *exec.Job {
	a := seqConfig{seed: 31, rows: 1 << 30, batchRows: 64, keys: 100, tsStep: 10}
	src := seqConfig{seed: 32, rows: 1 << 30, batchRows: 64, keys: 100, tsStep: 10}
	g := exec.NewGraph()
	sa := g.AddSource("gen-a", 1, func(sub int) exec.Source {
		return &throttled{Source: newSeqSource(a)(sub), every: 5 * time.Millisecond, always: true}
	})
	sb := g.AddSource("gen-b", 1, func(sub int) exec.Source {
		return &throttled{Source: newSeqSource(src)(sub), every: slowEvery, fast: fast}
	})
	agg := g.AddOperator("agg", 1, func(sub int) exec.Operator {
		w := newWindowSum(1_000_000)(sub).(*windowSum)
		w.slowInput, w.slow = 1, func() { spin(perBatch) }
		return w
	}, exec.From(sa, exec.ForwardExchange()), exec.From(sb, exec.ForwardExchange()))
	g.AddSink("sink", 1, func(int) exec.Sink { return discardSink{} }, exec.From(agg, exec.ForwardExchange()))
	cfg := jobConfig(b, b.TempDir())
	cfg.CheckpointInterval = 0
	cfg.CheckpointMode = mode
	cfg.Adaptive = adaptive
	cfg.ChannelCapacity = 64
	if adaptive != nil {
		cfg.CheckpointInterval = 100 * time.Millisecond
	}
	return startBench(b, g, cfg)
}

// Checkpoint duration aligned over unaligned at a two-input bottleneck whose slow input's channel is full while
// the barrier on the other input arrives first. fsync is off here: the figure isolates alignment from the disk.
func BenchmarkBackpressureAlignedOverUnaligned(b *testing.B) {
	b.Setenv("CLINK_STATE_FSYNC", "0")
	for range b.N {
		median := map[checkpoint.Mode]time.Duration{}
		for _, mode := range []checkpoint.Mode{checkpoint.Aligned, checkpoint.Unaligned} {
			// b sends a batch every 3 ms to an operator that takes 4 ms for one: its channel fills without b
			// spinning on the second core.
			j := bottleneck(b, mode, nil, new(atomic.Bool), 3*time.Millisecond, 4*time.Millisecond)
			var ds []time.Duration
			for range 10 {
				for deadline := time.Now().Add(5 * time.Second); j.Pressure() < 0.95 && time.Now().Before(deadline); {
					time.Sleep(5 * time.Millisecond) // wait until the slow input's channel is full again
				}
				start := time.Now()
				if _, err := j.Checkpoint(context.Background()); err != nil {
					b.Fatal(err)
				}
				ds = append(ds, time.Since(start))
			}
			j.Cancel()
			median[mode] = percentile(ds, 0.5)
		}
		b.ReportMetric(ms(median[checkpoint.Aligned]), "ckpt_backpressure_aligned_p50:ms")
		b.ReportMetric(ms(median[checkpoint.Unaligned]), "ckpt_backpressure_unaligned_p50:ms")
		b.ReportMetric(float64(median[checkpoint.Aligned])/float64(median[checkpoint.Unaligned]), "ckpt_backpressure_aligned_over_unaligned:x")
	}
}

// Adaptive mode on a workload whose pressure comes and goes: the slow input alternates between throttled (calm)
// and flooding (pressured) every second, with a checkpoint every 100 ms.
func BenchmarkAdaptiveMode(b *testing.B) {
	b.Setenv("CLINK_STATE_FSYNC", "0")
	for range b.N {
		fast := new(atomic.Bool)
		j := bottleneck(b, checkpoint.Aligned, &checkpoint.AdaptiveConfig{PressureThreshold: 0.5, WindowsToUnaligned: 3, WindowsToAligned: 3}, fast, 20*time.Millisecond, time.Millisecond)
		for phase := range 6 {
			fast.Store(phase%2 == 1)
			time.Sleep(time.Second)
		}
		ds := j.CheckpointDurations()
		switches := j.AdaptiveSwitches()
		j.Cancel()
		b.ReportMetric(float64(switches), "ckpt_adaptive_switches:count")
		b.ReportMetric(ms(percentile(ds, 0.99)), "ckpt_adaptive_p99:ms")
		b.ReportMetric(ms(percentile(ds, 0.5)), "ckpt_adaptive_p50:ms")
	}
}

// Elapsed time of a fixed bounded pipeline with a checkpoint every 100 ms over the same run with only the final
// checkpoint (fsync on): 2 x 2 sources of 4M rows -> a keyed 1-second tumbling COUNT/SUM over 1000 keys
// (Pebble) -> a 2PC sink, parallelism 2.
func BenchmarkCheckpointOverhead(b *testing.B) {
	run := func(interval time.Duration) (elapsed, cpu time.Duration) {
		a := seqConfig{seed: 41, rows: 4_000_000, batchRows: 1024, keys: 1000, tsStep: 10}
		c := seqConfig{seed: 42, rows: 4_000_000, batchRows: 1024, keys: 1000, tsStep: 10}
		cfg := jobConfig(b, b.TempDir())
		cfg.CheckpointInterval = interval
		cpu0 := processCPU()
		start := time.Now()
		g := exec.NewGraph()
		sa := g.AddSource("gen-a", 2, newSeqSource(a))
		sb := g.AddSource("gen-b", 2, newSeqSource(c))
		agg := g.AddOperator("agg", 2, newWindowSum(1_000_000),
			exec.From(sa, exec.HashExchange(0)), exec.From(sb, exec.HashExchange(0))).WithKeyedState()
		g.AddSink("sink", 2, func(int) exec.Sink { return discardSink{} }, exec.From(agg, exec.ForwardExchange()))
		runToEnd(b, g, cfg)
		return time.Since(start), processCPU() - cpu0
	}
	for range b.N {
		// Eleven interleaved pairs; the median of the pairs' ratios: a pair's two runs share the machine's state of
		// the moment, and the median drops the pairs that noise hit on one side only (identical runs vary by
		// +-15% here, in elapsed and in CPU time alike).
		var ratios, cpuRatios []float64
		var baselines []time.Duration
		for range 11 {
			with, withCPU := run(100 * time.Millisecond)
			without, withoutCPU := run(0)
			ratios = append(ratios, float64(with)/float64(without))
			cpuRatios = append(cpuRatios, float64(withCPU)/float64(withoutCPU))
			baselines = append(baselines, without)
		}
		slices.Sort(ratios)
		slices.Sort(cpuRatios)
		b.ReportMetric(ratios[len(ratios)/2], "ckpt_overhead_ratio:x")
		b.ReportMetric(cpuRatios[len(cpuRatios)/2], "ckpt_overhead_cpu_ratio:x")
		b.ReportMetric(ms(percentile(baselines, 0.5)), "ckpt_overhead_baseline:ms")
	}
}

// processCPU is the user+system CPU time this process used so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
