package exec_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clinksql/clinksql/checkpoint"
	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/state"
)

const windowSize = 1000 // microseconds

// pipeline builds: two sources -> a keyed window aggregate over both (a union as two inputs) -> a 2PC sink.
func pipeline(a, b seqConfig, parallelism int, store *txnStore) *exec.Graph {
	g := exec.NewGraph()
	sa := g.AddSource("gen-a", parallelism, newSeqSource(a))
	sb := g.AddSource("gen-b", parallelism, newSeqSource(b))
	agg := g.AddOperator("agg", parallelism, newWindowSum(windowSize),
		exec.From(sa, exec.HashExchange(0)), exec.From(sb, exec.HashExchange(0))).WithKeyedState()
	g.AddSink("sink", parallelism, newMemSink(store), exec.From(agg, exec.ForwardExchange()))
	return g
}

func jobConfig(t testing.TB, dir string) exec.JobConfig {
	return exec.JobConfig{
		Name: "job", Dir: dir,
		CheckpointInterval: 5 * time.Millisecond,
		RestartBackoff:     time.Millisecond,
	}
}

func runToEnd(t testing.TB, g *exec.Graph, cfg exec.JobConfig) *exec.Job {
	t.Helper()
	j, err := exec.NewJob(g, cfg)
	if err != nil {
		t.Fatal(err)
	}
	runJob(t, j)
	return j
}

// runJob starts j and waits until it finished.
func runJob(t testing.TB, j *exec.Job) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	j.Start(ctx)
	if err := j.Wait(ctx); err != nil {
		t.Fatalf("job: %v", err)
	}
}

func checkRows(t testing.TB, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		missing, extra := diff(want, got), diff(got, want)
		t.Fatalf("committed output differs: %d rows, want %d; missing %d %v; extra %d %v",
			len(got), len(want), len(missing), head(missing), len(extra), head(extra))
	}
}

// diff returns the rows of a (a multiset) not matched in b.
func diff(a, b []string) []string {
	count := map[string]int{}
	for _, r := range b {
		count[r]++
	}
	var out []string
	for _, r := range a {
		if count[r] > 0 {
			count[r]--
		} else {
			out = append(out, r)
		}
	}
	return out
}

func head(s []string) []string { return s[:min(len(s), 5)] }

func events(a, b seqConfig, p int) []event { return append(a.all(p), b.all(p)...) }

// A bounded job of two sources, a keyed aggregate and a 2PC sink commits exactly the reference result, in every
// mode and parallelism, with no Arrow memory leaked. With one key, every batch of the hash exchange is one key (its
// path that sends the whole batch to the key's owner).
func TestBoundedPipelineExactResult(t *testing.T) {
	for _, mode := range []checkpoint.Mode{checkpoint.Aligned, checkpoint.Unaligned} {
		for _, pk := range [][2]int{{1, 50}, {2, 50}, {2, 1}} {
			p, keys := pk[0], pk[1]
			t.Run(fmt.Sprintf("%s/p%d/keys%d", mode, p, keys), func(t *testing.T) {
				mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
				a := seqConfig{name: "a", seed: 1, rows: 3000, batchRows: 64, keys: keys, tsStep: 7}
				b := seqConfig{name: "b", seed: 2, rows: 2000, batchRows: 100, keys: keys, tsStep: 11}
				store := newTxnStore()
				cfg := jobConfig(t, t.TempDir())
				cfg.CheckpointMode = mode
				cfg.Alloc = mem
				j := runToEnd(t, pipeline(a, b, p, store), cfg)
				checkRows(t, store.rows(), expectedWindows(events(a, b, p), windowSize))
				if st := j.Status(); st.State != exec.JobFinished || st.RowsIn != int64(p*(a.rows+b.rows)) {
					t.Fatalf("status %+v", st)
				}
				mem.AssertSize(t, 0)
			})
		}
	}
}

// Without periodic checkpoints the tail is committed by the final coordinated checkpoint, and the job reports
// FINISHED only after that commit: a job reported finished never has uncommitted output.
func TestFinalCheckpointCommitsTailBeforeFinished(t *testing.T) {
	a := seqConfig{seed: 3, rows: 500, batchRows: 50, keys: 10, tsStep: 13}
	b := seqConfig{seed: 4, rows: 500, batchRows: 50, keys: 10, tsStep: 13}
	store := newTxnStore()
	cfg := jobConfig(t, t.TempDir())
	cfg.CheckpointInterval = 0
	j := runToEnd(t, pipeline(a, b, 2, store), cfg)
	checkRows(t, store.rows(), expectedWindows(events(a, b, 2), windowSize))
	if st := j.Status(); st.LastCompleted != 1 {
		t.Fatalf("want exactly the final checkpoint (1) completed, status %+v", st)
	}
	if !checkpoint.IsCompleted(state.OS, j.CheckpointDir(), 1) {
		t.Fatal("final checkpoint has no COMPLETED marker")
	}
}

// flakyOp fails once, when the shared countdown reaches zero: a runtime failure in the middle of a job.
type flakyOp struct {
	exec.Operator
	countdown *atomic.Int64
	always    bool
}

func (f *flakyOp) Process(input int, b exec.Batch, out exec.Emitter) error {
	if f.always || f.countdown.Add(-1) == 0 {
		b.Release()
		return errors.New("injected operator failure")
	}
	return f.Operator.Process(input, b, out)
}

func flakyPipeline(a, b seqConfig, store *txnStore, countdown *atomic.Int64, always bool) *exec.Graph {
	g := exec.NewGraph()
	sa := g.AddSource("gen-a", 2, newSeqSource(a))
	sb := g.AddSource("gen-b", 2, newSeqSource(b))
	agg := g.AddOperator("agg", 2, func(sub int) exec.Operator {
		return &flakyOp{Operator: newWindowSum(windowSize)(sub), countdown: countdown, always: always}
	}, exec.From(sa, exec.HashExchange(0)), exec.From(sb, exec.HashExchange(0))).WithKeyedState()
	g.AddSink("sink", 2, newMemSink(store), exec.From(agg, exec.ForwardExchange()))
	return g
}

// An operator error restarts the whole job from its last completed checkpoint, and the output stays exact: no
// row lost with the failed incarnation, none committed twice.
func TestOperatorFailureRestartsFromLastCheckpoint(t *testing.T) {
	a := seqConfig{seed: 5, rows: 4000, batchRows: 20, keys: 30, tsStep: 5}
	b := seqConfig{seed: 6, rows: 4000, batchRows: 20, keys: 30, tsStep: 5}
	var countdown atomic.Int64
	countdown.Store(300)
	store := newTxnStore()
	j := runToEnd(t, flakyPipeline(a, b, store, &countdown, false), jobConfig(t, t.TempDir()))
	checkRows(t, store.rows(), expectedWindows(events(a, b, 2), windowSize))
	if st := j.Status(); st.Restarts != 1 {
		t.Fatalf("want 1 restart, status %+v", st)
	}
}

// Past its restart budget a job is FAILED, with the operator subtask and the error named, instead of restarting
// forever.
func TestRestartBudgetExhaustedFailsNamingOperator(t *testing.T) {
	a := seqConfig{seed: 5, rows: 100, batchRows: 20, keys: 30, tsStep: 5}
	store := newTxnStore()
	cfg := jobConfig(t, t.TempDir())
	cfg.RestartBudget = 2
	j, err := exec.NewJob(flakyPipeline(a, a, store, new(atomic.Int64), true), cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	j.Start(ctx)
	err = j.Wait(ctx)
	st := j.Status()
	if err == nil || st.State != exec.JobFailed || st.Restarts != 2 || !strings.HasPrefix(st.FailedOperator, "agg-") ||
		!strings.Contains(err.Error(), "injected operator failure") {
		t.Fatalf("err %v, status %+v", err, st)
	}
}

// syncFailFS fails the n-th fsync of a file under a checkpoint directory, once: a transient persist (fsync) error.
type syncFailFS struct {
	state.FS
	n     atomic.Int64
	fired atomic.Bool
}

type syncFailFile struct {
	state.File
	fs *syncFailFS
}

func (f *syncFailFS) Create(name string) (state.File, error) {
	file, err := f.FS.Create(name)
	if err != nil || !strings.Contains(name, "chk-") {
		return file, err
	}
	return syncFailFile{file, f}, nil
}

func (f syncFailFile) Sync() error {
	if f.fs.n.Add(-1) == 0 {
		f.fs.fired.Store(true)
		return errors.New("injected fsync failure")
	}
	return f.File.Sync()
}

// A failed persist fails its checkpoint, which rewinds the whole job to the last completed one; the interval
// whose staged output the failure discarded is produced again, so nothing is lost.
func TestPersistFailureRewindsJob(t *testing.T) {
	a := seqConfig{seed: 7, rows: 3000, batchRows: 20, keys: 20, tsStep: 9}
	b := seqConfig{seed: 8, rows: 3000, batchRows: 20, keys: 20, tsStep: 9}
	fs := &syncFailFS{FS: state.OS}
	// The third fsync is in the first checkpoint (each persists several subtasks' files), whichever checkpoint
	// that is: a faster job may take only its final one, and a later fsync would never come.
	fs.n.Store(3)
	store := newTxnStore()
	cfg := jobConfig(t, t.TempDir())
	cfg.FS = fs
	j := runToEnd(t, pipeline(a, b, 2, store), cfg)
	if !fs.fired.Load() {
		t.Fatalf("the fault was never injected (%d syncs left, status %+v); make the job longer", fs.n.Load(), j.Status())
	}
	checkRows(t, store.rows(), expectedWindows(events(a, b, 2), windowSize))
	if st := j.Status(); st.Restarts < 1 || st.RestartsByCause[exec.RestartCheckpoint] < 1 || st.CheckpointsFailed < 1 {
		t.Fatalf("want a rewind (a restart for a failed checkpoint), status %+v", st)
	}
}

// gateFS blocks the creation of one snapshot (its temp file, or anything under it) until released: a slow disk,
// held deterministically.
type gateFS struct {
	state.FS
	hold    string // the snapshot's path
	entered chan struct{}
	release chan struct{}
	once    sync.Once
}

func (g *gateFS) Create(name string) (state.File, error) {
	tmp := filepath.Join(filepath.Dir(g.hold), "."+filepath.Base(g.hold)) // WriteFsyncRename's temp file
	if strings.HasPrefix(name, g.hold) || strings.HasPrefix(name, tmp) {
		g.once.Do(func() { close(g.entered) })
		<-g.release
	}
	return g.FS.Create(name)
}

// A source stages its offset for each barrier when it emits it, so checkpoint N records N's offset even when its
// persist runs after the source already moved on and staged N+1's (checkpoint 4 holding offset 12 while its
// output ended at 8). Also ack-after-durable: while N's persist is held, N is not completed and has no marker.
func TestSourceOffsetStagedPerBarrier(t *testing.T) {
	gate := make(chan struct{})
	var mu sync.Mutex
	staged := map[int][]int{} // subtask -> offsets staged, barrier by barrier
	a := seqConfig{seed: 9, rows: 1000, batchRows: 10, keys: 5, tsStep: 3, gate: gate,
		snapshotted: func(sub, next int) { mu.Lock(); staged[sub] = append(staged[sub], next); mu.Unlock() }}
	g := exec.NewGraph()
	src := g.AddSource("gen", 1, newSeqSource(a))
	store := newTxnStore()
	agg := g.AddOperator("agg", 1, newWindowSum(windowSize), exec.From(src, exec.ForwardExchange()))
	g.AddSink("sink", 1, newMemSink(store), exec.From(agg, exec.ForwardExchange()))
	dir := t.TempDir()
	fs := &gateFS{FS: state.OS, hold: filepath.Join(checkpoint.SubtaskDir(filepath.Join(dir, "checkpoints"), 1, "gen-0")), entered: make(chan struct{}), release: make(chan struct{})}
	cfg := jobConfig(t, dir)
	cfg.CheckpointInterval = 0
	cfg.FS = fs
	j, err := exec.NewJob(g, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	j.Start(ctx)
	gate <- struct{}{}
	gate <- struct{}{}
	trigger := func() uint64 {
		id, err := j.TriggerCheckpoint()
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	first := trigger()
	gate <- struct{}{} // the barrier is taken after this batch
	<-fs.entered       // checkpoint 1's source persist is now held
	second := trigger()
	gate <- struct{}{}
	gate <- struct{}{}
	waitFor(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(staged[0]) == 2 })
	if checkpoint.IsCompleted(state.OS, j.CheckpointDir(), 1) || j.Status().LastCompleted != 0 {
		t.Fatal("checkpoint 1 completed while a participant's persist was still held")
	}
	close(fs.release)
	for _, id := range []uint64{first, second} {
		if err := j.WaitCheckpoint(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	offsets := staged[0]
	mu.Unlock()
	if offsets[0] == offsets[1] {
		t.Fatalf("test did not move the source between barriers: %v", offsets)
	}
	for i, want := range offsets {
		id := uint64(i + 1)
		if got := persistedOffset(t, checkpoint.SubtaskDir(j.CheckpointDir(), id, "gen-0")); got != want {
			t.Fatalf("checkpoint %d persisted offset %d, want the offset staged at its barrier, %d", id, got, want)
		}
	}
	j.Cancel()
}

func persistedOffset(t *testing.T, dir string) int {
	t.Helper()
	b, err := state.OpenMemory(state.Options{RestorePath: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	v, ok, err := b.Get(state.OperatorKey("source/offset"))
	if err != nil || !ok || len(v) != 8 {
		t.Fatalf("no offset in %s: %v", dir, err)
	}
	return int(binary.BigEndian.Uint64(v))
}

// waitFor polls a condition another goroutine will make true; it bounds the wait, it does not time the test.
func waitFor(t testing.TB, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached")
		}
		time.Sleep(time.Millisecond)
	}
}
