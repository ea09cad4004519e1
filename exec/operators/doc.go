// Package operators holds the operators of the dataflow over Arrow batches (projection, filter, windows, joins,
// union), the sources and sinks that are not connectors (VALUES, an ad-hoc SELECT's results, the watermark wrapper
// every source gets for its stream's WATERMARK clause) and CollectSink, a test tool. The connectors that streams
// read and sinks write are in package connectors and its sub-packages. The runtime in package exec drives them
// through exec.Operator, exec.Source and exec.Sink.
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
// # Calc, window assignment, values, results, watermarks
//
// NewCalc evaluates a filter and a projection of exec/expr expressions over whole batches (row kinds follow the
// rows). NewWindowAssign appends window_start/window_end to every row once per TUMBLE, HOP or CUMULATE window it
// falls in (a window table function without GROUP BY). NewBatchSource emits constant rows (VALUES). ResultSink
// hands an ad-hoc SELECT's batches to the engine as they come; it is not two-phase, and a SELECT is never
// restarted. WithWatermark wraps any source with a WATERMARK FOR expression, keeping the running maximum in the
// offset.
//
// # Window aggregate
//
// NewWindowAggregate (window*.go) computes GROUP BY window_start, window_end[, keys] over TUMBLE, HOP, CUMULATE
// and SESSION with COUNT, COUNT(*), COUNT(DISTINCT), SUM, MIN, MAX, AVG and FILTER (WHERE ...); the contract,
// the window definitions and the result types are in window.go. It owns:
//
//   - its working set: one accumulator per (window, key) in memory, kept column-wise per aggregate and indexed by
//     a dense group id, found through a Go map per window (int64 keys) or by canonical key bytes;
//   - its keyed state: at each barrier it writes the accumulators changed since the previous one under
//     KeyedKey(key group, 1, window_end window_start key), deletes those of fired or merged-away windows, and
//     stores the watermark under OperatorKey("window/wm"); Open rebuilds the working set by a Scan of its key
//     groups;
//   - firing: at a watermark, every window with end <= watermark is emitted (ordered by window_end,
//     window_start, key bytes) and forgotten; late rows are counted in TaskContext.Late, NULL event times in
//     TaskContext.Errors.
//
// It must never:
//
//   - touch the state backend per row: only Open, OnBarrier (and nothing else) read or write it;
//   - emit a window before the watermark reaches its end, or again after a restore (the watermark is state);
//   - accept a row of a key group it does not own (that is a routing bug: it fails the job), or hash keys any
//     other way than exec.HashKeys, which the hash exchange routes with;
//   - treat an updating input as append-only: a row kind other than Insert fails the operator;
//   - turn an overflow into a wrong number: SUM(int) past BIGINT and decimal results past 38 digits are
//     SQLSTATE 22003 errors; a float SUM or AVG whose finite sum reaches an infinity follows WindowAggConfig.Mode
//     (22003, or the result NULL and counted in TaskContext.Errors).
//
// Not yet: Flink's slice sharing for HOP/CUMULATE (a row is added to each of its windows, size/slide updates per
// row), per-key early firing, allowed lateness, and retracting input.
//
// # Canonical bytes
//
// Keyed operators name keys by key bytes and keep rows as row bytes (window_keys.go). Key bytes compare as SQL
// does (-0 = 0, one NaN); row bytes keep a float -0, so a retraction names exactly the row that was emitted and a
// value prints as it was written. A group keeps its first row's spelling of its key where that differs (-0).
//
// # Group aggregate and Top-N
//
// NewGroupAggregate (groupagg*.go) computes GROUP BY without a window and SELECT DISTINCT over an append-only input
// or a changelog; NewTopN (topn*.go) computes ROW_NUMBER() OVER (PARTITION BY .. ORDER BY ..) <= N. Both emit a
// changelog per input batch (Flink's mini-batch): for each group or partition the batch touched, in order of first
// touch, the result before the batch is compared with the result after it (+I, -U/+U, -D; nothing when
// unchanged). Their contracts are in groupagg.go and topn.go. They own:
//
//   - their working sets: groups column-wise by dense id (retractable accumulators: row count, 128-bit sums,
//     counted distinct values, MIN/MAX value multisets over a changelog); Top-N partitions as sorted multisets of
//     the rows' sort bytes (order bytes of the sort keys, then the canonical row bytes, which break ties), holding
//     only the top N over an append-only input;
//   - their keyed state: KeyedKey(kg, 1, key) holding the group's row count and accumulators, and
//     KeyedKey(kg, 1, uvarint(len(part)) part entry) holding one Top-N row's copy count and the length of its order
//     bytes. Dirty groups and changed entries are written at OnBarrier; a group or partition that disappears is
//     deleted when it does. Groups and partitions are loaded lazily (Get, or a prefix Scan) only when the backend
//     may hold them, and evicted at a barrier when the working set grows too large.
//
// They must never:
//
//   - read or write the backend per row beyond the write-back cache (a lazy load on a miss, Put/Delete);
//   - accept a row of a key group they do not own, or hash keys other than with exec.HashKeys;
//   - treat a retraction on an append-only input as data (it fails the operator); a retraction of a row they do
//     not hold, over a changelog, is counted in TaskContext.Errors and ignored;
//   - let the result depend on arrival order within a batch's net effect, or on a restore: updates run in row
//     order and the state holds exact bits;
//   - turn an overflow into a wrong number (22003; a float sum follows GroupAggConfig.Mode, as above).
//
// # Interval join and window join
//
// NewIntervalJoin (intervaljoin.go) and NewWindowJoin (windowjoin.go) join two append-only inputs (0 left, 1
// right) routed by a hash exchange on their keys; their contracts are in the files' headers, the shared JoinSpec
// in joinspec.go. They share a row table: each kept row as the canonical bytes of all its columns
// (winKeyEncoding with NULL markers), its time(s), key group, arrival number and flags, found per key (interval)
// or per window and key (window) through Go maps. They own:
//
//   - interval join: the rows of both sides while an on-time row can still match them (until the watermark
//     passes the row's bound, left ts+Upper, right ts-Lower), with a matched flag on outer sides; a heap by
//     bound drives cleanup and the outer rows; KeyedKey(kg, 1+side, seq) holds time, flags, key and row bytes,
//     OperatorKey("intervaljoin/meta") the watermark and the next arrival number. A row below the watermark is
//     late (dropped, counted); a row fires at the first watermark strictly past its bound. It holds its output
//     watermark back by max(Upper, -Lower, 0) (exec.WatermarkHolder), so neither its pairs nor its outer rows
//     are late downstream;
//   - window join: the rows of each window until the watermark reaches its end; KeyedKey(kg, 1+side, end start
//     seq) holds flags, key and row bytes, OperatorKey("windowjoin/meta") the watermark and arrival number. It
//     forwards the watermark as it is.
//
// They must never:
//
//   - touch the state backend per row: only Open (a Scan of its key groups) and OnBarrier (rows added or
//     changed since the last barrier, deletes of rows dropped since, the meta entry) read or write it;
//   - drop a row while an on-time row can still match it, or keep one past that point; batching, barriers and
//     restores must not change the output or its order;
//   - emit an outer row before the watermark passes its bound, a window before the watermark reaches its end,
//     or anything in OnBarrier;
//   - accept a changelog row or a row of a key group they do not own, or hash keys any other way than
//     exec.HashKeys.
//
// # Regular join
//
// NewJoin (join.go) is the unbounded equi-join over two changelogs (Flink's regular join); the contract and the
// TTL semantics are in join.go. It owns:
//
//   - its keyed state: per (side, key) one value under KeyedKey(kg, 1 for left / 2 for right, canonical key
//     bytes): flags, last write, and the side's distinct rows (window_keys.go bytes) with copy counts and, for an
//     outer side, association counts; with TTL an expiry index under KeyedKey(kg, 3, deadline bucket, side, key);
//   - its working set: both sides' values of the keys in use, decoded on first touch (an append-only side's only
//     when probed), rows appended in memory, everything changed written back at each barrier (so Open reads
//     nothing), and evicted down to half of CacheBytes when over it;
//   - its output: per input batch, in row order, +I/-D changelog rows (pairs, and NULL-padded rows for outer sides
//     with their flips), gathered column at a time from the batch and the decoded partner rows.
//
// It must never:
//
//   - Scan per row (one Get per key and side; Scans only in the TTL sweep at barriers), or re-encode a key's value
//     per row;
//   - retract a row it did not emit: expired state is forgotten silently and association counts are kept stale
//     rather than corrected, so results may be incomplete under TTL but the changelog stays valid;
//   - accept a row of a key group it does not own, hash keys other than with exec.HashKeys, or accept a
//     retraction on an input the planner declared append-only;
//   - hold the input watermark back: it forwards it unchanged.
//
// Not yet: chunked values (a checkpoint rewrites the whole value of every key changed since the previous one),
// and column types outside the canonical codec (INTERVAL, nested types) in a join's inputs.
package operators
