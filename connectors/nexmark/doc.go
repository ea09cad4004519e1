// Package nexmark is connector = 'nexmark': New generates one table of the Nexmark model as the Flink Nexmark
// benchmark defines it: event n (0-based, all types) is a person, an auction or a bid by n mod (1+3+46) under the
// configured proportions; ids start at 1000 and follow Flink's lastBase0PersonId/AuctionId arithmetic; bids go
// to hot auctions and bidders, auctions to hot sellers, with Flink's ratios; event time is a fixed base
// (2026-01-01) plus n times 1e6/first-event.rate microseconds, truncated to milliseconds. Every value of event n
// is a pure function of (seed, n, field) by splitmix64 hashes (one independent hash per random draw, read as
// digits); random strings are slices of per-seed character pools and the 10004 channel urls are a per-seed
// table, so nothing is a stateful stream and no state is kept. Subtask k of p takes the chunks k, k+p, ... (a
// cycle is one round of the proportions, 50 events; a chunk is about one batch of the table's rows in consecutive
// cycles, at most 1024), so its event times increase and the rows do not depend on p. At p > 1 a batch ends at a
// chunk's end when that keeps 7/8 of its rows, so every batch is a run of consecutive events as at p = 1:
// batches of cycles taken one by one spanned p times the event time, and after a hash exchange an updating
// aggregate emitted a changelog row per group in p times as many distinct groups per batch (q17: 2.4x the rows
// at p = 2). Its offset is its next row (with table, proportions and chunk size; an offset of an older build
// restores its one-cycle chunks), restorable at the same parallelism only. Columns
// are matched to the table's fields by name ignoring case and underscores; only declared columns are built,
// column-wise into Arrow buffers from TaskContext.Alloc. The source has no watermark of its own
// (operators.WithWatermark applies the stream's WATERMARK clause).
package nexmark
