// Package sqllogic holds the sqllogictest suites (testdata/*.slt) and their runner. Each file runs twice, each time
// against a fresh engine on its own data directory: in process, through the same engine.Session path the CLI and
// pgwire use, and over pgwire, against a real `clinksql serve` through pgx's simple protocol (pgwire_test.go), with
// the same expectations. A file with a line `# pg: check` runs a third time, against a throwaway PostgreSQL 15
// (postgres_test.go: streams become tables, materialized views plain views, `# pg: skip <why>` before a case leaves
// it out), so its expectations are Postgres' own; SQLLOGIC_MODES=postgres SQLLOGIC_FILL=1 writes Postgres' rows into
// a new file's cases. SQLLOGIC_MODES=inproc (or pgwire, postgres) runs one mode; SQLLOGIC_FILES=glob some files.
//
// Directives (cockroach and RisingWave use the same ones):
//
//	statement ok                      the statement succeeds
//	statement ok notice <regexp>      ... and one of its notices (NoticeResponse) matches the regexp
//	statement error <regexp>          it fails; the regexp is matched against "<SQLSTATE> <line>:<col> <message>"
//	                                  (without "<line>:<col> " when the error has no position)
//	query <types> [rowsort|valuesort] the rows after ---- are the result; one letter per column (I integer,
//	                                  R decimal or float, T text, B boolean, D timestamp/date/interval, X any value,
//	                                  written * in the expected rows: one that varies from run to run, as
//	                                  SUBSCRIBE's logical time); values are separated by one space, NULL is NULL and
//	                                  an empty string is (empty)
//	query error <regexp>              as statement error
//	flush                             FLUSH: every job checkpoints and commits
//	sleep <duration>                  wait (e.g. for a datagen job to make progress)
//	restart                           close the engine (jobs stop gracefully) and open it again on the same data
//	                                  directory; jobs resume from their last completed checkpoint
//	wait                              wait until every job over bounded inputs has finished
//	external postgres                 the statements up to the next blank line run on a PostgreSQL 15 server of the
//	                                  file's own (package pgtest, started on first use), whose URL ${PG_URL} stands
//	                                  for in the file's statements: a lookup join's table (nexmark_source.slt's q13)
//
// A statement runs until a blank line (or ---- for queries). Expected results are derived by hand or from a
// reference database (the comments say which), never copied from our own output unchecked.
package sqllogic
