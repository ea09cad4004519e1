// Package file is connector = 'file': CSV and JSON-lines files, read by a source (once, or following a directory
// as files appear) and written by a two-phase-commit sink (one file per subtask and checkpoint, on the protocol of
// package connectors/txnfile; a partitioned sink, PARTITIONED BY, one per partition too, without the partition
// columns: txnfile.PartitionedSink). The listing of a source's path and its place in the list are package
// connectors/filelist's.
//
// # Text forms
//
// NewSink writes CSV and JSON lines with values in the text forms Postgres prints (package exec/textform): integers in
// decimal; REAL and DOUBLE as float4out/float8out do since Postgres 12 (shortest round-trip digits, scientific notation
// from exponent 6 for REAL and 15 for DOUBLE or below -4: 1.5, 1e+20, 1e-05, NaN, Infinity); BOOLEAN t/f; TIMESTAMP
// 2026-01-01 00:00:01.5 (microseconds at most, no trailing zeros, nanoseconds truncated); DATE 2026-01-01; DECIMAL with
// exactly its scale; BYTEA \x hex; INTERVAL in the postgres IntervalStyle. CSV follows COPY ... CSV: NULL is an empty
// field, an empty string is "", a header line only with 'csv.header'. JSON lines hold one object per row with NULL as
// null, numbers and booleans as JSON values, a ROW as an object, an ARRAY as an array and a MAP as an object keyed
// by its keys' text (as Postgres' to_json), and the other types as strings in their text form; CSV writes a nested
// value in its Postgres text form. The source does not read nested columns.
//
// # File sources (CSV, JSON lines)
//
// NewSource (source.go) reads back exactly what NewSink writes, and other writers' files in the same
// forms. Its path is listed as the Parquet source's is, except that a directory means every regular file directly
// in it whatever its extension (names starting with '.' or '_' skipped); the list is sorted by path. CSV follows
// Postgres' COPY ... CSV: fields by position; an unquoted empty field is NULL, a quoted one ("") the empty string;
// a quote anywhere in a field opens a quoted part in which "" is a quote and newlines are data; records end at \n
// or \r\n; a last line may lack its newline; with a header the first record of every file is skipped. JSON lines:
// one object per line, keys matched to columns exactly or else case-insensitively (the last key naming a column
// wins), missing keys and null are NULL, unknown keys ignored, numbers and true/false taken as their text, nested
// values as their JSON text; blank lines are skipped. A batch never spans files. Values are converted column at a
// time: a batch's texts are gathered per column (in buffers kept from batch to batch; a VARCHAR column's are
// copied out as the batch's column), then read with the engine's own input functions (CAST from text for
// integers, REAL, DOUBLE, BOOLEAN, DECIMAL, BYTEA; expr.ParseTimestamp/ParseDate/ParseInterval rounded to the
// column's unit; VARCHAR checked to be UTF-8). Shortcuts that must give the same values: BIGINT texts that are all
// plain digits skip the CAST, timestamps in the sinks' form skip the general parser.
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
package file
