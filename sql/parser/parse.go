package parser

import (
	"slices"
	"strconv"
	"strings"

	"github.com/clinksql/clinksql/sqlerr"
)

// Parse parses a script of one or more statements separated by semicolons. Every position in the result (node P
// fields, statement spans) is a byte offset into sql; every error is a *sqlerr.Error (42601 for syntax, 0A000
// for constructs we recognise but do not support, 42704 for an unknown type) pointing into sql as well.
func Parse(sql string) ([]Stmt, error) {
	toks, err := Lex(sql)
	if err != nil {
		return nil, lexError(err)
	}
	p := &parser{src: sql, toks: toks}
	var out []Stmt
	for {
		for p.isOp(";") {
			p.i++
		}
		if p.peek().Kind == EOF {
			return out, nil
		}
		s, err := p.statement()
		if err != nil {
			return nil, err
		}
		if t := p.peek(); t.Kind != EOF && !p.isOp(";") && !opensStatementSet(s) {
			return nil, p.syntaxErrorAt(p.i)
		}
		out = append(out, s)
	}
}

func lexError(err error) error {
	if se, ok := err.(*SyntaxError); ok {
		code := se.Code
		if code == "" {
			code = sqlerr.SyntaxError
		}
		return sqlerr.New(code, se.Pos, "%s", se.Msg)
	}
	return sqlerr.Wrap(sqlerr.SyntaxError, err)
}

// parser is the statement-level recursive descent over the script's tokens. Standard SQL inside a statement (a
// query, an expression) is handed to the TiDB parser through rewrite.go and convert.go.
type parser struct {
	src  string
	toks []Token
	i    int // the next token
	// phSeq numbers the placeholders of every rewrite of this script, so that their names never repeat.
	phSeq int
	// frames are the window frames of OVER clauses, which the rewrite takes out of the text TiDB reads, by the
	// user's offset of the OVER clause's "(".
	frames map[int]*Frame
}

func (p *parser) peek() Token         { return p.toks[p.i] }
func (p *parser) at(i int) Token      { return p.toks[min(i, len(p.toks)-1)] }
func (p *parser) next() Token         { t := p.toks[p.i]; p.advance(); return t }
func (p *parser) advance()            { p.i = min(p.i+1, len(p.toks)-1) }
func (p *parser) isOp(op string) bool { return isOp(p.peek(), op) }

// isKw reports whether the next token is the unquoted word kw (lower case).
func (p *parser) isKw(kw string) bool { return isKw(p.peek(), kw) }

func isKw(t Token, kw string) bool           { return t.Kind == Ident && t.Value == kw }
func isOp(t Token, op string) bool           { return t.Kind == Op && t.Text == op }
func isName(t Token) bool                    { return t.Kind == Ident || t.Kind == QuotedIdent }
func (p *parser) kwAt(i int, kw string) bool { return isKw(p.at(i), kw) }

// eatKw consumes the word sequence kws if it is next.
func (p *parser) eatKw(kws ...string) bool {
	for k, kw := range kws {
		if !p.kwAt(p.i+k, kw) {
			return false
		}
	}
	for range kws {
		p.advance()
	}
	return true
}

func (p *parser) eatOp(op string) bool {
	if p.isOp(op) {
		p.advance()
		return true
	}
	return false
}

func (p *parser) expectKw(kw string) error {
	if !p.eatKw(kw) {
		return p.syntaxErrorAt(p.i)
	}
	return nil
}

func (p *parser) expectOp(op string) error {
	if !p.eatOp(op) {
		return p.syntaxErrorAt(p.i)
	}
	return nil
}

// syntaxErrorAt is Postgres' "syntax error at or near" for token i.
func (p *parser) syntaxErrorAt(i int) error {
	return syntaxErrorTok(p.at(i))
}

func syntaxErrorTok(t Token) error {
	if t.Kind == EOF {
		return sqlerr.New(sqlerr.SyntaxError, t.Pos, "syntax error at end of input")
	}
	return sqlerr.New(sqlerr.SyntaxError, t.Pos, "syntax error at or near %q", t.Text)
}

func notSupported(pos int, format string, args ...any) error {
	return sqlerr.New(sqlerr.FeatureNotSupported, pos, format, args...)
}

// name reads an identifier (unquoted, folded; or quoted, as written).
func (p *parser) name() (string, int, error) {
	t := p.peek()
	if !isName(t) {
		return "", 0, p.syntaxErrorAt(p.i)
	}
	p.advance()
	return t.Value, t.Pos, nil
}

// dottedName reads name(.name)*, joined with dots (SET and SHOW variables, option keys).
func (p *parser) dottedName() (string, int, error) {
	n, pos, err := p.name()
	if err != nil {
		return "", 0, err
	}
	for p.isOp(".") && isName(p.at(p.i+1)) {
		p.advance()
		m, _, _ := p.name()
		n += "." + m
	}
	return n, pos, nil
}

// stmtEnd is the index of the token that ends the statement starting at p.i: the next ";" outside parentheses, or EOF.
func (p *parser) stmtEnd() int {
	for j := p.i; j < len(p.toks); j++ {
		if t := p.toks[j]; t.Kind == EOF || isOp(t, ";") {
			return j
		}
	}
	return len(p.toks) - 1
}

func (p *parser) base(start int) StmtBase {
	s := p.toks[start].Pos
	e := s
	if p.i > start {
		e = p.toks[p.i-1].End
	}
	return StmtBase{Start: s, End: e, Text: p.src[s:e]}
}

func (p *parser) statement() (Stmt, error) {
	start := p.i
	t := p.peek()
	if t.Kind == Op && t.Text == "(" {
		return p.selectStmt(start)
	}
	if t.Kind != Ident {
		return nil, p.syntaxErrorAt(p.i)
	}
	if st, ok, err := p.cursorStatement(start); ok { // SUBSCRIBE, DECLARE, FETCH, CLOSE, COPY (subscribe.go)
		return st, err
	}
	switch t.Value {
	case "select", "with", "values", "table":
		return p.selectStmt(start)
	case "create":
		return p.create(start)
	case "insert":
		return p.insert(start)
	case "flush":
		p.advance()
		return &Flush{StmtBase: p.base(start)}, nil
	case "set":
		return p.set(start)
	case "reset":
		p.advance()
		n := "all"
		if !p.eatKw("all") {
			var err error
			if n, _, err = p.dottedName(); err != nil {
				return nil, err
			}
		}
		return &Reset{StmtBase: p.base(start), Name: n}, nil
	case "show":
		return p.show(start)
	case "describe", "desc":
		p.advance()
		n, np, err := p.name()
		if err != nil {
			return nil, err
		}
		return &Describe{StmtBase: p.base(start), Name: n, NameP: np}, nil
	case "explain":
		p.advance()
		if p.isKw("analyze") {
			return p.explainAnalyze(start)
		}
		if p.isOp("(") {
			return nil, notSupported(p.peek().Pos, "EXPLAIN options are not supported")
		}
		inner, err := p.statement()
		if err != nil {
			return nil, err
		}
		if _, ok := inner.(*Explain); ok {
			return nil, p.syntaxErrorAt(start + 1)
		}
		return &Explain{StmtBase: p.base(start), Stmt: inner}, nil
	case "drop":
		return p.drop(start)
	case "begin", "start", "commit", "end", "rollback", "abort":
		return p.txn(start)
	case "execute":
		// EXECUTE STATEMENT SET BEGIN INSERT ...; ...; END is Flink's one-statement form of BEGIN STATEMENT SET:
		// it opens the set, and the INSERTs and END follow as statements of their own.
		if p.kwAt(p.i+1, "statement") && p.kwAt(p.i+2, "set") && p.kwAt(p.i+3, "begin") {
			p.i += 4
			return &Txn{StmtBase: p.base(start), Op: "begin", StatementSet: true, Inline: true}, nil
		}
		return nil, notSupported(t.Pos, "EXECUTE is not supported")
	case "alter":
		if p.kwAt(p.i+1, "job") {
			return p.alterJob(start)
		}
		return nil, notSupported(t.Pos, "ALTER is supported only as ALTER JOB <id> RESUME")
	case "update":
		return p.update(start) // dml.go
	case "delete":
		return p.delete(start) // dml.go
	case "truncate", "grant", "revoke", "copy", "prepare", "deallocate",
		"listen", "notify", "vacuum", "analyze", "lock", "declare", "fetch", "close", "discard", "comment":
		return nil, notSupported(t.Pos, "%s is not supported", strings.ToUpper(t.Value))
	}
	return nil, p.syntaxErrorAt(p.i)
}

func (p *parser) txn(start int) (Stmt, error) {
	t := p.next()
	op := map[string]string{"begin": "begin", "start": "begin", "commit": "commit", "end": "commit",
		"rollback": "rollback", "abort": "rollback"}[t.Value]
	if t.Value == "begin" && p.isKw("statement") && p.kwAt(p.i+1, "set") {
		p.i += 2
		return &Txn{StmtBase: p.base(start), Op: op, StatementSet: true}, nil
	}
	if t.Value == "start" {
		if err := p.expectKw("transaction"); err != nil {
			return nil, err
		}
	} else if !p.eatKw("work") {
		p.eatKw("transaction")
	}
	if op == "begin" {
		// Transaction modes (ISOLATION LEVEL ..., READ ONLY) are accepted and ignored like the transaction.
		for isName(p.peek()) || p.isOp(",") {
			p.advance()
		}
	}
	return &Txn{StmtBase: p.base(start), Op: op}, nil
}

func (p *parser) selectStmt(start int) (Stmt, error) {
	end := p.stmtEnd()
	q, err := p.parseQuery(p.i, end)
	if err != nil {
		return nil, err
	}
	p.i = end
	return &Select{StmtBase: p.base(start), Query: q}, nil
}

func (p *parser) insert(start int) (Stmt, error) {
	p.advance()
	if err := p.expectKw("into"); err != nil {
		return nil, err
	}
	n, np, err := p.name()
	if err != nil {
		return nil, err
	}
	s := &Insert{Target: n, TargetP: np}
	if p.isOp("(") && !p.kwAt(p.i+1, "select") && !p.kwAt(p.i+1, "with") && !p.kwAt(p.i+1, "values") && !isOp(p.at(p.i+1), "(") {
		if s.Columns, s.ColumnsP, err = p.nameListPos(); err != nil {
			return nil, err
		}
	}
	end := p.stmtEnd()
	if p.i == end {
		return nil, p.syntaxErrorAt(p.i)
	}
	for k := p.i; k+1 < end; k++ {
		if p.kwAt(k, "on") && p.kwAt(k+1, "conflict") {
			e := notSupported(p.toks[k].Pos, "INSERT ... ON CONFLICT is not supported").(*sqlerr.Error)
			e.Hint = "An INSERT into a table (a stream with a PRIMARY KEY) replaces the row of an existing key: it is an upsert already."
			return nil, e
		}
		if p.kwAt(k, "returning") {
			return nil, notSupported(p.toks[k].Pos, "RETURNING is not supported")
		}
	}
	if s.Query, err = p.parseQuery(p.i, end); err != nil {
		return nil, err
	}
	p.i = end
	s.StmtBase = p.base(start)
	return s, nil
}

// nameList reads ( name, ... ).
func (p *parser) nameList() ([]string, error) {
	names, _, err := p.nameListPos()
	return names, err
}

// nameListPos reads ( name, ... ) and where each name starts.
func (p *parser) nameListPos() ([]string, []int, error) {
	if err := p.expectOp("("); err != nil {
		return nil, nil, err
	}
	var out []string
	var pos []int
	for {
		n, np, err := p.name()
		if err != nil {
			return nil, nil, err
		}
		out = append(out, n)
		pos = append(pos, np)
		if p.eatOp(")") {
			return out, pos, nil
		}
		if err := p.expectOp(","); err != nil {
			return nil, nil, err
		}
	}
}

func (p *parser) create(start int) (Stmt, error) {
	p.advance()
	orReplace := p.eatKw("or", "replace")
	switch {
	case p.isKw("stream"), p.isKw("table"), p.isKw("source"):
		if orReplace {
			return nil, notSupported(p.toks[start+1].Pos, "CREATE OR REPLACE is only supported for views and functions")
		}
		if p.isKw("source") {
			return nil, notSupported(p.peek().Pos, "CREATE SOURCE is not supported; use CREATE STREAM")
		}
		p.advance()
		return p.createStream(start)
	case p.isKw("sink"):
		if orReplace {
			return nil, notSupported(p.toks[start+1].Pos, "CREATE OR REPLACE is only supported for views and functions")
		}
		p.advance()
		return p.createSink(start)
	case p.isKw("materialized"), p.isKw("view"):
		return p.createView(start, orReplace)
	case p.isKw("function"):
		return p.createFunction(start, orReplace)
	case p.isKw("index"), p.isKw("schema"), p.isKw("database"), p.isKw("user"),
		p.isKw("role"), p.isKw("type"), p.isKw("unique"), p.isKw("temporary"), p.isKw("temp"):
		return nil, notSupported(p.peek().Pos, "CREATE %s is not supported", strings.ToUpper(p.peek().Value))
	}
	return nil, p.syntaxErrorAt(p.i)
}

func (p *parser) ifNotExists() bool { return p.eatKw("if", "not", "exists") }

func (p *parser) createStream(start int) (Stmt, error) {
	s := &CreateStream{IfNotExists: p.ifNotExists()}
	var err error
	if s.Name, s.NameP, err = p.name(); err != nil {
		return nil, err
	}
	if s.Columns, s.Watermark, s.PrimaryKey, err = p.columnDefs(true); err != nil {
		return nil, err
	}
	if s.PartitionedBy, err = p.partitionedBy(); err != nil {
		return nil, err
	}
	if p.isKw("with") {
		if s.Options, err = p.options(); err != nil {
			return nil, err
		}
	}
	s.StmtBase = p.base(start)
	return s, nil
}

func (p *parser) createSink(start int) (Stmt, error) {
	s := &CreateSink{IfNotExists: p.ifNotExists()}
	var err error
	if s.Name, s.NameP, err = p.name(); err != nil {
		return nil, err
	}
	if s.Columns, _, s.PrimaryKey, err = p.columnDefs(false); err != nil {
		return nil, err
	}
	if s.PartitionedBy, err = p.partitionedBy(); err != nil {
		return nil, err
	}
	if !p.isKw("with") {
		return nil, p.syntaxErrorAt(p.i)
	}
	if s.Options, err = p.options(); err != nil {
		return nil, err
	}
	s.StmtBase = p.base(start)
	return s, nil
}

// partitionedBy reads an optional PARTITIONED BY (col, ...).
func (p *parser) partitionedBy() (*PartitionedBy, error) {
	if !p.isKw("partitioned") {
		return nil, nil
	}
	pb := &PartitionedBy{P: p.next().Pos}
	if err := p.expectKw("by"); err != nil {
		return nil, err
	}
	var err error
	if pb.Columns, pb.ColumnsP, err = p.nameListPos(); err != nil {
		return nil, err
	}
	return pb, nil
}

func (p *parser) createView(start int, orReplace bool) (Stmt, error) {
	s := &CreateView{OrReplace: orReplace, Materialized: p.eatKw("materialized")}
	if err := p.expectKw("view"); err != nil {
		return nil, err
	}
	s.IfNotExists = p.ifNotExists()
	var err error
	if s.Name, s.NameP, err = p.name(); err != nil {
		return nil, err
	}
	if p.isOp("(") {
		if s.Columns, err = p.nameList(); err != nil {
			return nil, err
		}
	}
	if p.isKw("with") && isOp(p.at(p.i+1), "(") {
		return nil, notSupported(p.peek().Pos, "view options are not supported")
	}
	if err := p.expectKw("as"); err != nil {
		return nil, err
	}
	end := p.stmtEnd()
	if p.i == end {
		return nil, p.syntaxErrorAt(p.i)
	}
	qStart := p.peek().Pos
	if s.Query, err = p.parseQuery(p.i, end); err != nil {
		return nil, err
	}
	p.i = end
	s.StmtBase = p.base(start)
	s.QueryText = p.src[qStart:s.End]
	return s, nil
}

// columnDefs reads ( name type [NOT NULL | NULL] [PRIMARY KEY NOT ENFORCED] [METADATA [FROM 'key'] [VIRTUAL]],
// ... [, WATERMARK FOR col AS expr] [, [CONSTRAINT name] PRIMARY KEY (col, ...) NOT ENFORCED] ).
func (p *parser) columnDefs(watermark bool) ([]ColumnDef, *Watermark, *PrimaryKey, error) {
	if err := p.expectOp("("); err != nil {
		return nil, nil, nil, err
	}
	var cols []ColumnDef
	var wm *Watermark
	var pk *PrimaryKey
	for {
		if p.isKw("watermark") && p.kwAt(p.i+1, "for") {
			if !watermark || wm != nil {
				return nil, nil, nil, notSupported(p.peek().Pos, "WATERMARK is only supported once, in CREATE STREAM")
			}
			w := &Watermark{P: p.next().Pos}
			p.advance()
			var err error
			if w.Column, w.ColP, err = p.name(); err != nil {
				return nil, nil, nil, err
			}
			if err := p.expectKw("as"); err != nil {
				return nil, nil, nil, err
			}
			end := p.listItemEnd(p.i)
			if w.Expr, err = p.parseExpr(p.i, end); err != nil {
				return nil, nil, nil, err
			}
			p.i = end
			wm = w
		} else if (p.isKw("primary") && p.kwAt(p.i+1, "key")) || p.isKw("constraint") {
			if p.eatKw("constraint") {
				if _, _, err := p.name(); err != nil {
					return nil, nil, nil, err
				}
				if !p.isKw("primary") {
					return nil, nil, nil, notSupported(p.peek().Pos, "only PRIMARY KEY constraints are supported")
				}
			}
			at := p.peek().Pos
			if err := p.primaryKeyWords(pk); err != nil {
				return nil, nil, nil, err
			}
			names, pos, err := p.nameListPos()
			if err != nil {
				return nil, nil, nil, err
			}
			if pk, err = p.notEnforced(at, names, pos); err != nil {
				return nil, nil, nil, err
			}
		} else if p.isKw("unique") || p.isKw("check") || p.isKw("foreign") {
			return nil, nil, nil, notSupported(p.peek().Pos, "constraints other than PRIMARY KEY ... NOT ENFORCED are not supported")
		} else {
			c := ColumnDef{P: p.peek().Pos}
			var err error
			if c.Name, _, err = p.name(); err != nil {
				return nil, nil, nil, err
			}
			if p.isKw("as") {
				// A computed column (Flink's): name AS expr.
				p.advance()
				end := p.listItemEnd(p.i)
				if c.Computed, err = p.parseExpr(p.i, end); err != nil {
					return nil, nil, nil, err
				}
				p.i = end
				cols = append(cols, c)
				if p.eatOp(")") {
					return cols, wm, pk, nil
				}
				if err := p.expectOp(","); err != nil {
					return nil, nil, nil, err
				}
				continue
			}
			if c.Type, err = p.typeName(); err != nil {
				return nil, nil, nil, err
			}
			if p.eatKw("not", "null") {
				c.NotNull = true
			} else {
				p.eatKw("null")
			}
			if p.isKw("primary") {
				at := p.peek().Pos
				if err := p.primaryKeyWords(pk); err != nil {
					return nil, nil, nil, err
				}
				if pk, err = p.notEnforced(at, []string{c.Name}, []int{c.P}); err != nil {
					return nil, nil, nil, err
				}
			}
			if p.isKw("metadata") {
				c.Metadata = &Metadata{P: p.next().Pos}
				if p.eatKw("from") {
					t := p.peek()
					if t.Kind != String {
						return nil, nil, nil, p.syntaxErrorAt(p.i)
					}
					p.advance()
					c.Metadata.Key = t.Value
				}
				c.Metadata.Virtual = p.eatKw("virtual")
			}
			cols = append(cols, c)
		}
		if p.eatOp(")") {
			return cols, wm, pk, nil
		}
		if err := p.expectOp(","); err != nil {
			return nil, nil, nil, err
		}
	}
}

// primaryKeyWords reads PRIMARY KEY; a second primary key is refused.
func (p *parser) primaryKeyWords(prev *PrimaryKey) error {
	if prev != nil {
		return sqlerr.New(sqlerr.InvalidTableDefinition, p.peek().Pos, "multiple primary keys are not allowed")
	}
	if err := p.expectKw("primary"); err != nil {
		return err
	}
	return p.expectKw("key")
}

// notEnforced reads the NOT ENFORCED after a primary key, or notes that it is absent (Enforced: the planner
// takes that form for a table only). Flink's explicit ENFORCED is refused.
func (p *parser) notEnforced(at int, names []string, pos []int) (*PrimaryKey, error) {
	if !p.eatKw("not", "enforced") {
		if p.isKw("enforced") {
			return nil, notSupported(p.peek().Pos, "ENFORCED primary keys are not supported; declare PRIMARY KEY (...) NOT ENFORCED")
		}
		return &PrimaryKey{P: at, Columns: names, ColumnsP: pos, Enforced: true}, nil
	}
	return &PrimaryKey{P: at, Columns: names, ColumnsP: pos}, nil
}

// listItemEnd is the index of the "," or ")" that ends the list item starting at token i (parentheses balanced),
// or the statement's end.
func (p *parser) listItemEnd(i int) int {
	depth := 0
	for ; i < len(p.toks); i++ {
		t := p.toks[i]
		switch {
		case t.Kind == EOF || isOp(t, ";"):
			return i
		case isOp(t, "(") || isOp(t, "["):
			depth++
		case isOp(t, ")") || isOp(t, "]"):
			if depth == 0 {
				return i
			}
			depth--
		case isOp(t, ",") && depth == 0:
			return i
		}
	}
	return len(p.toks) - 1
}

// options reads WITH ( key = value, ... ).
func (p *parser) options() ([]Option, error) {
	p.advance() // WITH
	if err := p.expectOp("("); err != nil {
		return nil, err
	}
	var out []Option
	if p.eatOp(")") {
		return out, nil
	}
	for {
		o := Option{P: p.peek().Pos}
		if t := p.peek(); t.Kind == String {
			o.Key = t.Value
			p.advance()
		} else {
			k, _, err := p.dottedName()
			if err != nil {
				return nil, err
			}
			o.Key = k
		}
		if err := p.expectOp("="); err != nil {
			return nil, err
		}
		v, err := p.optionValue()
		if err != nil {
			return nil, err
		}
		o.Value = v
		out = append(out, o)
		if p.eatOp(")") {
			return out, nil
		}
		if err := p.expectOp(","); err != nil {
			return nil, err
		}
	}
}

// optionValue reads a string, a (signed) number or a word.
func (p *parser) optionValue() (string, error) {
	t := p.peek()
	switch {
	case t.Kind == String || t.Kind == Number || t.Kind == Ident:
		p.advance()
		return t.Value, nil
	case (isOp(t, "-") || isOp(t, "+")) && p.at(p.i+1).Kind == Number:
		p.advance()
		n := p.next()
		if t.Text == "-" {
			return "-" + n.Value, nil
		}
		return n.Value, nil
	}
	return "", p.syntaxErrorAt(p.i)
}

// typeSynonyms folds the spellings of a type to the canonical names of TypeName.
var typeSynonyms = map[string]string{
	"boolean": "BOOLEAN", "bool": "BOOLEAN",
	"smallint": "SMALLINT", "int2": "SMALLINT",
	"int": "INT", "integer": "INT", "int4": "INT",
	"bigint": "BIGINT", "int8": "BIGINT",
	"real": "REAL", "float4": "REAL",
	"double": "DOUBLE", "float8": "DOUBLE", "float": "DOUBLE",
	"decimal": "DECIMAL", "numeric": "DECIMAL", "dec": "DECIMAL",
	"varchar": "VARCHAR", "string": "VARCHAR",
	"text": "TEXT",
	// JSON is text here (its functions parse it): json and jsonb read as VARCHAR.
	"json": "VARCHAR", "jsonb": "VARCHAR",
	"date":      "DATE",
	"timestamp": "TIMESTAMP",
	// Postgres' timestamptz; Flink's TIMESTAMP_LTZ (and TIMESTAMP WITH [LOCAL] TIME ZONE, below).
	"timestamptz": "TIMESTAMPTZ", "timestamp_ltz": "TIMESTAMPTZ",
	"interval": "INTERVAL",
	"bytea":    "BYTEA",
	// Postgres' object identifiers are unsigned 32-bit numbers; clients cast to them in catalog queries.
	"oid": "BIGINT", "regtype": "BIGINT", "regclass": "BIGINT", "regproc": "BIGINT",
}

// typeName reads a column or cast type.
func (p *parser) typeName() (TypeName, error) {
	t := p.peek()
	tn := TypeName{P: t.Pos, Precision: -1, Scale: -1}
	if t.Kind != Ident {
		if t.Kind == QuotedIdent {
			return tn, sqlerr.New(sqlerr.UndefinedObject, t.Pos, "type %q does not exist", t.Value)
		}
		return tn, p.syntaxErrorAt(p.i)
	}
	p.advance()
	word := t.Value
	if (word == "pg_catalog" || word == "public") && p.isOp(".") && p.at(p.i+1).Kind == Ident {
		// A schema-qualified built-in type ('1043'::pg_catalog.oid, as psql writes): the schema adds nothing.
		p.advance()
		t = p.peek()
		p.advance()
		word, tn.P = t.Value, t.Pos
	}
	switch {
	case word == "double":
		p.eatKw("precision")
	case word == "character" || word == "char":
		if !p.eatKw("varying") {
			return tn, notSupported(t.Pos, "type %s is not supported; use VARCHAR", strings.ToUpper(word))
		}
		word = "varchar"
	case word == "timetz" || word == "time":
		return tn, notSupported(t.Pos, "type %s is not supported", strings.ToUpper(word))
	}
	if nested, ok, err := p.nestedType(word, tn); ok || err != nil {
		return p.arraySuffix(nested, err)
	}
	name, ok := typeSynonyms[word]
	if !ok {
		return tn, sqlerr.New(sqlerr.UndefinedObject, t.Pos, "type %q does not exist", word)
	}
	tn.Name = name
	if p.isOp("(") {
		switch name {
		case "VARCHAR", "TIMESTAMP", "TIMESTAMPTZ", "DECIMAL", "DOUBLE":
		default:
			return tn, p.syntaxErrorAt(p.i)
		}
		p.advance()
		n, err := p.smallInt()
		if err != nil {
			return tn, err
		}
		tn.Precision = n
		if name == "DECIMAL" && p.eatOp(",") {
			if tn.Scale, err = p.smallInt(); err != nil {
				return tn, err
			}
		}
		if err := p.expectOp(")"); err != nil {
			return tn, err
		}
		if name == "DOUBLE" { // FLOAT(p): Postgres' REAL for p <= 24, DOUBLE above
			if tn.Precision <= 24 {
				tn.Name = "REAL"
			}
			tn.Precision = -1
		}
	}
	if name == "TIMESTAMP" {
		if p.eatKw("without", "time", "zone") {
		} else if p.eatKw("with", "time", "zone") || p.eatKw("with", "local", "time", "zone") {
			tn.Name = "TIMESTAMPTZ"
		}
	}
	return p.arraySuffix(tn, nil)
}

// arraySuffix reads what may follow a type: INT[] and INT ARRAY (Postgres' and Flink's) are ARRAY<INT>.
func (p *parser) arraySuffix(tn TypeName, err error) (TypeName, error) {
	if err != nil {
		return tn, err
	}
	for {
		switch {
		case p.isOp("[") && isOp(p.at(p.i+1), "]"):
			p.advance()
			p.advance()
		case p.isKw("array") && !isOp(p.at(p.i+1), "<") && !isOp(p.at(p.i+1), "["):
			p.advance()
		default:
			return tn, nil
		}
		elem := tn
		tn = TypeName{P: elem.P, Name: "ARRAY", Precision: -1, Scale: -1, Elem: &elem}
	}
}

// nestedType reads ROW<...>, ROW(...), ARRAY<T> and MAP<K, V> after their word (read already).
func (p *parser) nestedType(word string, tn TypeName) (TypeName, bool, error) {
	closer := ">"
	switch {
	case (word == "row" || word == "array" || word == "map") && p.isOp("<"):
	case word == "row" && p.isOp("("):
		closer = ")"
	default:
		return tn, false, nil
	}
	p.advance()
	switch word {
	case "row":
		tn.Name = "ROW"
		for {
			f := p.peek()
			if !isName(f) {
				return tn, true, p.syntaxErrorAt(p.i)
			}
			p.advance()
			ft, err := p.typeName()
			if err != nil {
				return tn, true, err
			}
			for _, g := range tn.Fields {
				if g.Name == f.Value {
					return tn, true, sqlerr.New(sqlerr.DuplicateColumn, f.Pos, "field %q appears twice in a ROW type", f.Value)
				}
			}
			tn.Fields = append(tn.Fields, TypeField{P: f.Pos, Name: f.Value, Type: ft})
			if !p.eatOp(",") {
				break
			}
		}
	case "array":
		tn.Name = "ARRAY"
		et, err := p.typeName()
		if err != nil {
			return tn, true, err
		}
		tn.Elem = &et
	case "map":
		tn.Name = "MAP"
		kt, err := p.typeName()
		if err != nil {
			return tn, true, err
		}
		if err := p.expectOp(","); err != nil {
			return tn, true, err
		}
		vt, err := p.typeName()
		if err != nil {
			return tn, true, err
		}
		tn.Key, tn.Value = &kt, &vt
	}
	if err := p.expectOp(closer); err != nil {
		return tn, true, err
	}
	return tn, true, nil
}

func (p *parser) smallInt() (int, error) {
	t := p.peek()
	if t.Kind != Number {
		return 0, p.syntaxErrorAt(p.i)
	}
	n, err := strconv.Atoi(t.Value)
	if err != nil || n > 1000 {
		return 0, sqlerr.New(sqlerr.InvalidParameter, t.Pos, "type modifier %s is out of range", t.Text)
	}
	p.advance()
	return n, nil
}

func (p *parser) set(start int) (Stmt, error) {
	p.advance()
	if !p.eatKw("session") {
		p.eatKw("local")
	}
	s := &Set{NameP: p.peek().Pos}
	if p.eatKw("time", "zone") {
		s.Name = "timezone"
	} else if p.isKw("session") || p.isKw("transaction") || p.isKw("role") || p.isKw("constraints") {
		return nil, notSupported(p.peek().Pos, "SET %s is not supported", strings.ToUpper(p.peek().Value))
	} else {
		if t := p.peek(); t.Kind == String {
			// Flink's SQL client quotes keys: SET 'table.local-time-zone' = 'Asia/Shanghai'.
			p.advance()
			s.Name = strings.ToLower(t.Value)
		} else {
			n, _, err := p.dottedName()
			if err != nil {
				return nil, err
			}
			s.Name = n
		}
		if !p.eatOp("=") && !p.eatKw("to") {
			return nil, p.syntaxErrorAt(p.i)
		}
	}
	s.ValueP = p.peek().Pos
	if p.isKw("default") || s.Name == "timezone" && p.isKw("local") {
		p.advance()
		s.Default = true
	} else {
		var vals []string
		for {
			v, err := p.optionValue()
			if err != nil {
				return nil, err
			}
			vals = append(vals, v)
			if !p.eatOp(",") {
				break
			}
		}
		s.Value = strings.Join(vals, ", ")
	}
	s.StmtBase = p.base(start)
	return s, nil
}

func (p *parser) show(start int) (Stmt, error) {
	p.advance()
	s := &Show{}
	var words []string
	for {
		t := p.peek()
		if t.Kind != Ident && t.Kind != QuotedIdent {
			break
		}
		if t.Kind == Ident && t.Value == "for" && len(words) > 0 && words[0] == "checkpoints" {
			p.advance()
			id, pos, err := p.jobID()
			if err != nil {
				return nil, err
			}
			s.For, s.ForP = id, pos
			break
		}
		p.advance()
		w := t.Value
		for p.isOp(".") && isName(p.at(p.i+1)) {
			p.advance()
			w += "." + p.next().Value
		}
		words = append(words, w)
	}
	if len(words) == 0 {
		return nil, p.syntaxErrorAt(p.i)
	}
	s.What = strings.Join(words, " ")
	s.StmtBase = p.base(start)
	return s, nil
}

// jobID reads a job id, the same way wherever a statement names a job: quoted ('job-3', "job-3") or not (job-3,
// whose pieces the lexer splits at the dash and which are glued back when nothing separates them).
func (p *parser) jobID() (string, int, error) {
	t := p.peek()
	if t.Kind != Ident && t.Kind != QuotedIdent && t.Kind != String && t.Kind != Number {
		return "", 0, p.syntaxErrorAt(p.i)
	}
	p.advance()
	id := t.Value
	for t.Kind == Ident && p.isOp("-") && p.peek().Pos == p.toks[p.i-1].End && p.at(p.i+1).Pos == p.peek().End &&
		(p.at(p.i+1).Kind == Ident || p.at(p.i+1).Kind == Number) {
		p.advance()
		id += "-" + p.next().Value
	}
	return id, t.Pos, nil
}

// explainAnalyze reads EXPLAIN ANALYZE <job id>: a running job's plan with its live figures. Postgres' EXPLAIN
// ANALYZE <statement> (run it and time it) is not supported: a continuous statement never ends.
func (p *parser) explainAnalyze(start int) (Stmt, error) {
	p.advance() // ANALYZE
	if t := p.peek(); t.Kind == Op && t.Text == "(" || slices.ContainsFunc(explainable, p.isKw) {
		e := sqlerr.New(sqlerr.FeatureNotSupported, t.Pos, "EXPLAIN ANALYZE takes the id of a running job, not a statement")
		e.Hint = "EXPLAIN shows a statement's plan; EXPLAIN ANALYZE job-1 shows a job's with its live figures."
		return nil, e
	}
	id, pos, err := p.jobID()
	if err != nil {
		return nil, err
	}
	return &Explain{StmtBase: p.base(start), Analyze: true, Job: id, JobP: pos}, nil
}

// explainable are the words that start a statement EXPLAIN plans.
var explainable = []string{"select", "with", "values", "table", "insert", "create"}

// alterJob reads ALTER JOB id RESUME.
func (p *parser) alterJob(start int) (Stmt, error) {
	p.i += 2 // ALTER JOB
	id, pos, err := p.jobID()
	if err != nil {
		return nil, err
	}
	if !p.eatKw("resume") {
		return nil, p.syntaxErrorAt(p.i)
	}
	return &AlterJob{StmtBase: p.base(start), ID: id, IDP: pos, Resume: true}, nil
}

func (p *parser) drop(start int) (Stmt, error) {
	p.advance()
	var kind string
	switch {
	case p.eatKw("materialized", "view"):
		kind = "MATERIALIZED VIEW"
	case p.eatKw("stream"):
		kind = "STREAM"
	case p.eatKw("table"):
		kind = "TABLE"
	case p.eatKw("sink"):
		kind = "SINK"
	case p.eatKw("view"):
		kind = "VIEW"
	case p.eatKw("function"):
		kind = "FUNCTION"
	case p.eatKw("job"):
		id, pos, err := p.jobID()
		if err != nil {
			return nil, err
		}
		return &DropJob{StmtBase: p.base(start), ID: id, IDP: pos}, nil
	case p.isKw("index"), p.isKw("schema"), p.isKw("database"), p.isKw("source"):
		return nil, notSupported(p.peek().Pos, "DROP %s is not supported", strings.ToUpper(p.peek().Value))
	default:
		return nil, p.syntaxErrorAt(p.i)
	}
	s := &Drop{Kind: kind, IfExists: p.eatKw("if", "exists")}
	for {
		n, np, err := p.name()
		if err != nil {
			return nil, err
		}
		s.Names = append(s.Names, n)
		s.NamesP = append(s.NamesP, np)
		if kind == "FUNCTION" {
			if err := p.dropFunctionArgs(s); err != nil {
				return nil, err
			}
		}
		if !p.eatOp(",") {
			break
		}
	}
	if p.eatKw("cascade") {
		s.Cascade = true
	} else {
		p.eatKw("restrict")
	}
	s.StmtBase = p.base(start)
	return s, nil
}

// parseQuery parses the query in tokens [lo, hi) through TiDB (rewrite.go, convert.go); VALUES lists included.
func (p *parser) parseQuery(lo, hi int) (*Query, error) {
	if lo >= hi {
		return nil, p.syntaxErrorAt(lo)
	}
	if p.kwAt(lo, "table") && !isOp(p.at(lo+1), "(") {
		return nil, notSupported(p.toks[lo].Pos, "TABLE name as a query is not supported; use SELECT * FROM name")
	}
	if q, ok := p.literalValues(lo, hi); ok {
		return q, nil
	}
	return p.tidbQuery(lo, hi)
}

// literalValues reads a VALUES list of plain literals (numbers, signed too, strings, NULL, TRUE, FALSE, $n,
// TIMESTAMP '...', DATE '...'), the shape of a
// bulk INSERT, straight from the tokens into the tree TiDB's path would build (parse_test.go compares them):
// TiDB's tree of such a list is tens of times its text, and it is built and converted only to be thrown away. Any
// other VALUES (an expression, a cast, a sign) goes through TiDB.
func (p *parser) literalValues(lo, hi int) (*Query, bool) {
	if !p.kwAt(lo, "values") {
		return nil, false
	}
	v := &Values{P: p.toks[lo].Pos}
	for i := lo + 1; ; {
		if i >= hi || !isOp(p.toks[i], "(") {
			return nil, false
		}
		var row []Expr
		for i++; ; i++ {
			if i+1 >= hi {
				return nil, false
			}
			e, ok := plainLiteral(p.toks[i])
			if !ok && i+2 < hi {
				// -42 and TIMESTAMP '...', DATE '...': one literal of two tokens, as TiDB's path folds them.
				e, ok = signedOrTyped(p.toks[i], p.toks[i+1])
				i++
			}
			if !ok {
				return nil, false
			}
			row = append(row, e)
			if i++; isOp(p.toks[i], ")") {
				break
			}
			if !isOp(p.toks[i], ",") {
				return nil, false
			}
		}
		if len(v.Rows) > 0 && len(row) != len(v.Rows[0]) {
			return nil, false // TiDB's path says where
		}
		v.Rows = append(v.Rows, row)
		if i++; i == hi {
			break
		}
		if !isOp(p.toks[i], ",") {
			return nil, false
		}
		i++
	}
	return &Query{P: v.P, Body: v}, true
}

// signedOrTyped is the literal two tokens stand for when they are a minus and a number, or TIMESTAMP or DATE and a
// string, as TiDB's path folds them.
func signedOrTyped(a, b Token) (Expr, bool) {
	switch {
	case isOp(a, "-") && b.Kind == Number:
		return &Literal{P: a.Pos, Kind: numberKind(b.Value), Text: "-" + b.Value}, true
	case b.Kind == String && b.Text[0] == '\'' && isKw(a, "timestamp"):
		return &Literal{P: a.Pos, Kind: LitTimestamp, Text: b.Value}, true
	case b.Kind == String && b.Text[0] == '\'' && isKw(a, "timestamptz"):
		return &Literal{P: a.Pos, Kind: LitTimestampTZ, Text: b.Value}, true
	case b.Kind == String && b.Text[0] == '\'' && isKw(a, "date"):
		return &Literal{P: a.Pos, Kind: LitDate, Text: b.Value}, true
	}
	return nil, false
}

// plainLiteral is the literal a lone token stands for, as literalAt converts it.
func plainLiteral(t Token) (Expr, bool) {
	switch {
	case t.Kind == String && t.Text[0] == '\'':
		return &Literal{P: t.Pos, Kind: LitString, Text: t.Value}, true
	case t.Kind == Number:
		return &Literal{P: t.Pos, Kind: numberKind(t.Value), Text: t.Value}, true
	case t.Kind == Param:
		n, err := strconv.Atoi(strings.TrimPrefix(t.Value, "$"))
		return &ParamRef{P: t.Pos, N: n}, err == nil
	case isKw(t, "null"):
		return &Literal{P: t.Pos, Kind: LitNull}, true
	case isKw(t, "true"), isKw(t, "false"):
		return &Literal{P: t.Pos, Kind: LitBool, Text: t.Value}, true
	}
	return nil, false
}

// matchParen returns the index of the ")" matching the "(" at i, or -1.
func (p *parser) matchParen(i int) int {
	depth := 0
	for j := i; j < len(p.toks); j++ {
		t := p.toks[j]
		switch {
		case isOp(t, "("):
			depth++
		case isOp(t, ")"):
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

// opensStatementSet reports whether s is EXECUTE STATEMENT SET BEGIN, which the set's first INSERT follows without
// a semicolon.
func opensStatementSet(s Stmt) bool {
	t, ok := s.(*Txn)
	return ok && t.Inline
}
