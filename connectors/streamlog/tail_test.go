package streamlog

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/clinksql/clinksql/connectors/connectortest"
	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/state"
)

// tailEvents drains what t has now, as "time:+id" / "time:-id" / "time:progress" words; snapshot rows are
// marked "time:=id".
func tailEvents(t *testing.T, tl *Tail) []string {
	t.Helper()
	var out []string
	for {
		ev, ok, err := tl.Next()
		connectortest.Must(t, err)
		if !ok {
			return out
		}
		if ev.Progress {
			out = append(out, fmt.Sprintf("%d:progress", ev.Time))
			continue
		}
		col := ev.Batch.Rec.Column(0).(*array.Int64)
		for i := range col.Len() {
			sign := "+"
			switch {
			case ev.Snapshot:
				sign = "="
			case ev.Batch.Kind(i) == exec.Delete || ev.Batch.Kind(i) == exec.UpdateBefore:
				sign = "-"
			}
			out = append(out, fmt.Sprintf("%d:%s%d", ev.Time, sign, col.Value(i)))
		}
		ev.Batch.Release()
	}
}

func wantEvents(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("%s: got %q, want %q", what, got, want)
	}
}

// pins: a Tail hands out the view's rows as of the frontier (retractions folded), then progress; a checkpoint's
// changes only once Advance says its commit ended, even when some of its segments are published already (two sink
// subtasks); changes in log order with their kinds; progress after each Advance; a reopened log's frontier is the
// highest checkpoint its segments name; a dropped log ends the Tail.
func TestTailSnapshotThenCheckpoints(t *testing.T) {
	mem := connectortest.CheckedAlloc(t)
	dir := t.TempDir()
	l, err := Create(state.OS, dir, connectortest.KVSchema)
	connectortest.Must(t, err)
	completed := map[uint64]bool{}
	sinks := make([]exec.Sink, 2)
	for sub := range sinks {
		sinks[sub] = NewSink(l)
		connectortest.Must(t, sinks[sub].Open(connectortest.NewTask(mem, connectortest.TaskOpts{Sub: sub, Par: 2, Completed: completed})))
	}
	write := func(sub int, kinds []exec.RowKind, ids ...int64) {
		b := connectortest.KVBatch(mem, ids...)
		defer b.Release()
		b.Kinds = kinds
		connectortest.Must(t, sinks[sub].Write(b))
	}
	checkpoint := func(id uint64, subs ...int) { // pre-commit every sink, commit those named
		for _, s := range sinks {
			connectortest.Must(t, s.PreCommit(id))
		}
		completed[id] = true
		for _, sub := range subs {
			connectortest.Must(t, sinks[sub].Commit(id))
		}
	}
	write(0, nil, 1, 2)
	write(1, []exec.RowKind{exec.Insert, exec.Delete}, 3, 3)
	checkpoint(1, 0, 1)
	l.Advance(1)
	write(0, []exec.RowKind{exec.Delete}, 1)
	checkpoint(2, 0) // published by subtask 0 only so far

	tl := l.NewTail(mem, true)
	defer tl.Close()
	if tl.Lag() != 0 {
		t.Fatalf("lag before the snapshot: %d", tl.Lag())
	}
	wantEvents(t, "snapshot", tailEvents(t, tl), "1:=1", "1:=2", "2:progress")
	if tl.Lag() == 0 {
		t.Fatal("a published segment of checkpoint 2 is not counted as lag")
	}
	write(1, []exec.RowKind{exec.UpdateBefore, exec.UpdateAfter}, 2, 2)
	connectortest.Must(t, sinks[1].Commit(2)) // nothing written for it before: no segment
	wantEvents(t, "before Advance(2)", tailEvents(t, tl))
	wake := tl.Wait()
	l.Advance(2)
	select {
	case <-wake:
	default:
		t.Fatal("Advance did not wake the tail")
	}
	wantEvents(t, "after Advance(2)", tailEvents(t, tl), "2:-1", "3:progress")
	checkpoint(3, 0, 1)
	l.Advance(3)
	wantEvents(t, "checkpoint 3", tailEvents(t, tl), "3:-2", "3:+2", "4:progress")
	l.Advance(4) // a checkpoint without changes
	wantEvents(t, "checkpoint 4", tailEvents(t, tl), "5:progress")
	if tl.Lag() != 0 {
		t.Fatalf("lag after reading everything: %d", tl.Lag())
	}
	for _, s := range sinks {
		connectortest.Must(t, s.Close())
	}

	// A new process: the frontier is where the segments end; SNAPSHOT = false skips the rows.
	l2, err := Open(state.OS, dir, connectortest.KVSchema)
	connectortest.Must(t, err)
	if l2.Frontier() != 3 {
		t.Fatalf("frontier at open: %d, want 3", l2.Frontier())
	}
	tl2 := l2.NewTail(mem, true)
	defer tl2.Close()
	wantEvents(t, "snapshot after reopening", tailEvents(t, tl2), "3:=2", "4:progress")
	tl3 := l2.NewTail(mem, false)
	defer tl3.Close()
	wantEvents(t, "without a snapshot", tailEvents(t, tl3), "4:progress")
	l2.Drop()
	if _, _, err := tl2.Next(); !errors.Is(err, ErrDropped) {
		t.Fatalf("after Drop: %v", err)
	}
}

// pins: a segment that is gone when the Tail reaches it fails the read with the segment named; the Tail never
// skips it.
func TestTailMissingSegmentFails(t *testing.T) {
	mem := connectortest.CheckedAlloc(t)
	dir := t.TempDir()
	l, err := Create(state.OS, dir, connectortest.KVSchema)
	connectortest.Must(t, err)
	tl := l.NewTail(mem, true)
	defer tl.Close()
	wantEvents(t, "empty", tailEvents(t, tl), "1:progress")
	b := connectortest.KVBatch(mem, 7)
	connectortest.Must(t, l.Append(b))
	b.Release()
	entries, err := os.ReadDir(dir)
	connectortest.Must(t, err)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "seg-") {
			connectortest.Must(t, os.Remove(filepath.Join(dir, e.Name())))
		}
	}
	for range 2 {
		if _, _, err := tl.Next(); err == nil || !strings.Contains(err.Error(), "segment 1") {
			t.Fatalf("reading a removed segment: %v", err)
		}
	}
}
