// Package corrupt is the corruption suite of the real clinksql binary (in `make test`: every case once, two at a
// time, about half a minute).
//
// One seeded setup over pgx builds a data directory with every kind of durable file the engine reads back: an
// internal stream (segments, LAST), a materialized view grouped by key (its log, a job with a keyed Pebble state
// whose chain names a base (a Pebble checkpoint: tables, MANIFEST, OPTIONS) and delta sstables, small-state
// snapshots with the source offsets, COMPLETED markers, the checkpoint history and, after retention, HIGHWATER) and the catalog. Then, per file kind and per damage (delete, truncate, flip one seeded
// byte), a copy of that directory is damaged while no server runs, and `clinksql serve` is started on it. The
// outcome must be one of: the server refuses to start with an error naming the file; or every probe (a SELECT
// of the stream, a SELECT of the view, SHOW JOBS, and after one more INSERT and FLUSH the view again) answers
// exactly what an undamaged copy answers, or fails with XX001 naming the file, or shows the job FAILED with an
// error naming the file while the view keeps its committed rows. Any other answer fails the test. The matrix
// (file kind x damage x outcome) goes to t.Log.
//
// CORRUPT_SEED picks the seed (default 1); CORRUPT_CASE=<substring of "kind/damage"> runs only matching cases.
package corrupt
