package operators

import "github.com/clinksql/clinksql/exec"

// ResultSink hands every batch of an ad-hoc SELECT to a function as it arrives, so rows (and a LIMIT) stream
// before any checkpoint. It is not two-phase: a SELECT job is never restarted (its restart budget is zero), so
// nothing is delivered twice.
type ResultSink struct {
	fn func(exec.Batch) error
}

// NewResultSink returns a sink calling fn with each batch; fn takes over the batch's reference.
func NewResultSink(fn func(exec.Batch) error) *ResultSink { return &ResultSink{fn: fn} }

func (s *ResultSink) Open(*exec.TaskContext) error { return nil }
func (s *ResultSink) Write(b exec.Batch) error {
	if b.Rows() == 0 {
		b.Release()
		return nil
	}
	return s.fn(b)
}
func (s *ResultSink) PreCommit(uint64) error { return nil }
func (s *ResultSink) Commit(uint64) error    { return nil }
func (s *ResultSink) Abort(uint64) error     { return nil }
func (s *ResultSink) Close() error           { return nil }
