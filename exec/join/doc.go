// Package join holds the joins of two inputs over Arrow batches: the regular join (an unbounded equi-join over
// changelogs), the interval join and the window join (two append-only inputs joined within a time bound), and the
// event-time temporal join (a left row with the version of a versioned table at its time). Their
// configs share JoinSpec (spec.go); the interval and window joins share the time-join row table (timetable.go; the temporal join too).
// Keys and rows are kept as the canonical bytes of package exec/rowcodec; keys are routed and owned as in package
// exec (HashKeys, OwnedKeyGroup). The rules every operator keeps (no boxing per row, no batch held after it is
// handed on, every allocation through TaskContext.Alloc) are in package operators' doc.
//
// # Interval join and window join
//
// NewIntervalJoin (interval.go) and NewWindowJoin (window.go) join two append-only inputs (0 left, 1
// right) routed by a hash exchange on their keys; their contracts are in the files' headers, the shared JoinSpec
// in spec.go. They share a row table (timetable.go, with the contract checks, the row encoding and the output
// they also share): each kept row as the canonical bytes of all its columns
// (rowcodec.Encoding with NULL markers), its time(s), key group, arrival number and flags, found per key (interval)
// or per window and key (window) through Go maps. They own:
//
//   - interval join: the rows of both sides while an on-time row can still match them (until the watermark
//     passes the row's bound, left ts+Upper, right ts-Lower), with a matched flag on outer sides; per-side
//     FIFOs by bound (four per side, a row to the one whose last bound is the largest not above its own: the
//     rows of up to four upstream subtasks, each in time order but interleaved by batch after a hash exchange)
//     and a heap (the others) drive cleanup and the outer rows;
//     KeyedKey(kg, 1+side, seq) holds time, flags, key and row bytes, OperatorKey("intervaljoin/meta") the
//     watermark and the next arrival number. A row below the watermark is
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
// # Temporal join
//
// NewTemporalJoin (temporal.go) is Flink's event-time temporal join (FOR SYSTEM_TIME AS OF the left's time
// attribute): an append-only left input joined with the version of its key that a versioned right input (a
// changelog keyed by the join keys, or an append-only stream whose rows are successive versions) held at the left
// row's time. It shares the time joins' row table, row encoding and output. It owns the waiting left rows (until
// the watermark passes their time) and each key's versions (all at or above the watermark, plus the newest below
// it unless that is a tombstone): KeyedKey(kg, 1+side, seq) holds time, flags, key and row bytes,
// OperatorKey("temporaljoin/meta") the watermark and the next arrival number (a version's time is at least the
// watermark at its arrival). It must never emit a left row before the watermark passes its time, keep a version
// no on-time left row can still need, or take in a late left row.
//
// # Lookup join
//
// NewLookupJoin (lookup.go) is Flink's lookup join (FOR SYSTEM_TIME AS OF a processing-time attribute): one input,
// each batch's distinct keys looked up in an external table (exec.LookupTable, built by a connector) with one
// query, through a per-subtask LRU cache bounded by rows with a TTL. It owns that cache and nothing else: no state
// backend entries, nothing in a checkpoint (a restored job looks its keys up again).
//
// # Regular join
//
// NewJoin (regular.go) is the unbounded equi-join over two changelogs (Flink's regular join); the contract and the
// TTL semantics are in join.go. It owns:
//
//   - its keyed state: per (side, key) one value under KeyedKey(kg, 1 for left / 2 for right, canonical key
//     bytes): flags, last write, and the side's distinct rows (rowcodec row bytes) with copy counts and, for an
//     outer side, association counts; for a static side (append-only and inner) that value is a head (row and
//     chunk counts) and the rows are in chunks under KeyedKey(kg, 4+side, chunk, key), one more per write-back
//     that added rows; with TTL an expiry index under KeyedKey(kg, 3, deadline bucket, side, key);
//   - its working set: both sides' values of the keys in use, decoded on first touch (an append-only side's only
//     when probed; a static side's rows read from its chunks only when probed, and dropped from memory at a
//     write-back unless probed since the previous one and small enough to sit inline or being folded into one
//     chunk), new rows in per-side fresh blocks and, for static entries, a per-side fresh log, everything changed
//     written back at each barrier as one state.Batch (so Open reads nothing; a static side's new chunks are
//     reserved in it and filled from the fresh log in the log's order: state.Batch.Reserve, state/join_batch.go),
//     and evicted down to half of CacheBytes (default 256 MiB) when over it; a key's state is one
//     cache-line-aligned keyState (both sides' entries, each with a probe's fields, a one-row key's row and an
//     append's fields in its first 128 bytes), found through an open-addressing table for a key of one
//     integer-like column; after a start from empty state, a Bloom filter of the keys it stored, so a new key
//     costs no Gets; its passes over a batch (key lookup, entries, partner decode, pairs) and the write-back's
//     pass over the dirty entries prefetch (PREFETCHT0 on amd64, regular_prefetch_amd64.s; nothing elsewhere) the
//     table slot or entry lines of the row or entry prefetchRows (8) ahead, so their cache misses overlap the work
//     on the ones before (a plain read-ahead load stalls instead: measured 15% worse; 4 and 16 ahead measured
//     worse than 8);
//   - its output: per input batch, in row order, +I/-D changelog rows (pairs, and NULL-padded rows for outer sides
//     with their flips), gathered column at a time from the batch and the decoded partner rows.
//
// It must never:
//
//   - Scan per row (one Get per key and side, plus one per chunk when a static side is probed; Scans only in the
//     TTL sweep at barriers), re-encode a key's value per row, or rewrite a static side's stored rows except to
//     fold a probed key's chunks into one;
//   - retract a row it did not emit: expired state is forgotten silently and association counts are kept stale
//     rather than corrected, so results may be incomplete under TTL but the changelog stays valid;
//   - accept a row of a key group it does not own, hash keys other than with exec.HashKeys, or accept a
//     retraction on an input the planner declared append-only;
//   - hold the input watermark back: it forwards it unchanged.
//
// Not yet: key states kept in the key table itself (found by index, no pointers for the collector to scan: one
// memory access per row instead of a slot then a state; keyEntry's slices point into itself, so moving it on a
// table growth needs those as offsets first); chunks for updating or outer sides (a checkpoint rewrites the whole
// value of every such key changed since the previous one), and column types outside the canonical codec (INTERVAL,
// nested types) in a join's inputs. The join keeps every column of its inputs: columns the query drops after the
// join are still stored and gathered unless the planner projects them away below it.
//
// The joins decode their keyed state entries for clinksql state-cat (exec.StateDecoder, inspect.go) with the
// parsers their restores use.
package join
