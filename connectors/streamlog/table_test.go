package streamlog

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clinksql/clinksql/connectors/connectortest"
	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/sqlerr"
	"github.com/clinksql/clinksql/state"
)

// kvRec builds a record of (id, s) rows from pairs; an id of -1 is NULL.
func kvRec(mem memory.Allocator, rows ...any) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, connectortest.KVSchema)
	defer b.Release()
	for i := 0; i < len(rows); i += 2 {
		if id := rows[i].(int); id < 0 {
			b.Field(0).AppendNull()
		} else {
			b.Field(0).(*array.Int64Builder).Append(int64(id))
		}
		b.Field(1).(*array.StringBuilder).Append(rows[i+1].(string))
	}
	return b.NewRecordBatch()
}

// tableRows lists the current rows as "id=s", sorted.
func tableRows(t *testing.T, tb *Table) []string {
	t.Helper()
	var out []string
	connectortest.Must(t, tb.Rows(func(rec arrow.RecordBatch) error {
		ids, ss := rec.Column(0).(*array.Int64), rec.Column(1).(*array.String)
		for i := range int(rec.NumRows()) {
			out = append(out, fmt.Sprintf("%d=%s", ids.Value(i), ss.Value(i)))
		}
		return nil
	}))
	slices.Sort(out)
	return out
}

// changelog lists every change the log holds, in order, as "+I 1=a".
func changelog(t *testing.T, mem memory.Allocator, l *Log) []string {
	t.Helper()
	src := NewSource(SourceConfig{Log: l, Bounded: true})
	connectortest.Must(t, src.Open(connectortest.NewTask(mem, connectortest.TaskOpts{})))
	defer src.Close()
	var out []string
	for {
		res, err := src.Produce(context.Background())
		connectortest.Must(t, err)
		if res.Status != exec.Produced {
			return out
		}
		ids, ss := res.Batch.Rec.Column(0).(*array.Int64), res.Batch.Rec.Column(1).(*array.String)
		for i := range ids.Len() {
			out = append(out, fmt.Sprintf("%s %d=%s", res.Batch.Kind(i), ids.Value(i), ss.Value(i)))
		}
		res.Batch.Release()
	}
}

// setS is an UPDATE ... SET s = to WHERE id is in ids (all rows when ids is empty).
func setS(mem memory.Allocator, to string, ids ...int64) func(arrow.RecordBatch) ([]bool, arrow.RecordBatch, error) {
	return func(rec arrow.RecordBatch) ([]bool, arrow.RecordBatch, error) {
		col := rec.Column(0).(*array.Int64)
		picked := make([]bool, rec.NumRows())
		b := array.NewStringBuilder(mem)
		defer b.Release()
		for i := range picked {
			picked[i] = len(ids) == 0 || slices.Contains(ids, col.Value(i))
			b.Append(to)
		}
		s := b.NewArray()
		defer s.Release()
		return picked, array.NewRecordBatch(rec.Schema(), []arrow.Array{rec.Column(0), s}, rec.NumRows()), nil
	}
}

// deleteIDs is a DELETE WHERE id is in ids.
func deleteIDs(ids ...int64) func(arrow.RecordBatch) ([]bool, arrow.RecordBatch, error) {
	return func(rec arrow.RecordBatch) ([]bool, arrow.RecordBatch, error) {
		col := rec.Column(0).(*array.Int64)
		picked := make([]bool, rec.NumRows())
		for i := range picked {
			picked[i] = slices.Contains(ids, col.Value(i))
		}
		return picked, nil, nil
	}
}

func upsert(t *testing.T, mem memory.Allocator, tb *Table, rows ...any) (int64, error) {
	t.Helper()
	rec := kvRec(mem, rows...)
	defer rec.Release()
	return tb.Upsert([]arrow.RecordBatch{rec})
}

// pins: an upsert of an existing key retracts the old row (-U, +U), a new key is +I, the last of one statement's
// rows with a key wins; UPDATE and DELETE retract what they pick; the counts; and a Table opened again over the
// reopened log (an engine restart) holds the same rows and continues from them.
func TestTableStatementsAndReopen(t *testing.T) {
	mem := connectortest.CheckedAlloc(t)
	dir := t.TempDir()
	l, err := Create(state.OS, dir, connectortest.KVSchema)
	connectortest.Must(t, err)
	tb, err := OpenTable(l, "t", []int{0}, mem)
	connectortest.Must(t, err)

	if n, err := upsert(t, mem, tb, 1, "a", 2, "b", 3, "c"); err != nil || n != 3 {
		t.Fatalf("insert: %d, %v", n, err)
	}
	if n, err := upsert(t, mem, tb, 2, "B", 4, "d", 4, "D"); err != nil || n != 3 {
		t.Fatalf("upsert: %d, %v", n, err)
	}
	if n, err := tb.Change(setS(mem, "x", 1, 4, 9)); err != nil || n != 2 {
		t.Fatalf("update: %d, %v", n, err)
	}
	if n, err := tb.Change(deleteIDs(3, 9)); err != nil || n != 1 {
		t.Fatalf("delete: %d, %v", n, err)
	}
	if n, err := tb.Change(deleteIDs(3)); err != nil || n != 0 {
		t.Fatalf("delete of nothing: %d, %v", n, err)
	}
	want := []string{"1=x", "2=B", "4=x"}
	if got := tableRows(t, tb); !slices.Equal(got, want) {
		t.Fatalf("rows %v, want %v", got, want)
	}
	wantLog := []string{"+I 1=a", "+I 2=b", "+I 3=c",
		"-U 2=b", "+U 2=B", "+I 4=D",
		"-U 1=a", "+U 1=x", "-U 4=D", "+U 4=x",
		"-D 3=c"}
	if got := changelog(t, mem, l); !slices.Equal(got, wantLog) {
		t.Fatalf("changelog\n%v\nwant\n%v", got, wantLog)
	}
	if got := l.Next(); got != 5 {
		t.Fatalf("segments: next %d, want 5 (a statement that changes nothing appends none)", got)
	}
	tb.Close()

	// The engine restarts: the log is opened again and the rows folded from it.
	l2, err := Open(state.OS, dir, connectortest.KVSchema)
	connectortest.Must(t, err)
	tb2, err := OpenTable(l2, "t", []int{0}, mem)
	connectortest.Must(t, err)
	defer tb2.Close()
	if got := tableRows(t, tb2); !slices.Equal(got, want) {
		t.Fatalf("rows after reopen %v, want %v", got, want)
	}
	if n, err := upsert(t, mem, tb2, 1, "y", 5, "e"); err != nil || n != 2 {
		t.Fatalf("upsert after reopen: %d, %v", n, err)
	}
	got := changelog(t, mem, l2)
	if tail := got[len(wantLog):]; !slices.Equal(tail, []string{"-U 1=x", "+U 1=y", "+I 5=e"}) {
		t.Fatalf("changelog after reopen: %v", tail)
	}
	if got := tableRows(t, tb2); !slices.Equal(got, []string{"1=y", "2=B", "4=x", "5=e"}) {
		t.Fatalf("rows after reopen and upsert: %v", got)
	}
}

// pins: a statement that fails changes nothing, in the log or the rows: a NULL key (23502) after good rows, an
// evaluation error after a batch was evaluated, a failed write of the segment.
func TestTableFailedStatementChangesNothing(t *testing.T) {
	mem := connectortest.CheckedAlloc(t)
	dir := t.TempDir()
	fsys := &state.FaultFS{Inner: state.OS, FailAfter: -1}
	l, err := Create(fsys, dir, connectortest.KVSchema)
	connectortest.Must(t, err)
	tb, err := OpenTable(l, "t", []int{0}, mem)
	connectortest.Must(t, err)
	defer tb.Close()
	// Two batches held, so an UPDATE evaluates more than one.
	if _, err := upsert(t, mem, tb, 1, "a", 2, "b"); err != nil {
		t.Fatal(err)
	}
	if _, err := upsert(t, mem, tb, 3, "c"); err != nil {
		t.Fatal(err)
	}
	want := []string{"1=a", "2=b", "3=c"}
	next := l.Next()
	unchanged := func(what string) {
		t.Helper()
		if got := tableRows(t, tb); !slices.Equal(got, want) {
			t.Fatalf("%s: rows %v, want %v", what, got, want)
		}
		if l.Next() != next {
			t.Fatalf("%s: a segment was appended", what)
		}
	}

	_, err = upsert(t, mem, tb, 1, "z", 4, "d", -1, "null")
	var se *sqlerr.Error
	if !errors.As(err, &se) || se.Code != sqlerr.NotNullViolation {
		t.Fatalf("NULL key: %v, want 23502", err)
	}
	unchanged("NULL key")

	calls := 0
	boom := errors.New("division by zero")
	_, err = tb.Change(func(rec arrow.RecordBatch) ([]bool, arrow.RecordBatch, error) {
		if calls++; calls == 2 {
			return nil, nil, boom
		}
		return setS(mem, "q")(rec)
	})
	if !errors.Is(err, boom) {
		t.Fatalf("evaluation error: %v", err)
	}
	unchanged("evaluation error")

	fsys.FailAfter = 0 // every write fails from now on
	if _, err := upsert(t, mem, tb, 1, "z", 4, "d"); !errors.Is(err, state.ErrInjected) {
		t.Fatalf("failed write of an upsert: %v", err)
	}
	unchanged("failed write of an upsert")
	if _, err := tb.Change(deleteIDs(2)); !errors.Is(err, state.ErrInjected) {
		t.Fatalf("failed write of a delete: %v", err)
	}
	unchanged("failed write of a delete")
	if _, err := tb.Change(setS(mem, "w")); !errors.Is(err, state.ErrInjected) {
		t.Fatalf("failed write of an update: %v", err)
	}
	unchanged("failed write of an update")
}

// pins: the rows held are compacted once most of them are retracted, and the table stays the same through it.
func TestTableCompacts(t *testing.T) {
	mem := connectortest.CheckedAlloc(t)
	_, tb := newKVTable(t, mem)
	for i := range 20 {
		if _, err := upsert(t, mem, tb, 1, fmt.Sprint("a", i), 2, fmt.Sprint("b", i)); err != nil {
			t.Fatal(err)
		}
	}
	if held := len(tb.recs); held > 3 {
		t.Fatalf("%d batches held for 2 rows", held)
	}
	if got := tableRows(t, tb); !slices.Equal(got, []string{"1=a19", "2=b19"}) {
		t.Fatalf("rows %v", got)
	}
}

// pins: UPDATE and DELETE see only the current rows: a replaced row still held (not yet compacted) is neither
// evaluated (its values must not fail the statement) nor counted.
func TestTableChangeSeesOnlyCurrentRows(t *testing.T) {
	mem := connectortest.CheckedAlloc(t)
	_, tb := newKVTable(t, mem)
	if _, err := upsert(t, mem, tb, 1, "bad", 2, "b", 3, "c"); err != nil {
		t.Fatal(err)
	}
	if _, err := upsert(t, mem, tb, 1, "good"); err != nil {
		t.Fatal(err)
	}
	seen := 0
	n, err := tb.Change(func(rec arrow.RecordBatch) ([]bool, arrow.RecordBatch, error) {
		ss := rec.Column(1).(*array.String)
		for i := range ss.Len() {
			if ss.Value(i) == "bad" {
				return nil, nil, errors.New("evaluated a replaced row")
			}
		}
		seen += int(rec.NumRows())
		return setS(mem, "u")(rec)
	})
	if err != nil || n != 3 || seen != 3 {
		t.Fatalf("update: %d rows, %d seen, %v", n, seen, err)
	}
	if got := tableRows(t, tb); !slices.Equal(got, []string{"1=u", "2=u", "3=u"}) {
		t.Fatalf("rows %v", got)
	}
}

// pins: many one-row INSERTs of new keys (no row replaced) are merged into few batches, rows and keys intact.
func TestTableMergesSmallBatches(t *testing.T) {
	mem := connectortest.CheckedAlloc(t)
	_, tb := newKVTable(t, mem)
	var want []string
	for i := range maxHeldBatches + 10 {
		if _, err := upsert(t, mem, tb, i, fmt.Sprint("v", i)); err != nil {
			t.Fatal(err)
		}
		want = append(want, fmt.Sprintf("%d=v%d", i, i))
	}
	if held := len(tb.recs); held > 20 {
		t.Fatalf("%d batches held", held)
	}
	slices.Sort(want)
	if got := tableRows(t, tb); !slices.Equal(got, want) {
		t.Fatalf("rows %v", got)
	}
	// The keys still find their rows: an upsert replaces, an update and a delete pick by key.
	if _, err := upsert(t, mem, tb, 5, "new"); err != nil {
		t.Fatal(err)
	}
	if n, err := tb.Change(deleteIDs(6, 7)); err != nil || n != 2 {
		t.Fatalf("delete: %d %v", n, err)
	}
	if got := tb.Len(); got != maxHeldBatches+8 {
		t.Fatalf("%d rows", got)
	}
}

// pins: a statement on a Table closed under it (its table dropped) fails with 42P01 instead of touching
// released rows.
func TestTableClosed(t *testing.T) {
	mem := connectortest.CheckedAlloc(t)
	l, err := Create(state.OS, t.TempDir(), connectortest.KVSchema)
	connectortest.Must(t, err)
	tb, err := OpenTable(l, "t", []int{0}, mem)
	connectortest.Must(t, err)
	if _, err := upsert(t, mem, tb, 1, "a"); err != nil {
		t.Fatal(err)
	}
	tb.Close()
	var se *sqlerr.Error
	if _, err := upsert(t, mem, tb, 2, "b"); !errors.As(err, &se) || se.Code != sqlerr.UndefinedTable {
		t.Fatalf("upsert after close: %v", err)
	}
	if _, err := tb.Change(deleteIDs(1)); !errors.As(err, &se) || se.Code != sqlerr.UndefinedTable {
		t.Fatalf("delete after close: %v", err)
	}
}

// newKVTable is a table keyed by id over a new log of connectortest.KVSchema, closed when the test ends.
func newKVTable(t *testing.T, mem memory.Allocator) (*Log, *Table) {
	t.Helper()
	l, err := Create(state.OS, t.TempDir(), connectortest.KVSchema)
	connectortest.Must(t, err)
	tb, err := OpenTable(l, "t", []int{0}, mem)
	connectortest.Must(t, err)
	t.Cleanup(func() { tb.Close() })
	return l, tb
}
