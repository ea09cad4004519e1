// Package txnfile is the two-phase-commit protocol the file sinks share (CSV and JSON lines, Parquet, and the
// stream log's segments): an Encoder turns a transaction's batches into one file's bytes, and Sink stages and
// commits the files.
//
// # Sink file layout
//
// For a sink with path P, job J, operator O, subtask S:
//
//	P/J-O-S-N.ext                    committed: the rows subtask S wrote between barriers N-1 and N
//	P/_staging/J/J-O-S-N.ext         staged: sealed at barrier N, waiting for checkpoint N to complete
//	P/_staging/J/J-O-S.inprogress    the transaction being written (never read)
//
// ext is csv, json or parquet. J and O go in as they are: names are [A-Za-z0-9._-] only, and Open refuses ids
// whose names could meet (checkNameIDs: a job id is a word with at most one -<digits> at its end, an operator id
// starts with a letter), so the last two '-' fields are S and N and no J- starts another job's name. Open also
// recovers what versions before issue 11 staged under their escaped names (P/_staging/job%2D1/job%2D1-sink-0-5.ext),
// committing a completed one under the name it was staged with. N is the checkpoint id in decimal; a transaction
// without rows leaves no file. The staging directory starts with '_' so Parquet readers
// and globs such as read_parquet('P/*.parquet') skip it.
//
//   - Write appends to the in-progress file (buffered).
//   - PreCommit(N) finishes the file (a Parquet footer), fsyncs it, renames it to its staged name and fsyncs the
//     staging directory. Any failure fails the checkpoint; nothing reaches P.
//   - Commit(N) renames every staged file of the subtask with an id <= N into P without replacing, then fsyncs
//     P. A target that exists already was committed by an earlier attempt: the staged copy is deleted.
//   - Abort(N) deletes staged file N. Commit and Abort are idempotent and may run concurrently with Write.
//   - Open recovers: every staged file of the subtask is committed if its checkpoint is completed and deleted
//     otherwise, and its in-progress file is deleted. Subtask 0 also recovers the files of subtasks at or above
//     the current parallelism, left by an incarnation that ran wider.
//
// A partitioned sink (PARTITIONED BY) is PartitionedSink (partitioned.go), the same protocol over one file per
// partition: rows go into Hive-style directories P/key=value/... (partition.go: Hive's escapes, the default
// partition, the partition's time), each subtask stages under its own P/_staging/J/J-O-S/, a file name carries a
// file number after the checkpoint id (J-O-S-N-K.ext), and partitions are committed (a _SUCCESS file) once every
// subtask committed their files and the trigger holds (exec.CommitFinisher); the partitions waiting for it are in
// the subtask's checkpointed state.
//
// CLINK_STATE_FSYNC=0 turns the fsyncs off (benchmarks only), as for state snapshots.
package txnfile
