package parser

import (
	"strings"
	"testing"
)

func TestCreateFunction(t *testing.T) {
	for _, c := range []struct{ sql, want string }{
		{`CREATE FUNCTION add_tax(price BIGINT, rate DOUBLE) RETURNS DOUBLE AS $$ SELECT price * (1 + rate) $$ LANGUAGE SQL`,
			`CREATE FUNCTION add_tax(price BIGINT, rate DOUBLE) RETURNS DOUBLE LANGUAGE sql AS ' SELECT price * (1 + rate) '`},
		{`create function f(x bigint) returns bigint language sql as 'SELECT x + 1'`,
			`CREATE FUNCTION f(x BIGINT) RETURNS BIGINT LANGUAGE sql AS 'SELECT x + 1'`},
		{`CREATE OR REPLACE FUNCTION f(in x int8) RETURNS int8 LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE RETURN x + 1`,
			`CREATE OR REPLACE FUNCTION f(x BIGINT) RETURNS BIGINT LANGUAGE sql STRICT RETURN x + 1`},
		{`CREATE FUNCTION g(double precision, character varying) RETURNS text LANGUAGE sql AS 'select $2 || $1'`,
			`CREATE FUNCTION g(DOUBLE, VARCHAR) RETURNS TEXT LANGUAGE sql AS 'select $2 || $1'`},
		{`CREATE FUNCTION h(ts timestamp with time zone) RETURNS bigint RETURN 1`,
			`CREATE FUNCTION h(ts TIMESTAMPTZ) RETURNS BIGINT LANGUAGE sql RETURN 1`},
		{`CREATE FUNCTION count_char(s VARCHAR, c VARCHAR) RETURNS BIGINT LANGUAGE wasm AS 'udf/count.wasm' WITH (export = 'cc')`,
			`CREATE FUNCTION count_char(s VARCHAR, c VARCHAR) RETURNS BIGINT LANGUAGE wasm WITH ('export' = 'cc') AS 'udf/count.wasm'`},
		{`CREATE FUNCTION q() RETURNS text LANGUAGE sql AS 'SELECT ''it''''s'''`,
			`CREATE FUNCTION q() RETURNS TEXT LANGUAGE sql AS 'SELECT ''it''''s'''`},
		{`DROP FUNCTION IF EXISTS f, g(bigint, double precision), h() CASCADE`,
			`DROP FUNCTION IF EXISTS f, g(BIGINT, DOUBLE), h() CASCADE`},
		{`DROP FUNCTION f(x bigint) RESTRICT`, `DROP FUNCTION f(BIGINT)`},
	} {
		stmts, err := Parse(c.sql)
		if err != nil {
			t.Errorf("%s: %s", c.sql, renderError(c.sql, err))
			continue
		}
		if got := Format(stmts[0]); got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.sql, got, c.want)
		}
		checkRoundTrip(t, c.sql, stmts)
	}
}

// TestFunctionBodyPositions: the body's nodes point into the statement's text, inside the string.
func TestFunctionBodyPositions(t *testing.T) {
	for _, c := range []struct{ sql, at string }{
		{`CREATE FUNCTION f(x bigint) RETURNS bigint LANGUAGE sql AS $$SELECT x + abs(x)$$`, "abs(x)"},
		{`CREATE FUNCTION f(x bigint) RETURNS bigint LANGUAGE sql AS $fn$ SELECT x + abs(x) $fn$`, "abs(x)"},
		{`CREATE FUNCTION f(x text) RETURNS text LANGUAGE sql AS 'SELECT x || ''a'' || lower(x)'`, "lower(x)"},
		{`CREATE FUNCTION f(x bigint) RETURNS bigint RETURN x + abs(x)`, "abs(x)"},
	} {
		stmts, err := Parse(c.sql)
		if err != nil {
			t.Fatalf("%s: %s", c.sql, renderError(c.sql, err))
		}
		body := stmts[0].(*CreateFunction).Body.(*Binary)
		call := body.R.(*Func)
		if want := strings.Index(c.sql, c.at); call.P != want {
			t.Errorf("%s: abs at %d, want %d", c.sql, call.P, want)
		}
		if arg := call.Args[0].(*ColumnRef); arg.P != strings.Index(c.sql, c.at)+len(c.at)-2 {
			t.Errorf("%s: argument at %d", c.sql, arg.P)
		}
	}
}

func TestCreateFunctionErrors(t *testing.T) {
	for _, c := range []struct{ sql, want string }{
		{`CREATE FUNCTION f(x bigint) RETURNS bigint LANGUAGE sql AS 'SELECT x +'`,
			`ERROR 42601 at 1:71: syntax error at end of input`},
		{`CREATE FUNCTION f(x bigint) RETURNS bigint LANGUAGE sql AS $$SELECT x FROM t$$`,
			`ERROR 0A000 at 1:62: the body of a SQL function must be one SELECT of one expression, without FROM`},
		{`CREATE FUNCTION f(x bigint) RETURNS bigint LANGUAGE sql AS 'SELECT 1, 2'`,
			`ERROR 0A000 at 1:61: the body of a SQL function must be one SELECT of one expression, without FROM`},
		{`CREATE FUNCTION f(x bigint) RETURNS bigint LANGUAGE sql AS 'SELECT 1; SELECT 2'`,
			`ERROR 0A000 at 1:71: the body of a SQL function must be one SELECT of one expression, without FROM`},
		{`CREATE FUNCTION f(x bigint) RETURNS bigint LANGUAGE sql AS 'INSERT INTO t VALUES (1)'`,
			`ERROR 0A000 at 1:61: the body of a SQL function must be one SELECT of one expression, without FROM`},
		{`CREATE FUNCTION f(x bigint) LANGUAGE sql AS 'SELECT 1'`,
			`ERROR 42P13 at 1:29: function result type must be specified`},
		{`CREATE FUNCTION f(x bigint) RETURNS bigint LANGUAGE sql`,
			`ERROR 42P13 at 1:1: no function body specified`},
		{`CREATE FUNCTION f(OUT x bigint) RETURNS bigint RETURN 1`,
			`ERROR 0A000 at 1:19: OUT parameters are not supported`},
		{`CREATE FUNCTION f(x bigint DEFAULT 1) RETURNS bigint RETURN 1`,
			`ERROR 0A000 at 1:28: parameter defaults are not supported`},
		{`CREATE FUNCTION f(x bigint) RETURNS SETOF bigint RETURN 1`,
			`ERROR 0A000 at 1:37: RETURNS SETOF is not supported: a function returns one value of a SQL type`},
		{`CREATE FUNCTION f(x bigint) RETURNS bigint LANGUAGE wasm RETURN 1`,
			`ERROR 42P13 at 1:53: RETURN is only for LANGUAGE SQL functions`},
		{`CREATE FUNCTION f(x bigint) RETURNS bigint LANGUAGE sql LANGUAGE sql RETURN 1`,
			`ERROR 42601 at 1:57: conflicting or redundant options`},
		{`CREATE FUNCTION f(x bigint) RETURNS bigint AS 'a', 'b' LANGUAGE c`,
			`ERROR 0A000 at 1:50: AS 'file', 'symbol' is not supported; name the export with WITH (export = '...')`},
		{`CREATE FUNCTION f(x blob) RETURNS bigint RETURN 1`,
			`ERROR 42704 at 1:21: type "blob" does not exist`},
	} {
		_, err := Parse(c.sql)
		got := "no error"
		if err != nil {
			got = renderError(c.sql, err)
		}
		if got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.sql, got, c.want)
		}
	}
}

func TestParseExpr(t *testing.T) {
	e, err := ParseExpr("price * (1 + rate)")
	if err != nil {
		t.Fatal(err)
	}
	if got := Format(e); got != "price * (1 + rate)" {
		t.Errorf("got %s", got)
	}
	if _, err := ParseExpr("1 +"); err == nil {
		t.Error("no error for 1 +")
	}
}
