package engine

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/clinksql/clinksql/catalog"
	"github.com/clinksql/clinksql/connectors/streamlog"
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
