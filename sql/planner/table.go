package planner

import (
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clinksql/clinksql/catalog"
	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/exec/expr"
	"github.com/clinksql/clinksql/exec/operators"
	"github.com/clinksql/clinksql/sql/parser"
	"github.com/clinksql/clinksql/sqlerr"
)

// Tables (catalog.Object.IsTable: a stream without a connector that has a primary key) change by statement:
// INSERT ... VALUES upserts by the key, UPDATE and DELETE change the rows their WHERE picks. The engine holds a
// table's rows and writes the changes into its log (connectors/streamlog.Table); this file binds what it
// evaluates over them.

// TableChange is a bound UPDATE or DELETE of a table: expressions over the table's columns, in its order.
type TableChange struct {
	Table *catalog.Object
	// Where picks the rows (a BOOLEAN; NULL does not pick); nil picks every row.
	Where expr.Expr
	// Set is an UPDATE's new value of every column (the column itself where the statement assigns none), each of
	// the column's type; nil for a DELETE.
	Set []expr.Expr
	// Pos is where the statement's evaluation errors point (its WHERE, or its first assignment).
	Pos int
}

// TableTarget looks a table up for a statement that changes it; anything else is refused with 42809, a stream
// without a key with a hint.
func TableTarget(cat *catalog.Catalog, name string, pos int, what string) (*catalog.Object, error) {
	obj, ok := cat.Get(name)
	if !ok {
		return nil, sqlerr.New(sqlerr.UndefinedTable, pos, "relation %q does not exist", name)
	}
	if obj.IsTable() {
		return obj, nil
	}
	kind := lower(string(obj.Kind))
	e := sqlerr.New(sqlerr.WrongObjectType, pos, "cannot %s %s %q: only a table (a stream without a connector that has a PRIMARY KEY) takes %s",
		what, kind, obj.Name, what)
	if obj.Kind == catalog.Stream && obj.Connector() == "" {
		e = sqlerr.New(sqlerr.WrongObjectType, pos, "cannot %s stream %q: it has no PRIMARY KEY, so its rows are appended and never changed", what, obj.Name)
		e.Hint = "A table is declared with a key: CREATE TABLE name (..., PRIMARY KEY (col)); its INSERTs upsert by it and UPDATE and DELETE change its rows."
	}
	return nil, e
}

// tableBinder binds names over a table's columns, qualified by alias (or the table's name).
func tableBinder(env Env, obj *catalog.Object, alias string, s Settings) (*exprBinder, error) {
	if alias == "" {
		alias = obj.Name
	}
	cols := make([]Col, len(obj.Columns))
	for i, c := range obj.Columns {
		t, err := c.Type.Arrow()
		if err != nil {
			return nil, sqlerr.New(sqlerr.InternalError, sqlerr.NoPos, "column %s of %s: %v", c.Name, obj.Name, err)
		}
		cols[i] = Col{Name: c.Name, Table: alias, Type: t}
	}
	return &exprBinder{sc: &scope{cols: cols}, params: s.Params, tz: s.TimeZone, fns: newFuncScope(env)}, nil
}

// noSubquery refuses a subquery inside e (the WHERE and SET of UPDATE and DELETE evaluate over the table's rows
// alone).
func noSubquery(e parser.Expr, what string) error {
	var err error
	parser.Walk(e, func(x parser.Expr) {
		at := -1
		switch x := x.(type) {
		case *parser.Subquery:
			at = x.P
		case *parser.InList:
			if x.Sub != nil {
				at = x.P
			}
		}
		if at >= 0 && err == nil {
			err = sqlerr.New(sqlerr.FeatureNotSupported, at, "a subquery in the %s of UPDATE or DELETE is not supported", what)
		}
	})
	return err
}

func bindWhere(eb *exprBinder, where parser.Expr) (expr.Expr, error) {
	if where == nil {
		return nil, nil
	}
	if err := noSubquery(where, "WHERE"); err != nil {
		return nil, err
	}
	w, err := eb.bind(where)
	if err != nil {
		return nil, posErr(err, where.Pos())
	}
	if w.Type().ID() != arrow.BOOL && w.Type().ID() != arrow.NULL {
		return nil, sqlerr.New(sqlerr.DatatypeMismatch, where.Pos(), "argument of WHERE must be type boolean, not type %s", expr.TypeName(w.Type()))
	}
	return w, nil
}

// PlanDelete binds DELETE FROM table [WHERE cond].
func PlanDelete(env Env, st *parser.Delete, s Settings) (*TableChange, error) {
	obj, err := TableTarget(env.Catalog(), st.Target, st.TargetP, "DELETE FROM")
	if err != nil {
		return nil, err
	}
	eb, err := tableBinder(env, obj, st.Alias, s)
	if err != nil {
		return nil, err
	}
	c := &TableChange{Table: obj, Pos: st.TargetP}
	if c.Where, err = bindWhere(eb, st.Where); err != nil {
		return nil, err
	}
	if st.Where != nil {
		c.Pos = st.Where.Pos()
	}
	return c, nil
}

// PlanUpdate binds UPDATE table SET col = expr, ... [WHERE cond]. A key column cannot be assigned (0A000): a
// row's key is what the changelog's retraction and its readers' state find it by.
func PlanUpdate(env Env, st *parser.Update, s Settings) (*TableChange, error) {
	obj, err := TableTarget(env.Catalog(), st.Target, st.TargetP, "UPDATE")
	if err != nil {
		return nil, err
	}
	eb, err := tableBinder(env, obj, st.Alias, s)
	if err != nil {
		return nil, err
	}
	c := &TableChange{Table: obj, Pos: st.TargetP, Set: make([]expr.Expr, len(obj.Columns))}
	for i, col := range eb.sc.cols {
		c.Set[i] = expr.Column(i, col.Name, col.Type)
	}
	assigned := make([]bool, len(obj.Columns))
	for _, a := range st.Set {
		k := slices.IndexFunc(obj.Columns, func(c catalog.Column) bool { return c.Name == a.Column })
		if k < 0 {
			return nil, sqlerr.New(sqlerr.UndefinedColumn, a.ColumnP, "column %q of relation %q does not exist", a.Column, obj.Name)
		}
		if assigned[k] {
			return nil, sqlerr.New(sqlerr.SyntaxError, a.ColumnP, "multiple assignments to same column %q", a.Column)
		}
		assigned[k] = true
		if slices.Contains(obj.PrimaryKey, a.Column) {
			e := sqlerr.New(sqlerr.FeatureNotSupported, a.ColumnP, "UPDATE of primary key column %q of table %q is not supported", a.Column, obj.Name)
			e.Hint = "DELETE the row and INSERT it with its new key."
			return nil, e
		}
		if err := noSubquery(a.Value, "SET"); err != nil {
			return nil, err
		}
		t := eb.sc.cols[k].Type
		n, untyped := s.Params.isUntyped(a.Value) // SET col = $n: $n is of col's type
		if untyped {
			s.Params.infer(n, t)
		}
		v, err := eb.bind(a.Value)
		if err != nil {
			return nil, posErr(err, a.Value.Pos())
		}
		if !arrow.TypeEqual(v.Type(), t) {
			if !untyped && !assignable(v.Type(), t) {
				e := sqlerr.New(sqlerr.DatatypeMismatch, a.Value.Pos(), "column %q is of type %s but expression is of type %s",
					a.Column, expr.TypeName(t), expr.TypeName(v.Type()))
				e.Hint = "You will need to rewrite or cast the expression."
				return nil, e
			}
			if v, err = castIn(s.TimeZone, v, t, false); err != nil {
				return nil, posErr(err, a.Value.Pos())
			}
		}
		c.Set[k] = v
	}
	if len(st.Set) > 0 {
		c.Pos = st.Set[0].Value.Pos()
	}
	if c.Where, err = bindWhere(eb, st.Where); err != nil {
		return nil, err
	}
	return c, nil
}

// Eval evaluates the change over a batch of the table's rows: which rows the WHERE picks and, for an UPDATE, the
// batch's rows with their new values (every row, picked or not; nil for a DELETE). An evaluation error (a
// division by zero, a failed cast) is the statement's, at Pos.
func (c *TableChange) Eval(mem memory.Allocator, rec arrow.RecordBatch) (picked []bool, updated arrow.RecordBatch, err error) {
	ctx := &expr.Context{Alloc: mem, Mode: expr.ErrorsFail}
	defer ctx.Close()
	picked = make([]bool, rec.NumRows())
	if c.Where == nil {
		for i := range picked {
			picked[i] = true
		}
	} else {
		a, err := c.Where.Eval(ctx, rec)
		if err != nil {
			return nil, nil, posErr(err, c.Pos)
		}
		if b, ok := a.(*array.Boolean); ok {
			for i := range picked {
				picked[i] = b.IsValid(i) && b.Value(i)
			}
		}
		a.Release()
	}
	if c.Set == nil {
		return picked, nil, nil
	}
	cols := make([]arrow.Array, len(c.Set))
	for i, e := range c.Set {
		a, err := e.Eval(ctx, rec)
		if err != nil {
			for _, x := range cols[:i] {
				x.Release()
			}
			return nil, nil, posErr(err, c.Pos)
		}
		cols[i] = a
	}
	out := array.NewRecordBatch(rec.Schema(), cols, rec.NumRows())
	for _, x := range cols {
		x.Release()
	}
	return picked, out, nil
}

// PlanTableInsert plans INSERT INTO table SELECT ... as one statement: the query runs to its end over bounded
// inputs (as an ad-hoc SELECT does), its rows cast to the table's columns go to deliver, and the engine upserts
// them all at the end. A query over an unbounded source is refused (a table's rows come by statement, never from
// a job), and so are ORDER BY and LIMIT, and an aggregate without GROUP BY (whose one row over no input the
// dataflow does not produce). When the plan is Updating, what deliver gets is a changelog to fold first.
func PlanTableInsert(env Env, ins *parser.Insert, target *catalog.Object, s Settings, deliver func(exec.Batch) error) (*Physical, error) {
	b := &binder{env: env, cat: env.Catalog(), fns: newFuncScope(env), bounded: true, params: s.Params, tz: s.TimeZone}
	bq, err := b.bindQuery(ins.Query)
	if err != nil {
		return nil, err
	}
	if len(bq.order) > 0 || bq.limit >= 0 || bq.offset > 0 {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, ins.Query.P, "ORDER BY, LIMIT and OFFSET are not supported in INSERT INTO a table ... SELECT")
	}
	if _, global, err := emptyAggregateRow(bq.root, memory.DefaultAllocator); err != nil {
		return nil, err
	} else if global {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, ins.Query.P, "an aggregate without GROUP BY is not supported in INSERT INTO a table ... SELECT")
	}
	root, err := assignTo(bq.root, target, ins, b.tz)
	if err != nil {
		return nil, err
	}
	root = pruneRoot(pushdown(root))
	l := &lowering{env: env, settings: s.norm(), bounded: true, ids: map[string]int{}, allBounded: true}
	top, err := l.lower(root)
	if err != nil {
		return nil, err
	}
	p := l.physical(b)
	if !p.Bounded {
		e := sqlerr.New(sqlerr.FeatureNotSupported, ins.TargetP,
			"INSERT INTO table %q ... SELECT runs once over bounded inputs, and this SELECT reads an unbounded source", target.Name)
		e.Hint = "A table's rows change by statement; keep a continuous query's result as a materialized view."
		return nil, e
	}
	p.Target = target.Name
	p.Columns = root.columns()
	p.Visible = len(p.Columns)
	p.Updating = updatingReason(root) != ""
	p.Limit = -1
	l.add(&PNode{ID: "result", Kind: exec.SinkNode, Parallelism: top.Parallelism, Label: "Result: upserted into table " + target.Name,
		Details: []string{"writes: every row by the key [" + strings.Join(target.PrimaryKey, ", ") + "] once the query ended, as one statement"},
		Client:  true, Inputs: []PEdge{{From: top, Exchange: exec.ForwardExchange()}},
		newSink: func(int) exec.Sink { return operators.NewResultSink(deliver) }})
	p.Nodes = l.nodes
	return p, nil
}
