// Package operators holds the generic operators of the dataflow over Arrow batches (projection, filter, union,
// row kinds, watermarks) and the sources (files, internal streams) and sinks (files, Parquet, internal streams) not
// yet in their connector packages (package connectors). The aggregates, windows and Top-N are package exec/agg, the
// joins exec/join, the canonical key and row bytes they share exec/rowcodec. The runtime in package exec drives them
// all through exec.Operator, exec.Source and exec.Sink.
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
// # Connector configuration and confinement
//
// Each connector reads its WITH options in one function (FileSourceConfigFromOptions, FileSinkConfigFromOptions,
// ParquetSinkConfigFromOptions, GeneratorConfigFromOptions, NexmarkConfigFromOptions) and has one validation hook
// for what the options alone cannot tell (ValidateFileSource, ValidateParquetSource, ValidateFileSink,
// ValidateParquetSink: files that exist, types the format carries or the files hold). Both report a *ConfigError
// with its SQLSTATE and the option or column at fault, which the planner turns into the CREATE statement's error
// at that position. The file connectors hold a PathGuard (the engine's confinement, symbolic links resolved) and
// call it on every file a listing names and again when they open or create a file, so a link swapped in after
// CREATE cannot lead out.
//
// # Parquet source
//
// NewParquetSource is bounded. Its path is a directory (the *.parquet files directly in it; names starting with
// '.' or '_', such as _staging, are skipped), a glob such as P/*.parquet (a wildcard does not match a leading '.'
// or '_' either) or a single file. The list is made once at Open and sorted by path; subtask k of p reads files
// k, k+p, ... whole and in order, then finishes. Schema columns are matched to top-level Parquet columns by name;
// Open checks every file of the subtask and fails on a missing column or a type that does not convert. A file that
// is not Parquet fails Produce when the read reaches it, naming the file. Its offset is (file index, rows of it
// produced) plus the list's size and a fingerprint of its names and sizes; a restore at another parallelism or
// over a changed list fails instead of skipping or repeating rows.
//
// Reading inverts the sink's mapping exactly, and accepts other writers' files when the logical type matches
// without loss: integers widen (signed or unsigned into a wider signed type), FLOAT into DOUBLE, un-annotated
// BYTE_ARRAY into VARCHAR if it is UTF-8, any BYTE_ARRAY or FIXED_LEN_BYTE_ARRAY into VARBINARY, TIMESTAMP of any
// unit and legacy INT96 into any timestamp unit (finer units floored; overflow is an error), DECIMAL on any physical
// type into a DECIMAL with at least its scale and integer digits. The isAdjustedToUTC flag is not checked against
// the Arrow time zone. Nested and repeated columns are not read.
//
// # Text forms
//
// CSV and JSON lines carry values in the text forms Postgres prints (package exec/textform): integers in decimal; REAL and
// DOUBLE as float4out/float8out do since Postgres 12 (shortest round-trip digits, scientific notation from
// exponent 6 for REAL and 15 for DOUBLE or below -4: 1.5, 1e+20, 1e-05, NaN, Infinity); BOOLEAN t/f; TIMESTAMP
// 2026-01-01 00:00:01.5 (microseconds at most, no trailing zeros, nanoseconds truncated); DATE 2026-01-01;
// DECIMAL with exactly its scale; BYTEA \x hex; INTERVAL in the postgres IntervalStyle. CSV follows COPY ... CSV:
// NULL is an empty field, an empty string is "", a header line only with 'csv.header'. JSON lines hold one object
// per row with NULL as null, numbers and booleans as JSON values and the other types as strings in their text
// form.
//
// # Stream logs
//
// A Log (streamlog.go) stores an internal stream or a materialized view's changelog: immutable Arrow IPC segments
// seg-<seq>[-<txn>].arrow with a row-kind column, each framed with a checksum (state.FrameWriter), numbered
// without gaps, the highest published one recorded in LAST (CreateLog makes a log, OpenLog refuses one with a
// segment or LAST missing). INSERT ... VALUES appends a durable segment at once; a job's
// LogSink is the two-phase protocol of package connectors/txnfile with a commit that renames the staged transaction in as the next
// segment. A LogSource reads segments in order from its offset (segment, batch), follows new ones (waking on
// IdleWait rather than polling), or, bounded, stops at the segments present at Open; Consolidate folds a changelog
// into the rows it leaves (an ad-hoc SELECT of a materialized view). Its Progress lets FLUSH wait until a job has
// read everything committed before it checkpoints. WithWatermark wraps any source with a WATERMARK FOR
// expression, keeping the running maximum in the offset.
//
// # Calc, union, values, results
//
// NewCalc evaluates a filter and a projection of exec/expr expressions over whole batches (row kinds follow the
// rows). NewUnion forwards the batches of all its inputs; NewRowKindColumn turns row kinds into a column.
// NewBatchSource emits constant rows (VALUES). ResultSink
// hands an ad-hoc SELECT's batches to the engine as they come; it is not two-phase, and a SELECT is never
// restarted.
//
// # File sources (CSV, JSON lines)
//
// NewFileSource (filesource.go) reads back exactly what NewFileSink writes, and other writers' files in the same
// forms. Its path is listed as the Parquet source's is, except that a directory means every regular file directly
// in it whatever its extension (names starting with '.' or '_' skipped); the list is sorted by path. CSV follows
// Postgres' COPY ... CSV: fields by position; an unquoted empty field is NULL, a quoted one ("") the empty string;
// a quote anywhere in a field opens a quoted part in which "" is a quote and newlines are data; records end at \n
// or \r\n; a last line may lack its newline; with a header the first record of every file is skipped. JSON lines:
// one object per line, keys matched to columns exactly or else case-insensitively (the last key naming a column
// wins), missing keys and null are NULL, unknown keys ignored, numbers and true/false taken as their text, nested
// values as their JSON text; blank lines are skipped. A batch never spans files. Values are converted column at a
// time: a batch's texts are gathered into one string array per column, then read with the engine's own input
// functions (CAST from text for integers, REAL, DOUBLE, BOOLEAN, DECIMAL, BYTEA; expr.ParseTimestamp/ParseDate/
// ParseInterval rounded to the column's unit; VARCHAR checked to be UTF-8).
//
// A bad row (wrong field count, unterminated quote, a line that is not one JSON object, a value that does not
// parse, invalid UTF-8, NULL in a NOT NULL column) is, with BadRowsSkip (the default), counted once in
// TaskContext.Errors, skipped, and logged at most once per file with its file, line and column; with BadRowsFail,
// Produce returns a *sqlerr.Error of class 22 (22P04 record format, the value's own 22P02/22003/22007/22008,
// 22021 encoding, 22004 NOT NULL) reading "file source: <file>:<line>: column "<c>": ...", which the runtime
// treats as permanent. Lines are the 1-based physical lines where records start.
//
// Bounded (the default), the list is made at Open and subtask k of p reads files k, k+p, ...; the offset is (file
// index, byte offset of the next record, its line) plus the list's size and fingerprint (names and sizes), and a
// restore at another parallelism or over a changed list fails. Following ('source.monitor-interval'), the path is
// listed again every interval; a file belongs to subtask FNV-1a(path) mod p, stable as the list grows; each
// subtask reads its new files whole, in name order; the offset is the file being read (name, byte offset, line)
// and, front-coded, the subtask's files read to the end, pruned at each listing to those still listed, so it is
// as large as the directory, not the job's history (a file deleted and re-created under its name is read again).
// Produce is Idle between listings and IdleWait fires when the next is due. A file must be complete when it
// appears: writers create it under a hidden name or elsewhere and rename it in, as the file sink's commit does; a
// file appended to in place may be read partially. A listed file deleted before it was read is skipped with a
// warning. The Parquet source stays bounded.
package operators
