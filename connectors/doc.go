// Package connectors is the registry of the connectors that streams read from and sinks write to, and the
// contract each one keeps: one small interface per direction (Source, Sink). A connector is one package
// (connectors/datagen, connectors/file, ...) that registers itself from init; connectors/all imports every one,
// and the planner imports connectors/all and looks connectors up by name (LookupSource, LookupSink). The planner
// never switches on a connector's name. A source connector whose streams are tables of an external system read by
// key also implements Lookup (lookup.go; LookupOf finds it): a lookup join queries it per batch, and its Build
// refuses a scan.
//
// A connector declares:
//
//   - its name (the 'connector' option) and the WITH options it knows (OptionNames: exact names, and prefixes of
//     families such as 'fields.' that it checks itself). CheckOptions refuses any other name at CREATE with the
//     list of the known ones (22023 at the option);
//   - Validate, run at CREATE after CheckOptions: a bad value is a *ConfigError with 22023 and the option, a
//     column the connector cannot carry 42804 and the column, so the planner reports it at that position in the
//     statement;
//   - its capabilities: bounded (given the options), parallel splits, replayable offsets, commit recoverable or
//     not, changelog support;
//   - Build: from the object (Spec: name, Arrow schema, column definitions, primary key), its options and an Env
//     (path resolution and confinement, Restoring, parallelism), a factory per subtask, the node's parallelism,
//     whether it is bounded, and the node's EXPLAIN lines.
//
// The packages under it:
//
//   - one per connector, registered: blackhole, datagen, file (CSV and JSON lines), nexmark, parquet;
//   - streamlog, the storage of internal streams and materialized views, with its source and sink: the planner
//     uses it for those objects (through its Env.Log), so it is not registered and no WITH names it;
//   - txnfile, the two-phase-commit file protocol of the file, Parquet and stream log sinks (partitioned ones
//     too: PARTITIONED BY, Spec.PartitionKeys, SinkCapabilities.Partitioned), and filelist, the
//     listing of a file or Parquet source's path and its place in the list;
//   - internal/gen, what the generators share; connectortest, what the connectors' tests share; all, the list of
//     registered connectors.
//
// The package also holds what connectors share: ConfigError and its constructors, PathGuard, SortedOptions and
// ParseBool for reading options, the task-context helpers of sources (CheckSubtask, TaskFS, TaskAlloc,
// RestoreOffset, CheckOffsetSubtask), and ReadProgress and Committed, which a source or sink embeds to report its
// progress (exec.SourceProgress: records and bytes behind the end, total rows of a bounded input; exec.SinkProgress:
// bytes its commits published) to the runtime's other goroutines.
//
// # What a connector must never do
//
//   - Have a test-only code path: tests run the connector as the engine does (fault injection goes through the
//     task's state.FS, not through flags).
//   - Publish before commit: a sink stages a checkpoint's rows at PreCommit and makes them visible only in Commit,
//     after the COMPLETED marker is durable; Commit must be idempotent, and if it cannot be re-executed after a
//     crash the sink says so (SinkCapabilities.CommitRecoverable false).
//   - Touch a file except through the task's state.FS, or outside what its PathGuard allows: it calls the guard on
//     every file a listing names and again right before it opens or creates one.
//   - Refuse at run time what Validate could have refused at CREATE, or accept at CREATE what no job can run.
//   - Use a stateful random stream or wall-clock time in what it produces: a replay from a restored offset must
//     reproduce the same rows.
//   - Hold on to a batch after handing it on or releasing it; every Arrow allocation goes through
//     TaskContext.Alloc.
package connectors
