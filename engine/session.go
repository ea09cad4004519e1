package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/clinksql/clinksql/catalog"
	"github.com/clinksql/clinksql/checkpoint"
	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/exec/expr"
	"github.com/clinksql/clinksql/exec/textform"
	"github.com/clinksql/clinksql/sql/parser"
	"github.com/clinksql/clinksql/sql/planner"
	"github.com/clinksql/clinksql/sqlerr"
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
	// Streamed is set when the rows went to a RowWriter as they were produced: Rows is then empty.
	Streamed bool
}

// RowWriter receives the rows of a SELECT as its dataflow produces them (Run, RunStmt, RunPrepared), so a client
// sees the first rows at once and the engine keeps no more than a batch: Columns once, before any row, then Rows
// batch by batch. Calls come from the dataflow's goroutines, one at a time, while the statement runs; an error
// from either ends the statement with that error. A SELECT whose result is final only at its end (ORDER BY, an
// updating result) does not stream: its Result carries the rows.
type RowWriter interface {
	Columns(cols []Column) error
	Rows(rows [][]*string) error
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
	// notice receives the notices given while a statement runs (SetNoticeHandler), nil for none.
	notice func(string)
	// cursors are the DECLAREd cursors, closed with the transaction (subscribe.go).
	cursors map[string]*cursor
}

// NewSession starts a session.
func (e *Engine) NewSession() *Session { return &Session{e: e, vars: newVars()} }

// Var returns a session variable's value (pgwire reports some at startup).
func (s *Session) Var(name string) string { return s.vars[name] }

// Execute parses sql (one or more statements) and runs them in order. It returns the results of the statements
// that ran and the first error, whose position (if any) is a byte offset into sql.
func (s *Session) Execute(ctx context.Context, sql string) ([]*Result, error) {
	var out []*Result
	err := s.Run(ctx, sql, nil, func(r *Result) { out = append(out, r) })
	return out, err
}

// Run is Execute with the rows of SELECTs streamed to w (nil: kept in their Results): it parses sql and runs the
// statements in order, handing each one's Result to done as it ends, and returns the first error.
func (s *Session) Run(ctx context.Context, sql string, w RowWriter, done func(*Result)) error {
	if err := s.checkStatementSize(sql); err != nil {
		return err
	}
	if r, ok, err := s.introspect(ctx, sql); ok {
		// A client's catalog query (psql's \d, a driver's type lookup), answered from our catalog.
		if err != nil {
			return err
		}
		done(r)
		return nil
	}
	if len(sql) > largeStatement {
		// Parsing and binding it took many times its size: give that back to the system once it ran, rather
		// than keep it in the heap while the server idles.
		defer debug.FreeOSMemory()
	}
	if len(sql) > largeStatement {
		if r, ok, err := s.insertInPieces(ctx, sql); ok {
			if err != nil {
				return err
			}
			done(r)
			return nil
		}
	}
	stmts, err := parser.Parse(sql)
	if err != nil {
		return sqlerr.As(err)
	}
	for _, st := range stmts {
		r, err := s.RunStmt(ctx, st, w)
		if err != nil {
			return err
		}
		done(r)
	}
	return nil
}

// ExecuteStmt runs one parsed statement (of a script the caller parsed, for positions in the whole text). A
// client catalog query is answered as Execute answers it; its error positions are then relative to the
// statement's own text.
func (s *Session) ExecuteStmt(ctx context.Context, st parser.Stmt) (*Result, error) {
	return s.RunStmt(ctx, st, nil)
}

// RunStmt is ExecuteStmt with a SELECT's rows streamed to w (nil: kept in the Result).
func (s *Session) RunStmt(ctx context.Context, st parser.Stmt, w RowWriter) (*Result, error) {
	if r, ok, err := s.introspect(ctx, st.SQL()); ok {
		if err != nil {
			start, _ := st.Span()
			return nil, sqlerr.As(err).Shift(start)
		}
		return r, nil
	}
	return s.execute(ctx, st, nil, w)
}

// execute runs one statement; params holds the values of its $n parameters (nil when it has none).
// A SELECT's rows go to w as they are produced (nil: into the Result).
func (s *Session) execute(ctx context.Context, st parser.Stmt, params *planner.Params, w RowWriter) (res *Result, err error) {
	ctx, cancel := s.statementContext(ctx)
	defer cancel()
	defer func() { err = statementErr(ctx, err) }()
	if s.inSet {
		return s.inStatementSet(ctx, st, params)
	}
	switch st := st.(type) {
	case *parser.CreateStream:
		obj, err := planner.StreamObject(s.e, st)
		if err != nil {
			return nil, err
		}
		if _, ok := s.e.cat.Get(obj.Name); !ok && obj.Connector() == "" {
			if err := s.e.createLog(obj); err != nil {
				return nil, err
			}
		}
		created, err := s.e.cat.Create(obj, st.IfNotExists)
		if !created {
			s.e.dropStorage(obj) // the log made above, if any, belongs to no object
		}
		if err != nil {
			return nil, withPos(err, st.NameP)
		}
		tag := "CREATE STREAM"
		if obj.IsTable() {
			tag = "CREATE TABLE"
		}
		return &Result{Tag: tag, Notices: existsNotice(created, st.Name)}, nil
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
	case *parser.CreateFunction:
		return s.createFunction(st)
	case *parser.Insert:
		return s.insert(ctx, st, params)
	case *parser.Update, *parser.Delete:
		return s.changeTable(ctx, st, params) // table.go
	case *parser.Select:
		return s.query(ctx, st.Query, params, w)
	case *parser.Flush:
		if err := s.e.flush(ctx, s.notice); err != nil {
			return nil, err
		}
		return &Result{Tag: "FLUSH"}, nil
	case *parser.Set:
		if st.Name == TestingClockSetting {
			if err := s.e.setTestingClock(st.Value, st.Default); err != nil {
				return nil, withPos(err, st.NameP)
			}
			return &Result{Tag: "SET"}, nil
		}
		if err := s.vars.set(st.Name, st.Value, st.Default); err != nil {
			return nil, withPos(err, st.NameP)
		}
		return &Result{Tag: "SET"}, nil
	case *parser.Reset:
		if st.Name == TestingClockSetting {
			if err := s.e.setTestingClock("", true); err != nil {
				return nil, err
			}
		} else if st.Name == "all" {
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
		return s.drop(ctx, st)
	case *parser.DropJob:
		return s.dropJob(ctx, st)
	case *parser.AlterJob:
		return s.alterJob(st)
	case *parser.Subscribe, *parser.Declare, *parser.Fetch, *parser.CloseCursor, *parser.Copy:
		return s.subscribeStmt(ctx, st, params, w)
	case *parser.Txn:
		if st.StatementSet {
			s.inSet, s.set = true, nil
			return &Result{Tag: "BEGIN"}, nil
		}
		if st.Op != "begin" {
			s.closeCursors() // a cursor ends with its transaction
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
		obj := &catalog.Object{Kind: catalog.View, Name: st.Name, Columns: info.Columns, Query: queryText, Reads: reads,
			Functions: info.Functions}
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
		Reads: reads, Functions: info.Functions}
	// A storage name of its own: a log left by an earlier view of the same name is never read as this one's.
	if err := s.e.createLog(obj); err != nil {
		return nil, err
	}
	p, err := planner.PlanMaterializedView(s.e, st.Query, obj, js.planner())
	if err != nil {
		s.e.dropStorage(obj)
		return nil, err
	}
	s.e.deployMu.Lock()
	defer s.e.deployMu.Unlock()
	if err := s.e.checkSingleReaders(info.Reads, "CREATE MATERIALIZED VIEW"); err != nil {
		s.e.dropStorage(obj)
		return nil, err
	}
	// The id only once the plan is good: ids count the jobs that exist.
	id, err := s.e.cat.NewJobID()
	if err != nil {
		s.e.dropStorage(obj)
		return nil, err
	}
	obj.Job = id
	if _, err := s.e.cat.Create(obj, false); err != nil {
		s.e.dropStorage(obj)
		return nil, withPos(err, st.NameP)
	}
	spec := &catalog.JobSpec{ID: id, Statement: canonicalCreateMV(st.Name, st.Columns, queryText), Target: st.Name,
		Reads: info.Reads, Functions: p.Functions, Settings: m}
	return s.launch("CREATE MATERIALIZED VIEW", spec, p)
}

// launch records a new job and starts it. The result is the statement's command tag, as Postgres clients expect,
// with the job's id in a notice ("started job job-3") before the plan's own notices.
func (s *Session) launch(tag string, spec *catalog.JobSpec, p *planner.Physical) (*Result, error) {
	spec.PlanDigest = planDigest(p)
	if err := s.e.cat.AddJob(spec); err != nil {
		return nil, err
	}
	if err := s.e.startJob(spec, p); err != nil {
		return nil, err
	}
	return &Result{Tag: tag, Notices: append([]string{startedJobNotice + spec.ID}, p.Notices...)}, nil
}

// startedJobNotice starts the notice of a statement that started a job; the job's id follows.
const startedJobNotice = "started job "

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
		recs, isValues, err := planner.ValuesFor(ctx, s.e, st, target, ps, s.e.cfg.Alloc)
		if err != nil {
			return nil, err
		}
		if isValues {
			return s.appendValues(target, recs, st.Query.P)
		}
		if target.IsTable() {
			return s.insertSelect(ctx, st, target, ps) // table.go
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
	s.e.deployMu.Lock()
	defer s.e.deployMu.Unlock()
	if err := s.e.checkSingleReaders(p.Reads, "INSERT ... SELECT"); err != nil {
		return nil, err
	}
	id, err := s.e.cat.NewJobID()
	if err != nil {
		return nil, err
	}
	spec := &catalog.JobSpec{ID: id, Statement: parser.Format(st), Target: p.Target, Reads: p.Reads, Views: p.Views,
		Functions: p.Functions, Settings: m}
	return s.launch("INSERT 0 0", spec, p)
}

// appendValues appends the batches of one INSERT ... VALUES to the internal stream target as one segment, so the
// INSERT is appended whole or not at all, and releases them.
func (s *Session) appendValues(target *catalog.Object, recs []arrow.RecordBatch, pos int) (*Result, error) {
	if target.IsTable() {
		return s.upsertValues(target, recs, pos) // table.go
	}
	batches := make([]exec.Batch, len(recs))
	n := int64(0)
	for i, rec := range recs {
		defer rec.Release()
		batches[i] = exec.Batch{Rec: rec}
		n += rec.NumRows()
	}
	l, err := s.e.Log(target)
	if err != nil {
		return nil, err
	}
	if err := l.Append(batches...); err != nil {
		return nil, sqlerr.Wrap(sqlerr.IOError, err)
	}
	return &Result{Tag: fmt.Sprintf("INSERT 0 %d", n)}, nil
}

// insertInPieces runs a large INSERT INTO <internal stream> VALUES piece by piece (parser.InsertValuesPieces):
// each piece of planner.ValuesBatchRows tuples is parsed and bound alone, so memory holds the batches built so
// far and the syntax of one piece, not the tokens and tree of the whole statement (some 60 times its text). The
// batches are appended as one segment at the end, as insert appends them. ok is false when sql is not such a
// statement, or its target is not an internal stream: Run then runs it whole.
func (s *Session) insertInPieces(ctx context.Context, sql string) (res *Result, ok bool, err error) {
	head, pieces, ok := parser.InsertValuesPieces(sql, planner.ValuesBatchRows)
	if !ok || s.inSet {
		return nil, false, nil
	}
	ctx, cancel := s.statementContext(ctx)
	defer cancel()
	js, _, err := s.settings()
	if err != nil {
		return nil, true, statementErr(ctx, err)
	}
	ps := js.planner()
	var recs []arrow.RecordBatch
	release := func() {
		for _, r := range recs {
			r.Release()
		}
	}
	var target *catalog.Object
	width := 0 // of the first piece's rows
	for i, p := range pieces {
		// The piece's text is the statement's head and its tuples; an error's position maps back to sql.
		inSQL := func(err error) error {
			e := sqlerr.As(err)
			if e.Pos != sqlerr.NoPos && e.Pos > head {
				e = e.Shift(p[0] - head - 1)
			}
			return statementErr(ctx, e)
		}
		stmts, err := parser.Parse(sql[:head] + " " + sql[p[0]:p[1]])
		if err != nil {
			release()
			return nil, true, inSQL(err)
		}
		// InsertValuesPieces checked the shape, so this is not expected; if it happens, nothing was appended
		// yet and Run parses the statement whole.
		ins, isInsert := stmts[0].(*parser.Insert)
		v, isValues := (*parser.Values)(nil), false
		if isInsert {
			v, isValues = ins.Query.Body.(*parser.Values)
		}
		if !isValues || len(v.Rows) == 0 {
			release()
			return nil, false, nil
		}
		if i == 0 {
			t, found := s.e.cat.Get(ins.Target)
			if !found || t.Kind != catalog.Stream || t.Connector() != "" {
				return nil, false, nil
			}
			target, width = t, len(v.Rows[0])
		} else if len(v.Rows[0]) != width {
			// ValuesFor checks the rows of one piece against each other; the pieces against each other, here.
			release()
			// At the piece's first row, in the statement's text, as a whole parse points at the row.
			return nil, true, statementErr(ctx, sqlerr.New(sqlerr.SyntaxError, p[0], "VALUES lists must all be the same length"))
		}
		rs, _, err := planner.ValuesFor(ctx, s.e, ins, target, ps, s.e.cfg.Alloc)
		if err != nil {
			release()
			return nil, true, inSQL(err)
		}
		recs = append(recs, rs...)
	}
	res, err = s.appendValues(target, recs, head)
	return res, true, statementErr(ctx, err)
}

// statementContext is ctx under the session's statement_timeout.
func (s *Session) statementContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if d := s.vars.statementTimeout(); d > 0 {
		return context.WithTimeoutCause(ctx, d, errStatementTimeout)
	}
	return ctx, func() {}
}

// statementErr is a statement's error as its client sees it: a *sqlerr.Error, and 57014 when statement_timeout
// ended the statement, however the wait that ended reported it (FLUSH, a SELECT's dataflow, an INSERT).
func statementErr(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if context.Cause(ctx) == errStatementTimeout {
		return sqlerr.New(sqlerr.QueryCanceled, sqlerr.NoPos, "canceling statement due to statement timeout")
	}
	return sqlerr.As(err)
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
	s.e.deployMu.Lock()
	defer s.e.deployMu.Unlock()
	if err := s.e.checkSingleReaders(p.Reads, "the statement set"); err != nil {
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
		Reads: p.Reads, Views: p.Views, Functions: p.Functions, Settings: m}
	return s.launch("COMMIT", spec, p) // END's tag in Postgres
}

// largeStatement is the size of statement text past which Run parses a lone INSERT ... VALUES in pieces
// (insertInPieces) and returns the memory a statement took to the system.
const largeStatement = 1 << 20

// errStatementTimeout is the cause of a statement's context when statement_timeout ended it.
var errStatementTimeout = errors.New("statement timeout")

// errLimit stops a SELECT's dataflow once LIMIT rows arrived.
var errLimit = errors.New("limit reached")

// query runs an ad-hoc SELECT to completion (or to its LIMIT). With a RowWriter and a result that is final row
// by row (no ORDER BY, not updating) the rows go to w batch by batch as the dataflow produces them, after OFFSET
// and up to LIMIT, and the Result carries none; otherwise they are gathered (at most max_result_memory of them)
// and returned in the Result.
func (s *Session) query(ctx context.Context, q *parser.Query, params *planner.Params, w RowWriter) (*Result, error) {
	js, _, err := s.settings()
	if err != nil {
		return nil, err
	}
	ps := js.planner()
	ps.Params = params
	ps.Errors = expr.ErrorsFail // a bad value fails an ad-hoc SELECT (SQLSTATE 22xxx)
	col := &collector{maxBytes: s.vars.limit("max_result_memory"), zone: s.vars.zone()}
	p, err := planner.PlanSelect(s.e, q, ps, col.add)
	if err != nil {
		return nil, err
	}
	col.order, col.limit, col.offset, col.updating, col.visible = p.Order, p.Limit, p.Offset, p.Updating, p.Visible
	res := &Result{}
	for _, c := range p.Columns[:p.Visible] {
		res.Columns = append(res.Columns, Column{Name: c.Name, Type: c.Type, OID: catalog.OID(c.Type)})
	}
	if w != nil && !p.Updating && len(p.Order) == 0 {
		col.w, col.cols, res.Streamed = w, res.Columns, true
	}
	if err := s.e.runSelect(ctx, p); err != nil && !col.full() {
		return nil, err
	}
	if col.w != nil {
		var rows [][]*string
		if col.sent == 0 && p.EmptyResult != nil && p.Offset == 0 && p.Limit != 0 {
			rows = p.EmptyResult
		}
		if err := col.stream(rows); err != nil && err != errLimit {
			return nil, err
		}
		res.Tag = "SELECT " + strconv.FormatInt(col.sent, 10)
		return res, nil
	}
	rows := col.result()
	if len(rows) == 0 && len(col.rows) == col.dead && p.EmptyResult != nil && p.Offset == 0 && p.Limit != 0 {
		for _, r := range p.EmptyResult {
			rows = append(rows, collectedRow{text: r})
		}
	}
	res.Tag = "SELECT " + strconv.Itoa(len(rows))
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
	job, err := exec.NewJob(g, exec.JobConfig{Name: "select", Dir: dir, Alloc: e.cfg.Alloc, Logger: e.selectLog,
		RestartBudget: -1, CheckpointMode: checkpoint.Aligned, Clock: &e.clock})
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
			return sqlerr.As(st.Err) // its own SQLSTATE (22xxx, XX001 for a damaged file, 53100 for a full disk), else XX000
		}
		if ctx.Err() != nil {
			return sqlerr.New(sqlerr.QueryCanceled, sqlerr.NoPos, "canceling statement due to user request")
		}
		return err
	}
	return nil
}

// collector takes a SELECT's rows in text form from its dataflow's result sinks (one call at a time). Streaming
// (w set), it skips OFFSET rows, hands the rest to w and stops the dataflow at LIMIT. Gathering, it keeps the rows,
// at most maxBytes of them, and stops the dataflow at LIMIT when there is no ORDER BY. When the plan is updating
// (an outer join, a GROUP BY over a changelog) its rows are a changelog: a retraction removes one equal row
// collected before, and LIMIT waits for the end, since any row may still be retracted.
type collector struct {
	mu       sync.Mutex
	rows     []collectedRow
	order    []planner.OrderKey
	limit    int64
	offset   int64
	updating bool
	visible  int
	live     map[string][]int // updating: the indexes in rows of the live rows, by textform.RowKey
	dead     int              // rows retracted (still in rows until compacted)
	bytes    int64            // the estimated size of the live rows
	maxBytes int64            // 0: no limit
	zone     *time.Location   // the session's: TIMESTAMP WITH TIME ZONE values print in it

	w       RowWriter
	cols    []Column // announced to w with the first rows, or at the end
	started bool
	skipped int64 // OFFSET rows dropped (streaming)
	sent    int64 // rows handed to w
}

type collectedRow struct {
	text  []*string
	key   []sortValue
	dead  bool
	bytes int64
}

func (c *collector) full() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.w != nil {
		return c.limit >= 0 && c.sent >= c.limit
	}
	return !c.updating && c.limit >= 0 && len(c.order) == 0 && int64(len(c.rows)) >= c.limit+c.offset
}

// rowBytes estimates what a row in text form keeps alive: its strings, their headers and the slice.
func rowBytes(row []*string) int64 {
	n := int64(24 + 8*len(row))
	for _, v := range row {
		if v != nil {
			n += 16 + int64(len(*v))
		}
	}
	return n
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
	text, err := textform.RowsIn(b.Rec, c.zone)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.w != nil {
		return c.stream(text)
	}
	var keys [][]sortValue
	if len(c.order) > 0 {
		keys = sortValues(b.Rec, c.order)
	}
	for i, row := range text {
		if c.updating {
			k := textform.RowKey(row)
			if kind := b.Kind(i); kind == exec.UpdateBefore || kind == exec.Delete {
				at := c.live[k]
				if len(at) == 0 {
					return sqlerr.New(sqlerr.InternalError, sqlerr.NoPos, "an ad-hoc SELECT retracted a row it never produced")
				}
				r := &c.rows[at[len(at)-1]]
				r.dead, r.text, r.key = true, nil, nil
				c.bytes -= r.bytes
				c.live[k] = at[:len(at)-1]
				c.dead++
				continue
			}
			if c.live == nil {
				c.live = map[string][]int{}
			}
			c.live[k] = append(c.live[k], len(c.rows))
		}
		r := collectedRow{text: row, bytes: rowBytes(row)}
		if keys != nil {
			r.key = keys[i]
		}
		c.rows = append(c.rows, r)
		c.bytes += r.bytes
	}
	if keep := c.limit + c.offset; !c.updating && len(c.order) > 0 && c.limit >= 0 && int64(len(c.rows)) > 2*keep {
		// ORDER BY ... LIMIT: only the first limit+offset rows in order can be in the result (the sort is stable,
		// so ties keep their arrival order as a sort of everything would).
		sortRows(c.rows, c.order)
		clear(c.rows[keep:])
		c.rows, c.bytes = c.rows[:keep], 0
		for _, r := range c.rows {
			c.bytes += r.bytes
		}
	}
	if c.maxBytes > 0 && c.bytes > c.maxBytes {
		e := sqlerr.New(sqlerr.OutOfMemory, sqlerr.NoPos, "the result of this SELECT needs more than max_result_memory (%s) to be kept until it is complete", formatBytes(c.maxBytes))
		e.Detail = "A SELECT with ORDER BY, or whose result is updating (an outer join, a GROUP BY over a changelog), holds its rows until the end."
		e.Hint = "Add a LIMIT or a WHERE, raise max_result_memory, or keep the query running as a materialized view."
		return e
	}
	if c.dead > 1024 && c.dead > len(c.rows)/2 {
		c.compact()
	}
	if !c.updating && c.limit >= 0 && len(c.order) == 0 && int64(len(c.rows)) >= c.limit+c.offset {
		return errLimit
	}
	return nil
}

// stream hands rows to the writer after OFFSET, up to LIMIT (c.mu held, or the dataflow ended). The columns go
// first, with the first batch or once the result is complete: a SELECT that fails before it produced anything
// announces none.
func (c *collector) stream(text [][]*string) error {
	if !c.started {
		c.started = true
		if err := c.w.Columns(c.cols); err != nil {
			return err
		}
	}
	if c.offset > c.skipped {
		n := min(int64(len(text)), c.offset-c.skipped)
		c.skipped += n
		text = text[n:]
	}
	if c.limit >= 0 && int64(len(text)) > c.limit-c.sent {
		text = text[:c.limit-c.sent]
	}
	if len(text) > 0 {
		for i, row := range text {
			text[i] = row[:c.visible]
		}
		if err := c.w.Rows(text); err != nil {
			return err
		}
		c.sent += int64(len(text))
	}
	if c.limit >= 0 && c.sent >= c.limit {
		return errLimit
	}
	return nil
}

// compact drops retracted rows, so an updating result that churns keeps only its live rows (c.mu held).
func (c *collector) compact() {
	kept := c.rows[:0]
	for _, r := range c.rows {
		if !r.dead {
			kept = append(kept, r)
		}
	}
	clear(c.rows[len(kept):])
	c.rows, c.dead = kept, 0
	clear(c.live)
	for i, r := range c.rows {
		k := textform.RowKey(r.text)
		c.live[k] = append(c.live[k], i)
	}
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

// checkStatementSize refuses a statement text longer than max_statement_size before anything parses it.
func (s *Session) checkStatementSize(sql string) error {
	if limit := s.vars.limit("max_statement_size"); int64(len(sql)) > limit {
		e := sqlerr.New(sqlerr.ProgramLimitExceeded, sqlerr.NoPos, "statement of %d bytes exceeds max_statement_size (%s)", len(sql), formatBytes(limit))
		e.Hint = "Split it into smaller statements (an INSERT into several INSERTs), or raise max_statement_size."
		return e
	}
	return nil
}
