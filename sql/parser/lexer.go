package parser

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// TokenKind classifies a token of the clinksql dialect's lexical grammar (Postgres' rules: standard strings
// with no backslash escapes, "quoted identifiers", dollar quoting, nested block comments).
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
	// quotes removed and doubled quotes undone, a number or operator as written.
	Value    string
	Pos, End int
}

// SyntaxError is a lexical or syntax error at a byte offset of the source.
type SyntaxError struct {
	Pos int
	Msg string
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
