package parser

import (
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/clinksql/clinksql/sqlerr"
	"github.com/cockroachdb/datadriven"
)

// TestParse runs testdata/parse (datadriven; regenerate with go test ./sql/parser -run TestParse -rewrite):
//
//	parse   Format of every statement, one per line
//	ast     the tree, with every position as line:column of the input
//
// Every case also checks that each position points at the token Postgres would point at (checkPositions) and
// that Format round-trips: Parse(Format(x)) is x apart from positions, and Format is a fixed point.
func TestParse(t *testing.T) { runScript(t, "testdata/parse") }

// TestErrors runs testdata/errors: "error", bad SQL, "----", then `ERROR <code> at <line>:<col>: <message>`.
func TestErrors(t *testing.T) { runScript(t, "testdata/errors") }

func runScript(t *testing.T, path string) {
	datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
		return runCommand(t, d.Pos, d.Cmd, d.Input) + "\n"
	})
}

func runCommand(t *testing.T, where, cmd, src string) string {
	stmts, err := Parse(src)
	switch cmd {
	case "error":
		if err == nil {
			return "no error"
		}
		return renderError(src, err)
	case "parse", "ast":
		if err != nil {
			t.Errorf("%s: %s", where, renderError(src, err))
			return renderError(src, err)
		}
		checkPositions(t, where, src, stmts)
		checkRoundTrip(t, where, stmts)
		var parts []string
		for _, s := range stmts {
			if cmd == "parse" {
				parts = append(parts, Format(s))
			} else {
				parts = append(parts, dump(src, s))
			}
		}
		return strings.Join(parts, "\n")
	}
	t.Fatalf("%s: unknown command %q", where, cmd)
	return ""
}

func renderError(src string, err error) string {
	var e *sqlerr.Error
	if !errors.As(err, &e) {
		return fmt.Sprintf("ERROR (not a sqlerr.Error: %T) %v", err, err)
	}
	if e.Pos == sqlerr.NoPos {
		return fmt.Sprintf("ERROR %s: %s", e.Code, e.Msg)
	}
	p := PositionOf(src, e.Pos)
	return fmt.Sprintf("ERROR %s at %d:%d: %s", e.Code, p.Line, p.Col, e.Msg)
}

// checkRoundTrip: Parse(Format(s)) is s apart from positions, and Format is a fixed point.
func checkRoundTrip(t *testing.T, where string, stmts []Stmt) {
	t.Helper()
	for _, s := range stmts {
		text := Format(s)
		again, err := Parse(text)
		if err != nil {
			t.Errorf("%s: Format gave text that does not parse:\n%s\n%s", where, text, renderError(text, err))
			continue
		}
		if len(again) != 1 {
			t.Errorf("%s: Format gave %d statements:\n%s", where, len(again), text)
			continue
		}
		if a, b := dump("", s), dump("", again[0]); a != b {
			t.Errorf("%s: round trip through\n%s\nchanged the tree:\n%s\n----\n%s", where, text, a, b)
		}
		if text2 := Format(again[0]); text2 != text {
			t.Errorf("%s: Format is not a fixed point:\n%s\n%s", where, text, text2)
		}
	}
}

// dump prints a node as an indented tree. With src, positions print as @line:col; without, not at all (for
// comparing trees apart from positions).
func dump(src string, n any) string {
	var b strings.Builder
	dumpValue(&b, src, "", "", reflect.ValueOf(n))
	return strings.TrimRight(b.String(), "\n")
}

var posFields = map[string]bool{"Start": true, "End": true, "Text": true, "QueryText": true}

func isPosField(name string) bool { return name == "P" || strings.HasSuffix(name, "P") && name != "Op" }

func dumpValue(b *strings.Builder, src, indent, label string, v reflect.Value) {
	for v.Kind() == reflect.Interface || v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return
	}
	typ := v.Type()
	b.WriteString(indent + label + typ.Name())
	var kids []func()
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		for i := 0; i < v.NumField(); i++ {
			f, fv := v.Type().Field(i), v.Field(i)
			if f.Anonymous {
				if f.Name != "StmtBase" {
					walk(fv)
				}
				continue
			}
			if posFields[f.Name] {
				continue
			}
			switch {
			case isPosField(f.Name) && fv.Kind() == reflect.Int:
				if src != "" {
					p := PositionOf(src, int(fv.Int()))
					if f.Name == "P" {
						fmt.Fprintf(b, "@%d:%d", p.Line, p.Col)
					} else {
						fmt.Fprintf(b, " %s=@%d:%d", f.Name, p.Line, p.Col)
					}
				}
			case isPosField(f.Name) && fv.Kind() == reflect.Slice:
				if src != "" {
					var ps []string
					for j := 0; j < fv.Len(); j++ {
						p := PositionOf(src, int(fv.Index(j).Int()))
						ps = append(ps, fmt.Sprintf("@%d:%d", p.Line, p.Col))
					}
					fmt.Fprintf(b, " %s=%s", f.Name, strings.Join(ps, ","))
				}
			case fv.Kind() == reflect.String:
				if fv.String() != "" {
					fmt.Fprintf(b, " %s=%q", f.Name, fv.String())
				}
			case fv.Kind() == reflect.Bool:
				if fv.Bool() {
					fmt.Fprintf(b, " %s", f.Name)
				}
			case fv.Kind() == reflect.Int || fv.Kind() == reflect.Uint8:
				if f.Type.Name() == "LitKind" {
					fmt.Fprintf(b, " %s", [...]string{"null", "bool", "int", "decimal", "float", "string", "timestamp", "date", "timestamptz"}[fv.Uint()])
				} else if fv.Kind() == reflect.Uint8 {
					if fv.Uint() != 0 {
						fmt.Fprintf(b, " %s=%d", f.Name, fv.Uint())
					}
				} else if fv.Int() != 0 && !(fv.Int() == -1 && (f.Name == "Precision" || f.Name == "Scale")) {
					fmt.Fprintf(b, " %s=%d", f.Name, fv.Int())
				}
			case fv.Kind() == reflect.Pointer && fv.Type().Elem().Kind() == reflect.Bool:
				if !fv.IsNil() {
					fmt.Fprintf(b, " %s=%v", f.Name, fv.Elem().Bool())
				}
			case fv.Kind() == reflect.Slice && fv.Type().Elem().Kind() == reflect.String:
				if fv.Len() > 0 {
					fmt.Fprintf(b, " %s=%q", f.Name, fv.Interface())
				}
			case fv.Kind() == reflect.Slice:
				for j := 0; j < fv.Len(); j++ {
					name, el := f.Name, fv.Index(j)
					if el.Kind() == reflect.Slice { // Values rows
						for k := 0; k < el.Len(); k++ {
							kids = append(kids, kid(b, src, indent, fmt.Sprintf("%s[%d][%d]: ", name, j, k), el.Index(k)))
						}
						continue
					}
					kids = append(kids, kid(b, src, indent, fmt.Sprintf("%s[%d]: ", name, j), el))
				}
			case fv.Kind() == reflect.Struct, fv.Kind() == reflect.Interface, fv.Kind() == reflect.Pointer:
				kids = append(kids, kid(b, src, indent, f.Name+": ", fv))
			}
		}
	}
	walk(v)
	b.WriteString("\n")
	for _, k := range kids {
		k()
	}
}

func kid(b *strings.Builder, src, indent, label string, v reflect.Value) func() {
	return func() { dumpValue(b, src, indent+"  ", label, v) }
}

// checkPositions checks that every position in the tree points at the token Postgres would point at: the first
// token of a name, literal or call, the operator of a binary expression, CAST or ::, and so on.
func checkPositions(t *testing.T, where, src string, stmts []Stmt) {
	t.Helper()
	toks, err := Lex(src)
	if err != nil {
		t.Fatal(err)
	}
	tokAt := func(pos int) (Token, bool) {
		k := sort.Search(len(toks), func(k int) bool { return toks[k].Pos >= pos })
		if k < len(toks) && toks[k].Pos == pos && toks[k].Kind != EOF {
			return toks[k], true
		}
		return Token{}, false
	}
	bad := func(n any, pos int, want ...string) {
		tok, ok := tokAt(pos)
		if !ok {
			t.Errorf("%s: %T at offset %d is not at a token: %q", where, n, pos, src[min(pos, len(src)):min(pos+10, len(src))])
			return
		}
		for _, w := range want {
			if tok.Value == w || tok.Text == w {
				return
			}
		}
		t.Errorf("%s: %T points at %q (%d), want one of %q", where, n, tok.Text, pos, want)
	}
	first := func(s string) string { return strings.SplitN(s, ".", 2)[0] }
	var visit func(v reflect.Value)
	visit = func(v reflect.Value) {
		for v.Kind() == reflect.Interface || v.Kind() == reflect.Pointer {
			if v.IsNil() {
				return
			}
			v = v.Elem()
		}
		switch v.Kind() {
		case reflect.Slice:
			for i := 0; i < v.Len(); i++ {
				visit(v.Index(i))
			}
			return
		case reflect.Struct:
		default:
			return
		}
		if v.CanAddr() {
			checkNode(v.Addr().Interface(), bad, first, tokAt)
		}
		for i := 0; i < v.NumField(); i++ {
			visit(v.Field(i))
		}
	}
	for _, s := range stmts {
		start, end := s.Span()
		if start < 0 || end > len(src) || start > end {
			t.Errorf("%s: %T span [%d,%d)", where, s, start, end)
		}
		visit(reflect.ValueOf(s))
	}
}

func checkNode(n any, bad func(n any, pos int, want ...string), first func(string) string, tokAt func(int) (Token, bool)) {
	switch n := n.(type) {
	case *ColumnRef:
		if n.Table != "" {
			bad(n, n.P, n.Table)
		} else {
			bad(n, n.P, n.Name)
		}
	case *TableName:
		if n.Schema != "" {
			bad(n, n.P, n.Schema)
		} else {
			bad(n, n.P, n.Name)
		}
	case *Func:
		want := []string{first(n.Name)}
		switch n.Name {
		case "btrim", "ltrim", "rtrim":
			want = append(want, "trim")
		}
		bad(n, n.P, want...)
	case *Literal:
		switch n.Kind {
		case LitNull:
			bad(n, n.P, "null")
		case LitBool:
			bad(n, n.P, n.Text)
		case LitTimestamp:
			bad(n, n.P, "timestamp")
		case LitDate:
			bad(n, n.P, "date")
		case LitTimestampTZ:
			bad(n, n.P, "timestamptz", "timestamp")
		case LitString:
			if tok, ok := tokAt(n.P); !ok || tok.Kind != String || !strings.HasPrefix(n.Text, tok.Value) {
				bad(n, n.P, n.Text)
			}
		default:
			if strings.HasPrefix(n.Text, "-") {
				bad(n, n.P, "-")
			} else {
				bad(n, n.P, n.Text)
			}
		}
	case *Cast:
		bad(n, n.P, "cast", "try_cast", "::")
	case *Binary:
		switch n.Op {
		case "<>":
			bad(n, n.P, "<>", "!=")
		case "is distinct from", "is not distinct from":
			bad(n, n.P, "is")
		default:
			bad(n, n.P, n.Op)
		}
	case *Interval:
		bad(n, n.P, "interval")
	case *ParamRef:
		bad(n, n.P, fmt.Sprintf("$%d", n.N))
	case *Star:
		if n.Table != "" {
			bad(n, n.P, n.Table)
		} else {
			bad(n, n.P, "*")
		}
	case *Extract:
		bad(n, n.P, "extract")
	case *Case:
		bad(n, n.P, "case")
	case *Like:
		bad(n, n.P, "like", "ilike", "~", "!", "regexp", "operator")
	case *Between:
		bad(n, n.P, "between")
	case *InList:
		bad(n, n.P, "in")
	case *IsNull:
		bad(n, n.P, "is")
	case *IsBool:
		bad(n, n.P, "is")
	case *Subquery:
		bad(n, n.P, "(", "exists")
	case *Unary:
		bad(n, n.P, n.Op)
	case *SelectCore:
		bad(n, n.P, "select")
	case *SetOp:
		bad(n, n.P, n.Op)
	case *Query:
		bad(n, n.P, "select", "with", "values", "(")
	case *Values:
		bad(n, n.P, "values")
	case *WindowTVF:
		bad(n, n.P, "table", n.Kind)
		bad(n, n.TimeColP, n.TimeCol)
	case *DerivedTable:
		bad(n, n.P, "(")
	case *WindowSpec:
		bad(n, n.P, "over")
	case *ColumnDef:
		bad(n, n.P, n.Name)
	case *Metadata:
		bad(n, n.P, "metadata")
	case *PrimaryKey:
		bad(n, n.P, "primary")
		for i, p := range n.ColumnsP {
			bad(n, p, n.Columns[i])
		}
	case *PartitionedBy:
		bad(n, n.P, "partitioned")
		for i, p := range n.ColumnsP {
			bad(n, p, n.Columns[i])
		}
	case *Watermark:
		bad(n, n.P, "watermark")
		bad(n, n.ColP, n.Column)
	case *Option:
		bad(n, n.P, n.Key, first(n.Key))
	case *CTE:
		bad(n, n.P, n.Name)
	case *TypeName:
		bad(n, n.P, strings.ToLower(n.Name), "int", "integer", "int4", "int8", "int2", "bool", "float8", "float4",
			"float", "double", "numeric", "dec", "string", "character", "char", "oid", "regtype", "regclass", "regproc", "timestamp", "timestamp_ltz")
	case *CreateStream:
		bad(n, n.NameP, n.Name)
	case *CreateSink:
		bad(n, n.NameP, n.Name)
	case *CreateView:
		bad(n, n.NameP, n.Name)
	case *Insert:
		bad(n, n.TargetP, n.Target)
	case *Describe:
		bad(n, n.NameP, n.Name)
	case *Drop:
		for i, p := range n.NamesP {
			bad(n, p, n.Names[i])
		}
	case *AlterJob:
		bad(n, n.IDP, n.ID, strings.SplitN(n.ID, "-", 2)[0])
	case *DropJob:
		bad(n, n.IDP, n.ID, strings.SplitN(n.ID, "-", 2)[0])
	}
}

// The positions of the required nodes, spelled out for one multi-line statement with rewritten regions.
func TestPositionsExact(t *testing.T) {
	src := "SELECT\n  a.x::BIGINT + 1 AS y,\n  COUNT(*) FILTER (WHERE b > 2)\nFROM TABLE(TUMBLE(TABLE bids, DESCRIPTOR(ts), INTERVAL '10' SECOND)) AS w\nWHERE c || 'x' <> $1"
	stmts, err := Parse(src)
	if err != nil {
		t.Fatal(renderError(src, err))
	}
	q := stmts[0].(*Select).Query
	core := q.Body.(*SelectCore)
	at := func(name string, got int, want string, nth int) {
		t.Helper()
		off := -1
		for k := 0; k <= nth; k++ {
			i := strings.Index(src[off+1:], want)
			if i < 0 {
				t.Fatalf("%q not in src", want)
			}
			off += 1 + i
		}
		if got != off {
			t.Errorf("%s at %d (%v), want %d (%v)", name, got, PositionOf(src, got), off, PositionOf(src, off))
		}
	}
	plus := core.Items[0].Expr.(*Binary)
	at("+", plus.P, "+", 0)
	cast := plus.L.(*Cast)
	at("::", cast.P, "::", 0)
	at("a.x", cast.X.(*ColumnRef).P, "a.x", 0)
	at("1", plus.R.(*Literal).P, "1", 0)
	cnt := core.Items[1].Expr.(*Func)
	at("COUNT", cnt.P, "COUNT", 0)
	gt := cnt.Filter.(*Binary)
	at(">", gt.P, ">", 0)
	at("b", gt.L.(*ColumnRef).P, "b >", 0)
	at("2", gt.R.(*Literal).P, "2", 0)
	w := core.From[0].(*WindowTVF)
	at("TABLE(", w.P, "TABLE(", 0)
	at("bids", w.Input.(*TableName).P, "bids", 0)
	at("ts", w.TimeColP, "ts", 0)
	at("INTERVAL", w.Args[0].(*Interval).P, "INTERVAL", 0)
	ne := core.Where.(*Binary)
	at("<>", ne.P, "<>", 0)
	cc := ne.L.(*Binary)
	at("||", cc.P, "||", 0)
	at("c", cc.L.(*ColumnRef).P, "c ||", 0)
	at("'x'", cc.R.(*Literal).P, "'x'", 0)
	at("$1", ne.R.(*ParamRef).P, "$1", 0)
}

// Whatever a client sends, Parse returns statements or a *sqlerr.Error with a position inside the text; it never
// panics. What it returns formats to text that parses again.
func FuzzParse(f *testing.F) {
	seeds := []string{
		"SELECT a, COUNT(*) FILTER (WHERE b > 1) FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '1' MINUTE)) GROUP BY a, window_start",
		"CREATE STREAM s (a BIGINT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '1' SECOND) WITH (connector = 'datagen')",
		"INSERT INTO k SELECT x::int, CAST(y AS VARCHAR), EXTRACT(dow FROM z) FROM HOP(t, ts, INTERVAL '1' SECOND, INTERVAL '5' SECOND)",
		"SET checkpoint.interval = '10s'; SHOW JOBS; DROP JOB 'job-3'; FLUSH",
		"SELECT * FROM a LEFT JOIN b ON a.x = b.x WHERE a.y ~* 'z' AND b.z IS DISTINCT FROM 1 ORDER BY 1 DESC NULLS LAST LIMIT 3",
		"SELECT CASE WHEN a THEN 'x' END::text, TIMESTAMP '2026-01-01', $1 FROM (SELECT 1) AS s UNION ALL VALUES (1)",
		"SELECT trim(both 'x' from s), position('a' in s), substring(s from 1 for 2) FROM t",
		"SELECT * FROM (VALUES (1, E'x\\n'), (2, 'y')) AS v(a, b) JOIN (SELECT 1) w (c) ON a = c UNION ALL VALUES (3, 'z')",
		"WITH t (a) AS (VALUES (1)) SELECT a || b + c * d - e || f, concat(a, b) || c FROM t WHERE a IN (VALUES (1))",
		"EXPLAIN SELECT 1", "SELECT", "(", "SELECT (((", "::", "SELECT a::", "SELECT 1 FILTER (WHERE", "TABLE(TUMBLE(",
		"VALUES (", "SELECT E'\\", "SELECT * FROM (SELECT 1) v(",
		"WITH A(A)AS(VALUES(0))(VALUES(0))",             // found by the fuzzer: formatted, the VALUES body keeps its parentheses
		"SELECT TABLE(TUMBLE(TABLE A,DESCRIPTOR(A),0))", // found by the fuzzer: a table function outside FROM
	}
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		stmts, err := Parse(src)
		if err != nil {
			var e *sqlerr.Error
			if !errors.As(err, &e) || e.Pos < 0 || e.Pos > len(src) {
				t.Fatalf("Parse(%q): %v (%T) without a position in the text", src, err, err)
			}
			return
		}
		for _, s := range stmts {
			text := Format(s)
			if _, err := Parse(text); err != nil {
				t.Fatalf("Parse(%q) formats as %q, which does not parse: %v", src, text, err)
			}
		}
	})
}

// pins: a VALUES list of plain literals, read straight from the tokens (literalValues), is the tree TiDB's path
// builds for it, positions included; anything else in a VALUES list still goes through TiDB.
func TestLiteralValuesAsTiDB(t *testing.T) {
	for _, sql := range []string{
		`VALUES (1)`,
		`VALUES (1, 'a', NULL), (2.5, TRUE, false), (1e3, 'it''s', null)`,
		`values(0.0,'',NULL)`,
		`VALUES (99999999999999999999999, 1.5E-7, .5, 0), (1, 'x', $2, NULL)`,
		`VALUES ($1, 'αβ', 'line
break')`,
		"VALUES /* c */ (1, -- c\n 2)",
		`VALUES (-1, - 2.5, -1e3, -.5, -0), (TIMESTAMP '2026-01-01 00:00:01.5', DATE '2026-01-01', timestamp 'x', date '', 'y')`,
	} {
		toks, err := Lex(sql)
		if err != nil {
			t.Fatal(err)
		}
		p := &parser{src: sql, toks: toks}
		hi := len(toks) - 1 // before EOF
		fast, ok := p.literalValues(0, hi)
		if !ok {
			t.Fatalf("%s: not taken as literal VALUES", sql)
		}
		slow, err := p.tidbQuery(0, hi)
		if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		if !reflect.DeepEqual(fast, slow) {
			t.Errorf("%s:\nliteral %s\nTiDB    %s", sql, dumpValues(fast), dumpValues(slow))
		}
	}
	for _, sql := range []string{`VALUES (- -1)`, `VALUES (+1)`, `VALUES (-1 + 2)`, `VALUES (TIMESTAMP(3) '2026-01-01')`, `VALUES (TIMESTAMP 'x' + INTERVAL '1' DAY)`, `VALUES (1 + 2)`, `VALUES ('a'::text)`,
		`VALUES (E'\n')`, `VALUES (1), (2`, `VALUES (1) (2)`, `VALUES ()`, `VALUES (x)`, `VALUES (1, 2), (3)`} {
		toks, _ := Lex(sql)
		p := &parser{src: sql, toks: toks}
		if _, ok := p.literalValues(0, len(toks)-1); ok {
			t.Errorf("%s: taken as literal VALUES", sql)
		}
	}
}

func dumpValues(q *Query) string {
	var sb strings.Builder
	for _, row := range q.Body.(*Values).Rows {
		for _, e := range row {
			fmt.Fprintf(&sb, "%T%+v ", e, e)
		}
		sb.WriteString("| ")
	}
	return fmt.Sprintf("P=%d %s", q.P, sb.String())
}
