// Package streamlog is the storage of internal streams (a stream without a connector, fed by INSERT) and of
// materialized views' changelogs, with the source that reads it and the sink a job writes it with. It is not a
// registered connector: the planner reads and writes it for those objects, through the engine's Env.Log.
//
// A Log stores an internal stream or a materialized view's changelog: immutable Arrow IPC segments
// seg-<seq>[-<txn>].arrow with a row-kind column, each framed with a checksum (state.FrameWriter), numbered without
// gaps, the highest published one recorded in LAST (Create makes a log, Open refuses one with a segment or LAST
// missing). INSERT ... VALUES appends a durable segment at once; a job's Sink (NewSink) is the two-phase protocol of
// package connectors/txnfile with a commit that renames the staged transaction in as the next segment. A source
// (NewSource) reads segments in order from its offset (segment, batch), follows new ones (waking on IdleWait rather
// than polling), or, bounded, stops at the segments present at Open; Consolidate folds a changelog into the rows it
// leaves (an ad-hoc SELECT of a materialized view). Its Progress lets FLUSH wait until a job has read everything
// committed before it checkpoints.
//
// A Table (table.go) is a table's current rows keyed by its primary key, folded from its log (a table's log holds
// its changelog): Upsert (INSERT) and Change (UPDATE, DELETE) compute a statement's changes from the rows, append
// them as one segment, and only then apply them, so a failed statement changes nothing; the log stays the only
// durable copy, and the rows held are compacted once most of them were replaced or many small batches piled up.
//
// A Tail (tail.go) is a subscriber's reader (SUBSCRIBE): the view's rows as of the frontier (the writing job's
// last checkpoint whose commit every sink subtask finished: Advance), then each later checkpoint's changes
// stamped with its id, and progress; the lag of its position in bytes (BytesFrom); Drop ends it. The log keeps
// every segment while its object exists (no compaction), so a Tail never misses one.
package streamlog
