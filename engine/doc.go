// Package engine is the one way statements run: the REPL, `clinksql exec`, pgwire and the tests all open an
// Engine on a data directory, start Sessions, and hand them SQL. It owns the data directory (a lock file keeps a
// second process out), the catalog, the logs of internal streams and materialized views, the running jobs and
// their re-deployment at open, ad-hoc SELECTs (run as bounded dataflows in a scratch directory, with the client as
// sink), FLUSH, SHOW/DESCRIBE/EXPLAIN, DROP, and the session variables (SET), of which the job settings
// (checkpoint.interval, checkpoint.mode, parallelism, errors.mode) apply to jobs started afterwards.
//
// Every job reads the engine's one processing-time clock (testclock.go): the wall clock, unless a test set it with
// SET testing.processing_time = '<UTC timestamp>', which switches every job to a hand-moved exec.ManualClock and
// is kept in <data>/testing-processing-time so that a restart redeploys the jobs on it. Only an engine opened with
// Config.Testing (serve --testing) takes the setting or opens a directory that has that file.
//
// Results leave as Postgres text forms (textform.Rows), NULL as nil, so every front end prints the same
// values. A SELECT streams its rows to the caller's RowWriter (Run, RunStmt, RunPrepared) batch by batch as its
// dataflow produces them, unless its result is final only at its end (ORDER BY, an updating result): those are
// kept, up to max_result_memory (53200 past it). Session limits (settings.go): statement_timeout (57014),
// max_statement_size (54000, checked before parsing), max_result_memory. Errors are *sqlerr.Error with positions into the text given to Execute.
//
// Decisions: INSERT INTO <internal stream> VALUES appends one durable segment before it returns (no job), and
// one over 1 MB sent alone is parsed and bound in pieces of 4096 rows (insertInPieces) so that its memory is a
// small multiple of its text;
// INSERT ... VALUES (or a one-off INSERT ... SELECT, run as an ad-hoc SELECT and gathered) into a table (a stream
// without a connector that has a PRIMARY KEY), UPDATE and DELETE go
// through the table's streamlog.Table (table.go): its current rows, folded from its log at the table's first
// statement after an open, from which each statement computes its changes and appends them as one durable segment
// before it returns (a failed statement changes nothing; statements on one table are serialized); DROP and Close
// release the rows;
// INSERT ... SELECT and CREATE MATERIALIZED VIEW start a job and return at once with their command tag and the
// job's id as a notice ("started job job-3"); a bounded job that finished is not re-deployed, nor is a FAILED one
// (the catalog records its failure; FLUSH fails while it is FAILED; ALTER JOB <id> RESUME restarts it from its
// last completed checkpoint, jobs.go). Connector paths (Path, Confine) are confined to the data directory, minus
// its own entries, and the allowed directories, with every symbolic link resolved and every file a glob names
// checked. Close stops jobs with a final checkpoint, so the next open resumes exactly. What a stream's source holds
// outside the engine (a replication slot) is released by its connector (connectors.SourceReleaser) after DROP
// STREAM and after the DROP of the last live job reading it, its jobs stopped first; a failed release is a NOTICE,
// the DROP stands, and a dropped job's is retried at the next open; a second job over a SingleReader stream is
// refused (55006) (release.go).
//
// While FLUSH (and WaitBounded) wait on a job longer than Config.ProgressInterval (default 5 s), they report its
// progress every interval (Progress: rows its sources read, their rate, the total or the lag where the sources know
// it) to the session's notice handler (Session.SetNoticeHandler), from the statement's own goroutine; pgwire sends
// each at once as a NoticeResponse, the REPL and exec print it. Without a handler nothing is reported.
//
// At open it refuses a data directory that contradicts its catalog (checkLayout: a missing catalog beside jobs or
// logs, a job or log directory the catalog does not name, a named log that is gone), with a *state.CorruptError
// naming the catalog (XX001). A job that cannot be re-deployed shows FAILED in SHOW JOBS with why.
//
// What it shows of its jobs has one source (observe.go: JobInfos, OperatorInfos, EdgeInfos, CheckpointInfos, Ready):
// SHOW JOBS, SHOW CHECKPOINTS, EXPLAIN ANALYZE, the HTTP API and the system relations clink_catalog.jobs, operators,
// edges and checkpoints (systables.go: one column per JSON field of those types, a snapshot the planner takes
// through Env.SystemTable when it plans a SELECT) all read it. clink_catalog.functions and subscriptions are built
// the same way from FunctionInfos and SubscriptionInfos.
//
// PlanJob is the one way a job's statement is planned again (its re-deployment, and clinksql state-cat, which plans
// against PlanOnlyEnv: the catalog alone, no engine, no lock, no log opened).
//
// SUBSCRIBE (subscribe.go, docs/subscribe.md) streams a materialized view's snapshot and then its changes, stamped
// with the view job's checkpoint ids (mz_timestamp; the job's exec.JobConfig.AfterCommit advances the view log's
// frontier), from the view's committed changelog (streamlog.Tail), so a job never waits for a subscriber; one
// that falls behind by more than max_subscribe_lag is cut off (53400). Over a query, a stream or a plain view it
// runs a temporary materialized view owned by the subscription. Rows go to the statement's RowWriter until
// cancel, to a CopyWriter for COPY (...) TO STDOUT, or through cursors (DECLARE, FETCH [WITH (timeout)], CLOSE;
// they end with their transaction and with Session.Close). DROP and Close end subscriptions.
//
// It must never hold a lock while waiting on a job, and never bypass the planner to build a dataflow.
package engine
