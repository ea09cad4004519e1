package operators

import (
	"errors"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/state"
)

// The two-input operator tests (joins): a case is a script (jRows, jWM and jCheck steps, see optest_test.go) for
// an operator with a left (0) and a right (1) input, run by opHarness.
//
// Every shape (opShape: batches of 1 row, 3 rows or the whole jRows step; memory or Pebble backend; no restore, a
// restore at the middle barrier or at every barrier) runs the script, with a barrier after every batch but the
// last and the final watermark (end of input) after the script, and must produce the case's rows in order
// (sorted when the case says so). Checks on every run are opHarness's: among them, when the case names its
// output time columns, that no emitted row has a time below the watermark forwarded before it.

// jLeft and jRight are rows for input 0 and 1.
func jLeft(rows ...[]any) jRows  { return jRows{in: 0, rows: rows} }
func jRight(rows ...[]any) jRows { return jRows{in: 1, rows: rows} }

// jWMs sets both inputs' watermark.
func jWMs(wm any) jWM { return jWM{in: -1, wm: wm} }

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
	runShapes(t, c.name, shapesOr(c.shapes), func(t *testing.T, sh opShape) {
		h := newOpHarness(t, c.op, sh.pebble, c.schemas[:]...)
		h.timeCols = c.timeCols
		err := errors.Join(h.run(cutScript(c.script, sh.batch), sh.barrier, nil), h.close())
		if checkRunErr(t, sh, err, c.wantErr, h.rows) {
			return
		}
		checkRows(t, sh, h.rows, c.want, c.sorted)
		checkCounts(t, sh, h.late.Load(), h.errs.Load(), c.late, c.errors)
	})
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
	return func(h *opHarness) error {
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
	return func(h *opHarness) error {
		if len(h.rows) != n {
			return fmt.Errorf("%d rows emitted so far, want %d: %q", len(h.rows), n, h.rows)
		}
		return nil
	}
}
