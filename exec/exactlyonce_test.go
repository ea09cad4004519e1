package exec_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/parquet-go/parquet-go"

	"github.com/clinksql/clinksql/checkpoint"
	"github.com/clinksql/clinksql/connectors/datagen"
	"github.com/clinksql/clinksql/connectors/file"
	pqconn "github.com/clinksql/clinksql/connectors/parquet"
	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/state"
)

// The exactly-once suite: a job of two generators -> a two-input keyed window aggregate (the union is its two
// inputs) -> a 2PC Parquet sink and a 2PC CSV sink, crashed at random points and restarted from its last
// completed checkpoint, until it finishes. Whatever the crashes, each sink's committed output must equal the
// reference result computed straight from the generated rows: no row lost, none duplicated.
//
// Crashes: the real process killed with SIGKILL (a child test process), a file system that fails every write
// from a random point on, and a single transient fsync failure during persist. Modes: aligned, unaligned,
// adaptive. CRASH_N sets the number of iterations (default 200; 6 with -short, 3 with -short under -race).

const (
	eoRowsPerSource = 12_000 // over both subtasks
	eoWindow        = 2_000  // microseconds
	eoKeys          = 40
)

var eoModes = []string{"aligned", "unaligned", "adaptive"}
var eoCrashes = []string{"kill", "faultfs", "fsync"}

func eoGenerator(seed int64, rowsPerSecond float64) func(int) exec.Source {
	return func(int) exec.Source {
		return datagen.New(datagen.Config{
			Schema: eventSchema,
			Fields: []datagen.Field{
				{Kind: datagen.Random, Min: 0, Max: eoKeys - 1},
				{Kind: datagen.Sequence, Start: 0, End: math.MaxInt64, Step: 3},
				{Kind: datagen.Sequence, Start: 1, End: math.MaxInt64},
			},
			Seed: seed, Rows: eoRowsPerSource, BatchRows: 97, RowsPerSecond: rowsPerSecond,
			EventTime: "ts",
		})
	}
}

func eoGraph(out string, seed int64, rowsPerSecond float64) *exec.Graph {
	g := exec.NewGraph()
	a := g.AddSource("gen-a", 2, eoGenerator(seed, rowsPerSecond))
	b := g.AddSource("gen-b", 2, eoGenerator(seed+1, rowsPerSecond))
	agg := g.AddOperator("agg", 2, newWindowSum(eoWindow),
		exec.From(a, exec.HashExchange(0)), exec.From(b, exec.HashExchange(0))).WithKeyedState()
	g.AddSink("parquet", 2, func(int) exec.Sink {
		return pqconn.NewSink(pqconn.SinkConfig{Path: filepath.Join(out, "parquet"), Schema: resultSchema})
	}, exec.From(agg, exec.ForwardExchange()))
	g.AddSink("csv", 2, func(int) exec.Sink {
		return file.NewSink(file.SinkConfig{Path: filepath.Join(out, "csv"), Format: "csv", Schema: resultSchema})
	}, exec.From(agg, exec.ForwardExchange()))
	return g
}

func eoJobConfig(dir, mode string, fs state.FS) exec.JobConfig {
	cfg := exec.JobConfig{
		Name: "eo", Dir: filepath.Join(dir, "job"), FS: fs,
		CheckpointInterval: 15 * time.Millisecond,
		RestartBackoff:     time.Millisecond,
		RestartBudget:      3,
		ChannelCapacity:    4,
		// Latency markers on, after every batch or so: they cross the hash exchange, unaligned barriers overtake
		// them, and they must change nothing in the output.
		LatencyMarkerInterval: time.Millisecond,
	}
	switch mode {
	case "unaligned":
		cfg.CheckpointMode = checkpoint.Unaligned
	case "adaptive":
		cfg.Adaptive = &checkpoint.AdaptiveConfig{PressureThreshold: 0.5, WindowsToUnaligned: 2, WindowsToAligned: 2}
	}
	return cfg
}

// eoExpected is the reference: the window results computed directly from the generators' rows, produced by the
// generators alone, outside any job.
func eoExpected(t testing.TB, seed int64) []string {
	var evs []event
	for _, s := range []int64{seed, seed + 1} {
		for sub := 0; sub < 2; sub++ {
			src := eoGenerator(s, 0)(sub)
			ctx := &exec.TaskContext{Subtask: sub, Parallelism: 2, Alloc: memory.DefaultAllocator}
			if err := src.Open(ctx); err != nil {
				t.Fatal(err)
			}
			for {
				res, err := src.Produce(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				if res.Status == exec.Finished {
					break
				}
				rec := res.Batch.Rec
				k := rec.Column(0).(*array.Int64)
				ts := rec.Column(1).(*array.Timestamp)
				v := rec.Column(2).(*array.Int64)
				for i := 0; i < int(rec.NumRows()); i++ {
					evs = append(evs, event{k.Value(i), int64(ts.Value(i)), v.Value(i)})
				}
				res.Batch.Release()
			}
			src.Close()
		}
	}
	if len(evs) != 2*eoRowsPerSource {
		t.Fatalf("reference has %d rows, want %d", len(evs), 2*eoRowsPerSource)
	}
	return expectedWindows(evs, eoWindow)
}

// committedParquet reads every committed Parquet file of the sink as "key|start|cnt|sum" lines.
func committedParquet(t testing.TB, dir string) []string {
	var out []string
	files, _ := filepath.Glob(filepath.Join(dir, "*.parquet"))
	for _, path := range files {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		st, _ := f.Stat()
		pf, err := parquet.OpenFile(f, st.Size())
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		for _, rg := range pf.RowGroups() {
			rr := parquet.NewRowGroupReader(rg)
			buf := make([]parquet.Row, 64)
			for {
				n, err := rr.ReadRows(buf)
				for _, row := range buf[:n] {
					out = append(out, fmt.Sprintf("%d|%d|%d|%d", row[0].Int64(), row[1].Int64(), row[2].Int64(), row[3].Int64()))
				}
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatalf("%s: %v", path, err)
				}
			}
			rr.Close()
		}
		f.Close()
	}
	return sortedCopy(out)
}

// committedCSV reads every committed CSV file of the sink; timestamps are in Postgres text form.
func committedCSV(t testing.TB, dir string) []string {
	var out []string
	files, _ := filepath.Glob(filepath.Join(dir, "*.csv"))
	for _, path := range files {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			p := strings.Split(sc.Text(), ",")
			ts, err := time.Parse("2006-01-02 15:04:05.999999", p[1])
			if len(p) != 4 || err != nil {
				t.Fatalf("%s: bad line %q: %v", path, sc.Text(), err)
			}
			out = append(out, fmt.Sprintf("%s|%d|%s|%s", p[0], ts.UnixMicro(), p[2], p[3]))
		}
		f.Close()
	}
	return sortedCopy(out)
}

func sortedCopy(s []string) []string {
	s = append([]string(nil), s...)
	slices.Sort(s)
	return s
}

func eoIterations() int {
	if v, err := strconv.Atoi(os.Getenv("CRASH_N")); err == nil && v > 0 {
		return v
	}
	if testing.Short() {
		if raceEnabled {
			return 3
		}
		return 6
	}
	return 200
}

func TestExactlyOnceUnderCrashes(t *testing.T) {
	n := eoIterations()
	crashes := map[string]int{}
	for it := 0; it < n; it++ {
		seed := int64(1000 + it)
		// Every run of three iterations covers each crash kind, every six each mode with two of them.
		crash := eoCrashes[it%3]
		mode := eoModes[(it+it/3)%3]
		t.Run(fmt.Sprintf("%03d-%s-%s", it, mode, crash), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(seed), 7))
			dir := t.TempDir()
			var injected int
			switch crash {
			case "kill":
				injected = eoRunKilled(t, rng, dir, mode, seed)
			case "faultfs":
				injected = eoRunFaultFS(t, rng, dir, mode, seed)
			case "fsync":
				injected = eoRunFsyncFault(t, rng, dir, mode, seed)
			}
			crashes[crash] += injected
			want := eoExpected(t, seed)
			checkRows(t, committedParquet(t, filepath.Join(dir, "out", "parquet")), want)
			checkRows(t, committedCSV(t, filepath.Join(dir, "out", "csv")), want)
		})
	}
	t.Logf("%d iterations; crashes injected: %v", n, crashes)
}

// eoRunFaultFS runs the job on a file system that fails every write from a random point on, up to three times
// (each time the job exhausts its restarts and fails), then once on a healthy disk to the end.
func eoRunFaultFS(t *testing.T, rng *rand.Rand, dir, mode string, seed int64) int {
	out := filepath.Join(dir, "out")
	injected := 0
	for range 1 + rng.IntN(3) {
		fs := &state.FaultFS{Inner: state.OS, FailAfter: int64(rng.IntN(400))}
		j, err := exec.NewJob(eoGraph(out, seed, 0), eoJobConfig(dir, mode, fs))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		j.Start(ctx)
		err = j.Wait(ctx)
		cancel()
		if fs.Tripped() {
			injected++
		} else if err != nil {
			t.Fatalf("job failed without a fault: %v", err)
		} else {
			return injected // finished before the fault point
		}
	}
	runToEnd(t, eoGraph(out, seed, 0), eoJobConfig(dir, mode, nil))
	return injected
}

// eoRunFsyncFault fails one fsync of a checkpoint persist: the checkpoint fails and the job rewinds in-process.
func eoRunFsyncFault(t *testing.T, rng *rand.Rand, dir, mode string, seed int64) int {
	fs := &syncFailFS{FS: state.OS}
	fs.n.Store(int64(1 + rng.IntN(40)))
	runToEnd(t, eoGraph(filepath.Join(dir, "out"), seed, 0), eoJobConfig(dir, mode, fs))
	if fs.fired.Load() {
		return 1
	}
	return 0
}

// eoRunKilled runs the job in a child process, SIGKILLs it at a random moment up to three times, then lets a last
// child run it to the end.
func eoRunKilled(t *testing.T, rng *rand.Rand, dir, mode string, seed int64) int {
	child := func() *osexec.Cmd {
		cmd := osexec.Command(os.Args[0], "-test.run=^TestExactlyOnceChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), "CLINK_EO_CHILD=1", "CLINK_EO_DIR="+dir, "CLINK_EO_MODE="+mode,
			"CLINK_EO_SEED="+strconv.FormatInt(seed, 10))
		cmd.Stderr = os.Stderr
		return cmd
	}
	killed := 0
	for range 1 + rng.IntN(3) {
		cmd := child()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		// The crash point: a random moment of a run that takes about a second.
		select {
		case err := <-exited:
			if err != nil {
				t.Fatalf("child failed: %v", err)
			}
			return killed // it finished before the kill
		case <-time.After(time.Duration(20+rng.IntN(900)) * time.Millisecond):
		}
		cmd.Process.Signal(syscall.SIGKILL)
		<-exited
		killed++
	}
	cmd := child()
	if out, err := cmd.Output(); err != nil {
		t.Fatalf("final child run: %v\n%s", err, out)
	}
	return killed
}

// TestExactlyOnceChild is the child process of the kill runs; it does nothing unless started by one.
func TestExactlyOnceChild(t *testing.T) {
	if os.Getenv("CLINK_EO_CHILD") != "1" {
		t.Skip("child process of TestExactlyOnceUnderCrashes")
	}
	dir := os.Getenv("CLINK_EO_DIR")
	seed, _ := strconv.ParseInt(os.Getenv("CLINK_EO_SEED"), 10, 64)
	// Throttled so that a run takes about a second and the parent's kill lands mid-run.
	runToEnd(t, eoGraph(filepath.Join(dir, "out"), seed, eoRowsPerSource/2), eoJobConfig(dir, os.Getenv("CLINK_EO_MODE"), nil))
}
