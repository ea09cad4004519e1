package txnfile_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/clinksql/clinksql/connectors/connectortest"
	"github.com/clinksql/clinksql/connectors/file"
	"github.com/clinksql/clinksql/connectors/parquet"
	"github.com/clinksql/clinksql/connectors/streamlog"
	"github.com/clinksql/clinksql/connectors/txnfile"
	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/state"
)

func newCSVSink(dir string) exec.Sink {
	return file.NewSink(file.SinkConfig{Path: dir, Format: "csv", Schema: connectortest.KVSchema})
}

// Pins: output visible in the sink's path before its checkpoint completed (a reader would see rows a restart
// then replays, i.e. duplicates).
func TestFileSinkNothingVisibleBeforeCommit(t *testing.T) {
	mem := connectortest.CheckedAlloc(t)
	dir := t.TempDir()
	s := newCSVSink(dir)
	connectortest.Must(t, s.Open(connectortest.NewTask(mem, connectortest.TaskOpts{})))
	connectortest.Must(t, s.Write(connectortest.KVBatch(mem, 1, 2)))
	if got := connectortest.CommittedFiles(t, dir); len(got) != 0 {
		t.Fatalf("after Write, path holds %v", got)
	}
	connectortest.Must(t, s.PreCommit(1))
	if got := connectortest.CommittedFiles(t, dir); len(got) != 0 {
		t.Fatalf("after PreCommit, path holds %v", got)
	}
	if got, want := connectortest.ListFiles(t, dir), []string{"_staging/j1/j1-sink-0-1.csv"}; !slices.Equal(got, want) {
		t.Fatalf("after PreCommit: files %v, want %v", got, want)
	}
	connectortest.Must(t, s.Commit(1))
	if got := connectortest.ReadFile(t, filepath.Join(dir, "j1-sink-0-1.csv")); got != connectortest.KVCSV(1, 2) {
		t.Fatalf("committed %q, want %q", got, connectortest.KVCSV(1, 2))
	}
	connectortest.Must(t, s.Close())
}

// Pins: a repeated Commit publishing twice or failing, a repeated Abort failing, and a Commit after Abort
// publishing an aborted transaction.
func TestFileSinkCommitAndAbortIdempotent(t *testing.T) {
	mem := connectortest.CheckedAlloc(t)
	dir := t.TempDir()
	s := newCSVSink(dir)
	connectortest.Must(t, s.Open(connectortest.NewTask(mem, connectortest.TaskOpts{})))
	connectortest.Must(t, s.Write(connectortest.KVBatch(mem, 1)))
	connectortest.Must(t, s.PreCommit(1))
	connectortest.Must(t, s.Commit(1))
	connectortest.Must(t, s.Commit(1))
	connectortest.Must(t, s.Write(connectortest.KVBatch(mem, 2)))
	connectortest.Must(t, s.PreCommit(2))
	connectortest.Must(t, s.Abort(2))
	connectortest.Must(t, s.Abort(2))
	connectortest.Must(t, s.Commit(2))
	connectortest.Must(t, s.Commit(1))
	if got, want := connectortest.ListFiles(t, dir), []string{"j1-sink-0-1.csv"}; !slices.Equal(got, want) {
		t.Fatalf("files %v, want %v", got, want)
	}
	if got := connectortest.ReadFile(t, filepath.Join(dir, "j1-sink-0-1.csv")); got != connectortest.KVCSV(1) {
		t.Fatalf("committed %q", got)
	}
	connectortest.Must(t, s.Close())
}

// Pins: Commit(id) publishing only id when earlier staged transactions are still waiting (their commit
// notification may have been skipped), or publishing later ones.
func TestFileSinkCommitPublishesEveryEarlierStagedTransaction(t *testing.T) {
	mem := connectortest.CheckedAlloc(t)
	dir := t.TempDir()
	s := newCSVSink(dir)
	connectortest.Must(t, s.Open(connectortest.NewTask(mem, connectortest.TaskOpts{})))
	for id := uint64(1); id <= 3; id++ {
		connectortest.Must(t, s.Write(connectortest.KVBatch(mem, int64(id))))
		connectortest.Must(t, s.PreCommit(id))
	}
	connectortest.Must(t, s.Commit(2))
	if got, want := connectortest.CommittedFiles(t, dir), []string{"j1-sink-0-1.csv", "j1-sink-0-2.csv"}; !slices.Equal(got, want) {
		t.Fatalf("after Commit(2): %v, want %v", got, want)
	}
	connectortest.Must(t, s.Commit(3))
	if got := len(connectortest.CommittedFiles(t, dir)); got != 3 {
		t.Fatalf("after Commit(3): %d files", got)
	}
	connectortest.Must(t, s.Close())
}

// Pins: a checkpoint interval without rows leaving an empty file behind.
func TestFileSinkEmptyTransactionLeavesNoFile(t *testing.T) {
	mem := connectortest.CheckedAlloc(t)
	dir := t.TempDir()
	s := newCSVSink(dir)
	connectortest.Must(t, s.Open(connectortest.NewTask(mem, connectortest.TaskOpts{})))
	connectortest.Must(t, s.Write(connectortest.KVBatch(mem))) // zero rows
	connectortest.Must(t, s.PreCommit(1))
	connectortest.Must(t, s.Commit(1))
	if got := connectortest.ListFiles(t, dir); len(got) != 0 {
		t.Fatalf("files %v", got)
	}
	connectortest.Must(t, s.Close())
}

// Pins: recovery at Open losing a transaction whose checkpoint completed before the crash (the commit never ran),
// publishing one whose checkpoint did not complete, keeping the dead in-progress file, or touching another
// subtask's staging.
func TestFileSinkRecoveryAtOpen(t *testing.T) {
	mem := connectortest.CheckedAlloc(t)
	dir := t.TempDir()
	// First incarnation, parallelism 2: subtask 0 stages checkpoints 1..3 and is mid-way through 4; subtask 1
	// stages 1. Then the process dies: nothing is committed or closed.
	a0, a1 := newCSVSink(dir), newCSVSink(dir)
	connectortest.Must(t, a0.Open(connectortest.NewTask(mem, connectortest.TaskOpts{Sub: 0, Par: 2})))
	connectortest.Must(t, a1.Open(connectortest.NewTask(mem, connectortest.TaskOpts{Sub: 1, Par: 2})))
	for id := uint64(1); id <= 3; id++ {
		connectortest.Must(t, a0.Write(connectortest.KVBatch(mem, int64(id))))
		connectortest.Must(t, a0.PreCommit(id))
	}
	connectortest.Must(t, a0.Write(connectortest.KVBatch(mem, 4)))
	connectortest.Must(t, txnfile.Buffer(a0).Flush()) // the in-progress file has bytes on disk
	connectortest.Must(t, a1.Write(connectortest.KVBatch(mem, 100)))
	connectortest.Must(t, a1.PreCommit(1))
	defer txnfile.File(a0).Close() // the dead process's descriptor

	// Checkpoints 1 and 3 completed (2 failed); the second incarnation's subtask 0 recovers.
	b0 := newCSVSink(dir)
	connectortest.Must(t, b0.Open(connectortest.NewTask(mem, connectortest.TaskOpts{Sub: 0, Par: 2, Completed: map[uint64]bool{1: true, 3: true}})))
	want := []string{
		"_staging/j1/j1-sink-1-1.csv", // subtask 1's, for subtask 1 to decide
		"j1-sink-0-1.csv",
		"j1-sink-0-3.csv",
	}
	if got := connectortest.ListFiles(t, dir); !slices.Equal(got, want) {
		t.Fatalf("after recovery: %v, want %v", got, want)
	}
	if got := connectortest.ReadFile(t, filepath.Join(dir, "j1-sink-0-3.csv")); got != connectortest.KVCSV(3) {
		t.Fatalf("recovered checkpoint 3 holds %q", got)
	}
	// A second recovery (a crash during the first) changes nothing.
	b0 = newCSVSink(dir)
	connectortest.Must(t, b0.Open(connectortest.NewTask(mem, connectortest.TaskOpts{Sub: 0, Par: 2, Completed: map[uint64]bool{1: true, 3: true}})))
	if got := connectortest.ListFiles(t, dir); !slices.Equal(got, want) {
		t.Fatalf("after second recovery: %v, want %v", got, want)
	}
	connectortest.Must(t, b0.Close())
}

// Pins: staged files of subtasks that no longer exist after a restart at lower parallelism staying in staging
// forever (their completed rows never published).
func TestFileSinkRecoveryAdoptsSubtasksBeyondParallelism(t *testing.T) {
	mem := connectortest.CheckedAlloc(t)
	dir := t.TempDir()
	a2 := newCSVSink(dir)
	connectortest.Must(t, a2.Open(connectortest.NewTask(mem, connectortest.TaskOpts{Sub: 2, Par: 3})))
	connectortest.Must(t, a2.Write(connectortest.KVBatch(mem, 7)))
	connectortest.Must(t, a2.PreCommit(5))
	connectortest.Must(t, a2.Write(connectortest.KVBatch(mem, 8)))
	connectortest.Must(t, a2.PreCommit(6))

	b1 := newCSVSink(dir) // subtask 1 of 2 must leave subtask 2's files alone
	connectortest.Must(t, b1.Open(connectortest.NewTask(mem, connectortest.TaskOpts{Sub: 1, Par: 2, Completed: map[uint64]bool{5: true}})))
	if got := len(connectortest.ListFiles(t, filepath.Join(dir, "_staging"))); got != 2 {
		t.Fatalf("subtask 1 touched subtask 2's staging: %d files left", got)
	}
	b0 := newCSVSink(dir)
	connectortest.Must(t, b0.Open(connectortest.NewTask(mem, connectortest.TaskOpts{Sub: 0, Par: 2, Completed: map[uint64]bool{5: true}})))
	if got, want := connectortest.ListFiles(t, dir), []string{"j1-sink-2-5.csv"}; !slices.Equal(got, want) {
		t.Fatalf("after recovery: %v, want %v", got, want)
	}
	connectortest.Must(t, b0.Close())
	connectortest.Must(t, b1.Close())
	connectortest.Must(t, a2.Close())
}

// Pins: a commit renaming over a file that is already committed (a retried commit, or a crash between link and
// unlink of the no-replace fallback) instead of keeping it and dropping the staged copy.
func TestFileSinkRenameNeverOverwrites(t *testing.T) {
	mem := connectortest.CheckedAlloc(t)
	dir := t.TempDir()
	s := newCSVSink(dir)
	connectortest.Must(t, s.Open(connectortest.NewTask(mem, connectortest.TaskOpts{})))
	connectortest.Must(t, s.Write(connectortest.KVBatch(mem, 1)))
	connectortest.Must(t, s.PreCommit(1))
	committed := filepath.Join(dir, "j1-sink-0-1.csv")
	connectortest.Must(t, os.WriteFile(committed, []byte("already committed\n"), 0o644))
	connectortest.Must(t, s.Commit(1))
	if got := connectortest.ReadFile(t, committed); got != "already committed\n" {
		t.Fatalf("commit overwrote the committed file: %q", got)
	}
	if got, want := connectortest.ListFiles(t, dir), []string{"j1-sink-0-1.csv"}; !slices.Equal(got, want) {
		t.Fatalf("files %v, want %v (staged copy should be gone)", got, want)
	}

	// The same through recovery.
	connectortest.Must(t, s.Write(connectortest.KVBatch(mem, 2)))
	connectortest.Must(t, s.PreCommit(2))
	committed2 := filepath.Join(dir, "j1-sink-0-2.csv")
	connectortest.Must(t, os.WriteFile(committed2, []byte("x\n"), 0o644))
	r := newCSVSink(dir)
	connectortest.Must(t, r.Open(connectortest.NewTask(mem, connectortest.TaskOpts{Completed: map[uint64]bool{2: true}})))
	if got := connectortest.ReadFile(t, committed2); got != "x\n" {
		t.Fatalf("recovery overwrote the committed file: %q", got)
	}
	if got := len(connectortest.ListFiles(t, filepath.Join(dir, "_staging"))); got != 0 {
		t.Fatalf("%d staged files left", got)
	}
	connectortest.Must(t, s.Close())
	connectortest.Must(t, r.Close())
}

// Pins: two subtasks, two checkpoints, or two jobs/operators whose names differ only in where a '-' falls,
// writing to the same file name; a name with a character outside [A-Za-z0-9._-] (such as %2D) or hidden; an id
// that would let two names meet accepted.
func TestFileSinkNamesNeverCollide(t *testing.T) {
	mem := connectortest.CheckedAlloc(t)
	dir := t.TempDir()
	type inst struct {
		job, op string
		sub     int
	}
	for _, bad := range []inst{{"a-b", "c", 0}, {"_x", "b", 0}, {"a-1-2", "b", 0}, {"a", "1-b", 0}, {"a", "b%c", 0}} {
		if err := newCSVSink(dir).Open(connectortest.NewTask(mem, connectortest.TaskOpts{Job: bad.job, Op: bad.op})); err == nil {
			t.Errorf("job %q operator %q accepted", bad.job, bad.op)
		}
	}
	insts := []inst{{"a", "b-c", 0}, {"a-1", "b", 0}, {"a-1", "b-c", 0}, {"a", "b", 0}, {"a", "b", 1}, {"a", "b-1", 0}, {"job-1", "sink-2", 1}}
	var sinks []exec.Sink
	for k, in := range insts {
		s := newCSVSink(dir)
		connectortest.Must(t, s.Open(connectortest.NewTask(mem, connectortest.TaskOpts{Job: in.job, Op: in.op, Sub: in.sub, Par: 2})))
		for id := uint64(1); id <= 2; id++ {
			connectortest.Must(t, s.Write(connectortest.KVBatch(mem, int64(k*10)+int64(id))))
			connectortest.Must(t, s.PreCommit(id))
		}
		sinks = append(sinks, s)
	}
	for _, s := range sinks {
		connectortest.Must(t, s.Commit(2))
		connectortest.Must(t, s.Close())
	}
	files := connectortest.CommittedFiles(t, dir)
	if len(files) != 2*len(insts) {
		t.Fatalf("%d files for %d transactions: %v", len(files), 2*len(insts), files)
	}
	seen := map[string]bool{}
	for _, f := range files {
		if strings.HasPrefix(f, "_") || strings.HasPrefix(f, ".") {
			t.Errorf("committed file %s is hidden", f)
		}
		content := connectortest.ReadFile(t, filepath.Join(dir, f))
		if seen[content] {
			t.Errorf("two files hold %q", content)
		}
		seen[content] = true
	}
	for _, want := range []string{"a-b-c-0-1.csv", "a-1-b-0-1.csv", "a-1-b-c-0-2.csv", "a-b-0-1.csv", "a-b-1-2.csv", "a-b-1-0-1.csv", "job-1-sink-2-1-2.csv"} {
		if !slices.Contains(files, want) {
			t.Errorf("no file %s in %v", want, files)
		}
	}
	for _, f := range files {
		if strings.Trim(f, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") != "" {
			t.Errorf("file name %s has a character outside [A-Za-z0-9._-]", f)
		}
	}
}

// Pins (issue 11, item 2): a job restored across the change of file names losing, or committing twice, what an
// earlier version staged under its escaped names (_staging/job%2D1/job%2D1-sink-0-5.csv): a completed transaction
// is committed under the name it was staged with, an uncompleted one deleted, and the old staging directory goes.
func TestFileSinkRecoversLegacyStagedNames(t *testing.T) {
	mem := connectortest.CheckedAlloc(t)
	dir := t.TempDir()
	legacy := filepath.Join(dir, "_staging", "job%2D1")
	connectortest.Must(t, os.MkdirAll(legacy, 0o755))
	for _, name := range []string{"job%2D1-sink-0-5.csv", "job%2D1-sink-0-6.csv", "job%2D1-sink-0.inprogress", "job%2D1-sink%2D2-0-5.csv"} {
		connectortest.Must(t, os.WriteFile(filepath.Join(legacy, name), []byte(name+"\n"), 0o644))
	}
	s := newCSVSink(dir)
	connectortest.Must(t, s.Open(connectortest.NewTask(mem, connectortest.TaskOpts{Job: "job-1", Op: "sink", Completed: map[uint64]bool{5: true}})))
	if got, want := connectortest.ListFiles(t, dir), []string{"_staging/job%2D1/job%2D1-sink%2D2-0-5.csv", "job%2D1-sink-0-5.csv"}; !slices.Equal(got, want) {
		t.Fatalf("after recovery: %v, want %v", got, want)
	}
	connectortest.Must(t, s.Write(connectortest.KVBatch(mem, 1)))
	connectortest.Must(t, s.PreCommit(7))
	connectortest.Must(t, s.Commit(7))
	connectortest.Must(t, s.Close())
	// The other operator of the job recovers its own file; then the old directory is gone.
	s2 := newCSVSink(dir)
	connectortest.Must(t, s2.Open(connectortest.NewTask(mem, connectortest.TaskOpts{Job: "job-1", Op: "sink-2", Completed: map[uint64]bool{5: true}})))
	connectortest.Must(t, s2.Close())
	if got, want := connectortest.ListFiles(t, dir), []string{"job%2D1-sink%2D2-0-5.csv", "job%2D1-sink-0-5.csv", "job-1-sink-0-7.csv"}; !slices.Equal(got, want) {
		t.Fatalf("files %v, want %v", got, want)
	}
	if _, err := os.Stat(legacy); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the old staging directory is still there: %v", err)
	}
}

// Pins: a disk that fails at any point of writing a transaction making PreCommit report success, or leaving
// anything under a committed name, even if Commit is then called.
func TestFileSinkFaultFailsPreCommit(t *testing.T) {
	t.Setenv("CLINK_STATE_FSYNC", "1")
	for _, format := range []string{"csv", "parquet"} {
		failedSomewhere := false
		for failAfter := int64(0); ; failAfter++ {
			mem := connectortest.CheckedAlloc(t)
			dir := t.TempDir()
			ffs := &state.FaultFS{Inner: state.OS, FailAfter: failAfter}
			var s exec.Sink
			if format == "csv" {
				s = newCSVSink(dir)
			} else {
				s = parquet.NewSink(parquet.SinkConfig{Path: dir, Schema: connectortest.KVSchema})
			}
			err := s.Open(connectortest.NewTask(mem, connectortest.TaskOpts{FS: ffs}))
			if err == nil {
				// Small batches through a big buffer: make the transaction span several writes.
				for k := range int64(3) {
					if err = s.Write(connectortest.KVBatch(mem, k)); err != nil {
						break
					}
				}
			}
			if err == nil {
				err = s.PreCommit(1)
			}
			if err != nil {
				failedSomewhere = true
				if !errors.Is(err, state.ErrInjected) && !strings.Contains(err.Error(), state.ErrInjected.Error()) {
					t.Errorf("%s, fail after %d: error %v does not report the fault", format, failAfter, err)
				}
				_ = s.Commit(1) // a confused runtime committing anyway must publish nothing
				if got := connectortest.CommittedFiles(t, dir); len(got) != 0 {
					t.Fatalf("%s, fail after %d: %v under committed names", format, failAfter, got)
				}
				// Recovery with a healthy disk and no completed checkpoint clears everything.
				r := newCSVSink(dir)
				if format != "csv" {
					r = parquet.NewSink(parquet.SinkConfig{Path: dir, Schema: connectortest.KVSchema})
				}
				connectortest.Must(t, r.Open(connectortest.NewTask(mem, connectortest.TaskOpts{})))
				if got := connectortest.ListFiles(t, dir); len(got) != 0 {
					t.Fatalf("%s, fail after %d: recovery left %v", format, failAfter, got)
				}
				_ = s.Close()
				continue
			}
			if ffs.Tripped() {
				t.Fatalf("%s, fail after %d: the fault tripped but PreCommit succeeded", format, failAfter)
			}
			ffs.FailAfter = -1 // the disk recovers
			connectortest.Must(t, s.Commit(1))
			connectortest.Must(t, s.Close())
			if !failedSomewhere {
				t.Fatalf("%s: no fault point was exercised", format)
			}
			t.Logf("%s: PreCommit failed cleanly at each of %d fault points", format, failAfter)
			break // the whole transaction fits in failAfter mutating calls: every earlier point was covered
		}
	}
}

// Pins: the file sink accepting retractions from an updating query, which a file of rows cannot express.
func TestFileSinkRejectsRetractions(t *testing.T) {
	mem := connectortest.CheckedAlloc(t)
	s := newCSVSink(t.TempDir())
	connectortest.Must(t, s.Open(connectortest.NewTask(mem, connectortest.TaskOpts{})))
	b := connectortest.KVBatch(mem, 1, 2)
	b.Kinds = []exec.RowKind{exec.Insert, exec.UpdateBefore}
	if err := s.Write(b); err == nil || !strings.Contains(err.Error(), "append-only") {
		t.Fatalf("Write of a retraction: %v", err)
	}
	b = connectortest.KVBatch(mem, 3)
	b.Kinds = []exec.RowKind{exec.Insert}
	connectortest.Must(t, s.Write(b))
	connectortest.Must(t, s.Close())
}

// Pins: a batch whose column types differ from the sink's schema being written in the wrong form.
func TestFileSinkRejectsSchemaMismatch(t *testing.T) {
	mem := connectortest.CheckedAlloc(t)
	s := newCSVSink(t.TempDir())
	connectortest.Must(t, s.Open(connectortest.NewTask(mem, connectortest.TaskOpts{})))
	other := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int32}, {Name: "s", Type: arrow.BinaryTypes.String}}, nil)
	b := array.NewRecordBuilder(mem, other)
	b.Field(0).(*array.Int32Builder).Append(1)
	b.Field(1).(*array.StringBuilder).Append("x")
	rec := b.NewRecordBatch()
	b.Release()
	if err := s.Write(exec.Batch{Rec: rec}); err == nil {
		t.Fatal("Write of a mismatched batch succeeded")
	}
	connectortest.Must(t, s.Close())
}

// Pins: Commit/Abort from the coordinator goroutine racing with Write/PreCommit on the subtask goroutine (run
// with -race), and a concurrent commit losing or duplicating a transaction.
func TestFileSinkConcurrentCommitAndWrite(t *testing.T) {
	mem := connectortest.CheckedAlloc(t)
	dir := t.TempDir()
	s := newCSVSink(dir)
	connectortest.Must(t, s.Open(connectortest.NewTask(mem, connectortest.TaskOpts{})))
	const n = 40
	ids := make(chan uint64, n)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for id := range ids {
			if id%5 == 0 {
				connectortest.Must(t, s.Abort(id))
			} else {
				connectortest.Must(t, s.Commit(id))
			}
			connectortest.Must(t, s.Commit(id)) // idempotent, and a no-op after the abort
		}
	}()
	for id := uint64(1); id <= n; id++ {
		for k := range 3 {
			connectortest.Must(t, s.Write(connectortest.KVBatch(mem, int64(id*10)+int64(k))))
		}
		connectortest.Must(t, s.PreCommit(id))
		ids <- id
	}
	close(ids)
	wg.Wait()
	connectortest.Must(t, s.Close())
	if got, want := len(connectortest.CommittedFiles(t, dir)), n-n/5; got != want {
		t.Fatalf("%d committed files, want %d", got, want)
	}
}

// Pins exec.PublishChecker for the file and log sinks: a committed transaction above the given checkpoint is
// named, one of another job or operator, or at or below it, is not; a staged one is not published. A restore
// falls back past a damaged checkpoint only when this says nothing was published after the older one.
func TestSinksTellWhatTheyPublishedAfter(t *testing.T) {
	mem := connectortest.CheckedAlloc(t)
	logDir := t.TempDir()
	l, err := streamlog.Create(state.OS, logDir, connectortest.KVSchema)
	connectortest.Must(t, err)
	csvDir := t.TempDir()
	for _, tc := range []struct {
		name string
		sink func() exec.Sink
		dir  string
	}{{"csv", func() exec.Sink { return newCSVSink(csvDir) }, csvDir}, {"log", func() exec.Sink { return streamlog.NewSink(l) }, logDir}} {
		t.Run(tc.name, func(t *testing.T) {
			task := connectortest.NewTask(mem, connectortest.TaskOpts{})
			s := tc.sink()
			connectortest.Must(t, s.Open(task))
			for id := uint64(1); id <= 3; id++ {
				connectortest.Must(t, s.Write(connectortest.KVBatch(mem, int64(id))))
				connectortest.Must(t, s.PreCommit(id))
			}
			connectortest.Must(t, s.Commit(2)) // 3 stays staged
			connectortest.Must(t, s.Close())
			other := tc.sink()
			connectortest.Must(t, other.Open(connectortest.NewTask(mem, connectortest.TaskOpts{Job: "j2"})))
			connectortest.Must(t, other.Write(connectortest.KVBatch(mem, 9)))
			connectortest.Must(t, other.PreCommit(9))
			connectortest.Must(t, other.Commit(9))
			connectortest.Must(t, other.Close())

			pc := tc.sink().(exec.PublishChecker)
			for after, want := range map[uint64]bool{0: true, 1: true, 2: false, 3: false} {
				got, err := pc.PublishedAfter(task, after)
				connectortest.Must(t, err)
				if (got != "") != want || want && !strings.HasPrefix(got, tc.dir) {
					t.Fatalf("PublishedAfter(%d) = %q, want published %v", after, got, want)
				}
			}
		})
	}
}

// Pins: a file sink's committed bytes (exec.SinkProgress) counting what is staged or aborted, counting a repeated
// Commit twice, or differing from the sizes of the files published (CSV, JSON lines, Parquet).
func TestSinksCountCommittedBytes(t *testing.T) {
	for name, newSink := range map[string]func(dir string) exec.Sink{
		"csv": newCSVSink,
		"json": func(dir string) exec.Sink {
			return file.NewSink(file.SinkConfig{Path: dir, Format: "json", Schema: connectortest.KVSchema})
		},
		"parquet": func(dir string) exec.Sink {
			return parquet.NewSink(parquet.SinkConfig{Path: dir, Schema: connectortest.KVSchema})
		},
	} {
		t.Run(name, func(t *testing.T) {
			mem := connectortest.CheckedAlloc(t)
			dir := t.TempDir()
			s := newSink(dir)
			sp := s.(exec.SinkProgress)
			connectortest.Must(t, s.Open(connectortest.NewTask(mem, connectortest.TaskOpts{})))
			defer s.Close()
			published := func() int64 {
				var n int64
				for _, f := range connectortest.CommittedFiles(t, dir) {
					st, err := os.Stat(filepath.Join(dir, f))
					connectortest.Must(t, err)
					n += st.Size()
				}
				return n
			}
			for id := uint64(1); id <= 3; id++ {
				connectortest.Must(t, s.Write(connectortest.KVBatch(mem, int64(10*id), int64(10*id+1))))
				connectortest.Must(t, s.PreCommit(id))
			}
			if n := sp.CommittedBytes(); n != 0 {
				t.Fatalf("%d bytes committed before any commit", n)
			}
			connectortest.Must(t, s.Commit(1))
			one := sp.CommittedBytes()
			if one == 0 || one != published() {
				t.Fatalf("after Commit(1): %d bytes committed, %d published", one, published())
			}
			connectortest.Must(t, s.Abort(2))
			connectortest.Must(t, s.Commit(3))
			connectortest.Must(t, s.Commit(3))
			if n, files := sp.CommittedBytes(), len(connectortest.CommittedFiles(t, dir)); n != published() || n <= one || files != 2 {
				t.Fatalf("after Abort(2), Commit(3) twice: %d bytes committed, %d published in %d files", n, published(), files)
			}
		})
	}
}
