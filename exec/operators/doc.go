// Package operators holds the generic operators of the dataflow over Arrow batches (projection, filter, union,
// row kinds), the sources and sinks that are not connectors (VALUES, an ad-hoc SELECT's results, the watermark
// wrapper every source gets for its stream's WATERMARK clause) and CollectSink, a test tool. The aggregates, windows
// and Top-N are package exec/agg, the joins exec/join, the canonical key and row bytes they share exec/rowcodec; the
// connectors that streams read and sinks write are in package connectors and its sub-packages. The runtime in
// package exec drives them through exec.Operator, exec.Source and exec.Sink.
//
// # What operators must never do
//
//   - Publish output before the checkpoint that produced it completed. A sink stages a transaction at the
//     barrier (PreCommit) and makes it visible only in Commit, after the COMPLETED marker is durable.
//   - Overwrite a committed file, or let a failed write leave bytes under a committed name. Commits are renames
//     that refuse an existing target (state.FS.RenameNoReplace).
//   - Touch the file system except through the state.FS of their TaskContext, so tests can inject faults.
//   - Box values per row on a hot path: work column at a time over Arrow buffers, with one type switch per
//     column and batch. (CollectSink, a test tool, is the exception and says so.)
//   - Hold on to a batch after handing it on or releasing it; every Arrow allocation goes through
//     TaskContext.Alloc so tests can check for leaks.
//   - Use a stateful random stream in a source: a replay from a restored offset must reproduce the same rows.
//
// # Calc, union, values, results, watermarks
//
// NewCalc evaluates a filter and a projection of exec/expr expressions over whole batches (row kinds follow the
// rows). NewUnion forwards the batches of all its inputs; NewRowKindColumn turns row kinds into a column.
// NewBatchSource emits constant rows (VALUES). ResultSink hands an ad-hoc SELECT's batches to the engine as they
// come; it is not two-phase, and a SELECT is never restarted. WithWatermark wraps any source with a WATERMARK FOR
// expression, keeping the running maximum in the offset.
package operators
