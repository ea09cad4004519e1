// Package planner turns the parser's AST into dataflows. It owns:
//
//   - binding (bind.go, select.go, bindexpr.go): names against the catalog and the FROM scope, with Postgres-style
//     errors (SQLSTATE and the position of the offending name); Postgres semantics where MySQL differs (quoted
//     literals typed by context, integer literals INT then BIGINT then NUMERIC, unquoted names lower case);
//     views and CTEs expanded in place; window table functions and legacy GROUP BY TUMBLE/HOP/SESSION;
//   - the logical plan (logical.go): scan, filter, project, values, window assignment, and the windowed
//     aggregation with its pre-projection (keys, event time, arguments, FILTER conditions as plain columns);
//   - rewrites (rewrite.go): filters pushed below projections, projections fused, so a query over views runs as
//     one Calc after its source;
//   - column pruning (prune.go, after pushdown): every node carries only the columns read above it or by its own
//     conditions, keys and time attributes; stateful operators (joins, Top-N, aggregates) get inputs of exactly
//     those columns (a projection under them when their input has more), so their state and the exchanges before
//     them hold nothing unread; a scan of a connector that builds any subset of its columns by name (nexmark) asks
//     its source for those only (EXPLAIN: "columns: [...] (k of n)"); the WATERMARK FOR column always stays;
//   - the physical plan (physical.go, plan.go): a DAG of runtime operators with parallelism and exchanges (hash on
//     the group keys before a keyed window aggregate, rebalance into a global one, forward elsewhere), the sources
//     and sinks of the catalog's connectors, and EXPLAIN's rendering of it. A keyed node records the output
//     columns its rows are partitioned by (PNode.partitioned: an aggregate's group keys, a Top-N's partition, a
//     join's keys on a side that is never NULL-padded; a projection keeps them through plain column references),
//     and a keyed node keyed on exactly those columns at the same parallelism reads that input forward instead of
//     hashing it again (keyedInput: q9's Top-N after its join). The key group of a row is the hash of the same
//     values either way, so the downstream subtask owns every row it gets; if it ever did not, the job fails with
//     the key group. A sub-plan a statement spells twice is lowered once (reuse, as Flink's optimizer reuses
//     sub-plans): a second scan of a stream reading the same columns is the first scan's source, and an operator
//     reading the same nodes over the same exchanges, described alike by EXPLAIN (which names its whole
//     configuration), is the node already there, whose output then feeds both readers; EXPLAIN prints a shared
//     node once and "(shared, above)" where it is read again (q5's count per auction and window);
//   - DDL checks (ddl.go): column types, WITH options per connector, WATERMARK FOR (never on a PROCTIME() column);
//   - time attributes (join.go attrOf): a column is an event-time attribute (rowtime: a stream's WATERMARK FOR
//     column, an event-time window aggregate's window_end) or a processing-time attribute (proctime, isProcTime:
//     PROCTIME() as a computed column or a SELECT's column), followed down projections, filters and unions. A
//     window over a processing-time attribute is planned as a processing-time window (agg.WindowAggConfig.
//     ProcTime: no row time for the sink, its bounds no attributes downstream); the event-time constructs (OVER
//     ORDER BY, interval joins, unaggregated window TVFs) refuse one with 0A000;
//   - joins FOR SYSTEM_TIME AS OF (join.go temporalJoin, lookupJoin): over a stream of a lookup connector
//     (connectors.LookupOf) with a processing-time attribute, a lookup join (one operator after the left input,
//     its table built by the connector); otherwise an event-time temporal join, whose AS OF column must be the
//     left's rowtime and whose right side a stream or table with a WATERMARK read directly (the version time),
//     keyed on its PRIMARY KEY (every column, and only those, equated with the left) or on the equalities;
//   - tables (table.go; catalog.Object.IsTable: a stream without a connector that has a PRIMARY KEY): a scan of
//     one is updating (its log is a changelog; a bounded scan folds it into the current rows), a job may not write
//     one, and UPDATE and DELETE are bound over its columns into a TableChange (WHERE, and SET cast to each
//     column's type; a key column is not assignable, a subquery is refused) that the engine evaluates over the
//     rows it holds; INSERT INTO table SELECT is planned as an ad-hoc SELECT whose rows, cast to the table's
//     columns, the engine upserts at its end (PlanTableInsert);
//   - user-defined functions (function.go): a SQL function's call is inlined (its body bound with the arguments,
//     cast to the parameter types, standing for the parameters; the result cast to the return type; recursion
//     stops at depth 32), a wasm function's is an expr.UserCall whose module the Env gives (WasmFunctions); the
//     statement records the functions it used (Physical.Functions, ViewInfo.Functions) for the catalog's DROP
//     rules; FunctionObject checks CREATE FUNCTION (a SQL body type-checked against its parameters);
//   - system relations (system.go): clink_catalog.<name> is the snapshot Env.SystemTable gives when the
//     statement is planned, bound as constant rows (a bounded relation like VALUES); a continuous job (INSERT ...
//     SELECT, a materialized view) cannot read one (0A000), an unknown one is 42P01.
//
// Decisions: an ad-hoc SELECT is bounded (internal streams and materialized views are read as of now; a plain
// GROUP BY is one window that ends with the input), and over an unbounded source it is refused with 0A000 when
// it could never finish: without LIMIT, with ORDER BY, with an updating result, or with an aggregate that emits
// only at the end of its input (a GROUP BY, DISTINCT or aggregate without a window, whatever the LIMIT) or per
// window over a source without a watermark;
// INSERT ... VALUES into a stream is bound and evaluated in batches of ValuesBatchRows; a continuous query refuses updating results (a GROUP BY
// without a window, a window over a changelog) with 0A000 until updating operators exist; INTERVAL is a duration
// in microseconds; TIMESTAMP(p) is always microseconds.
//
// It must never run anything: it builds plans that the engine deploys, and reads the catalog without changing it.
package planner
