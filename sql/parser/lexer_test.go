package parser

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func render(toks []Token) string {
	var parts []string
	for _, t := range toks {
		if t.Kind == EOF {
			break
		}
		parts = append(parts, fmt.Sprintf("%s:%s", t.Kind, t.Value))
	}
	return strings.Join(parts, " ")
}

// The expected token streams follow Postgres' lexical rules (SQL syntax, "Lexical Structure"), written by hand.
func TestLex(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"SELECT a, B FROM t;", "ident:select ident:a op:, ident:b ident:from ident:t op:;"},
		{`"Mixed Case" "a""b" ` + "`back`", "quoted-ident:Mixed Case quoted-ident:a\"b quoted-ident:back"},
		{`'it''s' 'a\d+'`, `string:it's string:a\d+`}, // standard strings: a backslash is just a character
		{"$$a;b$$ $x$ c $x$", "string:a;b string: c "},
		{"x::BIGINT", "ident:x op::: ident:bigint"},
		{"1 1.5 .5 1e10 2.5E-3 7.", "number:1 number:1.5 number:.5 number:1e10 number:2.5E-3 number:7."},
		{"a<=b a<>b a!=b a||b", "ident:a op:<= ident:b ident:a op:<> ident:b ident:a op:!= ident:b ident:a op:|| ident:b"},
		{"WHERE x = $1 AND y > $12", "ident:where ident:x op:= param:$1 ident:and ident:y op:> param:$12"},
		{"a -- comment ; not a statement end\nb", "ident:a ident:b"},
		{"a /* outer /* nested */ still comment */ b", "ident:a ident:b"},
		{"INTERVAL '10' SECOND", "ident:interval string:10 ident:second"},
		{"café", "ident:café"},
		{`E'a\nb' e'\'\\' E'\x41\101\u00e9\q'`, "string:a\nb string:'\\ string:AAéq"},   // escape strings
		{"E'a'\n  'b\\t' E 'c'", "string:ab\t ident:e string:c"},                        // continued; E alone is a name
		{`E'\uD83D\uDE00' E'\x' E'\u00e9''x'`, "string:\U0001F600 string:x string:é'x"}, // surrogate pair, \x alone
		{"a.b.c", "ident:a op:. ident:b op:. ident:c"},
		{"", ""},
	} {
		toks, err := Lex(tc.src)
		if err != nil {
			t.Errorf("Lex(%q): %v", tc.src, err)
			continue
		}
		if got := render(toks); got != tc.want {
			t.Errorf("Lex(%q)\n got %s\nwant %s", tc.src, got, tc.want)
		}
		for _, tok := range toks {
			if tok.Kind != EOF && tc.src[tok.Pos:tok.End] != tok.Text {
				t.Errorf("Lex(%q): token %q has offsets [%d,%d) holding %q", tc.src, tok.Text, tok.Pos, tok.End, tc.src[tok.Pos:tok.End])
			}
		}
	}
}

// Lexical errors say what is wrong and where, as byte offsets into the user's text.
func TestLexErrors(t *testing.T) {
	for _, tc := range []struct {
		src string
		pos int
		msg string
	}{
		{"SELECT 'abc", 7, "unterminated quoted string"},
		{`SELECT "abc`, 7, "unterminated quoted identifier"},
		{"SELECT /* x /* y */", 7, "unterminated /* comment"},
		{"SELECT $a$ x", 7, "unterminated dollar-quoted string"},
		{`SELECT ""`, 7, "zero-length delimited identifier"},
		{"SELECT 12abc", 7, "trailing junk"},
		{"SELECT a \\ b", 9, "syntax error at or near"},
		{`SELECT E'abc\'`, 7, "unterminated quoted string"},
		{`SELECT E'\xc3'`, 7, "invalid byte sequence"},
		{`SELECT E'\u00e'`, 7, "invalid Unicode escape"},
		{`SELECT E'x\U00110000'`, 10, "invalid Unicode escape value"},
		{`SELECT E'\uDE00'`, 9, "invalid Unicode escape value"},
		{`SELECT E'\uD83Dx'`, 9, "invalid Unicode surrogate pair"},
	} {
		_, err := Lex(tc.src)
		var se *SyntaxError
		if !errors.As(err, &se) || se.Pos != tc.pos || !strings.Contains(se.Msg, tc.msg) {
			t.Errorf("Lex(%q) = %v, want %q at %d", tc.src, err, tc.msg, tc.pos)
		}
	}
}

// A script splits at semicolons that end statements, never at those inside strings, identifiers or comments.
func TestSplit(t *testing.T) {
	src := "CREATE STREAM s (a INT);\n-- a comment; with a semicolon\nINSERT INTO s VALUES (1), ('x;y');;\n" +
		`SELECT "a;b" FROM s /* ; */` + "\n"
	got, err := Split(src)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"CREATE STREAM s (a INT)", "INSERT INTO s VALUES (1), ('x;y')", `SELECT "a;b" FROM s /* ; */`}
	if len(got) != len(want) {
		t.Fatalf("got %d statements %+v, want %d", len(got), got, len(want))
	}
	for i := range want {
		if got[i].Text != want[i] || !strings.HasPrefix(src[got[i].Pos:], want[i]) {
			t.Errorf("statement %d = %q at %d, want %q", i, got[i].Text, got[i].Pos, want[i])
		}
	}
}

// Errors point at a line and a column in characters, and at Postgres' 1-based character position.
func TestPositions(t *testing.T) {
	src := "SELECT 1;\nSELECT é, x\n  FROM t"
	off := strings.Index(src, "x")
	if p := PositionOf(src, off); p != (Position{Line: 2, Col: 11}) {
		t.Fatalf("PositionOf = %+v", p)
	}
	if p := PositionOf(src, strings.Index(src, "FROM")); p != (Position{Line: 3, Col: 3}) {
		t.Fatalf("PositionOf(FROM) = %+v", p)
	}
	if c := CharOffset(src, off); c != 21 {
		t.Fatalf("CharOffset = %d, want 21 (the é is one character)", c)
	}
}

// Whatever a client sends, the lexer returns tokens or a positioned error, never a panic, and its tokens tile the
// source in order.
func FuzzLex(f *testing.F) {
	for _, s := range []string{"SELECT 'a''b', \"c\" FROM t -- x", "$tag$ body $tag$", "/* /* */ */ 1.5e3", "$1::int", "'", "\"", "/*", "é"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		toks, err := Lex(src)
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) || se.Pos < 0 || se.Pos > len(src) {
				t.Fatalf("Lex(%q): error %v without a position in the source", src, err)
			}
			return
		}
		last := 0
		for _, tok := range toks {
			if tok.Pos < last || tok.End < tok.Pos || tok.End > len(src) {
				t.Fatalf("Lex(%q): token %+v out of order or range", src, tok)
			}
			last = tok.End
		}
		if toks[len(toks)-1].Kind != EOF {
			t.Fatalf("Lex(%q): no EOF token", src)
		}
	})
}
