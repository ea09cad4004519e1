package engine

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/clinksql/clinksql/catalog"
	"github.com/clinksql/clinksql/connectors"
	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/exec/expr"
	"github.com/clinksql/clinksql/sql/parser"
	"github.com/clinksql/clinksql/sql/planner"
	"github.com/clinksql/clinksql/sqlerr"
)

// table builds a text result set.
type table struct {
	cols []Column
	rows [][]*string
}

func newTable(names ...string) *table {
	t := &table{}
	for _, n := range names {
		t.cols = append(t.cols, textColumn(n))
	}
	return t
}

func (t *table) add(vals ...string) {
	row := make([]*string, len(vals))
	for i := range vals {
		row[i] = &vals[i]
	}
	t.rows = append(t.rows, row)
}

func (t *table) result(tag string) *Result {
	if tag == "" {
		tag = "SHOW"
	}
	return &Result{Tag: tag, Columns: t.cols, Rows: t.rows}
}

func (s *Session) show(st *parser.Show) (*Result, error) {
	cat := s.e.cat
	switch st.What {
	case "streams", "tables":
		t := newTable("name", "connector", "columns", "watermark")
		for _, o := range cat.Objects(catalog.Stream) {
			wm := ""
			if o.Watermark != nil {
				wm = o.Watermark.Column + " AS " + o.Watermark.Expr
			}
			conn := o.Connector()
			if conn == "" {
				conn = "(internal)"
			}
			t.add(o.Name, conn, columnList(o), wm)
		}
		return t.result(""), nil
	case "sinks":
		t := newTable("name", "connector", "columns", "options")
		for _, o := range cat.Objects(catalog.Sink) {
			t.add(o.Name, o.Connector(), columnList(o), optionList(o.Options))
		}
		return t.result(""), nil
	case "views":
		t := newTable("name", "query")
		for _, o := range cat.Objects(catalog.View) {
			t.add(o.Name, o.Query)
		}
		return t.result(""), nil
	case "materialized views":
		t := newTable("name", "job_id", "query")
		for _, o := range cat.Objects(catalog.MaterializedView) {
			t.add(o.Name, o.Job, o.Query)
		}
		return t.result(""), nil
	case "jobs":
		return s.showJobs(), nil
	case "functions":
		return s.showFunctions(), nil
	case "checkpoints":
		return s.showCheckpoints(st)
	case "all":
		t := newTable("name", "setting")
		for _, n := range s.vars.sortedNames() {
			t.add(n, s.vars[n])
		}
		return t.result(""), nil
	}
	name := st.What
	if a, ok := settingAliases[name]; ok {
		name = a
	}
	v, ok := s.vars[name]
	if !ok {
		return nil, sqlerr.New(sqlerr.UndefinedObject, stmtStart(st), "unrecognized configuration parameter %q", st.What)
	}
	t := newTable(name)
	t.add(v)
	return t.result(""), nil
}

// columnList prints an object's columns as its definition does: name, type, metadata, and its primary key.
func columnList(o *catalog.Object) string {
	parts := make([]string, len(o.Columns))
	for i, c := range o.Columns {
		parts[i] = c.Name + " " + c.Type.String()
		if d := c.Definition(); d != "" {
			parts[i] += " " + d
		}
	}
	if len(o.PrimaryKey) > 0 {
		parts = append(parts, "PRIMARY KEY ("+strings.Join(o.PrimaryKey, ", ")+") NOT ENFORCED")
	}
	list := strings.Join(parts, ", ")
	if len(o.PartitionKeys) > 0 {
		list += " PARTITIONED BY (" + strings.Join(o.PartitionKeys, ", ") + ")"
	}
	return list
}

func optionList(opts map[string]string) string {
	var parts []string
	for _, k := range sortedKeys(opts) {
		if k != "connector" {
			parts = append(parts, fmt.Sprintf("%s=%s", k, connectors.Masked(k, opts[k])))
		}
	}
	return strings.Join(parts, ", ")
}

// showJobs lists every job with its state, progress and failure: clink_catalog.jobs' rows, its first columns in
// the order SHOW JOBS always had them (with their old names: id, error), then the others.
func (s *Session) showJobs() *Result {
	cols := systemColumns(reflect.TypeFor[JobInfo]())
	first := []string{"job_id", "query", "state", "bounded", "last_checkpoint", "rows_in", "rows_out", "late_rows",
		"bad_values", "suppressed_rows", "last_error"}
	order := make([]int, 0, len(cols))
	for _, name := range first {
		order = append(order, slices.IndexFunc(cols, func(c catalog.Column) bool { return c.Name == name }))
	}
	for i, c := range cols {
		if !slices.Contains(first, c.Name) {
			order = append(order, i)
		}
	}
	t := &table{}
	for _, i := range order {
		name := cols[i].Name
		switch name {
		case "job_id":
			name = "id"
		case "last_error":
			name = "error"
		}
		t.cols = append(t.cols, textColumn(name))
	}
	for _, info := range s.e.JobInfos() {
		t.rows = append(t.rows, systemTextRow(info, order))
	}
	return t.result("")
}

// showCheckpoints lists the checkpoint history of every job (or of one): clink_catalog.checkpoints' rows.
func (s *Session) showCheckpoints(st *parser.Show) (*Result, error) {
	if st.For != "" {
		if spec, ok := s.e.cat.Job(st.For); !ok || spec.Dropped {
			return nil, sqlerr.New(sqlerr.UndefinedObject, st.ForP, "job %q does not exist", st.For)
		}
	}
	t := &table{}
	cols := systemColumns(reflect.TypeFor[CheckpointInfo]())
	order := make([]int, len(cols))
	for i, c := range cols {
		t.cols = append(t.cols, textColumn(c.Name))
		order[i] = i
	}
	for _, info := range s.e.CheckpointInfos(st.For) {
		t.rows = append(t.rows, systemTextRow(info, order))
	}
	return t.result(""), nil
}

func (s *Session) describe(st *parser.Describe) (*Result, error) {
	o, ok := s.e.cat.Get(st.Name)
	if !ok {
		return nil, sqlerr.New(sqlerr.UndefinedTable, st.NameP, "relation %q does not exist", st.Name)
	}
	t := newTable("column_name", "data_type", "is_nullable", "extra")
	for _, c := range o.Columns {
		var extra []string
		nullable := "YES"
		if slices.Contains(o.PrimaryKey, c.Name) {
			if o.IsTable() {
				// A table's key is checked: its INSERTs upsert by it, and a NULL in it is refused.
				extra, nullable = append(extra, "PRIMARY KEY"), "NO"
			} else {
				extra = append(extra, "PRIMARY KEY NOT ENFORCED")
			}
		}
		if d := c.Definition(); d != "" {
			extra = append(extra, d)
		}
		if slices.Contains(o.PartitionKeys, c.Name) {
			extra = append(extra, "PARTITION KEY")
		}
		if o.Watermark != nil && o.Watermark.Column == c.Name {
			extra = append(extra, "WATERMARK AS "+o.Watermark.Expr)
		}
		t.add(c.Name, c.Type.String(), nullable, strings.Join(extra, " "))
	}
	return t.result("DESCRIBE"), nil
}

// explain plans a statement without running it and prints its dataflow.
func (s *Session) explain(st *parser.Explain, params *planner.Params) (*Result, error) {
	if st.Analyze {
		return s.explainAnalyze(st)
	}
	js, _, err := s.settings()
	if err != nil {
		return nil, err
	}
	ps := js.planner()
	ps.Params = params
	var p *planner.Physical
	switch inner := st.Stmt.(type) {
	case *parser.Select:
		p, err = planner.PlanSelect(s.e, inner.Query, ps, nil)
	case *parser.Insert:
		if target, ok := s.e.cat.Get(inner.Target); ok && target.IsTable() {
			// A table's INSERT runs once, as an ad-hoc SELECT whose rows the engine upserts (table.go).
			p, err = planner.PlanTableInsert(s.e, inner, target, ps, func(b exec.Batch) error { b.Release(); return nil })
			break
		}
		p, err = planner.PlanInsert(s.e, inner, ps)
	case *parser.CreateView:
		if !inner.Materialized {
			return nil, sqlerr.New(sqlerr.FeatureNotSupported, stmtStart(inner), "EXPLAIN CREATE VIEW: a view runs nothing; explain a query that reads it")
		}
		info, berr := planner.BindView(s.e, inner.Query, inner.Columns, true)
		if berr != nil {
			return nil, berr
		}
		obj := &catalog.Object{Kind: catalog.MaterializedView, Name: inner.Name, Columns: info.Columns}
		p, err = planner.PlanMaterializedView(s.e, inner.Query, obj, js.planner())
	default:
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, stmtStart(st.Stmt), "EXPLAIN works on SELECT, INSERT and CREATE MATERIALIZED VIEW")
	}
	if err != nil {
		return nil, err
	}
	t := newTable("QUERY PLAN")
	for _, line := range strings.Split(strings.TrimRight(p.Explain(), "\n"), "\n") {
		t.add(line)
	}
	return t.result("EXPLAIN"), nil
}

// systemTextRow is a row of a system table (a JobInfo, CheckpointInfo, ...) in text, as a SELECT of the table
// prints it: the values of the columns order names, in that order.
func systemTextRow(info any, order []int) []*string {
	vals := systemRow(reflect.ValueOf(info))
	row := make([]*string, len(order))
	for j, i := range order {
		row[j] = systemText(vals[i])
	}
	return row
}

// explainAnalyze prints a deployed job's plan, as EXPLAIN prints its statement's, with each operator's live figures
// (OperatorInfos) under it: rows and rates summed over its subtasks, the busiest subtask's busy and backpressure
// ratios (the bottleneck is what matters), the least subtask watermark (the operator's), the state summed.
func (s *Session) explainAnalyze(st *parser.Explain) (*Result, error) {
	spec, ok := s.e.cat.Job(st.Job)
	if !ok || spec.Dropped {
		return nil, sqlerr.New(sqlerr.UndefinedObject, st.JobP, "job %q does not exist", st.Job)
	}
	rj := s.e.running(spec.ID)
	if rj == nil {
		info, _ := s.e.JobInfo(spec.ID)
		e := sqlerr.New(sqlerr.InvalidJobState, st.JobP, "job %s is %s: EXPLAIN ANALYZE shows a job deployed by this server", spec.ID, info.State)
		e.Hint = "EXPLAIN " + spec.Statement + " shows its plan."
		return nil, e
	}
	type figures struct {
		rowsIn, rowsOut, stateBytes int64
		inRate, outRate, busy, bp   float64
		wm                          *time.Time
		wmKnown                     bool
	}
	ops := map[string]*figures{}
	for _, o := range s.e.OperatorInfos(spec.ID) {
		f := ops[o.OperatorID]
		if f == nil {
			f = &figures{wm: o.Watermark, wmKnown: o.Watermark != nil}
			ops[o.OperatorID] = f
		}
		f.rowsIn += o.RowsIn
		f.rowsOut += o.RowsOut
		f.stateBytes += o.StateBytes
		f.inRate += o.RowsInPerSec
		f.outRate += o.RowsOutPerSec
		f.busy, f.bp = max(f.busy, o.BusyRatio), max(f.bp, o.BackpressureRatio)
		if o.Watermark == nil {
			f.wm, f.wmKnown = nil, false // a subtask without one holds the operator's back
		} else if f.wmKnown && o.Watermark.Before(*f.wm) {
			f.wm = o.Watermark
		}
	}
	text := rj.plan.ExplainWith(func(id string) string {
		f := ops[id]
		if f == nil {
			return ""
		}
		wm := "none"
		if f.wm != nil {
			wm = string(expr.AppendTimestamp(nil, f.wm.UnixMicro(), false))
		}
		return fmt.Sprintf("rows_in=%d rows_out=%d rows_in/s=%.1f rows_out/s=%.1f busy=%.2f backpressure=%.2f watermark=%s state_bytes=%d",
			f.rowsIn, f.rowsOut, f.inRate, f.outRate, f.busy, f.bp, wm, f.stateBytes)
	})
	info, _ := s.e.JobInfo(spec.ID)
	t := newTable("QUERY PLAN")
	t.add(fmt.Sprintf("job %s: %s, last checkpoint %d, restarts %d", spec.ID, info.State, info.LastCheckpoint, info.Restarts))
	for _, line := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		t.add(line)
	}
	return t.result("EXPLAIN"), nil
}

// applyDrop carries out a drop plan (DROP STREAM/VIEW/SINK/..., DROP FUNCTION): it stops the jobs the plan names,
// removes its objects and functions from the catalog, deletes their storage and modules, and returns the notices of
// releasing what the jobs held.
func (e *Engine) applyDrop(ctx context.Context, plan catalog.DropPlan) ([]string, error) {
	e.stopJobs(plan.Jobs)
	if err := e.cat.Remove(plan); err != nil {
		return nil, err
	}
	for _, o := range plan.Objects {
		e.dropStorage(o)
	}
	for _, f := range plan.Functions {
		e.removeModule(f)
	}
	return e.releaseAfterDrop(ctx, plan.Objects, plan.Jobs), nil
}

func (s *Session) drop(ctx context.Context, st *parser.Drop) (*Result, error) {
	if st.Kind == "FUNCTION" {
		return s.dropFunctions(ctx, st)
	}
	kind := catalog.Kind(st.Kind)
	if st.Kind == "TABLE" {
		kind = catalog.Stream
	}
	var notices []string
	for i, name := range st.Names {
		if _, ok := s.e.cat.Get(name); !ok && st.IfExists {
			continue
		}
		plan, err := s.e.cat.PlanDrop(name, kind, st.Cascade)
		if err != nil {
			return nil, withPos(err, st.NamesP[i])
		}
		more, err := s.e.applyDrop(ctx, plan)
		if err != nil {
			return nil, err
		}
		notices = append(notices, more...)
	}
	return &Result{Tag: "DROP " + st.Kind, Notices: notices}, nil
}

func (s *Session) dropJob(ctx context.Context, st *parser.DropJob) (*Result, error) {
	spec, ok := s.e.cat.Job(st.ID)
	if !ok || spec.Dropped {
		return nil, sqlerr.New(sqlerr.UndefinedObject, st.IDP, "job %q does not exist", st.ID)
	}
	for _, o := range s.e.cat.Objects(catalog.MaterializedView) {
		if o.Job == spec.ID {
			e := sqlerr.New(sqlerr.DependentObjects, st.IDP, "job %s maintains materialized view %q", spec.ID, o.Name)
			e.Hint = fmt.Sprintf("Use DROP MATERIALIZED VIEW %s.", o.Name)
			return nil, e
		}
	}
	s.e.stopJobs([]string{spec.ID})
	if err := s.e.cat.DropJob(spec.ID); err != nil {
		return nil, err
	}
	return &Result{Tag: "DROP JOB", Notices: s.e.releaseAfterDrop(ctx, nil, []string{spec.ID})}, nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
