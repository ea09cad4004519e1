package crash

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/clinksql/clinksql/tests/kafkatest"
)

// clinksqlBin is the clinksql binary, built once for the suite: the harness crashes the real thing.
var clinksqlBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "clinksql-crash-bin")
	if err != nil {
		panic(err)
	}
	clinksqlBin = filepath.Join(dir, "clinksql")
	args := []string{"build", "-o", clinksqlBin}
	if os.Getenv("CRASH_RACE") == "1" {
		args = append(args, "-race")
	}
	build := exec.Command("go", append(args, "github.com/clinksql/clinksql/cmd/clinksql")...)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building clinksql:", err)
		os.Exit(2)
	}
	code := m.Run()
	os.RemoveAll(dir)
	if kafkaUsed {
		if bin, err := kafkatest.Binary(); err == nil { // built by the first iteration: the same path
			os.RemoveAll(filepath.Dir(bin))
		}
	}
	os.Exit(code)
}

// seeds returns the iterations' seeds: CRASH_SEED (default 1) and the ones after it; CRASH_N of them (default 4
// with -short, 200 without; 1 when CRASH_SEED is given without CRASH_N, to replay one iteration).
func seeds(t *testing.T) []int64 {
	base := int64(1)
	n := 200
	if testing.Short() {
		n = 4
	}
	if v := os.Getenv("CRASH_SEED"); v != "" {
		s, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatalf("CRASH_SEED=%q: %v", v, err)
		}
		base, n = s, 1
	}
	if v := os.Getenv("CRASH_N"); v != "" {
		c, err := strconv.Atoi(v)
		if err != nil || c < 1 {
			t.Fatalf("CRASH_N=%q: want a positive number", v)
		}
		n = c
	}
	out := make([]int64, n)
	for i := range out {
		out[i] = base + int64(i)
	}
	return out
}

// pickDriver: CRASH_DRIVER=serve (the default) or exec.
func pickDriver(t *testing.T) driver {
	switch v := os.Getenv("CRASH_DRIVER"); v {
	case "exec":
		return execDriver{}
	case "serve", "":
		return serveDriver{}
	default:
		t.Fatalf("CRASH_DRIVER=%q: serve or exec", v)
	}
	return nil
}

// stats are the suite's figures.
type stats struct {
	iterations int
	kills      int // SIGKILLs that hit a running process
	termKills  int // of which during a graceful stop (SIGTERM first)
	termExits  int // SIGTERMs whose graceful stop ended before the SIGKILL came
	early      int // runs that ended by themselves before their kill point (exec --wait only)
	byMode     map[string]int
	aimed      map[lineKind]int // kills on a server log line (the others came at a random moment)
	missed     map[lineKind]int // kills aimed at a line that did not come: they fell back to their moment
	paused     int              // aimed kills during which the broker was stopped
	inDoubt    inDoubtCounts
	kafka      int // iterations with the Kafka pipeline
}

// TestCrashKill9 is the crash harness of the real binary: per iteration, a throttled bounded datagen stream feeds a
// windowed aggregate into a Parquet sink, a filtered projection into a CSV sink, an interval self-join (a
// two-input keyed operator) into another CSV sink and an updating GROUP BY into an upsert CSV sink (checked once its
// changelog is applied); the process is killed with
// SIGKILL at seeded random moments (1 to 3 times; a quarter of them in the middle of a graceful stop that a SIGTERM
// began), restarted on the same data directory each time (the engine re-deploys the jobs from their last
// completed checkpoints), and finally run until every job is FINISHED. The committed output must equal, as a
// multiset, both a failure-free run of the same pipeline in a fresh data directory and the result computed in Go
// from the generator's definition: nothing lost, nothing twice.
//
// CRASH_N iterations (default 4 with -short, 200 otherwise), seeds from CRASH_SEED (default 1). A failing
// iteration prints its seed and keeps its data directory and logs in /tmp/crash-<seed>.
func TestCrashKill9(t *testing.T) {
	drv := pickDriver(t)
	st := &stats{byMode: map[string]int{}, aimed: map[lineKind]int{}, missed: map[lineKind]int{}}
	start := time.Now()
	for _, seed := range seeds(t) {
		cfg := newIterConfig(seed)
		name := fmt.Sprintf("seed-%d-%s-p%d", seed, cfg.Mode, cfg.Parallelism)
		t.Run(name, func(t *testing.T) {
			runIteration(t, drv, cfg, st)
			st.iterations++
			st.byMode[fmt.Sprintf("%s/p%d", cfg.Mode, cfg.Parallelism)]++
		})
	}
	t.Logf("driver %s: %d iterations, %d kill -9s (%d of them during a graceful stop), %d graceful stops completed "+
		"before the kill, %d runs ended before their kill point; %v; wall time %s",
		drv.name(), st.iterations, st.kills, st.termKills, st.termExits, st.early, st.byMode, time.Since(start).Round(time.Second))
	t.Logf("kafka: %d iterations with the Kafka pipeline; kills aimed at a log line: %d between COMPLETED and the "+
		"commit, %d during in-doubt resolution (%d of them with the broker stopped; %d and %d found no such line and fell "+
		"back to their moment); %s", st.kafka, st.aimed[onCompleted], st.aimed[onInDoubt], st.paused,
		st.missed[onCompleted], st.missed[onInDoubt], st.inDoubt)
}

// newIteration makes an iteration's directories; when the test ends it kills the iteration's processes and, if
// the test failed or CRASH_KEEP=1, keeps the directory as /tmp/<keep>-<seed>, telling how to replay a failure
// (go test -run <test>; what: shown after the seed).
func newIteration(t *testing.T, cfg *iterConfig, keep, test, what string) *iteration {
	dir := t.TempDir()
	it := &iteration{cfg: cfg, dir: dir, data: filepath.Join(dir, "data"), logs: filepath.Join(dir, "logs")}
	if err := os.MkdirAll(it.logs, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, p := range it.procs {
			p.kill()
		}
		if t.Failed() || os.Getenv("CRASH_KEEP") == "1" {
			kept := fmt.Sprintf("/tmp/%s-%d", keep, cfg.Seed)
			os.RemoveAll(kept)
			if out, err := exec.Command("cp", "-a", dir, kept).CombinedOutput(); err != nil {
				t.Logf("keeping %s: %v %s", dir, err, out)
				return
			}
			if t.Failed() {
				t.Logf("FAILED seed %d%s: data directory and logs kept in %s; replay with "+
					"CRASH_SEED=%d go test -run %s -v ./tests/crash/", cfg.Seed, what, kept, cfg.Seed, test)
			}
		}
	})
	return it
}

// runIteration runs one seeded iteration and checks its output, counting into st.
func runIteration(t *testing.T, drv driver, cfg *iterConfig, st *stats) {
	t.Logf("%s (driver %s)", cfg, drv.name())
	began := time.Now()
	it := newIteration(t, cfg, "crash", "TestCrashKill9", " ("+drv.name()+")")
	dir := it.dir
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	var kr *kafkaRun
	if cfg.Kafka {
		kr = startKafka(t, it) // before the reference, which reads its topic too
		st.kafka++
	}
	// The failure-free reference runs alongside, in its own data directory.
	refDir := filepath.Join(dir, "reference")
	refDone := make(chan error, 1)
	go func() { refDone <- runReference(it, refDir) }()

	// A kill aimed at a log line arms a trigger before the process it kills starts.
	var hit <-chan struct{}
	arm := func(i int) {
		hit, it.arm = nil, nil
		if i < len(cfg.Kills) && cfg.Kills[i].On != "" {
			it.arm = newLineTrigger(cfg.Kills[i])
			hit = it.arm.hit
		}
	}
	arm(0)
	var at []string // per kill: the process's age and the committed files (Parquet + CSV) after it
	p, err := drv.first(ctx, it)
	if err != nil {
		<-refDone
		t.Fatalf("first run: %v", err)
	}
	if kr != nil {
		kr.produce(cfg)
	}
	for i, k := range cfg.Kills {
		// The kill clock starts when the pipeline is set up (first run) or when the process starts (restarts: the
		// kill may land while the engine opens and restores).
		from := p.started
		if i == 0 {
			from = time.Now()
		}
		wait, aimed := k.After, k.On != "" && drv.name() == "serve"
		if aimed {
			wait = k.Fallback
		}
		select {
		case <-p.exited:
			// exec --wait: the jobs finished before the kill point.
			if p.err != nil {
				<-refDone
				t.Fatalf("run %d exited with %v before its kill point\n%s", it.runs, p.err, tail(p.log, 30))
			}
			st.early++
		case <-hit:
			how := ""
			if k.Pause > 0 {
				// The walk hears nothing from the broker; the server dies while it retries.
				if err := kr.cluster.Pause(); err != nil {
					t.Fatal(err)
				}
				time.Sleep(k.Pause)
				how = ", broker paused"
				st.paused++
			}
			p.kill()
			if k.Pause > 0 {
				if err := kr.cluster.Resume(); err != nil {
					t.Fatal(err)
				}
			}
			if p.killed.Load() {
				st.kills++
				st.aimed[k.On]++
			}
			at = append(at, fmt.Sprintf("%s(%s#%d%s):%d+%d", time.Since(p.started).Round(time.Millisecond), k.On, k.Nth, how,
				countFiles(filepath.Join(it.data, "out", "agg"), "*.parquet"), countFiles(filepath.Join(it.data, "out", "raw"), "*.csv")))
		case <-time.After(time.Until(from.Add(wait))):
			how := ""
			if k.On != "" && aimed {
				how = fmt.Sprintf("(no %s line)", k.On)
				st.missed[k.On]++
			}
			if k.Term {
				p.terminate(k.Grace)
				how = "(TERM)"
				switch {
				case p.killed.Load():
					st.termKills++
				case diedOfSignal(p):
					// SIGTERM before the process installed its handler: the default action, a crash like SIGKILL.
					how = "(TERM before the handler)"
					st.kills++
				default:
					how = fmt.Sprintf("(TERM, exit %v)", p.err)
					st.termExits++
					if p.err != nil && drv.name() == "serve" {
						t.Errorf("run %d: a graceful stop (SIGTERM) exited with %v\n%s", it.runs, p.err, tail(p.log, 30))
					}
				}
			} else {
				p.kill()
			}
			if p.killed.Load() {
				st.kills++
			}
			at = append(at, fmt.Sprintf("%s%s:%d+%d", time.Since(p.started).Round(time.Millisecond), how,
				countFiles(filepath.Join(it.data, "out", "agg"), "*.parquet"), countFiles(filepath.Join(it.data, "out", "raw"), "*.csv")))
		}
		arm(i + 1)
		if p, err = drv.restart(ctx, it); err != nil {
			<-refDone
			t.Fatalf("restart: %v", err)
		}
	}
	if err := drv.finish(ctx, it, p); err != nil {
		<-refDone
		t.Fatalf("last run: %v", err)
	}
	crashed := time.Since(began)
	if err := <-refDone; err != nil {
		t.Fatal(err)
	}
	if kr != nil {
		if err := <-kr.done; err != nil {
			t.Fatalf("the producer of the Kafka input: %v", err)
		}
	}
	checkOutput(t, it, refDir, kr)
	n, err := countInDoubt(it.logs)
	if err != nil {
		t.Fatal(err)
	}
	st.inDoubt.add(n)
	verdict := "ok"
	if t.Failed() {
		verdict = "FAILED"
	}
	t.Logf("%s: %d runs, killed at %v, %s; %s", verdict, it.runs, at, crashed.Round(time.Millisecond), n)
}

// diedOfSignal reports whether an exited process was ended by a signal rather than exiting.
func diedOfSignal(p *proc) bool {
	ws, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled()
}

func countFiles(dir, pattern string) int {
	m, _ := filepath.Glob(filepath.Join(dir, pattern))
	return len(m)
}

// checkOutput compares the committed output of the crashed runs, of the reference run and of the Go model. With
// the Kafka pipeline (kr) its sinks too: the exactly-once topic ("kafka", read read_committed), the Parquet
// ("kagg") and the CSV ("kraw") sink.
func checkOutput(t *testing.T, it *iteration, refDir string, kr *kafkaRun) {
	rows := it.cfg.generate()
	model := map[string][]string{"agg": modelAgg(it.cfg, rows), "raw": modelCSV(rows), "join": modelJoin(it.cfg, rows),
		"upd": modelUpd(rows), "part": modelCSV(rows)}
	sinks := []string{"agg", "raw", "join", "upd", "part"}
	if kr != nil {
		model["kafka"], model["kagg"], model["kraw"] = model["agg"], model["agg"], model["raw"]
		sinks = append(sinks, "kafka", "kagg", "kraw")
	}
	read := func(root, sink string) *committed {
		var c *committed
		var err error
		switch {
		case sink == "kafka" && root == refDir:
			return readKafkaAgg(t, kr.cluster, topicAggRef)
		case sink == "kafka":
			return readKafkaAgg(t, kr.cluster, topicAgg)
		case sink == "agg" || sink == "kagg":
			c, err = readCommittedParquet(filepath.Join(root, "out", sink), aggColumns)
		case sink == "part":
			c, err = readPartitionedCSV(filepath.Join(root, "out", sink), "k", 2)
		default:
			c, err = readCommittedCSV(filepath.Join(root, "out", sink))
		}
		if err == nil && sink == "upd" {
			// A changelog's rows depend on how the input was batched (a crash changes that); what it leaves does not.
			c, err = applyChangelog(c)
		}
		if err != nil {
			t.Fatalf("reading %s output: %v", sink, err)
		}
		return c
	}
	for _, sink := range sinks {
		ref := read(refDir, sink)
		got := read(it.data, sink)
		if d := diff(ref, model[sink]); d != "" {
			t.Errorf("%s sink: the failure-free reference run differs from the Go model of the generator: %s", sink, d)
		}
		if d := diff(got, ref.rows); d != "" {
			t.Errorf("%s sink after the crashes, against the failure-free run: %s", sink, d)
		} else if d := diff(got, model[sink]); d != "" {
			t.Errorf("%s sink after the crashes, against the Go model: %s", sink, d)
		}
		if sink == "agg" && it.readBack != "" {
			var sumN int64
			for _, r := range got.rows {
				n, _ := strconv.ParseInt(strings.Split(r, "|")[3], 10, 64)
				sumN += n
			}
			if want := fmt.Sprintf("%d|%d", len(got.rows), sumN); it.readBack != want {
				t.Errorf("agg sink read back through a parquet stream: COUNT(*)|SUM(n) = %s, the files hold %s", it.readBack, want)
			}
		}
	}
}
