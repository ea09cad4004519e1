package parser

// Walk calls fn for every expression of a statement, outer before inner, in no particular order between
// siblings: the engine finds a statement's $n parameters with it.
func Walk(n any, fn func(Expr)) {
	var stmt func(Stmt)
	var query func(*Query)
	var body func(QueryBody)
	var table func(TableExpr)
	var expr func(Expr)
	expr = func(e Expr) {
		if e == nil {
			return
		}
		fn(e)
		switch e := e.(type) {
		case *Unary:
			expr(e.X)
		case *Binary:
			expr(e.L)
			expr(e.R)
		case *IsNull:
			expr(e.X)
		case *IsBool:
			expr(e.X)
		case *Between:
			expr(e.X)
			expr(e.Lo)
			expr(e.Hi)
		case *InList:
			expr(e.X)
			for _, x := range e.List {
				expr(x)
			}
			if e.Sub != nil {
				query(e.Sub)
			}
		case *Like:
			expr(e.X)
			expr(e.Pattern)
			expr(e.Escape)
		case *Case:
			expr(e.Operand)
			for _, w := range e.Whens {
				expr(w.Cond)
				expr(w.Result)
			}
			expr(e.Else)
		case *Cast:
			expr(e.X)
		case *Extract:
			expr(e.X)
		case *Func:
			for _, a := range e.Args {
				expr(a)
			}
			expr(e.Filter)
			if e.Over != nil {
				for _, p := range e.Over.PartitionBy {
					expr(p)
				}
				for _, o := range e.Over.OrderBy {
					expr(o.Expr)
				}
			}
		case *Subquery:
			query(e.Query)
		}
	}
	table = func(t TableExpr) {
		switch t := t.(type) {
		case *TableName:
			if t.AsOf != nil {
				expr(t.AsOf)
			}
		case *DerivedTable:
			query(t.Query)
		case *Join:
			table(t.L)
			table(t.R)
			expr(t.On)
		case *Unnest:
			for _, a := range t.Args {
				expr(a)
			}
		case *WindowTVF:
			table(t.Input)
			for _, p := range t.PartitionBy {
				expr(p)
			}
			for _, a := range t.Args {
				expr(a)
			}
		}
	}
	body = func(b QueryBody) {
		switch b := b.(type) {
		case *SelectCore:
			for _, it := range b.Items {
				expr(it.Expr)
			}
			for _, t := range b.From {
				table(t)
			}
			expr(b.Where)
			for _, g := range b.GroupBy {
				expr(g)
			}
			expr(b.Having)
		case *SetOp:
			body(b.L)
			body(b.R)
		case *Values:
			for _, row := range b.Rows {
				for _, x := range row {
					expr(x)
				}
			}
		case *Query:
			query(b)
		}
	}
	query = func(q *Query) {
		if q == nil {
			return
		}
		for _, c := range q.With {
			query(c.Query)
		}
		body(q.Body)
		for _, o := range q.OrderBy {
			expr(o.Expr)
		}
		expr(q.Limit)
		expr(q.Offset)
	}
	stmt = func(s Stmt) {
		switch s := s.(type) {
		case *CreateStream:
			if s.Watermark != nil {
				expr(s.Watermark.Expr)
			}
		case *CreateView:
			query(s.Query)
		case *Insert:
			query(s.Query)
		case *Select:
			query(s.Query)
		case *Update:
			for _, a := range s.Set {
				expr(a.Value)
			}
			expr(s.Where)
		case *Delete:
			expr(s.Where)
		case *Explain:
			if s.Stmt != nil {
				stmt(s.Stmt)
			}
		}
	}
	switch n := n.(type) {
	case Stmt:
		stmt(n)
	case *Query:
		query(n)
	case Expr:
		expr(n)
	}
}
