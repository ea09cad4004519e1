// Package checkpoint takes globally consistent snapshots of a running job with in-band barriers, and decides when
// such a snapshot is a restore point.
//
// # What it owns
//
//   - Barrier, Mode, ParticipantID: the in-band marker and who acknowledges it.
//   - Coordinator: issues barriers (periodic or on demand), tracks acks, makes COMPLETED-<id> durable, advances the
//     restore point, tells sinks to commit or abort, times checkpoints out, rewinds the job on failure, retains
//     the newest completed checkpoints.
//   - AdaptivePolicy: aligned versus unaligned per checkpoint from measured pressure, with hysteresis.
//   - Aligner: the multi-input alignment state machine of one subtask (pure logic).
//   - SnapshotWorker: persists one subtask's captures off its goroutine and acks after durable.
//   - The layout of <data>/jobs/<job>/checkpoints: chk-<id>/<participant>/, COMPLETED-<id>, HIGHWATER, and
//     ABANDONED-<id> (Abandon: markers a restore fell back past, never again restore points); SubtaskDir,
//     MarkerPath, IsCompleted, LatestCompleted, NextID.
//   - For jobs with a sink whose commit cannot be re-executed after a crash (indoubt.go): the confirmation set of
//     each broadcast checkpoint (Config.Confirmers, Confirm) and CONFIRMED-<id>; the layout and framing of staged
//     handles (chk-<id>/<participant>.handle), commit receipts and unresolved markers (receipts/<op>/sub<K>-<id>
//     [.unresolved]); the retention floor. The in-doubt walk, the markers' consumption at open and replay
//     suppression run in exec (exec/indoubt.go), which owns the sinks and their resolvers.
//   - History (history.go): a job's last N checkpoint Records (id, mode, trigger time, duration, the longest align
//     wait, bytes persisted and the in-flight part of them, outcome and reason) and its Totals (first start,
//     restarts by cause, checkpoints by mode and outcome, adaptive switches, in-flight bytes, histograms of
//     duration, size and align wait with fixed buckets), in <checkpoints>/history: JSON in a checksummed frame,
//     rewritten (fsync, rename) after every change, so the figures survive restarts of the job and the process.
//     A damaged file is a *state.CorruptError naming it (XX001), never silently reset. With Config.History the
//     Coordinator adds a Record once each checkpoint's outcome is decided (completed - also when its commit was
//     deferred or failed, with the reason -, failed when it rewinds the job, aborted when discarded by a stop or
//     a rewind), from the figures participants Report before their ack, and counts adaptive switches. exec
//     exports the totals as Prometheus series; ReadHistory reads them for a job that is not running.
//
// # What it must never do
//
//   - Import exec (imports flow exec -> checkpoint -> state). Runners, channels and operators are exec's; this
//     package gives them decisions, not goroutines that touch records.
//   - Treat a checkpoint as complete before its marker is durable, or report an ack before its Persist returned.
//   - Reuse a checkpoint id that any durable file ever named.
//   - Run a callback under its lock.
//
// # The protocol
//
// The Coordinator allocates id N, records every registered participant as owing an ack, stamps the mode (an
// explicit override, else the resolver (e.g. EnableAdaptive), else Config.DefaultMode; terminal barriers are always
// aligned) and pushes barrier N into every source through its injector, in id order. A source takes the barrier
// between two produce calls, pins its offset for N and emits the barrier, which travels FIFO with the data: what
// precedes barrier N on a channel belongs to checkpoint N.
//
// Every subtask is its own participant and snapshots its own state: clinksql does NOT fuse operator chains, so the
// seed's chain-owner rule (only the most-downstream operator of a fused chain snapshots) and the quiescence
// rendezvous of non-owners do not apply. A single-input subtask captures its state at the barrier, forwards the
// barrier and hands the capture to its SnapshotWorker. A multi-input subtask first runs the barrier through its
// Aligner: aligned, it pauses each input that delivered N until every alive input did, then captures and forwards;
// unaligned, it captures and forwards on the first delivery and logs the records still arriving on the other
// inputs before their barrier N (PendingUnaligned) into the checkpoint, to replay them on restore. The first
// delivery pins the mode of N at that subtask; an operator that cannot capture in-flight records degrades to
// aligned.
//
// A participant acks N once what it must make durable for N is durable. When the last ack arrives the
// Coordinator writes COMPLETED-N with WriteMarker (state.WriteFramed: a checksummed file naming N, its directory
// fsync strict: a marker that can vanish under committed output duplicates it at restore; VerifyMarker reads it
// back and a damaged one is a *state.CorruptError), then advances LastCompleted, then calls OnComplete (sinks
// commit), then applies retention. A checkpoint that completes while the job drains (Stop, or a failure rewinding
// it) keeps its marker but gets no OnComplete: the next incarnation's sink recovery commits it
// (ErrCommitDeferred). Any failure - a failed ack, the timeout, a marker write error, Abort -
// aborts N (OnAbort: sinks discard its staged output) and rewinds the whole job (OnFailure): without the replay
// from the last completed checkpoint, N's interval of output would simply be gone.
//
// # The seed's failure stories, and what prevents each
//
//   - Ack before the snapshot was durable let COMPLETED-N name a .part file: SnapshotWorker acks only after
//     Persist returned (worker.go, run).
//   - An unbounded persist backlog: the worker queue holds one capture behind the one persisting; Enqueue blocks
//     (worker.go, Enqueue).
//   - A cancelled job blocked forever on a full queue: Enqueue takes a context and fails on close (worker.go).
//   - A restart chose its restore point between marker and in-memory advance and restored lower than the sinks
//     had committed: LastCompleted advances only after the marker is durable, and Stop waits out a marker write
//     (coordinator.go, complete and Stop).
//   - A commit broadcast into a half-torn-down job committed some sinks and not others: a checkpoint completing
//     while the job drains is not broadcast (coordinator.go, complete; exec's onComplete checks its context too).
//   - A marker whose directory fsync failed vanished after a power loss while the sinks' commits survived: the
//     directory fsync is strict, and a failed marker write takes the marker back and keeps the staged output
//     for recovery (coordinator.go, complete; state.WriteFsyncRename).
//   - A checkpoint above a failed one completed during the rewind and became a restore point minus one interval:
//     the rewind floor discards it (coordinator.go, collectedLocked and complete).
//   - A transient snapshot error lost one interval because the job sailed on: every failure calls OnFailure and
//     refuses further triggers (coordinator.go, abortLocked).
//   - A successor reused the ids of a dead incarnation's uncompleted snapshot files and a restore mixed two
//     vintages: NextID counts chk-<id> directories and the HIGHWATER mark, not just markers (dirs.go, NextID).
//   - Retention deleted the files that named the newest ids: HIGHWATER is durable before the first deletion, and
//     markers go before their directories (dirs.go, retain).
//   - A pending checkpoint that nobody answers left staged transactions staged forever: every checkpoint has a
//     timeout and fails like any other (coordinator.go, expire).
//   - A finished input wedged alignment: a closed input satisfies every barrier (aligner.go, OnInputClosed).
//   - Aligned and unaligned semantics mixed within one checkpoint: the first delivery pins the mode
//     (aligner.go, pin).
//   - An operator that cannot capture in-flight records lost them under unaligned barriers: canUnalign false
//     degrades to aligned (aligner.go, pin).
//   - The adaptive mode oscillated on noise: switching takes a run of consecutive windows both ways, at least two
//     (adaptive.go, withDefaults).
//
// The seed's stories of sinks whose commit cannot be re-executed after a crash (Kafka: a new producer aborts the
// open transaction), and what prevents each (tests in exec/indoubt_test.go and indoubt_test.go here):
//
//   - A crash between COMPLETED-N and the commit left N's transactions open, and the redeploy's fence aborted
//     them under a restore point that counted them committed: such jobs restore from the newest CONFIRMED
//     checkpoint, written only when every sink subtask's commit returned (coordinator.go, Confirm; exec job.go,
//     onComplete), after the in-doubt walk committed what it can (exec indoubt.go, resolveInDoubt;
//     TestInDoubtCompletedCheckpointIsCommittedByResolutionAndConfirmed, TestInDoubtFailedCommitIsResolvedBy
//     TheRestart, TestConfirmedOnlyWhenEverySinkSubtaskConfirmed).
//   - A stale copy of another subtask's (or an older checkpoint's) handle aborted the walk on a phantom fence: a
//     handle is read only from its own subtask's file, and names its checkpoint and participant (ReadStagedHandle;
//     TestInDoubtStaleHandleCopyIsNeverRead, TestStagedHandleReadsBackOnlyInItsPlace).
//   - A committed transaction probed over a wire that was fenced, timed out or forgot it was counted uncommitted:
//     a commit receipt is proof with no wire call (exec walk; TestInDoubtReceiptIsProofWithoutWireCall).
//   - A final refusal left later handles of the same checkpoint unproven, and a proven-but-unreceipted commit was
//     replayed as duplicates (qual01-20260819f): the walk probes every handle before deciding and writes the
//     receipt of each commit it proves (exec walk; TestInDoubtMixedVerdictFallsBackWithReplaySuppression).
//   - The walk stopped at a refused checkpoint without looking above it, and an ack-window commit there was fenced
//     blind and replayed: every early stop marks each unreceipted handle of that checkpoint and of every completed
//     checkpoint above it (exec stopWalk; TestInDoubtRefusalLeavesMarkersForEveryCompletedCheckpointAbove), and
//     those checkpoints are abandoned, so no later walk stops at the same wall. They are abandoned newest first:
//     a crash part way must not leave a completed checkpoint above an abandoned one, which a later walk could
//     confirm and restore from, skipping the abandoned interval (exec resolveInDoubt;
//     TestInDoubtPartialAbandonNeverSkipsAnInterval).
//   - A blind fence at open erased whether a transaction committed (the qual01 rig-night duplicate): markers are
//     settled by a read-only Describe before the sink opens; no answer refuses the open, an unknown fate keeps the
//     marker and fails the job with what an operator can do (exec consumeMarkers; TestInDoubtMarkerConsumedAtOpen,
//     TestInDoubtNoBrokerRefusesToOpen, TestInDoubtUnknownMarkerKeepsRefusing).
//   - A one-stage timeout failed the job while the abandoned walk kept committing and writing CONFIRMED behind
//     it: a soft deadline cancels the walk, which checks it before every probe and store write and between an
//     answer and acting on it; only a walk ignoring its cancel through the hard grace fails the job (exec
//     resolveInDoubt, walk; TestInDoubtSlowWalkIsCancelled, TestInDoubtCancelledWalkDoesNotActOnALateAnswer,
//     TestInDoubtHungWalkFailsTheJob).
//   - A fallback replayed receipted intervals as duplicates: replay suppression drops the replayed rows whose row
//     time is at or below the newest receipt's horizon (the sink's input watermark at that barrier), which are
//     exactly the rows its transactions hold when the sink's input is fired by the watermark (exec
//     armSuppression, suppress; Node.RowTimeColumn says which column and why). It refuses the restore, for
//     good, when the sink has no row time column (output not fired by the watermark cannot be separated;
//     TestInDoubtSuppressionWithoutRowTimeFailsTheRestore) or reads several channels
//     (TestInDoubtSuppressionRefusesSeveralInputChannels).
//   - Suppression by the watermark a row arrived under lost rows when the replay read its input in bigger
//     batches than the first run: the watermark jumped over the horizon and one firing released windows on
//     both sides of it. Row time does not depend on the replay's watermarks
//     (TestInDoubtSuppressionIsExactWhenTheReplayBatchesDiffer); in-doubt sinks and the operators feeding them through
//     forward edges take barriers aligned, so a barrier never splits the rows one watermark fired (exec runSink,
//     inDoubtChain; TestInDoubtSinkTakesBarriersAligned failed 4 times in 300 under load when only the sink did).
//   - A fallback below a checkpoint that a recoverable sink of the same job already published would publish it
//     twice (no receipt covers such a sink): it is refused like a damaged checkpoint's fallback (exec
//     refuseFallbackIfPublished; TestInDoubtFallbackRefusedWhenAnotherSinkPublished).
//   - Retention purged the confirmed restore target while newer checkpoints were unconfirmed: the floor never
//     rises above the newest confirmed checkpoint, and receipts are pruned below it only (dirs.go, retain;
//     TestRetentionKeepsTheConfirmedRestoreTarget).
//   - A successor reused the ids of checkpoints a fallback left behind: NextID counts CONFIRMED markers, receipts
//     and unresolved markers too (dirs.go; TestNextIDCountsConfirmedMarkersAndReceipts,
//     TestInDoubtIDsNeverReusedAfterFallback).
//   - Jobs without such a sink track nothing and write no CONFIRMED, handle or receipt file
//     (TestJobWithoutInDoubtSinkWritesNoConfirmations).
//
// # Decisions
//
//   - Concurrency: the periodic trigger does not wait for the previous checkpoint's acks, but skips a tick while
//     Config.MaxInFlight (default 2) checkpoints are undecided. Completions and aborts are serialised on one
//     coordinator goroutine, in decision order.
//   - Abort is a failure: sinks discard the staged output of the aborted id, so the job must replay it. Only Stop
//     aborts without rewinding (the job is going away).
//   - OnFailure fires once per Coordinator (the first failure); the rewind floor is the lowest failed id.
//     Checkpoints below the floor may still complete: their cut precedes the failure.
//   - A checkpoint completing before an older in-flight one is allowed (LastCompleted only grows); retention never
//     deletes the directory of an in-flight checkpoint.
//   - Deregister removes a finished participant from the ack sets of later checkpoints and of undecided ones.
//   - The forwarded barrier keeps its (override-applied) stamp when a subtask degrades to aligned locally, so
//     downstream operators that can unalign still do; terminal barriers are forwarded aligned.
package checkpoint
