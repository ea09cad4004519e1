package parser

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// TokenKind classifies a token of the clinksql dialect's lexical grammar (Postgres' rules: standard strings
// with no backslash escapes, E'...' strings with them, "quoted identifiers", dollar quoting, nested block
// comments).
type TokenKind uint8

const (
	EOF TokenKind = iota
	Ident
	QuotedIdent // "name" or `name`
	String      // 'text' or $tag$text$tag$
	Number
	Param // $1
	Op    // punctuation and operators: ( ) , . ; :: <= || ...
)

func (k TokenKind) String() string {
	return [...]string{"EOF", "ident", "quoted-ident", "string", "number", "param", "op"}[k]
}

// Token is one lexeme. Pos and End are byte offsets into the source: every error the parser reports maps back
// to the user's text through them.
type Token struct {
	Kind TokenKind
	// Text is the token as written in the source.
	Text string
	// Value is what the token means: an identifier folded to lower case, a quoted identifier or string with its
	// quotes removed and doubled quotes undone (and an E'...' string's escapes), a number or operator as written.
	Value    string
	Pos, End int
}

// SyntaxError is a lexical or syntax error at a byte offset of the source. Code is its SQLSTATE when it is not
// 42601 (a bad escape of an E'...' string).
type SyntaxError struct {
	Pos  int
	Msg  string
	Code string
}

func (e *SyntaxError) Error() string { return e.Msg }

// Lex splits src into tokens, skipping white space and comments. The last token is EOF at len(src).
func Lex(src string) ([]Token, error) {
	var toks []Token
	i := 0
	for {
		start, err := skipSpace(src, i)
		if err != nil {
			return nil, err
		}
		if start >= len(src) {
			toks = append(toks, Token{Kind: EOF, Pos: len(src), End: len(src)})
			return toks, nil
		}
		t, err := lexOne(src, start)
		if err != nil {
			return nil, err
		}
		toks = append(toks, t)
		i = t.End
	}
}

// skipSpace skips white space and comments (-- to end of line, /* */ nested as Postgres nests them).
func skipSpace(src string, i int) (int, error) {
	for i < len(src) {
		c := src[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			i++
		case strings.HasPrefix(src[i:], "--"):
			if nl := strings.IndexByte(src[i:], '\n'); nl >= 0 {
				i += nl + 1
			} else {
				i = len(src)
			}
		case strings.HasPrefix(src[i:], "/*"):
			depth, j := 0, i
			for {
				switch {
				case j >= len(src):
					return 0, &SyntaxError{Pos: i, Msg: "unterminated /* comment"}
				case strings.HasPrefix(src[j:], "/*"):
					depth++
					j += 2
				case strings.HasPrefix(src[j:], "*/"):
					depth--
					j += 2
				default:
					j++
				}
				if depth == 0 {
					break
				}
			}
			i = j
		default:
			return i, nil
		}
	}
	return i, nil
}

func isIdentStart(r rune) bool {
	return r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= 0x80
}

func isIdentPart(r rune) bool { return isIdentStart(r) || r >= '0' && r <= '9' || r == '$' }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// multiCharOps are the operators of more than one character, longest first.
var multiCharOps = []string{"::", "<=", ">=", "<>", "!=", "||", "->>", "->", "=>"}

func lexOne(src string, i int) (Token, error) {
	c := src[i]
	r, size := utf8.DecodeRuneInString(src[i:])
	switch {
	case (c == 'e' || c == 'E') && i+1 < len(src) && src[i+1] == '\'':
		return escapeString(src, i)
	case c == '\'':
		v, end, err := quoted(src, i, '\'')
		if err != nil {
			return Token{}, &SyntaxError{Pos: i, Msg: "unterminated quoted string"}
		}
		return Token{Kind: String, Text: src[i:end], Value: v, Pos: i, End: end}, nil
	case c == '"' || c == '`':
		v, end, err := quoted(src, i, c)
		if err != nil {
			return Token{}, &SyntaxError{Pos: i, Msg: "unterminated quoted identifier"}
		}
		if v == "" {
			return Token{}, &SyntaxError{Pos: i, Msg: "zero-length delimited identifier"}
		}
		return Token{Kind: QuotedIdent, Text: src[i:end], Value: v, Pos: i, End: end}, nil
	case c == '$' && i+1 < len(src) && isDigit(src[i+1]):
		j := i + 1
		for j < len(src) && isDigit(src[j]) {
			j++
		}
		return Token{Kind: Param, Text: src[i:j], Value: src[i:j], Pos: i, End: j}, nil
	case c == '$':
		if tag, ok := dollarTag(src, i); ok {
			body := i + len(tag)
			k := strings.Index(src[body:], tag)
			if k < 0 {
				return Token{}, &SyntaxError{Pos: i, Msg: "unterminated dollar-quoted string"}
			}
			end := body + k + len(tag)
			return Token{Kind: String, Text: src[i:end], Value: src[body : body+k], Pos: i, End: end}, nil
		}
	case isDigit(c) || c == '.' && i+1 < len(src) && isDigit(src[i+1]):
		return lexNumber(src, i)
	case isIdentStart(r):
		j := i + size
		for j < len(src) {
			r, n := utf8.DecodeRuneInString(src[j:])
			if !isIdentPart(r) {
				break
			}
			j += n
		}
		return Token{Kind: Ident, Text: src[i:j], Value: strings.ToLower(src[i:j]), Pos: i, End: j}, nil
	}
	for _, op := range multiCharOps {
		if strings.HasPrefix(src[i:], op) {
			return Token{Kind: Op, Text: op, Value: op, Pos: i, End: i + len(op)}, nil
		}
	}
	if strings.ContainsRune("()[],.;:+-*/%<>=!|&^~?@#{}", r) {
		return Token{Kind: Op, Text: src[i : i+size], Value: src[i : i+size], Pos: i, End: i + size}, nil
	}
	return Token{}, &SyntaxError{Pos: i, Msg: fmt.Sprintf("syntax error at or near %q", string(r))}
}

// quoted reads a token delimited by q in which a doubled q stands for one.
func quoted(src string, i int, q byte) (string, int, error) {
	var b strings.Builder
	j := i + 1
	for j < len(src) {
		if src[j] == q {
			if j+1 < len(src) && src[j+1] == q {
				b.WriteByte(q)
				j += 2
				continue
			}
			return b.String(), j + 1, nil
		}
		b.WriteByte(src[j])
		j++
	}
	return "", 0, fmt.Errorf("unterminated")
}

// escapeString reads Postgres' escape string constant E'...' at i: backslash escapes (\b \f \n \r \t, \ooo octal,
// \xhh hex, \uXXXX and \UXXXXXXXX code points, \c for any other c) and doubled quotes. As in Postgres, a
// plain '...' that follows after white space with a newline continues it, escapes included. The value must be
// valid UTF-8 without NUL bytes.
func escapeString(src string, i int) (Token, error) {
	var b strings.Builder
	j := i + 2 // after E'
	for {
		if j >= len(src) {
			return Token{}, &SyntaxError{Pos: i, Msg: "unterminated quoted string"}
		}
		c := src[j]
		switch {
		case c == '\'' && j+1 < len(src) && src[j+1] == '\'':
			b.WriteByte('\'')
			j += 2
			continue
		case c == '\'':
			end := j + 1
			// A continuation: white space with a newline (comments allowed), then a quote.
			if k, err := skipSpace(src, end); err == nil && k < len(src) && src[k] == '\'' && strings.Contains(src[end:k], "\n") {
				j = k + 1
				continue
			}
			v := b.String()
			if k := invalidUTF8(v); k >= 0 {
				return Token{}, &SyntaxError{Pos: i, Code: "22021",
					Msg: fmt.Sprintf("invalid byte sequence for encoding \"UTF8\": 0x%02x", v[k])}
			}
			return Token{Kind: String, Text: src[i:end], Value: v, Pos: i, End: end}, nil
		case c != '\\' || j+1 >= len(src):
			b.WriteByte(c)
			j++
			continue
		}
		esc := j
		e := src[j+1]
		j += 2
		switch e {
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case '0', '1', '2', '3', '4', '5', '6', '7':
			v := int(e - '0')
			for n := 0; n < 2 && j < len(src) && src[j] >= '0' && src[j] <= '7'; n++ {
				v = v*8 + int(src[j]-'0')
				j++
			}
			b.WriteByte(byte(v))
		case 'x':
			n, k := hexDigits(src, j, 2)
			if k == j {
				b.WriteByte('x') // \x without digits is an x, as in Postgres
				continue
			}
			b.WriteByte(byte(n))
			j = k
		case 'u', 'U':
			width := 4
			if e == 'U' {
				width = 8
			}
			r, k := hexDigits(src, j, width)
			if k-j != width {
				return Token{}, &SyntaxError{Pos: i, Code: "22025", Msg: "invalid Unicode escape"}
			}
			j = k
			if r >= 0xD800 && r <= 0xDBFF { // a UTF-16 surrogate pair
				lo, k := hexDigits(src, j+2, 4)
				if !strings.HasPrefix(src[j:], "\\u") || k-(j+2) != 4 || lo < 0xDC00 || lo > 0xDFFF {
					return Token{}, &SyntaxError{Pos: esc, Msg: "invalid Unicode surrogate pair"}
				}
				r = 0x10000 + (r-0xD800)<<10 + (lo - 0xDC00)
				j = k
			}
			if r == 0 || r > utf8.MaxRune || r >= 0xD800 && r <= 0xDFFF {
				return Token{}, &SyntaxError{Pos: esc, Msg: "invalid Unicode escape value"}
			}
			b.WriteRune(rune(r))
		default:
			// Any other character stands for itself (\\, \', ...); a multi-byte one is copied whole below.
			b.WriteByte(e)
		}
	}
}

// hexDigits reads up to n hex digits at j: their value and where they end.
func hexDigits(src string, j, n int) (int, int) {
	v, k := 0, j
	for ; k < len(src) && k-j < n; k++ {
		c := src[k]
		switch {
		case c >= '0' && c <= '9':
			v = v*16 + int(c-'0')
		case c >= 'a' && c <= 'f':
			v = v*16 + int(c-'a') + 10
		case c >= 'A' && c <= 'F':
			v = v*16 + int(c-'A') + 10
		default:
			return v, k
		}
	}
	return v, k
}

// invalidUTF8 is the offset of the first byte of s that is not valid UTF-8 or is NUL, or -1.
func invalidUTF8(s string) int {
	for k := 0; k < len(s); {
		r, n := utf8.DecodeRuneInString(s[k:])
		if r == 0 || r == utf8.RuneError && n <= 1 {
			return k
		}
		k += n
	}
	return -1
}

// dollarTag reads the opening $tag$ of a dollar-quoted string.
func dollarTag(src string, i int) (string, bool) {
	j := i + 1
	for j < len(src) {
		r, n := utf8.DecodeRuneInString(src[j:])
		if r == '$' {
			return src[i : j+1], true
		}
		if !isIdentPart(r) || r == '$' || j == i+1 && isDigit(src[j]) {
			return "", false
		}
		j += n
	}
	return "", false
}

func lexNumber(src string, i int) (Token, error) {
	j := i
	for j < len(src) && isDigit(src[j]) {
		j++
	}
	if j < len(src) && src[j] == '.' && !strings.HasPrefix(src[j:], "..") {
		j++
		for j < len(src) && isDigit(src[j]) {
			j++
		}
	}
	if j < len(src) && (src[j] == 'e' || src[j] == 'E') {
		k := j + 1
		if k < len(src) && (src[k] == '+' || src[k] == '-') {
			k++
		}
		if k < len(src) && isDigit(src[k]) {
			for k < len(src) && isDigit(src[k]) {
				k++
			}
			j = k
		}
	}
	if j < len(src) {
		if r, _ := utf8.DecodeRuneInString(src[j:]); isIdentStart(r) {
			return Token{}, &SyntaxError{Pos: i, Msg: fmt.Sprintf("trailing junk after numeric literal at or near %q", src[i:j+1])}
		}
	}
	return Token{Kind: Number, Text: src[i:j], Value: src[i:j], Pos: i, End: j}, nil
}

// Statement is one statement of a script: its text without the terminating semicolon, and where it starts.
type Statement struct {
	Text string
	Pos  int
}

// Split cuts a script into statements at the semicolons outside strings, quoted identifiers and comments. Empty
// statements are dropped. It is what the REPL and `clinksql exec -f` use to feed the engine one statement at a
// time.
func Split(src string) ([]Statement, error) {
	toks, err := Lex(src)
	if err != nil {
		return nil, err
	}
	var out []Statement
	start := -1
	for _, t := range toks {
		if t.Kind == EOF || t.Kind == Op && t.Text == ";" {
			if start >= 0 {
				out = append(out, Statement{Text: strings.TrimSpace(src[start:t.Pos]), Pos: start})
			}
			start = -1
			continue
		}
		if start < 0 {
			start = t.Pos
		}
	}
	return out, nil
}

// Position is a 1-based line and column (in characters) of a source text.
type Position struct{ Line, Col int }

// PositionOf converts a byte offset of src to a line and column.
func PositionOf(src string, offset int) Position {
	offset = min(max(offset, 0), len(src))
	line := 1 + strings.Count(src[:offset], "\n")
	lineStart := strings.LastIndexByte(src[:offset], '\n') + 1
	return Position{Line: line, Col: 1 + utf8.RuneCountInString(src[lineStart:offset])}
}

// CharOffset converts a byte offset to the 1-based character position Postgres reports in an ErrorResponse.
func CharOffset(src string, offset int) int {
	offset = min(max(offset, 0), len(src))
	return 1 + utf8.RuneCountInString(src[:offset])
}
