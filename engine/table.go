package engine

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/clinksql/clinksql/catalog"
	"github.com/clinksql/clinksql/connectors/streamlog"
	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/exec/expr"
	"github.com/clinksql/clinksql/sql/parser"
	"github.com/clinksql/clinksql/sql/planner"
	"github.com/clinksql/clinksql/sqlerr"
)

// Tables (catalog.Object.IsTable): INSERT ... VALUES upserts by the primary key, UPDATE and DELETE change the
// rows their WHERE picks. Each statement goes through the table's streamlog.Table, which computes its changes
// from the current rows, appends them to the table's log as one durable segment and serializes the statements on
// the table. The current rows are folded from the log at the table's first statement after an open.

// tables holds the open streamlog.Tables by storage name.
type tables struct {
	mu sync.Mutex
	m  map[string]*streamlog.Table
}

// table returns the current rows of table obj.
func (e *Engine) table(obj *catalog.Object) (*streamlog.Table, error) {
	l, err := e.Log(obj)
	if err != nil {
		return nil, err
	}
	e.tables.mu.Lock()
	defer e.tables.mu.Unlock()
	if t, ok := e.tables.m[obj.Storage]; ok {
		return t, nil
	}
	key := make([]int, len(obj.PrimaryKey))
	for i, name := range obj.PrimaryKey {
		key[i] = slices.IndexFunc(obj.Columns, func(c catalog.Column) bool { return c.Name == name })
		if key[i] < 0 {
			return nil, sqlerr.New(sqlerr.InternalError, sqlerr.NoPos, "table %q: key column %q is not a column", obj.Name, name)
		}
	}
	t, err := streamlog.OpenTable(l, obj.Name, key, e.cfg.Alloc)
	if err != nil {
		return nil, sqlerr.Wrap(sqlerr.IOError, err)
	}
	if e.tables.m == nil {
		e.tables.m = map[string]*streamlog.Table{}
	}
	e.tables.m[obj.Storage] = t
	return t, nil
}

// closeTable releases the rows of the table stored as storage, if they were read (DROP, Close).
func (e *Engine) closeTable(storage string) {
	e.tables.mu.Lock()
	t := e.tables.m[storage]
	delete(e.tables.m, storage)
	e.tables.mu.Unlock()
	if t != nil {
		t.Close()
	}
}

// closeTables releases every table's rows (Close).
func (e *Engine) closeTables() {
	e.tables.mu.Lock()
	m := e.tables.m
	e.tables.m = nil
	e.tables.mu.Unlock()
	for _, t := range m {
		t.Close()
	}
}

// upsertValues inserts the batches of one INSERT ... VALUES into table target by its key and releases them.
func (s *Session) upsertValues(target *catalog.Object, recs []arrow.RecordBatch, pos int) (*Result, error) {
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	t, err := s.e.table(target)
	if err != nil {
		return nil, err
	}
	n, err := t.Upsert(recs)
	if err != nil {
		return nil, tableErr(err, pos)
	}
	return &Result{Tag: fmt.Sprintf("INSERT 0 %d", n)}, nil
}

// tableErr is a table statement's error: a SQL error at pos if it has no position, any other an I/O error.
func tableErr(err error, pos int) error {
	if se, ok := err.(*sqlerr.Error); ok {
		if se.Pos == sqlerr.NoPos {
			return se.WithPos(pos)
		}
		return se
	}
	return sqlerr.Wrap(sqlerr.IOError, err)
}

// changeTable runs UPDATE or DELETE of a table.
func (s *Session) changeTable(ctx context.Context, st parser.Stmt, params *planner.Params) (*Result, error) {
	js, _, err := s.settings()
	if err != nil {
		return nil, err
	}
	ps := js.planner()
	ps.Params = params
	var c *planner.TableChange
	tag := "UPDATE"
	switch st := st.(type) {
	case *parser.Update:
		c, err = planner.PlanUpdate(s.e, st, ps)
	case *parser.Delete:
		c, err = planner.PlanDelete(s.e, st, ps)
		tag = "DELETE"
	}
	if err != nil {
		return nil, err
	}
	t, err := s.e.table(c.Table)
	if err != nil {
		return nil, err
	}
	n, err := t.Change(func(rec arrow.RecordBatch) ([]bool, arrow.RecordBatch, error) {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		return c.Eval(s.e.cfg.Alloc, rec)
	})
	if err != nil {
		return nil, tableErr(err, c.Pos)
	}
	return &Result{Tag: fmt.Sprintf("%s %d", tag, n)}, nil
}

// insertSelect runs INSERT INTO table SELECT ... as one statement: the query runs to its end (an ad-hoc
// SELECT's dataflow), its rows are gathered (at most max_result_memory of them; a changelog folded), and then
// upserted at once, so the statement is atomic like an INSERT ... VALUES.
func (s *Session) insertSelect(ctx context.Context, st *parser.Insert, target *catalog.Object, ps planner.Settings) (*Result, error) {
	ps.Errors = expr.ErrorsFail // a bad value fails the statement (SQLSTATE 22xxx), as in an ad-hoc SELECT
	var (
		mu    sync.Mutex
		got   []exec.Batch
		bytes int64
	)
	release := func() {
		for _, b := range got {
			b.Release()
		}
		got = nil
	}
	defer release()
	limit := s.vars.limit("max_result_memory")
	p, err := planner.PlanTableInsert(s.e, st, target, ps, func(b exec.Batch) error {
		mu.Lock()
		defer mu.Unlock()
		if b.Rows() == 0 {
			b.Release()
			return nil
		}
		got = append(got, b)
		for _, c := range b.Rec.Columns() {
			bytes += int64(c.Data().SizeInBytes())
		}
		if limit > 0 && bytes > limit {
			return sqlerr.New(sqlerr.OutOfMemory, sqlerr.NoPos, "the rows of INSERT INTO %q ... SELECT outgrew max_result_memory (%d bytes)", target.Name, limit)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := s.e.runSelect(ctx, p); err != nil {
		return nil, err
	}
	rows := got
	if p.Updating {
		folded, err := streamlog.Consolidate(s.e.cfg.Alloc, got)
		if err != nil {
			return nil, err
		}
		release()
		got, rows = folded, folded
	}
	recs := make([]arrow.RecordBatch, 0, len(rows))
	for _, b := range rows {
		if b.Kinds != nil {
			return nil, sqlerr.New(sqlerr.InternalError, sqlerr.NoPos, "INSERT INTO %q ... SELECT: a retraction in an append-only result", target.Name)
		}
		b.Rec.Retain()
		recs = append(recs, b.Rec)
	}
	return s.upsertValues(target, recs, st.Query.P) // releases recs
}
