package expr

import (
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/clinksql/clinksql/sqlerr"
)

// LIKE / ILIKE and the regular-expression match operators. A constant pattern is compiled once at bind time
// (a bad constant regular expression is a bind error, 2201B); a pattern that varies per row is compiled per
// distinct value as rows bring it (a bad one is a bad value). LIKE patterns without wildcards in the middle run
// as plain string tests (equal, prefix, suffix, contains) instead of a regular expression.

func init() {
	register(bindLike, "like", "ilike")
	register(bindRegexpLike, "regexp_like", "regexp_like_ci")
}

// likeMatcher matches one LIKE pattern.
type likeMatcher struct {
	kind byte // '=' equal, '^' prefix, '$' suffix, '~' contains, 'r' regexp
	lit  string
	re   *regexp.Regexp
}

func (m *likeMatcher) match(s string) bool {
	switch m.kind {
	case '=':
		return s == m.lit
	case '^':
		return strings.HasPrefix(s, m.lit)
	case '$':
		return strings.HasSuffix(s, m.lit)
	case '~':
		return strings.Contains(s, m.lit)
	}
	return m.re.MatchString(s)
}

// compileLike translates a LIKE pattern: % any run of characters, _ one character, esc (default backslash, as
// Postgres; "" for none) makes the next character literal. A pattern ending in the escape character is 22025.
func compileLike(p, esc string, ci bool) (*likeMatcher, *sqlerr.Error) {
	var e rune = -1
	if esc != "" {
		r, size := utf8.DecodeRuneInString(esc)
		if size != len(esc) {
			return nil, sqlerr.New("22019", sqlerr.NoPos, "invalid escape string")
		}
		e = r
	}
	type piece struct {
		wild byte // 0 literal, '%' or '_'
		lit  string
	}
	var pieces []piece
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			pieces = append(pieces, piece{lit: lit.String()})
			lit.Reset()
		}
	}
	rs := []rune(p)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case r == e:
			if i+1 == len(rs) {
				return nil, sqlerr.New("22025", sqlerr.NoPos, "LIKE pattern must not end with escape character")
			}
			i++
			lit.WriteRune(rs[i])
		case r == '%' || r == '_':
			flush()
			pieces = append(pieces, piece{wild: byte(r)})
		default:
			lit.WriteRune(r)
		}
	}
	flush()
	if !ci {
		switch {
		case len(pieces) == 0:
			return &likeMatcher{kind: '=', lit: ""}, nil
		case len(pieces) == 1 && pieces[0].wild == 0:
			return &likeMatcher{kind: '=', lit: pieces[0].lit}, nil
		case len(pieces) == 1 && pieces[0].wild == '%':
			return &likeMatcher{kind: '^', lit: ""}, nil
		case len(pieces) == 2 && pieces[0].wild == 0 && pieces[1].wild == '%':
			return &likeMatcher{kind: '^', lit: pieces[0].lit}, nil
		case len(pieces) == 2 && pieces[0].wild == '%' && pieces[1].wild == 0:
			return &likeMatcher{kind: '$', lit: pieces[1].lit}, nil
		case len(pieces) == 3 && pieces[0].wild == '%' && pieces[1].wild == 0 && pieces[2].wild == '%':
			return &likeMatcher{kind: '~', lit: pieces[1].lit}, nil
		}
	}
	var re strings.Builder
	re.WriteString("(?s)")
	if ci {
		re.WriteString("(?i)")
	}
	re.WriteString("^")
	for _, pc := range pieces {
		switch pc.wild {
		case '%':
			re.WriteString(".*")
		case '_':
			re.WriteString(".")
		default:
			re.WriteString(regexp.QuoteMeta(pc.lit))
		}
	}
	re.WriteString("$")
	return &likeMatcher{kind: 'r', re: regexp.MustCompile(re.String())}, nil
}

func needText(what string, e Expr) (Expr, error) {
	switch {
	case isString(e.Type()):
		return e, nil
	case isNull(e.Type()):
		return NullOf(TypeText), nil
	}
	return nil, sqlerr.New(sqlerr.DatatypeMismatch, sqlerr.NoPos, "argument of %s must be type text, not type %s", what, TypeName(e.Type()))
}

// constLike compiles a constant pattern (and escape) once; nil when either varies per row.
func constLike(args []Expr, ci bool) (*likeMatcher, error) {
	p, null, ok := ConstantString(args[1])
	if !ok || null {
		return nil, nil
	}
	esc := `\`
	if len(args) == 3 {
		e, enull, eok := ConstantString(args[2])
		if !eok || enull {
			return nil, nil
		}
		esc = e
	}
	m, err := compileLike(p, esc, ci)
	if err != nil {
		return nil, err
	}
	return m, nil
}

// bindLike binds like(s, pattern [, escape]) and ilike(...). NOT LIKE is not(like(...)).
func bindLike(name string, args []Expr) (Expr, error) {
	if len(args) != 2 && len(args) != 3 {
		return nil, fnNotExist(name, args)
	}
	what := strings.ToUpper(name)
	out := make([]Expr, len(args))
	for i, a := range args {
		t, err := needText(what, a)
		if err != nil {
			return nil, err
		}
		out[i] = t
	}
	ci := name == "ilike"
	fixed, err := constLike(out, ci)
	if err != nil {
		return nil, err
	}
	render := func(a []string) string {
		s := "(" + a[0] + " " + what + " " + a[1]
		if len(a) == 3 {
			s += " ESCAPE " + a[2]
		}
		return s + ")"
	}
	return &callExpr{name: name, args: out, typ: TypeBool, strict: true, canFail: fixed == nil, render: render,
		kern: func(ec *evalCtx, args []value) (value, error) {
			ss := strsOf(args[0])
			if fixed != nil {
				return boolLoop(ec, args[:1], func(i int) bool { return fixed.match(ss.at(i)) })
			}
			ps := strsOf(args[1])
			var es strs
			if len(args) == 3 {
				es = strsOf(args[2])
			}
			var m *likeMatcher
			var lastP, lastE string
			return mapBoolLoop(ec, args, func(i int) (bool, *sqlerr.Error) {
				p, e := ps.at(i), `\`
				if len(args) == 3 {
					e = es.at(i)
				}
				if m == nil || p != lastP || e != lastE {
					var err *sqlerr.Error
					if m, err = compileLike(p, e, ci); err != nil {
						m = nil
						return false, err
					}
					lastP, lastE = p, e
				}
				return m.match(ss.at(i)), nil
			})
		}}, nil
}

// bindRegexpLike binds regexp_like(s, pattern) (Postgres' ~, an unanchored search) and regexp_like_ci (~*).
func bindRegexpLike(name string, args []Expr) (Expr, error) {
	if len(args) != 2 {
		return nil, fnNotExist(name, args)
	}
	op := "~"
	ci := name == "regexp_like_ci"
	if ci {
		op = "~*"
	}
	out := make([]Expr, 2)
	for i, a := range args {
		t, err := needText(op, a)
		if err != nil {
			return nil, err
		}
		out[i] = t
	}
	rc, err := newRegexCache(out[1], ci)
	if err != nil {
		return nil, err
	}
	return &callExpr{name: name, args: out, typ: TypeBool, strict: true, canFail: rc.fixed == nil, render: infix(op),
		kern: func(ec *evalCtx, args []value) (value, error) {
			ss := strsOf(args[0])
			if rc.fixed != nil {
				return boolLoop(ec, args[:1], func(i int) bool { return rc.fixed.MatchString(ss.at(i)) })
			}
			rc := rc.forCall()
			ps := strsOf(args[1])
			return mapBoolLoop(ec, args, func(i int) (bool, *sqlerr.Error) {
				re, err := rc.get(ps.at(i))
				if err != nil {
					return false, err
				}
				return re.MatchString(ss.at(i)), nil
			})
		}}, nil
}
