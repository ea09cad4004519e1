package planner

import (
	"time"

	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/clinksql/clinksql/catalog"
	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/exec/agg"
	"github.com/clinksql/clinksql/exec/expr"
)

// node is a logical plan node: what a query computes, before exchanges and parallelism.
type node interface {
	columns() []Col
	// children are the nodes n reads, for walks over the whole plan.
	children() []node
}

// scanNode reads a catalog object: a stream (internal or a connector) or a materialized view's changelog.
type scanNode struct {
	obj  *catalog.Object
	out  []Col
	wm   expr.Expr // the WATERMARK FOR expression over out, nil when the stream has none
	wmOf string    // its text, for EXPLAIN
	// updating is set for a materialized view's changelog (retractions flow).
	updating bool
}

// filterNode keeps the rows where cond is true.
type filterNode struct {
	in   node
	cond expr.Expr
}

// projectNode computes exprs over its input.
type projectNode struct {
	in    node
	exprs []expr.Expr
	out   []Col
	// pos is where each output column's expression starts in the text (0 when unknown), for errors about it.
	pos []int
}

// valuesNode is constant rows (VALUES, or SELECT without FROM).
type valuesNode struct {
	rows [][]expr.Expr
	out  []Col
	pos  []int // where each column's first value starts
	// label names a system relation the rows are a snapshot of (EXPLAIN), "" for VALUES.
	label string
}

// windowTVFNode is a windowing table function in FROM; it only exists under an aggregation (which absorbs it) or
// a TUMBLE projection.
type windowTVFNode struct {
	in      node
	win     agg.WindowAggConfig // Kind, TimeCol (in in's columns) and sizes
	timeCol string
	// timeColP is the position of the DESCRIPTOR's column, for errors.
	timeColP int
	// partition holds SESSION's PARTITION BY columns (indexes into in's columns).
	partition []int
	out       []Col
}

// unionNode is UNION ALL: the rows of every input, each cast to the common column types.
type unionNode struct {
	inputs []node
	out    []Col
}

func (n *unionNode) columns() []Col { return n.out }

// assignNode is a window table function that is not aggregated: each row once per window it belongs to, with
// window_start and window_end appended.
type assignNode struct {
	tvf *windowTVFNode
}

func (n *assignNode) columns() []Col { return n.tvf.out }

// aggNode is a windowed aggregation (or, in a bounded SELECT, a plain GROUP BY: one window that ends with the
// input). Its input is pre, a projection of the keys, the event time, the aggregate arguments and FILTER
// conditions; its output is keys, window_start, window_end, aggregates.
type aggNode struct {
	pre    *projectNode
	cfg    agg.WindowAggConfig
	global bool // a plain GROUP BY over a bounded, append-only input: one window that ends with the input
	// group is a GROUP BY without a window in a continuous query, or over a changelog: the operator is the
	// updating group aggregate and there are no window columns.
	group bool
	// propagated is a GROUP BY of the window_start and window_end of rows windowed upstream: a window aggregate
	// whose windows are the input's (the keys hold them; the operator's own window columns are not shown).
	propagated bool
	keys       int
	label      string
	out        []Col
}

// newOperator builds the aggregate's operator factory and output schema; mode is what a float SUM or AVG that
// overflows does.
func (n *aggNode) newOperator(mode expr.ErrorMode) (func(int) exec.Operator, *arrow.Schema, error) {
	in := schemaOf(n.pre.out)
	if n.group {
		return agg.NewGroupAggregate(agg.GroupAggConfig{Keys: n.cfg.Keys, Aggs: n.cfg.Aggs,
			InputUpdating: updatingReason(n.pre.in) != "", Mode: mode}, in)
	}
	cfg := n.cfg
	cfg.Mode = mode
	return agg.NewWindowAggregate(cfg, in)
}

// winCols is how many window columns (window_start, window_end) follow the keys in the output.
func (n *aggNode) winCols() int {
	if n.group {
		return 0
	}
	return 2
}

func (n *scanNode) columns() []Col      { return n.out }
func (n *filterNode) columns() []Col    { return n.in.columns() }
func (n *projectNode) columns() []Col   { return n.out }
func (n *valuesNode) columns() []Col    { return n.out }
func (n *windowTVFNode) columns() []Col { return n.out }
func (n *aggNode) columns() []Col       { return n.out }

func (n *scanNode) children() []node      { return nil }
func (n *filterNode) children() []node    { return []node{n.in} }
func (n *projectNode) children() []node   { return []node{n.in} }
func (n *valuesNode) children() []node    { return nil }
func (n *windowTVFNode) children() []node { return []node{n.in} }
func (n *aggNode) children() []node       { return []node{n.pre} }
func (n *unionNode) children() []node     { return n.inputs }
func (n *assignNode) children() []node    { return []node{n.tvf} }

// explainExprs renders a list of expressions for EXPLAIN.
func explainExprs(es []expr.Expr, cols []Col) string {
	parts := make([]string, len(es))
	for i, e := range es {
		s := e.String()
		if cols != nil && i < len(cols) && cols[i].Name != s {
			s += " AS " + cols[i].Name
		}
		parts[i] = s
	}
	return strings.Join(parts, ", ")
}

func windowLabel(cfg agg.WindowAggConfig, timeCol string) string {
	if cfg.ProcTime {
		c := cfg
		c.ProcTime = false
		return windowLabel(c, timeCol) + " on processing time"
	}
	d := func(us int64) string { return formatInterval(us) }
	if cfg.Zone != nil && cfg.Zone != time.UTC && cfg.Kind != agg.WindowSession {
		c := cfg
		c.Zone = nil
		return windowLabel(c, timeCol) + " on the wall clock of " + cfg.Zone.String()
	}
	switch cfg.Kind {
	case agg.WindowTumble:
		return fmt.Sprintf("TUMBLE(%s, %s)", timeCol, d(cfg.Size))
	case agg.WindowHop:
		return fmt.Sprintf("HOP(%s, slide %s, size %s)", timeCol, d(cfg.Slide), d(cfg.Size))
	case agg.WindowCumulate:
		return fmt.Sprintf("CUMULATE(%s, step %s, size %s)", timeCol, d(cfg.Step), d(cfg.Size))
	case agg.WindowSession:
		return fmt.Sprintf("SESSION(%s, gap %s)", timeCol, d(cfg.Gap))
	}
	return "?"
}

// formatInterval prints microseconds as the largest whole unit: 1 minute, 10 seconds, 1500 milliseconds.
func formatInterval(us int64) string {
	units := []struct {
		name string
		n    int64
	}{{"day", 86400e6}, {"hour", 3600e6}, {"minute", 60e6}, {"second", 1e6}, {"millisecond", 1e3}, {"microsecond", 1}}
	for _, u := range units {
		if us != 0 && us%u.n == 0 {
			v := us / u.n
			if v == 1 || v == -1 {
				return fmt.Sprintf("%d %s", v, u.name)
			}
			return fmt.Sprintf("%d %ss", v, u.name)
		}
	}
	return "0 seconds"
}
