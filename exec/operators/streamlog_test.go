package operators

import (
	"context"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"

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
		must(t, err)
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
	mem := checkedAlloc(t)
	dir := t.TempDir()
	l, err := OpenLog(state.OS, dir, kvSchema)
	must(t, err)
	appendIDs := func(l *Log, ids ...int64) {
		b := kvBatch(mem, ids...)
		defer b.Release()
		must(t, l.Append(b))
	}
	appendIDs(l, 1, 2)
	appendIDs(l, 3)

	sink := NewLogSink(l)
	completed := map[uint64]bool{}
	must(t, sink.Open(newTask(mem, taskOpts{completed: completed})))
	b := kvBatch(mem, 4, 5)
	b.Kinds = []exec.RowKind{exec.Insert, exec.Delete}
	must(t, sink.Write(b))
	must(t, sink.PreCommit(7))

	src := NewLogSource(LogSourceConfig{Log: l})
	must(t, src.Open(newTask(mem, taskOpts{})))
	if got := drainSource(t, src); !slices.Equal(got, []int64{1, 2, 3}) {
		t.Fatalf("before commit: %v", got)
	}
	off, err := src.SnapshotOffset()
	must(t, err)
	must(t, sink.Commit(7))
	must(t, sink.Commit(7)) // idempotent
	if got := drainSource(t, src); !slices.Equal(got, []int64{4, -5}) {
		t.Fatalf("after commit: %v", got)
	}
	must(t, src.Close())
	must(t, sink.Close())

	// A restored reader continues after 3; a reopened log appends after the committed segment.
	l2, err := OpenLog(state.OS, dir, kvSchema)
	must(t, err)
	if l2.Next() != 4 {
		t.Fatalf("reopened Next = %d, want 4", l2.Next())
	}
	appendIDs(l2, 6)
	src2 := NewLogSource(LogSourceConfig{Log: l2, Bounded: true})
	must(t, src2.RestoreOffset(off))
	must(t, src2.Open(newTask(mem, taskOpts{})))
	if got := drainSource(t, src2); !slices.Equal(got, []int64{4, -5, 6}) {
		t.Fatalf("restored: %v", got)
	}
	must(t, src2.Close())
}

// pins: a staged transaction whose checkpoint never completed is not published by recovery.
func TestLogSinkRecoveryDropsUncompleted(t *testing.T) {
	mem := checkedAlloc(t)
	l, err := OpenLog(state.OS, t.TempDir(), kvSchema)
	must(t, err)
	sink := NewLogSink(l)
	must(t, sink.Open(newTask(mem, taskOpts{})))
	must(t, sink.Write(kvBatch(mem, 1)))
	must(t, sink.PreCommit(1))
	must(t, sink.Write(kvBatch(mem, 2)))
	must(t, sink.PreCommit(2))
	must(t, sink.Close())

	again := NewLogSink(l)
	must(t, again.Open(newTask(mem, taskOpts{completed: map[uint64]bool{1: true}})))
	must(t, again.Close())
	src := NewLogSource(LogSourceConfig{Log: l, Bounded: true})
	must(t, src.Open(newTask(mem, taskOpts{})))
	if got := drainSource(t, src); !slices.Equal(got, []int64{1}) {
		t.Fatalf("after recovery: %v", got)
	}
	must(t, src.Close())
}
