package operators

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clinksql/clinksql/checkpoint"
	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/sql/sqlerr"
	"github.com/clinksql/clinksql/state"
)

// The two-input operator test harness (joins): optest_test.go's harness for operators with a left (0) and a
// right (1) input. A case is a script of steps:
//
//   - jRows: rows for one input (with row kinds, for changelog inputs), cut into batches per shape;
//   - jWM: the watermark of one input or both; the harness tracks each input's watermark and calls OnWatermark
//     with their minimum when it advances, as the runtime does;
//   - jCheck: a barrier (OnBarrier + Capture), then a check of the state backend (or the operator) at that point.
//
// Every shape (opShape: batches of 1 row, 3 rows or the whole jRows step; memory or Pebble backend; no restore, a
// restore at the middle barrier or at every barrier) runs the script, with a barrier after every batch but the
// last and the final watermark (end of input) after the script, and must produce the case's rows in order
// (sorted when the case says so). A restore is Capture + Persist, Close of the operator and the backend, a fresh
// backend restored from the snapshot and a fresh operator. Checks on every run: the checked allocator ends at
// zero; OnBarrier emits nothing; and, when the case names its output time columns, no emitted row has a time
// (not NULL) below the watermark forwarded before it (the input watermark, or OutputWatermark's hold of it for an
// exec.WatermarkHolder): what the runtime would forward, so a row below it would be late downstream.

// jRows is one step of rows for input in.
type jRows struct {
	in    int
	rows  [][]any
	kinds []exec.RowKind // nil: all inserts
}

// jLeft and jRight are rows for input 0 and 1.
func jLeft(rows ...[]any) jRows  { return jRows{in: 0, rows: rows} }
func jRight(rows ...[]any) jRows { return jRows{in: 1, rows: rows} }

// jWM is input in's watermark (in = -1: both inputs), in microseconds or as goTimestamp text.
type jWM struct {
	in int
	wm any
}

// jWMs sets both inputs' watermark.
func jWMs(wm any) jWM { return jWM{in: -1, wm: wm} }

// jCheck runs after a barrier at its place in the script (h.be and h.op are the backend and the operator, h.rows
// the output so far); it fails the run by returning an error.
type jCheck func(h *jHarness) error

// jCase is one two-input operator test.
type jCase struct {
	name    string
	schemas [2]*arrow.Schema
	script  []any
	op      func(subtask int) exec.Operator
	// want is the expected output in Postgres text form ("|"-separated, NULL as "NULL", a non-insert row kind as
	// a prefix); sorted compares as multisets.
	want   []string
	sorted bool
	// wantErr, when set, is the SQLSTATE or a substring of the error the run must fail with.
	wantErr string
	// late and errors are the expected TaskContext.Late and Errors totals.
	late, errors int64
	// timeCols are the output columns holding event times, checked against the forwarded watermark.
	timeCols []int
	shapes   []opShape
}

// runJCase runs c in every shape.
func runJCase(t *testing.T, c jCase) {
	t.Helper()
	t.Setenv("CLINK_STATE_FSYNC", "0")
	t.Run(c.name, func(t *testing.T) {
		shapes := c.shapes
		if shapes == nil {
			shapes = opShapes()
		}
		for _, sh := range shapes {
			h := newJHarness(t, c.op, c.schemas, sh.pebble)
			h.timeCols = c.timeCols
			err := h.runScript(c.script, sh)
			err = errors.Join(err, h.close())
			if c.wantErr != "" {
				if err == nil {
					t.Fatalf("%s: no error, want %s; rows %q", sh, c.wantErr, h.rows)
				}
				if sqlerr.Code(err) != c.wantErr && !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("%s: error %v (SQLSTATE %q), want %s", sh, err, sqlerr.Code(err), c.wantErr)
				}
				continue
			}
			if err != nil {
				t.Fatalf("%s: %v", sh, err)
			}
			got, want := h.rows, c.want
			if c.sorted {
				got, want = slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))
			}
			if !slices.Equal(got, want) {
				t.Fatalf("%s: rows\n got  %q\n want %q", sh, got, want)
			}
			if h.late.Load() != c.late || h.errs.Load() != c.errors {
				t.Fatalf("%s: late %d errors %d, want late %d errors %d", sh, h.late.Load(), h.errs.Load(), c.late, c.errors)
			}
		}
	})
}

// jHarness drives one two-input operator; tests with their own drivers (randomized ones) use its methods.
type jHarness struct {
	t       testing.TB
	newOp   func(int) exec.Operator
	schemas [2]*arrow.Schema
	pebble  bool
	mem     *memory.CheckedAllocator
	dir     string
	late    exec.Counter
	errs    exec.Counter
	be      state.Backend
	op      exec.Operator
	inWM    [2]int64
	wm      int64 // the combined watermark the operator saw last
	fwd     int64 // the watermark forwarded downstream after it
	nextID  uint64
	// rows is the output so far in text form; step[i] is the number of steps (batches and watermark advances)
	// taken when rows[i] was emitted.
	rows      []string
	step      []int
	steps     int
	timeCols  []int
	inBarrier bool
	emitErr   error
}

func newJHarness(t testing.TB, op func(int) exec.Operator, schemas [2]*arrow.Schema, pebble bool) *jHarness {
	h := &jHarness{t: t, newOp: op, schemas: schemas, pebble: pebble, dir: t.TempDir(),
		inWM: [2]int64{exec.MinWatermark, exec.MinWatermark}, wm: exec.MinWatermark, fwd: exec.MinWatermark}
	h.mem = memory.NewCheckedAllocator(memory.NewGoAllocator())
	if err := h.open("", 0); err != nil {
		t.Fatal(err)
	}
	return h
}

// close closes the operator and the backend and checks that no Arrow memory is left.
func (h *jHarness) close() error {
	var err error
	if h.op != nil {
		err = h.op.Close()
	}
	if h.be != nil {
		err = errors.Join(err, h.be.Close())
	}
	h.op, h.be = nil, nil
	h.mem.AssertSize(h.t, 0)
	return err
}

func (h *jHarness) open(restorePath string, restored uint64) error {
	opts := state.Options{RestorePath: restorePath, SharedDir: filepath.Join(h.dir, "shared")}
	var err error
	if h.pebble {
		opts.Dir = filepath.Join(h.dir, fmt.Sprintf("work-%d", restored))
		h.be, err = state.OpenPebble(opts)
	} else {
		h.be, err = state.OpenMemory(opts)
	}
	if err != nil {
		return err
	}
	ctx := &exec.TaskContext{
		Job: "j1", Operator: "join", Subtask: 0, Parallelism: 1,
		KeyGroups: state.KeyGroupRange{Start: 0, End: state.DefaultKeyGroups}, MaxKeyGroups: state.DefaultKeyGroups,
		State: h.be, Restored: restored, Alloc: h.mem,
		IsCompleted: func(uint64) bool { return true },
		Errors:      &h.errs, Late: &h.late,
	}
	h.op = h.newOp(0)
	return h.op.Open(ctx)
}

// Emit collects an output batch as text rows and checks its time columns against the forwarded watermark.
func (h *jHarness) Emit(b exec.Batch) error {
	defer b.Release()
	if h.inBarrier {
		h.emitErr = errors.New("harness: the operator emitted in OnBarrier")
		return h.emitErr
	}
	for _, c := range h.timeCols {
		col, ok := b.Rec.Column(c).(*array.Timestamp)
		if !ok {
			return fmt.Errorf("harness: output column %d is not a timestamp", c)
		}
		var scratch []int64
		vals := tjMicros(col, &scratch)
		for i, v := range vals {
			if col.IsNull(i) {
				continue
			}
			if v < h.fwd {
				h.emitErr = fmt.Errorf("harness: emitted a row with %s = %d below the forwarded watermark %d",
					b.Rec.ColumnName(c), v, h.fwd)
				return h.emitErr
			}
		}
	}
	for _, r := range batchText(b) {
		h.rows = append(h.rows, r)
		h.step = append(h.step, h.steps)
	}
	return nil
}

// process feeds rows to input in as one batch.
func (h *jHarness) process(in int, rows [][]any, kinds []exec.RowKind) error {
	b := buildBatch(h.mem, h.schemas[in], rows)
	b.Kinds = kinds
	h.steps++
	return h.check(h.op.Process(in, b, h))
}

// check returns err, or the error Emit found if the operator returned none (it may also have returned Emit's).
func (h *jHarness) check(err error) error {
	if emitErr := h.takeEmitErr(); err == nil {
		err = emitErr
	}
	return err
}

func (h *jHarness) takeEmitErr() error {
	err := h.emitErr
	h.emitErr = nil
	return err
}

// watermark sets input in's watermark (-1: both) and calls OnWatermark when the combined one advances.
func (h *jHarness) watermark(in int, wm int64) error {
	for i := range h.inWM {
		if in < 0 || in == i {
			h.inWM[i] = max(h.inWM[i], wm)
		}
	}
	return h.advance(min(h.inWM[0], h.inWM[1]))
}

func (h *jHarness) advance(wm int64) error {
	if wm <= h.wm {
		return nil
	}
	h.wm = wm
	h.steps++
	if err := h.check(h.op.OnWatermark(wm, h)); err != nil {
		return err
	}
	h.fwd = wm
	if hold, ok := h.op.(exec.WatermarkHolder); ok && wm != exec.MaxWatermark {
		if h.fwd = hold.OutputWatermark(wm); h.fwd > wm {
			return fmt.Errorf("harness: OutputWatermark(%d) = %d, ahead of its input", wm, h.fwd)
		}
	}
	return nil
}

// finish sends end of input: both inputs at +infinity.
func (h *jHarness) finish() error { return h.advance(exec.MaxWatermark) }

// barrier runs OnBarrier and Capture and, with restore, a restore from the persisted snapshot.
func (h *jHarness) barrier(restore bool) error {
	h.nextID++
	id := h.nextID
	h.inBarrier = true
	err := h.op.OnBarrier(checkpoint.Barrier{ID: id})
	h.inBarrier = false
	if err := h.check(err); err != nil {
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

// keyedEntries counts the keyed state entries of the backend (everything but operator state).
func keyedEntries(be state.Backend) (int, error) {
	n := 0
	for kg := 0; kg < state.DefaultKeyGroups; kg++ {
		if err := be.Scan(state.KeyGroupPrefix(kg), func(_, _ []byte) error { n++; return nil }); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// jKeyed is a jCheck: the backend holds exactly n keyed entries.
func jKeyed(n int) jCheck {
	return func(h *jHarness) error {
		got, err := keyedEntries(h.be)
		if err != nil {
			return err
		}
		if got != n {
			return fmt.Errorf("state holds %d keyed entries, want %d", got, n)
		}
		return nil
	}
}

// jEmitted is a jCheck: exactly n rows were emitted so far (what a watermark has fired, and not more).
func jEmitted(n int) jCheck {
	return func(h *jHarness) error {
		if len(h.rows) != n {
			return fmt.Errorf("%d rows emitted so far, want %d: %q", len(h.rows), n, h.rows)
		}
		return nil
	}
}

// jBatch is one batch of a run.
type jBatch struct {
	in    int
	rows  [][]any
	kinds []exec.RowKind
}

// runScript runs a case's script in one shape, then the end of input.
func (h *jHarness) runScript(script []any, sh opShape) error {
	// Cut the rows into batches first, to know which barrier is the middle one.
	type item struct {
		b  *jBatch
		wm *jWM
		ck jCheck
	}
	var items []item
	batches := 0
	for _, s := range script {
		switch s := s.(type) {
		case jRows:
			size := sh.batch
			if size == 0 {
				size = len(s.rows)
			}
			for start := 0; start < len(s.rows); start += size {
				end := min(start+size, len(s.rows))
				b := &jBatch{in: s.in, rows: s.rows[start:end]}
				if s.kinds != nil {
					b.kinds = s.kinds[start:end]
				}
				items = append(items, item{b: b})
				batches++
			}
		case jWM:
			items = append(items, item{wm: &s})
		case jCheck:
			items = append(items, item{ck: s})
		default:
			return fmt.Errorf("harness: script step %T", s)
		}
	}
	mid := max(batches/2, 1)
	seen := 0
	for _, it := range items {
		switch {
		case it.wm != nil:
			if err := h.watermark(it.wm.in, goTimestamp(it.wm.wm)); err != nil {
				return err
			}
		case it.ck != nil:
			if err := h.barrier(false); err != nil {
				return err
			}
			if err := it.ck(h); err != nil {
				return err
			}
		default:
			if err := h.process(it.b.in, it.b.rows, it.b.kinds); err != nil {
				return err
			}
			if seen++; seen == batches {
				continue // the last batch is followed by end of input, not a barrier
			}
			if err := h.barrier(sh.restore == "every" || (sh.restore == "mid" && seen == mid)); err != nil {
				return err
			}
		}
	}
	return h.finish()
}
