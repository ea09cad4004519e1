package streamlog

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/clinksql/clinksql/connectors/connectortest"
	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/state"
)

// drainSource reads a source until it is Finished (bounded) or Idle (caught up), and returns the ids it produced,
// negated for retractions.
func drainSource(t *testing.T, src exec.Source) []int64 {
	t.Helper()
	var ids []int64
	for {
		res, err := src.Produce(context.Background())
		connectortest.Must(t, err)
		if res.Status != exec.Produced {
			return ids
		}
		col := res.Batch.Rec.Column(0).(*array.Int64)
		for i := range col.Len() {
			v := col.Value(i)
			if k := res.Batch.Kind(i); k == exec.Delete || k == exec.UpdateBefore {
				v = -v
			}
			ids = append(ids, v)
		}
		res.Batch.Release()
	}
}

// pins: INSERT ... VALUES segments are readable in order at once; a job's rows appear only when its checkpoint
// commits, retractions included; a reader resumes exactly at its restored offset; a reopened log continues the
// sequence.
func TestLogAppendCommitAndRead(t *testing.T) {
	mem := connectortest.CheckedAlloc(t)
	dir := t.TempDir()
	l, err := Create(state.OS, dir, connectortest.KVSchema)
	connectortest.Must(t, err)
	appendIDs := func(l *Log, ids ...int64) {
		b := connectortest.KVBatch(mem, ids...)
		defer b.Release()
		connectortest.Must(t, l.Append(b))
	}
	appendIDs(l, 1, 2)
	appendIDs(l, 3)

	sink := NewSink(l)
	completed := map[uint64]bool{}
	connectortest.Must(t, sink.Open(connectortest.NewTask(mem, connectortest.TaskOpts{Completed: completed})))
	b := connectortest.KVBatch(mem, 4, 5)
	b.Kinds = []exec.RowKind{exec.Insert, exec.Delete}
	connectortest.Must(t, sink.Write(b))
	connectortest.Must(t, sink.PreCommit(7))

	src := NewSource(SourceConfig{Log: l})
	connectortest.Must(t, src.Open(connectortest.NewTask(mem, connectortest.TaskOpts{})))
	if got := drainSource(t, src); !slices.Equal(got, []int64{1, 2, 3}) {
		t.Fatalf("before commit: %v", got)
	}
	off, err := src.SnapshotOffset()
	connectortest.Must(t, err)
	connectortest.Must(t, sink.Commit(7))
	connectortest.Must(t, sink.Commit(7)) // idempotent
	if got := drainSource(t, src); !slices.Equal(got, []int64{4, -5}) {
		t.Fatalf("after commit: %v", got)
	}
	connectortest.Must(t, src.Close())
	connectortest.Must(t, sink.Close())

	// A restored reader continues after 3; a reopened log appends after the committed segment.
	l2, err := Open(state.OS, dir, connectortest.KVSchema)
	connectortest.Must(t, err)
	if l2.Next() != 4 {
		t.Fatalf("reopened Next = %d, want 4", l2.Next())
	}
	appendIDs(l2, 6)
	src2 := NewSource(SourceConfig{Log: l2, Bounded: true})
	connectortest.Must(t, src2.RestoreOffset(off))
	connectortest.Must(t, src2.Open(connectortest.NewTask(mem, connectortest.TaskOpts{})))
	if got := drainSource(t, src2); !slices.Equal(got, []int64{4, -5, 6}) {
		t.Fatalf("restored: %v", got)
	}
	connectortest.Must(t, src2.Close())
}

// pins: a staged transaction whose checkpoint never completed is not published by recovery.
func TestLogSinkRecoveryDropsUncompleted(t *testing.T) {
	mem := connectortest.CheckedAlloc(t)
	l, err := Create(state.OS, t.TempDir(), connectortest.KVSchema)
	connectortest.Must(t, err)
	sink := NewSink(l)
	connectortest.Must(t, sink.Open(connectortest.NewTask(mem, connectortest.TaskOpts{})))
	connectortest.Must(t, sink.Write(connectortest.KVBatch(mem, 1)))
	connectortest.Must(t, sink.PreCommit(1))
	connectortest.Must(t, sink.Write(connectortest.KVBatch(mem, 2)))
	connectortest.Must(t, sink.PreCommit(2))
	connectortest.Must(t, sink.Close())

	again := NewSink(l)
	connectortest.Must(t, again.Open(connectortest.NewTask(mem, connectortest.TaskOpts{Completed: map[uint64]bool{1: true}})))
	connectortest.Must(t, again.Close())
	src := NewSource(SourceConfig{Log: l, Bounded: true})
	connectortest.Must(t, src.Open(connectortest.NewTask(mem, connectortest.TaskOpts{})))
	if got := drainSource(t, src); !slices.Equal(got, []int64{1}) {
		t.Fatalf("after recovery: %v", got)
	}
	connectortest.Must(t, src.Close())
}

// Pins issue 11: a log's segments had no checksums and Open took whatever segments it found. Now a flipped byte
// or a truncation fails the read naming the segment, and a missing segment (a gap, the last one, or LAST itself)
// or a missing directory fails Open naming what is missing.
func TestLogRefusesDamage(t *testing.T) {
	mem := connectortest.CheckedAlloc(t)
	build := func(t *testing.T) (string, []string) {
		dir := t.TempDir()
		l, err := Create(state.OS, dir, connectortest.KVSchema)
		connectortest.Must(t, err)
		for i := int64(1); i <= 3; i++ {
			b := connectortest.KVBatch(mem, i)
			connectortest.Must(t, l.Append(b))
			b.Release()
		}
		segs, _ := filepath.Glob(filepath.Join(dir, "seg-*"))
		if len(segs) != 3 {
			t.Fatalf("segments %v", segs)
		}
		return dir, segs
	}
	read := func(dir string) error {
		l, err := Open(state.OS, dir, connectortest.KVSchema)
		if err != nil {
			return err
		}
		src := NewSource(SourceConfig{Log: l, Bounded: true})
		connectortest.Must(t, src.Open(connectortest.NewTask(mem, connectortest.TaskOpts{})))
		defer src.Close()
		for {
			res, err := src.Produce(context.Background())
			if err != nil {
				return err
			}
			if res.Status == exec.Finished {
				return nil
			}
			res.Batch.Release()
		}
	}
	damages := []struct {
		name   string
		damage func(dir string, segs []string) string // returns the path the error must name
	}{
		{"flip", func(dir string, segs []string) string {
			d, _ := os.ReadFile(segs[1])
			d[len(d)/2] ^= 0x01
			os.WriteFile(segs[1], d, 0o644)
			return segs[1]
		}},
		{"truncate", func(dir string, segs []string) string {
			os.Truncate(segs[2], 20)
			return segs[2]
		}},
		{"delete middle", func(dir string, segs []string) string { os.Remove(segs[1]); return segs[1] }},
		{"delete last", func(dir string, segs []string) string { os.Remove(segs[2]); return segs[2] }},
		{"delete LAST", func(dir string, segs []string) string {
			p := filepath.Join(dir, "LAST")
			os.Remove(p)
			return p
		}},
		{"delete directory", func(dir string, segs []string) string { os.RemoveAll(dir); return dir }},
	}
	for _, d := range damages {
		t.Run(d.name, func(t *testing.T) {
			dir, segs := build(t)
			connectortest.Must(t, read(dir))
			want := d.damage(dir, segs)
			err := read(dir)
			if c, ok := state.IsCorrupt(err); !ok || c.Path != want {
				t.Fatalf("%v, want a CorruptError naming %s", err, want)
			}
		})
	}
}

// syncDirFaults passes everything to the OS but fails the next syncs directory fsyncs and removes removals.
type syncDirFaults struct {
	state.FS
	syncs, removes int
}

func (f *syncDirFaults) SyncDir(name string) error {
	if f.syncs > 0 {
		f.syncs--
		return state.ErrInjected
	}
	return f.FS.SyncDir(name)
}

func (f *syncDirFaults) Remove(name string) error {
	if f.removes > 0 {
		f.removes--
		return state.ErrInjected
	}
	return f.FS.Remove(name)
}

// pins: an append whose segment was renamed into place but whose directory fsync failed reports a failure and
// changes nothing, after a restart too (before, the segment stayed: the failed INSERT's rows appeared after a
// restart, or were overwritten by the next append's segment of the same number); and when the segment cannot be
// taken back, the log refuses every later append, naming the segment, instead of appending after a segment a
// crash may or may not keep.
func TestLogAppendNotSyncedIsTakenBack(t *testing.T) {
	t.Setenv("CLINK_STATE_FSYNC", "1")
	mem := connectortest.CheckedAlloc(t)
	dir := t.TempDir()
	fsys := &syncDirFaults{FS: state.OS}
	l, err := Create(fsys, dir, connectortest.KVSchema)
	connectortest.Must(t, err)
	appendIDs := func(l *Log, ids ...int64) error {
		b := connectortest.KVBatch(mem, ids...)
		defer b.Release()
		return l.Append(b)
	}
	stored := func() []int64 {
		t.Helper()
		l2, err := Open(state.OS, dir, connectortest.KVSchema)
		connectortest.Must(t, err)
		src := NewSource(SourceConfig{Log: l2, Bounded: true})
		connectortest.Must(t, src.Open(connectortest.NewTask(mem, connectortest.TaskOpts{})))
		defer src.Close()
		return drainSource(t, src)
	}
	connectortest.Must(t, appendIDs(l, 1))

	fsys.syncs = 1
	if err := appendIDs(l, 2); !errors.Is(err, state.ErrNotSynced) || !errors.Is(err, state.ErrInjected) {
		t.Fatalf("append with a failed directory fsync: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, segmentName(2, ""))); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the failed append's segment is still there: %v", err)
	}
	if l.Next() != 2 {
		t.Fatalf("Next = %d after a failed append, want 2", l.Next())
	}
	connectortest.Must(t, appendIDs(l, 3))
	if got := stored(); !slices.Equal(got, []int64{1, 3}) {
		t.Fatalf("stored after a taken-back append: %v", got)
	}

	// The removal fails too: the segment stays, and the log refuses further appends until it is opened again.
	fsys.syncs, fsys.removes = 1, 1
	err = appendIDs(l, 4)
	if !errors.Is(err, state.ErrNotSynced) || !strings.Contains(err.Error(), "could not be taken back") ||
		!strings.Contains(err.Error(), segmentName(3, "")) {
		t.Fatalf("append that could not be taken back: %v", err)
	}
	if err2 := appendIDs(l, 5); err2 == nil || err2.Error() != err.Error() {
		t.Fatalf("append after a broken one: %v", err2)
	}
	if got := stored(); !slices.Equal(got, []int64{1, 3, 4}) {
		t.Fatalf("stored after the broken append (its segment stayed): %v", got)
	}
}
