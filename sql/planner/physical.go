package planner

import (
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/clinksql/clinksql/connectors/streamlog"
	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/exec/agg"
	"github.com/clinksql/clinksql/exec/expr"
	"github.com/clinksql/clinksql/exec/operators"
	"github.com/clinksql/clinksql/sqlerr"
)

// PNode is one operator of a physical plan: a node of the runtime DAG with its parallelism, inputs and exchanges,
// and what EXPLAIN says about it.
type PNode struct {
	ID          string
	Kind        exec.NodeKind
	Parallelism int
	Inputs      []PEdge
	Keyed       bool // Pebble keyed state
	// Client marks the sink of an ad-hoc SELECT: rows go to the client as they come, nothing is staged.
	Client  bool
	Label   string
	Details []string

	// transactional marks a two-phase-commit sink; noReplay a source that cannot resume from a checkpoint's
	// offset (the delivery-guarantee analysis reads both).
	transactional bool
	noReplay      bool
	// idleTimeout: a source subtask without data for this long stops holding the watermark back.
	idleTimeout time.Duration
	// alignWatermark: the source has a watermark, so its subtasks take part in the job's watermark alignment
	// (exec.Node.AlignWatermark).
	alignWatermark bool
	// commitNotRecoverable marks a sink whose commit a restart cannot redo (the connector's CommitRecoverable is
	// false: an exactly-once Kafka sink): its exec node tracks confirmations and runs in-doubt resolution.
	commitNotRecoverable bool
	// rowTime, when hasRowTime, is the output column by which the node's rows are fired by the watermark: a row
	// with rowTime <= W is emitted before the node forwards the watermark W, and none after it
	// (exec.Node.RowTimeColumn's rule). Window aggregates and window joins set it to a window_end; a calc keeps
	// it when it projects that column as a plain column reference; a sink reading such a node over a forward edge
	// takes it as its exec node's RowTimeColumn (replay suppression of an in-doubt sink needs it).
	rowTime    int
	hasRowTime bool
	// partitioned, when not nil, are output columns whose hash (exec.HashKeys of them, in this order) routed every
	// output row to the subtask it is on: the node is keyed on columns that carry these values unchanged. A keyed
	// node above it, of the same parallelism, keyed on exactly these columns, reads it over a forward edge
	// (keyedInput): the rows are already where a hash exchange would send them.
	partitioned []int

	newSource   func(int) exec.Source
	newOperator func(int) exec.Operator
	newSink     func(int) exec.Sink
}

// PEdge is an input of a PNode.
type PEdge struct {
	From     *PNode
	Exchange exec.Exchange
}

// Physical is a planned statement: the DAG, and for a SELECT how to present its rows.
type Physical struct {
	Nodes []*PNode
	// Columns are the result columns of a SELECT (the visible ones first, then hidden ORDER BY keys).
	Columns []Col
	Visible int
	Order   []OrderKey
	Limit   int64 // -1: none
	Offset  int64
	// Bounded is set when every source ends (the job finishes by itself).
	Bounded bool
	// Updating is set when the result is a changelog (retractions flow to the sink).
	Updating bool
	// Notices are what the planner tells the user about the plan (the delivery guarantee it really has).
	Notices []string
	// Reads names the catalog objects read (streams and materialized views, after view expansion); Views the
	// views expanded on the way.
	Reads []string
	Views []string
	// Functions names the user-defined functions the plan inlined or calls (a job records them: its re-deployment
	// plans the statement again).
	Functions []string
	// Target is the object an INSERT or materialized view writes; Targets every object a statement set writes.
	Target  string
	Targets []string
	// EmptyResult, when not nil, is what a SELECT returns if its dataflow produced no row: the one row of an
	// aggregate without GROUP BY over no input (or none, when HAVING rejects it).
	EmptyResult [][]*string
	// LogReads are the internal streams and materialized views the job reads, with how far it has read each.
	LogReads []LogRead
}

// LogRead is a job's reader of a log: Progress is the segment every earlier segment of Log was produced below.
type LogRead struct {
	Log      *streamlog.Log
	Progress *atomic.Uint64
}

// OrderKey is one ORDER BY key of a SELECT's result: a column index of Columns.
type OrderKey struct {
	Col        int
	Desc       bool
	NullsFirst bool
}

// Graph builds the runtime graph. Each call builds a fresh graph (a job re-deployed at open gets its own).
func (p *Physical) Graph() (*exec.Graph, error) {
	g := exec.NewGraph()
	built := map[*PNode]*exec.Node{}
	for _, n := range p.Nodes {
		var ins []exec.InputEdge
		for _, e := range n.Inputs {
			ins = append(ins, exec.From(built[e.From], e.Exchange))
		}
		var en *exec.Node
		switch n.Kind {
		case exec.SourceNode:
			en = g.AddSource(n.ID, n.Parallelism, n.newSource)
			if n.idleTimeout > 0 {
				en.WithIdleTimeout(n.idleTimeout)
			}
			if n.alignWatermark {
				en.WithWatermarkAlignment()
			}
		case exec.OperatorNode:
			en = g.AddOperator(n.ID, n.Parallelism, n.newOperator, ins...)
		case exec.SinkNode:
			en = g.AddSink(n.ID, n.Parallelism, n.newSink, ins...)
			if n.commitNotRecoverable {
				en.WithCommitNotRecoverable()
			}
			if n.hasRowTime {
				en.WithRowTime(n.rowTime)
			}
		}
		if n.Keyed {
			en.WithKeyedState()
		}
		en.Label = n.Label
		built[n] = en
	}
	return g, g.Validate()
}

// Explain prints the DAG, sources first: each operator with its parallelism, input exchanges, state, and whether
// it takes part in checkpoints (every operator does: sources record offsets, stateful operators snapshot state,
// sinks pre-commit).
func (p *Physical) Explain() string { return p.ExplainWith(nil) }

// ExplainWith is Explain with a line of figures under each operator's (EXPLAIN ANALYZE: a running job's live
// figures): figures returns it for a node id, "" for none.
func (p *Physical) ExplainWith(figures func(id string) string) string {
	var sb strings.Builder
	shown := map[*PNode]bool{}
	var walk func(n *PNode, depth int)
	walk = func(n *PNode, depth int) {
		indent, branch := "", ""
		if depth > 0 {
			indent, branch = strings.Repeat("  ", depth-1), "└─ "
		}
		if shown[n] {
			// Read by several nodes (a reused sub-plan): described where it first appeared.
			fmt.Fprintf(&sb, "%s%s%s [%s] (shared, above)\n", indent, branch, n.Label, n.ID)
			return
		}
		shown[n] = true
		fmt.Fprintf(&sb, "%s%s%s [%s] parallelism=%d", indent, branch, n.Label, n.ID, n.Parallelism)
		for _, e := range n.Inputs {
			fmt.Fprintf(&sb, " input=%s(%s)", e.Exchange, e.From.ID)
		}
		switch {
		case n.Keyed:
			sb.WriteString(" state=keyed(pebble)")
		case n.Kind == exec.SourceNode:
			sb.WriteString(" state=offset")
		case n.Client:
			sb.WriteString(" state=none (to the client)")
		case n.Kind == exec.SinkNode:
			sb.WriteString(" state=2pc")
		default:
			sb.WriteString(" state=none")
		}
		sb.WriteString("\n")
		if figures != nil {
			if f := figures(n.ID); f != "" {
				fmt.Fprintf(&sb, "%sactual: %s\n", strings.Repeat("  ", depth+1), f)
			}
		}
		for _, d := range n.Details {
			fmt.Fprintf(&sb, "%s%s\n", strings.Repeat("  ", depth+1), d)
		}
		for _, e := range n.Inputs {
			walk(e.From, depth+1)
		}
	}
	if len(p.Nodes) > 0 {
		walk(p.Nodes[len(p.Nodes)-1], 0) // the sink (or the client's result) is added last
	}
	fmt.Fprintf(&sb, "checkpoint participants: %d operators, %d subtasks\n", len(p.Nodes), p.subtasks())
	return sb.String()
}

func (p *Physical) subtasks() int {
	n := 0
	for _, x := range p.Nodes {
		n += x.Parallelism
	}
	return n
}

// lowering turns a logical plan into PNodes.
type lowering struct {
	env      Env
	settings Settings
	bounded  bool
	// allBounded stays set while every source lowered so far ends by itself.
	allBounded bool
	// unbounded are the scans lowered to sources that never end.
	unbounded []*scanNode
	nodes     []*PNode
	ids       map[string]int
	logReads  []LogRead
	// notices are the connectors' warnings about the plan.
	notices []string
	// singleReads are the streams of SingleReader connectors lowered so far: a second scan of one is refused.
	singleReads []string
	// scans and ops are the sources and operators lowered so far by what they compute (reuse): a second scan of
	// the same stream reading the same columns, or an operator of the same inputs, configuration and parallelism,
	// is the node already there.
	scans map[string]*PNode
	ops   map[string]*PNode
}

// reuse returns the operator already lowered that computes what n would, or nil. Two operators compute the same
// when they read the same nodes over the same exchanges at the same parallelism and EXPLAIN describes them alike
// (label and details name the operator's whole configuration: keys, aggregates, window, expressions, condition,
// state TTL), with the same row time and partitioning. Nexmark q5 computes its count per auction and window twice
// in its SQL: once, since (as Flink's optimizer reuses a sub-plan), and one source feeds both branches.
func (l *lowering) reuse(n *PNode) (*PNode, string) {
	if n.Kind != exec.OperatorNode || n.Client {
		return nil, ""
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s\x00%s\x00%d\x00%t\x00%d\x00%t\x00%v", n.ID, n.Label, n.Parallelism, n.Keyed, n.rowTime,
		n.hasRowTime, n.partitioned)
	for _, in := range n.Inputs {
		fmt.Fprintf(&sb, "\x00%p %s", in.From, in.Exchange)
	}
	for _, d := range n.Details {
		sb.WriteString("\x00" + d)
	}
	sig := sb.String()
	return l.ops[sig], sig
}

func (l *lowering) add(n *PNode) *PNode {
	same, sig := l.reuse(n)
	if same != nil {
		return same
	}
	if sig != "" {
		if l.ops == nil {
			l.ops = map[string]*PNode{}
		}
		l.ops[sig] = n
	}
	base := n.ID
	l.ids[base]++
	if c := l.ids[base]; c > 1 {
		n.ID = fmt.Sprintf("%s-%d", base, c)
	}
	l.nodes = append(l.nodes, n)
	return n
}

// scanKey says what a scan reads: its stream, columns (after pruning), watermark and whether it is a changelog.
func scanKey(n *scanNode) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s\x00%s\x00%s\x00%t", n.obj.Kind, n.obj.Name, n.wmOf, n.updating)
	for _, c := range n.out {
		fmt.Fprintf(&sb, "\x00%s %s", c.Name, c.Type)
	}
	return sb.String()
}

// lower returns the PNode producing n's rows.
func (l *lowering) lower(n node) (*PNode, error) {
	switch n := n.(type) {
	case *scanNode:
		key := scanKey(n)
		if pn := l.scans[key]; pn != nil {
			return pn, nil
		}
		pn, err := l.source(n)
		if err != nil {
			return nil, err
		}
		if l.scans == nil {
			l.scans = map[string]*PNode{}
		}
		l.scans[key] = pn
		return pn, nil
	case *valuesNode:
		return l.values(n)
	case *filterNode:
		in, err := l.lower(n.in)
		if err != nil {
			return nil, err
		}
		cols := n.in.columns()
		proj := make([]expr.Expr, len(cols))
		for i, c := range cols {
			proj[i] = expr.Column(i, c.Name, c.Type)
		}
		return l.calc(in, n.cond, proj, cols), nil
	case *projectNode:
		var cond expr.Expr
		input := n.in
		if f, ok := n.in.(*filterNode); ok {
			cond, input = f.cond, f.in
		}
		if cond == nil && isIdentity(n.exprs, input.columns()) {
			return l.lower(input)
		}
		in, err := l.lower(input)
		if err != nil {
			return nil, err
		}
		return l.calc(in, cond, n.exprs, n.out), nil
	case *joinNode:
		return l.join(n)
	case *topNNode:
		return l.topN(n)
	case *replicateNode:
		return l.lowerReplicate(n)
	case *overNode:
		return l.lowerOver(n)
	case *unnestNode:
		return l.lowerUnnest(n)
	case *aggNode:
		if upd := updatingReason(n.pre); upd != "" && !n.group {
			return nil, sqlerr.New(sqlerr.FeatureNotSupported, sqlerr.NoPos,
				"WindowAggregate needs an append-only input, but %s", upd)
		}
		pre, err := l.lower(n.pre)
		if err != nil {
			return nil, err
		}
		par := l.settings.Parallelism
		if n.keys == 0 || n.global {
			par = 1
		}
		keys := make([]int, n.keys)
		for i := range keys {
			keys[i] = i
		}
		ex := keyedInput(pre, par, keys)
		if n.keys == 0 {
			ex = exec.RebalanceExchange()
			if pre.Parallelism == 1 {
				ex = exec.ForwardExchange()
			}
		}
		var keyNames, aggs []string
		for i := 0; i < n.keys; i++ {
			keyNames = append(keyNames, n.out[i].Name)
		}
		for i, a := range n.cfg.Aggs {
			aggs = append(aggs, describeAgg(a, n.pre.out, n.out[n.keys+n.winCols()+i].Name))
		}
		label := "WindowAggregate"
		if n.global {
			label = "Aggregate"
		}
		details := []string{
			"window: " + n.label,
			"keys: [" + strings.Join(keyNames, ", ") + "]",
			"aggregates: [" + strings.Join(aggs, ", ") + "]",
		}
		switch {
		case n.group && len(n.cfg.Aggs) == 0 && updatingReason(n.pre) == "":
			label = "GroupAggregate"
			details = append(details, "emits: each distinct row once, when it first arrives")
		case n.group:
			label = "GroupAggregate"
			details = append(details, "emits: a changelog (+I a new group, -U/+U a changed result, -D a group whose rows were all retracted)")
		case !n.global && n.cfg.ProcTime:
			details = append(details, "fires: when the subtask's processing-time clock passes window_end (rows go to the windows of their arrival time); at end of input")
		case !n.global:
			details = append(details, "fires: when the watermark passes window_end; late rows are dropped and counted")
		}
		id := "window-agg"
		if n.group {
			id = "group-agg"
		}
		factory, _, err := n.newOperator(l.settings.Errors)
		if err != nil {
			return nil, err
		}
		pn := &PNode{ID: id, Kind: exec.OperatorNode, Parallelism: par, Keyed: true,
			Inputs: []PEdge{{From: pre, Exchange: ex}}, Label: label, Details: details,
			newOperator: factory}
		if n.keys > 0 && !n.global {
			pn.partitioned = keys // the output starts with the group keys
		}
		if !n.group && !n.global && !n.cfg.ProcTime {
			// agg.WindowAggregate fires a window when the watermark reaches its end (end <= wm), drops rows for
			// windows already fired, and forwards the watermark unchanged; window_end follows window_start.
			pn.rowTime, pn.hasRowTime = n.keys+1, true
		}
		return l.add(pn), nil
	case *unionNode:
		var ins []*PNode
		par := 1
		for _, in := range n.inputs {
			pn, err := l.lower(in)
			if err != nil {
				return nil, err
			}
			ins = append(ins, pn)
			par = max(par, pn.Parallelism)
		}
		var edges []PEdge
		for _, pn := range ins {
			ex := exec.ForwardExchange()
			if pn.Parallelism != par {
				ex = exec.RebalanceExchange()
			}
			edges = append(edges, PEdge{From: pn, Exchange: ex})
		}
		return l.add(&PNode{ID: "union", Kind: exec.OperatorNode, Parallelism: par, Inputs: edges,
			Label: fmt.Sprintf("Union: %d inputs (UNION ALL)", len(ins)), newOperator: operators.NewUnion()}), nil
	case *assignNode:
		if upd := updatingReason(n.tvf.in); upd != "" {
			return nil, sqlerr.New(sqlerr.FeatureNotSupported, sqlerr.NoPos, "a window table function needs an append-only input, but %s", upd)
		}
		in, err := l.lower(n.tvf.in)
		if err != nil {
			return nil, err
		}
		factory, _, err := agg.NewWindowAssign(n.tvf.win, schemaOf(n.tvf.in.columns()))
		if err != nil {
			return nil, sqlerr.Wrap(sqlerr.FeatureNotSupported, err)
		}
		return l.add(&PNode{ID: "window-assign", Kind: exec.OperatorNode, Parallelism: in.Parallelism,
			Inputs: []PEdge{{From: in, Exchange: exec.ForwardExchange()}}, Label: "WindowAssign",
			Details:     []string{"window: " + windowLabel(n.tvf.win, n.tvf.timeCol), "adds: window_start, window_end (a row per window it falls in)"},
			newOperator: factory}), nil
	case *windowTVFNode:
		return nil, fmt.Errorf("planner: a window table function outside an aggregation")
	}
	return nil, fmt.Errorf("planner: cannot lower %T", n)
}

func describeAgg(a agg.AggSpec, pre []Col, name string) string {
	var s string
	arg := "*"
	if a.Arg >= 0 {
		arg = pre[a.Arg].Name
	}
	switch a.Func {
	case agg.AggCountStar:
		s = "count(*)"
	case agg.AggCountDistinct:
		s = "count(DISTINCT " + arg + ")"
	default:
		s = name + "(" + arg + ")"
	}
	if a.Filter >= 0 {
		s += " FILTER (" + pre[a.Filter].Name + ")"
	}
	return s
}

func isIdentity(exprs []expr.Expr, in []Col) bool {
	if len(exprs) != len(in) {
		return false
	}
	for i, e := range exprs {
		if j, ok := expr.ColumnIndex(e); !ok || j != i {
			return false
		}
	}
	return true
}

// calc adds a filter+project operator after in, at in's parallelism with a forward exchange.
func (l *lowering) calc(in *PNode, cond expr.Expr, exprs []expr.Expr, out []Col) *PNode {
	var details []string
	if cond != nil {
		details = append(details, "filter: "+cond.String())
	}
	details = append(details, "project: ["+explainExprs(exprs, out)+"]")
	names := make([]string, len(out))
	for i, c := range out {
		names[i] = c.Name
	}
	cfg := operators.CalcConfig{Filter: cond, Project: exprs, Names: names, Mode: l.settings.Errors}
	label := "Project"
	if cond != nil {
		label = "Calc"
	}
	pn := &PNode{ID: "calc", Kind: exec.OperatorNode, Parallelism: in.Parallelism,
		Inputs: []PEdge{{From: in, Exchange: exec.ForwardExchange()}}, Label: label, Details: details,
		newOperator: operators.NewCalc(cfg)}
	pn.rowTime, pn.hasRowTime = forwardRowTime(in, exprs)
	pn.partitioned = forwardPartitioned(in, exprs)
	return l.add(pn)
}

// keyedInput is the exchange into a keyed node of parallelism par, keyed on columns keys of in: forward when in's
// rows are already partitioned by the hash of exactly those columns at the same parallelism, else a hash exchange.
// The keyed node takes each row's key group from the same hash, so it owns every row a forward edge brings (and
// fails, naming the key group, if it ever did not).
func keyedInput(in *PNode, par int, keys []int) exec.Exchange {
	if in.partitioned != nil && in.Parallelism == par && slices.Equal(in.partitioned, keys) {
		return exec.ForwardExchange()
	}
	return exec.HashExchange(keys...)
}

// forwardPartitioned is the partitioning of a stateless node that reads in over a forward edge and computes its
// columns with exprs: in's partitioning columns where each is projected as a plain column reference (the first
// such output of each), else none.
func forwardPartitioned(in *PNode, exprs []expr.Expr) []int {
	if in.partitioned == nil {
		return nil
	}
	out := make([]int, len(in.partitioned))
	for k, c := range in.partitioned {
		found := false
		for i, e := range exprs {
			if j, ok := expr.ColumnIndex(e); ok && j == c {
				out[k], found = i, true
				break
			}
		}
		if !found {
			return nil
		}
	}
	return out
}

// forwardRowTime is the row time column of a stateless node that reads in over a forward edge and computes its
// columns with exprs: the first that is in's row time column as a plain column reference (a filter drops rows
// but fires nothing; an expression over the column, even a cast, may move a row across the horizon).
func forwardRowTime(in *PNode, exprs []expr.Expr) (int, bool) {
	if !in.hasRowTime {
		return 0, false
	}
	for i, e := range exprs {
		if j, ok := expr.ColumnIndex(e); ok && j == in.rowTime {
			return i, true
		}
	}
	return 0, false
}
