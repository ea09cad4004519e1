package engine

import (
	"context"
	"fmt"
	"slices"

	"github.com/clinksql/clinksql/catalog"
	"github.com/clinksql/clinksql/connectors"
	"github.com/clinksql/clinksql/sql/planner"
	"github.com/clinksql/clinksql/sqlerr"
)

// Streams whose sources hold something outside the engine (a PostgreSQL replication slot, which keeps WAL in the
// user's server for as long as it exists):
//
//   - one reader: a job over a SingleReader stream that a live job (running or FAILED, not dropped) already reads
//     is refused at INSERT ... SELECT, CREATE MATERIALIZED VIEW and END of a statement set (55006); deployMu
//     makes the check and the job's record one step, so two sessions cannot both pass it. A statement that reads
//     such a stream twice is refused by the planner. (An ad-hoc SELECT over a CDC stream is an unbounded updating
//     result, which the planner refuses anyway.)
//   - release: once nothing needs them, the connector (connectors.SourceReleaser) drops them: after DROP STREAM
//     removed the stream (ReleaseStream), and after DROP JOB or DROP MATERIALIZED VIEW stopped the last live job
//     reading it (ReleaseJob). The jobs are stopped first (Job.Cancel returns once their sources are closed). A
//     release that fails (the server is down, the slot still in use) does not undo the DROP: the statement
//     succeeds with a notice naming what was left behind and how to drop it by hand. Each open retries, in the
//     background, the release of every stream that a dropped job read and no live job reads (releaseDropped): a
//     server that was down at the DROP JOB, or a crash between the catalog's drop and the release, leaves the slot
//     only until the next open. (A stream dropped while its server was down is gone from the catalog: its notice
//     is all there is.)

// checkSingleReaders refuses (55006) a new reader of a SingleReader stream in reads that a live job reads.
func (e *Engine) checkSingleReaders(reads []string, what string) error {
	for _, name := range reads {
		obj, ok := e.cat.Get(name)
		if !ok {
			continue
		}
		option := planner.SingleReader(obj)
		if option == "" {
			continue
		}
		for _, j := range e.cat.Jobs() {
			if j.Stopped || !slices.Contains(j.Reads, name) {
				continue
			}
			err := sqlerr.New(sqlerr.ObjectInUse, sqlerr.NoPos,
				"stream %q is read by job %s, and its connector '%s' allows one reader at a time (its %s = '%s'); %s cannot read it too",
				name, j.ID, obj.Connector(), option, obj.Options[option], what)
			err.Hint = fmt.Sprintf("Create a second stream over the same data with its own %s and read that one, "+
				"or DROP JOB %s first.", option, j.ID)
			return err
		}
	}
	return nil
}

// releaseAfterDrop releases what the sources of the dropped streams held (ReleaseStream), and of the streams the
// stopped jobs read that no live job reads any more (ReleaseJob). It returns a notice for each release that failed.
func (e *Engine) releaseAfterDrop(ctx context.Context, dropped []*catalog.Object, stoppedJobs []string) []string {
	e.deployMu.Lock() // no new reader starts while its stream's resources go
	defer e.deployMu.Unlock()
	var notices []string
	release := func(obj *catalog.Object, what connectors.Releasing) {
		if _, err := planner.ReleaseSource(ctx, e, obj, what); err != nil {
			e.log.Warn("releasing a stream's external resources", "stream", obj.Name, "err", err)
			notices = append(notices, fmt.Sprintf("stream %q: %v", obj.Name, err))
		}
	}
	for _, obj := range dropped {
		release(obj, connectors.ReleaseStream)
	}
	for _, obj := range e.unread(stoppedJobs) {
		release(obj, connectors.ReleaseJob)
	}
	return notices
}

// unread are the streams with a connector that the jobs read and no live job reads.
func (e *Engine) unread(jobIDs []string) []*catalog.Object {
	var reads []string
	for _, id := range jobIDs {
		if spec, ok := e.cat.Job(id); ok {
			for _, r := range spec.Reads {
				if !slices.Contains(reads, r) {
					reads = append(reads, r)
				}
			}
		}
	}
	jobs := e.cat.Jobs()
	var out []*catalog.Object
	for _, name := range reads {
		obj, ok := e.cat.Get(name)
		if !ok || obj.Kind != catalog.Stream || obj.Connector() == "" {
			continue // dropped, or nothing outside the engine
		}
		if slices.ContainsFunc(jobs, func(j *catalog.JobSpec) bool { return !j.Stopped && slices.Contains(j.Reads, name) }) {
			continue // still read
		}
		out = append(out, obj)
	}
	return out
}

// releaseDropped starts the open's retry (see above), in the background, when a stream that dropped jobs read has
// a connector that holds something outside the engine and no live job reads it; Close waits for it.
func (e *Engine) releaseDropped() {
	var dropped []string
	for _, j := range e.cat.Jobs() {
		if j.Dropped {
			dropped = append(dropped, j.ID)
		}
	}
	if !slices.ContainsFunc(e.unread(dropped), func(o *catalog.Object) bool {
		c, ok := connectors.LookupSource(o.Connector())
		_, releases := c.(connectors.SourceReleaser)
		return ok && releases
	}) {
		return
	}
	e.sweep.Add(1)
	go func() {
		defer e.sweep.Done()
		e.releaseAfterDrop(e.ctx, nil, dropped) // failures are logged
	}()
}
