package operators

import (
	"errors"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/clinksql/clinksql/exec"
)

// SortKey is one ORDER BY key of a Top-N.
type SortKey struct {
	Col        int
	Desc       bool
	NullsFirst bool
}

// TopNConfig is ROW_NUMBER() OVER (PARTITION BY Partition ORDER BY Order) filtered by rn <= N: the first N rows
// of each partition, as a changelog.
type TopNConfig struct {
	Partition []int
	Order     []SortKey
	N         int64
	// RankOut appends the row number (BIGINT, named RankName) to each output row.
	RankOut  bool
	RankName string
	// InputUpdating says whether the input is a changelog.
	InputUpdating bool
}

// NewTopN returns the operator factory and the output schema: the input columns, then the row number when
// RankOut. STUB: being written.
func NewTopN(cfg TopNConfig, in *arrow.Schema) (func(subtask int) exec.Operator, *arrow.Schema, error) {
	return nil, nil, errors.New("not implemented yet")
}
