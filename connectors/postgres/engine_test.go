package postgres_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/clinksql/clinksql/engine"
	"github.com/clinksql/clinksql/internal/enginetest"
	"github.com/clinksql/clinksql/sqlerr"
	"github.com/clinksql/clinksql/tests/pgtest"
)

// query returns sql's rows in Postgres, each row's values as text joined by '|', sorted.
func query(t *testing.T, db *pgx.Conn, sql string) []string {
	t.Helper()
	rows, err := db.Query(context.Background(), sql, pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	var out []string
	for rows.Next() {
		var parts []string
		for _, v := range rows.RawValues() {
			if v == nil {
				parts = append(parts, "NULL")
			} else {
				parts = append(parts, string(v))
			}
		}
		out = append(out, strings.Join(parts, "|"))
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	slices.Sort(out)
	return out
}

func pgExec(t *testing.T, db *pgx.Conn, sql string) {
	t.Helper()
	if _, err := db.Exec(context.Background(), sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func runner(t *testing.T, ctx context.Context, s *engine.Session) func(string) []*engine.Result {
	return func(sql string) []*engine.Result {
		t.Helper()
		res, err := s.Execute(ctx, sql)
		if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		return res
	}
}

// INSERT INTO a Postgres sink from a bounded stream, two subtasks: once the job finished, the table holds every
// row once and no prepared transaction is left; a second job's rows follow after a FLUSH.
func TestEngineAppendExactlyOnce(t *testing.T) {
	pg := pgtest.StartT(t, pgtest.Options{MaxPreparedTransactions: 20})
	db := pg.ConnectT(t)
	pgExec(t, db, `CREATE TABLE out (id bigint, name text, at timestamp)`)
	e := enginetest.Open(t, t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run := runner(t, ctx, e.NewSession())
	run(`SET parallelism = 2`)
	run(`CREATE STREAM g (id BIGINT) WITH (connector = 'datagen', 'number-of-rows' = '20000',
		'fields.id.kind' = 'sequence', 'fields.id.start' = '1')`)
	run(fmt.Sprintf(`CREATE SINK p (id BIGINT, name VARCHAR, at TIMESTAMP(3)) WITH (connector = 'postgres',
		url = 'jdbc:postgresql://127.0.0.1:%d/postgres?user=postgres', 'table-name' = 'public.out')`, pg.Port))
	run(`INSERT INTO p SELECT id, 'n' || CAST(id AS VARCHAR), TIMESTAMP '2024-01-01 00:00:00' FROM g`)
	if err := e.WaitBounded(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if got := query(t, db, `SELECT count(*), count(DISTINCT id), min(id), max(id), count(*) FILTER (WHERE name = 'n' || id) FROM out`); got[0] != "20000|20000|1|20000|20000" {
		t.Fatalf("table: %v, want 1..20000 once each", got)
	}
	run(`INSERT INTO p VALUES (20001, 'x', NULL), (20002, NULL, NULL)`)
	run(`FLUSH`)
	if got := query(t, db, `SELECT count(*), count(DISTINCT id) FROM out`); got[0] != "20002|20002" {
		t.Fatalf("table: %v, want 20002 rows", got)
	}
	if got := query(t, db, `SELECT gid FROM pg_prepared_xacts`); len(got) != 0 {
		t.Fatalf("prepared transactions left: %v", got)
	}
	if _, err := e.NewSession().Execute(ctx, `INSERT INTO p SELECT id, 'a', NULL FROM g GROUP BY id HAVING COUNT(*) > 1`); err == nil ||
		!strings.Contains(err.Error(), "append-only") {
		t.Fatalf("an updating query into an append Postgres sink: %v, want a refusal", err)
	}
}

// A job writing into a Postgres sink survives the engine closing mid-stream and opening again (the job restored
// from its last checkpoint, its sink opened again): the table holds ids 1..n, each once. (A crash between PREPARE
// and COMMIT PREPARED is TestRecoveryCommitsPreparedOfCompletedCheckpoint's, and tests/crash's kill -9.)
func TestEngineRestartKeepsExactlyOnce(t *testing.T) {
	pg := pgtest.StartT(t, pgtest.Options{MaxPreparedTransactions: 20})
	db := pg.ConnectT(t)
	pgExec(t, db, `CREATE TABLE out (id bigint)`)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	e := enginetest.Open(t, dir)
	run := runner(t, ctx, e.NewSession())
	run(`SET checkpoint.interval = '200ms'`)
	run(`CREATE STREAM g (id BIGINT) WITH (connector = 'datagen', 'rows-per-second' = '20000',
		'fields.id.kind' = 'sequence', 'fields.id.start' = '1')`)
	run(fmt.Sprintf(`CREATE SINK p (id BIGINT) WITH (connector = 'postgres', url = '%s', 'table-name' = 'out')`, pg.DSN()))
	run(`INSERT INTO p SELECT id FROM g`)
	run(`FLUSH`)
	time.Sleep(300 * time.Millisecond) // let a checkpoint's interval go by with rows in flight
	if err := e.Close(ctx); err != nil {
		t.Fatal(err)
	}
	e = enginetest.Open(t, dir)
	runner(t, ctx, e.NewSession())(`FLUSH`)
	if err := e.Close(ctx); err != nil {
		t.Fatal(err)
	}
	got := query(t, db, `SELECT count(*), count(DISTINCT id), min(id), max(id) FROM out`)
	var n, distinct, lo, hi int
	fmt.Sscanf(strings.ReplaceAll(got[0], "|", " "), "%d %d %d %d", &n, &distinct, &lo, &hi)
	if n == 0 || distinct != n || lo != 1 || hi != n {
		t.Fatalf("table: %v, want 1..n once each", got)
	}
	if got := query(t, db, `SELECT gid FROM pg_prepared_xacts`); len(got) != 0 {
		t.Fatalf("prepared transactions left: %v", got)
	}
	t.Logf("%d rows across the restart", n)
}

// An updating GROUP BY with HAVING (updates and deletes) into an upsert sink, declared both ways (PRIMARY KEY
// NOT ENFORCED, and type = 'upsert' with 'primary_key'): each table equals the same query computed by Postgres
// over the same rows.
func TestEngineUpsertEqualsPostgresGroupBy(t *testing.T) {
	pg := pgtest.StartT(t, pgtest.Options{MaxPreparedTransactions: 20})
	db := pg.ConnectT(t)
	dir := t.TempDir()
	e := enginetest.Open(t, dir)
	var csv strings.Builder
	pgExec(t, db, `CREATE TABLE src (k bigint, v bigint)`)
	var vals []string
	for i := range 3000 {
		k, v := (i*7919)%37, (i*104729)%1000-500
		fmt.Fprintf(&csv, "%d,%d\n", k, v)
		vals = append(vals, fmt.Sprintf("(%d,%d)", k, v))
	}
	pgExec(t, db, `INSERT INTO src VALUES `+strings.Join(vals, ","))
	if err := os.WriteFile(filepath.Join(dir, "src.csv"), []byte(csv.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	pgExec(t, db, `CREATE TABLE agg1 (k bigint PRIMARY KEY, n bigint, s bigint, lo bigint, hi bigint)`)
	pgExec(t, db, `CREATE TABLE agg2 (k bigint, n bigint, s bigint, lo bigint, hi bigint, extra text DEFAULT 'd', UNIQUE (k))`)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run := runner(t, ctx, e.NewSession())
	run(`SET parallelism = 2`)
	run(`SET checkpoint.interval = '100ms'`)
	run(`CREATE STREAM src (k BIGINT, v BIGINT) WITH (connector = 'file', format = 'csv', path = 'src.csv')`)
	run(fmt.Sprintf(`CREATE SINK a1 (k BIGINT, n BIGINT, s BIGINT, lo BIGINT, hi BIGINT, PRIMARY KEY (k) NOT ENFORCED)
		WITH (connector = 'postgres', url = '%s', 'table-name' = 'agg1', 'sink.buffer-flush.max-rows' = '5')`, pg.DSN()))
	run(fmt.Sprintf(`CREATE SINK a2 (k BIGINT, n BIGINT, s BIGINT, lo BIGINT, hi BIGINT)
		WITH (connector = 'postgres', url = '%s', 'table-name' = 'agg2', type = 'upsert', primary_key = 'k')`, pg.DSN()))
	const q = `SELECT k, COUNT(*), SUM(v), MIN(v), MAX(v) FROM src GROUP BY k HAVING COUNT(*) < 82 OR SUM(v) > 0`
	res := run(`EXPLAIN INSERT INTO a2 ` + q)
	for _, r := range res[0].Rows {
		if strings.Contains(*r[0], "RowKind") {
			t.Fatalf("an upsert Postgres sink got a row kind column:\n%v", *r[0])
		}
	}
	run(`INSERT INTO a1 ` + q)
	run(`INSERT INTO a2 ` + q)
	if err := e.WaitBounded(ctx, nil); err != nil {
		t.Fatal(err)
	}
	want := query(t, db, `SELECT k, count(*), sum(v), min(v), max(v) FROM src GROUP BY k HAVING count(*) < 82 OR sum(v) > 0`)
	if got := query(t, db, `SELECT * FROM agg1`); !slices.Equal(got, want) {
		t.Fatalf("agg1:\n%v\nwant\n%v", got, want)
	}
	if got := query(t, db, `SELECT k, n, s, lo, hi FROM agg2`); !slices.Equal(got, want) {
		t.Fatalf("agg2:\n%v\nwant\n%v", got, want)
	}
	all := query(t, db, `SELECT k FROM src GROUP BY k`)
	if len(want) == len(all) || len(want) == 0 {
		t.Fatalf("the HAVING keeps %d of %d groups: the test wants some deleted", len(want), len(all))
	}
}

// Every type the sink carries reaches Postgres with its value: NUMERIC exactly, timestamps to the microsecond
// (into timestamp and, read as UTC, timestamptz), dates, intervals, bytea, booleans, floats.
func TestEngineTypesRoundTrip(t *testing.T) {
	pg := pgtest.StartT(t, pgtest.Options{MaxPreparedTransactions: 20})
	db := pg.ConnectT(t)
	pgExec(t, db, `CREATE TABLE ty (i2 smallint, i4 int, i8 bigint, r real, d double precision, n numeric(38,10),
		n2 numeric(12,2), s varchar(20), tx text, b boolean, dt date, ts timestamp(6), tz timestamptz, iv interval, by bytea)`)
	e := enginetest.Open(t, t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run := runner(t, ctx, e.NewSession())
	run(fmt.Sprintf(`CREATE SINK ty (i2 SMALLINT, i4 INT, i8 BIGINT, r REAL, d DOUBLE, n DECIMAL(38,10), n2 DECIMAL(12,2),
		s VARCHAR, tx TEXT, b BOOLEAN, dt DATE, ts TIMESTAMP(6), tz TIMESTAMP, iv INTERVAL, by BYTEA)
		WITH (connector = 'postgres', url = '%s', 'table-name' = 'ty')`, pg.DSN()))
	run(`INSERT INTO ty VALUES
		(-32768, 2147483647, -9223372036854775808, 1.5, 0.1, 1234567890123456789012345678.0123456789, -0.01,
		 'a,"b"
c', '', true, DATE '1999-12-31', TIMESTAMP '2024-02-29 23:59:59.123456',
		 TIMESTAMP '1970-01-01 00:00:00', INTERVAL '1 day 02:03:04.5', CAST('\x00ff' AS BYTEA)),
		(NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)`)
	if err := e.WaitBounded(ctx, nil); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"-32768|2147483647|-9223372036854775808|1.5|0.1|1234567890123456789012345678.0123456789|-0.01|a,\"b\"\nc||t|1999-12-31|2024-02-29 23:59:59.123456|1970-01-01 00:00:00+00|1 day 02:03:04.5|\\x00ff",
		"NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL",
	}
	if got := query(t, db, `SELECT * FROM ty`); !slices.Equal(got, want) {
		t.Fatalf("got\n%q\nwant\n%q", got, want)
	}
	// The upsert path (text cast to each column's type) writes the same values.
	pgExec(t, db, `CREATE TABLE tyu (LIKE ty)`)
	pgExec(t, db, `ALTER TABLE tyu ADD PRIMARY KEY (i4)`)
	run(fmt.Sprintf(`CREATE SINK tyu (i2 SMALLINT, i4 INT, i8 BIGINT, r REAL, d DOUBLE, n DECIMAL(38,10), n2 DECIMAL(12,2),
		s VARCHAR, tx TEXT, b BOOLEAN, dt DATE, ts TIMESTAMP(6), tz TIMESTAMP, iv INTERVAL, by BYTEA, PRIMARY KEY (i4) NOT ENFORCED)
		WITH (connector = 'postgres', url = '%s', 'table-name' = 'tyu')`, pg.DSN()))
	run(`INSERT INTO tyu SELECT * FROM (VALUES
		(-32768, 2147483647, -9223372036854775808, 1.5, 0.1, 1234567890123456789012345678.0123456789, -0.01,
		 'a,"b"
c', '', true, DATE '1999-12-31', TIMESTAMP '2024-02-29 23:59:59.123456',
		 TIMESTAMP '1970-01-01 00:00:00', INTERVAL '1 day 02:03:04.5', CAST('\x00ff' AS BYTEA)))`)
	if err := e.WaitBounded(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if got := query(t, db, `SELECT * FROM tyu`); !slices.Equal(got, want[:1]) {
		t.Fatalf("upsert: got\n%q\nwant\n%q", got, want[:1])
	}
	// Columns whose table type differs from the sink's: each value in the table's type.
	pgExec(t, db, `CREATE TABLE cv (a int, b numeric, c numeric, d timestamp, e jsonb, f uuid, g real, h smallint, i timestamptz)`)
	run(fmt.Sprintf(`CREATE SINK cv (a BIGINT, b BIGINT, c DOUBLE, d DATE, e VARCHAR, f VARCHAR, g DOUBLE, h INT, i DATE)
		WITH (connector = 'postgres', url = '%s', 'table-name' = 'cv')`, pg.DSN()))
	run(`INSERT INTO cv VALUES (-7, 9223372036854775807, 0.125, DATE '1960-02-29', '{"x": [1, 2]}',
		'A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11', 0.5, -300, DATE '2000-01-01')`)
	if err := e.WaitBounded(ctx, nil); err != nil {
		t.Fatal(err)
	}
	wantCV := []string{`-7|9223372036854775807|0.125|1960-02-29 00:00:00|{"x": [1, 2]}|a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11|0.5|-300|2000-01-01 00:00:00+00`}
	if got := query(t, db, `SELECT * FROM cv`); !slices.Equal(got, wantCV) {
		t.Fatalf("conversions: got\n%q\nwant\n%q", got, wantCV)
	}
}

// CREATE SINK refuses, with a SQLSTATE at the option at fault, what no job could write: a server without
// prepared transactions (naming max_prepared_transactions), an upsert sink whose table has no unique index on
// its key, a missing table or column, an incompatible column type, a server that cannot be reached.
func TestEngineCreateSinkRefusals(t *testing.T) {
	pg := pgtest.StartT(t, pgtest.Options{MaxPreparedTransactions: 20})
	noPrep := pgtest.StartT(t, pgtest.Options{})
	db := pg.ConnectT(t)
	pgExec(t, db, `CREATE TABLE nokey (k bigint, v text)`)
	pgExec(t, db, `CREATE TABLE twokey (k bigint, v text, PRIMARY KEY (k, v))`)
	pgExec(t, db, `CREATE TABLE need (k bigint, v text, w int NOT NULL)`)
	db2 := noPrep.ConnectT(t)
	pgExec(t, db2, `CREATE TABLE nokey (k bigint PRIMARY KEY, v text)`)
	e := enginetest.Open(t, t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := e.NewSession()
	for _, tc := range []struct {
		sql, code, at, msg string
	}{
		{fmt.Sprintf(`CREATE SINK x (k BIGINT, v VARCHAR) WITH (connector = 'postgres', url = '%s', 'table-name' = 'nokey')`, noPrep.DSN()),
			"55000", "url", "max_prepared_transactions"},
		{fmt.Sprintf(`CREATE SINK x (k BIGINT, v VARCHAR, PRIMARY KEY (k) NOT ENFORCED) WITH (connector = 'postgres', url = '%s', 'table-name' = 'nokey')`, pg.DSN()),
			"42P10", "'table-name'", "no primary key or unique index on exactly (k)"},
		{fmt.Sprintf(`CREATE SINK x (k BIGINT, v VARCHAR) WITH (connector = 'postgres', url = '%s', 'table-name' = 'twokey', type = 'upsert', primary_key = 'k')`, pg.DSN()),
			"42P10", "'table-name'", "no primary key or unique index on exactly (k)"},
		{fmt.Sprintf(`CREATE SINK x (k BIGINT, v VARCHAR) WITH (connector = 'postgres', url = '%s', 'table-name' = 'missing')`, pg.DSN()),
			"42P01", "'table-name'", "does not exist"},
		{fmt.Sprintf(`CREATE SINK x (k BIGINT, nope VARCHAR) WITH (connector = 'postgres', url = '%s', 'table-name' = 'nokey')`, pg.DSN()),
			"42703", "VARCHAR) WITH", `has no column "nope"`},
		{fmt.Sprintf(`CREATE SINK x (k BIGINT, v DATE) WITH (connector = 'postgres', url = '%s', 'table-name' = 'nokey')`, pg.DSN()),
			"42804", "DATE)", "column v is text"},
		{fmt.Sprintf(`CREATE SINK x (k BIGINT, v VARCHAR) WITH (connector = 'postgres', url = '%s', 'table-name' = 'need')`, pg.DSN()),
			"42804", "'table-name'", "column w"},
		{`CREATE SINK x (k BIGINT) WITH (connector = 'postgres', url = 'postgres://postgres@127.0.0.1:1/postgres?connect_timeout=2', 'table-name' = 'nokey')`,
			"08001", "url", "cannot connect"},
		{fmt.Sprintf(`CREATE SINK x (k BIGINT) WITH (connector = 'postgres', url = '%s', 'table-name' = 'nokey', 'sink.buffer-flush.max-rows' = '0')`, pg.DSN()),
			"22023", "'sink.buffer-flush.max-rows'", "max-rows"},
		{fmt.Sprintf(`CREATE SINK x (k BIGINT, v VARCHAR, PRIMARY KEY (k) NOT ENFORCED) WITH (connector = 'postgres', url = '%s', 'table-name' = 'twokey', type = 'upsert', primary_key = 'v')`, pg.DSN()),
			"22023", "primary_key", "differ"},
	} {
		_, err := s.Execute(ctx, tc.sql)
		se, ok := err.(*sqlerr.Error)
		if !ok || se.Code != tc.code || !strings.Contains(se.Msg, tc.msg) {
			t.Errorf("%s:\n got %v, want %s (%q)", tc.sql, err, tc.code, tc.msg)
			continue
		}
		if want := strings.Index(tc.sql, tc.at); se.Pos != want {
			t.Errorf("%s:\n error at %d, want %d (%s): %v", tc.sql, se.Pos, want, tc.at, err)
		}
	}
}

// Postgres in and out: a postgres-cdc stream's updating GROUP BY into a materialized view and into a Postgres
// upsert sink, while rows are inserted, updated and deleted in Postgres: the sink table equals the view, and
// both equal Postgres' own GROUP BY over the source table.
func TestEngineCDCIntoUpsertSinkEqualsView(t *testing.T) {
	pg := pgtest.StartT(t, pgtest.Options{Logical: true, MaxPreparedTransactions: 20})
	db := pg.ConnectT(t)
	pgExec(t, db, `CREATE TABLE src (id int PRIMARY KEY, k int NOT NULL, v bigint NOT NULL)`)
	pgExec(t, db, `INSERT INTO src SELECT i, i % 7, i * 10 FROM generate_series(1, 200) i`)
	pgExec(t, db, `CREATE TABLE agg (k int PRIMARY KEY, n bigint, s bigint)`)
	e := enginetest.Open(t, t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s := e.NewSession()
	run := runner(t, ctx, s)
	run(`SET checkpoint.interval = '100ms'`)
	// A stream per job: a replication slot has one reader.
	for _, name := range []string{"src", "src_mv"} {
		run(fmt.Sprintf(`CREATE STREAM %s (id INT, k INT, v BIGINT, PRIMARY KEY (id) NOT ENFORCED) WITH (connector = 'postgres-cdc',
			hostname = '127.0.0.1', port = '%d', username = 'postgres', 'database-name' = 'postgres', 'table-name' = 'src',
			'slot.name' = '%s_slot', sslmode = 'disable')`, name, pg.Port, name))
	}
	run(`CREATE MATERIALIZED VIEW mv AS SELECT k, COUNT(*) AS n, SUM(v) AS s FROM src_mv GROUP BY k`)
	run(fmt.Sprintf(`CREATE SINK agg (k INT, n BIGINT, s BIGINT, PRIMARY KEY (k) NOT ENFORCED)
		WITH (connector = 'postgres', url = '%s', 'table-name' = 'agg')`, pg.DSN()))
	run(`INSERT INTO agg SELECT k, COUNT(*), SUM(v) FROM src GROUP BY k`)
	for _, sql := range []string{
		`UPDATE src SET v = v + 1 WHERE id % 3 = 0`,
		`UPDATE src SET k = 100 WHERE id < 20`,
		`DELETE FROM src WHERE k = 3`,
		`INSERT INTO src SELECT i, i % 5, i FROM generate_series(201, 260) i`,
		`DELETE FROM src WHERE id BETWEEN 30 AND 40`,
	} {
		pgExec(t, db, sql)
	}
	want := query(t, db, `SELECT k, count(*), sum(v) FROM src GROUP BY k`)
	var sink, view []string
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		sink = query(t, db, `SELECT k, n, s FROM agg`)
		res := run(`SELECT k, n, s FROM mv`)
		view = view[:0]
		for _, r := range res[len(res)-1].Rows {
			view = append(view, *r[0]+"|"+*r[1]+"|"+*r[2])
		}
		slices.Sort(view)
		if slices.Equal(sink, want) && slices.Equal(view, want) {
			return
		}
	}
	jobs := run(`SHOW JOBS`)
	var states []string
	for _, r := range jobs[len(jobs)-1].Rows {
		var parts []string
		for _, v := range r {
			if v != nil {
				parts = append(parts, *v)
			}
		}
		states = append(states, strings.Join(parts, " "))
	}
	t.Fatalf("after a minute:\nsink %v\nview %v\nwant %v\njobs %v", sink, view, want, states)
}
