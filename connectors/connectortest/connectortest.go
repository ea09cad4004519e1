// Package connectortest holds what the connector packages' tests share: a leak-checked allocator, task contexts
// as the runtime builds them, a small two-column schema and its batches, and file listings. It is imported by
// tests only (also exec/operators' external tests of its sinks, which cannot import it from inside the package:
// it imports exec/operators); no connector uses it.
package connectortest

import (
	"context"
	"fmt"
	"math"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
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
	// State is the subtask's checkpointed state (nil: none).
	State state.Backend
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
		Alloc: mem, FS: o.FS, State: o.State,
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

// RequireSlowThrottle checks a source throttled to one row every two seconds: the first row at once, then Idle
// without sleeping in Produce (a wait inside Produce would count as busy time and hold barriers back), with a
// wake-up channel (exec.IdleWaiter) that is not closed before the next row is due.
func RequireSlowThrottle(t *testing.T, mem memory.Allocator, src exec.Source) {
	t.Helper()
	Must(t, src.Open(NewTask(mem, TaskOpts{})))
	ctx := context.Background()
	res, err := src.Produce(ctx) // the first row is due at once
	Must(t, err)
	if res.Status != exec.Produced || res.Batch.Rows() != 1 {
		t.Fatalf("first throttled produce: %v, %d rows", res.Status, res.Batch.Rows())
	}
	res.Batch.Release()
	start := time.Now()
	res, err = src.Produce(ctx) // the next one is two seconds away
	Must(t, err)
	if el := time.Since(start); el > time.Second || res.Status != exec.Idle {
		t.Fatalf("produce before the next row is due: %v after %v", res.Status, el)
	}
	iw, ok := src.(exec.IdleWaiter)
	if !ok || iw.IdleWait() == nil {
		t.Fatal("a throttled source gives the runtime no wake-up channel")
	}
	select {
	case <-iw.IdleWait():
		t.Fatal("woken before the next row is due")
	default:
	}
	Must(t, src.Close())
}

// DrainBounded reads a bounded source to its end, checking that no batch exceeds limit rows and that there is no
// watermark, and returns the batches and the offset taken before each of them and after the last.
func DrainBounded(t testing.TB, src exec.Source, limit int) (recs []arrow.RecordBatch, offsets [][]byte) {
	t.Helper()
	for {
		off, err := src.SnapshotOffset()
		Must(t, err)
		offsets = append(offsets, off)
		res, err := src.Produce(context.Background())
		Must(t, err)
		switch res.Status {
		case exec.Finished:
			return recs, offsets
		case exec.Produced:
			n := res.Batch.Rows()
			if n == 0 || n > limit {
				t.Fatalf("batch of %d rows, limit %d", n, limit)
			}
			if res.WM != exec.MinWatermark {
				t.Fatalf("watermark %d", res.WM)
			}
			recs = append(recs, res.Batch.Rec)
		default:
			t.Fatalf("status %d", res.Status)
		}
	}
}

// BenchReadAll times reading a bounded source of rows rows to its end b.N times, a fresh one from newSource each
// time.
func BenchReadAll(b *testing.B, mem memory.Allocator, rows int, newSource func() exec.Source) {
	b.ResetTimer()
	for range b.N {
		src := newSource()
		Must(b, src.Open(NewTask(mem, TaskOpts{})))
		n := 0
		for {
			res, err := src.Produce(context.Background())
			Must(b, err)
			if res.Status == exec.Finished {
				break
			}
			n += res.Batch.Rows()
			res.Batch.Rec.Release()
		}
		Must(b, src.Close())
		if n != rows {
			b.Fatalf("%d rows", n)
		}
	}
}

// IDs reads the id column of batches (released).
func IDs(recs []arrow.RecordBatch) []int64 {
	var ids []int64
	for _, r := range recs {
		ids = append(ids, r.Column(0).(*array.Int64).Int64Values()...)
		r.Release()
	}
	return ids
}

// Decimal is the DECIMAL of the decimal digits s (a test's literal; it panics on a bad one).
func Decimal(s string) decimal128.Num {
	v, ok := new(big.Int).SetString(s, 10)
	if !ok {
		panic(s)
	}
	return decimal128.FromBigInt(v)
}

// RequireSameRecords compares two batches value for value: floats by their bits, so NaN, -0 and infinities count.
func RequireSameRecords(t testing.TB, what string, want, got arrow.RecordBatch) {
	t.Helper()
	if !want.Schema().Equal(got.Schema()) {
		t.Fatalf("%s: schema\n%s\nwant\n%s", what, got.Schema(), want.Schema())
	}
	if want.NumRows() != got.NumRows() {
		t.Fatalf("%s: %d rows, want %d", what, got.NumRows(), want.NumRows())
	}
	for c := range int(want.NumCols()) {
		w, g := want.Column(c), got.Column(c)
		same := true
		switch w := w.(type) {
		case *array.Float32:
			g := g.(*array.Float32)
			for i := range w.Len() {
				if w.IsNull(i) != g.IsNull(i) || !w.IsNull(i) && math.Float32bits(w.Value(i)) != math.Float32bits(g.Value(i)) {
					same = false
				}
			}
		case *array.Float64:
			g := g.(*array.Float64)
			for i := range w.Len() {
				if w.IsNull(i) != g.IsNull(i) || !w.IsNull(i) && math.Float64bits(w.Value(i)) != math.Float64bits(g.Value(i)) {
					same = false
				}
			}
		default:
			same = array.Equal(w, g)
		}
		if same {
			continue
		}
		for i := range w.Len() {
			if !array.SliceEqual(w, int64(i), int64(i+1), g, int64(i), int64(i+1)) {
				t.Fatalf("%s: column %s row %d: %v, want %v", what, want.ColumnName(c), i, g.ValueStr(i), w.ValueStr(i))
			}
		}
		t.Fatalf("%s: column %s differs (floats)", what, want.ColumnName(c))
	}
}

// TypedRows builds rows [from, to) of all-types test data: row r < edgeRows holds edges' values of each column,
// cycling; after those every third row is NULL in nullable columns, and value(column, r, h) gives the others, h
// being a hash of r.
func TypedRows(mem memory.Allocator, schema *arrow.Schema, edges map[string][]any, edgeRows, from, to int,
	value func(col string, r int, h uint64) any) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	for r := from; r < to; r++ {
		h := uint64(r)*0x9E3779B97F4A7C15 ^ uint64(r)<<7
		for c, f := range schema.Fields() {
			fb := b.Field(c)
			if r < edgeRows {
				e := edges[f.Name]
				AppendAny(fb, e[r%len(e)])
				continue
			}
			if f.Nullable && r%3 == 2 {
				fb.AppendNull()
				continue
			}
			AppendAny(fb, value(f.Name, r, h))
		}
	}
	return b.NewRecordBatch()
}

// TypedText is a text value of row r of hash h; every fifth row's ends in suffix.
func TypedText(r int, h uint64, suffix string) string {
	v := fmt.Sprintf("row %d %x", r, h)
	if r%5 == 0 {
		v += suffix
	}
	return v
}

// TypedValue is the value of the columns the all-types schemas name alike, for row r of hash h.
func TypedValue(col string, r int, h uint64) any {
	switch col {
	case "b":
		return h&1 == 1
	case "i8":
		return int8(h)
	case "i16":
		return int16(h)
	case "i32":
		return int32(h)
	case "i64":
		return int64(h)
	case "u8":
		return uint8(h)
	case "u16":
		return uint16(h)
	case "u32":
		return uint32(h)
	case "u64":
		return h
	case "f4":
		return float32(int32(h)) / 7
	case "f8":
		return float64(int64(h)) / 3
	case "bin":
		return []byte(fmt.Sprintf("%x", h))[:r%9]
	case "dec9":
		return decimal128.FromI64(int64(h) % 999999999)
	case "dec18":
		return decimal128.FromI64(int64(h) % 999999999999999999)
	case "dec20":
		return decimal128.FromI64(int64(h)).Mul(decimal128.FromI64(int64(r%7) + 1))
	case "dec38":
		return decimal128.New(int64(h)>>3, h*31)
	}
	panic("no value for column " + col)
}

func AppendAny(b array.Builder, v any) {
	switch b := b.(type) {
	case *array.BooleanBuilder:
		b.Append(v.(bool))
	case *array.Int8Builder:
		b.Append(v.(int8))
	case *array.Int16Builder:
		b.Append(v.(int16))
	case *array.Int32Builder:
		b.Append(v.(int32))
	case *array.Int64Builder:
		b.Append(v.(int64))
	case *array.Uint8Builder:
		b.Append(v.(uint8))
	case *array.Uint16Builder:
		b.Append(v.(uint16))
	case *array.Uint32Builder:
		b.Append(v.(uint32))
	case *array.Uint64Builder:
		b.Append(v.(uint64))
	case *array.Float32Builder:
		b.Append(v.(float32))
	case *array.Float64Builder:
		b.Append(v.(float64))
	case *array.StringBuilder:
		b.Append(v.(string))
	case *array.BinaryBuilder:
		b.Append(v.([]byte))
	case *array.Date32Builder:
		b.Append(v.(arrow.Date32))
	case *array.TimestampBuilder:
		b.Append(v.(arrow.Timestamp))
	case *array.Decimal128Builder:
		b.Append(v.(decimal128.Num))
	case *array.DurationBuilder:
		b.Append(v.(arrow.Duration))
	default:
		panic(fmt.Sprintf("builder %T", b))
	}
}

// CommitTxns writes the transactions through a two-phase sink: transaction i holds the batches (taken over) and is
// pre-committed as checkpoint i+1; the last checkpoint is committed at the end.
func CommitTxns(t testing.TB, mem memory.Allocator, s exec.Sink, txns ...[]arrow.RecordBatch) {
	t.Helper()
	Must(t, s.Open(NewTask(mem, TaskOpts{})))
	for i, txn := range txns {
		for _, rec := range txn {
			Must(t, s.Write(exec.Batch{Rec: rec}))
		}
		Must(t, s.PreCommit(uint64(i+1)))
	}
	Must(t, s.Commit(uint64(len(txns))))
	Must(t, s.Close())
}

// BatchesOf returns the rows [from, to) of gen in batches of at most size rows.
func BatchesOf(mem memory.Allocator, from, to, size int, gen func(memory.Allocator, int, int) arrow.RecordBatch) []arrow.RecordBatch {
	var out []arrow.RecordBatch
	for r := from; r < to; r += size {
		out = append(out, gen(mem, r, min(r+size, to)))
	}
	return out
}

// OpenSource opens src in ctx, restored at offset unless it is nil.
func OpenSource(t testing.TB, src exec.Source, ctx *exec.TaskContext, offset []byte) exec.Source {
	t.Helper()
	if offset != nil {
		Must(t, src.RestoreOffset(offset))
	}
	Must(t, src.Open(ctx))
	return src
}

// Concat concatenates batches into one (releasing them).
func Concat(t testing.TB, mem memory.Allocator, schema *arrow.Schema, recs []arrow.RecordBatch) arrow.RecordBatch {
	t.Helper()
	defer ReleaseAll(recs)
	rec, err := exec.ConcatRecords(mem, schema, recs)
	Must(t, err)
	return rec
}

// SortedLines writes rows in text form (textform.Rows, engine.Result.Rows) as "a|b|NULL" lines, sorted.
func SortedLines(rows [][]*string) []string {
	out := make([]string, 0, len(rows))
	for _, r := range rows {
		parts := make([]string, len(r))
		for i, v := range r {
			if v == nil {
				parts[i] = "NULL"
			} else {
				parts[i] = *v
			}
		}
		out = append(out, strings.Join(parts, "|"))
	}
	slices.Sort(out)
	return out
}

func ReleaseAll(recs []arrow.RecordBatch) {
	for _, r := range recs {
		r.Release()
	}
}

// RequireRestores checks a bounded source's offsets: recs (taken over) are a first read, offsets[i] the offset
// drainBounded took before recs[i] (and after the last), and rows the rows they must hold in all. restore(i, off,
// full, start) reads a fresh source restored at off to its end: it must read the rows of full from start on.
func RequireRestores(t testing.TB, mem memory.Allocator, schema *arrow.Schema, recs []arrow.RecordBatch, offsets [][]byte, rows int,
	restore func(i int, off []byte, full arrow.RecordBatch, start int64) []arrow.RecordBatch) {
	t.Helper()
	starts := []int64{0}
	for _, r := range recs {
		starts = append(starts, starts[len(starts)-1]+r.NumRows())
	}
	full := Concat(t, mem, schema, recs)
	defer full.Release()
	if int(full.NumRows()) != rows {
		t.Fatalf("%d rows, want %d", full.NumRows(), rows)
	}
	for i, off := range offsets {
		RequireRowsFrom(t, mem, fmt.Sprintf("restore at batch %d", i), full, starts[i], restore(i, off, full, starts[i]))
	}
}

// RequireRowsFrom requires recs (taken over) to hold the rows of full from row from on.
func RequireRowsFrom(t testing.TB, mem memory.Allocator, what string, full arrow.RecordBatch, from int64, recs []arrow.RecordBatch) {
	t.Helper()
	got := Concat(t, mem, full.Schema(), recs)
	defer got.Release()
	want := full.NewSlice(from, full.NumRows())
	defer want.Release()
	RequireSameRecords(t, what, want, got)
}

// RequireOpenFails requires src, restored at off, to fail Open in ctx with an error containing want.
func RequireOpenFails(t testing.TB, src exec.Source, off []byte, ctx *exec.TaskContext, want, what string) {
	t.Helper()
	Must(t, src.RestoreOffset(off))
	if err := src.Open(ctx); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("%s: %v", what, err)
	}
	Must(t, src.Close())
}

// RequireSubtaskFiles checks how a bounded source splits 5 files among subtasks, file f holding the ids 10f and
// 10f+1: at each parallelism par, read(sub, par) returns the ids subtask sub read, which must be those of files
// sub, sub+par, ... in order, and every id must be read once.
func RequireSubtaskFiles(t testing.TB, pars []int, read func(sub, par int) []int64) {
	t.Helper()
	for _, par := range pars {
		seen := map[int64]bool{}
		for sub := range par {
			ids := read(sub, par)
			var want []int64
			for f := sub; f < 5; f += par {
				want = append(want, int64(10*f), int64(10*f+1))
			}
			if fmt.Sprint(ids) != fmt.Sprint(want) {
				t.Errorf("subtask %d of %d read %v, want %v", sub, par, ids, want)
			}
			for _, id := range ids {
				if seen[id] {
					t.Errorf("parallelism %d: row %d read twice", par, id)
				}
				seen[id] = true
			}
		}
		if len(seen) != 10 {
			t.Errorf("parallelism %d: %d rows read, want 10", par, len(seen))
		}
	}
}

// RequireRowProgress opens src as subtask sub of par (restored at offset unless it is nil) and reads it to its
// end, checking its exec.SourceProgress against what it produced: the total is known and never changes; the records
// left fall by each batch's rows and end at 0; a source read from its start has total records left at Open. It
// returns the rows read and the total.
func RequireRowProgress(t *testing.T, mem memory.Allocator, src exec.Source, offset []byte, sub, par int) (read, total int64) {
	t.Helper()
	sp, ok := src.(exec.SourceProgress)
	if !ok {
		t.Fatalf("%T is not an exec.SourceProgress", src)
	}
	if offset != nil {
		Must(t, src.RestoreOffset(offset))
	}
	Must(t, src.Open(NewTask(mem, TaskOpts{Sub: sub, Par: par})))
	defer func() { Must(t, src.Close()) }()
	lag, _, total := sp.Progress()
	if total < 0 || lag < 0 || lag > total {
		t.Fatalf("progress at open: %d records left of %d", lag, total)
	}
	if offset == nil && lag != total {
		t.Fatalf("progress at open of a fresh source: %d records left of %d", lag, total)
	}
	start := lag
	for {
		res, err := src.Produce(context.Background())
		Must(t, err)
		if res.Status == exec.Finished {
			break
		}
		n := int64(res.Batch.Rows())
		res.Batch.Release()
		read += n
		l, _, tot := sp.Progress()
		if tot != total || l != start-read {
			t.Fatalf("progress after %d rows read: %d left of %d, want %d of %d", read, l, tot, start-read, total)
		}
	}
	if l, _, _ := sp.Progress(); l != 0 {
		t.Fatalf("progress at the end: %d records left", l)
	}
	return read, total
}
