// Package agg holds the aggregating operators over Arrow batches: the window aggregate (GROUP BY a window of
// TUMBLE, HOP, CUMULATE or SESSION), the window assignment of a window table function without GROUP BY, the group
// (updating) aggregate, and Top-N (ROW_NUMBER(), RANK() or DENSE_RANK() <= N). The aggregates share one
// accumulator library (accum.go): one accumulator per function and argument type behind one interface, built for
// the window aggregate's form (append-only, merged by sessions, results into builders) or the group aggregate's
// (retractable, results as canonical bytes); the forms differ only in their state value formats and in what a
// retraction needs kept.
// MIN/MAX keeps a typed extreme in the window form and order-preserving bytes in the group form.
// Keys and rows are kept as the canonical bytes of package exec/rowcodec; keys are routed and owned as in package
// exec (HashKeys, OwnedKeyGroup). The rules every operator keeps (no boxing per row, no batch held after it is
// handed on, every allocation through TaskContext.Alloc) are in package operators' doc.
//
// # Window assignment
//
// NewWindowAssign appends window_start/window_end to every row once per TUMBLE, HOP or CUMULATE window it falls in
// (a window table function without GROUP BY); it keeps no state.
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
//   - firing: at a watermark, every window with end <= watermark is emitted (ordered by window_end, window_start, key
//     bytes) and forgotten (sessions are found through a min-heap of their ends, window_ends.go, not by a scan of
//     every live session); late rows are counted in TaskContext.Late, NULL event times in TaskContext.Errors.
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
// Processing-time windows (WindowAggConfig.ProcTime, window_op.go procWindowAgg) are the same operator with
// another clock: a batch's rows go to the windows of TaskContext.Clock when it arrives (never before the time
// already fired up to), and windows fire by exec.ProcessingTimer when the clock passes their end, or at end of
// input; event-time watermarks pass them by. OperatorKey("window/wm") then holds the processing time fired up to.
//
// Not yet: Flink's slice sharing for HOP/CUMULATE (a row is added to each of its windows, size/slide updates per
// row), per-key early firing, allowed lateness, and retracting input.
//
// # Over aggregate
//
// NewOverAggregate (over.go) computes aggregates and LAG OVER (PARTITION BY .. ORDER BY <time attribute> ROWS|RANGE
// BETWEEN .. PRECEDING AND CURRENT ROW), Flink's over aggregation; the contract is in over.go. It owns, per
// partition (canonical key bytes), the rows waiting for the watermark and the processed rows a later frame or LAG
// can still reach (or, for UNBOUNDED PRECEDING, the group form's accumulators), all in memory and written back as
// one value per changed partition at each barrier (KeyedKey(kg, 1, part)); Open rebuilds them with a Scan of its key
// groups; OperatorKey("over/wm") holds the watermark processed and the next arrival number. At a watermark it
// decodes each due partition's kept and due rows into one record, rebuilds the accumulators from the kept rows and
// adds and retracts row by row (the group form's retractable accumulators), so every output row is the row and its
// frame's values. It must never emit a row before the watermark reaches its time, or a row twice (late rows are
// dropped and counted), accept a retraction, or keep a RANGE frame's rows once the watermark put them out of reach
// (cleaned at the next barrier).
//
// # Group aggregate and Top-N
//
// NewGroupAggregate (group*.go) computes GROUP BY without a window and SELECT DISTINCT over an append-only input
// or a changelog; NewTopN (topn*.go) computes ROW_NUMBER(), RANK() or DENSE_RANK() OVER (PARTITION BY .. ORDER BY
// ..) <= N (Postgres' ranks: RANK and DENSE_RANK keep every row whose rank is <= N, so a tie at the boundary keeps
// all its rows). Both emit a changelog per input batch (Flink's mini-batch): for each group or partition the batch
// touched, in order of first touch, the result before the batch is compared with the result after it (+I, -U/+U,
// -D; nothing when unchanged; RANK and DENSE_RANK with the rank column as multisets of (row, rank): -D, then +I).
// Their contracts are in group.go and topn.go. They own:
//
//   - their working sets: groups column-wise by dense id (retractable accumulators: row count, 128-bit sums,
//     counted distinct values, MIN/MAX value multisets over a changelog); Top-N partitions as sorted multisets of
//     the rows' sort bytes (order bytes of the sort keys, then the canonical row bytes, which break ties), holding
//     only the top set over an append-only input (ROW_NUMBER's N rows; RANK's and DENSE_RANK's rows of rank <= N,
//     ties included: ranks only grow as rows arrive, so a row dropped never comes back);
//   - their keyed state: KeyedKey(kg, 1, key) holding the group's row count and accumulators, and KeyedKey(kg, 1,
//     uvarint(len(part)) part entry) holding one Top-N row's copy count and the length of its order bytes, or, for
//     an append-only ROW_NUMBER Top-N with N <= 32 (at most N rows: RANK and DENSE_RANK have no such bound and stay
//     per entry), KeyedKey(kg, 2, part) holding the partition's rows in one value (one Put per changed partition;
//     the per-entry form of older checkpoints is read and migrated). Dirty groups and changed entries are written at
//     OnBarrier (an entry that came and went between two barriers is neither put nor deleted); a group or partition
//     that disappears is deleted when it does. Groups and partitions are loaded lazily (Get, or a prefix Scan) only
//     when the backend may hold them, and evicted at a barrier when the working set grows too large.
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
// Top-N reads and writes its state by batch: the partitions an input batch creates are loaded with one
// state.GetMany (per-entry state of older checkpoints still by a prefix Scan each), a barrier's changes go to the
// backend as one state.WriteBatch, and an eviction that would keep more than the working set's bound drops every
// partition at once (topn_op.go).
//
// The group and window aggregates and Top-N decode their keyed state entries for clinksql state-cat
// (exec.StateDecoder, inspect.go) through their own restore code, rendering results as they would emit them.
package agg
