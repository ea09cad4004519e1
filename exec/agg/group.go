package agg

import (
	"github.com/apache/arrow-go/v18/arrow"

	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/exec/expr"
	"github.com/clinksql/clinksql/exec/rowcodec"
	"github.com/clinksql/clinksql/sqlerr"
)

// GroupAggregate: GROUP BY keys without a window, and SELECT DISTINCT (keys and no aggregates).
//
// Contract:
//
//   - Input: one logical input, append-only or (InputUpdating) a changelog: +I and +U add a row to its group, -U
//     and -D take one out. The planner projects first, so keys, aggregate arguments and FILTER conditions are plain
//     columns. An append-only input receiving -U or -D fails the operator. A retraction reaching a group that holds
//     no row (a changelog inconsistent upstream) is ignored, as Flink does, and counted in TaskContext.Errors.
//   - Output: the key columns (names and types of the input), then one column per aggregate with the window
//     aggregate's result types and names (window.go), as a changelog computed per input batch (Flink's
//     mini-batch): for each group the batch touched, in the order of first touch, its result before the batch is
//     compared with its result after it: absent -> present is +I new, present -> absent is -D old, a changed
//     result is -U old then +U new, an unchanged one emits nothing. A group exists while it holds at least one row
//     (its row count, independent of the aggregates and their FILTERs); a global aggregate (no keys) is one group
//     that always exists: it emits its row over no rows (COUNT 0, SUM NULL) at Start, before any input (not
//     again after a restore), and keeps a row when every row is retracted again. So DISTINCT over an append-only
//     input emits only +I. An output batch whose rows are all +I carries nil Kinds.
//   - Aggregates: COUNT, COUNT(*), COUNT(DISTINCT), SUM, AVG, MIN, MAX with FILTER (WHERE c) (a row feeds the
//     aggregate only where c is TRUE), all retractable: SUM and AVG keep the count of non-NULL values (none: NULL);
//     COUNT(DISTINCT) a count per distinct value; MIN/MAX over a changelog the multiset of values with their counts
//     (over an append-only input only the extreme). SUM(int) is summed in 128 bits and fails with 22003 when the
//     result leaves BIGINT; decimal results beyond 38 digits fail with 22003. Float sums count NaN and infinities
//     apart, so retracting them restores the finite sum.
//   - Keys: hashable types (exec.HashKeys); NULLs group together. A row's key group is state.KeyGroupOf(hash,
//     MaxKeyGroups), the hash exchange's; a row of a key group the subtask does not own fails the operator. With
//     no keys every row is in key group 0 (the planner runs it at parallelism 1).
//   - State: see group_op.go. Watermarks pass through (OnWatermark does nothing).

// GroupAggConfig is GROUP BY without a window (and SELECT DISTINCT: keys and no aggregates). Its result is a
// changelog: a group's first result is +I, a change is -U old then +U new, a group whose last row was retracted
// is -D.
type GroupAggConfig struct {
	Keys []int
	// Aggs: AggCount, AggCountStar, AggCountDistinct, AggSum, AggMin, AggMax, AggAvg, each with an optional
	// Filter column, as in the window aggregate.
	Aggs []AggSpec
	// InputUpdating says whether the input is a changelog; an append-only input receiving a retraction fails the
	// operator.
	InputUpdating bool
	// Mode is what a float SUM or AVG that overflows does (aggOverflow): NULL and counted, or 22003.
	Mode expr.ErrorMode
}

// defaultMaxGroups bounds the working set: above it, a barrier evicts the groups that were not touched since the
// previous barrier (they are in the state backend, written back just before) and, if that is not enough, all of
// them.
const defaultMaxGroups = 1 << 20

// groupPlan is the validated, immutable part of the operator, shared by its subtasks.
type groupPlan struct {
	cfg     GroupAggConfig
	in, out *arrow.Schema
	keyEnc  rowcodec.Encoding
	// resEnc decodes a group's result bytes (one key-column value per aggregate) into the output builders.
	resEnc    rowcodec.Encoding
	aggs      []aggKind
	maxGroups int
}

// NewGroupAggregate validates cfg against the input schema and returns the operator factory and the output schema:
// the key columns, then one column per aggregate with the window aggregate's result types. Errors are sqlerr
// errors: 42883 for an aggregate over a type it does not take, 0A000 for a key type that cannot be grouped, 42804
// for a FILTER that is not boolean, XX000 for a malformed config (a planner bug).
func NewGroupAggregate(cfg GroupAggConfig, in *arrow.Schema) (func(subtask int) exec.Operator, *arrow.Schema, error) {
	p, err := planGroupAgg(cfg, in)
	if err != nil {
		return nil, nil, err
	}
	return func(int) exec.Operator { return newGroupAgg(p) }, p.out, nil
}

func groupInternalf(format string, args ...any) error {
	return sqlerr.New(sqlerr.InternalError, sqlerr.NoPos, "group aggregate: "+format, args...)
}

func planGroupAgg(cfg GroupAggConfig, in *arrow.Schema) (*groupPlan, error) {
	if len(cfg.Keys) == 0 && len(cfg.Aggs) == 0 {
		return nil, groupInternalf("neither keys nor aggregates")
	}
	keyTypes, fields, err := planKeys(in, cfg.Keys, "key", "group by", groupInternalf)
	if err != nil {
		return nil, err
	}
	p := &groupPlan{cfg: cfg, in: in, keyEnc: rowcodec.NewKeyEncoding(keyTypes), maxGroups: defaultMaxGroups}
	aggs, aggFields, err := planAggs(in, cfg.Aggs, groupInternalf)
	if err != nil {
		return nil, err
	}
	var resTypes []arrow.DataType
	for _, k := range aggs {
		resTypes = append(resTypes, k.out)
	}
	p.aggs = aggs
	p.resEnc = rowcodec.Encoding{Types: resTypes, Mode: rowcodec.KeyBytes}
	p.out = arrow.NewSchema(append(fields, aggFields...), nil)
	return p, nil
}
