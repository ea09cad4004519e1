// Package postgres is the PostgreSQL sink (connector = 'postgres' in CREATE SINK, Flink JDBC's option names
// where it has one) and lookup source (connector = 'postgres' in CREATE STREAM: a table read by key by a lookup
// join, never scanned; lookup.go says how it queries, and which options it takes). The sink: rows into an existing table, exactly once, by Postgres' own two-phase commit. It owns the
// sink's options (ConfigFromOptions), its checks of the server and the table (describe, at CREATE, at INSERT and
// at every Open), the binary COPY encoding (encode.go), the upsert buffer (upsert.go) and the 2PC protocol
// (sink.go). It uses pgx/v5 (pgconn's CopyFrom) and never the engine's state.
//
// Guarantee: exactly once, per checkpoint. Every row a completed checkpoint covers is in the table exactly once
// (an upsert sink: the table holds, for every key, the last change the checkpoint covers), and nothing of a
// checkpoint that did not complete ever becomes visible, across any number of crashes of clinksql (kill -9) and
// restarts of the Postgres server. How:
//
//   - Each subtask writes over its own connection, one transaction per checkpoint interval, begun lazily on the first
//     send: an interval without rows prepares nothing. Appends are binary COPY (each value in the binary form of its
//     table column's type); upserts gather each key's last change (+I/+U upsert, -D delete, -U skipped: the +U after
//     it overwrites) and send them as one statement over unnest(...): it keeps, of the changes whose keys Postgres
//     equates (texts that differ, as a uuid's case or char(n) padding, may be one key), the last, then runs a DELETE
//     ... USING and an INSERT ... ON CONFLICT (key) DO UPDATE on keys now disjoint, so a key's changes apply in order.
//     A deleted key its column's modifier would cut (varchar(n), char(n), bit(n)) deletes nothing.
//     'sink.buffer-flush.max-rows' (or 4 MB of COPY data) sends early, in the same transaction.
//   - PreCommit(N), at the barrier: send the rest, then PREPARE TRANSACTION '<prefix>-<job>-<operator>-<subtask>-<N>'
//     (prefix 'clink' or 'sink.transaction-id-prefix'; the operator id keeps two sinks of one job apart; at most
//     199 bytes, checked at Open). The transaction is durable in Postgres and invisible. Its xid is kept with it.
//   - Commit(N), after checkpoint N completed (on the coordinator's goroutine, concurrently with Write: it uses a
//     second connection, since the writing one may wait on a row lock that only this commit releases): COMMIT
//     PREPARED every prepared transaction of this subtask up to N, in order. Idempotent: an identifier Postgres no
//     longer knows is accepted only when pg_xact_status(xid) says committed (an earlier COMMIT PREPARED whose
//     answer was lost); a transaction rolled back behind the sink's back is an error, never silently skipped.
//   - Abort(N): ROLLBACK PREPARED. Close: disconnect; the open transaction is rolled back by the server, prepared
//     ones stay for the next Open.
//   - Open (recovery): list pg_prepared_xacts of this database with the operator's prefix; COMMIT PREPARED those
//     of this subtask (subtask 0 also those of subtasks beyond the parallelism, after a restore with fewer) whose
//     checkpoint ctx.IsCompleted, ROLLBACK PREPARED the rest.
//
// It must never: commit a transaction whose checkpoint did not complete; roll back one whose checkpoint did;
// touch a prepared transaction outside its operator's prefix (another job's, another sink's, another clinksql's
// with another prefix: two servers writing into one database must set different 'sink.transaction-id-prefix');
// use a temporary table in a transaction it prepares (Postgres refuses PREPARE then); or run COMMIT PREPARED on
// the writing connection.
//
// Needs: max_prepared_transactions > 0 on the server (checked at CREATE: 55000 naming the setting), the table
// with every sink column (type-compatible) and no other NOT NULL column without a default, and for an upsert sink
// a primary key or unique index on exactly the key columns (42P10 otherwise). A prepared transaction holds its row
// locks until COMMIT PREPARED: an upsert sink of parallelism > 1 must receive each key on one subtask (the
// GROUP BY key as its PRIMARY KEY), or two subtasks could wait on each other's prepared rows. The PRIMARY KEY
// must be a key of the result: -U is skipped, so a change that moved a row to another key would leave the old.
// A job dropped while a crash left its transactions prepared never settles them (no Open of it runs again).
package postgres
