package engine

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"os"
	"runtime/metrics"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/clinksql/clinksql/state"
)

// BenchmarkGroupAggLargeState is issue 15's large-state baseline: an updating COUNT/SUM GROUP BY over an
// unthrottled datagen stream with many keys, through the real engine (Open, Session.Execute, a blackhole sink),
// checkpoints every second, until the bounded job has finished and committed its final checkpoint.
//
// LARGE_STATE_ROWS is the stream's rows (default 2,000,000) and LARGE_STATE_KEYS its key space (default the row
// count). With as many keys as rows the key is a sequence 0, 1, 2, ..., so every row is a new group; otherwise it
// is drawn at random from [0, keys) (issue 15's 5M rows over 20M keys: LARGE_STATE_KEYS=20000000), which reads and
// writes the state in random key order. LARGE_STATE_KEY_KIND = random or sequence overrides that choice (a random
// key over as many keys as rows gives about 63% distinct groups).
//
// It reports group_agg_large_state_rows_per_sec (rows / wall clock, the job's start to its end),
// group_agg_large_state_rows_per_cpu_sec (rows / the process's user+sys CPU time over the same span, as the Nexmark
// figures are per CPU-second),
// group_agg_large_state_rss_mb (the process's peak resident set, VmHWM, reset before the first run where the
// kernel allows it) and group_agg_large_state_checkpoint_p99_ms (the completed checkpoints' durations, the final
// one included). The run: LARGE_STATE_ROWS=50000000 make bench BENCH=GroupAggLargeState.
//
// LARGE_STATE_CACHE is the keyed state's in-memory budget per store (state.SetDefaultCacheBytes; default 256 MB,
// the cap). Each run prints on stderr a table of the run sampled every LARGE_STATE_SAMPLE_MS (default 2000):
// the rows the source had produced, the rate since the previous sample, the process's CPU, resident set and Go
// heap, and the checkpoints completed; then one line per checkpoint (trigger time, duration, bytes written).
// LARGE_STATE_LIVE=1 also prints each sample as it is taken; LARGE_STATE_HEAP_PROFILE=path writes a heap profile
// there at the sample with the largest heap.
func BenchmarkGroupAggLargeState(b *testing.B) {
	rows := envInt(b, "LARGE_STATE_ROWS", 2_000_000)
	keys := envInt(b, "LARGE_STATE_KEYS", rows)
	kind := os.Getenv("LARGE_STATE_KEY_KIND")
	if kind == "" {
		kind = "random"
		if keys == rows {
			kind = "sequence"
		}
	}
	var keyOpts string
	switch kind {
	case "sequence":
		if keys != rows {
			b.Fatalf("LARGE_STATE_KEY_KIND=sequence gives as many keys as rows (%d), not LARGE_STATE_KEYS=%d", rows, keys)
		}
		keyOpts = "'fields.k.kind' = 'sequence', 'fields.k.start' = '0'"
	case "random":
		keyOpts = fmt.Sprintf("'fields.k.kind' = 'random', 'fields.k.min' = '0', 'fields.k.max' = '%d'", keys-1)
	default:
		b.Fatalf("LARGE_STATE_KEY_KIND=%q: want random or sequence", kind)
	}
	cacheBytes := envInt(b, "LARGE_STATE_CACHE", 256<<20)
	sampleEvery := time.Duration(envInt(b, "LARGE_STATE_SAMPLE_MS", 2000)) * time.Millisecond
	state.SetDefaultCacheBytes(cacheBytes)
	defer state.SetDefaultCacheBytes(0)
	b.Logf("rows %d, keys %d (%s), state cache %d MB", rows, keys, kind, cacheBytes>>20)
	// Reset the peak resident set (VmHWM), so that what ran before in this process does not count; not every
	// kernel allows it.
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)

	ctx := context.Background()
	var wall, cpu time.Duration
	var durations []float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		e, err := Open(Config{DataDir: b.TempDir()})
		if err != nil {
			b.Fatal(err)
		}
		s := e.NewSession()
		for _, stmt := range []string{
			"SET checkpoint.interval = '1s'",
			"SET checkpoint.history = '10000'", // the table below lists every checkpoint of a long run
			fmt.Sprintf("CREATE TABLE s (k BIGINT, v BIGINT) WITH (connector = 'datagen', 'number-of-rows' = '%d', "+
				"%s, 'fields.v.kind' = 'random', 'fields.v.min' = '0', 'fields.v.max' = '1000')", rows, keyOpts),
			"CREATE SINK out (k BIGINT, n BIGINT, total BIGINT) WITH (connector = 'blackhole')",
		} {
			if _, err := s.Execute(ctx, stmt); err != nil {
				b.Fatalf("%s: %v", stmt, err)
			}
		}
		b.StartTimer()
		start, cpu0 := time.Now(), cpuTime(b)
		if _, err := s.Execute(ctx, "INSERT INTO out SELECT k, COUNT(*), SUM(v) FROM s GROUP BY k"); err != nil {
			b.Fatal(err)
		}
		stop := make(chan struct{})
		samples := make(chan string, 1)
		go func() {
			samples <- sampleRun(b, e, start, cpu0, sampleEvery, os.Getenv("LARGE_STATE_LIVE") != "", stop)
		}()
		err = e.WaitBounded(ctx, nil)
		close(stop)
		table := <-samples
		if err != nil {
			b.Fatal(err)
		}
		d := time.Since(start)
		wall += d
		cpu += cpuTime(b) - cpu0
		b.StopTimer()
		jobs := e.JobInfos()
		if len(jobs) != 1 || jobs[0].State != "FINISHED" {
			b.Fatalf("jobs %+v: want one FINISHED", jobs)
		}
		// One line for the history: the testing package keeps only the first 10 lines of a benchmark's log.
		var hist strings.Builder
		fmt.Fprintf(&hist, "%6s %9s %8s %11s %10s\n", "id", "trigger_s", "outcome", "duration_ms", "written_KB")
		for _, c := range e.CheckpointInfos(jobs[0].JobID) {
			fmt.Fprintf(&hist, "%6d %9.1f %8s %11.0f %10d\n", c.CheckpointID, c.TriggerTime.Sub(start).Seconds(),
				c.Outcome, c.DurationMs, c.BytesPersisted>>10)
			if c.Outcome == "COMPLETED" {
				durations = append(durations, c.DurationMs)
			}
		}
		// On stderr: the testing package keeps only the first 10 lines of a benchmark's log.
		fmt.Fprintf(os.Stderr, "large state run %d: %.1f s, %d rows\n%s\ncheckpoints:\n%s\n", i, d.Seconds(), rows, table,
			hist.String())
		if err := e.Close(ctx); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(float64(rows)*float64(b.N)/wall.Seconds(), "group_agg_large_state_rows_per_sec:rows/s")
	b.ReportMetric(float64(rows)*float64(b.N)/cpu.Seconds(), "group_agg_large_state_rows_per_cpu_sec:rows/s")
	b.ReportMetric(float64(vmHWM(b))/(1<<20), "group_agg_large_state_rss_mb:MB")
	b.ReportMetric(percentile(durations, 0.99), "group_agg_large_state_checkpoint_p99_ms:ms")
}

// sampleRun samples the running job every interval until stop is closed and returns the samples as a table.
func sampleRun(b *testing.B, e *Engine, start time.Time, cpu0 time.Duration, every time.Duration, live bool, stop <-chan struct{}) string {
	var out strings.Builder
	fmt.Fprintf(&out, "%7s %11s %12s %9s %8s %8s %11s\n", "time_s", "rows", "rows_per_s", "cpu_pct", "rss_MB", "heap_MB", "checkpoints")
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	t := time.NewTicker(every)
	defer t.Stop()
	var lastRows int64
	var maxHeap uint64
	lastT, lastCPU := start, cpu0
	for {
		select {
		case <-stop:
			return out.String()
		case now := <-t.C:
			var rowsIn, cps int64
			for _, j := range e.JobInfos() {
				rowsIn, cps = j.RowsIn, j.CheckpointsCompleted
			}
			cpu := cpuTime(b)
			metrics.Read(sample)
			dt := now.Sub(lastT).Seconds()
			line := fmt.Sprintf("%7.1f %11d %12.0f %9.0f %8d %8d %11d\n", now.Sub(start).Seconds(), rowsIn,
				float64(rowsIn-lastRows)/dt, 100*(cpu-lastCPU).Seconds()/dt, procStatusKB("VmRSS:")>>10,
				sample[0].Value.Uint64()>>20, cps)
			out.WriteString(line)
			if path := os.Getenv("LARGE_STATE_HEAP_PROFILE"); path != "" && sample[0].Value.Uint64() > maxHeap {
				maxHeap = sample[0].Value.Uint64()
				if f, err := os.Create(path); err == nil {
					_ = pprof.WriteHeapProfile(f)
					f.Close()
				}
			}
			if live {
				fmt.Fprint(os.Stderr, "large state: ", line)
			}
			lastRows, lastT, lastCPU = rowsIn, now, cpu
		}
	}
}

// procStatusKB is a "kB" field of /proc/self/status (0 where there is none).
func procStatusKB(field string) int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, field); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb
		}
	}
	return 0
}

// envInt is an integer environment variable (underscores allowed: 50_000_000), def when it is unset.
func envInt(b *testing.B, name string, def int64) int64 {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.ParseInt(strings.ReplaceAll(v, "_", ""), 10, 64)
	if err != nil || n < 1 {
		b.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}

// cpuTime is the process's user+sys CPU time so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// vmHWM is the process's peak resident set in bytes (/proc/self/status), 0 where there is none.
func vmHWM(b *testing.B) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		b.Logf("peak RSS: %v", err)
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err == nil {
				return kb << 10
			}
		}
	}
	return 0
}

// percentile is the nearest-rank p-quantile of xs (0 when empty).
func percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	i := int(math.Ceil(p*float64(len(s)))) - 1
	return s[max(0, min(i, len(s)-1))]
}
