// Package planner will own binding, type checking with Postgres-style errors, the logical plan and its rewrites,
// and the physical plan: an exec.Graph with parallelism and exchanges, which EXPLAIN prints. Not built yet (the
// SQL issue).
package planner
