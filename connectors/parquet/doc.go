// Package parquet is connector = 'parquet': a bounded source over Parquet files and a two-phase-commit sink that
// writes one complete Parquet file per subtask and checkpoint (NewSink, on the protocol of package
// connectors/txnfile: a file is footed and fsync'd before it is staged, and visible only once its checkpoint
// completed). The sink's option is 'parquet.compression'; a partitioned sink (PARTITIONED BY) also takes the
// partition options and writes one file per partition (txnfile.PartitionedSink), without the partition columns,
// as Flink and Hive write Parquet partitions: readers take them from the directory names. The listing of a source's path and its place in the
// list are package connectors/filelist's.
//
// # Parquet source
//
// NewSource is bounded. Its path is a directory (the *.parquet files directly in it; names starting with
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
// the Arrow time zone. Nested columns (ROW, ARRAY, MAP) are assembled from their leaves' repetition and definition
// levels (nestedread.go), from the sink's files and other writers'; the file's own markings give the levels, never
// the declared type.
//
// # Nested columns in the sink
//
// nested.go: a ROW is a group of its fields in their order, an ARRAY the LIST logical type in the 3-level form, a
// MAP the MAP logical type (key required, value optional), nesting freely; each leaf is a Parquet column, written
// from values with repetition and definition levels that the sink computes from the Arrow arrays.
package parquet
