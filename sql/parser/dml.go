package parser

// UPDATE and DELETE of a table (a stream without a connector that has a primary key; the planner checks that).

// Update is UPDATE name [[AS] alias] SET col = expr [, ...] [WHERE expr].
type Update struct {
	StmtBase
	Target  string
	TargetP int
	Alias   string
	Set     []Assignment
	Where   Expr // nil: every row
}

// Assignment is one col = expr of an UPDATE's SET.
type Assignment struct {
	Column  string
	ColumnP int
	Value   Expr
}

// Delete is DELETE FROM name [[AS] alias] [WHERE expr].
type Delete struct {
	StmtBase
	Target  string
	TargetP int
	Alias   string
	Where   Expr // nil: every row
}

func (p *parser) update(start int) (Stmt, error) {
	p.advance()
	s := &Update{}
	var err error
	if s.Target, s.TargetP, err = p.name(); err != nil {
		return nil, err
	}
	if s.Alias, err = p.dmlAlias("set"); err != nil {
		return nil, err
	}
	if err := p.expectKw("set"); err != nil {
		return nil, err
	}
	end := p.stmtEnd()
	for {
		a := Assignment{}
		if isOp(p.peek(), "(") {
			return nil, notSupported(p.peek().Pos, "UPDATE ... SET (columns) = ... is not supported; assign each column")
		}
		if a.Column, a.ColumnP, err = p.name(); err != nil {
			return nil, err
		}
		if err := p.expectOp("="); err != nil {
			return nil, err
		}
		hi := p.clauseEnd(p.i, end, true)
		if a.Value, err = p.parseExpr(p.i, hi); err != nil {
			return nil, err
		}
		p.i = hi
		s.Set = append(s.Set, a)
		if !p.eatOp(",") {
			break
		}
	}
	if p.isKw("from") {
		return nil, notSupported(p.peek().Pos, "UPDATE ... FROM is not supported; UPDATE reads the table's own columns")
	}
	if s.Where, err = p.dmlWhere(end); err != nil {
		return nil, err
	}
	s.StmtBase = p.base(start)
	return s, nil
}

func (p *parser) delete(start int) (Stmt, error) {
	p.advance()
	if err := p.expectKw("from"); err != nil {
		return nil, err
	}
	s := &Delete{}
	var err error
	if s.Target, s.TargetP, err = p.name(); err != nil {
		return nil, err
	}
	if s.Alias, err = p.dmlAlias("where"); err != nil {
		return nil, err
	}
	if s.Where, err = p.dmlWhere(p.stmtEnd()); err != nil {
		return nil, err
	}
	s.StmtBase = p.base(start)
	return s, nil
}

// dmlAlias reads the optional [AS] alias after an UPDATE's or DELETE's table; next is the keyword that follows
// when there is none.
func (p *parser) dmlAlias(next string) (string, error) {
	if p.eatKw("as") {
		a, _, err := p.name()
		return a, err
	}
	if p.isKw("using") {
		return "", notSupported(p.peek().Pos, "DELETE ... USING is not supported; DELETE reads the table's own columns")
	}
	if t := p.peek(); t.Kind == Ident && !isKw(t, next) && !isKw(t, "where") && !isKw(t, "returning") {
		a, _, err := p.name()
		return a, err
	}
	return "", nil
}

// dmlWhere reads [WHERE expr] up to the statement's end, which must follow.
func (p *parser) dmlWhere(end int) (Expr, error) {
	var where Expr
	if p.eatKw("where") {
		hi := p.clauseEnd(p.i, end, false)
		var err error
		if where, err = p.parseExpr(p.i, hi); err != nil {
			return nil, err
		}
		p.i = hi
	}
	if p.isKw("returning") {
		return nil, notSupported(p.peek().Pos, "RETURNING is not supported")
	}
	if p.i != end {
		return nil, p.syntaxErrorAt(p.i)
	}
	return where, nil
}

// clauseEnd is the index of the first token at or after i, outside parentheses, that ends an expression of a
// SET list or a WHERE: a "," (when comma, in a SET list), WHERE, FROM or RETURNING, or end. (FROM inside an
// expression, EXTRACT(x FROM y), is inside parentheses.)
func (p *parser) clauseEnd(i, end int, comma bool) int {
	depth := 0
	for ; i < end; i++ {
		t := p.toks[i]
		switch {
		case isOp(t, "(") || isOp(t, "["):
			depth++
		case isOp(t, ")") || isOp(t, "]"):
			depth--
		case depth == 0 && (comma && (isOp(t, ",") || isKw(t, "where") || isKw(t, "from")) || isKw(t, "returning")):
			return i
		}
	}
	return end
}

func (f *formatter) formatDML(s Stmt) {
	switch s := s.(type) {
	case *Update:
		f.WriteString("UPDATE " + FormatName(s.Target))
		if s.Alias != "" {
			f.WriteString(" AS " + FormatName(s.Alias))
		}
		f.WriteString(" SET ")
		for i, a := range s.Set {
			if i > 0 {
				f.WriteString(", ")
			}
			f.WriteString(FormatName(a.Column) + " = ")
			f.expr(a.Value, 0)
		}
		f.where(s.Where)
	case *Delete:
		f.WriteString("DELETE FROM " + FormatName(s.Target))
		if s.Alias != "" {
			f.WriteString(" AS " + FormatName(s.Alias))
		}
		f.where(s.Where)
	}
}

func (f *formatter) where(e Expr) {
	if e != nil {
		f.WriteString(" WHERE ")
		f.expr(e, 0)
	}
}
