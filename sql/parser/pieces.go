package parser

// InsertValuesPieces reads sql as one `INSERT INTO <target> [(<columns>)] VALUES (...), (...), ...` statement
// (a trailing semicolon allowed) one token at a time, and splits its VALUES list into pieces of at most rows
// tuples. A caller can then parse and bind a huge INSERT piece by piece, sql[:head] followed by each piece's
// text: the tokens and syntax tree of one piece exist at a time, not those of the whole text, which cost some 60
// times the text (a 32 MB INSERT took 1.8 GB). Each piece [lo, hi) spans whole tuples. ok is false for any other
// shape (another statement after it, a clause after the list, a lexical error), which the caller parses whole
// and reports as usual.
func InsertValuesPieces(sql string, rows int) (head int, pieces [][2]int, ok bool) {
	i := 0
	next := func() (Token, bool) {
		start, err := skipSpace(sql, i)
		if err != nil {
			return Token{}, false
		}
		if start >= len(sql) {
			return Token{Kind: EOF, Pos: len(sql), End: len(sql)}, true
		}
		t, err := lexOne(sql, start)
		if err != nil {
			return Token{}, false
		}
		i = t.End
		return t, true
	}
	expectKw := func(kw string) bool {
		t, ok := next()
		return ok && isKw(t, kw)
	}
	if !expectKw("insert") || !expectKw("into") {
		return 0, nil, false
	}
	// The target, dotted or quoted, then its column list if any.
	t, ok := next()
	if !ok || !isName(t) {
		return 0, nil, false
	}
	for t, ok = next(); ok && isOp(t, "."); t, ok = next() {
		if t, ok = next(); !ok || !isName(t) {
			return 0, nil, false
		}
	}
	if ok && isOp(t, "(") {
		for t, ok = next(); ok && (isName(t) || isOp(t, ",")); t, ok = next() {
		}
		if !ok || !isOp(t, ")") {
			return 0, nil, false
		}
		t, ok = next()
	}
	if !ok || !isKw(t, "values") {
		return 0, nil, false
	}
	head = t.End
	lo, n := -1, 0
	for {
		t, ok := next()
		if !ok || !isOp(t, "(") {
			return 0, nil, false
		}
		if lo < 0 {
			lo = t.Pos
		}
		for depth := 1; depth > 0; {
			if t, ok = next(); !ok || t.Kind == EOF {
				return 0, nil, false
			}
			switch {
			case isOp(t, "("):
				depth++
			case isOp(t, ")"):
				depth--
			}
		}
		hi := t.End
		if n++; n == rows {
			pieces = append(pieces, [2]int{lo, hi})
			lo, n = -1, 0
		}
		if t, ok = next(); !ok {
			return 0, nil, false
		}
		if isOp(t, ",") {
			continue
		}
		if n > 0 {
			pieces = append(pieces, [2]int{lo, hi})
		}
		if isOp(t, ";") {
			t, ok = next()
		}
		return head, pieces, ok && t.Kind == EOF
	}
}
