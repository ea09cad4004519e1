package optest

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/state"
)

// The two-input operator tests (joins): a case is a script (InputRows, InputWM and Check steps, see harness.go) for
// an operator with a left (0) and a right (1) input, run by Harness.
//
// Every shape (Shape: batches of 1 row, 3 rows or the whole InputRows step; memory or Pebble backend; no restore, a
// restore at the middle barrier or at every barrier) runs the script, with a barrier after every batch but the
// last and the final watermark (end of input) after the script, and must produce the case's rows in order
// (sorted when the case says so). Checks on every run are Harness's: among them, when the case names its
// output time columns, that no emitted row has a time below the watermark forwarded before it.

// Left and Right are rows for input 0 and 1.
func Left(rows ...[]any) InputRows  { return InputRows{In: 0, Rows: rows} }
func Right(rows ...[]any) InputRows { return InputRows{In: 1, Rows: rows} }

// AllWM sets both inputs' watermark.
func AllWM(wm any) InputWM { return InputWM{In: -1, WM: wm} }

// ScriptCase is one two-input operator test.
type ScriptCase struct {
	Name    string
	Schemas [2]*arrow.Schema
	Script  []any
	Op      func(subtask int) exec.Operator
	// want is the expected output in Postgres text form ("|"-separated, NULL as "NULL", a non-insert row kind as
	// a prefix); sorted compares as multisets.
	Want   []string
	Sorted bool
	// wantErr, when set, is the SQLSTATE or a substring of the error the run must fail with.
	WantErr string
	// late and errors are the expected TaskContext.Late and Errors totals.
	Late, Errors int64
	// timeCols are the output columns holding event times, checked against the forwarded watermark.
	TimeCols []int
	Shapes   []Shape
}

// RunScriptCase runs c in every shape.
func RunScriptCase(t *testing.T, c ScriptCase) {
	t.Helper()
	RunShapes(t, c.Name, ShapesOr(c.Shapes), func(t *testing.T, sh Shape) {
		h := NewHarness(t, c.Op, sh.Pebble, c.Schemas[:]...)
		h.TimeCols = c.TimeCols
		err := errors.Join(h.Run(CutScript(c.Script, sh.Batch), sh.Barrier, nil), h.Close())
		if CheckRunErr(t, sh, err, c.WantErr, h.Rows) {
			return
		}
		CheckRows(t, sh, h.Rows, c.Want, c.Sorted)
		CheckCounts(t, sh, h.Late.Load(), h.Errs.Load(), c.Late, c.Errors)
	})
}

// KeyedEntries counts the keyed state entries of the backend (everything but operator state).
func KeyedEntries(be state.Backend) (int, error) {
	n := 0
	for kg := 0; kg < state.DefaultKeyGroups; kg++ {
		if err := be.Scan(state.KeyGroupPrefix(kg), func(_, _ []byte) error { n++; return nil }); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// Keyed is a Check: the backend holds exactly n keyed entries.
func Keyed(n int) Check {
	return func(h *Harness) error {
		got, err := KeyedEntries(h.Backend)
		if err != nil {
			return err
		}
		if got != n {
			return fmt.Errorf("state holds %d keyed entries, want %d", got, n)
		}
		return nil
	}
}

// Emitted is a Check: exactly n rows were emitted so far (what a watermark has fired, and not more).
func Emitted(n int) Check {
	return func(h *Harness) error {
		if len(h.Rows) != n {
			return fmt.Errorf("%d rows emitted so far, want %d: %q", len(h.Rows), n, h.Rows)
		}
		return nil
	}
}

// FoldChangelog applies changelog lines ("+I 1|2") to a result multiset; a retraction of a row not in it is an
// error.
func FoldChangelog(fold map[string]int, log []string) error {
	for i, line := range log {
		kind, row, _ := strings.Cut(line, " ")
		switch kind {
		case "+I", "+U":
			fold[row]++
		case "-U", "-D":
			if fold[row] == 0 {
				return fmt.Errorf("line %d: %s of %q, which is not in the result", i, kind, row)
			}
			if fold[row]--; fold[row] == 0 {
				delete(fold, row)
			}
		default:
			return fmt.Errorf("line %d: bad changelog line %q", i, line)
		}
	}
	return nil
}
