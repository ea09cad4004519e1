// Package nexmark is connector = 'nexmark': New generates one table of the Nexmark model as the Flink Nexmark
// benchmark defines it: event n (0-based, all types) is a person, an auction or a bid by n mod (1+3+46) under the
// configured proportions; ids start at 1000 and follow Flink's lastBase0PersonId/AuctionId arithmetic; bids go
// to hot auctions and bidders, auctions to hot sellers, with Flink's ratios; event time is a fixed base
// (2026-01-01) plus n times 1e6/first-event.rate microseconds, truncated to milliseconds. Every value of event n
// is a pure function of (seed, n, field) by splitmix64 hashes (one independent hash per random draw, read as
// digits); random strings are slices of per-seed character pools and the 10004 channel urls are a per-seed
// table, so nothing is a stateful stream and no state is kept. Subtask k of p takes the cycles k, k+p, ... (a
// cycle is one round of the proportions, 50 events), so its event times increase and the rows do not depend on
// p. Its offset is its next row (with table and proportions), restorable at the same parallelism only. Columns
// are matched to the table's fields by name ignoring case and underscores; only declared columns are built,
// column-wise into Arrow buffers from TaskContext.Alloc. The source has no watermark of its own
// (operators.WithWatermark applies the stream's WATERMARK clause).
package nexmark
