package parser

import (
	"reflect"
	"strings"

	"github.com/clinksql/clinksql/sqlerr"
)

// User-defined functions: CREATE [OR REPLACE] FUNCTION and the argument lists of DROP FUNCTION. A SQL function's
// body (AS 'SELECT expr', AS $$SELECT expr$$, or Postgres' RETURN expr) is parsed here, with every position and
// every syntax error pointing into the user's text, inside the string that holds it.

// FuncParam is one parameter of CREATE FUNCTION: [IN] [name] type. Name is "" for an unnamed parameter (then
// only $n reaches it).
type FuncParam struct {
	P    int
	Name string
	Type TypeName
}

// CreateFunction is CREATE [OR REPLACE] FUNCTION name ([[IN] [param] type, ...]) RETURNS type, followed in any
// order by LANGUAGE lang, AS 'definition', STRICT (also RETURNS NULL ON NULL INPUT; CALLED ON NULL INPUT is the
// default), the volatility and PARALLEL words (accepted, ignored), WITH (options), and last, for a SQL function,
// RETURN expr instead of AS.
type CreateFunction struct {
	StmtBase
	Name      string
	NameP     int
	OrReplace bool
	Params    []FuncParam
	Returns   TypeName
	// Language is lower case ("sql", "wasm"); "sql" when not written. LanguageP is where its name is (or the
	// statement's start).
	Language  string
	LanguageP int
	// As is the AS string's value (a SQL function's body text; a wasm module's path or base64), AsP where the
	// string token starts; "" with RETURN.
	As  string
	AsP int
	// Return marks the RETURN expr form.
	Return bool
	// Body is a SQL function's expression (of AS 'SELECT expr' or RETURN expr), its positions in the statement's
	// text; nil for other languages.
	Body   Expr
	Strict bool
	// Options are WITH (...) (a wasm function's export name and limits).
	Options []Option
}

// createFunction reads CREATE [OR REPLACE] FUNCTION after CREATE [OR REPLACE].
func (p *parser) createFunction(start int, orReplace bool) (Stmt, error) {
	p.advance() // FUNCTION
	s := &CreateFunction{OrReplace: orReplace, LanguageP: p.toks[start].Pos}
	var err error
	if s.Name, s.NameP, err = p.name(); err != nil {
		return nil, err
	}
	if s.Params, err = p.funcParams(true); err != nil {
		return nil, err
	}
	if !p.eatKw("returns") {
		if p.isKw("as") || p.isKw("language") {
			return nil, sqlerr.New(sqlerr.InvalidFunctionDefinition, p.peek().Pos, "function result type must be specified")
		}
		return nil, p.syntaxErrorAt(p.i)
	}
	if p.isKw("table") || p.isKw("setof") || p.isKw("trigger") || p.isKw("void") || p.isKw("record") {
		return nil, notSupported(p.peek().Pos, "RETURNS %s is not supported: a function returns one value of a SQL type", strings.ToUpper(p.peek().Value))
	}
	if s.Returns, err = p.typeName(); err != nil {
		return nil, err
	}
	var asTok *Token
	language := false
	for !p.isOp(";") && p.peek().Kind != EOF {
		t := p.peek()
		switch {
		case p.eatKw("language"):
			lt := p.peek()
			if lt.Kind != Ident && lt.Kind != String && lt.Kind != QuotedIdent {
				return nil, p.syntaxErrorAt(p.i)
			}
			p.advance()
			if language {
				return nil, sqlerr.New(sqlerr.SyntaxError, t.Pos, "conflicting or redundant options")
			}
			language = true
			s.Language, s.LanguageP = strings.ToLower(lt.Value), lt.Pos
		case p.eatKw("as"):
			at := p.peek()
			if at.Kind != String {
				return nil, p.syntaxErrorAt(p.i)
			}
			if asTok != nil || s.Return {
				return nil, sqlerr.New(sqlerr.SyntaxError, t.Pos, "conflicting or redundant options")
			}
			p.advance()
			if p.isOp(",") {
				return nil, notSupported(p.peek().Pos, "AS 'file', 'symbol' is not supported; name the export with WITH (export = '...')")
			}
			asTok = &at
			s.As, s.AsP = at.Value, at.Pos
		case p.isKw("return"):
			if asTok != nil {
				return nil, sqlerr.New(sqlerr.SyntaxError, t.Pos, "conflicting or redundant options")
			}
			p.advance()
			end := p.stmtEnd()
			if p.i == end {
				return nil, p.syntaxErrorAt(p.i)
			}
			if s.Body, err = p.parseExpr(p.i, end); err != nil {
				return nil, err
			}
			s.Return = true
			p.i = end
		case p.eatKw("strict"), p.eatKw("returns", "null", "on", "null", "input"):
			s.Strict = true
		case p.eatKw("called", "on", "null", "input"):
			s.Strict = false
		case p.eatKw("immutable"), p.eatKw("stable"), p.eatKw("volatile"), p.eatKw("leakproof"), p.eatKw("not", "leakproof"),
			p.eatKw("security", "invoker"), p.eatKw("external", "security", "invoker"):
		case p.eatKw("parallel"):
			if !p.eatKw("safe") && !p.eatKw("unsafe") && !p.eatKw("restricted") {
				return nil, p.syntaxErrorAt(p.i)
			}
		case p.isKw("with") && isOp(p.at(p.i+1), "("):
			if s.Options != nil {
				return nil, sqlerr.New(sqlerr.SyntaxError, t.Pos, "conflicting or redundant options")
			}
			if s.Options, err = p.options(); err != nil {
				return nil, err
			}
		case p.isKw("security"), p.isKw("external"), p.isKw("cost"), p.isKw("rows"), p.isKw("support"),
			p.isKw("window"), p.isKw("transform"), p.isKw("begin"), p.isKw("set"):
			return nil, notSupported(t.Pos, "%s is not supported in CREATE FUNCTION", strings.ToUpper(t.Value))
		default:
			return nil, p.syntaxErrorAt(p.i)
		}
	}
	if s.Language == "" {
		s.Language = "sql"
	}
	if asTok == nil && !s.Return {
		return nil, sqlerr.New(sqlerr.InvalidFunctionDefinition, p.toks[start].Pos, "no function body specified")
	}
	if s.Language == "sql" && asTok != nil {
		if s.Body, err = functionBody(*asTok); err != nil {
			return nil, err
		}
	} else if s.Language != "sql" && s.Return {
		return nil, sqlerr.New(sqlerr.InvalidFunctionDefinition, s.LanguageP, "RETURN is only for LANGUAGE SQL functions")
	}
	s.StmtBase = p.base(start)
	return s, nil
}

// funcParams reads ( [[IN] [name] type [, ...]] ). named is false for DROP FUNCTION's list, where names are
// allowed but unused.
func (p *parser) funcParams(named bool) ([]FuncParam, error) {
	if err := p.expectOp("("); err != nil {
		return nil, err
	}
	out := []FuncParam{}
	if p.eatOp(")") {
		return out, nil
	}
	for {
		fp := FuncParam{P: p.peek().Pos}
		switch {
		case p.isKw("out"), p.isKw("inout"), p.isKw("variadic"):
			if t := p.at(p.i + 1); isName(t) || isOp(t, "(") {
				return nil, notSupported(p.peek().Pos, "%s parameters are not supported", strings.ToUpper(p.peek().Value))
			}
		case p.isKw("in") && isName(p.at(p.i+1)):
			p.advance()
			fp.P = p.peek().Pos
		}
		if p.paramNamed() {
			fp.Name, _, _ = p.name()
		}
		var err error
		if fp.Type, err = p.typeName(); err != nil {
			return nil, err
		}
		if p.isKw("default") || p.isOp("=") {
			return nil, notSupported(p.peek().Pos, "parameter defaults are not supported")
		}
		out = append(out, fp)
		if p.eatOp(")") {
			return out, nil
		}
		if err := p.expectOp(","); err != nil {
			return nil, err
		}
	}
}

// paramNamed reports whether the parameter at p.i starts with a name: a name followed by something that starts a
// type (DOUBLE PRECISION, CHARACTER VARYING and TIMESTAMP WITH TIME ZONE are one type of two words or more).
func (p *parser) paramNamed() bool {
	t, next := p.peek(), p.at(p.i+1)
	if !isName(t) || !isName(next) {
		return false
	}
	if t.Kind == Ident {
		switch {
		case t.Value == "double" && isKw(next, "precision"),
			(t.Value == "character" || t.Value == "char") && isKw(next, "varying"),
			t.Value == "timestamp" && (isKw(next, "with") || isKw(next, "without")):
			return false
		}
	}
	return true
}

// functionBody parses the body of a SQL function given as a string: SELECT expr (one column, no FROM), with
// positions in the text that holds the string.
func functionBody(t Token) (Expr, error) {
	at := stringOffsets(t)
	stmts, err := Parse(t.Value)
	if err != nil {
		return nil, shiftError(err, at)
	}
	bad := func(pos int) error {
		return sqlerr.New(sqlerr.FeatureNotSupported, at(pos),
			"the body of a SQL function must be one SELECT of one expression, without FROM")
	}
	if len(stmts) != 1 {
		if len(stmts) == 0 {
			return nil, sqlerr.New(sqlerr.InvalidFunctionDefinition, t.Pos, "the body of a SQL function is empty")
		}
		start, _ := stmts[1].Span()
		return nil, bad(start)
	}
	sel, ok := stmts[0].(*Select)
	if !ok {
		start, _ := stmts[0].Span()
		return nil, bad(start)
	}
	q := sel.Query
	core, ok := q.Body.(*SelectCore)
	if !ok || len(q.With) > 0 || len(q.OrderBy) > 0 || q.Limit != nil || q.Offset != nil {
		return nil, bad(q.P)
	}
	if len(core.From) > 0 || core.Where != nil || len(core.GroupBy) > 0 || core.Having != nil || core.Distinct || len(core.Items) != 1 {
		return nil, bad(core.P)
	}
	e := core.Items[0].Expr
	if _, star := e.(*Star); star {
		return nil, bad(e.Pos())
	}
	shiftPositions(reflect.ValueOf(e), at)
	return e, nil
}

// ParseExpr parses one expression (a SQL function's stored body), positions as offsets into sql.
func ParseExpr(sql string) (Expr, error) {
	toks, err := Lex(sql)
	if err != nil {
		return nil, lexError(err)
	}
	p := &parser{src: sql, toks: toks}
	return p.parseExpr(0, len(toks)-1)
}

// stringOffsets maps a byte offset of a string token's value to the offset in the source of the character it
// came from: exact for standard strings (doubled quotes) and dollar quoting; the token's start
// for an E'...' string, whose escapes are not retraced.
func stringOffsets(t Token) func(int) int {
	switch {
	case strings.HasPrefix(t.Text, "$"):
		tag, _ := dollarTag(t.Text, 0)
		base := t.Pos + len(tag)
		return func(off int) int { return base + off }
	case strings.HasPrefix(t.Text, "'"):
		var m []int // m[k]: source offset of value byte k
		in := false
		for i := 0; i < len(t.Text); i++ {
			c := t.Text[i]
			switch {
			case !in && c == '\'':
				in = true
			case !in:
			case c == '\'' && i+1 < len(t.Text) && t.Text[i+1] == '\'':
				m = append(m, t.Pos+i)
				i++
			case c == '\'':
				in = false
			default:
				m = append(m, t.Pos+i)
			}
		}
		end := t.End - 1
		return func(off int) int {
			if off >= 0 && off < len(m) {
				return m[off]
			}
			return end
		}
	}
	return func(int) int { return t.Pos }
}

// shiftError moves the position of a body's error into the statement's text.
func shiftError(err error, at func(int) int) error {
	e := sqlerr.As(err)
	if e.Pos != sqlerr.NoPos {
		return e.Shift(at(e.Pos) - e.Pos)
	}
	return e
}

// shiftPositions rewrites every position field of an expression tree (P and the ...P fields, as Format's tests
// read them) through at.
func shiftPositions(v reflect.Value, at func(int) int) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			shiftPositions(v.Elem(), at)
		}
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			shiftPositions(v.Index(i), at)
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			f, fv := v.Type().Field(i), v.Field(i)
			if !f.IsExported() {
				continue
			}
			isPos := f.Name == "P" || strings.HasSuffix(f.Name, "P") && f.Name != "Op"
			switch {
			case isPos && fv.Kind() == reflect.Int && fv.CanSet():
				fv.SetInt(int64(at(int(fv.Int()))))
			case isPos && fv.Kind() == reflect.Slice && fv.Type().Elem().Kind() == reflect.Int:
				for j := 0; j < fv.Len(); j++ {
					fv.Index(j).SetInt(int64(at(int(fv.Index(j).Int()))))
				}
			default:
				shiftPositions(fv, at)
			}
		}
	}
}

// formatCreateFunction prints CREATE FUNCTION canonically: the body as its AS string (as written) or RETURN expr.
func (f *formatter) createFunction(s *CreateFunction) {
	f.WriteString("CREATE ")
	if s.OrReplace {
		f.WriteString("OR REPLACE ")
	}
	f.WriteString("FUNCTION " + FormatName(s.Name) + "(")
	f.funcParams(s.Params)
	lang := s.Language
	if !isPlainWord(lang) {
		lang = quoteString(lang)
	}
	f.WriteString(") RETURNS " + formatType(s.Returns) + " LANGUAGE " + lang)
	if s.Strict {
		f.WriteString(" STRICT")
	}
	f.options(s.Options)
	if s.Return {
		f.WriteString(" RETURN ")
		f.expr(s.Body, 0)
	} else {
		f.WriteString(" AS " + quoteString(s.As))
	}
}

func (f *formatter) funcParams(ps []FuncParam) {
	for i, p := range ps {
		if i > 0 {
			f.WriteString(", ")
		}
		if p.Name != "" {
			f.WriteString(FormatName(p.Name) + " ")
		}
		f.WriteString(formatType(p.Type))
	}
}

// dropFunctionArgs reads the optional argument list after a name of DROP FUNCTION into s.Args.
func (p *parser) dropFunctionArgs(s *Drop) error {
	var types []TypeName
	if p.isOp("(") {
		params, err := p.funcParams(false)
		if err != nil {
			return err
		}
		types = []TypeName{}
		for _, fp := range params {
			types = append(types, fp.Type)
		}
	}
	s.Args = append(s.Args, types)
	return nil
}

func (f *formatter) dropFunctionNames(s *Drop) {
	for i, n := range s.Names {
		if i > 0 {
			f.WriteString(", ")
		}
		f.WriteString(FormatName(n))
		if i < len(s.Args) && s.Args[i] != nil {
			f.WriteString("(")
			for j, t := range s.Args[i] {
				if j > 0 {
					f.WriteString(", ")
				}
				f.WriteString(formatType(t))
			}
			f.WriteString(")")
		}
	}
}
