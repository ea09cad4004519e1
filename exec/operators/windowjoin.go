package operators

import (
	"errors"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/clinksql/clinksql/exec"
)

// NewWindowJoin returns the operator factory and its output schema (JoinOutputSchema). STUB: being written.
func NewWindowJoin(cfg WindowJoinConfig) (func(subtask int) exec.Operator, *arrow.Schema, error) {
	return nil, JoinOutputSchema(cfg.Left, cfg.Right), errors.New("not implemented yet")
}
