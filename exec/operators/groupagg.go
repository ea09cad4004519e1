package operators

import (
	"errors"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/clinksql/clinksql/exec"
)

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
}

// NewGroupAggregate returns the operator factory and the output schema: the key columns, then one column per
// aggregate (the window aggregate's result types). STUB: being written.
func NewGroupAggregate(cfg GroupAggConfig, in *arrow.Schema) (func(subtask int) exec.Operator, *arrow.Schema, error) {
	return nil, nil, errors.New("not implemented yet")
}
