package parser

import (
	"testing"

	"github.com/clinksql/clinksql/sqlerr"
)

// pins: the forms of SUBSCRIBE, DECLARE, FETCH, CLOSE and COPY (...) TO STDOUT, and what each reads.
func TestParseSubscribeAndCursors(t *testing.T) {
	one := func(sql string) Stmt {
		t.Helper()
		stmts, err := Parse(sql)
		if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		if len(stmts) != 1 {
			t.Fatalf("%s: %d statements", sql, len(stmts))
		}
		return stmts[0]
	}
	for sql, want := range map[string]Subscribe{
		"SUBSCRIBE TO v":              {Name: "v", NameP: 13},
		"subscribe v WITH (PROGRESS)": {Name: "v", NameP: 10, Progress: true},
		`SUBSCRIBE "V" WITH (progress = false, snapshot = false)`: {Name: "V", NameP: 10, NoSnapshot: true},
		"SUBSCRIBE public.v": {Name: "v", NameP: 17},
	} {
		s, ok := one(sql).(*Subscribe)
		if !ok || s.Name != want.Name || s.NameP != want.NameP || s.Progress != want.Progress || s.NoSnapshot != want.NoSnapshot || s.Query != nil {
			t.Fatalf("%s: %#v", sql, one(sql))
		}
		if s.SQL() != sql {
			t.Fatalf("%s: text %q", sql, s.SQL())
		}
	}
	s := one("SUBSCRIBE (SELECT a, COUNT(*) FROM t GROUP BY a) WITH (PROGRESS)").(*Subscribe)
	if s.Query == nil || s.Name != "" || !s.Progress {
		t.Fatalf("query form: %#v", s)
	}
	if s := one("SUBSCRIBE TO (SELECT 1)").(*Subscribe); s.Query == nil {
		t.Fatalf("TO (query): %#v", s)
	}

	stmts, err := Parse("BEGIN; DECLARE c CURSOR FOR SUBSCRIBE v WITH (PROGRESS); FETCH 10 c; FETCH ALL c WITH (timeout = '1s'); FETCH FORWARD 3 FROM c; FETCH NEXT IN c; FETCH c; CLOSE c; CLOSE ALL; COMMIT")
	if err != nil {
		t.Fatal(err)
	}
	if len(stmts) != 10 {
		t.Fatalf("%d statements", len(stmts))
	}
	d, ok := stmts[1].(*Declare)
	if !ok || d.Name != "c" {
		t.Fatalf("declare: %#v", stmts[1])
	}
	if sub, ok := d.Stmt.(*Subscribe); !ok || sub.Name != "v" || !sub.Progress {
		t.Fatalf("declare's statement: %#v", d.Stmt)
	}
	for i, want := range []Fetch{{Name: "c", Count: 10}, {Name: "c", Count: -1, Timeout: "1s"}, {Name: "c", Count: 3}, {Name: "c", Count: 1}, {Name: "c", Count: 1}} {
		f, ok := stmts[2+i].(*Fetch)
		if !ok || f.Name != want.Name || f.Count != want.Count || f.Timeout != want.Timeout {
			t.Fatalf("fetch %d: %#v", i, stmts[2+i])
		}
	}
	if c, ok := stmts[7].(*CloseCursor); !ok || c.Name != "c" || c.All {
		t.Fatalf("close: %#v", stmts[7])
	}
	if c, ok := stmts[8].(*CloseCursor); !ok || !c.All {
		t.Fatalf("close all: %#v", stmts[8])
	}
	if d, ok := one("DECLARE c NO SCROLL CURSOR WITHOUT HOLD FOR SELECT a FROM t").(*Declare); !ok {
		t.Fatal("declare of a SELECT")
	} else if sel, ok := d.Stmt.(*Select); !ok || sel.SQL() != "SELECT a FROM t" {
		t.Fatalf("declare's select: %#v", d.Stmt)
	}

	for sql, inner := range map[string]string{
		"COPY (SUBSCRIBE v) TO STDOUT":                        "SUBSCRIBE v",
		"copy ( subscribe v with (progress) ) to stdout":      "subscribe v with (progress)",
		"COPY (SELECT a FROM t) TO STDOUT WITH (FORMAT text)": "SELECT a FROM t",
		"COPY (SELECT 1) TO STDOUT (format 'text')":           "SELECT 1",
	} {
		c, ok := one(sql).(*Copy)
		if !ok || c.Stmt.SQL() != inner {
			t.Fatalf("%s: %#v", sql, one(sql))
		}
	}

	for sql, code := range map[string]string{
		"SUBSCRIBE v WITH (ENVELOPE = 'x')":           sqlerr.FeatureNotSupported,
		"SUBSCRIBE v AS OF 3":                         sqlerr.FeatureNotSupported,
		"SUBSCRIBE v WITH (PROGRESS = maybe)":         sqlerr.InvalidParameter,
		"SUBSCRIBE":                                   sqlerr.SyntaxError,
		"SUBSCRIBE v x":                               sqlerr.SyntaxError,
		"SUBSCRIBE (SELECT 1":                         sqlerr.SyntaxError,
		"FETCH BACKWARD 1 c":                          sqlerr.FeatureNotSupported,
		"FETCH 1 c WITH (wait = '1s')":                sqlerr.FeatureNotSupported,
		"DECLARE c SCROLL CURSOR FOR SELECT 1":        sqlerr.FeatureNotSupported,
		"DECLARE c CURSOR WITH HOLD FOR SELECT 1":     sqlerr.FeatureNotSupported,
		"DECLARE c CURSOR FOR INSERT INTO t SELECT 1": sqlerr.FeatureNotSupported,
		"COPY t TO STDOUT":                            sqlerr.FeatureNotSupported,
		"COPY (SELECT 1) TO '/tmp/x'":                 sqlerr.FeatureNotSupported,
		"COPY (SELECT 1) TO STDOUT (FORMAT csv)":      sqlerr.FeatureNotSupported,
	} {
		_, err := Parse(sql)
		if got := sqlerr.Code(err); got != code {
			t.Errorf("%s: %v (code %s), want code %s", sql, err, got, code)
		}
	}
}

// pins: the statements of subscribe.go format as text that parses to the same statement (FuzzParse's invariant).
func TestFormatSubscribeAndCursors(t *testing.T) {
	for _, sql := range []string{
		"SUBSCRIBE TO v", "SUBSCRIBE TO to WITH (progress, snapshot = false)", `SUBSCRIBE "Select"`, "SUBSCRIBE (SELECT a FROM t WHERE b > 1)",
		"DECLARE c CURSOR FOR SUBSCRIBE v WITH (PROGRESS)", "DECLARE cursor NO SCROLL CURSOR FOR SELECT 1",
		"FETCH c", "FETCH ALL FROM from WITH (timeout = 1)", "FETCH 7 IN c WITH (timeout = '1s')",
		"CLOSE c", `CLOSE "all"`, "CLOSE ALL", "COPY (SUBSCRIBE v) TO STDOUT", "COPY (SELECT 1) TO STDOUT", "EXPLAIN SUBSCRIBE v",
	} {
		stmts, err := Parse(sql)
		if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		text := Format(stmts[0])
		again, err := Parse(text)
		if err != nil {
			t.Fatalf("%s formats as %q, which does not parse: %v", sql, text, err)
		}
		if Format(again[0]) != text {
			t.Fatalf("%s formats as %q, then as %q", sql, text, Format(again[0]))
		}
	}
}
