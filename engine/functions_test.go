package engine

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/clinksql/clinksql/sql/parser"
	"github.com/clinksql/clinksql/sqlerr"
)

// execErr runs sql and returns its error rendered as "CODE at line:col: message" ("no error" without one).
func execErr(t *testing.T, s *Session, sql string) string {
	t.Helper()
	_, err := s.Execute(context.Background(), sql)
	if err == nil {
		return "no error"
	}
	e := sqlerr.As(err)
	if e.Pos == sqlerr.NoPos {
		return e.Code + ": " + e.Msg
	}
	p := parser.PositionOf(sql, e.Pos)
	return fmt.Sprintf("%s at %d:%d: %s", e.Code, p.Line, p.Col, e.Msg)
}

// pins: SQL functions are inlined where they are called: parameters by name and $n, the arguments cast to the
// parameter types, the result to the return type; STRICT; functions calling functions; EXPLAIN shows the body.
func TestSQLFunctions(t *testing.T) {
	_, s := testEngine(t, t.TempDir())
	mustExec(t, s, `CREATE FUNCTION add_tax(price BIGINT, rate DOUBLE) RETURNS DOUBLE AS $$ SELECT price * (1 + rate) $$ LANGUAGE SQL`)
	mustExec(t, s, `CREATE FUNCTION inc(x BIGINT) RETURNS BIGINT LANGUAGE SQL AS 'SELECT x + 1'`)
	mustExec(t, s, `CREATE FUNCTION twice(BIGINT) RETURNS BIGINT RETURN inc($1) + inc($1) - 2`)
	mustExec(t, s, `CREATE FUNCTION label(n INT, s TEXT) RETURNS TEXT LANGUAGE sql STRICT RETURN coalesce(s, '?') || ':' || n`)
	mustExec(t, s, `CREATE FUNCTION half(x NUMERIC) RETURNS INT LANGUAGE sql RETURN x / 2`)
	equalLines(t, "calls", rows(t, s, `SELECT add_tax(100, 0.5), inc(41), twice(10), label(1, 'a'), label(NULL, 'b'), label(2, NULL), half(5)`),
		[]string{"150|42|20|a:1|NULL|NULL|3"})
	mustExec(t, s, `CREATE STREAM bids (price BIGINT, item VARCHAR)`)
	mustExec(t, s, `INSERT INTO bids VALUES (10, 'a'), (NULL, 'b'), (30, NULL)`)
	equalLines(t, "over a stream", rows(t, s, `SELECT item, add_tax(price, 0.1), inc(price) FROM bids ORDER BY price`),
		[]string{"a|11|11", "NULL|33|31", "b|NULL|NULL"})
	equalLines(t, "in WHERE and GROUP BY", rows(t, s, `SELECT inc(price) AS p, count(*) FROM bids WHERE inc(price) > 0 GROUP BY inc(price) ORDER BY p`),
		[]string{"11|1", "31|1"})
	res, err := s.Execute(context.Background(), `EXPLAIN SELECT inc(price) FROM bids`)
	if err != nil {
		t.Fatal(err)
	}
	if plan := strings.Join(resultLines(res[0]), "\n"); !strings.Contains(plan, "(price + 1)") {
		t.Fatalf("EXPLAIN does not show the inlined body:\n%s", plan)
	}
	equalLines(t, "SHOW FUNCTIONS", rows(t, s, `SHOW FUNCTIONS`), []string{
		"add_tax|price BIGINT, rate DOUBLE|DOUBLE|sql|price * (1 + rate)",
		"half|x DECIMAL|INT|sql|x / 2",
		"inc|x BIGINT|BIGINT|sql|x + 1",
		"label|n INT, s TEXT|TEXT|sql|coalesce(s, '?') || ':' || n",
		"twice|BIGINT|BIGINT|sql|inc($1) + inc($1) - 2",
	})
	equalLines(t, "clink_catalog.functions", rows(t, s, `SELECT name, returns, language, strict FROM clink_catalog.functions WHERE name LIKE 'l%'`),
		[]string{"label|TEXT|sql|t"})
}

// pins: CREATE FUNCTION's errors, with their SQLSTATE and the position in the statement (inside the body's string
// for the body's own errors), and the errors of calls that match no function.
func TestSQLFunctionErrors(t *testing.T) {
	_, s := testEngine(t, t.TempDir())
	mustExec(t, s, `CREATE FUNCTION inc(x BIGINT) RETURNS BIGINT LANGUAGE SQL AS 'SELECT x + 1'`)
	for _, c := range []struct{ sql, want string }{
		{`CREATE FUNCTION f(x BIGINT) RETURNS BIGINT LANGUAGE SQL AS 'SELECT x + y'`,
			`42703 at 1:72: column "y" does not exist`},
		{`CREATE FUNCTION f(x BIGINT) RETURNS BIGINT LANGUAGE SQL AS $$SELECT nope(x)$$`,
			`42883 at 1:69: function nope(bigint) does not exist`},
		{`CREATE FUNCTION f(x BIGINT) RETURNS BIGINT AS 'SELECT ''a'' || x' LANGUAGE SQL`,
			`42P13 at 1:55: return type mismatch in function declared to return bigint`},
		{`CREATE FUNCTION f(x BIGINT) RETURNS BIGINT LANGUAGE SQL AS 'SELECT $2'`,
			`42P02 at 1:68: there is no parameter $2`},
		{`CREATE FUNCTION f(x BIGINT) RETURNS BIGINT LANGUAGE SQL AS 'SELECT count(x)'`,
			`42803 at 1:68: aggregate and window functions are not allowed in a function's body`},
		{`CREATE FUNCTION f(x BIGINT, x INT) RETURNS BIGINT RETURN 1`, `42P13 at 1:29: parameter name "x" used more than once`},
		{`CREATE FUNCTION f(x BIGINT) RETURNS BIGINT LANGUAGE plpgsql AS 'begin end'`, `42704 at 1:53: language "plpgsql" does not exist`},
		{`CREATE FUNCTION upper(x TEXT) RETURNS TEXT RETURN x`, `42723 at 1:17: function upper is a built-in function`},
		{`CREATE FUNCTION inc(x BIGINT) RETURNS BIGINT RETURN x`, `42723 at 1:17: function "inc" already exists`},
		{`CREATE OR REPLACE FUNCTION inc(x BIGINT) RETURNS INT RETURN 1`, `42P13 at 1:50: cannot change return type of existing function`},
		{`CREATE OR REPLACE FUNCTION inc(x INT) RETURNS BIGINT RETURN 1`, `42P13 at 1:28: cannot change the parameter types of existing function inc(x BIGINT)`},
		{`CREATE OR REPLACE FUNCTION inc(x BIGINT) RETURNS BIGINT RETURN inc(x) + 1`,
			`54001 at 1:64: function inc calls itself, directly or through other functions: SQL functions are inlined, at most 32 deep`},
		{`SELECT inc(1, 2)`, `42883 at 1:8: function inc(integer, integer) does not exist`},
		{`SELECT inc(1.5::DOUBLE)`, `42883 at 1:8: function inc(double precision) does not exist`},
		{`SELECT inc('x')`, `22P02 at 1:12: invalid input syntax for type bigint: "x"`},
		{`DROP FUNCTION nope`, `42883 at 1:15: function nope does not exist`},
		{`DROP FUNCTION inc(text)`, `42883 at 1:15: function inc(text) does not exist`},
	} {
		if got := execErr(t, s, c.sql); got != c.want {
			t.Errorf("%s\n got %s\nwant %s", c.sql, got, c.want)
		}
	}
	// Mutual recursion, made through OR REPLACE, is caught too.
	mustExec(t, s, `CREATE FUNCTION g(x BIGINT) RETURNS BIGINT RETURN inc(x)`)
	if got := execErr(t, s, `CREATE OR REPLACE FUNCTION inc(x BIGINT) RETURNS BIGINT RETURN g(x)`); !strings.HasPrefix(got, "54001") {
		t.Errorf("mutual recursion: %s", got)
	}
	// A function that calls a function dropped since (nothing records that between functions; views and jobs
	// record both) fails where it is called, naming itself.
	mustExec(t, s, `CREATE FUNCTION base(x BIGINT) RETURNS BIGINT RETURN x * 10`)
	mustExec(t, s, `CREATE FUNCTION outer_fn(x BIGINT) RETURNS BIGINT RETURN base(x) + 1`)
	equalLines(t, "outer_fn", rows(t, s, `SELECT outer_fn(4)`), []string{"41"})
	mustExec(t, s, `DROP FUNCTION base`)
	if got, want := execErr(t, s, `SELECT 1 + outer_fn(4)`), `42883 at 1:12: in function outer_fn: function base(bigint) does not exist`; got != want {
		t.Errorf("dropped callee:\n got %s\nwant %s", got, want)
	}
	// Prepared (extended protocol): a $n inside a function's body is the function's, not the statement's.
	if _, err := s.Prepare(context.Background(), `CREATE FUNCTION p1(BIGINT) RETURNS BIGINT LANGUAGE sql AS 'SELECT $1 * 2'`, nil); err != nil {
		t.Fatalf("prepare CREATE FUNCTION: %v", err)
	}
	// A string literal and an untyped NULL pass to any parameter; a smaller integer widens.
	equalLines(t, "coercions", rows(t, s, `SELECT inc('41'), inc(NULL), inc(CAST(1 AS SMALLINT))`), []string{"42|NULL|2"})
	res, err := s.Execute(context.Background(), `DROP FUNCTION IF EXISTS nope, inc(bigint)`)
	if err != nil || len(res[0].Notices) != 1 || res[0].Notices[0] != "function nope does not exist, skipping" {
		t.Fatalf("DROP IF EXISTS: %v %+v", err, res)
	}
	if got := execErr(t, s, `SELECT inc(1)`); !strings.HasPrefix(got, "42883") {
		t.Fatalf("dropped function still called: %s", got)
	}
}

// pins: a view, a materialized view or a job that uses a function keeps it: DROP FUNCTION is refused naming them,
// CASCADE drops them (and what reads them); OR REPLACE is refused while a job's plan holds the function, allowed
// when only plain views use it (they expand it anew).
func TestFunctionDependencies(t *testing.T) {
	_, s := testEngine(t, t.TempDir())
	mustExec(t, s, `CREATE STREAM bids (price BIGINT)`)
	mustExec(t, s, `CREATE FUNCTION inc(x BIGINT) RETURNS BIGINT RETURN x + 1`)
	mustExec(t, s, `CREATE FUNCTION dbl(x BIGINT) RETURNS BIGINT RETURN inc(x) * 2 - 2`)
	mustExec(t, s, `CREATE VIEW v AS SELECT dbl(price) AS d FROM bids`)
	mustExec(t, s, `CREATE OR REPLACE FUNCTION dbl(x BIGINT) RETURNS BIGINT RETURN inc(x) * 3 - 3`)
	mustExec(t, s, `INSERT INTO bids VALUES (1), (2)`)
	equalLines(t, "view after replace", rows(t, s, `SELECT d FROM v ORDER BY d`), []string{"3", "6"})
	mustExec(t, s, `CREATE MATERIALIZED VIEW mv AS SELECT d FROM v`)
	mustExec(t, s, `CREATE SINK out (p BIGINT) WITH (connector = 'blackhole')`)
	mustExec(t, s, `INSERT INTO out SELECT inc(price) FROM bids`)
	for _, c := range []struct{ sql, want string }{
		{`DROP FUNCTION inc`, `2BP01 at 1:15: cannot drop function inc(x BIGINT) because other objects depend on it: mv, v, job job-2`},
		{`DROP FUNCTION dbl`, `2BP01 at 1:15: cannot drop function dbl(x BIGINT) because other objects depend on it: mv, v`},
		{`CREATE OR REPLACE FUNCTION inc(x BIGINT) RETURNS BIGINT RETURN x + 2`,
			`2BP01 at 1:28: cannot replace function inc(x BIGINT) while running jobs use it: mv, v, job job-2`},
	} {
		if got := execErr(t, s, c.sql); got != c.want {
			t.Errorf("%s\n got %s\nwant %s", c.sql, got, c.want)
		}
	}
	mustExec(t, s, `DROP FUNCTION dbl CASCADE`)
	if got := rows(t, s, `SHOW MATERIALIZED VIEWS`); len(got) != 0 {
		t.Fatalf("mv left: %v", got)
	}
	if got := rows(t, s, `SHOW VIEWS`); len(got) != 0 {
		t.Fatalf("v left: %v", got)
	}
	if got := execErr(t, s, `DROP FUNCTION inc`); !strings.Contains(got, "job job-2") || strings.Contains(got, "mv") {
		t.Fatalf("after cascade: %s", got)
	}
	mustExec(t, s, `DROP JOB "job-2"`)
	mustExec(t, s, `DROP FUNCTION inc`)
}

// pins: a materialized view over a SQL function keeps working across a restart: its job is planned again from
// its statement, inlining the function from the catalog.
func TestSQLFunctionAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	e, s := testEngine(t, dir)
	mustExec(t, s, `CREATE STREAM bids (price BIGINT, item VARCHAR)`)
	mustExec(t, s, `CREATE FUNCTION add_tax(price BIGINT, rate DOUBLE) RETURNS DOUBLE LANGUAGE sql AS 'SELECT price * (1 + rate)'`)
	mustExec(t, s, `CREATE MATERIALIZED VIEW taxed AS SELECT item, add_tax(price, 0.25) AS gross FROM bids`)
	mustExec(t, s, `INSERT INTO bids VALUES (100, 'a')`)
	mustExec(t, s, `FLUSH`)
	closeEngine(t, e)
	e2, s2 := testEngine(t, dir)
	_ = e2
	mustExec(t, s2, `INSERT INTO bids VALUES (200, 'b')`)
	mustExec(t, s2, `FLUSH`)
	equalLines(t, "after restart", rows(t, s2, `SELECT item, gross FROM taxed ORDER BY item`), []string{"a|125", "b|250"})
	if st, errText := jobState(t, s2, "job-1"); st != "RUNNING" {
		t.Fatalf("job-1 %s: %s", st, errText)
	}
}

// pins: psql's \df lists the user-defined functions with Postgres' type names, and its pattern selects by name.
func TestPsqlDescribeFunctions(t *testing.T) {
	s := introEngine(t)
	mustExec(t, s, `CREATE FUNCTION add_tax(price BIGINT, rate DOUBLE) RETURNS DOUBLE LANGUAGE sql RETURN price * (1 + rate)`)
	mustExec(t, s, `CREATE FUNCTION inc(BIGINT) RETURNS BIGINT LANGUAGE sql RETURN $1 + 1`)
	df := captured(t, "psql15/df.sql")[0]
	res := ask(t, s, df)
	equalLines(t, `\df columns`, columnNames(res), []string{"Schema:25", "Name:25", "Result data type:25",
		"Argument data types:25", "Type:25"})
	equalLines(t, `\df`, resultLines(res), []string{
		"public|add_tax|double precision|price bigint, rate double precision|func",
		"public|inc|bigint|bigint|func",
	})
	pattern := strings.Replace(df, "ORDER BY", "AND p.proname OPERATOR(pg_catalog.~) '^(in.*)$' COLLATE pg_catalog.default\nORDER BY", 1)
	equalLines(t, `\df in*`, resultLines(ask(t, s, pattern)), []string{"public|inc|bigint|bigint|func"})
}
