package operators

import (
	"errors"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/clinksql/clinksql/exec"
)

// NewIntervalJoin returns the operator factory and its output schema (JoinOutputSchema). STUB: being written.
func NewIntervalJoin(cfg IntervalJoinConfig) (func(subtask int) exec.Operator, *arrow.Schema, error) {
	return nil, JoinOutputSchema(cfg.Left, cfg.Right), errors.New("not implemented yet")
}
