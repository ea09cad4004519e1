// Package exec is the dataflow runtime: it runs a Graph of sources, operators and sinks over Arrow batches as a
// Job, and carries the checkpoint protocol of package checkpoint through it.
//
// # What it owns
//
//   - Stream elements (element.go): a batch with its row kinds, a watermark, a barrier, end of input, a latency
//     marker. Typed; no interface{} payloads.
//   - The operator, source and sink contracts (api.go), with the no-op defaults operators embed (NoTimers,
//     Stateless), and the event-time arithmetic the windowed operators share (eventtime.go: AddSat, DueWindows).
//   - Graph (graph.go): nodes with a parallelism, edges with an exchange (forward, hash by key, broadcast,
//     rebalance). A union is an operator with several inputs, not a node of its own.
//   - Exchanges (exchange.go): one bounded channel per producer-consumer pair of subtasks, so every channel is its
//     own alignment input; hash routing by key group with the fixed key hash of package state (hash.go). Keyed
//     operators check that a row's key group is theirs with the same hash (keygroup.go: OwnedKeyGroup,
//     BatchKeyGroups); a row of another key group is a routing bug that fails the job.
//   - TakeRows (take.go): a batch of some rows of another, by an index vector. The hash exchange sends a batch
//     whole when all its rows go to one subtask (always at parallelism 1: no hashing, no copy) and otherwise one
//     TakeRows per target subtask; fixed-width, boolean, string and binary columns are gathered by take.go itself
//     (the take kernel's set-up per call cost more than the gather: BenchmarkHashExchange), others by arrow-go's
//     take kernel. On Go's allocator (the engine's default) their value buffers come uncleared (noZeroAlloc): every
//     byte is written by the gather, so Go's clearing of new memory was wasted (memclr was ~10% of the exchange's
//     CPU); so do bitmaps, built a byte at a time (gatherBits) except where an outer join's padding makes NULLs. Any
//     other allocator (tests' checked ones) is used as given. Parts for a consumer that copies what it keeps of
//     its input (InputCopier: the aggregates, the Top-N, the time and regular joins) are gathered into buffers its
//     releases hand back (recycle.go: partPool, one per channel): at parallelism 2 every part had been new memory, and
//     faulting those pages in cost more than the copies (q19: 4.16 -> 3.84 CPU-s). Parts for any other operator
//     are new memory from the collector, never one a released batch may still be read through: an operator that
//     keeps a string of a String array's Value, or any slice of a buffer, must not declare InputCopier. On a
//     counting allocator the pools poison what they take back, so the suites catch a consumer that reads a part
//     after releasing it. The routing takes a key group as the hash's low bits when the key groups are a power of two
//     (the default 128): the same group as state.KeyGroupOf's modulo, so checkpoints restore as before. (An inline
//     xxhash64 for short string keys was measured no faster than the call into xxhash's assembly: 4-5 ns a key.)
//     Each part carries its rows' key groups (Batch.WithKeyGroups, two bytes a row), which BatchKeyGroups uses
//     instead of hashing the same key columns again, only while the batch still holds the record they were made
//     of: the keys are hashed once between a hash exchange and its keyed operator (q17 at p2: 0.13 s of 2 s
//     saved). Key groups rather than the hashes: an operator reads them only for the rows whose state it does not
//     hold, each such read a cache miss on memory the exchange wrote on another core, and eight bytes a row made
//     those four times as many lines (q5 at p2: 25 ms of 2 s in that read).
//   - Runners (runner.go): one goroutine per subtask. A source runner takes barriers only between Produce calls;
//     an input runner (operators and sinks) reads its channels round robin, aligns barriers, captures in-flight
//     records of unaligned checkpoints, tracks watermarks.
//   - Job (job.go): deploys incarnations of a graph restored from the last completed checkpoint, restarts the
//     whole job on a runtime failure within a budget, takes the final checkpoint at end of input. Before a deploy
//     it verifies the restore point (restorePoint): a damaged latest checkpoint falls back to an older one that
//     verifies only when no sink (PublishChecker) published output after it; a job whose JobConfig.Checkpointed
//     says it completed a checkpoint never starts from scratch (Committed records that, before any commit).
//
// # What it must never do
//
//   - Forward a barrier past a record that precedes it at its source, unless that record is captured into the
//     checkpoint (the unaligned in-flight log). Every path below keeps this.
//   - Merge a subtask's input channels into one Go channel: alignment must pause them one at a time.
//   - Ack a checkpoint before what the subtask persisted for it is durable (the snapshot worker acks).
//   - Let a checkpoint complete while an incarnation is torn down (Stop on the coordinator comes first).
//   - Hash keys with a per-process seed (hash/maphash): restored state must meet its keys again. Nor change
//     HashKeys' values or the key group of a hash (state.KeyHashVersion): a fast path gives the same values.
//   - Hand out a buffer uncleared unless every byte of it is written before anything reads it, or reuse the
//     memory of a released batch (an operator may still hold slices of it).
//
// # Barriers through a subtask
//
// A source stages its offset for each barrier right when it emits it: checkpoint N records exactly the position
// after the last record before barrier N, even when N's persist runs after N+1 was staged (the seed's "checkpoint 4
// holding offset 12" story; TestSourceOffsetStagedPerBarrier).
//
// An input runner hands each barrier to its checkpoint.Aligner. Aligned: the inputs that delivered N pause until
// every alive input did; then the operator writes its working state (OnBarrier) or the sink pre-commits, the
// state backend is captured (cheap), the barrier is forwarded, and the persist goes to the snapshot worker, which
// acks after it is durable. Unaligned: the first delivery captures and forwards at once; records that precede N
// on the inputs that have not delivered it yet - already queued, or still arriving until their barrier - go into
// an in-flight log persisted with the checkpoint and replayed first on restore (TestUnalignedCheckpointOvertakes
// BackpressureAndReplays).
//
// An unaligned barrier also overtakes the records queued ahead of it on its own channel, as Flink's priority
// barriers do: a producer announces on the channel (an atomic id) that it is sending unaligned barrier N, and the
// consumer, between two elements, takes everything buffered on that channel into the input's queue until it
// reaches the barrier, delivers the barrier first and logs the records it overtook. So a checkpoint under
// backpressure waits for at most one batch of processing, not for the whole backlog.
//
// Watermarks: an input's watermark is the largest it received; the combined watermark is the min over the open,
// non-idle inputs (a finished input counts as +infinity, an idle one not at all); when it advances the operator's
// OnWatermark runs and the watermark is forwarded. Input watermarks are part of each snapshot. Watermark alignment
// (align.go, JobConfig.WatermarkMaxDrift) holds a source subtask whose watermark runs more than the drift ahead of
// the slowest aligned one, between Produce calls and still taking barriers: that min would otherwise keep every row
// of the leading sources in the state downstream. It must never hold a subtask for one that has no watermark, is
// idle or has finished.
//
// # Processing time (proctime.go)
//
// A job has one processing-time clock (JobConfig.Clock, in every TaskContext): the wall clock, or a ManualClock
// that tests move. PROCTIME() reads it (expr.Context.Clock), and an operator that acts when it passes a point
// implements ProcessingTimer: its input runner calls OnProcessingTime once the clock reached NextProcessingTime,
// checked before each element it handles and waited for (ProcessingClock.Until) while it waits for input. Timers
// are not a runtime structure: the operator's own checkpointed state says what they are (a processing-time
// window's open windows), so a restore gives them back and fires at once those already due. A timer never fires
// inside OnBarrier, and an element handled after the clock passed a timer's time - a barrier among them - comes
// after what that timer emitted.
//
// # Latency markers (latency.go)
//
// With JobConfig.LatencyMarkerInterval set, a source subtask stamps a marker (JobConfig.Now, Unix nanoseconds)
// right after a batch once the interval has passed since its last one, and sends it on one channel of each output
// edge (round robin over the channels of a hash, rebalance or broadcast edge, as Flink sends its markers to one
// channel: copies on every channel would multiply at each exchange). An input runner hands a marker to no operator:
// it forwards it when it reaches it, after the elements before it on its channel; a sink subtask records its age
// in its node's histogram (Job.SinkLatency, clinksql_sink_latency_seconds) before any pre-commit. A window does
// not hold markers, so they time queues and processing, not firing delays. Markers are neither rows (no counts) nor
// state: barriers overtake them like any element and in-flight logs leave them out (TestLatencyMarkersReachThe
// Sink runs them through unaligned checkpoints under backpressure; the exactly-once suite runs with them on).
//
// # Parallelism and its cost
//
// Every subtask is a goroutine, so parallelism 1 already runs the operators of a job in parallel; parallelism N
// adds N-1 copies of every operator, N channels per hash edge and subtask, N state backends per keyed operator
// (each a Pebble store opened and checkpointed on its own: a fixed cost per subtask at start and at every
// checkpoint; a deploy opens all the subtasks' backends at once, since a keyed store's open mostly waits on the
// disk), and splits each batch crossing a hash exchange into N smaller ones. Sources split their input (the
// nexmark generator gives subtask k of p the chunks k, k+p, ..., a chunk being about one batch of consecutive
// events), so no event is generated twice. How a source splits matters: an updating operator (group aggregate,
// Top-N) emits a changelog row per key changed in a batch, so a batch whose rows span p times the input (cycles
// taken one by one) holds more distinct keys after the exchange and multiplies the output (q17 at p = 2 emitted
// 2.4 times the rows until the generator took chunks). And a subtask behind a hash exchange sees the batches of N
// upstream subtasks interleaved, each in time order but not with each other: a time-ordered queue per input
// (the interval join keeps four per side) keeps such rows out of a heap. Channel hops and scheduling do not show
// in profiles (runtime.schedule, futex and channel operations are under 1% at p = 2); what parallelism costs is
// the hash exchange's hashing and gathers (a few per cent of a Nexmark query with TakeRows' own gathers, 10% of
// q8), per-batch and per-watermark work of the operators done twice as often on half the rows, and the fixed cost
// per subtask. Exchanges do not coalesce the smaller batches: a
// source follows each batch with its watermark, which a channel must deliver after that batch's rows and before
// the next ones, so coalescing would either hold watermarks back or reorder rows across them.
//
// # End of input and failures
//
// A bounded source that finished sends +infinity and keeps taking barriers; when every source finished, the job
// takes one final (terminal, aligned) checkpoint, the sources send end of input after it, and the job is FINISHED
// only once that checkpoint completed and the sinks committed it. A runtime error in any subtask, or a failed
// checkpoint, tears the incarnation down and deploys a new one from the last completed checkpoint after a backoff;
// past the restart budget the job is FAILED with the failing subtask named.
//
// The commit broadcast (onComplete) tells every sink to commit and every CheckpointListener, even when one commit
// fails (the errors are joined, fail the incarnation and reach WaitCheckpoint); an incarnation already torn down
// broadcasts nothing, and the next one's sink recovery commits the checkpoint (TestCheckpointCompletingDuring
// RestartIsCommittedByRecovery, TestCommitFailureStillRunsEveryListener). When every commit succeeded, sinks that
// implement CommitFinisher (finishcommit.go) are called next with the node's watermark at the checkpoint: the
// minimum of the input watermarks its subtasks recorded at the barrier (a partitioned file sink's partition commit,
// which needs every subtask's files in place; TestCommitFinisherGetsNodeWatermarkAfterEveryCommit).
//
// Sinks whose commit cannot be re-executed after a crash (Node.CommitNotRecoverable, InDoubtSink; indoubt.go):
// the runtime stores each subtask's resume handle with its input watermark before the subtask acks a barrier,
// confirms a checkpoint once every sink subtask's commit returned (CONFIRMED-N), runs in-doubt resolution over the
// completed-but-unconfirmed checkpoints before choosing the restore point (the newest confirmed one), settles the
// subtask's unresolved markers with Describe before Open, writes commit receipts for TaskContext.Receipt, and
// drops replayed rows of receipted checkpoints in front of Write by their row time (Node.RowTimeColumn; a sink
// without one refuses such a restore). Such sinks, and the operators that feed them through forward edges
// (inDoubtChain), take every barrier aligned, and the sinks are closed only after the
// coordinator drained, so the final checkpoint's commit never follows Close. checkpoint/doc.go lists the seed's
// failure stories and the tests that pin them.
//
// Counts (rows in and out, late rows, bad values) are staged by every subtask with its checkpoint and rewound to
// the restored checkpoint's at every deploy, so a replay counts nothing twice (TestRestartCountsRowsOnce). The job
// logs its life (started, restarted and why, failed and why, finished, stopped) with one "job" attribute.
//
// Reading a checkpoint from outside a job (clinksql state-cat, package state/inspect; inspect.go): operators that
// keep keyed state implement StateDecoder and sources OffsetDecoder, both called on an instance built by the
// node's factory (Node.StateDecoder, Node.OffsetDecoder) and never opened, so they must decode with the code their
// restore uses and touch no backend; DecodeInflightLog is the restore's reader of an in-flight log.
//
// # Observing a job (observe.go, metrics.go)
//
// Each subtask's figures (subStats) belong to the Job, not to an incarnation: Subtasks reads them at any time, in
// graph order. Rows in are counted as an input runner takes a batch, rows out as the subtask emits (a sink: as it
// writes), both per subtask and staged with each checkpoint (keyCounts); the watermark is the last one the
// subtask emitted (a sink's: its input watermark, whose minimum is JobStatus.Watermark). Busy time is the time
// spent on an element or in a source's Produce minus the time blocked; backpressured time is the time a send
// waited on a full channel, timed only when the channel is full; a call in progress counts as it goes, so a stuck
// subtask shows. Rates and ratios come from a ticker that samples the counts every second while the job runs and
// keeps five samples: a rate is from the oldest kept sample to the figures read now (TestNewSubtaskRatesFromSamples).
// After each persist the snapshot worker reads the snapshot's files (state.SnapshotFiles): StateBytes is all of
// them, the checkpoint's bytes what the previous snapshot did not have, in-flight logs added; the ack Reports them
// with the align wait to the coordinator, whose checkpoint.History keeps the records (Checkpoints) and the job's
// totals (restarts by cause: RestartFailure, RestartCheckpoint, RestartDeploy; checkpoints by outcome; adaptive
// switches; StartedAt) in the checkpoint directory. NewJob reads that history, so a new Job over the same
// directory goes on from it, and a damaged one fails NewJob (XX001). Sources that implement SourceProgress give
// their lag, sinks that implement SinkProgress their committed bytes; the runtime times each sink commit.
//
// A Job is a prometheus.Collector (metrics.go) of the clinksql_* series with its id as constant label: the
// counters are the persisted totals, so they never reset when the job or the process restarts; the busy and
// backpressured seconds and sink commit histograms are of this process. Register registers it in place of an
// earlier Job of the same id (the engine registers at deploy and unregisters at drop, finish and close).
package exec
