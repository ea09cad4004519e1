// Package crash is the crash harness of the real clinksql binary (`make crashtest`; a short run in `make test`).
//
// Each iteration, drawn from a seed: start `clinksql serve` on a fresh data directory and, over pgx, set up a
// throttled bounded datagen stream, a windowed aggregate (TUMBLE or HOP; COUNT, SUM, MIN, MAX per key) into a
// Parquet sink, a filtered projection into a CSV sink and into a CSV sink partitioned by the key (at most three
// open partition files per subtask; the key is taken back from the directory names, and every partition must have
// its _SUCCESS at the end), an interval self-join of the stream into a CSV sink and an
// updating GROUP BY into an upsert CSV sink (compared once its changelog is applied), with a small checkpoint
// interval and the checkpoint mode (aligned, unaligned, adaptive) and parallelism (1, 2) rotating with the seed.
//
// The Kafka pipeline joins every iteration (kafka_test.go): a kfake process of its own (tests/kafkatest, a random
// port; it outlives clinksql's kills) with a JSON topic of 8 partitions, into which a producer goroutine writes
// the generator's rows during the run at a seeded pace, each row into the partition of its key, so every
// partition is in event-time order. A Kafka stream (WATERMARK on ts, bounded with 'scan.bounded.mode' =
// 'specific-offsets' at the per-partition counts known in advance, so its jobs finish) feeds the same windowed
// aggregate into an exactly-once Kafka sink (a second topic) and into a Parquet sink, and the same filtered
// projection into a CSV sink (not into the Kafka sink: replay suppression separates receipted output by the
// watermark, which a filter's output does not follow).
//
// Then kill -9 the server 1 to 3 times, restarting it on the same data directory each time; the last run goes on
// until SHOW JOBS says every job FINISHED, and stops with SIGTERM. Kills come at seeded random moments (a quarter
// of them in the middle of a graceful stop that a SIGTERM began) or, drawn from the seed, aimed at the server's
// log lines (it runs with --log-level debug): at the Nth "checkpoint completed" of the exactly-once sink's job,
// printed after COMPLETED-N is durable and before the sinks commit (the kill lands before, during or after the
// commit, before CONFIRMED-N), and at a line of the in-doubt walk of the next start (its start, a handle probed,
// a receipt taken as proof), half of those with the broker stopped (SIGSTOP) at the line until the kill, so the
// walk dies waiting for an answer. An aimed kill whose line does not come falls back to a moment.
//
// The committed files (read directly: Parquet with parquet-go, CSV with encoding/csv) and the exactly-once topic
// (read with a read_committed consumer to its last stable offset) must equal, as multisets, the output of a
// failure-free run of the same pipeline (unthrottled, `clinksql exec --wait`, its own data directory and its own
// sink topic) and the rows computed in Go from the generator's definition (sequence columns, and random columns
// from their documented hash of seed, column name and row number). The Parquet output is also read back through
// a parquet stream in the server.
//
// The summary counts kills (at random moments and aimed at each kind of line) and, from the server's log lines
// (serve only), the in-doubt protocol at work: resolutions begun, checkpoints they confirmed, fallbacks, handles
// probed, commit receipts taken as proof, unresolved markers written and settled, replay suppressions and the
// rows they dropped.
//
// Two more harnesses crash sources that cannot replay (their consumption is an ack or a confirmed LSN, given only
// when a checkpoint completes). TestCrashKill9NATS (nats_test.go): a nats-server of the iteration's own, the
// generator's rows published into a JetStream stream during the run, a windowed aggregate into a NATS sink (the
// duplicate window) and a Parquet sink, both equal to the Go model as multisets. TestCrashKill9Postgres
// (postgres_test.go): a PostgreSQL 15 cluster of the iteration's own (pgtest), a table the test inserts into, updates
// and deletes from during the run, read by a postgres-cdc stream into an updating GROUP BY and a Postgres upsert
// sink, whose table must equal Postgres' own GROUP BY over the source table, with no prepared transaction left.
// TestNATSKillBetweenBarrierAndCompletion and TestCDCKillBetweenBarrierAndCompletion stop the server (SIGSTOP) at
// the source's debug line of a barrier and kill it only when that checkpoint has no COMPLETED marker: nothing past
// the last completed checkpoint is acked or confirmed, and the output counts every row once.
//
// Knobs: CRASH_N iterations (default 200; 4 with -short), CRASH_SEED the first seed (default 1; alone it replays
// one iteration), CRASH_DRIVER=serve|exec (serve by default; exec: each run is `clinksql exec --wait`, killed the
// same way, but only at random moments: exec prints no log lines), CRASH_KAFKA=0 leaves the Kafka pipeline out,
// CRASH_RACE=1 builds the binary with the race detector, CRASH_KEEP=1 keeps every iteration's directory. A failed
// iteration prints its seed and keeps its data directory and process logs (the kfake process's in
// logs/kfake.log) in /tmp/crash-<seed>.
package crash
