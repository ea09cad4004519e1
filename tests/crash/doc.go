// Package crash is the crash harness of the real clinksql binary (`make crashtest`; a short run in `make test`).
//
// Each iteration, drawn from a seed: start `clinksql serve` on a fresh data directory and, over pgx, set up a
// throttled bounded datagen stream, a windowed aggregate (TUMBLE or HOP; COUNT, SUM, MIN, MAX per key) into a
// Parquet sink, a filtered projection into a CSV sink, an interval self-join of the stream into a CSV sink and an
// updating GROUP BY into an upsert CSV sink (compared once its changelog is applied), with a small checkpoint
// interval and the checkpoint mode (aligned, unaligned, adaptive) and parallelism (1, 2) rotating with the seed. Then kill -9 the server at seeded
// random moments, 1 to 3 times, restarting it on the same data directory each time; the last run goes on until
// SHOW JOBS says every job FINISHED, and stops with SIGTERM.
//
// The committed files (read directly: Parquet with parquet-go, CSV with encoding/csv) must equal, as multisets,
// the output of a failure-free run of the same pipeline (unthrottled, `clinksql exec --wait`, its own data
// directory) and the rows computed in Go from the generator's definition (sequence columns, and random columns
// from their documented hash of seed, column name and row number). The Parquet output is also read back through
// a parquet stream in the server.
//
// Knobs: CRASH_N iterations (default 200; 4 with -short), CRASH_SEED the first seed (default 1; alone it replays
// one iteration), CRASH_DRIVER=serve|exec (serve by default; exec: each run is `clinksql exec --wait`, killed the
// same way), CRASH_RACE=1 builds the binary with the race detector, CRASH_KEEP=1 keeps every iteration's
// directory. A failed iteration prints its seed and keeps its data directory and process logs in /tmp/crash-<seed>.
package crash
