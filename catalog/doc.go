// Package catalog will own the streams, sinks, views, materialized views and jobs that SQL declares, persisted
// under <data>/catalog/, and the DROP rules (refuse what a job or view still reads; CASCADE drops the readers).
// Nothing is built here yet: the SQL front end is the next issue. It must never import exec's runtime internals or
// the planner (imports flow planner -> catalog).
package catalog
