// Package connectortest holds what the connector packages' tests share: a leak-checked allocator, task contexts
// as the runtime builds them, a small two-column schema and its batches, and file listings. It is imported by
// tests only; no connector uses it.
package connectortest

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/exec/operators"
	"github.com/clinksql/clinksql/state"
)

// CheckedAlloc returns an allocator that fails the test if anything allocated through it is still live at the
// end.
func CheckedAlloc(t testing.TB) *memory.CheckedAllocator {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	return mem
}

// TaskOpts are the fields of a task context a test sets; zero values take defaults (job j1, operator sink, one
// subtask).
type TaskOpts struct {
	Job, Op   string
	Sub, Par  int
	FS        state.FS
	Completed map[uint64]bool
}

// NewTask returns the task context of one subtask.
func NewTask(mem memory.Allocator, o TaskOpts) *exec.TaskContext {
	if o.Job == "" {
		o.Job = "j1"
	}
	if o.Op == "" {
		o.Op = "sink"
	}
	if o.Par == 0 {
		o.Par = 1
	}
	completed := o.Completed
	return &exec.TaskContext{
		Job: o.Job, Operator: o.Op, Subtask: o.Sub, Parallelism: o.Par,
		Alloc: mem, FS: o.FS,
		IsCompleted: func(id uint64) bool { return completed[id] },
	}
}

// KVSchema is the small schema of the protocol tests: (id BIGINT, s VARCHAR).
var KVSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

// KVBatch builds a batch of rows (i, "v<i>") for i in ids.
func KVBatch(mem memory.Allocator, ids ...int64) exec.Batch {
	b := array.NewRecordBuilder(mem, KVSchema)
	defer b.Release()
	for _, i := range ids {
		b.Field(0).(*array.Int64Builder).Append(i)
		b.Field(1).(*array.StringBuilder).Append("v" + strconv.FormatInt(i, 10))
	}
	return exec.Batch{Rec: b.NewRecordBatch()}
}

// KVCSV is the CSV the file sink must write for KVBatch(ids...).
func KVCSV(ids ...int64) string {
	var sb strings.Builder
	for _, i := range ids {
		sb.WriteString(strconv.FormatInt(i, 10) + ",v" + strconv.FormatInt(i, 10) + "\n")
	}
	return sb.String()
}

// ListFiles returns the regular files under dir, relative to it, sorted.
func ListFiles(t testing.TB, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, rel)
		}
		return nil
	})
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// CommittedFiles returns the files directly in dir (what a reader of the sink's path sees).
func CommittedFiles(t testing.TB, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if !e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out
}

// ReadFile returns a file's contents.
func ReadFile(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Must fails the test on an error.
func Must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// Run is what Drain read: the rows, and the watermark after each batch.
type Run struct {
	Rows []operators.Row
	WMs  []int64
}

// Drain opens src (after restoring offset, if any) as subtask sub of par and produces up to maxBatches batches
// (all when maxBatches < 0). It returns the rows, the watermarks, and the offset after the last batch.
func Drain(t *testing.T, mem memory.Allocator, src exec.Source, offset []byte, sub, par, maxBatches int) (Run, []byte) {
	t.Helper()
	if offset != nil {
		Must(t, src.RestoreOffset(offset))
	}
	Must(t, src.Open(NewTask(mem, TaskOpts{Sub: sub, Par: par})))
	var run Run
	for batches := 0; maxBatches < 0 || batches < maxBatches; {
		res, err := src.Produce(context.Background())
		Must(t, err)
		if res.Status == exec.Finished {
			break
		}
		if res.Status != exec.Produced {
			continue
		}
		rows, err := operators.GoRows(res.Batch)
		res.Batch.Release()
		Must(t, err)
		run.Rows = append(run.Rows, rows...)
		run.WMs = append(run.WMs, res.WM)
		batches++
	}
	off, err := src.SnapshotOffset()
	Must(t, err)
	Must(t, src.Close())
	return run, off
}

// BenchSource measures an unbounded source producing batches, and reports its rows per second as metric; it
// returns the rows it produced.
func BenchSource(b *testing.B, src exec.Source, metric string) int {
	if err := src.Open(NewTask(memory.NewGoAllocator(), TaskOpts{})); err != nil {
		b.Fatal(err)
	}
	defer src.Close()
	b.ReportAllocs()
	start := time.Now()
	rows := 0
	for b.Loop() {
		res, err := src.Produce(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		rows += res.Batch.Rows()
		res.Batch.Release()
	}
	b.ReportMetric(float64(rows)/time.Since(start).Seconds(), metric)
	return rows
}

// RequireSlowThrottle checks a source throttled to a row every two seconds or so: its first row is due at once,
// the next Produce is Idle after at most the throttle's longest wait, and one whose context is cancelled while it waits
// returns Idle at once.
func RequireSlowThrottle(t *testing.T, mem memory.Allocator, src exec.Source) {
	t.Helper()
	Must(t, src.Open(NewTask(mem, TaskOpts{})))
	ctx, cancel := context.WithCancel(context.Background())
	res, err := src.Produce(ctx) // the first row is due at once
	Must(t, err)
	if res.Status != exec.Produced || res.Batch.Rows() != 1 {
		t.Fatalf("first throttled produce: %v, %d rows", res.Status, res.Batch.Rows())
	}
	res.Batch.Release()
	res, err = src.Produce(ctx) // the next one is two seconds away: Idle after at most the throttle's longest wait
	Must(t, err)
	if res.Status != exec.Idle {
		t.Fatalf("produce before the next row is due: %v", res.Status)
	}
	go func() { time.Sleep(20 * time.Millisecond); cancel() }()
	start := time.Now()
	res, err = src.Produce(ctx)
	Must(t, err)
	if el := time.Since(start); el > 80*time.Millisecond || res.Status != exec.Idle {
		t.Fatalf("produce with a cancelled context: %v after %v", res.Status, el)
	}
	Must(t, src.Close())
}
