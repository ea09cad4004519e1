// Package postgrescdc is the PostgreSQL change-data-capture source (connector = 'postgres-cdc', Flink CDC's option
// names) on PostgreSQL logical replication: jackc/pglogrepl over pgconn replication connections, the pgoutput
// plugin, a publication FOR TABLE and a logical replication slot owned by the stream. It owns connector.go,
// options.go, table.go (checks at CREATE and start), decode.go (Postgres text forms into Arrow, without
// allocating per value) and source.go.
//
// What it reads: one table. scan.startup.mode 'initial' creates the slot with an exported snapshot
// (CREATE_REPLICATION_SLOT ... EXPORT_SNAPSHOT), reads the table under it (REPEATABLE READ, SET TRANSACTION
// SNAPSHOT, a cursor fetched 8192 rows per batch) as +I rows, then streams from the slot's consistent point;
// 'latest-offset' streams from a new slot's consistent point. A fresh start drops an existing slot of the same name
// unless another reader holds it (then, after 5 s, it refuses: one slot, one reader).
//
// Changelog: INSERT +I, UPDATE -U (old row) +U (new row), DELETE -D (old row). The old row comes from the WAL
// with REPLICA IDENTITY FULL; with DEFAULT (a primary key) or USING INDEX the WAL carries only the key, so the source
// keeps the current row of every key in its checkpointed state (TaskContext.State) and emits full old rows from
// it: GROUP BY retractions (sum of an old value) are exact either way. NOTHING, or DEFAULT without a primary key,
// is refused at CREATE (55000) with the ALTER TABLE ... REPLICA IDENTITY FULL that fixes it. An unchanged TOASTed
// value ('u') is taken from the old row (FULL: the WAL's flattened old tuple; DEFAULT: the state), never guessed.
// A TRUNCATE of the table fails the job with a clear error (it carries no rows to retract). A change of the
// table's columns (ALTER TABLE) while captured fails the job.
//
// Guarantee (exactly-once into the job's state): a checkpoint's offset is the end LSN of the last transaction
// whose rows were all emitted, plus, for a transaction cut by the barrier, its commit LSN and how many of its row
// messages were emitted. A restore starts replication at that LSN, skips every transaction that committed
// before it and the emitted prefix of the cut one (pgoutput redelivers a transaction's changes in the same order),
// so no row is lost or emitted twice. The snapshot cannot be resumed (an exported snapshot dies with its process):
// a restore that lands inside it retracts (-D) every row the restored state says the snapshot had emitted
// (the keyed rows, or with FULL the snapshot rows kept in state until it ends), then creates a new slot and
// snapshots again: downstream ends up with exactly one copy of each row.
//
// The confirmed flush LSN (what lets the server free WAL, irreversibly) is sent only for a checkpoint that completed:
// SnapshotOffsetAt(id) records id -> LSN, NotifyCheckpointComplete(id) (coordinator goroutine) only stores the id,
// and the source goroutine then sends a StandbyStatusUpdate with that LSN. Keepalives asking for a reply, and a
// status update at least every 10 s, repeat the last completed LSN, so the slot stays alive while a checkpoint is in
// flight without moving. Between transactions a keepalive moves the position to its WAL end (where the server has
// decoded to): Postgres 15 and later send nothing for transactions that touch other tables, so without it an idle
// captured table would pin all the server's WAL behind its slot. A restore refuses a slot confirmed past the restored
// LSN (the WAL between is gone) or a slot that no longer exists, and waits up to 5 s for the slot's previous reader
// (the walsender of a process that just crashed) to let go. Keepalives are answered from Produce: a source that
// backpressure keeps from producing for longer than the server's wal_sender_timeout loses its connection, and the job
// restarts from its last checkpoint (nothing lost, the slot was not confirmed past it).
//
// What it must never do: confirm an LSN at the barrier, on receipt, or for a checkpoint that has not completed;
// call the server from another goroutine than the subtask's; emit a row of a transaction at or below the restored
// position; drop a slot another process reads, or a publication it did not create.
//
// Release (release.go, connectors.SourceReleaser): a slot nobody reads holds WAL in the user's server forever, so
// the engine calls Release once the stream's jobs are stopped (their replication connections closed): after the
// last live job reading the stream is dropped (DROP JOB, DROP MATERIALIZED VIEW: the slot; the next job starts
// afresh anyway) and after DROP STREAM (the slot and the publication). It drops the slot if it exists, waiting up
// to 5 s for a reader to let go, never terminating one. It drops a publication only if the source created it:
// ensurePublication creates it and marks it with a comment (publicationMark) in one transaction; a publication
// with that mark, or the default <slot.name>_pub without any comment (created before the mark), is dropped; one
// named by publication.name without the mark is the user's and stays. A failure (server down, slot in use) is
// returned with the SQL that drops what is left; the engine reports it in a NOTICE and the DROP stands (and retries
// a dropped job's release at its next open).
// Parallelism is 1 and SourceCapabilities.SingleReader is set (one slot, one reader): the engine refuses a second
// job over the stream (55006).
package postgrescdc
