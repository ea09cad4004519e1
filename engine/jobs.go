package engine

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/sql/parser"
	"github.com/clinksql/clinksql/sqlerr"
)

// A FAILED job (its restart budget exhausted, or an error no restart cures) stays FAILED: the catalog records the
// failure, the next open does not re-deploy it, FLUSH reports it, and ALTER JOB <id> RESUME restarts it from its
// last completed checkpoint.

// failureOf is how SHOW JOBS and the catalog word a job's failure, and its SQLSTATE (sqlerr.As: 53100 for a full
// disk, XX000 when the error carries none).
func failureOf(st exec.JobStatus) (reason, code string) {
	return fmt.Sprintf("%s: %v", st.FailedOperator, st.Err), sqlerr.As(st.Err).Code
}

// failedJobError is FLUSH's error for a FAILED job: the job's id and its error. The SQLSTATE is the job error's own
// when it has one (a division by zero under errors.mode = 'fail' is 22012, a full disk 53100), else 55000
// object_not_in_prerequisite_state: an internal error of the job is not the FLUSH statement's.
func failedJobError(id, reason, code string) *sqlerr.Error {
	if code == "" || code == sqlerr.InternalError {
		code = sqlerr.InvalidJobState
	}
	e := sqlerr.New(code, sqlerr.NoPos, "FLUSH: job %s failed: %s", id, reason)
	e.Hint = fmt.Sprintf("ALTER JOB %s RESUME restarts it from its last checkpoint; DROP JOB %s drops it.", id, id)
	return e
}

// failed is FLUSH's error for j if it ended FAILED, else nil.
func (j *runningJob) failed() error {
	select {
	case <-j.job.Done():
	default:
		return nil
	}
	st := j.job.Status()
	if st.State != exec.JobFailed {
		return nil
	}
	reason, code := failureOf(st)
	return failedJobError(j.spec.ID, reason, code)
}

// recordFailure makes a job's failure durable, so that the next open leaves it FAILED instead of re-deploying it.
func (e *Engine) recordFailure(id string, st exec.JobStatus) {
	reason, code := failureOf(st)
	if err := e.cat.FailJob(id, reason, code); err != nil {
		e.log.Error("recording a failed job", "job", id, "err", err)
	}
}

// alterJob runs ALTER JOB id RESUME: a FAILED job restarts from its last completed checkpoint.
func (s *Session) alterJob(st *parser.AlterJob) (*Result, error) {
	spec, ok := s.e.cat.Job(st.ID)
	if !ok || spec.Dropped {
		return nil, sqlerr.New(sqlerr.UndefinedObject, st.IDP, "job %q does not exist", st.ID)
	}
	s.e.mu.Lock()
	rj := s.e.jobs[spec.ID]
	s.e.mu.Unlock()
	if rj != nil {
		select {
		case <-rj.job.Done():
			<-rj.settled // its failure is in the catalog
		default:
			return nil, sqlerr.New(sqlerr.InvalidJobState, st.IDP, "job %s is %s; only a FAILED job can be resumed",
				spec.ID, rj.job.Status().State)
		}
		spec, _ = s.e.cat.Job(st.ID)
	}
	if spec.Failed == "" {
		return nil, sqlerr.New(sqlerr.InvalidJobState, st.IDP, "job %s has not failed; only a FAILED job can be resumed", spec.ID)
	}
	if err := s.e.cat.ResumeJob(spec.ID); err != nil {
		return nil, err
	}
	s.e.log.Info("job resumed", "job", spec.ID, "failure", spec.Failed)
	if err := s.e.redeploy(spec); err != nil {
		// It cannot even be planned again (what it reads is gone): it stays FAILED, with this reason.
		if ferr := s.e.cat.FailJob(spec.ID, "deploy: "+err.Error(), sqlerr.Code(err)); ferr != nil {
			s.e.log.Error("recording a failed job", "job", spec.ID, "err", ferr)
		}
		return nil, err
	}
	return &Result{Tag: "ALTER JOB"}, nil
}

// errorsOnly passes on ERROR records and drops the rest. An ad-hoc SELECT's dataflow is a job to the runtime,
// but not to the user: its start, end and failure (a LIMIT reached, a division by zero) are the statement's
// result or error, already the client's; only a malfunction of the engine is worth the server's log.
type errorsOnly struct{ slog.Handler }

func (h errorsOnly) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelError && h.Handler.Enabled(ctx, l)
}
func (h errorsOnly) WithAttrs(as []slog.Attr) slog.Handler {
	return errorsOnly{h.Handler.WithAttrs(as)}
}
func (h errorsOnly) WithGroup(n string) slog.Handler { return errorsOnly{h.Handler.WithGroup(n)} }
