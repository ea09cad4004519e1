// Package engine is the one way statements run: the REPL, `clinksql exec`, pgwire and the tests all open an
// Engine on a data directory, start Sessions, and hand them SQL. It owns the data directory (a lock file keeps a
// second process out), the catalog, the logs of internal streams and materialized views, the running jobs and
// their re-deployment at open, ad-hoc SELECTs (run as bounded dataflows in a scratch directory, with the client as
// sink), FLUSH, SHOW/DESCRIBE/EXPLAIN, DROP, and the session variables (SET), of which the job settings
// (checkpoint.interval, checkpoint.mode, parallelism, errors.mode) apply to jobs started afterwards.
//
// Results leave as Postgres text forms (operators.TextRows), NULL as nil, so every front end prints the same
// values. A SELECT streams its rows to the caller's RowWriter (Run, RunStmt, RunPrepared) batch by batch as its
// dataflow produces them, unless its result is final only at its end (ORDER BY, an updating result): those are
// kept, up to max_result_memory (53200 past it). Session limits (settings.go): statement_timeout (57014),
// max_statement_size (54000, checked before parsing), max_result_memory. Errors are *sqlerr.Error with positions into the text given to Execute.
//
// Decisions: INSERT INTO <internal stream> VALUES appends one durable segment before it returns (no job);
// INSERT ... SELECT and CREATE MATERIALIZED VIEW start a job and return its id at once; a bounded job that
// finished is not re-deployed. Close stops jobs with a final checkpoint, so the next open resumes exactly.
//
// It must never hold a lock while waiting on a job, and never bypass the planner to build a dataflow.
package engine
