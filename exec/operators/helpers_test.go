package operators

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/state"
)

// checkedAlloc returns an allocator that fails the test if anything allocated through it is still live at the
// end.
func checkedAlloc(t testing.TB) *memory.CheckedAllocator {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	return mem
}

type taskOpts struct {
	job, op   string
	sub, par  int
	fs        state.FS
	completed map[uint64]bool
}

func newTask(mem memory.Allocator, o taskOpts) *exec.TaskContext {
	if o.job == "" {
		o.job = "j1"
	}
	if o.op == "" {
		o.op = "sink"
	}
	if o.par == 0 {
		o.par = 1
	}
	completed := o.completed
	return &exec.TaskContext{
		Job: o.job, Operator: o.op, Subtask: o.sub, Parallelism: o.par,
		Alloc: mem, FS: o.fs,
		IsCompleted: func(id uint64) bool { return completed[id] },
	}
}

// kvSchema is the small schema of the protocol tests: (id BIGINT, s VARCHAR).
var kvSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

// kvBatch builds a batch of rows (i, "v<i>") for i in ids.
func kvBatch(mem memory.Allocator, ids ...int64) exec.Batch {
	b := array.NewRecordBuilder(mem, kvSchema)
	defer b.Release()
	for _, i := range ids {
		b.Field(0).(*array.Int64Builder).Append(i)
		b.Field(1).(*array.StringBuilder).Append("v" + strconv.FormatInt(i, 10))
	}
	return exec.Batch{Rec: b.NewRecordBatch()}
}

// kvCSV is the CSV the file sink must write for kvBatch(ids...).
func kvCSV(ids ...int64) string {
	var sb strings.Builder
	for _, i := range ids {
		sb.WriteString(strconv.FormatInt(i, 10) + ",v" + strconv.FormatInt(i, 10) + "\n")
	}
	return sb.String()
}

// listFiles returns the regular files under dir, relative to it, sorted.
func listFiles(t testing.TB, dir string) []string {
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

// committedFiles returns the files directly in dir (what a reader of the sink's path sees).
func committedFiles(t testing.TB, dir string) []string {
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

func readFile(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func releaseBatches(bs []exec.Batch) {
	for _, b := range bs {
		b.Release()
	}
}
