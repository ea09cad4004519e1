package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/clinksql/clinksql/catalog"
	"github.com/clinksql/clinksql/checkpoint"
	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/exec/expr"
	"github.com/clinksql/clinksql/exec/operators"
	"github.com/clinksql/clinksql/sql/parser"
	"github.com/clinksql/clinksql/sql/planner"
	"github.com/clinksql/clinksql/sql/sqlerr"
)

// Column is a result column.
type Column struct {
	Name string
	Type arrow.DataType
	OID  uint32
}

// Result is what one statement returns: a command tag (as Postgres' CommandComplete carries it) and, for
// statements that return rows, the columns and the rows in Postgres text form (nil is NULL).
type Result struct {
	Tag     string
	Columns []Column
	Rows    [][]*string
	// Notices are warnings for the client (pgwire NoticeResponse), e.g. "relation already exists, skipping".
	Notices []string
}

// Session is one client's connection to the engine: its variables (SET) apply to the jobs it starts afterwards.
// A Session is used by one goroutine at a time.
type Session struct {
	e     *Engine
	vars  vars
	inTxn bool // between BEGIN and COMMIT/ROLLBACK (reported to pgwire clients; every statement commits alone)
	// set holds the INSERTs of an open BEGIN STATEMENT SET (inSet), run as one job at END.
	set   []*parser.Insert
	inSet bool
}

// NewSession starts a session.
func (e *Engine) NewSession() *Session { return &Session{e: e, vars: newVars()} }

// Var returns a session variable's value (pgwire reports some at startup).
func (s *Session) Var(name string) string { return s.vars[name] }

// Execute parses sql (one or more statements) and runs them in order. It returns the results of the statements
// that ran and the first error, whose position (if any) is a byte offset into sql.
func (s *Session) Execute(ctx context.Context, sql string) ([]*Result, error) {
	if r, ok, err := s.introspect(ctx, sql); ok {
		// A client's catalog query (psql's \d, a driver's type lookup), answered from our catalog.
		if err != nil {
			return nil, err
		}
		return []*Result{r}, nil
	}
	stmts, err := parser.Parse(sql)
	if err != nil {
		return nil, sqlerr.As(err)
	}
	var out []*Result
	for _, st := range stmts {
		r, err := s.ExecuteStmt(ctx, st)
		if err != nil {
			return out, err
		}
		out = append(out, r)
	}
	return out, nil
}

// ExecuteStmt runs one parsed statement (of a script the caller parsed, for positions in the whole text). A
// client catalog query is answered as Execute answers it; its error positions are then relative to the
// statement's own text.
func (s *Session) ExecuteStmt(ctx context.Context, st parser.Stmt) (*Result, error) {
	if r, ok, err := s.introspect(ctx, st.SQL()); ok {
		if err != nil {
			start, _ := st.Span()
			return nil, sqlerr.As(err).Shift(start)
		}
		return r, nil
	}
	return s.execute(ctx, st, nil)
}

// execute runs one statement; params holds the values of its $n parameters (nil when it has none).
func (s *Session) execute(ctx context.Context, st parser.Stmt, params *planner.Params) (res *Result, err error) {
	if d := s.vars.statementTimeout(); d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, d, errStatementTimeout)
		defer cancel()
	}
	defer func() {
		if err != nil {
			err = sqlerr.As(err)
			if context.Cause(ctx) == errStatementTimeout {
				// However the wait that ended reported it (FLUSH, a SELECT's dataflow, an INSERT), the timeout did.
				err = sqlerr.New(sqlerr.QueryCanceled, sqlerr.NoPos, "canceling statement due to statement timeout")
			}
		}
	}()
	if s.inSet {
		return s.inStatementSet(ctx, st, params)
	}
	switch st := st.(type) {
	case *parser.CreateStream:
		obj, err := planner.StreamObject(s.e, st)
		if err != nil {
			return nil, err
		}
		created, err := s.e.cat.Create(obj, st.IfNotExists)
		if err != nil {
			return nil, withPos(err, st.NameP)
		}
		return &Result{Tag: "CREATE STREAM", Notices: existsNotice(created, st.Name)}, nil
	case *parser.CreateSink:
		obj, err := planner.SinkObject(s.e, st)
		if err != nil {
			return nil, err
		}
		created, err := s.e.cat.Create(obj, st.IfNotExists)
		if err != nil {
			return nil, withPos(err, st.NameP)
		}
		return &Result{Tag: "CREATE SINK", Notices: existsNotice(created, st.Name)}, nil
	case *parser.CreateView:
		return s.createView(st)
	case *parser.Insert:
		return s.insert(ctx, st, params)
	case *parser.Select:
		return s.query(ctx, st.Query, params)
	case *parser.Flush:
		if err := s.e.flush(ctx); err != nil {
			return nil, err
		}
		return &Result{Tag: "FLUSH"}, nil
	case *parser.Set:
		if err := s.vars.set(st.Name, st.Value, st.Default); err != nil {
			return nil, withPos(err, st.NameP)
		}
		return &Result{Tag: "SET"}, nil
	case *parser.Reset:
		if st.Name == "all" {
			s.vars = newVars()
		} else if err := s.vars.set(st.Name, "", true); err != nil {
			return nil, err
		}
		return &Result{Tag: "RESET"}, nil
	case *parser.Show:
		return s.show(st)
	case *parser.Describe:
		return s.describe(st)
	case *parser.Explain:
		return s.explain(st, params)
	case *parser.Drop:
		return s.drop(st)
	case *parser.DropJob:
		return s.dropJob(st)
	case *parser.Txn:
		if st.StatementSet {
			s.inSet, s.set = true, nil
			return &Result{Tag: "BEGIN"}, nil
		}
		s.inTxn = st.Op == "begin"
		return &Result{Tag: strings.ToUpper(st.Op)}, nil
	}
	return nil, sqlerr.New(sqlerr.FeatureNotSupported, stmtStart(st), "statement %T is not supported", st)
}

// existsNotice is Postgres' notice for CREATE ... IF NOT EXISTS of an existing name.
func existsNotice(created bool, name string) []string {
	if created {
		return nil
	}
	return []string{fmt.Sprintf("relation %q already exists, skipping", name)}
}

func stmtStart(st parser.Stmt) int {
	start, _ := st.Span()
	return start
}

func withPos(err error, pos int) error {
	var e *sqlerr.Error
	if errors.As(err, &e) {
		return e.WithPos(pos)
	}
	return err
}

func (s *Session) settings() (jobSettings, map[string]string, error) {
	m := s.vars.jobSettings()
	js, err := settingsFrom(m)
	return js, m, err
}

// createView creates a view (a stored query) or a materialized view (a stored query and the job maintaining it).
func (s *Session) createView(st *parser.CreateView) (*Result, error) {
	info, err := planner.BindView(s.e, st.Query, st.Columns, st.Materialized)
	if err != nil {
		return nil, err
	}
	reads := append(append([]string{}, info.Reads...), info.Views...)
	queryText := parser.Format(st.Query)
	if !st.Materialized {
		obj := &catalog.Object{Kind: catalog.View, Name: st.Name, Columns: info.Columns, Query: queryText, Reads: reads}
		if st.OrReplace {
			if old, ok := s.e.cat.Get(st.Name); ok && old.Kind != catalog.View {
				return nil, sqlerr.New(sqlerr.WrongObjectType, st.NameP, "%q is not a view", st.Name)
			}
			if err := s.e.cat.Replace(obj); err != nil {
				return nil, err
			}
		} else if _, err := s.e.cat.Create(obj, st.IfNotExists); err != nil {
			return nil, withPos(err, st.NameP)
		}
		return &Result{Tag: "CREATE VIEW"}, nil
	}
	if st.OrReplace {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, st.NameP, "CREATE OR REPLACE MATERIALIZED VIEW is not supported; drop it first")
	}
	if old, ok := s.e.cat.Get(st.Name); ok {
		if st.IfNotExists {
			return &Result{Tag: "CREATE MATERIALIZED VIEW"}, nil
		}
		return nil, sqlerr.New(sqlerr.DuplicateTable, st.NameP, "%s %q already exists", strings.ToLower(string(old.Kind)), st.Name)
	}
	js, m, err := s.settings()
	if err != nil {
		return nil, err
	}
	obj := &catalog.Object{Kind: catalog.MaterializedView, Name: st.Name, Columns: info.Columns, Query: queryText,
		Reads: reads}
	// A log left by an earlier view of the same name would be read as this one's.
	s.e.dropStorage(obj)
	p, err := planner.PlanMaterializedView(s.e, st.Query, obj, js.planner())
	if err != nil {
		return nil, err
	}
	// The id only once the plan is good: ids count the jobs that exist.
	id, err := s.e.cat.NewJobID()
	if err != nil {
		return nil, err
	}
	obj.Job = id
	if _, err := s.e.cat.Create(obj, false); err != nil {
		return nil, withPos(err, st.NameP)
	}
	spec := &catalog.JobSpec{ID: id, Statement: canonicalCreateMV(st.Name, st.Columns, queryText), Target: st.Name,
		Reads: info.Reads, Settings: m}
	return s.launch("CREATE MATERIALIZED VIEW", spec, p)
}

// launch records a new job and starts it; the result carries its id and the plan's notices.
func (s *Session) launch(tag string, spec *catalog.JobSpec, p *planner.Physical) (*Result, error) {
	if err := s.e.cat.AddJob(spec); err != nil {
		return nil, err
	}
	if err := s.e.startJob(spec, p); err != nil {
		return nil, err
	}
	res := jobResult(tag, spec.ID)
	res.Notices = p.Notices
	return res, nil
}

func canonicalCreateMV(name string, cols []string, query string) string {
	var sb strings.Builder
	sb.WriteString("CREATE MATERIALIZED VIEW ")
	sb.WriteString(parser.FormatName(name))
	if len(cols) > 0 {
		q := make([]string, len(cols))
		for i, c := range cols {
			q[i] = parser.FormatName(c)
		}
		sb.WriteString(" (" + strings.Join(q, ", ") + ")")
	}
	sb.WriteString(" AS ")
	sb.WriteString(query)
	return sb.String()
}

func jobResult(tag, id string) *Result {
	return &Result{Tag: tag, Columns: []Column{textColumn("job_id")}, Rows: [][]*string{{&id}}}
}

func textColumn(name string) Column {
	return Column{Name: name, Type: arrow.BinaryTypes.String, OID: catalog.OIDText}
}

// insert appends VALUES to an internal stream at once (durably), or starts a job.
func (s *Session) insert(ctx context.Context, st *parser.Insert, params *planner.Params) (*Result, error) {
	js, m, err := s.settings()
	if err != nil {
		return nil, err
	}
	ps := js.planner()
	ps.Params = params
	target, ok := s.e.cat.Get(st.Target)
	if ok && target.Kind == catalog.Stream && target.Connector() == "" {
		rec, isValues, err := planner.ValuesFor(s.e, st, target, ps, s.e.cfg.Alloc)
		if err != nil {
			return nil, err
		}
		if isValues {
			defer rec.Release()
			l, err := s.e.Log(target)
			if err != nil {
				return nil, err
			}
			if err := l.Append(exec.Batch{Rec: rec}); err != nil {
				return nil, sqlerr.Wrap(sqlerr.IOError, err)
			}
			return &Result{Tag: fmt.Sprintf("INSERT 0 %d", rec.NumRows())}, nil
		}
	}
	if params != nil && len(params.Given) > 0 {
		// A job re-plans its statement at every open, where the values are gone.
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, stmtStart(st), "INSERT ... SELECT that starts a job cannot take $n parameters")
	}
	p, err := planner.PlanInsert(s.e, st, ps)
	if err != nil {
		return nil, err
	}
	id, err := s.e.cat.NewJobID()
	if err != nil {
		return nil, err
	}
	spec := &catalog.JobSpec{ID: id, Statement: parser.Format(st), Target: p.Target, Reads: p.Reads, Settings: m}
	return s.launch("INSERT 0 0", spec, p)
}

// inStatementSet runs a statement between BEGIN STATEMENT SET and END: an INSERT ... SELECT joins the set (planned
// with the others, so a bad one is refused at once), END starts the set as one job, ROLLBACK discards it.
func (s *Session) inStatementSet(ctx context.Context, st parser.Stmt, params *planner.Params) (*Result, error) {
	switch st := st.(type) {
	case *parser.Insert:
		if params != nil && len(params.Given) > 0 {
			return nil, sqlerr.New(sqlerr.FeatureNotSupported, stmtStart(st), "INSERT ... SELECT that starts a job cannot take $n parameters")
		}
		if target, ok := s.e.cat.Get(st.Target); ok && target.Kind == catalog.Stream && target.Connector() == "" {
			if _, isValues := st.Query.Body.(*parser.Values); isValues {
				return nil, sqlerr.New(sqlerr.FeatureNotSupported, stmtStart(st),
					"INSERT ... VALUES into a stream runs at once; it cannot be part of a statement set")
			}
		}
		js, _, err := s.settings()
		if err != nil {
			return nil, err
		}
		if _, err := planner.PlanStatementSet(s.e, append(slices.Clip(s.set), st), js.planner()); err != nil {
			return nil, err
		}
		s.set = append(s.set, st)
		return &Result{Tag: "INSERT 0 0", Notices: []string{fmt.Sprintf("added to the statement set (%d INSERTs); END starts them as one job", len(s.set))}}, nil
	case *parser.Txn:
		switch {
		case st.Op == "rollback":
			s.inSet, s.set = false, nil
			return &Result{Tag: "ROLLBACK"}, nil
		case st.Op == "commit":
			set := s.set
			s.inSet, s.set = false, nil
			if len(set) == 0 {
				return &Result{Tag: "COMMIT", Notices: []string{"the statement set is empty: no job started"}}, nil
			}
			return s.startStatementSet(set)
		}
	}
	return nil, sqlerr.New(sqlerr.FeatureNotSupported, stmtStart(st),
		"inside BEGIN STATEMENT SET only INSERT INTO ... SELECT is allowed; END starts the set as one job, ROLLBACK discards it")
}

// startStatementSet starts the INSERTs of a statement set as one job: one dataflow, one checkpoint, a sink each.
func (s *Session) startStatementSet(set []*parser.Insert) (*Result, error) {
	js, m, err := s.settings()
	if err != nil {
		return nil, err
	}
	p, err := planner.PlanStatementSet(s.e, set, js.planner())
	if err != nil {
		return nil, err
	}
	id, err := s.e.cat.NewJobID()
	if err != nil {
		return nil, err
	}
	parts := []string{"BEGIN STATEMENT SET"}
	for _, ins := range set {
		parts = append(parts, parser.Format(ins))
	}
	parts = append(parts, "END")
	spec := &catalog.JobSpec{ID: id, Statement: strings.Join(parts, ";\n"), Target: p.Target, Targets: p.Targets,
		Reads: p.Reads, Settings: m}
	return s.launch("INSERT 0 0", spec, p)
}

// errStatementTimeout is the cause of a statement's context when statement_timeout ended it.
var errStatementTimeout = errors.New("statement timeout")

// errLimit stops a SELECT's dataflow once LIMIT rows arrived.
var errLimit = errors.New("limit reached")

// query runs an ad-hoc SELECT to completion (or to its LIMIT) and returns its rows.
func (s *Session) query(ctx context.Context, q *parser.Query, params *planner.Params) (*Result, error) {
	js, _, err := s.settings()
	if err != nil {
		return nil, err
	}
	ps := js.planner()
	ps.Params = params
	ps.Errors = expr.ErrorsFail // a bad value fails an ad-hoc SELECT (SQLSTATE 22xxx)
	col := &collector{}
	p, err := planner.PlanSelect(s.e, q, ps, col.add)
	if err != nil {
		return nil, err
	}
	col.order, col.limit, col.offset, col.updating = p.Order, p.Limit, p.Offset, p.Updating
	if err := s.e.runSelect(ctx, p); err != nil && !col.full() {
		return nil, err
	}
	rows := col.result()
	if len(rows) == 0 && len(col.rows) == col.dead && p.EmptyResult != nil && p.Offset == 0 && p.Limit != 0 {
		for _, r := range p.EmptyResult {
			rows = append(rows, collectedRow{text: r})
		}
	}
	res := &Result{Tag: "SELECT " + strconv.Itoa(len(rows))}
	for _, c := range p.Columns[:p.Visible] {
		res.Columns = append(res.Columns, Column{Name: c.Name, Type: c.Type, OID: catalog.OID(c.Type)})
	}
	for _, r := range rows {
		res.Rows = append(res.Rows, r.text[:p.Visible])
	}
	return res, nil
}

// runSelect runs a SELECT's dataflow in a scratch directory with no periodic checkpoints and no restarts.
func (e *Engine) runSelect(ctx context.Context, p *planner.Physical) error {
	g, err := p.Graph()
	if err != nil {
		return err
	}
	dir := e.newSelectDir()
	defer os.RemoveAll(dir)
	job, err := exec.NewJob(g, exec.JobConfig{Name: "select", Dir: dir, Alloc: e.cfg.Alloc, Logger: e.log,
		RestartBudget: -1, CheckpointMode: checkpoint.Aligned})
	if err != nil {
		return err
	}
	jctx, cancel := context.WithCancel(ctx)
	defer cancel()
	job.Start(jctx)
	if err := job.Wait(ctx); err != nil {
		job.Cancel()
		st := job.Status()
		if st.Err != nil {
			var se *sqlerr.Error
			if errors.As(st.Err, &se) {
				return se
			}
			return sqlerr.New(sqlerr.InternalError, sqlerr.NoPos, "%v", st.Err)
		}
		if ctx.Err() != nil {
			return sqlerr.New(sqlerr.QueryCanceled, sqlerr.NoPos, "canceling statement due to user request")
		}
		return err
	}
	return nil
}

// collector gathers a SELECT's rows in text form and stops the dataflow at LIMIT when there is no ORDER BY. When
// the plan is updating (an outer join, a GROUP BY over a changelog) its rows are a changelog: a retraction removes
// one equal row collected before, and LIMIT waits for the end, since any row may still be retracted.
type collector struct {
	mu       sync.Mutex
	rows     []collectedRow
	order    []planner.OrderKey
	limit    int64
	offset   int64
	updating bool
	live     map[string][]int // updating: the indexes in rows of the live rows, by TextRowKey
	dead     int
}

type collectedRow struct {
	text []*string
	key  []sortValue
	dead bool
}

func (c *collector) full() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.updating && c.limit >= 0 && len(c.order) == 0 && int64(len(c.rows)) >= c.limit+c.offset
}

func (c *collector) add(b exec.Batch) error {
	defer b.Release()
	if !c.updating {
		for i := range b.Kinds {
			if b.Kind(i) != exec.Insert {
				return sqlerr.New(sqlerr.InternalError, sqlerr.NoPos, "an ad-hoc SELECT produced a %s row", b.Kind(i))
			}
		}
	}
	text, err := operators.TextRows(b.Rec)
	if err != nil {
		return err
	}
	var keys [][]sortValue
	if len(c.order) > 0 {
		keys = sortValues(b.Rec, c.order)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, row := range text {
		if c.updating {
			k := operators.TextRowKey(row)
			if kind := b.Kind(i); kind == exec.UpdateBefore || kind == exec.Delete {
				at := c.live[k]
				if len(at) == 0 {
					return sqlerr.New(sqlerr.InternalError, sqlerr.NoPos, "an ad-hoc SELECT retracted a row it never produced")
				}
				c.rows[at[len(at)-1]].dead = true
				c.live[k] = at[:len(at)-1]
				c.dead++
				continue
			}
			if c.live == nil {
				c.live = map[string][]int{}
			}
			c.live[k] = append(c.live[k], len(c.rows))
		}
		r := collectedRow{text: row}
		if keys != nil {
			r.key = keys[i]
		}
		c.rows = append(c.rows, r)
	}
	if !c.updating && c.limit >= 0 && len(c.order) == 0 && int64(len(c.rows)) >= c.limit+c.offset {
		return errLimit
	}
	return nil
}

// result returns the live rows, sorted, after OFFSET and LIMIT.
func (c *collector) result() []collectedRow {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.rows
	if c.dead > 0 {
		out = nil
		for _, r := range c.rows {
			if !r.dead {
				out = append(out, r)
			}
		}
	}
	if len(c.order) > 0 {
		sortRows(out, c.order)
	}
	if c.offset > 0 {
		if int64(len(out)) <= c.offset {
			out = nil
		} else {
			out = out[c.offset:]
		}
	}
	if c.limit >= 0 && int64(len(out)) > c.limit {
		out = out[:c.limit]
	}
	return out
}
