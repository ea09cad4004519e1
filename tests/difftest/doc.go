// Package difftest is the differential suite: a seeded generator of random tables and queries in the dialect
// clinksql and PostgreSQL 15 share, each query run on clinksql (ad hoc, and as a materialized view) and on a
// throwaway Postgres cluster the test starts, compared as multisets.
//
// What is generated (gen.go): three tables of the same schema (integers of every width, REAL, DOUBLE, NUMERIC(12,3),
// text, boolean, an event time) holding edge values (0, -1, min/max integers, NULL, empty strings, huge and tiny
// doubles, Infinity, NUMERIC with scale); queries that project and filter with arithmetic, comparisons, boolean
// logic over NULLs, CASE/COALESCE/NULLIF, string functions, casts; aggregates (COUNT, COUNT DISTINCT, SUM, MIN,
// MAX, AVG, FILTER) with and without GROUP BY and HAVING; inner, left, right and full joins on k plus filters;
// UNION ALL; DISTINCT; TUMBLE and HOP windows (Postgres: date_bin, and generate_series for HOP). Data reach
// clinksql through INSERT INTO an internal stream (the same VALUES as Postgres' INSERT), in event-time order, the
// last row of each table a sentinel far in the future so that a view's windows all fire; window queries filter
// it out.
//
// The comparison (Runner.Verdict): rows as multisets of Postgres text forms; columns whose values may differ in
// the last digits (floats, NUMERIC quotients and averages) rounded to SigDigits significant digits on both sides.
// Where Postgres raises a data error (class 22), an ad-hoc SELECT must raise one too (any code of the class); a
// materialized view runs with errors.mode 'null' (the default), so there it must build without error, and its rows
// are not compared. A Postgres error of another class is a generator bug and fails the run.
//
// Known gaps (gaps.go, KnownGaps) are differences being fixed elsewhere: the generator avoids them while they are
// listed. A mismatch is reported with the seed, the query in both dialects, both results, and a repro script over
// tables shrunk to the fewest rows that still show it.
//
// Postgres: the binaries of $PGBIN, /usr/lib/postgresql/15/bin or PATH (`make test-tools` installs
// postgresql-15); initdb in a temporary directory, a free loopback port, run as the postgres user when root.
// Without the binaries the test skips, except under CI=true, where it fails.
//
// Knobs: DIFF_N queries (default 200 in -short, 500 otherwise; `make difftest` runs 2000), DIFF_SEED (default 1
// in -short, so `make test` is deterministic; otherwise from the clock, printed; a failure prints the seed that
// replays it), DIFF_GAPS (see ActiveGaps).
package difftest
