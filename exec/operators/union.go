package operators

import (
	"github.com/clinksql/clinksql/exec"
)

// NewUnion returns the operator of UNION ALL: every batch of every input goes out as it is (the planner casts
// the inputs to one schema first). It keeps no state, so an unaligned barrier may overtake in-flight batches:
// the runtime captures them generically. Watermarks are the runtime's minimum over the inputs.
func NewUnion() func(subtask int) exec.Operator {
	return func(int) exec.Operator { return &union{} }
}

type union struct {
	exec.NoTimers
	exec.Stateless
}

var _ exec.Operator = (*union)(nil)

func (*union) Open(*exec.TaskContext) error { return nil }
func (*union) Process(_ int, b exec.Batch, out exec.Emitter) error {
	if b.Rows() == 0 {
		b.Release()
		return nil
	}
	return out.Emit(b)
}
