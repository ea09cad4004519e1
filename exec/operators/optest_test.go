package operators

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clinksql/clinksql/checkpoint"
	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/sql/sqlerr"
	"github.com/clinksql/clinksql/state"
)

// The operator test harness: it drives any exec.Operator directly, without the job runtime, over many shapes of
// the same input (cockroach's colexectestutils.RunTests, plus barriers, watermarks and restores):
//
//   - the input rows are cut into batches of 1 row, 3 rows and all rows at once (an explicit watermark in the
//     input always ends a batch);
//   - after every batch comes a watermark (when the case derives them from event time) and a barrier;
//   - the state lives in the memory backend or in Pebble;
//   - no restore, a restore at the middle barrier, or a restore at every barrier: Capture + Persist, Close the
//     operator and the backend, open a fresh backend from the persisted snapshot and a fresh operator, continue;
//   - optionally with random NULLs in the columns that are not keys or event time.
//
// Every shape must produce the same rows: the case's expected rows, or with random NULLs the rows of the plain
// all-at-once run. Output rows are compared as Postgres text forms, in order unless the case says sorted. Every
// run uses a checked allocator and must leave nothing allocated.

// opWM in an input is an explicit watermark: the harness calls OnWatermark with it (when it advances).
type opWM int64

// opCase is one operator test.
type opCase struct {
	name   string
	schema *arrow.Schema
	// input holds rows ([]any, one Go value per column, nil for NULL; see appendGoValue) and opWM watermarks.
	input []any
	op    func(subtask int) exec.Operator
	// timeCol, when >= 0, makes the harness send watermark max(event time so far) - delay after every batch.
	timeCol int
	delay   time.Duration
	// noNulls lists the columns random NULLs must not touch (keys, event time); randomNulls turns them on.
	noNulls     []int
	randomNulls bool
	// want is the expected output in Postgres text form, "|"-separated, NULL as "NULL", a non-insert row kind
	// as a prefix ("-D 1|2"). sorted compares as sets.
	want   []string
	sorted bool
	// wantErr, when set, is the SQLSTATE (5 characters) or a substring of the error the run must fail with.
	wantErr string
	// late and errors are the expected TaskContext.Late and Errors totals.
	late, errors int64
	// shapes, when set, replaces opShapes().
	shapes []opShape
}

// opShape is one way to feed a case.
type opShape struct {
	batch   int // rows per batch; 0 = all at once
	pebble  bool
	restore string // "", "mid", "every"
}

func (s opShape) String() string {
	b := "all"
	if s.batch > 0 {
		b = fmt.Sprint(s.batch)
	}
	be := "mem"
	if s.pebble {
		be = "pebble"
	}
	r := s.restore
	if r == "" {
		r = "none"
	}
	return fmt.Sprintf("batch=%s/%s/restore=%s", b, be, r)
}

func opShapes() []opShape {
	var out []opShape
	for _, b := range []int{1, 3, 0} {
		for _, pb := range []bool{false, true} {
			for _, r := range []string{"", "mid", "every"} {
				out = append(out, opShape{batch: b, pebble: pb, restore: r})
			}
		}
	}
	return out
}

// opResult is what one run produced.
type opResult struct {
	rows         []string
	late, errors int64
	err          error
}

// runOpCase runs c in every shape and checks each against the expectation.
func runOpCase(t *testing.T, c opCase) {
	t.Helper()
	t.Setenv("CLINK_STATE_FSYNC", "0") // restores are tested here, not durability (state's own tests do that)
	t.Run(c.name, func(t *testing.T) {
		input := c.input
		want := c.want
		if c.randomNulls {
			input = withRandomNulls(c, 1)
			ref := runOpShape(t, c, input, opShape{})
			if ref.err != nil {
				t.Fatalf("reference run with random NULLs: %v", ref.err)
			}
			want = ref.rows
		}
		shapes := c.shapes
		if shapes == nil {
			shapes = opShapes()
		}
		for _, sh := range shapes {
			r := runOpShape(t, c, input, sh)
			checkOpResult(t, c, sh, r, want)
		}
	})
}

func checkOpResult(t *testing.T, c opCase, sh opShape, r opResult, want []string) {
	t.Helper()
	if c.wantErr != "" {
		if r.err == nil {
			t.Fatalf("%s: no error, want %s; rows %q", sh, c.wantErr, r.rows)
		}
		if sqlerr.Code(r.err) != c.wantErr && !strings.Contains(r.err.Error(), c.wantErr) {
			t.Fatalf("%s: error %v (SQLSTATE %q), want %s", sh, r.err, sqlerr.Code(r.err), c.wantErr)
		}
		return
	}
	if r.err != nil {
		t.Fatalf("%s: %v", sh, r.err)
	}
	got := r.rows
	if c.sorted {
		got, want = slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("%s: rows\n got  %q\n want %q", sh, got, want)
	}
	if !c.randomNulls && (r.late != c.late || r.errors != c.errors) {
		t.Fatalf("%s: late %d errors %d, want late %d errors %d", sh, r.late, r.errors, c.late, c.errors)
	}
}

// withRandomNulls returns the input with about one value in five set to NULL outside c.noNulls.
func withRandomNulls(c opCase, seed uint64) []any {
	rng := rand.New(rand.NewPCG(seed, 42))
	out := make([]any, len(c.input))
	for i, it := range c.input {
		row, ok := it.([]any)
		if !ok {
			out[i] = it
			continue
		}
		row = slices.Clone(row)
		for col := range row {
			if !slices.Contains(c.noNulls, col) && col != c.timeCol && rng.IntN(5) == 0 {
				row[col] = nil
			}
		}
		out[i] = row
	}
	return out
}

// opStep is one call the harness makes: a batch of rows, or an explicit watermark.
type opStep struct {
	rows [][]any
	wm   *int64
}

func splitInput(input []any, batch int) []opStep {
	var steps []opStep
	var cur [][]any
	cut := func() {
		if len(cur) > 0 {
			steps = append(steps, opStep{rows: cur})
			cur = nil
		}
	}
	for _, it := range input {
		switch v := it.(type) {
		case []any:
			cur = append(cur, v)
			if batch > 0 && len(cur) == batch {
				cut()
			}
		case opWM:
			cut()
			wm := int64(v)
			steps = append(steps, opStep{wm: &wm})
		default:
			panic(fmt.Sprintf("harness: input item %T", it))
		}
	}
	cut()
	return steps
}

// opHarness is the state of one run.
type opHarness struct {
	t      *testing.T
	c      opCase
	sh     opShape
	mem    *memory.CheckedAllocator
	dir    string
	late   exec.Counter
	errs   exec.Counter
	be     state.Backend
	op     exec.Operator
	wm     int64
	maxTS  int64
	rows   []string
	nextID uint64
}

func runOpShape(t *testing.T, c opCase, input []any, sh opShape) opResult {
	t.Helper()
	h := &opHarness{t: t, c: c, sh: sh, dir: t.TempDir(), wm: exec.MinWatermark, maxTS: exec.MinWatermark}
	h.mem = memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer h.mem.AssertSize(t, 0)
	err := h.run(input)
	if h.op != nil {
		if cerr := h.op.Close(); err == nil {
			err = cerr
		}
	}
	if h.be != nil {
		if cerr := h.be.Close(); err == nil {
			err = cerr
		}
	}
	return opResult{rows: h.rows, late: h.late.Load(), errors: h.errs.Load(), err: err}
}

func (h *opHarness) open(restorePath string, restored uint64) error {
	opts := state.Options{RestorePath: restorePath, SharedDir: filepath.Join(h.dir, "shared")}
	var err error
	if h.sh.pebble {
		opts.Dir = filepath.Join(h.dir, fmt.Sprintf("work-%d", restored))
		h.be, err = state.OpenPebble(opts)
	} else {
		h.be, err = state.OpenMemory(opts)
	}
	if err != nil {
		return err
	}
	ctx := &exec.TaskContext{
		Job: "j1", Operator: "op", Subtask: 0, Parallelism: 1,
		KeyGroups: state.KeyGroupRange{Start: 0, End: state.DefaultKeyGroups}, MaxKeyGroups: state.DefaultKeyGroups,
		State: h.be, Restored: restored, Alloc: h.mem,
		IsCompleted: func(uint64) bool { return true },
		Errors:      &h.errs, Late: &h.late,
	}
	h.op = h.c.op(0)
	return h.op.Open(ctx)
}

// Emit collects an output batch as text rows.
func (h *opHarness) Emit(b exec.Batch) error {
	defer b.Release()
	h.rows = append(h.rows, batchText(b)...)
	return nil
}

func (h *opHarness) run(input []any) error {
	if err := h.open("", 0); err != nil {
		return err
	}
	steps := splitInput(input, h.sh.batch)
	batches := 0
	for _, s := range steps {
		if s.rows != nil {
			batches++
		}
	}
	mid := batches / 2
	seen := 0
	for _, s := range steps {
		if s.wm != nil {
			if err := h.watermark(*s.wm); err != nil {
				return err
			}
			continue
		}
		b := buildBatch(h.mem, h.c.schema, s.rows)
		if h.c.timeCol >= 0 {
			for _, row := range s.rows {
				if v := row[h.c.timeCol]; v != nil {
					h.maxTS = max(h.maxTS, goTimestamp(v))
				}
			}
		}
		if err := h.op.Process(0, b, h); err != nil {
			return err
		}
		seen++
		if seen == batches {
			break // the last batch is followed by end of input, not a barrier
		}
		if h.c.timeCol >= 0 && h.maxTS != exec.MinWatermark {
			if err := h.watermark(h.maxTS - h.c.delay.Microseconds()); err != nil {
				return err
			}
		}
		if err := h.barrier(h.sh.restore == "every" || (h.sh.restore == "mid" && seen == max(mid, 1))); err != nil {
			return err
		}
	}
	for _, s := range steps[len(steps)-trailingWMs(steps):] { // explicit watermarks after the last batch
		if err := h.watermark(*s.wm); err != nil {
			return err
		}
	}
	return h.watermark(exec.MaxWatermark)
}

func trailingWMs(steps []opStep) int {
	n := 0
	for i := len(steps) - 1; i >= 0 && steps[i].wm != nil; i-- {
		n++
	}
	return n
}

func (h *opHarness) watermark(wm int64) error {
	if wm <= h.wm {
		return nil
	}
	h.wm = wm
	return h.op.OnWatermark(wm, h)
}

// barrier runs OnBarrier and, when restore is set, a full restore cycle from the checkpoint it captured.
func (h *opHarness) barrier(restore bool) error {
	h.nextID++
	id := h.nextID
	if err := h.op.OnBarrier(checkpoint.Barrier{ID: id}); err != nil {
		return err
	}
	snap, err := h.be.Capture(id)
	if err != nil {
		return err
	}
	if !restore {
		snap.Release()
		return nil
	}
	path := filepath.Join(h.dir, fmt.Sprintf("chk-%d", id))
	if err := snap.Persist(path); err != nil {
		return err
	}
	if err := errors.Join(h.op.Close(), h.be.Close()); err != nil {
		return err
	}
	h.op, h.be = nil, nil
	return h.open(path, id)
}

// buildBatch builds a record of schema from Go values.
func buildBatch(mem memory.Allocator, schema *arrow.Schema, rows [][]any) exec.Batch {
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	for _, row := range rows {
		if len(row) != schema.NumFields() {
			panic(fmt.Sprintf("harness: row %v has %d values for %d columns", row, len(row), schema.NumFields()))
		}
		for c, v := range row {
			appendGoValue(b.Field(c), schema.Field(c).Type, v)
		}
	}
	return exec.Batch{Rec: b.NewRecordBatch()}
}

// testDay is the day test timestamps written as a time of day ("00:00:01.5") fall on.
const testDay = "2026-01-01 "

// goTimestamp reads a test timestamp: an int (microseconds since the epoch) or text, "2026-01-01 00:00:01.5" or
// just the time of day on testDay.
func goTimestamp(v any) int64 {
	switch v := v.(type) {
	case int:
		return int64(v)
	case int64:
		return v
	case string:
		if !strings.Contains(v, "-") {
			v = testDay + v
		}
		tm, err := time.Parse("2006-01-02 15:04:05.999999", v)
		if err != nil {
			panic(err)
		}
		return tm.UnixMicro()
	}
	panic(fmt.Sprintf("harness: %T is not a timestamp", v))
}

// appendGoValue appends a test value: nil is NULL; integers as int; floats as float64; decimals as text; strings;
// bools; timestamps as goTimestamp reads them (microseconds, scaled to the column's unit); dates as "2026-01-01".
func appendGoValue(b array.Builder, t arrow.DataType, v any) {
	if v == nil {
		b.AppendNull()
		return
	}
	switch b := b.(type) {
	case *array.Int64Builder:
		b.Append(int64(v.(int)))
	case *array.Int32Builder:
		b.Append(int32(v.(int)))
	case *array.Int16Builder:
		b.Append(int16(v.(int)))
	case *array.Int8Builder:
		b.Append(int8(v.(int)))
	case *array.Float64Builder:
		b.Append(v.(float64))
	case *array.Float32Builder:
		b.Append(float32(v.(float64)))
	case *array.StringBuilder:
		b.Append(v.(string))
	case *array.BinaryBuilder:
		b.Append([]byte(v.(string)))
	case *array.BooleanBuilder:
		b.Append(v.(bool))
	case *array.Decimal128Builder:
		dt := t.(*arrow.Decimal128Type)
		n, err := decimal128.FromString(v.(string), dt.Precision, dt.Scale)
		if err != nil {
			panic(err)
		}
		b.Append(n)
	case *array.TimestampBuilder:
		us := goTimestamp(v)
		switch t.(*arrow.TimestampType).Unit {
		case arrow.Millisecond:
			us /= 1000
		case arrow.Second:
			us /= 1_000_000
		case arrow.Nanosecond:
			us *= 1000
		}
		b.Append(arrow.Timestamp(us))
	case *array.Date32Builder:
		tm, err := time.Parse("2006-01-02", v.(string))
		if err != nil {
			panic(err)
		}
		b.Append(arrow.Date32(tm.Unix() / 86400))
	default:
		panic(fmt.Sprintf("harness: no test values for %s", t))
	}
}

// batchText renders a batch's rows in Postgres text form.
func batchText(b exec.Batch) []string {
	rec := b.Rec
	cols := make([]textColumn, rec.NumCols())
	for i := range cols {
		var err error
		if cols[i], err = newTextColumn(rec.Column(i)); err != nil {
			panic(err)
		}
	}
	out := make([]string, 0, rec.NumRows())
	var buf []byte
	for r := 0; r < int(rec.NumRows()); r++ {
		buf = buf[:0]
		if k := b.Kind(r); k != exec.Insert {
			buf = append(buf, k.String()+" "...)
		}
		for i := range cols {
			if i > 0 {
				buf = append(buf, '|')
			}
			if cols[i].isNull(r) {
				buf = append(buf, "NULL"...)
			} else {
				buf = cols[i].text(buf, r)
			}
		}
		out = append(out, string(buf))
	}
	return out
}

// harnessCounter is the harness's own test operator: it counts the rows it saw per value of column 0 (an
// int64), keeps the counts in memory, writes them to state at barriers, and emits them at the final watermark.
type harnessCounter struct {
	ctx    *exec.TaskContext
	counts map[int64]int64
}

func (o *harnessCounter) Open(ctx *exec.TaskContext) error {
	o.ctx, o.counts = ctx, map[int64]int64{}
	prefix := state.KeyedKey(0, 9, nil)
	return ctx.State.Scan(prefix, func(k, v []byte) error {
		o.counts[winOrderedInt(k[len(prefix):])] = winOrderedInt(v)
		return nil
	})
}

func (o *harnessCounter) Process(_ int, b exec.Batch, _ exec.Emitter) error {
	defer b.Release()
	for _, v := range b.Rec.Column(0).(*array.Int64).Int64Values() {
		o.counts[v]++
	}
	return nil
}

func (o *harnessCounter) OnWatermark(wm int64, out exec.Emitter) error {
	if wm != exec.MaxWatermark {
		return nil
	}
	keys := slices.Sorted(func(yield func(int64) bool) {
		for k := range o.counts {
			if !yield(k) {
				return
			}
		}
	})
	bld := array.NewRecordBuilder(o.ctx.Alloc, arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.PrimitiveTypes.Int64}, {Name: "n", Type: arrow.PrimitiveTypes.Int64}}, nil))
	defer bld.Release()
	for _, k := range keys {
		bld.Field(0).(*array.Int64Builder).Append(k)
		bld.Field(1).(*array.Int64Builder).Append(o.counts[k])
	}
	return out.Emit(exec.Batch{Rec: bld.NewRecordBatch()})
}

func (o *harnessCounter) OnBarrier(checkpoint.Barrier) error {
	for k, n := range o.counts {
		o.ctx.State.Put(state.KeyedKey(0, 9, winAppendOrderedInt(nil, k)), winAppendOrderedInt(nil, n))
	}
	return nil
}

func (o *harnessCounter) Close() error { return nil }

// TestHarnessRestores checks the harness itself: a counter that only keeps its counts across restores through
// its state yields the same totals in every shape.
func TestHarnessRestores(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)
	var input []any
	for i := 0; i < 10; i++ {
		input = append(input, []any{i % 3})
	}
	runOpCase(t, opCase{
		name: "counter", schema: schema, input: input, timeCol: -1,
		op:   func(int) exec.Operator { return &harnessCounter{} },
		want: []string{"0|4", "1|3", "2|3"},
	})
	if got := len(splitInput(append([]any{opWM(5)}, input...), 3)); got != 5 {
		t.Fatalf("10 rows after a watermark in batches of 3: %d steps, want 5", got)
	}
}
