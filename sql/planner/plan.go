package planner

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clinksql/clinksql/catalog"
	"github.com/clinksql/clinksql/connectors/streamlog"
	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/exec/agg"
	"github.com/clinksql/clinksql/exec/expr"
	"github.com/clinksql/clinksql/exec/operators"
	"github.com/clinksql/clinksql/exec/textform"
	"github.com/clinksql/clinksql/sql/parser"
	"github.com/clinksql/clinksql/sqlerr"
)

// Env is what planning needs from the engine that runs the plan.
type Env interface {
	Catalog() *catalog.Catalog
	// Log returns the storage of an internal stream or a materialized view.
	Log(obj *catalog.Object) (*streamlog.Log, error)
	// Path resolves a connector path: relative paths are under the data directory; anything outside the data
	// directory and the allowed directories, its symbolic links resolved, is refused (42501).
	Path(p string) (string, error)
	// Confine checks one file or directory a connector reads or creates the same way (the connectors' PathGuard):
	// each file a glob or directory names, when it is listed and when it is opened.
	Confine(path string) error
	// SystemTable returns a snapshot of the system relation clink_catalog.<name>, false for no such relation.
	SystemTable(name string) (*SystemTable, bool)
}

// Settings are the session settings a plan depends on.
type Settings struct {
	Parallelism int
	Errors      expr.ErrorMode
	// StateTTL (microseconds of processing time) is how long a regular join keeps a row nobody wrote since; 0
	// keeps rows forever.
	StateTTL int64
	// Params are the statement's $n parameters, nil when it has none.
	Params *Params
	// Restoring plans a job again to restore it (the engine's re-deployment): the sources' files are not checked
	// against their definitions here, the job's own restore does (and says what changed since its checkpoint).
	Restoring bool
	// CheckpointInterval is the job's (0 for an ad-hoc SELECT): connectors check what it asks of them.
	CheckpointInterval time.Duration
	// TimeZone is the session's (nil: UTC): the zone of every conversion between TIMESTAMP WITH TIME ZONE and
	// calendar values the statement binds (exec/expr/timezone.go).
	TimeZone *time.Location
}

func (s Settings) norm() Settings {
	if s.Parallelism < 1 {
		s.Parallelism = 1
	}
	return s
}

// PlanSelect plans an ad-hoc SELECT: internal streams and materialized views are read as they are now, and each
// result batch goes to deliver as it is produced.
func PlanSelect(env Env, q *parser.Query, s Settings, deliver func(exec.Batch) error) (*Physical, error) {
	b := &binder{env: env, cat: env.Catalog(), fns: newFuncScope(env), bounded: true, params: s.Params, tz: s.TimeZone}
	bq, err := b.bindQuery(q)
	if err != nil {
		return nil, err
	}
	l := &lowering{env: env, settings: s.norm(), bounded: true, ids: map[string]int{}, allBounded: true}
	root := pruneRoot(pushdown(bq.root))
	top, err := l.lower(root)
	if err != nil {
		return nil, err
	}
	p := l.physical(b)
	if row, ok, err := emptyAggregateRow(root, memory.DefaultAllocator); err != nil {
		return nil, err
	} else if ok {
		p.EmptyResult = [][]*string{}
		if row != nil {
			p.EmptyResult = append(p.EmptyResult, row)
		}
	}
	p.Columns = bq.root.columns()
	p.Visible = bq.visible
	p.Updating = updatingReason(root) != ""
	p.Limit, p.Offset = bq.limit, bq.offset
	for _, o := range bq.order {
		p.Order = append(p.Order, OrderKey{Col: o.col, Desc: o.desc, NullsFirst: o.nullsFirst})
	}
	if !p.Bounded && p.Limit < 0 {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, q.P,
			"this SELECT reads an unbounded source and would never end: add LIMIT, or keep the query running with CREATE MATERIALIZED VIEW or INSERT INTO a sink")
	}
	if !p.Bounded && p.Updating {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, q.P,
			"this SELECT reads an unbounded source and gives an updating result, so it never has a final answer: keep it running with CREATE MATERIALIZED VIEW")
	}
	if !p.Bounded && len(p.Order) > 0 {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, q.P, "ORDER BY over an unbounded source is not supported")
	}
	if agg, windowed := finalOverUnbounded(root, l.unbounded); windowed {
		e := sqlerr.New(sqlerr.FeatureNotSupported, q.P,
			"this SELECT aggregates per window over an unbounded source without a watermark: its windows never close, so it would never end")
		e.Hint = "Declare WATERMARK FOR the stream's time column, or keep the query running with CREATE MATERIALIZED VIEW."
		return nil, e
	} else if agg != nil {
		// A GROUP BY without a window in an ad-hoc SELECT emits once its input ended: over an unbounded input
		// never, whatever the LIMIT, while its state grows with every key.
		what := "an aggregate without a window"
		if agg.keys > 0 && len(agg.cfg.Aggs) == 0 {
			what = "DISTINCT"
		} else if agg.keys > 0 {
			what = "GROUP BY without a window"
		}
		e := sqlerr.New(sqlerr.FeatureNotSupported, q.P,
			"this SELECT computes %s over an unbounded source: its result is final only when the input ends, which it never does", what)
		e.Hint = "Keep the result up to date with CREATE MATERIALIZED VIEW and query the view, or aggregate per window (TUMBLE, HOP, SESSION, CUMULATE), whose results a watermark closes."
		return nil, e
	}
	l.add(&PNode{ID: "result", Kind: exec.SinkNode, Parallelism: top.Parallelism, Label: "Result", Client: true,
		Inputs:  []PEdge{{From: top, Exchange: exec.ForwardExchange()}},
		newSink: func(int) exec.Sink { return operators.NewResultSink(deliver) }})
	p.Nodes = l.nodes
	return p, nil
}

// PlanInsert plans INSERT INTO target SELECT ... (or VALUES into a sink) as a job.
func PlanInsert(env Env, ins *parser.Insert, s Settings) (*Physical, error) {
	return PlanStatementSet(env, []*parser.Insert{ins}, s)
}

// PlanStatementSet plans several INSERTs as one job (BEGIN STATEMENT SET ... END): one dataflow with a sink per
// INSERT, checkpointed together. Target is the first INSERT's target, Targets all of them.
func PlanStatementSet(env Env, inserts []*parser.Insert, s Settings) (*Physical, error) {
	b := &binder{env: env, cat: env.Catalog(), fns: newFuncScope(env), params: s.Params, tz: s.TimeZone}
	l := &lowering{env: env, settings: s.norm(), ids: map[string]int{}, allBounded: true}
	var roots []node
	var targets []*catalog.Object
	updating := false
	for _, ins := range inserts {
		root, target, upd, err := l.insert(b, ins)
		if err != nil {
			return nil, err
		}
		roots, targets = append(roots, root), append(targets, target)
		updating = updating || upd
	}
	for i, t := range targets {
		if slices.Contains(b.reads, t.Name) {
			return nil, sqlerr.New(sqlerr.FeatureNotSupported, inserts[i].TargetP, "a job cannot read the stream it writes (%q)", t.Name)
		}
	}
	p := l.physical(b)
	p.Target = targets[0].Name
	for _, t := range targets {
		p.Targets = append(p.Targets, t.Name)
	}
	p.Columns = roots[0].columns()
	p.Visible = len(p.Columns)
	p.Updating = updating
	return p, nil
}

// insert binds and lowers one INSERT of a job, up to its sink.
func (l *lowering) insert(b *binder, ins *parser.Insert) (root node, target *catalog.Object, updating bool, err error) {
	target, ok := b.cat.Get(ins.Target)
	if !ok {
		return nil, nil, false, sqlerr.New(sqlerr.UndefinedTable, ins.TargetP, "relation %q does not exist", ins.Target)
	}
	switch {
	case target.Kind == catalog.View || target.Kind == catalog.MaterializedView:
		return nil, nil, false, sqlerr.New(sqlerr.WrongObjectType, ins.TargetP, "cannot insert into %s %q", lower(string(target.Kind)), target.Name)
	case target.Kind == catalog.Stream && target.Connector() != "":
		return nil, nil, false, sqlerr.New(sqlerr.WrongObjectType, ins.TargetP,
			"cannot insert into stream %q: its rows come from connector '%s'", target.Name, target.Connector())
	case target.IsTable():
		// A job's sink appends what it is given; a table's rows replace each other by key (the engine's statements,
		// PlanTableInsert for INSERT ... SELECT).
		e := sqlerr.New(sqlerr.FeatureNotSupported, ins.TargetP, "a table (%q) changes by statement; a job cannot write it", target.Name)
		e.Hint = "Keep the query's result as a materialized view."
		return nil, nil, false, e
	}
	var bq *boundQuery
	if v, ok := ins.Query.Body.(*parser.Values); ok && len(ins.Query.With) == 0 {
		var vn node
		if vn, err = b.bindValuesAs(v, insertHints(target, ins)); err != nil {
			return nil, nil, false, err
		}
		bq = &boundQuery{root: vn, limit: -1, visible: len(vn.columns())}
	} else if bq, err = b.bindQuery(ins.Query); err != nil {
		return nil, nil, false, err
	}
	if len(bq.order) > 0 || bq.limit >= 0 {
		return nil, nil, false, sqlerr.New(sqlerr.FeatureNotSupported, ins.Query.P, "ORDER BY and LIMIT are not supported in a continuous query")
	}
	if slices.Contains(b.reads, target.Name) {
		return nil, nil, false, sqlerr.New(sqlerr.FeatureNotSupported, ins.TargetP, "a job cannot read the stream it writes (%q)", target.Name)
	}
	if root, err = assignTo(bq.root, target, ins, b.tz); err != nil {
		return nil, nil, false, err
	}
	root = pruneRoot(pushdown(root))
	upd := updatingReason(root)
	if upd != "" && !isUpsertSink(target) && !sinkTakesChangelog(target) {
		e := sqlerr.New(sqlerr.FeatureNotSupported, ins.TargetP,
			"%s %q is append-only, but the query gives an updating result: %s", lower(string(target.Kind)), target.Name, upd)
		e.Hint = "Write it into a materialized view, or into a sink WITH (type = 'upsert', primary_key = '...')."
		return nil, nil, false, e
	}
	top, err := l.lower(root)
	if err != nil {
		return nil, nil, false, err
	}
	schema := schemaOf(root.columns())
	if isUpsertSink(target) && !sinkTakesChangelog(target) {
		factory, withKind := operators.NewRowKindColumn(sinkRowKindColumn, schema)
		top = l.add(&PNode{ID: "row-kind", Kind: exec.OperatorNode, Parallelism: top.Parallelism,
			Inputs: []PEdge{{From: top, Exchange: exec.ForwardExchange()}}, Label: "RowKind: column " + sinkRowKindColumn,
			Details:     []string{"primary key: [" + strings.Join(sinkPrimaryKey(target.Options), ", ") + "]", "writes: every change as a row, its kind (+I, -U, +U, -D) first"},
			newOperator: factory})
		schema = withKind
	}
	if err := l.sink(top, target, schema); err != nil {
		return nil, nil, false, err
	}
	return root, target, upd != "", nil
}

// PlanMaterializedView plans the job that maintains a materialized view: its query into the view's log. obj is
// the view's catalog object (with its columns filled from BindView).
func PlanMaterializedView(env Env, q *parser.Query, obj *catalog.Object, s Settings) (*Physical, error) {
	b := &binder{env: env, cat: env.Catalog(), fns: newFuncScope(env), tz: s.TimeZone}
	bq, err := b.bindQuery(q)
	if err != nil {
		return nil, err
	}
	if len(bq.order) > 0 || bq.limit >= 0 {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, q.P, "ORDER BY and LIMIT are not supported in a materialized view")
	}
	root := pruneRoot(pushdown(visibleOnly(bq.root, bq.visible)))
	l := &lowering{env: env, settings: s.norm(), ids: map[string]int{}, allBounded: true}
	top, err := l.lower(root)
	if err != nil {
		return nil, err
	}
	if err := l.sink(top, obj, schemaOf(root.columns())); err != nil {
		return nil, err
	}
	p := l.physical(b)
	p.Target = obj.Name
	p.Columns = root.columns()
	p.Visible = len(p.Columns)
	p.Updating = updatingReason(root) != ""
	return p, nil
}

// ViewInfo is what CREATE [MATERIALIZED] VIEW records: the columns and what the query reads.
type ViewInfo struct {
	Columns []catalog.Column
	Reads   []string // streams and materialized views read, after expanding views
	Views   []string // views expanded
	// Functions are the user-defined functions the query uses, directly or through views and functions.
	Functions []string
}

// BindView checks a view's query and returns its columns. names, when given, rename them. A materialized view
// is bound as a continuous query; a plain view as what it is where used (bounded or not), so only errors common
// to both are reported here.
func BindView(env Env, q *parser.Query, names []string, materialized bool) (*ViewInfo, error) {
	b := &binder{env: env, cat: env.Catalog(), fns: newFuncScope(env), bounded: !materialized}
	bq, err := b.bindQuery(q)
	if err != nil {
		return nil, err
	}
	cols := bq.root.columns()[:bq.visible]
	if len(names) > len(cols) {
		return nil, sqlerr.New(sqlerr.InvalidColumnReference, q.P, "the view has %d columns but %d names were given", len(cols), len(names))
	}
	info := &ViewInfo{Reads: b.reads, Views: b.views, Functions: b.fns.functions()}
	seen := map[string]bool{}
	for i, c := range cols {
		name := c.Name
		if i < len(names) {
			name = names[i]
		}
		if seen[name] {
			return nil, sqlerr.New(sqlerr.DuplicateColumn, q.P, "column %q specified more than once", name)
		}
		seen[name] = true
		info.Columns = append(info.Columns, catalog.Column{Name: name, Type: catalog.TypeOf(c.Type)})
	}
	return info, nil
}

// visibleOnly drops hidden columns from the top of a plan.
func visibleOnly(n node, visible int) node {
	cols := n.columns()
	if visible == len(cols) {
		return n
	}
	p := &projectNode{in: n}
	for i := 0; i < visible; i++ {
		p.exprs = append(p.exprs, expr.Column(i, cols[i].Name, cols[i].Type))
		p.out = append(p.out, cols[i])
	}
	return p
}

// finalOverUnbounded returns an aggregate of root that can never emit because its input never ends: a GROUP BY
// without a window in an ad-hoc SELECT (it emits at the end of its input) over one of the unbounded scans, or a
// window aggregate over an unbounded scan without a watermark (its windows never close); nil when there is none.
// windowed tells which.
func finalOverUnbounded(root node, unbounded []*scanNode) (agg *aggNode, windowed bool) {
	// reads reports whether n reads an unbounded scan, and one without a watermark.
	var reads func(n node) (any, noWM bool)
	reads = func(n node) (any, noWM bool) {
		if x, ok := n.(*scanNode); ok {
			if slices.Contains(unbounded, x) {
				return true, x.wm == nil
			}
			return false, false
		}
		for _, in := range n.children() {
			a, w := reads(in)
			any, noWM = any || a, noWM || w
		}
		if x, ok := n.(*aggNode); ok && agg == nil {
			switch {
			case x.global && any:
				agg = x
			case !x.global && !x.group && noWM && !x.cfg.ProcTime: // processing-time windows close by the clock
				agg, windowed = x, true
			}
		}
		return any, noWM
	}
	reads(root)
	return agg, windowed
}

// updatingReason says why n's result has retractions, "" when it is append-only.
func updatingReason(n node) string {
	switch n := n.(type) {
	case *scanNode:
		if n.updating && n.obj.IsTable() {
			return fmt.Sprintf("it reads table %q, whose rows change (INSERT by an existing key, UPDATE, DELETE)", n.obj.Name)
		}
		if n.updating && n.obj.Kind == catalog.Stream {
			return fmt.Sprintf("it reads stream %q, a changelog (updates and deletes)", n.obj.Name)
		}
		if n.updating {
			return fmt.Sprintf("it reads materialized view %q, whose rows change", n.obj.Name)
		}
	case *filterNode:
		return updatingReason(n.in)
	case *projectNode:
		return updatingReason(n.in)
	case *assignNode:
		return updatingReason(n.tvf.in)
	case *unionNode:
		for _, in := range n.inputs {
			if r := updatingReason(in); r != "" {
				return r
			}
		}
	case *aggNode:
		if n.group {
			what := "GroupAggregate (GROUP BY without a window) updates a group's result as rows arrive"
			if n.keys > 0 && len(n.cfg.Aggs) == 0 {
				if r := updatingReason(n.pre); r == "" {
					return "" // DISTINCT over an append-only input only ever adds rows
				}
				what = "GroupAggregate (DISTINCT) retracts a row when its last copy is retracted"
			}
			return what
		}
	case *joinNode:
		return joinUpdating(n)
	case *topNNode:
		return fmt.Sprintf("Rank (%s() <= %d) replaces a row when a better one arrives", n.cfg.Rank, n.cfg.N)
	case *replicateNode:
		return updatingReason(n.in)
	case *overNode:
		return "" // append-only (its input must be)
	case *unnestNode:
		return updatingReason(n.in)
	}
	return ""
}

// assignTo maps a query's columns onto a target's columns: by position, or through INSERT's column list (missing
// columns are NULL), with Postgres' assignment casts between numeric types.
func assignTo(root node, target *catalog.Object, ins *parser.Insert, tz *time.Location) (node, error) {
	src := root.columns()
	nvis := 0
	for _, c := range src {
		if !c.Hidden {
			nvis++
		}
	}
	targetIdx := make([]int, len(target.Columns))
	for i := range targetIdx {
		targetIdx[i] = -1
	}
	if len(ins.Columns) > 0 {
		for j, name := range ins.Columns {
			k := slices.IndexFunc(target.Columns, func(c catalog.Column) bool { return c.Name == name })
			if k < 0 {
				pos := ins.TargetP
				if j < len(ins.ColumnsP) {
					pos = ins.ColumnsP[j]
				}
				return nil, sqlerr.New(sqlerr.UndefinedColumn, pos, "column %q of relation %q does not exist", name, target.Name)
			}
			if targetIdx[k] >= 0 {
				return nil, sqlerr.New(sqlerr.DuplicateColumn, ins.ColumnsP[j], "column %q specified more than once", name)
			}
			targetIdx[k] = j
		}
		if nvis != len(ins.Columns) {
			return nil, sqlerr.New(sqlerr.SyntaxError, ins.Query.P, "INSERT has %s expressions than target columns",
				map[bool]string{true: "more", false: "fewer"}[nvis > len(ins.Columns)])
		}
	} else {
		if nvis > len(target.Columns) {
			return nil, sqlerr.New(sqlerr.SyntaxError, ins.Query.P, "INSERT has more expressions than target columns")
		}
		for k := range target.Columns {
			if k < nvis {
				targetIdx[k] = k
			}
		}
	}
	itemPos := func(j int) int {
		if pn, ok := root.(*projectNode); ok && j < len(pn.pos) && pn.pos[j] != 0 {
			return pn.pos[j]
		}
		if vn, ok := root.(*valuesNode); ok && j < len(vn.pos) {
			return vn.pos[j]
		}
		return ins.Query.P
	}
	p := &projectNode{in: root}
	for k, tc := range target.Columns {
		t, err := tc.Type.Arrow()
		if err != nil {
			return nil, sqlerr.New(sqlerr.InternalError, sqlerr.NoPos, "%v", err)
		}
		var e expr.Expr
		if j := targetIdx[k]; j >= 0 {
			e = expr.Column(j, src[j].Name, src[j].Type)
			if !arrow.TypeEqual(src[j].Type, t) {
				if !assignable(src[j].Type, t) {
					e := sqlerr.New(sqlerr.DatatypeMismatch, itemPos(j), "column %q is of type %s but expression is of type %s",
						tc.Name, expr.TypeName(t), expr.TypeName(src[j].Type))
					e.Hint = "You will need to rewrite or cast the expression."
					return nil, e
				}
				c, err := castIn(tz, e, t, false)
				if err != nil {
					return nil, posErr(err, ins.Query.P)
				}
				e = c
			}
		} else {
			e = expr.NullOf(t)
		}
		if tc.Type.Name == "VARCHAR" && tc.Type.Precision >= 0 {
			c, err := expr.Call("varchar_check", e, expr.Int64(int64(tc.Type.Precision)))
			if err != nil {
				return nil, posErr(err, itemPos(max(targetIdx[k], 0)))
			}
			e = c
		}
		p.exprs = append(p.exprs, e)
		p.out = append(p.out, Col{Name: tc.Name, Type: t})
	}
	return p, nil
}

// assignable reports whether Postgres would store a value of type from into a column of type to without an
// explicit cast.
func assignable(from, to arrow.DataType) bool {
	if from.ID() == arrow.NULL || arrow.TypeEqual(from, to) {
		return true
	}
	_, fn := numericRank(from)
	_, tn := numericRank(to)
	if fn && tn {
		return true
	}
	return from.ID() == to.ID() // e.g. TIMESTAMP precisions, DECIMAL scales
}

// physical gathers what the lowering found.
func (l *lowering) physical(b *binder) *Physical {
	return &Physical{Nodes: l.nodes, Bounded: l.allBounded, Reads: b.reads, Views: b.views, Functions: b.fns.functions(), Limit: -1, LogReads: l.logReads,
		Notices: append(deliveryNotices(l.nodes), l.notices...)}
}

// source lowers a scan to a source node (plus its watermark).
func (l *lowering) source(n *scanNode) (*PNode, error) {
	obj := n.obj
	schema := schemaOf(n.out)
	var mk func(int) exec.Source
	par := 1
	var label string
	var details []string
	bounded, noReplay := false, false
	var idleTimeout time.Duration
	wmFunc := n.watermarkFunc()
	ownWatermark := false // the source evaluates the watermark per split itself
	switch conn := obj.Connector(); {
	case obj.Kind == catalog.MaterializedView || conn == "":
		log, err := l.env.Log(obj)
		if err != nil {
			return nil, err
		}
		bounded = l.bounded
		progress := new(atomic.Uint64)
		l.logReads = append(l.logReads, LogRead{Log: log, Progress: progress})
		changelog := obj.Kind == catalog.MaterializedView || obj.IsTable()
		mk = func(int) exec.Source {
			return streamlog.NewSource(streamlog.SourceConfig{Log: log, Bounded: bounded, Progress: progress,
				Consolidate: bounded && changelog})
		}
		label = "Source: " + lower(string(obj.Kind)) + " " + obj.Name
		if obj.IsTable() {
			label = "Source: table " + obj.Name
		}
		if changelog {
			label += " (changelog)"
		}
		if bounded && obj.Kind == catalog.MaterializedView {
			label = "Source: materialized view " + obj.Name
			details = append(details, "reads: the view's rows as of its last completed checkpoint")
		} else if bounded && changelog {
			label = "Source: table " + obj.Name
			details = append(details, "reads: the table's current rows")
		} else if bounded {
			details = append(details, "reads: the committed rows as of now")
		} else {
			details = append(details, "reads: the whole history, then follows new rows")
		}
	default:
		c, err := sourceConnector(conn, sqlerr.NoPos)
		if err != nil {
			return nil, err
		}
		opts := dataOptions(obj.Options)
		caps := c.Capabilities(opts)
		if caps.SingleReader != "" {
			// Two source nodes of one stream would be two readers of its one external resource (a slot).
			if slices.Contains(l.singleReads, obj.Name) {
				return nil, sqlerr.New(sqlerr.ObjectInUse, sqlerr.NoPos,
					"stream %q can have one reader at a time (connector '%s'), and this statement reads it twice; "+
						"create a second stream with its own %s for the second reader", obj.Name, conn, caps.SingleReader)
			}
			l.singleReads = append(l.singleReads, obj.Name)
		}
		spec := connectorSpec(obj.Name, schema, obj.Columns, obj.PrimaryKey)
		if caps.Watermarks && wmFunc != nil {
			spec.Watermark, ownWatermark = wmFunc, true
		}
		p, err := c.Build(spec, opts, connectorEnv(l.env, l.settings))
		if err != nil {
			return nil, configError(err, objectPrefix("stream", obj.Name), noPos)
		}
		mk, par, bounded, label, details = p.New, p.Parallelism, p.Bounded, p.Label, p.Details
		noReplay = !caps.Replayable
		idleTimeout = p.IdleTimeout
	}
	if !bounded {
		l.allBounded = false
		l.unbounded = append(l.unbounded, n)
	}
	if len(n.out) < len(obj.Columns) {
		// pruned (prune.go): the source builds only the columns the query reads
		names := make([]string, len(n.out))
		for i, c := range n.out {
			names[i] = c.Name
		}
		details = append(details, fmt.Sprintf("columns: [%s] (%d of %d)", strings.Join(names, ", "), len(n.out), len(obj.Columns)))
	}
	if n.wm != nil {
		if !ownWatermark {
			inner := mk
			mk = func(sub int) exec.Source { return operators.WithWatermark(inner(sub), wmFunc) }
			details = append(details, "watermark: "+n.wmOf)
		} else {
			details = append(details, "watermark: "+n.wmOf+" (per partition, the minimum)")
		}
	}
	return l.add(&PNode{ID: "source", Kind: exec.SourceNode, Parallelism: par, Label: label, Details: details,
		newSource: mk, noReplay: noReplay, idleTimeout: idleTimeout, alignWatermark: n.wm != nil}), nil
}

// watermarkFunc evaluates a scan's WATERMARK expression over a batch (its largest value), nil without one. It
// keeps nothing between calls, so the subtasks of a node share it.
func (n *scanNode) watermarkFunc() operators.WatermarkFunc {
	if n.wm == nil {
		return nil
	}
	wm := n.wm
	return func(tc *exec.TaskContext, rec arrow.RecordBatch) (int64, bool, error) {
		ectx := &expr.Context{Alloc: tc.Alloc, Mode: expr.ErrorsNull, BadValues: tc.Errors}
		arr, err := wm.Eval(ectx, rec)
		if err != nil {
			return 0, false, err
		}
		defer arr.Release()
		v, ok := operators.MaxTimestamp(arr)
		return v, ok, nil
	}
}

// dataOptions drops the connector option.
func dataOptions(opts map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range opts {
		if k != "connector" {
			out[k] = v
		}
	}
	return out
}

// values lowers constant rows to a bounded source.
func (l *lowering) values(n *valuesNode) (*PNode, error) {
	rec, err := EvalValues(n, memory.DefaultAllocator)
	if err != nil {
		return nil, err
	}
	label := fmt.Sprintf("Values: %d rows", len(n.rows))
	if n.label != "" {
		label = fmt.Sprintf("%s: %d rows", n.label, len(n.rows))
	}
	return l.add(&PNode{ID: "values", Kind: exec.SourceNode, Parallelism: 1, Label: label,
		newSource: func(int) exec.Source { return operators.NewBatchSource([]arrow.RecordBatch{rec}) }}), nil
}

// EvalValues evaluates constant rows into one record batch (a VALUES list, or the one empty row of a SELECT without
// FROM). Bad values are errors here: nothing is running yet.
func EvalValues(n *valuesNode, mem memory.Allocator) (arrow.RecordBatch, error) {
	schema := schemaOf(n.out)
	if len(n.out) == 0 {
		return array.NewRecordBatch(schema, nil, int64(len(n.rows))), nil
	}
	if len(n.rows) == 0 { // a system relation with no rows
		cols := make([]arrow.Array, len(n.out))
		for j, c := range n.out {
			cols[j] = array.MakeArrayOfNull(mem, c.Type, 0)
			defer cols[j].Release()
		}
		return array.NewRecordBatch(schema, cols, 0), nil
	}
	one := array.NewRecordBatch(arrow.NewSchema(nil, nil), nil, 1)
	defer one.Release()
	ctx := &expr.Context{Alloc: mem, Mode: expr.ErrorsFail}
	cols := make([]arrow.Array, len(n.out))
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	for j := range n.out {
		parts := make([]arrow.Array, len(n.rows))
		for i, row := range n.rows {
			a, err := row[j].Eval(ctx, one)
			if err != nil {
				for _, p := range parts[:i] {
					p.Release()
				}
				return nil, err
			}
			parts[i] = a
		}
		c, err := array.Concatenate(parts, mem)
		for _, p := range parts {
			p.Release()
		}
		if err != nil {
			return nil, err
		}
		cols[j] = c
	}
	return array.NewRecordBatch(schema, cols, int64(len(n.rows))), nil
}

// ValuesBatchRows is how many rows of INSERT ... VALUES are bound and evaluated together: the statement becomes
// batches of at most this many rows, so what it takes beyond its syntax tree is its Arrow data, not a bound
// expression and an array per value.
const ValuesBatchRows = 4096

// ValuesFor binds INSERT INTO stream VALUES ... into batches of the stream's schema (ValuesBatchRows rows each,
// the last fewer), for an append without a job; ok is false when the INSERT's query is not a plain VALUES. The
// caller releases the batches. ctx ends the work between batches (a statement timeout, a cancel).
func ValuesFor(ctx context.Context, env Env, ins *parser.Insert, target *catalog.Object, s Settings, mem memory.Allocator) (recs []arrow.RecordBatch, ok bool, err error) {
	v, isValues := ins.Query.Body.(*parser.Values)
	if !isValues || len(ins.Query.With) > 0 || len(ins.Query.OrderBy) > 0 || ins.Query.Limit != nil {
		return nil, false, nil
	}
	defer func() {
		if err != nil {
			for _, r := range recs {
				r.Release()
			}
			recs = nil
		}
	}()
	b := &binder{env: env, cat: env.Catalog(), fns: newFuncScope(env), params: s.Params, tz: s.TimeZone}
	hints := insertHints(target, ins)
	for lo := 0; lo == 0 || lo < len(v.Rows); lo += ValuesBatchRows {
		if err := ctx.Err(); err != nil {
			return recs, true, err
		}
		chunk := &parser.Values{P: v.P, Rows: v.Rows[lo:min(lo+ValuesBatchRows, len(v.Rows))]}
		if lo > 0 && len(chunk.Rows[0]) != len(v.Rows[0]) {
			return recs, true, sqlerr.New(sqlerr.SyntaxError, v.P, "VALUES lists must all be the same length")
		}
		rec, err := valuesBatch(b, chunk, hints, target, ins, mem)
		if err != nil {
			return recs, true, err
		}
		recs = append(recs, rec)
	}
	return recs, true, nil
}

// valuesBatch binds and evaluates rows of INSERT ... VALUES into one batch of the target's schema.
func valuesBatch(b *binder, v *parser.Values, hints []arrow.DataType, target *catalog.Object, ins *parser.Insert, mem memory.Allocator) (arrow.RecordBatch, error) {
	vn, err := b.bindValuesAs(v, hints)
	if err != nil {
		return nil, err
	}
	root, err := assignTo(vn, target, ins, b.tz)
	if err != nil {
		return nil, err
	}
	p := root.(*projectNode)
	in, err := EvalValues(vn.(*valuesNode), mem)
	if err != nil {
		return nil, err
	}
	defer in.Release()
	ctx := &expr.Context{Alloc: mem, Mode: expr.ErrorsFail}
	cols := make([]arrow.Array, len(p.exprs))
	for i, e := range p.exprs {
		a, err := e.Eval(ctx, in)
		if err != nil {
			for _, c := range cols[:i] {
				c.Release()
			}
			return nil, posErr(err, ins.Query.P)
		}
		cols[i] = a
	}
	out := array.NewRecordBatch(schemaOf(p.out), cols, in.NumRows())
	for _, c := range cols {
		c.Release()
	}
	return out, nil
}

// insertHints returns the type each VALUES column of an INSERT is headed for.
func insertHints(target *catalog.Object, ins *parser.Insert) []arrow.DataType {
	var hint []arrow.DataType
	typeOf := func(name string) arrow.DataType {
		for _, c := range target.Columns {
			if c.Name == name {
				t, _ := c.Type.Arrow()
				return t
			}
		}
		return nil
	}
	if len(ins.Columns) > 0 {
		for _, name := range ins.Columns {
			hint = append(hint, typeOf(name))
		}
		return hint
	}
	for _, c := range target.Columns {
		t, _ := c.Type.Arrow()
		hint = append(hint, t)
	}
	return hint
}

// sink adds the node that writes a job's output into target.
func (l *lowering) sink(in *PNode, target *catalog.Object, schema *arrow.Schema) error {
	var mk func(int) exec.Sink
	var details []string
	label := "Sink: " + lower(string(target.Kind)) + " " + target.Name
	transactional, notRecoverable := true, false
	switch conn := target.Connector(); {
	case target.Kind == catalog.MaterializedView || conn == "":
		log, err := l.env.Log(target)
		if err != nil {
			return err
		}
		mk = func(int) exec.Sink { return streamlog.NewSink(log) }
		details = append(details, "commit: rows become visible to readers when the checkpoint completes")
	default:
		c, err := sinkConnector(conn, sqlerr.NoPos)
		if err != nil {
			return err
		}
		opts := sinkOptions(target.Options)
		spec := connectorSpec(target.Name, schema, target.Columns, target.PrimaryKey)
		spec.PartitionKeys = target.PartitionKeys
		p, err := c.Build(spec, opts, connectorEnv(l.env, l.settings))
		if err != nil {
			return configError(err, objectPrefix("sink", target.Name), noPos)
		}
		mk, details = p.New, p.Details
		l.notices = append(l.notices, p.Notices...)
		caps := c.Capabilities(opts)
		transactional, notRecoverable = caps.Transactional, !caps.CommitRecoverable
	}
	// Forward from in: the sink subtask reads one channel, in's row time column is its own.
	l.add(&PNode{ID: "sink", Kind: exec.SinkNode, Parallelism: in.Parallelism, Label: label, Details: details,
		Inputs: []PEdge{{From: in, Exchange: exec.ForwardExchange()}}, newSink: mk, transactional: transactional,
		commitNotRecoverable: notRecoverable, rowTime: in.rowTime, hasRowTime: in.hasRowTime})
	return nil
}

// emptyAggregateRow returns the one row an aggregate without GROUP BY keys gives over no input at all (COUNT 0,
// the other aggregates NULL, then HAVING and the select list), which the window operator cannot produce: it has no
// window to fire. ok is false for every other plan.
func emptyAggregateRow(root node, mem memory.Allocator) (row []*string, ok bool, err error) {
	p, isProject := root.(*projectNode)
	if !isProject {
		return nil, false, nil
	}
	var having expr.Expr
	in := p.in
	if f, isFilter := in.(*filterNode); isFilter {
		having, in = f.cond, f.in
	}
	an, isAgg := in.(*aggNode)
	if !isAgg || !(an.global || an.group) || an.keys != 0 {
		return nil, false, nil
	}
	w := an.winCols()
	// The aggregate's output with no rows: window_start, window_end, then COUNTs 0 and NULL for the rest.
	cols := make([]arrow.Array, len(an.out))
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	for i, c := range an.out {
		b := array.NewBuilder(mem, c.Type)
		if i >= w {
			switch an.cfg.Aggs[i-w].Func {
			case agg.AggCount, agg.AggCountStar, agg.AggCountDistinct:
				b.(*array.Int64Builder).Append(0)
			default:
				b.AppendNull()
			}
		} else {
			b.AppendNull()
		}
		cols[i] = b.NewArray()
		b.Release()
	}
	rec := array.NewRecordBatch(schemaOf(an.out), cols, 1)
	defer rec.Release()
	ctx := &expr.Context{Alloc: mem, Mode: expr.ErrorsFail}
	if having != nil {
		keep, err := having.Eval(ctx, rec)
		if err != nil {
			return nil, false, err
		}
		pass := keep.IsValid(0) && keep.(*array.Boolean).Value(0)
		keep.Release()
		if !pass {
			return nil, true, nil
		}
	}
	out := make([]arrow.Array, len(p.exprs))
	for i, e := range p.exprs {
		a, err := e.Eval(ctx, rec)
		if err != nil {
			for _, o := range out[:i] {
				o.Release()
			}
			return nil, false, err
		}
		out[i] = a
	}
	res := array.NewRecordBatch(schemaOf(p.out), out, 1)
	for _, o := range out {
		o.Release()
	}
	defer res.Release()
	rows, err := textform.Rows(res)
	if err != nil {
		return nil, false, err
	}
	return rows[0], true, nil
}
