package streamlog

import (
	"context"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/exec/textform"
	"github.com/clinksql/clinksql/sqlerr"
)

// Table is a table's current rows, keyed by its primary key, over the table's Log (a table is an internal
// stream with a primary key: its log holds a changelog, not appended rows). Its statements (Upsert, Change) each
// compute their changes from the current rows, append them to the log as one durable segment, and only then
// apply them to the rows: a statement that fails (a NULL key, an evaluation error, a failed write) changes
// nothing, and one that returned is durable. They are serialized by the Table's mutex, so each sees the last
// one's rows.
//
// The rows live in memory and are rebuilt from the log when the Table is opened (OpenTable folds every segment
// by key): the log is the only durable copy, so the two can never disagree after a crash, at the cost of a read of
// the whole log at the first statement after an open and of memory for the rows (the log is never compacted; see
// the package doc). One Table per log: the engine keeps it with the log.
type Table struct {
	log   *Log
	name  string
	key   []int
	alloc memory.Allocator

	mu    sync.Mutex
	recs  []arrow.RecordBatch // insert-only batches; a row is current when alive says so
	alive [][]bool
	index map[string]rowRef // key -> the current row
	dead  int               // rows of recs that are no longer current
}

type rowRef struct{ rec, row int }

// OpenTable folds l's changelog into the current rows of table name, whose primary key is columns key of l's
// schema. Close releases them.
func OpenTable(l *Log, name string, key []int, alloc memory.Allocator) (*Table, error) {
	if alloc == nil {
		alloc = memory.DefaultAllocator
	}
	t := &Table{log: l, name: name, key: key, alloc: alloc, index: map[string]rowRef{}}
	for seq := uint64(1); seq < l.Next(); seq++ {
		sq, seg, ok := l.segmentAfter(seq)
		if !ok {
			break
		}
		seq = sq
		batches, err := l.readSegment(seg, alloc)
		if err != nil {
			t.Close()
			return nil, err
		}
		for _, b := range batches {
			keys, err := t.keys(b.Rec)
			if err != nil {
				releaseBatches(batches)
				t.Close()
				return nil, err
			}
			ri := len(t.recs)
			b.Rec.Retain()
			t.recs = append(t.recs, b.Rec)
			t.alive = append(t.alive, make([]bool, len(keys)))
			for i, k := range keys {
				switch b.Kind(i) {
				case exec.Insert, exec.UpdateAfter:
					t.retire(k)
					t.index[k] = rowRef{ri, i}
					t.alive[ri][i] = true
				default:
					t.retire(k)
					t.dead++ // the retraction's own row is never current
				}
			}
		}
		releaseBatches(batches)
	}
	if err := t.compact(); err != nil {
		t.Close()
		return nil, err
	}
	return t, nil
}

// retire makes the current row of key k, if any, no longer current.
func (t *Table) retire(k string) {
	if r, ok := t.index[k]; ok {
		t.alive[r.rec][r.row] = false
		t.dead++
		delete(t.index, k)
	}
}

// keys returns the primary key of every row of rec as a map key; a NULL in a key column is 23502.
func (t *Table) keys(rec arrow.RecordBatch) ([]string, error) {
	cols := make([]textform.Column, len(t.key))
	for j, c := range t.key {
		col, err := textform.NewColumn(rec.Column(c))
		if err != nil {
			return nil, err
		}
		cols[j] = col
	}
	out := make([]string, rec.NumRows())
	var buf []byte
	for i := range out {
		buf = buf[:0]
		for j := range cols {
			if cols[j].IsNull(i) {
				name := rec.Schema().Field(t.key[j]).Name
				return nil, sqlerr.New(sqlerr.NotNullViolation, sqlerr.NoPos,
					"null value in column %q of relation %q violates not-null constraint", name, t.name)
			}
			buf = cols[j].Append(append(buf, 0), i)
		}
		out[i] = string(buf)
	}
	return out, nil
}

// Len returns the number of current rows.
func (t *Table) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.index)
}

// Upsert inserts the rows of recs (of the table's schema) by key: a row whose key is current replaces that row
// (an update-before of the old row, an update-after of the new), any other is an insert. Of several rows of one
// statement with the same key the last wins, as if they were inserted one after another (the changelog carries
// only the net change). It returns the number of rows given.
func (t *Table) Upsert(recs []arrow.RecordBatch) (int64, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.open(); err != nil {
		return 0, err
	}
	type pick struct {
		ref rowRef // into recs
		k   string
	}
	last := map[string]int{} // key -> index into picks
	var picks []pick
	n := int64(0)
	for ri, rec := range recs {
		keys, err := t.keys(rec)
		if err != nil {
			return 0, err
		}
		n += rec.NumRows()
		for i, k := range keys {
			if p, ok := last[k]; ok {
				picks[p].ref = rowRef{ri, i}
				continue
			}
			last[k] = len(picks)
			picks = append(picks, pick{rowRef{ri, i}, k})
		}
	}
	if len(picks) == 0 {
		return n, nil
	}
	// The old rows, by the batch that holds them; the new rows, by the statement's batch.
	old := map[int][]int32{}
	var oldOrder []int
	newRows := make([][]int32, len(recs))
	newKinds := make([][]exec.RowKind, len(recs))
	var retired []string
	for _, p := range picks {
		kind := exec.Insert
		if r, ok := t.index[p.k]; ok {
			if _, seen := old[r.rec]; !seen {
				oldOrder = append(oldOrder, r.rec)
			}
			old[r.rec] = append(old[r.rec], int32(r.row))
			retired = append(retired, p.k)
			kind = exec.UpdateAfter
		}
		newRows[p.ref.rec] = append(newRows[p.ref.rec], int32(p.ref.row))
		newKinds[p.ref.rec] = append(newKinds[p.ref.rec], kind)
	}
	var out []exec.Batch
	defer func() { releaseBatches(out) }()
	for _, ri := range oldOrder {
		b, err := t.take(t.recs[ri], old[ri], exec.UpdateBefore)
		if err != nil {
			return 0, err
		}
		out = append(out, b)
	}
	nOld := len(out)
	for ri, rows := range newRows {
		if len(rows) == 0 {
			continue
		}
		b, err := exec.TakeRows(context.Background(), t.alloc, exec.Batch{Rec: recs[ri]}, rows)
		if err != nil {
			return 0, err
		}
		b.Kinds = newKinds[ri]
		if allInserts(b.Kinds) {
			b.Kinds = nil
		}
		out = append(out, b)
	}
	if err := t.log.Append(out...); err != nil {
		return 0, err
	}
	for _, k := range retired {
		t.retire(k)
	}
	return n, t.add(out[nOld:])
}

// Change applies an UPDATE or a DELETE: eval gets the table's current rows batch by batch and says which rows the
// statement picks and, for an UPDATE, gives the batch's rows with their new values (nil for a DELETE), each row's
// key unchanged. A picked current row is retracted (update-before or delete)
// and, for an UPDATE, its new row follows (update-after). It returns the number of rows changed.
func (t *Table) Change(eval func(arrow.RecordBatch) (picked []bool, updated arrow.RecordBatch, err error)) (int64, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.open(); err != nil {
		return 0, err
	}
	var out []exec.Batch
	defer func() { releaseBatches(out) }()
	type change struct{ olds, news int } // news -1: a delete
	var changes []change
	n := int64(0)
	for ri, all := range t.recs {
		// Only the current rows are evaluated: a replaced row's values must not fail the statement (a division
		// by zero) nor be counted.
		rec, err := t.current(ri)
		if err != nil {
			return 0, err
		}
		if rec == nil {
			continue
		}
		if rec != all {
			defer rec.Release()
		}
		var mine []int32
		picked, updated, err := eval(rec)
		if err != nil {
			return 0, err
		}
		for i, p := range picked {
			if p {
				mine = append(mine, int32(i))
			}
		}
		if len(mine) == 0 {
			if updated != nil {
				updated.Release()
			}
			continue
		}
		n += int64(len(mine))
		c := change{news: -1}
		kind := exec.Delete
		if updated != nil {
			kind = exec.UpdateBefore
		}
		b, err := t.take(rec, mine, kind)
		if err != nil {
			if updated != nil {
				updated.Release()
			}
			return 0, err
		}
		c.olds = len(out)
		out = append(out, b)
		if updated != nil {
			nb, err := t.take(updated, mine, exec.UpdateAfter)
			updated.Release()
			if err != nil {
				return 0, err
			}
			c.news = len(out)
			out = append(out, nb)
		}
		changes = append(changes, c)
	}
	if n == 0 {
		return 0, nil
	}
	if err := t.log.Append(out...); err != nil {
		return 0, err
	}
	var added []exec.Batch
	for _, c := range changes {
		keys, err := t.keys(out[c.olds].Rec)
		if err != nil {
			return n, err
		}
		for _, k := range keys {
			t.retire(k)
		}
		if c.news >= 0 {
			added = append(added, out[c.news])
		}
	}
	return n, t.add(added)
}

// current returns the current rows of held batch ri: the batch itself when every row of it is current (no new
// reference), a new batch of them otherwise, nil when it has none.
func (t *Table) current(ri int) (arrow.RecordBatch, error) {
	var rows []int32
	for i, ok := range t.alive[ri] {
		if ok {
			rows = append(rows, int32(i))
		}
	}
	switch len(rows) {
	case 0:
		return nil, nil
	case len(t.alive[ri]):
		return t.recs[ri], nil
	}
	b, err := exec.TakeRows(context.Background(), t.alloc, exec.Batch{Rec: t.recs[ri]}, rows)
	if err != nil {
		return nil, err
	}
	return b.Rec, nil
}

// take returns rows of rec as a batch of kind.
func (t *Table) take(rec arrow.RecordBatch, rows []int32, kind exec.RowKind) (exec.Batch, error) {
	b, err := exec.TakeRows(context.Background(), t.alloc, exec.Batch{Rec: rec}, rows)
	if err != nil {
		return exec.Batch{}, err
	}
	if kind != exec.Insert {
		b.Kinds = make([]exec.RowKind, len(rows))
		for i := range b.Kinds {
			b.Kinds[i] = kind
		}
	}
	return b, nil
}

// add makes the rows of bs (inserts and update-afters, already in the log) current, then compacts.
func (t *Table) add(bs []exec.Batch) error {
	for _, b := range bs {
		keys, err := t.keys(b.Rec)
		if err != nil {
			return err
		}
		ri := len(t.recs)
		b.Rec.Retain()
		t.recs = append(t.recs, b.Rec)
		t.alive = append(t.alive, make([]bool, len(keys)))
		for i, k := range keys {
			t.retire(k)
			t.index[k] = rowRef{ri, i}
			t.alive[ri][i] = true
		}
	}
	return t.compact()
}

// compact rewrites the held batches down to the current rows, merged into batches of up to compactRows rows,
// once most rows held are no longer current or the statements left many small batches (each INSERT adds one),
// so that memory follows the table's size rather than its history and UPDATE evaluates few batches.
func (t *Table) compact() error {
	// Full batches of a large table are never merged further, so they do not count against maxHeldBatches.
	if t.dead <= len(t.index) && t.dead < 1<<16 && len(t.recs) <= maxHeldBatches+len(t.index)/compactRows || len(t.recs) == 0 {
		return nil
	}
	var recs []arrow.RecordBatch
	release := func() {
		for _, r := range recs {
			r.Release()
		}
	}
	var pending []arrow.RecordBatch // current rows not merged yet (owned)
	rows := 0
	merge := func() error {
		if len(pending) == 0 {
			return nil
		}
		rec, err := exec.ConcatRecords(t.alloc, pending[0].Schema(), pending)
		for _, r := range pending {
			r.Release()
		}
		pending, rows = nil, 0
		if err != nil {
			return err
		}
		recs = append(recs, rec)
		return nil
	}
	for ri, all := range t.recs {
		rec, err := t.current(ri)
		if err != nil {
			release()
			return err
		}
		if rec == nil {
			continue
		}
		if rec == all {
			rec.Retain()
		}
		if rows > 0 && rows+int(rec.NumRows()) > compactRows {
			if err := merge(); err != nil {
				rec.Release()
				release()
				return err
			}
		}
		pending = append(pending, rec)
		rows += int(rec.NumRows())
	}
	if err := merge(); err != nil {
		release()
		return err
	}
	var alive [][]bool
	index := map[string]rowRef{}
	for ri, rec := range recs {
		keys, err := t.keys(rec)
		if err != nil {
			release()
			return err
		}
		a := make([]bool, len(keys))
		for i, k := range keys {
			a[i] = true
			index[k] = rowRef{ri, i}
		}
		alive = append(alive, a)
	}
	for _, r := range t.recs {
		r.Release()
	}
	t.recs, t.alive, t.index, t.dead = recs, alive, index, 0
	return nil
}

const (
	// maxHeldBatches is how many batches a table holds before compact merges them.
	maxHeldBatches = 256
	// compactRows is the size of the batches compact merges rows into (a larger batch is kept as it is).
	compactRows = 64 << 10
)

// Rows calls fn with each batch of current rows (shared: fn must not keep them past its return).
func (t *Table) Rows(fn func(arrow.RecordBatch) error) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.open(); err != nil {
		return err
	}
	for ri, all := range t.recs {
		rec, err := t.current(ri)
		if err != nil {
			return err
		}
		if rec == nil {
			continue
		}
		err = fn(rec)
		if rec != all {
			rec.Release()
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// open refuses a statement on a Table that Close released (its table was dropped while the statement started).
func (t *Table) open() error {
	if t.index == nil {
		return sqlerr.New(sqlerr.UndefinedTable, sqlerr.NoPos, "relation %q was dropped", t.name)
	}
	return nil
}

// Close releases the rows; statements after it fail with 42P01.
func (t *Table) Close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, r := range t.recs {
		r.Release()
	}
	t.recs, t.alive, t.index = nil, nil, nil
}

func allInserts(ks []exec.RowKind) bool {
	for _, k := range ks {
		if k != exec.Insert {
			return false
		}
	}
	return true
}

// Consolidate folds a changelog into the rows it leaves, as insert-only batches (new references; the caller
// keeps its own): what an INSERT INTO a table ... SELECT whose result is updating inserts.
func Consolidate(alloc memory.Allocator, in []exec.Batch) ([]exec.Batch, error) {
	return consolidate(alloc, in)
}
