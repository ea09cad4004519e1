// Package inspect reads the checkpoints of a data directory for people (clinksql state-cat): the jobs, their
// checkpoints (markers, sizes, files), and one checkpoint's snapshot per operator subtask, decoded: source offsets
// and watermarks, keyed state by key group (through the operator's own restore code and row codec), timers,
// in-flight records captured by unaligned checkpoints per input channel, a 2PC sink's staged and committed
// transactions, staged handles and commit receipts.
//
// # What it must never do
//
//   - Write into the data directory, take its lock, or open a live store: a server may be running on it. Every
//     file is read through a file system that refuses writes outside a scratch directory of its own; a keyed
//     snapshot is restored into that scratch directory (the restore's own code: its sstables hard-linked or
//     copied, never ingested from their place), never into the job's working store.
//   - Guess. Files are checked as the engine checks them (frames, chain listings, Pebble's block checksums, the
//     COMPLETED marker); damage is the engine's *state.CorruptError naming the file (XX001), and the command exits
//     non-zero. A value whose schema cannot be recovered (the job's statement no longer plans, an operator without
//     a decoder, a connector's offset) is shown as hex with its length.
//
// # Where the schemas come from
//
// The catalog keeps each job's statement and settings; engine.PlanJob plans it again exactly as a re-deployment
// does (engine.PlanOnlyEnv: the catalog only, no log opened), which gives the graph: node ids, parallelism, which
// nodes keep keyed state, and the operators, which decode their own entries (exec.StateDecoder). In-flight
// records carry their Arrow schema, so they always decode.
//
// # A running server
//
// Retention may delete a checkpoint while it is read. A read that fails on a checkpoint whose COMPLETED marker is
// gone by then reports that the checkpoint was retired (run again), not damage.
package inspect
