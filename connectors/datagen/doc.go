// Package datagen is connector = 'datagen': a deterministic generator source with Flink's datagen options.
//
// New derives every value from (seed, column name, global row number) with splitmix64 (package
// connectors/internal/gen); subtask k of p produces rows k, k+p, k+2p, ...; its offset is its next row and largest
// event time (restorable at the same parallelism only). ConfigFromOptions reads Flink's datagen WITH options;
// Validate opens a generator once to check the columns against them (ranges, types).
//
// It must never use a stateful random stream: a replay from a restored offset must reproduce the same rows, and a
// column's values must not change when other columns are added.
package datagen
