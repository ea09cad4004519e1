package parser

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/clinksql/clinksql/sqlerr"
	tidb "github.com/pingcap/tidb/pkg/parser"
)

// The token-level rewrite. A query or expression of the user's text is re-emitted, token by token, as text the
// TiDB parser (MySQL grammar, SQL mode ANSI_QUOTES,PIPES_AS_CONCAT,NO_BACKSLASH_ESCAPES) reads. What TiDB cannot
// read, or would read with MySQL's meaning, is parsed here and replaced by a placeholder that TiDB does read:
//
//	INTERVAL '10' SECOND, TIMESTAMP '..', DATE '..', $1   ->  clink$N()          (a finished node)
//	CAST(x AS BIGINT), TRY_CAST(..), x::BIGINT            ->  clink$N(x)         (the type is ours)
//	EXTRACT(dow FROM x)                                   ->  clink$N(x)
//	agg(...) FILTER (WHERE c)                             ->  clink$N(agg(...), c)
//	x [ASC|DESC] NULLS FIRST|LAST                         ->  clink$N(x) [ASC|DESC]
//	TABLE(TUMBLE(TABLE t, DESCRIPTOR(c), ..)), HOP(t, ..) ->  clink$N            (a table name)
//	a ~ b, a ~* b, a !~ b, OPERATOR(pg_catalog.~)         ->  a REGEXP b, a NOT REGEXP b (marked)
//	a IS [NOT] DISTINCT FROM b                            ->  a <=> b            (marked)
//	x AT TIME ZONE z                                      ->  x ^ z              (marked)
//	x[i]                                                  ->  x ^ (i)            (marked)
//	ARRAY[x, y], MAP[k, v]                                ->  clink$N(x, y)
//	j -> k, j ->> k                                       ->  j << k, j >> k     (marked)
//	OVER (... ROWS|RANGE <frame>)                         ->  OVER (...)         (parser.frames)
//	FULL [OUTER] JOIN                                     ->  LEFT JOIN          (marked)
//	VALUES (a, b), (c, d) (where a query starts)          ->  VALUES ROW(a, b), ROW(c, d)
//	(query) AS v(a, b)                                    ->  (query) AS v       (the alias token keeps a, b)
//	t FOR SYSTEM_TIME AS OF c                             ->  t                  (the name token keeps c)
//
// Unquoted identifiers are emitted folded; identifiers TiDB reserves (out, key, mod) and function names without a
// special TiDB grammar are emitted quoted, so TiDB reads them as plain names; strings are re-quoted as standard
// strings; comments are gone (so MySQL's executable /*! */ comments and # comments never reach TiDB). Every
// emitted token remembers the user's byte offset it stands for: convert.go turns TiDB's offsets (of the
// rewritten text) back into the user's, and a TiDB syntax error into one at the user's token.

// phPrefix starts every placeholder name. A user name with this prefix is refused, so placeholders never collide.
const phPrefix = "clink$"

// rtok is one token of the rewritten text.
type rtok struct {
	text  string    // as emitted
	kind  TokenKind // of the user's token (Ident for placeholders)
	val   string    // the user's token's Value
	orig  int       // the byte offset in the user's text this token stands for
	off   int       // the byte offset in the rewritten text
	depth int       // parenthesis depth in the rewritten text ("(" and its ")" are outside)
	kw    bool      // an unquoted word emitted as a keyword, not as a name
	fn    bool      // a function name (followed by "(")
	synth bool      // not in the user's text
	mark  string    // what a synthesized operator stands for
	// cols is the column list of a FROM item's alias, `AS v(a, b)`, which TiDB cannot read: the alias token
	// carries it (colsP is its "(") and the list is left out of the text.
	cols  []string
	colsP int
	used  bool // cols was taken by the derived table it belongs to
	// asOf is the `FOR SYSTEM_TIME AS OF col` written after a table name, which TiDB cannot read: the name's
	// last token carries it and the clause is left out of the text.
	asOf *ColumnRef
}

// placeholder is what a clink$N name stands for.
type placeholder struct {
	expr       Expr       // a finished node: *Interval, *Literal, *ParamRef
	cast       *Cast      // clink$N(x): CAST; X is filled in by convert
	extract    *Extract   // clink$N(x): EXTRACT; X is filled in by convert
	filter     bool       // clink$N(agg, cond)
	nulls      bool       // clink$N(x) in ORDER BY
	nullsFirst bool       // with nulls
	tvf        *WindowTVF // a table name
	unnest     *Unnest    // a table name
	ctor       string     // clink$N(x, ...): ARRAY[x, ...] ("array") or MAP[k, v, ...] ("map")
}

// rewritten is a rewritten range of the user's tokens.
type rewritten struct {
	text string
	toks []rtok
	ph   map[string]*placeholder
	// endTok is the user's token just after the range: a TiDB error at the end of the text is an error there.
	endTok Token
}

type rewriter struct {
	p      *parser
	out    []rtok
	ph     map[string]*placeholder
	depth  int
	clause []string // per depth: the clause keyword last seen (select, from, where, ...)
	items  []int    // per depth: the out index where the current list item starts
}

var tidbReserved = func() map[string]bool {
	m := map[string]bool{}
	for _, k := range tidb.Keywords {
		if k.Reserved {
			m[strings.ToLower(k.Word)] = true
		}
	}
	// Words TiDB's grammar will not take as names although its keyword list says they are not reserved, and
	// Postgres allows as names (found by trying every common name).
	for _, w := range []string{"dec", "schema", "schemas"} {
		m[w] = true
	}
	return m
}()

// sqlKeywords are the words emitted bare, as keywords of the query grammar (Postgres and TiDB agree on them).
var sqlKeywords = toSet(`select from where group by having order limit offset union intersect except all distinct
	as on using join inner left right full outer cross natural and or not is null true false in between like ilike
	escape case when then else end exists with recursive values over partition rows range unbounded preceding
	following current row asc desc any some lateral window for both leading trailing collate similar regexp
	unknown default table current_timestamp current_date current_time localtime localtimestamp`)

// tidbFuncs are the functions emitted bare because TiDB has a grammar of their own for them (DISTINCT, *, OVER,
// FROM/FOR/IN inside the call); every other function name is emitted quoted, which TiDB reads as a plain call.
var tidbFuncs = toSet(`count sum avg min max substring substr position trim row_number rank dense_rank
	percent_rank cume_dist ntile lag lead first_value last_value nth_value stddev stddev_pop stddev_samp variance
	var_pop var_samp bit_and bit_or bit_xor`)

// funcKeywords are keywords that are also function names when followed by "(".
var funcKeywords = toSet(`left right`)

var windowKinds = toSet(`tumble hop session cumulate`)

var intervalUnits = map[string]string{
	"year": "year", "years": "year", "month": "month", "months": "month", "week": "week", "weeks": "week",
	"day": "day", "days": "day", "hour": "hour", "hours": "hour", "minute": "minute", "minutes": "minute",
	"second": "second", "seconds": "second", "millisecond": "millisecond", "milliseconds": "millisecond",
	"microsecond": "microsecond", "microseconds": "microsecond",
}

func toSet(words string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(words) {
		m[w] = true
	}
	return m
}

func (p *parser) newRewriter() *rewriter {
	return &rewriter{p: p, ph: map[string]*placeholder{}, clause: []string{""}, items: []int{0}}
}

// finish lays the tokens out as text, one space apart.
func (r *rewriter) finish(hi int) *rewritten {
	var b strings.Builder
	for k := range r.out {
		if k > 0 && !r.out[k-1].fn { // TiDB reads count ( as a name: no space before a call's "("
			b.WriteByte(' ')
		}
		r.out[k].off = b.Len()
		b.WriteString(r.out[k].text)
	}
	return &rewritten{text: b.String(), toks: r.out, ph: r.ph, endTok: r.p.at(hi)}
}

func (r *rewriter) push(t rtok) {
	t.depth = r.depth
	r.out = append(r.out, t)
	switch {
	case t.kind == Op && t.text == "(":
		r.depth++
		r.clause = append(r.clause[:r.depth], "")
		r.items = append(r.items[:r.depth], len(r.out))
	case t.kind == Op && t.text == ")":
		if r.depth > 0 {
			r.depth--
			r.out[len(r.out)-1].depth = r.depth
		}
	case t.kind == Op && t.text == ",":
		r.items[r.depth] = len(r.out)
	case t.kw:
		switch t.val {
		case "select", "from", "where", "group", "having", "order", "limit", "offset", "union", "intersect",
			"except", "window", "with", "values", "partition":
			r.clause[r.depth] = t.val
		}
		if t.val == "by" || t.val == "select" || t.val == "distinct" {
			r.items[r.depth] = len(r.out)
		}
	}
}

func (r *rewriter) synth(text string, kind TokenKind, orig int) rtok {
	return rtok{text: text, kind: kind, val: strings.ToLower(text), orig: orig, synth: true, kw: kind == Ident}
}

func (r *rewriter) newPlaceholder(ph *placeholder) string {
	name := phPrefix + strconv.Itoa(r.p.phSeq)
	r.p.phSeq++
	r.ph[name] = ph
	return name
}

// emitCall emits a placeholder call clink$N( ... the caller emits arguments and the ")".
func (r *rewriter) emitCallOpen(ph *placeholder, orig int) {
	name := r.newPlaceholder(ph)
	r.push(rtok{text: name, kind: Ident, val: name, orig: orig, synth: true, fn: true})
	r.push(r.synth("(", Op, orig))
}

// emitValue emits a finished node as clink$N().
func (r *rewriter) emitValue(e Expr, orig, closeOrig int) {
	r.emitCallOpen(&placeholder{expr: e}, orig)
	r.push(r.synth(")", Op, closeOrig))
}

// quoteIdent quotes a name for TiDB (ANSI_QUOTES).
func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// rewrite rewrites the user's tokens [lo, hi).
func (r *rewriter) rewrite(lo, hi int) error {
	p := r.p
	for i := lo; i < hi; {
		t := p.toks[i]
		next := p.at(i + 1)
		if t.Kind == Ident || t.Kind == QuotedIdent {
			if strings.HasPrefix(t.Value, phPrefix) {
				return syntaxErrorTok(t)
			}
		}
		if j, done, err := r.aliasColumns(i, hi); err != nil || done {
			if err != nil {
				return err
			}
			i = j
			continue
		}
		switch t.Kind {
		case Ident:
			j, done, err := r.special(i, hi)
			if err != nil {
				return err
			}
			if done {
				i = j
				continue
			}
			r.pushIdent(t, i+1 < hi && isOp(next, "("))
		case QuotedIdent:
			r.push(rtok{text: quoteIdent(t.Value), kind: t.Kind, val: t.Value, orig: t.Pos, fn: i+1 < hi && isOp(next, "(")})
		case String:
			if n := len(r.out); n > 0 {
				// A string right after a name, a number or AS is an alias or a typed literal to MySQL (x'0A',
				// _utf8'a', a 'b', a AS 'b'); Postgres has none of these.
				prev := r.out[n-1]
				if !prev.kw && (prev.kind == Ident || prev.kind == QuotedIdent || prev.kind == Number) || prev.kw && prev.val == "as" {
					return syntaxErrorTok(t)
				}
			}
			v := t.Value
			// Postgres joins standard string constants separated by white space with at least one newline, and
			// refuses them otherwise (MySQL would join them always). An E'...' string's continuations are part of
			// its token (lexer.go); a dollar-quoted or E'...' string continues nothing and is continued by nothing.
			j := i + 1
			for j < hi && p.toks[j].Kind == String {
				if !strings.Contains(p.src[p.toks[j-1].End:p.toks[j].Pos], "\n") ||
					!strings.HasPrefix(p.toks[j-1].Text, "'") || !strings.HasPrefix(p.toks[j].Text, "'") {
					return syntaxErrorTok(p.toks[j])
				}
				v += p.toks[j].Value
				j++
			}
			r.push(rtok{text: "'" + strings.ReplaceAll(v, "'", "''") + "'", kind: String, val: v, orig: t.Pos})
			i = j
			continue
		case Number:
			text := t.Text
			if strings.ContainsAny(text, "eE") {
				if _, err := strconv.ParseFloat(text, 64); err != nil {
					// TiDB refuses a float it cannot hold (1e400) with a bare syntax error; it gets one it can,
					// and the binder reports the literal itself (22003, as Postgres for 1e400::float8).
					text = "1e0"
				}
			}
			r.push(rtok{text: text, kind: Number, val: t.Value, orig: t.Pos})
		case Param:
			n, err := strconv.Atoi(t.Value[1:])
			if err != nil || n < 1 {
				return sqlerr.New(sqlerr.SyntaxError, t.Pos, "invalid parameter %s", t.Text)
			}
			if k := len(r.out) - 1; k >= 0 && r.out[k].kw && (r.out[k].val == "limit" || r.out[k].val == "offset") {
				// TiDB takes no call after LIMIT, only a literal or its own parameter marker.
				r.push(rtok{text: "?", kind: Param, val: strconv.Itoa(n), orig: t.Pos})
			} else {
				r.emitValue(&ParamRef{P: t.Pos, N: n}, t.Pos, t.Pos)
			}
		case Op:
			j, err := r.op(i, hi)
			if err != nil {
				return err
			}
			i = j
			continue
		default:
			return syntaxErrorTok(t)
		}
		i++
	}
	return nil // unbalanced parentheses are TiDB's to report, at the token where it notices
}

func (r *rewriter) pushIdent(t Token, call bool) {
	v := t.Value
	switch {
	case sqlKeywords[v] && !(call && funcKeywords[v]):
		r.push(rtok{text: v, kind: Ident, val: v, orig: t.Pos, kw: true})
	case call && tidbFuncs[v]:
		r.push(rtok{text: v, kind: Ident, val: v, orig: t.Pos, fn: true})
	case call || tidbReserved[v] || !isPlainWord(v):
		r.push(rtok{text: quoteIdent(v), kind: Ident, val: v, orig: t.Pos, fn: call})
	default:
		r.push(rtok{text: v, kind: Ident, val: v, orig: t.Pos})
	}
}

// isPlainWord: an ASCII word TiDB reads as a name (a leading _ could be a charset introducer such as _utf8).
func isPlainWord(s string) bool {
	for k := 0; k < len(s); k++ {
		c := s[k]
		if !(c >= 'a' && c <= 'z' || c == '_' && k > 0 || c >= '0' && c <= '9' && k > 0 || c == '$' && k > 0) {
			return false
		}
	}
	return s != ""
}

// special handles the words that start a construct of ours. It returns the next token index and whether it did.
func (r *rewriter) special(i, hi int) (int, bool, error) {
	p := r.p
	t := p.toks[i]
	next := p.at(i + 1)
	if i+1 >= hi {
		next = Token{Kind: EOF, Pos: p.at(hi).Pos}
	}
	switch t.Value {
	case "array", "map":
		if isOp(next, "[") {
			// ARRAY[x, ...] and Flink's MAP[k, v, ...]: a placeholder call over the elements.
			close := p.matchBracket(i + 1)
			if close < 0 || close >= hi {
				return 0, false, syntaxErrorTok(p.at(hi))
			}
			r.emitCallOpen(&placeholder{ctor: t.Value}, t.Pos)
			if err := r.rewrite(i+2, close); err != nil {
				return 0, false, err
			}
			r.push(rtok{text: ")", kind: Op, val: ")", orig: p.toks[close].Pos})
			return close + 1, true, nil
		}
	case "at":
		if p.kwAt(i+1, "time") && p.kwAt(i+2, "zone") && i+3 < hi && len(r.out) > 0 {
			// x AT TIME ZONE z: TiDB's ^ binds as tightly as Postgres' AT (tighter than * and +); ours is refused,
			// so a marked ^ is always this.
			r.push(rtok{text: "^", kind: Op, val: "^", orig: t.Pos, synth: true, mark: "at time zone"})
			return i + 3, true, nil
		}
	case "for":
		if p.kwAt(i+1, "system_time") && r.inFrom() {
			j, err := r.systemTime(i, hi)
			return j, err == nil, err
		}
	case "rows", "range":
		if open := p.overParen(i); open >= 0 {
			return r.frame(i, open, hi)
		}
	case "interval":
		iv, j, err := p.interval(i, hi)
		if err != nil {
			return 0, false, err
		}
		r.emitValue(iv, t.Pos, p.at(j).Pos)
		return j, true, nil
	case "timestamp", "date":
		if t.Value == "timestamp" && p.kwAt(i+1, "with") && p.kwAt(i+2, "time") && p.kwAt(i+3, "zone") && p.at(i+4).Kind == String && i+4 < hi {
			s := p.at(i + 4)
			r.emitValue(&Literal{P: t.Pos, Kind: LitTimestampTZ, Text: s.Value}, t.Pos, s.End)
			return i + 5, true, nil
		}
		if next.Kind == String {
			kind := LitTimestamp
			if t.Value == "date" {
				kind = LitDate
			}
			r.emitValue(&Literal{P: t.Pos, Kind: kind, Text: next.Value}, t.Pos, next.End)
			return i + 2, true, nil
		}
	case "timestamptz":
		if next.Kind == String {
			r.emitValue(&Literal{P: t.Pos, Kind: LitTimestampTZ, Text: next.Value}, t.Pos, next.End)
			return i + 2, true, nil
		}
	case "time":
		if next.Kind == String {
			return 0, false, notSupported(t.Pos, "type %s is not supported", strings.ToUpper(t.Value))
		}
	case "cast", "try_cast":
		if isOp(next, "(") {
			return r.cast(i, hi)
		}
	case "extract":
		if isOp(next, "(") {
			return r.extract(i, hi)
		}
	case "table":
		if isOp(next, "(") {
			return r.windowTVF(i, hi, true)
		}
	case "unnest":
		prev := p.at(i - 1)
		if isOp(next, "(") && i > 0 && (isKw(prev, "from") || isKw(prev, "join") ||
			isOp(prev, ",") && r.clause[r.depth] == "from") {
			close := p.matchParen(i + 1)
			if close < 0 || close >= hi {
				return 0, false, syntaxErrorTok(p.at(hi))
			}
			args, err := p.parseExprList(i+2, close)
			if err != nil {
				return 0, false, err
			}
			u := &Unnest{P: t.Pos, Args: args}
			j := close + 1
			if p.kwAt(j, "with") && p.kwAt(j+1, "ordinality") && j+1 < hi {
				u.Ordinality = true
				j += 2
			}
			name := r.newPlaceholder(&placeholder{unnest: u})
			r.push(rtok{text: name, kind: Ident, val: name, orig: t.Pos, synth: true})
			return j, true, nil
		}
	case "tumble", "hop", "session", "cumulate":
		prev := p.at(i - 1)
		if isOp(next, "(") && i > 0 && (isKw(prev, "from") || isKw(prev, "join") ||
			isOp(prev, ",") && r.clause[r.depth] == "from") {
			return r.windowTVF(i, hi, false)
		}
	case "operator":
		if isOp(next, "(") {
			// psql's OPERATOR(pg_catalog.~): the operator is the last token inside.
			close := p.matchParen(i + 1)
			if close < 0 || close >= hi || close < i+3 {
				return 0, false, syntaxErrorTok(next)
			}
			opTok := p.toks[close-1]
			if opTok.Kind != Op {
				return 0, false, syntaxErrorTok(opTok)
			}
			j, err := r.operator(opTok.Text, t.Pos, i, close+1, hi)
			return j, true, err
		}
	case "is":
		if p.kwAt(i+1, "distinct") && p.kwAt(i+2, "from") {
			r.push(rtok{text: "<=>", kind: Op, val: "<=>", orig: t.Pos, synth: true, mark: "is distinct from"})
			return i + 3, true, nil
		}
		if p.kwAt(i+1, "not") && p.kwAt(i+2, "distinct") && p.kwAt(i+3, "from") {
			r.push(rtok{text: "<=>", kind: Op, val: "<=>", orig: t.Pos, synth: true, mark: "is not distinct from"})
			return i + 4, true, nil
		}
	case "filter":
		if isOp(next, "(") && p.kwAt(i+2, "where") && len(r.out) > 0 && r.out[len(r.out)-1].text == ")" {
			return r.filter(i, hi)
		}
	case "nulls":
		if p.kwAt(i+1, "first") || p.kwAt(i+1, "last") {
			return r.nulls(i)
		}
	case "full":
		j := i + 1
		if p.kwAt(j, "outer") {
			j++
		}
		if p.kwAt(j, "join") {
			r.push(rtok{text: "left", kind: Ident, val: "left", orig: t.Pos, kw: true, mark: "full"})
			return i + 1, true, nil
		}
	case "collate":
		// psql writes COLLATE pg_catalog.default; the default and "C" are how strings compare here (by bytes).
		j := i + 1
		if p.kwAt(j, "pg_catalog") && isOp(p.at(j+1), ".") {
			j += 2
		}
		if c := p.at(j); j < hi && isName(c) && (c.Value == "default" || c.Value == "C" || c.Value == "POSIX") {
			return j + 1, true, nil
		}
		return 0, false, notSupported(t.Pos, "COLLATE is not supported")
	case "values":
		if r.queryStart() {
			return r.values(i, hi)
		}
	case "similar", "isnull", "notnull":
		return 0, false, notSupported(t.Pos, "%s is not supported", strings.ToUpper(t.Value))
	}
	return 0, false, nil
}

// queryStart reports whether a query starts here: at the start of the text, after "(" (a subquery, a CTE's
// body), or after a set operator.
func (r *rewriter) queryStart() bool {
	n := len(r.out)
	if n == 0 {
		return true
	}
	setOp := func(t rtok) bool { return t.kw && (t.val == "union" || t.val == "intersect" || t.val == "except") }
	t := r.out[n-1]
	switch {
	case t.kind == Op && t.text == "(", setOp(t):
		return true
	case t.kw && (t.val == "all" || t.val == "distinct"):
		return n >= 2 && setOp(r.out[n-2])
	}
	return false
}

// values rewrites the VALUES list at token i, VALUES (a, b), (c, d), to TiDB's VALUES ROW(a, b), ROW(c, d). Each
// ROW stands at its row's "(".
func (r *rewriter) values(i, hi int) (int, bool, error) {
	p := r.p
	r.pushIdent(p.toks[i], false)
	j := i + 1
	for {
		if j >= hi {
			return 0, false, syntaxErrorTok(p.at(hi))
		}
		open := p.toks[j]
		if !isOp(open, "(") {
			return 0, false, syntaxErrorTok(open)
		}
		close := p.matchParen(j)
		if close < 0 || close >= hi {
			return 0, false, syntaxErrorTok(p.at(hi))
		}
		if close == j+1 { // VALUES (): TiDB takes an empty row, Postgres does not
			return 0, false, syntaxErrorTok(p.toks[close])
		}
		r.push(r.synth("row", Ident, open.Pos))
		r.push(rtok{text: "(", kind: Op, val: "(", orig: open.Pos})
		if err := r.rewrite(j+1, close); err != nil {
			return 0, false, err
		}
		r.push(rtok{text: ")", kind: Op, val: ")", orig: p.toks[close].Pos})
		j = close + 1
		if j < hi && isOp(p.toks[j], ",") {
			r.push(rtok{text: ",", kind: Op, val: ",", orig: p.toks[j].Pos})
			j++
			continue
		}
		return j, true, nil
	}
}

// systemTime handles `FOR SYSTEM_TIME AS OF col` after a table name in FROM (Flink's temporal and lookup joins):
// the column reference rides on the name's token. Only a column reference is accepted as the time.
func (r *rewriter) systemTime(i, hi int) (int, error) {
	p := r.p
	t := p.toks[i]
	n := len(r.out)
	if n == 0 {
		return 0, syntaxErrorTok(t)
	}
	if b := r.out[n-1]; !(b.kind == Ident || b.kind == QuotedIdent) || b.kw || b.fn || b.synth || b.asOf != nil {
		return 0, notSupported(t.Pos, "FOR SYSTEM_TIME AS OF goes right after the name of a stream or table")
	}
	if !p.kwAt(i+2, "as") || !p.kwAt(i+3, "of") || i+4 >= hi {
		return 0, syntaxErrorTok(p.at(min(i+2, hi)))
	}
	j := i + 4
	ref := &ColumnRef{P: p.toks[j].Pos}
	var parts []string
	for {
		if j >= hi || !isName(p.toks[j]) || p.toks[j].Kind == Ident && sqlKeywords[p.toks[j].Value] {
			return 0, notSupported(p.at(min(j, hi)).Pos, "FOR SYSTEM_TIME AS OF takes a column of the left input (its time attribute)")
		}
		parts = append(parts, p.toks[j].Value)
		j++
		if j < hi && isOp(p.toks[j], ".") {
			j++
			continue
		}
		break
	}
	if j < hi && p.toks[j].Kind == Op && !isOp(p.toks[j], ",") && !isOp(p.toks[j], ")") {
		return 0, notSupported(ref.P, "FOR SYSTEM_TIME AS OF takes a column of the left input (its time attribute), not an expression")
	}
	switch len(parts) {
	case 1:
		ref.Name = parts[0]
	case 2:
		ref.Table, ref.Name = parts[0], parts[1]
	default:
		return 0, notSupported(ref.P, "FOR SYSTEM_TIME AS OF takes a column as name or table.name")
	}
	r.out[n-1].asOf = ref
	return j, nil
}

// aliasColumns handles the alias of a FROM item followed by a column list, `AS v(a, b)` or `v(a, b)`: the alias is
// emitted carrying the list, which TiDB cannot read. Only a derived table's alias may have one.
func (r *rewriter) aliasColumns(i, hi int) (int, bool, error) {
	p := r.p
	t := p.toks[i]
	n := len(r.out)
	if !isName(t) || i+1 >= hi || !isOp(p.toks[i+1], "(") || n == 0 || t.Kind == Ident && sqlKeywords[t.Value] ||
		!r.inFrom() {
		return 0, false, nil
	}
	// An alias follows the FROM item, after an optional AS.
	before := n - 1
	if r.out[before].kw && r.out[before].val == "as" {
		before--
	}
	if before < 0 {
		return 0, false, nil
	}
	// The FROM item: a parenthesized query, or a name (schema.name, or a window table function's placeholder).
	start := -1
	b := r.out[before]
	switch {
	case b.kind == Op && b.text == ")":
		depth := 0
		for k := before; k >= 0; k-- {
			if r.out[k].kind == Op && r.out[k].text == ")" {
				depth++
			} else if r.out[k].kind == Op && r.out[k].text == "(" {
				if depth--; depth == 0 {
					start = k
					break
				}
			}
		}
	case (b.kind == Ident || b.kind == QuotedIdent) && !b.kw && !b.fn:
		start = before
		for start >= 2 && r.out[start-1].kind == Op && r.out[start-1].text == "." {
			start -= 2
		}
	}
	if start <= 0 {
		return 0, false, nil
	}
	if s := r.out[start-1]; !(s.kw && (s.val == "from" || s.val == "join" || s.val == "lateral") || s.kind == Op && (s.text == "," || s.text == "(")) {
		return 0, false, nil // not a FROM item: TiDB reports what is wrong
	}
	open := p.toks[i+1]
	isUnnest := b.synth && r.ph[b.val] != nil && r.ph[b.val].unnest != nil
	if b.text != ")" && !isUnnest {
		what := "a table"
		if b.synth {
			what = "a window table function"
		}
		return 0, false, notSupported(open.Pos, "a column list on the alias of %s is not supported", what)
	}
	save := p.i
	p.i = i + 1
	cols, _, err := p.nameListPos()
	j := p.i
	p.i = save
	if err != nil {
		return 0, false, err
	}
	if j > hi {
		return 0, false, syntaxErrorTok(p.at(hi))
	}
	if t.Kind == Ident {
		r.pushIdent(t, false)
	} else {
		r.push(rtok{text: quoteIdent(t.Value), kind: t.Kind, val: t.Value, orig: t.Pos})
	}
	r.out[len(r.out)-1].cols, r.out[len(r.out)-1].colsP = cols, open.Pos
	return j, true, nil
}

// inFrom reports whether the output is in a FROM clause, inside the parentheses of a join included.
func (r *rewriter) inFrom() bool {
	for d := r.depth; d >= 0; d-- {
		if r.clause[d] != "" {
			return r.clause[d] == "from"
		}
	}
	return false
}

// op handles an operator token.
func (r *rewriter) op(i, hi int) (int, error) {
	p := r.p
	t := p.toks[i]
	adj := func(k int, text string) bool { // token k is text and directly follows token k-1
		return k < hi && isOp(p.toks[k], text) && p.toks[k].Pos == p.toks[k-1].End
	}
	switch t.Text {
	case "::":
		return r.typeCast(i, hi)
	case "~":
		if adj(i+1, "*") {
			return r.operator("~*", t.Pos, i, i+2, hi)
		}
		return r.operator("~", t.Pos, i, i+1, hi)
	case "!":
		if adj(i+1, "~") {
			if adj(i+2, "*") {
				return r.operator("!~*", t.Pos, i, i+3, hi)
			}
			return r.operator("!~", t.Pos, i, i+2, hi)
		}
		return 0, syntaxErrorTok(t)
	case "(", ")", ",", ".", "+", "-", "*", "/", "%", "=", "<", ">", "<=", ">=", "<>", "!=", "||":
		r.push(rtok{text: t.Text, kind: Op, val: t.Text, orig: t.Pos})
		return i + 1, nil
	case "&", "|", "^", "#":
		return 0, notSupported(t.Pos, "operator %s is not supported", t.Text)
	case "[":
		// x[i]: a marked ^ (TiDB's tightest binary operator; ours is refused) over the parenthesized subscript.
		if n := len(r.out); n == 0 || !endsOperand(r.out[n-1]) {
			return 0, syntaxErrorTok(t)
		}
		close := p.matchBracket(i)
		if close < 0 || close >= hi || close == i+1 {
			return 0, syntaxErrorTok(p.at(min(max(close, i+1), hi)))
		}
		r.push(rtok{text: "^", kind: Op, val: "^", orig: t.Pos, synth: true, mark: "subscript"})
		r.push(r.synth("(", Op, t.Pos))
		if err := r.rewrite(i+1, close); err != nil {
			return 0, err
		}
		r.push(rtok{text: ")", kind: Op, val: ")", orig: p.toks[close].Pos})
		return close + 1, nil
	case "->", "->>":
		// Postgres' json operators bind as its other operators do: looser than + and -, tighter than comparisons,
		// as MySQL's shifts, which TiDB reads for them (marked).
		text := map[string]string{"->": "<<", "->>": ">>"}[t.Text]
		r.push(rtok{text: text, kind: Op, val: text, orig: t.Pos, synth: true, mark: t.Text})
		return i + 1, nil
	}
	return 0, syntaxErrorTok(t)
}

// endsOperand reports whether an emitted token can end an operand, so a "[" after it is a subscript.
func endsOperand(t rtok) bool {
	switch {
	case t.kind == Op:
		return t.text == ")"
	case t.kind == Ident:
		return !t.kw || t.val == "null" || t.val == "true" || t.val == "false"
	}
	return t.kind == QuotedIdent || t.kind == String || t.kind == Number
}

// matchBracket returns the "]" that closes the "[" at token i, or -1.
func (p *parser) matchBracket(i int) int {
	depth := 0
	for j := i; j < len(p.toks); j++ {
		t := p.toks[j]
		switch {
		case isOp(t, "["):
			depth++
		case isOp(t, "]"):
			depth--
			if depth == 0 {
				return j
			}
		case t.Kind == EOF || isOp(t, ";"):
			return -1
		}
	}
	return -1
}

// operator emits the Postgres operator opText (written at orig, tokens [i, j)).
func (r *rewriter) operator(opText string, orig, i, j, hi int) (int, error) {
	switch opText {
	case "~", "~*":
		if r.binaryPosition() {
			r.push(rtok{text: "regexp", kind: Ident, val: "regexp", orig: orig, kw: true, synth: true, mark: opText})
			return j, nil
		}
		return 0, notSupported(orig, "operator %s is not supported", opText)
	case "!~", "!~*":
		r.push(rtok{text: "not", kind: Ident, val: "not", orig: orig, kw: true, synth: true, mark: opText})
		r.push(rtok{text: "regexp", kind: Ident, val: "regexp", orig: orig, kw: true, synth: true, mark: opText})
		return j, nil
	case "+", "-", "*", "/", "%", "=", "<", ">", "<=", ">=", "<>", "!=", "||":
		r.push(rtok{text: opText, kind: Op, val: opText, orig: orig})
		return j, nil
	}
	return 0, notSupported(orig, "operator %s is not supported", opText)
}

// binaryPosition reports whether an operator here is binary: the previous token ends an operand.
func (r *rewriter) binaryPosition() bool {
	if len(r.out) == 0 {
		return false
	}
	t := r.out[len(r.out)-1]
	switch {
	case t.kind == Op:
		return t.text == ")"
	case t.kw:
		return t.val == "null" || t.val == "true" || t.val == "false" || t.val == "end"
	}
	return true
}

// operandStart is the out index where the operand that ends the output so far starts: the left side of x::type
// and the aggregate call before FILTER. Postgres' :: binds tighter than anything but ".", so the operand is a
// primary: a name, a literal, a parenthesized expression, a call, or CASE ... END.
func (r *rewriter) operandStart(at Token) (int, error) {
	j := len(r.out) - 1
	if j < 0 {
		return 0, syntaxErrorTok(at)
	}
	t := r.out[j]
	nameLike := func(t rtok) bool { return (t.kind == Ident || t.kind == QuotedIdent) && !t.kw }
	dotted := func(j int) int {
		for j >= 2 && r.out[j-1].text == "." && r.out[j-1].kind == Op && nameLike(r.out[j-2]) {
			j -= 2
		}
		return j
	}
	switch {
	case t.kind == Op && t.text == ")":
		depth := 0
		for ; j >= 0; j-- {
			if r.out[j].kind == Op && r.out[j].text == ")" {
				depth++
			} else if r.out[j].kind == Op && r.out[j].text == "(" {
				depth--
				if depth == 0 {
					break
				}
			}
		}
		if j < 0 {
			return 0, syntaxErrorTok(at)
		}
		if j > 0 && r.out[j-1].fn {
			j = dotted(j - 1)
		}
		return j, nil
	case t.kw && t.val == "end":
		depth := 0
		for ; j >= 0; j-- {
			if r.out[j].kw && r.out[j].val == "end" {
				depth++
			} else if r.out[j].kw && r.out[j].val == "case" {
				depth--
				if depth == 0 {
					return j, nil
				}
			}
		}
		return 0, syntaxErrorTok(at)
	case nameLike(t):
		return dotted(j), nil
	case t.kind == String || t.kind == Number || t.kw && (t.val == "null" || t.val == "true" || t.val == "false"):
		return j, nil
	}
	return 0, syntaxErrorTok(at)
}

// wrap inserts clink$N( at out index start; the caller emits the rest and the ")".
func (r *rewriter) wrap(start int, ph *placeholder, orig int) {
	tail := append([]rtok(nil), r.out[start:]...)
	r.out = r.out[:start]
	// The wrapped tokens move one level deeper; re-push them to recompute depths and clause state.
	r.depth = tailDepth(tail)
	if len(tail) > 0 {
		orig = tail[0].orig // the call stands where its operand starts
	}
	r.emitCallOpen(ph, orig)
	for _, t := range tail {
		r.push(t)
	}
}

// tailDepth is the depth at which the first of a run of emitted tokens was emitted.
func tailDepth(tail []rtok) int {
	if len(tail) == 0 {
		return 0
	}
	return tail[0].depth
}

func (r *rewriter) typeCast(i, hi int) (int, error) {
	p := r.p
	t := p.toks[i]
	start, err := r.operandStart(t)
	if err != nil {
		return 0, err
	}
	save := p.i
	p.i = i + 1
	if p.i >= hi {
		p.i = save
		return 0, syntaxErrorTok(p.at(hi))
	}
	typ, err := p.typeName()
	j := p.i
	p.i = save
	if err != nil {
		return 0, err
	}
	if j > hi {
		return 0, syntaxErrorTok(p.at(hi))
	}
	r.wrap(start, &placeholder{cast: &Cast{P: t.Pos, Type: typ}}, t.Pos)
	r.push(r.synth(")", Op, p.at(j).Pos))
	return j, nil
}

func (r *rewriter) cast(i, hi int) (int, bool, error) {
	p := r.p
	t := p.toks[i]
	close := p.matchParen(i + 1)
	if close < 0 || close >= hi {
		return 0, false, syntaxErrorTok(p.at(hi))
	}
	as := -1
	depth := 0
	for k := i + 2; k < close; k++ {
		switch {
		case isOp(p.toks[k], "("):
			depth++
		case isOp(p.toks[k], ")"):
			depth--
		case depth == 0 && isKw(p.toks[k], "as"):
			as = k
		}
		if as >= 0 {
			break
		}
	}
	if as < 0 {
		return 0, false, syntaxErrorTok(p.toks[close])
	}
	if as == i+2 {
		return 0, false, syntaxErrorTok(p.toks[as])
	}
	save := p.i
	p.i = as + 1
	typ, err := p.typeName()
	j := p.i
	p.i = save
	if err != nil {
		return 0, false, err
	}
	if j != close {
		return 0, false, syntaxErrorTok(p.toks[j])
	}
	r.emitCallOpen(&placeholder{cast: &Cast{P: t.Pos, Type: typ, Try: t.Value == "try_cast"}}, t.Pos)
	if err := r.rewrite(i+2, as); err != nil {
		return 0, false, err
	}
	// In the user's text the operand is followed by AS: an incomplete operand is an error there.
	r.push(r.synth(")", Op, p.toks[as].Pos))
	return close + 1, true, nil
}

var extractFields = toSet(`year month day hour minute second millisecond microsecond dow doy epoch week quarter
	isodow isoyear decade century millennium`)

func (r *rewriter) extract(i, hi int) (int, bool, error) {
	p := r.p
	t := p.toks[i]
	close := p.matchParen(i + 1)
	if close < 0 || close >= hi {
		return 0, false, syntaxErrorTok(p.at(hi))
	}
	f := p.at(i + 2)
	if f.Kind != Ident && f.Kind != String || i+2 >= close {
		return 0, false, syntaxErrorTok(f)
	}
	field := strings.ToLower(f.Value)
	if !extractFields[field] {
		return 0, false, notSupported(f.Pos, "EXTRACT field %q is not supported", f.Value)
	}
	if !p.kwAt(i+3, "from") || i+3 >= close {
		return 0, false, syntaxErrorTok(p.at(i + 3))
	}
	if i+4 == close {
		return 0, false, syntaxErrorTok(p.toks[close])
	}
	r.emitCallOpen(&placeholder{extract: &Extract{P: t.Pos, Field: field}}, t.Pos)
	if err := r.rewrite(i+4, close); err != nil {
		return 0, false, err
	}
	r.push(rtok{text: ")", kind: Op, val: ")", orig: p.toks[close].Pos})
	return close + 1, true, nil
}

// filter rewrites agg(...) FILTER (WHERE cond) to clink$N(agg(...), cond).
func (r *rewriter) filter(i, hi int) (int, bool, error) {
	p := r.p
	t := p.toks[i]
	start, err := r.operandStart(t)
	if err != nil {
		return 0, false, err
	}
	close := p.matchParen(i + 1)
	if close < 0 || close >= hi {
		return 0, false, syntaxErrorTok(p.at(hi))
	}
	if i+3 == close {
		return 0, false, syntaxErrorTok(p.toks[close])
	}
	r.wrap(start, &placeholder{filter: true}, t.Pos)
	// agg(...) FILTER (WHERE c) OVER (...) | OVER w: the OVER clause goes with the aggregate, inside the call
	// (clink$N(agg(...) OVER (...), c)), where TiDB reads a window function.
	end := close + 1
	if p.kwAt(end, "over") {
		overEnd := end + 2 // OVER w
		if isOp(p.at(end+1), "(") {
			if overEnd = p.matchParen(end+1) + 1; overEnd <= 0 || overEnd > hi {
				return 0, false, syntaxErrorTok(p.at(hi))
			}
		} else if !isName(p.at(end+1)) || overEnd > hi {
			return 0, false, syntaxErrorTok(p.at(end + 1))
		}
		if err := r.rewrite(end, overEnd); err != nil {
			return 0, false, err
		}
		end = overEnd
	}
	r.push(r.synth(",", Op, p.toks[i+2].Pos))
	if err := r.rewrite(i+3, close); err != nil {
		return 0, false, err
	}
	r.push(rtok{text: ")", kind: Op, val: ")", orig: p.toks[close].Pos})
	return end, true, nil
}

// nulls rewrites ORDER BY x [ASC|DESC] NULLS FIRST|LAST to clink$N(x) [ASC|DESC].
func (r *rewriter) nulls(i int) (int, bool, error) {
	p := r.p
	t := p.toks[i]
	start := r.items[r.depth]
	end := len(r.out)
	var dir []rtok
	if end > start && r.out[end-1].kw && (r.out[end-1].val == "asc" || r.out[end-1].val == "desc") {
		dir = append(dir, r.out[end-1])
		r.out = r.out[:end-1]
		end--
	}
	if end <= start || r.clause[r.depth] != "order" {
		return 0, false, syntaxErrorTok(t)
	}
	r.wrap(start, &placeholder{nulls: true, nullsFirst: p.kwAt(i+1, "first")}, t.Pos)
	r.push(r.synth(")", Op, t.Pos))
	for _, d := range dir {
		r.push(d)
	}
	return i + 2, true, nil
}

// interval parses INTERVAL [-]'text' [unit [TO unit]] or INTERVAL [-]n unit [TO unit] at token i.
func (p *parser) interval(i, hi int) (*Interval, int, error) {
	iv := &Interval{P: p.toks[i].Pos}
	j := i + 1
	sign := ""
	if j < hi && (isOp(p.toks[j], "-") || isOp(p.toks[j], "+")) {
		if p.toks[j].Text == "-" {
			sign = "-"
		}
		j++
	}
	v := p.at(j)
	if j >= hi {
		return nil, 0, syntaxErrorTok(p.at(hi))
	}
	switch v.Kind {
	case String:
		iv.Value = v.Value
		if sign == "-" {
			if strings.HasPrefix(iv.Value, "-") {
				iv.Value = iv.Value[1:]
			} else {
				iv.Value = "-" + iv.Value
			}
		}
	case Number:
		iv.Value = sign + v.Value
	default:
		if isName(v) || isOp(v, "(") {
			return nil, 0, notSupported(v.Pos, "INTERVAL with a value that is not a constant is not supported")
		}
		return nil, 0, syntaxErrorTok(v)
	}
	j++
	if j < hi && p.toks[j].Kind == Ident {
		if u, ok := intervalUnits[p.toks[j].Value]; ok {
			iv.Unit = u
			j++
			if j+1 < hi+1 && p.kwAt(j, "to") {
				u2, ok := intervalUnits[p.at(j+1).Value]
				if !ok || j+1 >= hi || p.at(j+1).Kind != Ident {
					return nil, 0, syntaxErrorTok(p.at(min(j+1, hi)))
				}
				iv.Unit += " to " + u2
				j += 2
			}
			if j < hi && isOp(p.toks[j], "(") {
				return nil, 0, notSupported(p.toks[j].Pos, "INTERVAL precision is not supported")
			}
		}
	}
	if iv.Unit == "" && v.Kind == Number {
		return nil, 0, syntaxErrorTok(p.at(j))
	}
	return iv, j, nil
}

// windowTVF parses TABLE(KIND(TABLE t [PARTITION BY k, ...], DESCRIPTOR(c), args...)) (flink) or the short
// KIND(t, c, args...) at token i and emits a placeholder table name.
func (r *rewriter) windowTVF(i, hi int, flink bool) (int, bool, error) {
	p := r.p
	w := &WindowTVF{P: p.toks[i].Pos}
	j := i
	var outerClose int
	if flink {
		outerClose = p.matchParen(i + 1)
		if outerClose < 0 || outerClose >= hi {
			return 0, false, syntaxErrorTok(p.at(hi))
		}
		k := p.at(i + 2)
		if k.Kind != Ident || !windowKinds[k.Value] || !isOp(p.at(i+3), "(") {
			if k.Kind == Ident && isOp(p.at(i+3), "(") {
				return 0, false, notSupported(k.Pos, "table function %s is not supported", k.Value)
			}
			return 0, false, syntaxErrorTok(k)
		}
		j = i + 2
	}
	w.Kind = p.toks[j].Value
	open := j + 1
	close := p.matchParen(open)
	if close < 0 || close >= hi {
		return 0, false, syntaxErrorTok(p.at(hi))
	}
	// Split the arguments at top-level commas.
	var args [][2]int
	for k := open + 1; k < close; {
		e := p.listItemEnd(k)
		if e > close {
			e = close
		}
		if e == k {
			return 0, false, syntaxErrorTok(p.toks[k])
		}
		args = append(args, [2]int{k, e})
		k = e
		if k < close {
			k++
			if k == close {
				return 0, false, syntaxErrorTok(p.toks[close])
			}
		}
	}
	if len(args) < 2 {
		return 0, false, syntaxErrorTok(p.toks[close])
	}
	// The input: [TABLE] name [PARTITION BY ...]
	in := args[0]
	k := in[0]
	if p.kwAt(k, "table") {
		k++
	} else if flink {
		return 0, false, syntaxErrorTok(p.toks[k])
	}
	if isOp(p.toks[k], "(") {
		return 0, false, notSupported(p.toks[k].Pos, "a subquery as the input of %s is not supported", strings.ToUpper(w.Kind))
	}
	if !isName(p.toks[k]) {
		return 0, false, syntaxErrorTok(p.toks[k])
	}
	if strings.HasPrefix(p.toks[k].Value, phPrefix) {
		return 0, false, syntaxErrorTok(p.toks[k])
	}
	w.Input = &TableName{P: p.toks[k].Pos, Name: p.toks[k].Value}
	k++
	if k < in[1] && p.kwAt(k, "partition") && p.kwAt(k+1, "by") {
		if w.Kind != "session" {
			return 0, false, notSupported(p.toks[k].Pos, "PARTITION BY is only supported for SESSION windows")
		}
		keys, err := p.parseExprList(k+2, in[1])
		if err != nil {
			return 0, false, err
		}
		w.PartitionBy = keys
		k = in[1]
	}
	if k != in[1] {
		return 0, false, syntaxErrorTok(p.toks[k])
	}
	// The time column: DESCRIPTOR(c) or c.
	tc := args[1]
	k = tc[0]
	if p.kwAt(k, "descriptor") && isOp(p.at(k+1), "(") {
		if !isName(p.at(k+2)) || !isOp(p.at(k+3), ")") || k+4 != tc[1] {
			return 0, false, syntaxErrorTok(p.at(k + 2 + btoi(isName(p.at(k+2)))))
		}
		w.TimeCol, w.TimeColP = p.toks[k+2].Value, p.toks[k+2].Pos
	} else if flink {
		return 0, false, syntaxErrorTok(p.toks[k])
	} else {
		if !isName(p.toks[k]) || k+1 != tc[1] {
			return 0, false, syntaxErrorTok(p.toks[k+btoi(isName(p.toks[k]))])
		}
		w.TimeCol, w.TimeColP = p.toks[k].Value, p.toks[k].Pos
	}
	want := map[string]int{"tumble": 1, "hop": 2, "session": 1, "cumulate": 2}[w.Kind]
	if len(args)-2 != want {
		at := p.toks[close]
		if len(args)-2 > want {
			at = p.toks[args[2+want][0]]
		}
		return 0, false, sqlerr.New(sqlerr.SyntaxError, at.Pos, "%s takes %d interval argument%s after the time column, got %d",
			strings.ToUpper(w.Kind), want, map[bool]string{true: "s"}[want > 1], len(args)-2)
	}
	for _, a := range args[2:] {
		e, err := p.parseExpr(a[0], a[1])
		if err != nil {
			return 0, false, err
		}
		w.Args = append(w.Args, e)
	}
	end := close + 1
	if flink {
		if end != outerClose {
			return 0, false, syntaxErrorTok(p.at(end))
		}
		end = outerClose + 1
	}
	name := r.newPlaceholder(&placeholder{tvf: w})
	r.push(rtok{text: name, kind: Ident, val: name, orig: w.P, synth: true})
	return end, true, nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// rewriteRange rewrites the user's tokens [lo, hi), with prefix (e.g. "select" for an expression) in front.
func (p *parser) rewriteRange(lo, hi int, prefix string) (*rewritten, error) {
	r := p.newRewriter()
	if prefix != "" {
		r.push(rtok{text: prefix, kind: Ident, val: prefix, orig: p.at(lo).Pos, synth: true, kw: true})
	}
	if err := r.rewrite(lo, hi); err != nil {
		return nil, err
	}
	return r.finish(hi), nil
}

// userError turns an error TiDB reported at offset off of the rewritten text into the user's syntax error there.
func (rw *rewritten) userError(p *parser, off int) error {
	k := sort.Search(len(rw.toks), func(k int) bool { return rw.toks[k].off >= off })
	if k >= len(rw.toks) {
		return syntaxErrorTok(rw.endTok)
	}
	orig := rw.toks[k].orig
	u := sort.Search(len(p.toks), func(u int) bool { return p.toks[u].Pos >= orig })
	if u >= len(p.toks) || p.toks[u].Pos >= rw.endTok.Pos {
		return syntaxErrorTok(rw.endTok)
	}
	return syntaxErrorTok(p.toks[u])
}

// tidbErrorOffset finds where in text TiDB's error ("line 1 column 18 near "FROM t" ...") points.
func tidbErrorOffset(text string, err error) (int, bool) {
	msg := err.Error()
	k := strings.Index(msg, ` near "`)
	if k < 0 || !strings.HasPrefix(msg, "line ") {
		return 0, false
	}
	rest := msg[k+len(` near "`):]
	if t := strings.LastIndex(rest, "(total length "); t >= 0 {
		var n int
		if _, err := fmt.Sscanf(rest[t:], "(total length %d)", &n); err == nil && n <= len(text) {
			return len(text) - n, true
		}
	}
	q := strings.LastIndex(rest, `"`)
	if q < 0 {
		return 0, false
	}
	near := rest[:q]
	if len(near) > len(text) || !strings.HasSuffix(text, near) {
		return 0, false
	}
	return len(text) - len(near), true
}

// overParen is the "(" of the OVER clause token i is directly inside, or -1.
func (p *parser) overParen(i int) int {
	d := 0
	for k := i - 1; k >= 0; k-- {
		switch {
		case isOp(p.toks[k], ")"):
			d++
		case isOp(p.toks[k], "("):
			if d == 0 {
				if k > 0 && p.kwAt(k-1, "over") || p.windowDefParen(k) {
					return k
				}
				return -1
			}
			d--
		}
	}
	return -1
}

// windowDefParen reports whether token k, a "(", opens a window definition of a WINDOW clause: `WINDOW w AS (`,
// or `, w AS (` after the ")" of another definition.
func (p *parser) windowDefParen(k int) bool {
	for k >= 3 && p.kwAt(k-1, "as") && p.toks[k-2].Kind == Ident {
		if p.kwAt(k-3, "window") {
			return true
		}
		if k < 5 || !isOp(p.toks[k-3], ",") || !isOp(p.toks[k-4], ")") {
			return false
		}
		d, j := 0, k-4
		for ; j >= 0; j-- {
			if isOp(p.toks[j], ")") {
				d++
			} else if isOp(p.toks[j], "(") {
				if d--; d == 0 {
					break
				}
			}
		}
		k = j
	}
	return false
}

// frame parses a window frame, ROWS|RANGE <bound> or ROWS|RANGE BETWEEN <bound> AND <bound>, at token i inside the
// OVER clause whose "(" is token open, records it (parser.frames) and emits nothing: TiDB reads the OVER clause
// without it.
func (r *rewriter) frame(i, open, hi int) (int, bool, error) {
	p := r.p
	f := &Frame{P: p.toks[i].Pos, Range: p.toks[i].Value == "range"}
	j := i + 1
	bound := func() (FrameBound, error) {
		t := p.at(j)
		switch {
		case isKw(t, "unbounded"):
			j++
			switch {
			case p.kwAt(j, "preceding"):
				j++
				return FrameBound{P: t.Pos, Kind: BoundUnboundedPreceding}, nil
			case p.kwAt(j, "following"):
				j++
				return FrameBound{P: t.Pos, Kind: BoundUnboundedFollowing}, nil
			}
		case isKw(t, "current"):
			if p.kwAt(j+1, "row") {
				j += 2
				return FrameBound{P: t.Pos, Kind: BoundCurrentRow}, nil
			}
			j++
		default:
			var off Expr
			switch {
			case isKw(t, "interval"):
				iv, k, err := p.interval(j, hi)
				if err != nil {
					return FrameBound{}, err
				}
				off, j = iv, k
			case t.Kind == Number:
				off = &Literal{P: t.Pos, Kind: LitInt, Text: t.Value}
				if strings.ContainsAny(t.Value, ".eE") {
					off.(*Literal).Kind = LitDecimal
				}
				j++
			default:
				return FrameBound{}, syntaxErrorTok(t)
			}
			switch {
			case p.kwAt(j, "preceding"):
				j++
				return FrameBound{P: t.Pos, Kind: BoundPreceding, Offset: off}, nil
			case p.kwAt(j, "following"):
				j++
				return FrameBound{P: t.Pos, Kind: BoundFollowing, Offset: off}, nil
			}
		}
		return FrameBound{}, syntaxErrorTok(p.at(j))
	}
	var err error
	if p.kwAt(j, "between") {
		j++
		if f.Start, err = bound(); err != nil {
			return 0, false, err
		}
		if !p.kwAt(j, "and") {
			return 0, false, syntaxErrorTok(p.at(j))
		}
		j++
		if f.End, err = bound(); err != nil {
			return 0, false, err
		}
	} else {
		if f.Start, err = bound(); err != nil {
			return 0, false, err
		}
		f.End = FrameBound{P: f.Start.P, Kind: BoundCurrentRow}
	}
	if j >= hi || !isOp(p.at(j), ")") {
		return 0, false, syntaxErrorTok(p.at(min(j, hi)))
	}
	if p.frames == nil {
		p.frames = map[int]*Frame{}
	}
	p.frames[p.toks[open].Pos] = f
	return j, true, nil
}
