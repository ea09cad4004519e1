package file

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clinksql/clinksql/connectors/connectortest"
	"github.com/clinksql/clinksql/connectors/txnfile"
	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/state"
)

// The partitioned CSV sink's tests: rows (id, dt, hm) partitioned by (dt, hm); the files hold id only.

var partSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "dt", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "hm", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

// partRow is one row; a nil dt or hm is NULL.
type partRow struct {
	id     int64
	dt, hm *string
}

func str(s string) *string { return &s }

func row(id int64, dt, hm string) partRow { return partRow{id, str(dt), str(hm)} }

func partBatch(mem memory.Allocator, rows ...partRow) exec.Batch {
	b := array.NewRecordBuilder(mem, partSchema)
	defer b.Release()
	for _, r := range rows {
		b.Field(0).(*array.Int64Builder).Append(r.id)
		for k, v := range []*string{r.dt, r.hm} {
			if v == nil {
				b.Field(k + 1).AppendNull()
			} else {
				b.Field(k + 1).(*array.StringBuilder).Append(*v)
			}
		}
	}
	return exec.Batch{Rec: b.NewRecordBatch()}
}

func newPartSink(dir string, pc txnfile.PartitionConfig) exec.Sink {
	if pc.Keys == nil {
		pc.Keys = []string{"dt", "hm"}
	}
	return NewSink(SinkConfig{Path: dir, Format: "csv", Schema: partSchema, Partition: pc})
}

// committedTree is every file under dir but the staging directory's.
func committedTree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	for _, f := range connectortest.ListFiles(t, dir) {
		if !strings.HasPrefix(f, "_staging/") {
			out = append(out, f)
		}
	}
	return out
}

// Pins: partition directories not named key=value/ with Hive's escapes (':' '/' '=' '%' '#' '?' and control bytes
// as %XX, upper case; other UTF-8 as it is), NULL and ” not in the default partition, rows of a partition split
// over files, partition columns written into the files, anything visible before the commit.
func TestPartitionedSinkLayoutAndEscaping(t *testing.T) {
	mem := connectortest.CheckedAlloc(t)
	dir := t.TempDir()
	s := newPartSink(dir, txnfile.PartitionConfig{})
	connectortest.Must(t, s.Open(connectortest.NewTask(mem, connectortest.TaskOpts{})))
	connectortest.Must(t, s.Write(partBatch(mem,
		row(1, "2026-01-01", "10:30"),
		row(2, "2026-01-01", "10:31"),
		partRow{3, nil, str("a/b=c%")},
		row(4, "", "\x01x"),
		row(5, "2026-01-01", "10:30"),
		row(6, "héllo", "#?"),
	)))
	connectortest.Must(t, s.PreCommit(1))
	if got := committedTree(t, dir); len(got) != 0 {
		t.Fatalf("visible before the commit: %v", got)
	}
	connectortest.Must(t, s.Commit(1))
	connectortest.Must(t, s.Close())
	want := map[string]string{
		"dt=2026-01-01/hm=10%3A30/j1-sink-0-1-0.csv":                      "1\n5\n",
		"dt=2026-01-01/hm=10%3A31/j1-sink-0-1-1.csv":                      "2\n",
		"dt=__HIVE_DEFAULT_PARTITION__/hm=a%2Fb%3Dc%25/j1-sink-0-1-2.csv": "3\n",
		"dt=__HIVE_DEFAULT_PARTITION__/hm=%01x/j1-sink-0-1-3.csv":         "4\n",
		"dt=héllo/hm=%23%3F/j1-sink-0-1-4.csv":                            "6\n",
	}
	got := committedTree(t, dir)
	if len(got) != len(want) {
		t.Fatalf("files %q, want %d", got, len(want))
	}
	for f, content := range want {
		if c := connectortest.ReadFile(t, filepath.Join(dir, f)); c != content {
			t.Errorf("%s holds %q, want %q", f, c, content)
		}
	}
	if left := connectortest.ListFiles(t, filepath.Join(dir, "_staging")); len(left) != 0 {
		t.Errorf("staging still holds %v", left)
	}
}

// Pins: Hive's escape set itself (FileUtils.escapePathName: control bytes, DEL and "#%'*/:=?\{[]^) and the
// directory of a row with NULL keys.
func TestPartitionDirEscapes(t *testing.T) {
	var all []byte
	for c := 0; c < 0x80; c++ {
		all = append(all, byte(c))
	}
	got := string(txnfile.AppendEscaped(nil, all))
	want := "%00%01%02%03%04%05%06%07%08%09%0A%0B%0C%0D%0E%0F%10%11%12%13%14%15%16%17%18%19%1A%1B%1C%1D%1E%1F" +
		" !%22%23$%25&%27()%2A+,-.%2F0123456789%3A;<%3D>%3F@ABCDEFGHIJKLMNOPQRSTUVWXYZ%5B%5C%5D%5E_`" +
		"abcdefghijklmnopqrstuvwxyz%7B|}~%7F"
	if got != want {
		t.Fatalf("escaped ASCII\n got %s\nwant %s", got, want)
	}
	if d := txnfile.PartitionDir([]string{"d:t", "hm"}, []*string{nil, str("")}, txnfile.DefaultPartitionName); d != "d%3At=__HIVE_DEFAULT_PARTITION__/hm=__HIVE_DEFAULT_PARTITION__" {
		t.Fatalf("NULL and '' keys: %s", d)
	}
}

// Pins: the bound on open partition files ignored (more open at once than allowed), or a partition reopened past
// it losing its earlier rows: with a bound of 2, writing a, b, c, a finishes a's first file when c opens and
// starts a second file of a, both committed with the checkpoint.
func TestPartitionedSinkBoundsOpenWriters(t *testing.T) {
	mem := connectortest.CheckedAlloc(t)
	dir := t.TempDir()
	s := newPartSink(dir, txnfile.PartitionConfig{Keys: []string{"dt"}, MaxOpenWriters: 2})
	connectortest.Must(t, s.Open(connectortest.NewTask(mem, connectortest.TaskOpts{})))
	inProgress := func() int {
		n := 0
		for _, f := range connectortest.ListFiles(t, filepath.Join(dir, "_staging")) {
			if strings.HasSuffix(f, ".inprogress") {
				n++
			}
		}
		return n
	}
	for i, dt := range []string{"a", "b", "c", "a"} {
		connectortest.Must(t, s.Write(partBatch(mem, row(int64(i+1), dt, "x"))))
	}
	// In progress: a's first file (finished when c opened), b's (finished when a reopened), c's and a's second.
	if n := inProgress(); n != 4 {
		t.Fatalf("%d in-progress files, want 4", n)
	}
	connectortest.Must(t, s.PreCommit(1))
	connectortest.Must(t, s.Commit(1))
	connectortest.Must(t, s.Close())
	want := []string{"dt=a/j1-sink-0-1-0.csv", "dt=a/j1-sink-0-1-3.csv", "dt=b/j1-sink-0-1-1.csv", "dt=c/j1-sink-0-1-2.csv"}
	if got := committedTree(t, dir); !slices.Equal(got, want) {
		t.Fatalf("files %v, want %v", got, want)
	}
	// The files hold id and hm: dt is in the directory name.
	if got := connectortest.ReadFile(t, filepath.Join(dir, "dt=a/j1-sink-0-1-3.csv")); got != "4,x\n" {
		t.Fatalf("a's second file holds %q", got)
	}
}

// stateAt captures b at checkpoint id and returns a backend restored from it, as a restart from id gets.
func stateAt(t *testing.T, b state.Backend, id uint64) state.Backend {
	t.Helper()
	snap, err := b.Capture(id)
	connectortest.Must(t, err)
	path := filepath.Join(t.TempDir(), "state")
	connectortest.Must(t, snap.Persist(path))
	r, err := state.OpenMemory(state.Options{RestorePath: path})
	connectortest.Must(t, err)
	return r
}

func newState(t *testing.T) state.Backend {
	b, err := state.OpenMemory(state.Options{})
	connectortest.Must(t, err)
	return b
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// Pins the process-time trigger with a fake clock: a _SUCCESS written before the delay passed since the files of
// the partition were committed, never written after it, written while a file of the partition is still staged
// (its checkpoint not committed), or written again over an existing one.
func TestPartitionedSinkProcessTimeCommit(t *testing.T) {
	mem := connectortest.CheckedAlloc(t)
	dir := t.TempDir()
	t0 := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	now := t0
	s := newPartSink(dir, txnfile.PartitionConfig{Keys: []string{"dt"}, SuccessFile: true, Delay: 10 * time.Minute,
		Now: func() time.Time { return now }})
	f := s.(exec.CommitFinisher)
	connectortest.Must(t, s.Open(connectortest.NewTask(mem, connectortest.TaskOpts{State: newState(t)})))
	a, b := filepath.Join(dir, "dt=a", "_SUCCESS"), filepath.Join(dir, "dt=b", "_SUCCESS")
	connectortest.Must(t, s.Write(partBatch(mem, row(1, "a", "x"))))
	connectortest.Must(t, s.PreCommit(1))
	connectortest.Must(t, s.Write(partBatch(mem, row(2, "a", "x"), row(3, "b", "x"))))
	connectortest.Must(t, s.PreCommit(2))
	connectortest.Must(t, s.Commit(1))
	connectortest.Must(t, f.FinishCommit(1, exec.MinWatermark))
	now = t0.Add(time.Hour)
	connectortest.Must(t, f.FinishCommit(1, exec.MinWatermark))
	if exists(a) {
		t.Fatal("a's _SUCCESS written while its file of checkpoint 2 is staged")
	}
	connectortest.Must(t, s.Commit(2))
	connectortest.Must(t, f.FinishCommit(2, exec.MinWatermark)) // the clock starts: a and b are committed at t0+1h
	now = t0.Add(time.Hour + 10*time.Minute - time.Second)
	connectortest.Must(t, s.PreCommit(3))
	connectortest.Must(t, s.Commit(3))
	connectortest.Must(t, f.FinishCommit(3, exec.MinWatermark))
	if exists(a) || exists(b) {
		t.Fatal("_SUCCESS written before the delay passed")
	}
	now = t0.Add(time.Hour + 10*time.Minute)
	connectortest.Must(t, s.PreCommit(4))
	connectortest.Must(t, s.Commit(4))
	connectortest.Must(t, f.FinishCommit(4, exec.MinWatermark))
	if !exists(a) || !exists(b) {
		t.Fatal("no _SUCCESS once the delay passed")
	}
	// A late row of a: a new file, the partition committed again, its _SUCCESS left as it is.
	connectortest.Must(t, os.WriteFile(a, []byte("mine"), 0o644))
	connectortest.Must(t, s.Write(partBatch(mem, row(4, "a", "x"))))
	connectortest.Must(t, s.PreCommit(5))
	connectortest.Must(t, s.Commit(5))
	now = now.Add(time.Hour)
	connectortest.Must(t, f.FinishCommit(5, exec.MinWatermark))
	if got := connectortest.ReadFile(t, a); got != "mine" {
		t.Fatalf("_SUCCESS rewritten: %q", got)
	}
	connectortest.Must(t, s.Close())
	if got := committedTree(t, dir); len(got) != 6 { // a: 3 files and _SUCCESS, b: 1 and _SUCCESS
		t.Fatalf("files %v", got)
	}
}

// Pins the partition-time trigger: a partition ('$dt $hm:00' plus a delay of 1 minute) committed before the
// node's watermark reached its time + delay, not committed once it did, a partition whose time cannot be
// extracted (a NULL key) committed before the end of input (watermark +inf), or a sink without the success-file
// policy writing one.
func TestPartitionedSinkPartitionTimeCommit(t *testing.T) {
	mem := connectortest.CheckedAlloc(t)
	for _, policy := range []bool{true, false} {
		dir := t.TempDir()
		s := newPartSink(dir, txnfile.PartitionConfig{SuccessFile: policy, Trigger: txnfile.PartitionTime,
			TimePattern: "$dt $hm:00", Delay: time.Minute})
		f := s.(exec.CommitFinisher)
		connectortest.Must(t, s.Open(connectortest.NewTask(mem, connectortest.TaskOpts{State: newState(t)})))
		connectortest.Must(t, s.Write(partBatch(mem, row(1, "2026-01-01", "10:30"), row(2, "2026-01-01", "10:31"),
			partRow{3, nil, str("10:30")})))
		connectortest.Must(t, s.PreCommit(1))
		connectortest.Must(t, s.Commit(1))
		p1030 := filepath.Join(dir, "dt=2026-01-01", "hm=10%3A30", "_SUCCESS")
		p1031 := filepath.Join(dir, "dt=2026-01-01", "hm=10%3A31", "_SUCCESS")
		pNull := filepath.Join(dir, "dt=__HIVE_DEFAULT_PARTITION__", "hm=10%3A30", "_SUCCESS")
		us := func(s string) int64 {
			ts, err := time.Parse("2006-01-02 15:04:05", s)
			connectortest.Must(t, err)
			return ts.UnixMicro()
		}
		connectortest.Must(t, f.FinishCommit(1, us("2026-01-01 10:31:00")-1))
		if exists(p1030) || exists(p1031) {
			t.Fatal("committed before the watermark reached partition time + delay")
		}
		connectortest.Must(t, s.PreCommit(2))
		connectortest.Must(t, s.Commit(2))
		connectortest.Must(t, f.FinishCommit(2, us("2026-01-01 10:31:00")))
		if exists(p1030) != policy || exists(p1031) || exists(pNull) {
			t.Fatalf("policy %v at 10:31: 10:30 %v, 10:31 %v, NULL %v", policy, exists(p1030), exists(p1031), exists(pNull))
		}
		connectortest.Must(t, s.PreCommit(3))
		connectortest.Must(t, s.Commit(3))
		connectortest.Must(t, f.FinishCommit(3, exec.MaxWatermark-1))
		if exists(pNull) {
			t.Fatal("a partition without a time committed before the end of input")
		}
		connectortest.Must(t, s.PreCommit(4))
		connectortest.Must(t, s.Commit(4))
		connectortest.Must(t, f.FinishCommit(4, exec.MaxWatermark))
		if exists(p1031) != policy || exists(pNull) != policy {
			t.Fatalf("policy %v at the end of input: 10:31 %v, NULL %v", policy, exists(p1031), exists(pNull))
		}
		connectortest.Must(t, s.Close())
	}
}

// Pins recovery after a crash between stage and commit: the files of a checkpoint that completed are committed by
// the next Open (none lost), those of one that did not are deleted (none published), in-progress files deleted,
// and the partitions pending in the restored state still get their _SUCCESS at the next completed checkpoint;
// a second recovery (a crash during the first) changes nothing.
func TestPartitionedSinkRecoveryAfterCrashBetweenStageAndCommit(t *testing.T) {
	for _, completed2 := range []bool{true, false} {
		mem := connectortest.CheckedAlloc(t)
		dir := t.TempDir()
		pc := txnfile.PartitionConfig{Keys: []string{"dt"}, SuccessFile: true, Trigger: txnfile.PartitionTime}
		st := newState(t)
		a := newPartSink(dir, pc)
		connectortest.Must(t, a.Open(connectortest.NewTask(mem, connectortest.TaskOpts{State: st})))
		connectortest.Must(t, a.Write(partBatch(mem, row(1, "2026-01-01", "x"))))
		connectortest.Must(t, a.PreCommit(1))
		at1 := stateAt(t, st, 1)
		connectortest.Must(t, a.Commit(1))
		connectortest.Must(t, a.Write(partBatch(mem, row(2, "2026-01-01", "x"), row(3, "2026-01-02", "x"))))
		connectortest.Must(t, a.PreCommit(2))
		at2 := stateAt(t, st, 2)
		connectortest.Must(t, a.Write(partBatch(mem, row(4, "2026-01-03", "x")))) // in progress when the process dies
		// The process dies: checkpoint 2's commit never ran, and nothing is closed.

		completed := map[uint64]bool{1: true, 2: completed2}
		restored := at2
		if !completed2 {
			restored = at1
		}
		for range 2 {
			b := newPartSink(dir, pc)
			connectortest.Must(t, b.Open(connectortest.NewTask(mem, connectortest.TaskOpts{State: restored, Completed: completed})))
			connectortest.Must(t, b.Close())
		}
		want := []string{"dt=2026-01-01/j1-sink-0-1-0.csv"}
		if completed2 {
			want = append(want, "dt=2026-01-01/j1-sink-0-2-0.csv", "dt=2026-01-02/j1-sink-0-2-1.csv")
		}
		if got := committedTree(t, dir); !slices.Equal(got, want) {
			t.Fatalf("checkpoint 2 completed %v: after recovery %v, want %v", completed2, got, want)
		}
		if left := connectortest.ListFiles(t, filepath.Join(dir, "_staging")); len(left) != 0 {
			t.Fatalf("staging holds %v after recovery", left)
		}
		// The restart's first checkpoint completes at the end of input: the restored pending partitions commit.
		b := newPartSink(dir, pc)
		connectortest.Must(t, b.Open(connectortest.NewTask(mem, connectortest.TaskOpts{State: restored, Completed: completed})))
		connectortest.Must(t, b.PreCommit(3))
		connectortest.Must(t, b.Commit(3))
		connectortest.Must(t, b.(exec.CommitFinisher).FinishCommit(3, exec.MaxWatermark))
		connectortest.Must(t, b.Close())
		if !exists(filepath.Join(dir, "dt=2026-01-01", "_SUCCESS")) || exists(filepath.Join(dir, "dt=2026-01-02", "_SUCCESS")) != completed2 {
			t.Fatalf("checkpoint 2 completed %v: _SUCCESS files %v", completed2, committedTree(t, dir))
		}
		connectortest.Must(t, a.Close()) // the dead incarnation's descriptors
	}
}

// Pins: staging trees of subtasks that no longer exist after a restart at a lower parallelism left behind (their
// completed files never published), or recovered by a subtask other than 0.
func TestPartitionedSinkRecoveryAdoptsSubtasksBeyondParallelism(t *testing.T) {
	mem := connectortest.CheckedAlloc(t)
	dir := t.TempDir()
	pc := txnfile.PartitionConfig{Keys: []string{"dt"}}
	a2 := newPartSink(dir, pc)
	connectortest.Must(t, a2.Open(connectortest.NewTask(mem, connectortest.TaskOpts{Sub: 2, Par: 3})))
	connectortest.Must(t, a2.Write(partBatch(mem, row(7, "a", "x"))))
	connectortest.Must(t, a2.PreCommit(5))
	b1 := newPartSink(dir, pc)
	connectortest.Must(t, b1.Open(connectortest.NewTask(mem, connectortest.TaskOpts{Sub: 1, Par: 2, Completed: map[uint64]bool{5: true}})))
	if got := committedTree(t, dir); len(got) != 0 {
		t.Fatalf("subtask 1 recovered subtask 2's files: %v", got)
	}
	b0 := newPartSink(dir, pc)
	connectortest.Must(t, b0.Open(connectortest.NewTask(mem, connectortest.TaskOpts{Sub: 0, Par: 2, Completed: map[uint64]bool{5: true}})))
	if got, want := committedTree(t, dir), []string{"dt=a/j1-sink-2-5-0.csv"}; !slices.Equal(got, want) {
		t.Fatalf("after recovery %v, want %v", got, want)
	}
	for _, s := range []exec.Sink{a2, b1, b0} {
		connectortest.Must(t, s.Close())
	}
}

// Pins exec.PublishChecker for a partitioned sink: a committed file in a partition directory above the given
// checkpoint is named, a staged one or one at or below it is not.
func TestPartitionedSinkTellsWhatItPublishedAfter(t *testing.T) {
	mem := connectortest.CheckedAlloc(t)
	dir := t.TempDir()
	task := connectortest.NewTask(mem, connectortest.TaskOpts{})
	s := newPartSink(dir, txnfile.PartitionConfig{})
	connectortest.Must(t, s.Open(task))
	for id := uint64(1); id <= 3; id++ {
		connectortest.Must(t, s.Write(partBatch(mem, row(int64(id), "d", "h"))))
		connectortest.Must(t, s.PreCommit(id))
	}
	connectortest.Must(t, s.Commit(2))
	connectortest.Must(t, s.Close())
	pc := newPartSink(dir, txnfile.PartitionConfig{}).(exec.PublishChecker)
	for after, want := range map[uint64]bool{0: true, 1: true, 2: false, 3: false} {
		got, err := pc.PublishedAfter(task, after)
		connectortest.Must(t, err)
		if (got != "") != want {
			t.Fatalf("PublishedAfter(%d) = %q, want published %v", after, got, want)
		}
	}
	// A partition column whose name starts with '_' names directories that start with it: still published output.
	under := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "_d", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	dir2 := t.TempDir()
	newUnder := func() exec.Sink {
		return NewSink(SinkConfig{Path: dir2, Format: "csv", Schema: under, Partition: txnfile.PartitionConfig{Keys: []string{"_d"}}})
	}
	s2 := newUnder()
	connectortest.Must(t, s2.Open(task))
	b := array.NewRecordBuilder(mem, under)
	b.Field(0).(*array.Int64Builder).Append(1)
	b.Field(1).(*array.StringBuilder).Append("x")
	connectortest.Must(t, s2.Write(exec.Batch{Rec: b.NewRecordBatch()}))
	b.Release()
	connectortest.Must(t, s2.PreCommit(4))
	connectortest.Must(t, s2.Commit(4))
	connectortest.Must(t, s2.Close())
	if got, err := newUnder().(exec.PublishChecker).PublishedAfter(task, 3); err != nil || got != filepath.Join(dir2, "_d=x", "j1-sink-0-4-0.csv") {
		t.Fatalf("PublishedAfter(3) = %q, %v", got, err)
	}
}
