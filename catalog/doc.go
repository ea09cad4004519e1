// Package catalog owns the streams, sinks, views, materialized views and jobs that SQL declares, persisted under
// <data>/catalog/catalog.json (one JSON file in a checksummed frame, state.WriteFramed, rewritten with fsync +
// rename on every change, so DDL is durable when the statement returns; Missing tells a directory without one, Init
// writes a new directory's empty one), the never-reused counters of job ids and storage names (NewStorage:
// <name>-<n>, the directory of an internal stream's or materialized view's log), each job's first completed
// checkpoint (RecordCheckpoint), the SQL type names and their Arrow types and Postgres OIDs, and the DROP rules: refuse
// what a view or running job still reads and name the readers (2BP01); CASCADE drops the readers too, recursively,
// and stops their jobs. A view keeps its canonical query text and the names it reads; a job keeps the statement
// that started it and the session settings it runs with, so an engine that opens the directory re-deploys it.
//
// User-defined functions (function.go) have a namespace of their own, one function per name; views and jobs name
// the functions their plans use (Object.Functions, JobSpec.Functions), and DROP FUNCTION follows the same rules
// (2BP01 naming them; CASCADE drops them). A wasm function's module lives in <data>/functions/, named by the
// catalog with its SHA-256.
//
// It must never import exec's runtime or the planner (imports flow planner -> catalog), and it never interprets
// SQL: texts are stored, not parsed.
package catalog
