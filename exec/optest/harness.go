package optest

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

	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/exec/rowcodec"
	"github.com/clinksql/clinksql/exec/textform"
	"github.com/clinksql/clinksql/sqlerr"
	"github.com/clinksql/clinksql/state"
)

// The operator test harness: Harness drives any exec.Operator directly, without the job runtime, and the
// harnesses of the single-input cases (Case, here), of the scripts of two-input cases (ScriptCase,
// script.go), of the regular join (exec/join) and of changelog batches (exec/agg's group aggregate) build on
// it. A Case runs over many shapes of the same input (cockroach's colexectestutils.RunTests, plus barriers,
// watermarks and restores):
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

// WM in an input is an explicit watermark: the harness calls OnWatermark with it (when it advances).
type WM int64

// Case is one operator test.
type Case struct {
	Name   string
	Schema *arrow.Schema
	// input holds rows ([]any, one Go value per column, nil for NULL; see AppendGoValue) and WM watermarks.
	Input []any
	Op    func(subtask int) exec.Operator
	// timeCol, when >= 0, makes the harness send watermark max(event time so far) - delay after every batch.
	TimeCol int
	Delay   time.Duration
	// noNulls lists the columns random NULLs must not touch (keys, event time); randomNulls turns them on.
	NoNulls     []int
	RandomNulls bool
	// want is the expected output in Postgres text form, "|"-separated, NULL as "NULL", a non-insert row kind
	// as a prefix ("-D 1|2"). sorted compares as sets.
	Want   []string
	Sorted bool
	// wantErr, when set, is the SQLSTATE (5 characters) or a substring of the error the run must fail with.
	WantErr string
	// late and errors are the expected TaskContext.Late and Errors totals.
	Late, Errors int64
	// shapes, when set, replaces AllShapes().
	Shapes []Shape
}

// Shape is one way to feed a case.
type Shape struct {
	Batch   int // rows per batch; 0 = all at once (a harness given explicit batches: those)
	Pebble  bool
	Restore string // "", "mid", "every"
	Cache   int64  // RegularJoinConfig.CacheBytes (the regular join only); 1 drops the working set after every batch
}

func (s Shape) String() string {
	b := "all"
	if s.Batch > 0 {
		b = fmt.Sprint(s.Batch)
	}
	be := "mem"
	if s.Pebble {
		be = "pebble"
	}
	r := s.Restore
	if r == "" {
		r = "none"
	}
	out := fmt.Sprintf("batch=%s/%s/restore=%s", b, be, r)
	if s.Cache != 0 {
		out += fmt.Sprintf("/cache=%d", s.Cache)
	}
	return out
}

func AllShapes() []Shape {
	var out []Shape
	for _, b := range []int{1, 3, 0} {
		for _, pb := range []bool{false, true} {
			for _, r := range []string{"", "mid", "every"} {
				out = append(out, Shape{Batch: b, Pebble: pb, Restore: r})
			}
		}
	}
	return out
}

// ShapesOr returns shapes, or AllShapes() when there are none.
func ShapesOr(shapes []Shape) []Shape {
	if shapes == nil {
		return AllShapes()
	}
	return shapes
}

// barrier is the shape's barrier plan (Harness.runSteps): a barrier after every batch but the last (i of n),
// restoring after every batch or only after the middle one.
func (s Shape) Barrier(i, n int) (barrier, restore bool) {
	return true, s.Restore == "every" || (s.Restore == "mid" && i == max(n/2, 1)-1)
}

// RunShapes runs a case as the subtest name, once per shape, with fsync off: restores are tested here, not
// durability (state's own tests do that).
func RunShapes[S fmt.Stringer](t *testing.T, name string, shapes []S, run func(t *testing.T, sh S)) {
	t.Helper()
	t.Setenv("CLINK_STATE_FSYNC", "0")
	t.Run(name, func(t *testing.T) {
		for _, sh := range shapes {
			run(t, sh)
		}
	})
}

// CheckRunErr checks the error of a run in shape sh. With wantErr set (a SQLSTATE, or a substring of the error)
// the run must have failed with it, and CheckRunErr returns true: there is nothing else to check. Otherwise the
// run must not have failed. out is the run's output, for the message.
func CheckRunErr(t testing.TB, sh fmt.Stringer, err error, wantErr string, out any) bool {
	t.Helper()
	if wantErr == "" {
		if err != nil {
			t.Fatalf("%s: %v", sh, err)
		}
		return false
	}
	if err == nil {
		t.Fatalf("%s: no error, want %s; output %q", sh, wantErr, out)
	}
	if sqlerr.Code(err) != wantErr && !strings.Contains(err.Error(), wantErr) {
		t.Fatalf("%s: error %v (SQLSTATE %q), want %s", sh, err, sqlerr.Code(err), wantErr)
	}
	return true
}

// CheckRows compares output rows in text form, in order or, when sorted, as multisets.
func CheckRows(t testing.TB, sh fmt.Stringer, got, want []string, sorted bool) {
	t.Helper()
	if sorted {
		got, want = slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("%s: rows\n got  %q\n want %q", sh, got, want)
	}
}

// CheckCounts compares the TaskContext.Late and Errors totals of a run.
func CheckCounts(t testing.TB, sh fmt.Stringer, late, errors, wantLate, wantErrors int64) {
	t.Helper()
	if late != wantLate || errors != wantErrors {
		t.Fatalf("%s: late %d errors %d, want late %d errors %d", sh, late, errors, wantLate, wantErrors)
	}
}

// runResult is what one run produced.
type runResult struct {
	rows         []string
	late, errors int64
	err          error
}

// RunCase runs c in every shape and checks each against the expectation.
func RunCase(t *testing.T, c Case) {
	t.Helper()
	input, want := c.Input, c.Want
	if c.RandomNulls {
		input = withRandomNulls(c, 1)
		ref := runOpShape(t, c, input, Shape{})
		if ref.err != nil {
			t.Fatalf("%s: reference run with random NULLs: %v", c.Name, ref.err)
		}
		want = ref.rows
	}
	RunShapes(t, c.Name, ShapesOr(c.Shapes), func(t *testing.T, sh Shape) {
		r := runOpShape(t, c, input, sh)
		if CheckRunErr(t, sh, r.err, c.WantErr, r.rows) {
			return
		}
		CheckRows(t, sh, r.rows, want, c.Sorted)
		if !c.RandomNulls {
			CheckCounts(t, sh, r.late, r.errors, c.Late, c.Errors)
		}
	})
}

// withRandomNulls returns the input with about one value in five set to NULL outside c.noNulls.
func withRandomNulls(c Case, seed uint64) []any {
	rng := rand.New(rand.NewPCG(seed, 42))
	out := make([]any, len(c.Input))
	for i, it := range c.Input {
		row, ok := it.([]any)
		if !ok {
			out[i] = it
			continue
		}
		row = slices.Clone(row)
		for col := range row {
			if !slices.Contains(c.NoNulls, col) && col != c.TimeCol && rng.IntN(5) == 0 {
				row[col] = nil
			}
		}
		out[i] = row
	}
	return out
}

// inputScript turns a case's input into a script (see CutScript): each run of rows between watermarks is one InputRows.
func inputScript(input []any) []any {
	var script []any
	var cur [][]any
	cut := func() {
		if len(cur) > 0 {
			script = append(script, InputRows{Rows: cur})
			cur = nil
		}
	}
	for _, it := range input {
		switch v := it.(type) {
		case []any:
			cur = append(cur, v)
		case WM:
			cut()
			script = append(script, InputWM{WM: int64(v)})
		default:
			panic(fmt.Sprintf("harness: input item %T", it))
		}
	}
	cut()
	return script
}

// runOpShape runs a case's input in one shape. After every batch but the last, before its barrier, comes the
// watermark derived from event time when the case has one.
func runOpShape(t *testing.T, c Case, input []any, sh Shape) runResult {
	t.Helper()
	h := NewHarness(t, c.Op, sh.Pebble, c.Schema)
	maxTS := exec.MinWatermark
	err := h.Run(CutScript(inputScript(input), sh.Batch), sh.Barrier, func(_ int, b BatchStep, last bool) error {
		if c.TimeCol < 0 {
			return nil
		}
		for _, row := range b.Rows {
			if v := row[c.TimeCol]; v != nil {
				maxTS = max(maxTS, GoTimestamp(v))
			}
		}
		if last || maxTS == exec.MinWatermark {
			return nil
		}
		return h.Watermark(0, maxTS-c.Delay.Microseconds())
	})
	err = errors.Join(err, h.Close())
	return runResult{rows: h.Rows, late: h.Late.Load(), errors: h.Errs.Load(), err: err}
}

// A script is what a test feeds an operator, for any number of inputs:
//
//   - InputRows: rows for one input (with row kinds, for changelog inputs), cut into batches per shape;
//   - InputWM: the watermark of one input or of every input; the harness tracks each input's watermark and calls
//     OnWatermark with their minimum when it advances, as the runtime does;
//   - Check: a barrier (OnBarrier + Capture), then a check of the state backend (or the operator) at that point.

// InputRows is one step of rows for input in.
type InputRows struct {
	In    int
	Rows  [][]any
	Kinds []exec.RowKind // nil: all inserts
}

// InputWM is input in's watermark (in = -1: every input), in microseconds or as GoTimestamp text.
type InputWM struct {
	In int
	WM any
}

// Check runs after a barrier at its place in the script (h.be and h.op are the backend and the operator, h.rows
// the output so far); it fails the run by returning an error.
type Check func(h *Harness) error

// A script cut into batches is a list of run steps (Harness.runSteps):
//
//   - BatchStep: one Process call;
//   - WatermarkStep: the watermark of one input (in = -1: of every input);
//   - DoStep: an action on the harness between them (a check, a change of a clock the operator reads).
type BatchStep InputRows

type WatermarkStep struct {
	In int
	WM int64
}

type DoStep func(h *Harness) error

// CutScript turns a script into run steps, cutting each InputRows into batches of size rows (0: one batch).
func CutScript(script []any, size int) []any {
	var steps []any
	for _, s := range script {
		switch s := s.(type) {
		case InputRows:
			n := size
			if n == 0 {
				n = len(s.Rows)
			}
			for start := 0; start < len(s.Rows); start += n {
				end := min(start+n, len(s.Rows))
				b := BatchStep{In: s.In, Rows: s.Rows[start:end]}
				if s.Kinds != nil {
					b.Kinds = s.Kinds[start:end]
				}
				steps = append(steps, b)
			}
		case InputWM:
			steps = append(steps, WatermarkStep{In: s.In, WM: GoTimestamp(s.WM)})
		case Check:
			steps = append(steps, DoStep(func(h *Harness) error {
				if err := h.Barrier(false); err != nil {
					return err
				}
				return s(h)
			}))
		default:
			panic(fmt.Sprintf("harness: script step %T", s))
		}
	}
	return steps
}

// ChangelogKinds returns kinds, or nil when they are all inserts (a batch of inserts carries no Kinds).
func ChangelogKinds(kinds []exec.RowKind) []exec.RowKind {
	if !slices.ContainsFunc(kinds, func(k exec.RowKind) bool { return k != exec.Insert }) {
		return nil
	}
	return kinds
}

// Harness is the core of every operator test harness here: it drives one operator with any number of inputs
// directly, without the job runtime. It opens a fresh operator of newOp over a memory or Pebble backend in a
// temporary directory, with a checked allocator and the TaskContext counters; takes barriers (OnBarrier +
// Capture) and restores (Capture + Persist, Close of the operator and the backend, a fresh backend restored from
// the snapshot and a fresh operator); tracks the watermark of each input; and, as the operator's Emitter,
// collects its output as text rows. Checks on every run: OnBarrier emits nothing; an output batch has as many
// kinds as rows, and nil Kinds when all are inserts; when out is set, output batches have that schema; when
// timeCols are set, no emitted row has a time (not NULL) below the watermark forwarded before it (the input
// watermark, or OutputWatermark's hold of it for an exec.WatermarkHolder): what the runtime would forward, so a
// row below it would be late downstream; and close finds the allocator at zero.
type Harness struct {
	t       testing.TB
	newOp   func(int) exec.Operator
	schemas []*arrow.Schema // of the inputs
	pebble  bool
	mem     *memory.CheckedAllocator
	dir     string
	Late    exec.Counter
	Errs    exec.Counter
	Backend state.Backend
	Op      exec.Operator
	nextID  uint64
	inWM    []int64 // each input's watermark
	wm      int64   // the combined watermark the operator saw last
	fwd     int64   // the watermark forwarded downstream after it
	// out and timeCols are the checks above; changelog renders every output row with its kind ("+I 1|2"),
	// otherwise only a non-insert kind shows ("-D 1|2").
	Out       *arrow.Schema
	TimeCols  []int
	Changelog bool
	// rows is the output so far in text form; step[i] is the number of steps (batches and watermark advances)
	// taken when rows[i] was emitted.
	Rows      []string
	Step      []int
	Steps     int
	inBarrier bool
	emitErr   error
	// Clock is the processing-time clock the operator gets (TaskContext.Clock); nil: the wall clock.
	Clock exec.ProcessingClock
}

// NewHarness returns a harness for operators of newOp reading inputs of schemas; open starts the operator.
func NewHarness(t testing.TB, newOp func(int) exec.Operator, pebble bool, schemas ...*arrow.Schema) *Harness {
	h := &Harness{t: t, newOp: newOp, schemas: schemas, pebble: pebble, dir: t.TempDir(),
		inWM: make([]int64, len(schemas)), wm: exec.MinWatermark, fwd: exec.MinWatermark}
	for i := range h.inWM {
		h.inWM[i] = exec.MinWatermark
	}
	h.mem = memory.NewCheckedAllocator(memory.NewGoAllocator())
	return h
}

// open opens a backend (restored from restorePath when set) and a fresh operator on it.
func (h *Harness) Open(restorePath string, restored uint64) error {
	opts := state.Options{RestorePath: restorePath, SharedDir: filepath.Join(h.dir, "shared")}
	var err error
	if h.pebble {
		opts.Dir = filepath.Join(h.dir, fmt.Sprintf("work-%d", restored))
		h.Backend, err = state.OpenPebble(opts)
	} else {
		h.Backend, err = state.OpenMemory(opts)
	}
	if err != nil {
		return err
	}
	ctx := &exec.TaskContext{
		Job: "j1", Operator: "op", Subtask: 0, Parallelism: 1,
		KeyGroups: state.KeyGroupRange{Start: 0, End: state.DefaultKeyGroups}, MaxKeyGroups: state.DefaultKeyGroups,
		State: h.Backend, Restored: restored, Alloc: h.mem,
		IsCompleted: func(uint64) bool { return true },
		Errors:      &h.Errs, Late: &h.Late, Clock: h.Clock,
	}
	if ctx.Clock == nil {
		ctx.Clock = exec.WallClock{}
	}
	h.Op = h.newOp(0)
	if err := h.Op.Open(ctx); err != nil {
		return err
	}
	if st, ok := h.Op.(exec.Starter); ok { // as the runtime does
		return st.Start(h)
	}
	return nil
}

// close closes the operator and the backend and checks that no Arrow memory is left.
func (h *Harness) Close() error {
	var err error
	if h.Op != nil {
		err = h.Op.Close()
	}
	if h.Backend != nil {
		err = errors.Join(err, h.Backend.Close())
	}
	h.Op, h.Backend = nil, nil
	h.mem.AssertSize(h.t, 0)
	return err
}

// Emit checks an output batch and collects it as text rows.
func (h *Harness) Emit(b exec.Batch) error {
	defer b.Release()
	if err := h.checkOutput(b); err != nil {
		h.emitErr = err
		return err
	}
	for i, r := range BatchText(b) {
		if h.Changelog && b.Kind(i) == exec.Insert {
			r = exec.Insert.String() + " " + r
		}
		h.Rows = append(h.Rows, r)
		h.Step = append(h.Step, h.Steps)
	}
	return nil
}

func (h *Harness) checkOutput(b exec.Batch) error {
	switch {
	case h.inBarrier:
		return errors.New("harness: the operator emitted in OnBarrier")
	case h.Out != nil && !b.Rec.Schema().Equal(h.Out):
		return fmt.Errorf("harness: output schema %s, want %s", b.Rec.Schema(), h.Out)
	case b.Kinds != nil && len(b.Kinds) != b.Rows():
		return fmt.Errorf("harness: an output batch of %d rows with %d kinds", b.Rows(), len(b.Kinds))
	case b.Kinds != nil && ChangelogKinds(b.Kinds) == nil:
		return errors.New("harness: an all-insert output batch carries Kinds")
	}
	for _, c := range h.TimeCols {
		col, ok := b.Rec.Column(c).(*array.Timestamp)
		if !ok {
			return fmt.Errorf("harness: output column %d is not a timestamp", c)
		}
		var scratch []int64
		for i, v := range rowcodec.Micros(col, &scratch) {
			if !col.IsNull(i) && v < h.fwd {
				return fmt.Errorf("harness: emitted a row with %s = %d below the forwarded watermark %d",
					b.Rec.ColumnName(c), v, h.fwd)
			}
		}
	}
	return nil
}

// check returns err, or the error Emit found if the operator returned none (it may also have returned Emit's).
func (h *Harness) check(err error) error {
	if emitErr := h.emitErr; err == nil {
		err = emitErr
	}
	h.emitErr = nil
	return err
}

// process feeds rows to input in as one batch.
func (h *Harness) Process(in int, rows [][]any, kinds []exec.RowKind) error {
	b := BuildBatch(h.mem, h.schemas[in], rows)
	b.Kinds = kinds
	h.Steps++
	return h.check(h.Op.Process(in, b, h))
}

// watermark sets input in's watermark (-1: every input's) and calls OnWatermark when the combined one advances.
func (h *Harness) Watermark(in int, wm int64) error {
	for i := range h.inWM {
		if in < 0 || in == i {
			h.inWM[i] = max(h.inWM[i], wm)
		}
	}
	return h.Advance(slices.Min(h.inWM))
}

func (h *Harness) Advance(wm int64) error {
	if wm <= h.wm {
		return nil
	}
	h.wm = wm
	h.Steps++
	if err := h.check(h.Op.OnWatermark(wm, h)); err != nil {
		return err
	}
	h.fwd = wm
	if hold, ok := h.Op.(exec.WatermarkHolder); ok && wm != exec.MaxWatermark {
		if h.fwd = hold.OutputWatermark(wm); h.fwd > wm {
			return fmt.Errorf("harness: OutputWatermark(%d) = %d, ahead of its input", wm, h.fwd)
		}
	}
	return nil
}

// FireTimers does what the runtime does between two elements for an exec.ProcessingTimer: while its next timer is
// due on h.Clock, OnProcessingTime with the clock's time. It returns the number of calls.
func (h *Harness) FireTimers() (int, error) {
	pt, ok := h.Op.(exec.ProcessingTimer)
	if !ok {
		return 0, fmt.Errorf("harness: %T has no processing-time timers", h.Op)
	}
	n := 0
	for {
		due, ok := pt.NextProcessingTime()
		now := h.Clock.Now().UnixMicro()
		if !ok || now < due {
			return n, nil
		}
		if n > 100 {
			return n, fmt.Errorf("harness: timer %d still due after %d calls at %d", due, n, now)
		}
		n++
		h.Steps++
		if err := h.check(pt.OnProcessingTime(now, h)); err != nil {
			return n, err
		}
	}
}

// finish sends end of input: every input at +infinity.
func (h *Harness) Finish() error { return h.Advance(exec.MaxWatermark) }

// barrier runs OnBarrier and Capture and, with restore, a restore from the persisted snapshot.
func (h *Harness) Barrier(restore bool) error {
	h.nextID++
	id := h.nextID
	h.inBarrier = true
	err := h.Op.OnBarrier(id)
	h.inBarrier = false
	if err := h.check(err); err != nil {
		return err
	}
	snap, err := h.Backend.Capture(id)
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
	if err := errors.Join(h.Op.Close(), h.Backend.Close()); err != nil {
		return err
	}
	h.Op, h.Backend = nil, nil
	return h.Open(path, id)
}

// runSteps runs steps (BatchStep, WatermarkStep, DoStep). After batch i of n comes afterBatch(i, batch, last) when
// set, then, after every batch but the last, what plan(i, n) says: a barrier or none, restoring or not.
func (h *Harness) RunSteps(steps []any, plan func(i, n int) (barrier, restore bool),
	afterBatch func(i int, b BatchStep, last bool) error) error {
	n := 0
	for _, s := range steps {
		if _, ok := s.(BatchStep); ok {
			n++
		}
	}
	i := 0
	for _, s := range steps {
		switch s := s.(type) {
		case WatermarkStep:
			if err := h.Watermark(s.In, s.WM); err != nil {
				return err
			}
		case DoStep:
			if err := s(h); err != nil {
				return err
			}
		case BatchStep:
			if err := h.Process(s.In, s.Rows, s.Kinds); err != nil {
				return err
			}
			last := i == n-1
			if afterBatch != nil {
				if err := afterBatch(i, s, last); err != nil {
					return err
				}
			}
			if !last {
				if barrier, restore := plan(i, n); barrier {
					if err := h.Barrier(restore); err != nil {
						return err
					}
				}
			}
			i++
		default:
			return fmt.Errorf("harness: run step %T", s)
		}
	}
	return nil
}

// run opens a fresh operator, runs steps (see runSteps), then the end of input.
func (h *Harness) Run(steps []any, plan func(i, n int) (barrier, restore bool),
	afterBatch func(i int, b BatchStep, last bool) error) error {
	if err := h.Open("", 0); err != nil {
		return err
	}
	if err := h.RunSteps(steps, plan, afterBatch); err != nil {
		return err
	}
	return h.Finish()
}

// CheckForeignKeyGroup opens an operator of newOp as a subtask owning only the key group of the first row's key
// (keys are the key columns of input in) and checks that a batch of rows, the others of other keys, fails as a
// routing bug: a row of a key group the subtask does not own is not data.
func CheckForeignKeyGroup(t *testing.T, newOp func(int) exec.Operator, in int, schema *arrow.Schema, keys []int,
	rows ...[]any) {
	t.Helper()
	mem := CheckedAlloc(t)
	batch := BuildBatch(mem, schema, rows)
	hashes, _ := exec.HashKeys(batch.Rec, keys, nil)
	own := state.KeyGroupOf(hashes[0], state.DefaultKeyGroups)
	be, err := state.OpenMemory(state.Options{})
	Must(t, err)
	defer be.Close()
	op := newOp(0)
	Must(t, op.Open(&exec.TaskContext{State: be, Alloc: mem, MaxKeyGroups: state.DefaultKeyGroups,
		KeyGroups: state.KeyGroupRange{Start: own, End: own + 1}, Late: &exec.Counter{}, Errors: &exec.Counter{}}))
	defer op.Close()
	if err := op.Process(in, batch, &DiscardEmitter{}); err == nil || !strings.Contains(err.Error(), "key group") {
		t.Fatalf("rows of foreign key groups: %v, want a routing error", err)
	}
}

// BuildBatch builds a record of schema from Go values.
func BuildBatch(mem memory.Allocator, schema *arrow.Schema, rows [][]any) exec.Batch {
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	for _, row := range rows {
		if len(row) != schema.NumFields() {
			panic(fmt.Sprintf("harness: row %v has %d values for %d columns", row, len(row), schema.NumFields()))
		}
		for c, v := range row {
			AppendGoValue(b.Field(c), schema.Field(c).Type, v)
		}
	}
	return exec.Batch{Rec: b.NewRecordBatch()}
}

// MustOp returns what an operator constructor returns for cfg over input schema in, the operator factory and its
// output schema; an error fails the test.
func MustOp[C any](t testing.TB, newOp func(C, *arrow.Schema) (func(int) exec.Operator, *arrow.Schema, error),
	cfg C, in *arrow.Schema) (func(int) exec.Operator, *arrow.Schema) {
	t.Helper()
	f, out, err := newOp(cfg, in)
	if err != nil {
		t.Fatal(err)
	}
	return f, out
}

// NullableSchema is a schema of nullable columns, given as name and type pairs.
func NullableSchema(cols ...any) *arrow.Schema {
	fields := make([]arrow.Field, 0, len(cols)/2)
	for i := 0; i+1 < len(cols); i += 2 {
		fields = append(fields, arrow.Field{Name: cols[i].(string), Type: cols[i+1].(arrow.DataType), Nullable: true})
	}
	if len(cols)%2 != 0 {
		panic("harness: NullableSchema takes name and type pairs")
	}
	return arrow.NewSchema(fields, nil)
}

// TestDay is the day test timestamps written as a time of day ("00:00:01.5") fall on.
const TestDay = "2026-01-01 "

// GoTimestamp reads a test timestamp: an int (microseconds since the epoch) or text, "2026-01-01 00:00:01.5" or
// just the time of day on TestDay.
func GoTimestamp(v any) int64 {
	switch v := v.(type) {
	case int:
		return int64(v)
	case int64:
		return v
	case string:
		if !strings.Contains(v, "-") {
			v = TestDay + v
		}
		tm, err := time.Parse("2006-01-02 15:04:05.999999", v)
		if err != nil {
			panic(err)
		}
		return tm.UnixMicro()
	}
	panic(fmt.Sprintf("harness: %T is not a timestamp", v))
}

// AppendGoValue appends a test value: nil is NULL; integers as int; floats as float64; decimals as text; strings;
// bools; timestamps as GoTimestamp reads them (microseconds, scaled to the column's unit); dates as "2026-01-01".
func AppendGoValue(b array.Builder, t arrow.DataType, v any) {
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
		us := GoTimestamp(v)
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

// BatchText renders a batch's rows in Postgres text form (textform.Rows), "|"-separated, NULL as "NULL", a
// non-insert row kind as a prefix ("-D 1|2").
func BatchText(b exec.Batch) []string {
	rows, err := textform.Rows(b.Rec)
	if err != nil {
		panic(err)
	}
	out := make([]string, 0, len(rows))
	var buf []byte
	for r, row := range rows {
		buf = buf[:0]
		if k := b.Kind(r); k != exec.Insert {
			buf = append(buf, k.String()+" "...)
		}
		for i, v := range row {
			if i > 0 {
				buf = append(buf, '|')
			}
			if v == nil {
				buf = append(buf, "NULL"...)
			} else {
				buf = append(buf, *v...)
			}
		}
		out = append(out, string(buf))
	}
	return out
}

// CheckedAlloc returns an allocator that fails the test if anything allocated through it is still live at the
// end.
func CheckedAlloc(t testing.TB) *memory.CheckedAllocator {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	return mem
}

// Must fails the test on an error.
func Must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// Mem is the harness's checked allocator, for batches a test builds itself.
func (h *Harness) Mem() memory.Allocator { return h.mem }
