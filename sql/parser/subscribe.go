package parser

import (
	"strconv"
	"strings"

	"github.com/clinksql/clinksql/sqlerr"
)

// The statements of subscriptions and cursors: Materialize's SUBSCRIBE, Postgres' DECLARE ... CURSOR, FETCH and
// CLOSE (with Materialize's FETCH ... WITH (timeout = ...)), and COPY (<query>) TO STDOUT.

// Subscribe is SUBSCRIBE [TO] <relation> | (<query>) [WITH (PROGRESS [= bool], SNAPSHOT [= bool])]: the
// relation's (or query's) contents, then its changes as they commit.
type Subscribe struct {
	StmtBase
	// Name is the relation subscribed to, "" when Query is set.
	Name  string
	NameP int
	// Query is the query of SUBSCRIBE (SELECT ...).
	Query *Query
	// Progress asks for progress rows (WITH (PROGRESS)); NoSnapshot skips the initial contents (SNAPSHOT = false).
	Progress, NoSnapshot bool
}

// Declare is DECLARE name [NO SCROLL] CURSOR [WITHOUT HOLD] FOR <SELECT ... | SUBSCRIBE ...>.
type Declare struct {
	StmtBase
	Name  string
	NameP int
	Stmt  Stmt // *Select or *Subscribe
}

// Fetch is FETCH [FORWARD] [<count> | ALL | NEXT] [FROM | IN] name [WITH (timeout = '<interval>')].
type Fetch struct {
	StmtBase
	Name  string
	NameP int
	// Count is the most rows to fetch, -1 for ALL (1 when not given, as in Postgres).
	Count int64
	// Timeout is the WITH (timeout = ...) value as written, "" when not given; TimeoutP is where it is.
	Timeout  string
	TimeoutP int
}

// CloseCursor is CLOSE name | CLOSE ALL.
type CloseCursor struct {
	StmtBase
	Name string // "" with All
	All  bool
}

// Copy is COPY (<SELECT ... | SUBSCRIBE ...>) TO STDOUT [[WITH] (FORMAT text)]: the rows in COPY's text format.
type Copy struct {
	StmtBase
	Stmt Stmt // *Select or *Subscribe
}

// cursorStatement parses the statements of this file (its word is next): ok is false for any other word.
func (p *parser) cursorStatement(start int) (Stmt, bool, error) {
	switch t := p.peek(); {
	case isKw(t, "subscribe"):
		st, err := p.subscribe(start, p.stmtEnd())
		return st, true, err
	case isKw(t, "declare"):
		st, err := p.declare(start)
		return st, true, err
	case isKw(t, "fetch"):
		st, err := p.fetch(start)
		return st, true, err
	case isKw(t, "close"):
		st, err := p.closeCursor(start)
		return st, true, err
	case isKw(t, "copy"):
		st, err := p.copyTo(start)
		return st, true, err
	}
	return nil, false, nil
}

// subscribe reads SUBSCRIBE ... up to token hi (the statement's end, or the ")" around it in COPY).
func (p *parser) subscribe(start, hi int) (Stmt, error) {
	p.advance() // SUBSCRIBE
	p.eatKw("to")
	s := &Subscribe{}
	if p.isOp("(") {
		closing := p.matchParen(p.i)
		if closing < 0 || closing > hi {
			return nil, p.syntaxErrorAt(p.i)
		}
		q, err := p.parseQuery(p.i+1, closing)
		if err != nil {
			return nil, err
		}
		s.Query = q
		p.i = closing + 1
	} else {
		n, np, err := p.name()
		if err != nil {
			return nil, err
		}
		if p.isOp(".") { // schema.name: the schema is ignored, as for other relations (public)
			p.advance()
			if n, np, err = p.name(); err != nil {
				return nil, err
			}
		}
		s.Name, s.NameP = n, np
	}
	if p.isKw("with") {
		opts, err := p.flagOptions()
		if err != nil {
			return nil, err
		}
		for _, o := range opts {
			if o.Key != "progress" && o.Key != "snapshot" {
				return nil, notSupported(o.P, "SUBSCRIBE option %q is not supported (PROGRESS, SNAPSHOT)", o.Key)
			}
			on, err := optionBool(o)
			if err != nil {
				return nil, err
			}
			if o.Key == "progress" {
				s.Progress = on
			} else {
				s.NoSnapshot = !on
			}
		}
	}
	if t := p.peek(); isKw(t, "as") || isKw(t, "up") || isKw(t, "envelope") {
		return nil, notSupported(t.Pos, "SUBSCRIBE ... %s is not supported", strings.ToUpper(t.Value))
	}
	if p.i < hi {
		return nil, p.syntaxErrorAt(p.i)
	}
	s.StmtBase = p.base(start)
	return s, nil
}

// flagOptions reads WITH (name [= value], ...): a name alone is a flag set to true (Materialize's PROGRESS).
func (p *parser) flagOptions() ([]Option, error) {
	p.advance() // WITH
	if err := p.expectOp("("); err != nil {
		return nil, err
	}
	var out []Option
	for {
		o := Option{P: p.peek().Pos}
		k, _, err := p.dottedName()
		if err != nil {
			return nil, err
		}
		o.Key = strings.ToLower(k)
		o.Value = "true"
		if p.eatOp("=") {
			if o.Value, err = p.optionValue(); err != nil {
				return nil, err
			}
		}
		out = append(out, o)
		if p.eatOp(")") {
			return out, nil
		}
		if err := p.expectOp(","); err != nil {
			return nil, err
		}
	}
}

func optionBool(o Option) (bool, error) {
	switch strings.ToLower(o.Value) {
	case "true", "on", "1", "yes":
		return true, nil
	case "false", "off", "0", "no":
		return false, nil
	}
	return false, sqlerr.New(sqlerr.InvalidParameter, o.P, "option %s takes a boolean, not %q", o.Key, o.Value)
}

// declare reads DECLARE name [BINARY] [NO SCROLL] CURSOR [WITHOUT HOLD] FOR <query or SUBSCRIBE>.
func (p *parser) declare(start int) (Stmt, error) {
	p.advance() // DECLARE
	n, np, err := p.name()
	if err != nil {
		return nil, err
	}
	for {
		switch t := p.peek(); {
		case isKw(t, "binary"), isKw(t, "insensitive"), isKw(t, "asensitive"):
			return nil, notSupported(t.Pos, "DECLARE ... %s CURSOR is not supported", strings.ToUpper(t.Value))
		case isKw(t, "scroll"):
			return nil, notSupported(t.Pos, "scrollable cursors are not supported")
		case p.eatKw("no", "scroll"):
			continue
		}
		break
	}
	if err := p.expectKw("cursor"); err != nil {
		return nil, err
	}
	if t := p.peek(); isKw(t, "with") && p.kwAt(p.i+1, "hold") {
		return nil, notSupported(t.Pos, "WITH HOLD cursors are not supported: a cursor ends with its transaction")
	}
	p.eatKw("without", "hold")
	if err := p.expectKw("for"); err != nil {
		return nil, err
	}
	inner, err := p.innerStatement(p.i, p.stmtEnd())
	if err != nil {
		return nil, err
	}
	return &Declare{StmtBase: p.base(start), Name: n, NameP: np, Stmt: inner}, nil
}

// innerStatement reads the SELECT or SUBSCRIBE in tokens [lo, hi) (of DECLARE, of COPY's parentheses).
func (p *parser) innerStatement(lo, hi int) (Stmt, error) {
	p.i = lo
	t := p.peek()
	switch {
	case isKw(t, "subscribe"):
		return p.subscribe(lo, hi)
	case isKw(t, "select") || isKw(t, "with") || isKw(t, "values") || isKw(t, "table") || isOp(t, "("):
		q, err := p.parseQuery(lo, hi)
		if err != nil {
			return nil, err
		}
		p.i = hi
		return &Select{StmtBase: p.base(lo), Query: q}, nil
	}
	if t.Kind == EOF || isOp(t, ";") || lo >= hi {
		return nil, p.syntaxErrorAt(lo)
	}
	return nil, notSupported(t.Pos, "only SELECT and SUBSCRIBE can be used here")
}

// fetch reads FETCH [FORWARD] [<count> | ALL | NEXT] [FROM | IN] name [WITH (timeout = ...)].
func (p *parser) fetch(start int) (Stmt, error) {
	p.advance() // FETCH
	f := &Fetch{Count: 1}
	switch t := p.peek(); {
	case isKw(t, "backward"), isKw(t, "prior"), isKw(t, "first"), isKw(t, "last"), isKw(t, "absolute"), isKw(t, "relative"):
		return nil, notSupported(t.Pos, "FETCH %s is not supported: cursors only move forward", strings.ToUpper(t.Value))
	case p.eatKw("forward"):
	}
	switch t := p.peek(); {
	case isKw(t, "all"):
		p.advance()
		f.Count = -1
	case isKw(t, "next"):
		p.advance()
	case t.Kind == Number:
		n, err := strconv.ParseInt(t.Value, 10, 64)
		if err != nil || n < 0 {
			return nil, sqlerr.New(sqlerr.SyntaxError, t.Pos, "FETCH count must be a whole number, not %s", t.Text)
		}
		p.advance()
		f.Count = n
	}
	if !p.eatKw("from") {
		p.eatKw("in")
	}
	n, np, err := p.name()
	if err != nil {
		return nil, err
	}
	f.Name, f.NameP = n, np
	if p.isKw("with") {
		opts, err := p.flagOptions()
		if err != nil {
			return nil, err
		}
		for _, o := range opts {
			if o.Key != "timeout" {
				return nil, notSupported(o.P, "FETCH option %q is not supported (timeout)", o.Key)
			}
			f.Timeout, f.TimeoutP = o.Value, o.P
		}
	}
	f.StmtBase = p.base(start)
	return f, nil
}

// closeCursor reads CLOSE name | CLOSE ALL.
func (p *parser) closeCursor(start int) (Stmt, error) {
	p.advance() // CLOSE
	if p.eatKw("all") {
		return &CloseCursor{StmtBase: p.base(start), All: true}, nil
	}
	n, _, err := p.name()
	if err != nil {
		return nil, err
	}
	return &CloseCursor{StmtBase: p.base(start), Name: n}, nil
}

// copyTo reads COPY (<query or SUBSCRIBE>) TO STDOUT [[WITH] (FORMAT text)].
func (p *parser) copyTo(start int) (Stmt, error) {
	t := p.next() // COPY
	if !p.isOp("(") {
		return nil, notSupported(t.Pos, "COPY is supported only as COPY (<query>) TO STDOUT")
	}
	closing := p.matchParen(p.i)
	if closing < 0 {
		return nil, p.syntaxErrorAt(p.i)
	}
	inner, err := p.innerStatement(p.i+1, closing)
	if err != nil {
		return nil, err
	}
	p.i = closing + 1
	if p.isKw("from") {
		return nil, notSupported(p.peek().Pos, "COPY ... FROM is not supported; use INSERT")
	}
	if err := p.expectKw("to"); err != nil {
		return nil, err
	}
	if !p.isKw("stdout") {
		return nil, notSupported(p.peek().Pos, "COPY is supported only TO STDOUT (psql's \\copy writes a client-side file with it)")
	}
	p.advance()
	p.eatKw("with")
	if p.isOp("(") {
		p.advance()
		for {
			o := p.peek()
			k, _, err := p.name()
			if err != nil {
				return nil, err
			}
			v, err := p.optionValue()
			if err != nil {
				return nil, err
			}
			if k != "format" || strings.ToLower(v) != "text" {
				return nil, notSupported(o.Pos, "COPY option %s %s is not supported (only FORMAT text)", strings.ToUpper(k), v)
			}
			if p.eatOp(")") {
				break
			}
			if err := p.expectOp(","); err != nil {
				return nil, err
			}
		}
	}
	return &Copy{StmtBase: p.base(start), Stmt: inner}, nil
}

// formatCursorStmt prints the statements of this file (Format).
func (f *formatter) formatCursorStmt(s Stmt) {
	switch s := s.(type) {
	case *Subscribe:
		f.WriteString("SUBSCRIBE TO ")
		if s.Query != nil {
			f.WriteString("(")
			f.query(s.Query)
			f.WriteString(")")
		} else {
			f.WriteString(FormatName(s.Name))
		}
		var opts []string
		if s.Progress {
			opts = append(opts, "PROGRESS")
		}
		if s.NoSnapshot {
			opts = append(opts, "SNAPSHOT = false")
		}
		if len(opts) > 0 {
			f.WriteString(" WITH (" + strings.Join(opts, ", ") + ")")
		}
	case *Declare:
		f.WriteString("DECLARE " + FormatName(s.Name) + " CURSOR FOR ")
		f.stmt(s.Stmt)
	case *Fetch:
		count := "ALL"
		if s.Count >= 0 {
			count = strconv.FormatInt(s.Count, 10)
		}
		f.WriteString("FETCH " + count + " FROM " + FormatName(s.Name))
		if s.Timeout != "" {
			f.WriteString(" WITH (timeout = " + quoteString(s.Timeout) + ")")
		}
	case *CloseCursor:
		switch {
		case s.All:
			f.WriteString("CLOSE ALL")
		case s.Name == "all":
			f.WriteString(`CLOSE "all"`)
		default:
			f.WriteString("CLOSE " + FormatName(s.Name))
		}
	case *Copy:
		f.WriteString("COPY (")
		f.stmt(s.Stmt)
		f.WriteString(") TO STDOUT")
	}
}
