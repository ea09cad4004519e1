// Package nats is the NATS JetStream connector (connector = 'nats'), on nats.go and its jetstream package: a
// source whose consumption is irreversible (a JetStream ack) and a two-phase-commit sink made exactly-once by the
// stream's duplicate window.
//
// # Source
//
// One subtask (a JetStream consumer delivers a stream in order to one reader) reads a pull consumer with explicit
// acknowledgements (AckExplicit, MaxDeliver unlimited): the durable 'nats.consumer' (created when missing; an
// existing one must be an explicit-ack pull consumer with the same filter, and gets the source's AckWait and
// MaxAckPending), or without it an ephemeral consumer per incarnation (InactiveThreshold 1 h).
//
//   - Fetching: every broker call is on the source's goroutine (Produce). It keeps up to two pull requests of
//     'nats.fetch-size' messages (expiring after 5 s) outstanding on one inbox subscription, whose callback only
//     queues the message and signals IdleWait; Produce decodes what is queued into a batch (json and csv by
//     file.TextDecoder, raw as the bytes) and returns Idle when nothing is. It never blocks for the server.
//   - Deferred acks: SnapshotOffsetAt(N) records that checkpoint N covers every message produced so far (their
//     reply subjects, and the highest stream sequence H_N, which is the checkpointed offset); it logs
//     "nats source: checkpoint covers" at debug level. NotifyCheckpointComplete(N), on the coordinator's
//     goroutine, only records N and wakes the source; the source's goroutine then acknowledges (one +ACK publish
//     each, without waiting for the server) every message covered by checkpoints <= N. NotifyCheckpointAborted
//     leaves them unacknowledged: the next checkpoint that completes covers them too. Nothing is ever acknowledged
//     at a barrier. (AckAll on the highest sequence would be cheaper; AckExplicit was chosen because it
//     acknowledges exactly what a checkpoint covered, also for redelivered messages, and matches the issue.)
//   - Duplicates by stream sequence: a message at or below the highest sequence covered by a completed checkpoint
//     (a redelivery after a lost ack) is acknowledged and dropped; one at or below the highest sequence produced
//     (redelivered while its checkpoint is in flight) is dropped and acknowledged with that checkpoint. Neither is
//     counted anywhere. A lost ack therefore costs only a redelivery.
//   - Restore from checkpoint N (offset H_N): a durable consumer is reset to H_N+1 (the consumer reset API of
//     recent servers, 2.15.3 here: its ack floor becomes H_N, and every message after it, delivered to the dead
//     incarnation or not, is delivered again at once rather than after AckWait); an ephemeral one is created at
//     H_N+1. A fresh start resets an existing durable to its ack floor + 1 (an earlier job's unacknowledged
//     messages come at once). A server without the reset API is logged and redelivers after AckWait: still
//     exactly-once. A new consumer of 'scan.startup.mode' = 'latest-offset' starts at an exact sequence (after the
//     stream's last message at the first start), which the offset covers, so a restore starts there too.
//   - AckWait must outlast a checkpoint in flight (a message is acknowledged only when the checkpoint after it
//     completes): INSERT refuses (22023) 'nats.ack-wait' under twice the job's checkpoint interval; without the
//     option it is the larger of 30 s and three intervals. 'nats.max-ack-pending' (default -1, no limit) below
//     'nats.fetch-size' is refused at CREATE; when it is reached the consumer stalls until the next checkpoint
//     completes, which the source logs once as a warning (sources have no NOTICE channel).
//   - Progress (exec.SourceProgress): the consumer's pending count from the last message's metadata, plus what is
//     queued.
//   - Metadata columns: subject (VARCHAR), stream-sequence (BIGINT), timestamp (TIMESTAMP, the stream's), headers
//     (VARCHAR: a JSON object of strings, a repeated header's last value).
//
// Guarantee: with a durable consumer (or an ephemeral one on a stream that keeps its messages), every message of
// the stream matching the filter is reflected exactly once in the state and output of the job, across crashes and
// restores, provided each message stays in the stream until acknowledged (a work-queue or interest stream keeps
// it until the ack; a limits stream must not age or limit it out first) and AckWait is long enough (above). Exactly
// one job may read a durable consumer (two jobs over one consumer would split its messages): with 'nats.consumer'
// the capabilities say SingleReader, and the engine refuses a second job over the stream (55006) while one runs.
//
// # Sink
//
// A recoverable two-phase-commit sink (CommitRecoverable): Write encodes rows (json and csv in the text forms of
// the file and Kafka sinks, raw as one VARCHAR or BYTEA column) into the open transaction; PreCommit(N) writes
// them, framed and checksummed (state.WriteFramed, fsync and rename), to <data>/_nats_sink/<job>/<operator>-
// <subtask>-<N>.msgs; Commit(N) publishes every staged checkpoint <= N with the header Nats-Msg-Id =
// <instance>-<job>-<operator>-<subtask>-<N>-<i> (instance a random token the job's first sink subtask writes once,
// durably, in its staging directory, so that a job id of another or a wiped data directory never collides; i the
// message's place in the checkpoint), waits for every PubAck and only
// then deletes the file; Open's recovery publishes again the staged checkpoints that completed (IsCompleted) and
// deletes the others (subtask 0 also those of subtasks at or above the parallelism, left by a wider incarnation,
// with their own message ids); Abort(N) deletes N's file.
//
// Guarantee: each row is stored in the stream exactly once provided a commit interrupted by a crash is redone
// within the stream's duplicate window (nats-server's default 2 minutes; the restart re-publishes with the same
// message ids and the stream drops the ones it stored). A restart later than the window after the interrupted
// publish can store that checkpoint's messages twice. On a stream that allows atomic batch publishing
// (nats-server 2.12+, AllowAtomicPublish) a checkpoint of at most 1000 messages (the server's default batch limit)
// is published as one atomic batch (Nats-Batch-Id = <instance>-<job>-<operator>-<subtask>-<N>, its last message committing
// it): readers see all of it or none. A batch the server refuses (one of its ids stored already, as after a crash
// during the commit; a limit) is published again message by message, the duplicate window dropping what was
// stored. Larger checkpoints, and streams without atomic publishing, are published message by message: readers
// may see such a checkpoint's messages appear over the time its commit takes. Open refuses a subject no stream
// captures and a stream without a duplicate window.
//
// It must never acknowledge a message before the checkpoint covering it completed, call the server from the
// coordinator's goroutine, or publish a checkpoint's messages before it completed.
package nats
