package parser

import (
	"fmt"
	"strings"
)

// Format prints a node (a Stmt, *Query, QueryBody, TableExpr, Expr or TypeName) as canonical SQL of our dialect:
// keywords upper case, names quoted only when they must be, Flink's window table-function form, INTERVAL 'n'
// UNIT, CAST(x AS TYPE), FILTER (WHERE ...), and parentheses wherever Postgres' and TiDB's precedences could
// read the text differently. Parse(Format(x)) gives x again, positions aside: EXPLAIN prints it, the catalog
// keeps a view's query in it.
func Format(n any) string {
	var f formatter
	f.node(n)
	return f.String()
}

type formatter struct{ strings.Builder }

func (f *formatter) node(n any) {
	switch n := n.(type) {
	case Stmt:
		f.stmt(n)
	case *Query:
		f.query(n)
	case QueryBody:
		f.body(n, false)
	case TableExpr:
		f.table(n)
	case Expr:
		f.expr(n, 0)
	case TypeName:
		f.WriteString(formatType(n))
	case nil:
	default:
		fmt.Fprintf(f, "<%T>", n)
	}
}

// formatKeywords are the words a name must be quoted to mean itself.
var formatKeywords = toSet(`if watermark descriptor interval cast try_cast extract filter nulls first last
	operator session tumble hop cumulate timestamp date time`)

// FormatName quotes a name when it is not a plain lower-case word or could be read as a keyword.
func FormatName(s string) string {
	if isPlainWord(s) && !sqlKeywords[s] && !tidbReserved[s] && !formatKeywords[s] {
		return s
	}
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}

func quoteString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// quoteLiteral prints a string constant: a standard string, or an E'...' string with escapes when it holds control
// characters (a newline, a tab), so that the text stays on one line. An E'...' string must be valid UTF-8 without
// NUL (lexer.go), which a standard string need not be.
func quoteLiteral(s string) string {
	if !strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) || invalidUTF8(s) >= 0 {
		return quoteString(s)
	}
	var b strings.Builder
	b.WriteString("E'")
	for k := 0; k < len(s); k++ {
		switch c := s[k]; c {
		case '\\':
			b.WriteString(`\\`)
		case '\'':
			b.WriteString(`\'`)
		case '\n':
			b.WriteString(`\n`)
		case '\t':
			b.WriteString(`\t`)
		case '\r':
			b.WriteString(`\r`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			if c < 0x20 || c == 0x7f {
				fmt.Fprintf(&b, `\x%02x`, c)
			} else {
				b.WriteByte(c)
			}
		}
	}
	b.WriteString("'")
	return b.String()
}

func formatType(t TypeName) string {
	switch t.Name {
	case "ROW":
		parts := make([]string, len(t.Fields))
		for i, f := range t.Fields {
			parts[i] = FormatName(f.Name) + " " + formatType(f.Type)
		}
		return "ROW<" + strings.Join(parts, ", ") + ">"
	case "ARRAY":
		if t.Elem != nil {
			return "ARRAY<" + formatType(*t.Elem) + ">"
		}
	case "MAP":
		if t.Key != nil && t.Value != nil {
			return "MAP<" + formatType(*t.Key) + ", " + formatType(*t.Value) + ">"
		}
	}
	switch {
	case t.Precision >= 0 && t.Scale >= 0:
		return fmt.Sprintf("%s(%d, %d)", t.Name, t.Precision, t.Scale)
	case t.Precision >= 0:
		return fmt.Sprintf("%s(%d)", t.Name, t.Precision)
	}
	return t.Name
}

func (f *formatter) names(ns []string) {
	for i, n := range ns {
		if i > 0 {
			f.WriteString(", ")
		}
		f.WriteString(FormatName(n))
	}
}

// dotted prints a setting name (a.b.c): our own grammar reads any word there, keywords included.
func dotted(s string) string {
	parts := strings.Split(s, ".")
	for i, p := range parts {
		if !isPlainWord(p) {
			parts[i] = FormatName(p)
		}
	}
	return strings.Join(parts, ".")
}

func (f *formatter) columns(cols []ColumnDef, wm *Watermark, pk *PrimaryKey) {
	f.WriteString(" (")
	for i, c := range cols {
		if i > 0 {
			f.WriteString(", ")
		}
		if c.Computed != nil {
			f.WriteString(FormatName(c.Name) + " AS ")
			f.expr(c.Computed, 0)
			continue
		}
		f.WriteString(FormatName(c.Name) + " " + formatType(c.Type))
		if c.NotNull {
			f.WriteString(" NOT NULL")
		}
		if m := c.Metadata; m != nil {
			f.WriteString(" METADATA")
			if m.Key != "" {
				f.WriteString(" FROM " + quoteString(m.Key))
			}
			if m.Virtual {
				f.WriteString(" VIRTUAL")
			}
		}
	}
	if wm != nil {
		if len(cols) > 0 {
			f.WriteString(", ")
		}
		f.WriteString("WATERMARK FOR " + FormatName(wm.Column) + " AS ")
		f.expr(wm.Expr, 0)
	}
	if pk != nil {
		f.WriteString(", PRIMARY KEY (")
		f.names(pk.Columns)
		f.WriteString(")")
		if !pk.Enforced {
			f.WriteString(" NOT ENFORCED")
		}
	}
	f.WriteString(")")
}

func (f *formatter) options(opts []Option) {
	if opts == nil {
		return
	}
	f.WriteString(" WITH (")
	for i, o := range opts {
		if i > 0 {
			f.WriteString(", ")
		}
		f.WriteString(quoteString(o.Key) + " = " + quoteString(o.Value))
	}
	f.WriteString(")")
}

func (f *formatter) partitionedBy(pb *PartitionedBy) {
	if pb == nil {
		return
	}
	f.WriteString(" PARTITIONED BY (")
	f.names(pb.Columns)
	f.WriteString(")")
}

func (f *formatter) stmt(s Stmt) {
	switch s := s.(type) {
	case *CreateStream:
		f.WriteString("CREATE STREAM ")
		if s.IfNotExists {
			f.WriteString("IF NOT EXISTS ")
		}
		f.WriteString(FormatName(s.Name))
		f.columns(s.Columns, s.Watermark, s.PrimaryKey)
		f.partitionedBy(s.PartitionedBy)
		f.options(s.Options)
	case *CreateSink:
		f.WriteString("CREATE SINK ")
		if s.IfNotExists {
			f.WriteString("IF NOT EXISTS ")
		}
		f.WriteString(FormatName(s.Name))
		f.columns(s.Columns, nil, s.PrimaryKey)
		f.partitionedBy(s.PartitionedBy)
		f.options(s.Options)
	case *CreateView:
		f.WriteString("CREATE ")
		if s.OrReplace {
			f.WriteString("OR REPLACE ")
		}
		if s.Materialized {
			f.WriteString("MATERIALIZED ")
		}
		f.WriteString("VIEW ")
		if s.IfNotExists {
			f.WriteString("IF NOT EXISTS ")
		}
		f.WriteString(FormatName(s.Name))
		if len(s.Columns) > 0 {
			f.WriteString(" (")
			f.names(s.Columns)
			f.WriteString(")")
		}
		f.WriteString(" AS ")
		f.query(s.Query)
	case *Insert:
		f.WriteString("INSERT INTO " + FormatName(s.Target))
		if len(s.Columns) > 0 {
			f.WriteString(" (")
			f.names(s.Columns)
			f.WriteString(")")
		}
		f.WriteString(" ")
		f.query(s.Query)
	case *Select:
		f.query(s.Query)
	case *Flush:
		f.WriteString("FLUSH")
	case *Set:
		f.WriteString("SET " + dotted(s.Name) + " = ")
		if s.Default {
			f.WriteString("DEFAULT")
		} else {
			f.WriteString(quoteString(s.Value))
		}
	case *Reset:
		if s.Name == "all" {
			f.WriteString("RESET ALL")
		} else {
			f.WriteString("RESET " + dotted(s.Name))
		}
	case *Show:
		what := s.What
		if isShowObject(what) {
			what = strings.ToUpper(what)
		}
		f.WriteString("SHOW " + what)
		if s.For != "" {
			f.WriteString(" FOR " + quoteString(s.For))
		}
	case *Describe:
		f.WriteString("DESCRIBE " + FormatName(s.Name))
	case *Explain:
		if s.Analyze {
			f.WriteString("EXPLAIN ANALYZE " + quoteString(s.Job))
			break
		}
		f.WriteString("EXPLAIN ")
		f.stmt(s.Stmt)
	case *Drop:
		f.WriteString("DROP " + s.Kind + " ")
		if s.IfExists {
			f.WriteString("IF EXISTS ")
		}
		if s.Kind == "FUNCTION" {
			f.dropFunctionNames(s)
		} else {
			f.names(s.Names)
		}
		if s.Cascade {
			f.WriteString(" CASCADE")
		}
	case *CreateFunction:
		f.createFunction(s)
	case *DropJob:
		f.WriteString("DROP JOB " + quoteString(s.ID))
	case *AlterJob:
		f.WriteString("ALTER JOB " + quoteString(s.ID) + " RESUME")
	case *Txn:
		switch {
		case s.Inline:
			f.WriteString("EXECUTE STATEMENT SET BEGIN")
		case s.StatementSet:
			f.WriteString("BEGIN STATEMENT SET")
		default:
			f.WriteString(strings.ToUpper(s.Op))
		}
	case *Subscribe, *Declare, *Fetch, *CloseCursor, *Copy:
		f.formatCursorStmt(s) // subscribe.go
	case *Update, *Delete:
		f.formatDML(s) // dml.go
	default:
		fmt.Fprintf(f, "<%T>", s)
	}
}

func isShowObject(what string) bool {
	switch what {
	case "streams", "sinks", "views", "materialized views", "jobs", "checkpoints", "tables", "all":
		return true
	}
	return false
}

func (f *formatter) query(q *Query) {
	if q == nil {
		return
	}
	if len(q.With) > 0 {
		f.WriteString("WITH ")
		for i, c := range q.With {
			if i > 0 {
				f.WriteString(", ")
			}
			f.WriteString(FormatName(c.Name))
			if len(c.Columns) > 0 {
				f.WriteString(" (")
				f.names(c.Columns)
				f.WriteString(")")
			}
			f.WriteString(" AS (")
			f.query(c.Query)
			f.WriteString(")")
		}
		f.WriteString(" ")
		if startsWithValues(q.Body) {
			// WITH ... VALUES does not parse (WITH takes a SELECT or a parenthesized query): (VALUES ...) does
			f.WriteString("(")
			f.body(q.Body, false)
			f.WriteString(")")
		} else {
			f.body(q.Body, false)
		}
	} else {
		f.body(q.Body, false)
	}
	if len(q.OrderBy) > 0 {
		f.WriteString(" ORDER BY ")
		f.orderItems(q.OrderBy)
	}
	if q.Limit != nil {
		f.WriteString(" LIMIT ")
		f.expr(q.Limit, 0)
	}
	if q.Offset != nil {
		f.WriteString(" OFFSET ")
		f.expr(q.Offset, 0)
	}
}

func (f *formatter) orderItems(items []OrderItem) {
	for i, o := range items {
		if i > 0 {
			f.WriteString(", ")
		}
		f.expr(o.Expr, 0)
		if o.Desc {
			f.WriteString(" DESC")
		}
		if o.NullsFirst != nil {
			if *o.NullsFirst {
				f.WriteString(" NULLS FIRST")
			} else {
				f.WriteString(" NULLS LAST")
			}
		}
	}
}

func setOpLevel(b QueryBody) int {
	if s, ok := b.(*SetOp); ok {
		if s.Op == "intersect" {
			return 2
		}
		return 1
	}
	return 3
}

// startsWithValues reports whether a body's first query is a VALUES list.
func startsWithValues(b QueryBody) bool {
	for {
		switch x := b.(type) {
		case *Values:
			return true
		case *SetOp:
			b = x.L
		default:
			return false
		}
	}
}

// body prints a query body; paren puts a body that is more than a SELECT in parentheses.
func (f *formatter) body(b QueryBody, paren bool) {
	switch b := b.(type) {
	case *SelectCore:
		f.selectCore(b)
	case *Values:
		f.WriteString("VALUES ")
		for i, row := range b.Rows {
			if i > 0 {
				f.WriteString(", ")
			}
			f.WriteString("(")
			f.exprList(row)
			f.WriteString(")")
		}
	case *SetOp:
		if paren {
			f.WriteString("(")
		}
		lvl := setOpLevel(b)
		f.body(b.L, setOpLevel(b.L) < lvl)
		f.WriteString(" " + strings.ToUpper(b.Op) + " ")
		if b.All {
			f.WriteString("ALL ")
		}
		f.body(b.R, setOpLevel(b.R) <= lvl)
		if paren {
			f.WriteString(")")
		}
	case *Query:
		f.WriteString("(")
		f.query(b)
		f.WriteString(")")
	}
}

func (f *formatter) selectCore(s *SelectCore) {
	f.WriteString("SELECT ")
	if s.Distinct {
		f.WriteString("DISTINCT ")
	}
	for i, it := range s.Items {
		if i > 0 {
			f.WriteString(", ")
		}
		f.expr(it.Expr, 0)
		if it.Alias != "" {
			f.WriteString(" AS " + FormatName(it.Alias))
		}
	}
	if len(s.From) > 0 {
		f.WriteString(" FROM ")
		for i, t := range s.From {
			if i > 0 {
				f.WriteString(", ")
			}
			f.table(t)
		}
	}
	if s.Where != nil {
		f.WriteString(" WHERE ")
		f.expr(s.Where, 0)
	}
	if len(s.GroupBy) > 0 {
		f.WriteString(" GROUP BY ")
		f.exprList(s.GroupBy)
	}
	if s.Having != nil {
		f.WriteString(" HAVING ")
		f.expr(s.Having, 0)
	}
}

func (f *formatter) alias(a string) {
	if a != "" {
		f.WriteString(" AS " + FormatName(a))
	}
}

func (f *formatter) table(t TableExpr) {
	switch t := t.(type) {
	case *TableName:
		if t.Schema != "" {
			f.WriteString(FormatName(t.Schema) + ".")
		}
		f.WriteString(FormatName(t.Name))
		if t.AsOf != nil {
			f.WriteString(" FOR SYSTEM_TIME AS OF ")
			f.expr(t.AsOf, 0)
		}
		f.alias(t.Alias)
	case *DerivedTable:
		f.WriteString("(")
		f.query(t.Query)
		f.WriteString(")")
		f.alias(t.Alias)
		if len(t.Columns) > 0 {
			f.WriteString("(")
			f.names(t.Columns)
			f.WriteString(")")
		}
	case *Join:
		f.table(t.L)
		f.WriteString(map[string]string{"inner": " JOIN ", "left": " LEFT JOIN ", "right": " RIGHT JOIN ",
			"full": " FULL JOIN ", "cross": " CROSS JOIN "}[t.Kind])
		if _, ok := t.R.(*Join); ok {
			f.WriteString("(")
			f.table(t.R)
			f.WriteString(")")
		} else {
			f.table(t.R)
		}
		if t.On != nil {
			f.WriteString(" ON ")
			f.expr(t.On, 0)
		}
		if len(t.Using) > 0 {
			f.WriteString(" USING (")
			f.names(t.Using)
			f.WriteString(")")
		}
	case *WindowTVF:
		f.WriteString("TABLE(" + strings.ToUpper(t.Kind) + "(TABLE ")
		f.table(t.Input)
		if len(t.PartitionBy) > 0 {
			f.WriteString(" PARTITION BY ")
			f.exprList(t.PartitionBy)
		}
		f.WriteString(", DESCRIPTOR(" + FormatName(t.TimeCol) + ")")
		for _, a := range t.Args {
			f.WriteString(", ")
			f.expr(a, 0)
		}
		f.WriteString("))")
		f.alias(t.Alias)
	case *Unnest:
		f.WriteString("UNNEST(")
		f.exprList(t.Args)
		f.WriteString(")")
		if t.Ordinality {
			f.WriteString(" WITH ORDINALITY")
		}
		f.alias(t.Alias)
		if len(t.Columns) > 0 {
			f.WriteString(" (")
			f.names(t.Columns)
			f.WriteString(")")
		}
	}
}

func (f *formatter) exprList(es []Expr) {
	for i, e := range es {
		if i > 0 {
			f.WriteString(", ")
		}
		f.expr(e, 0)
	}
}

// Precedence levels, Postgres' order. Where Postgres and MySQL (TiDB) disagree (IS, comparison, LIKE and
// BETWEEN, ||), children are parenthesized whenever either reading could differ.
const (
	precOr = iota + 1
	precAnd
	precNot
	precIs
	precCmp
	precLike
	precConcat
	precAdd
	precMul
	precUnary
	precPrimary
)

func prec(e Expr) int {
	switch e := e.(type) {
	case *Binary:
		switch e.Op {
		case "or":
			return precOr
		case "and":
			return precAnd
		case "is distinct from", "is not distinct from":
			return precIs
		case "=", "<>", "<", ">", "<=", ">=":
			return precCmp
		case "||":
			return precConcat
		case "+", "-":
			return precAdd
		case "*", "/", "%":
			return precMul
		}
		return precCmp
	case *Unary:
		if e.Op == "not" {
			return precNot
		}
		return precUnary
	case *IsNull, *IsBool:
		return precIs
	case *Between, *InList, *Like:
		return precLike
	case *Literal:
		if strings.HasPrefix(e.Text, "-") {
			return precUnary
		}
	}
	return precPrimary
}

// child prints e as an operand of an operator of level lvl; right is the right operand of a binary operator.
func (f *formatter) child(e Expr, lvl int, right bool) {
	p := prec(e)
	need := p < lvl || p == lvl && right
	switch {
	case lvl >= precIs && lvl <= precConcat:
		// The zone where MySQL's precedence differs from Postgres': only primaries and arithmetic go bare, and
		// not even arithmetic under ||.
		need = p <= precConcat && !(p == lvl && !right && lvl == precConcat)
		if lvl == precConcat && (p == precAdd || p == precMul) {
			need = true
		}
	case lvl == precNot:
		need = p <= precConcat
	case lvl == precAdd || lvl == precMul:
		need = need || p == precConcat
	}
	if need {
		f.WriteString("(")
		f.expr(e, 0)
		f.WriteString(")")
		return
	}
	f.expr(e, lvl)
}

func (f *formatter) expr(e Expr, _ int) {
	switch e := e.(type) {
	case nil:
	case *ColumnRef:
		if e.Table != "" {
			f.WriteString(FormatName(e.Table) + ".")
		}
		f.WriteString(FormatName(e.Name))
	case *Star:
		if e.Table != "" {
			f.WriteString(FormatName(e.Table) + ".")
		}
		f.WriteString("*")
	case *Literal:
		switch e.Kind {
		case LitNull:
			f.WriteString("NULL")
		case LitBool:
			f.WriteString(strings.ToUpper(e.Text))
		case LitString:
			f.WriteString(quoteLiteral(e.Text))
		case LitTimestamp:
			f.WriteString("TIMESTAMP " + quoteString(e.Text))
		case LitDate:
			f.WriteString("DATE " + quoteString(e.Text))
		case LitTimestampTZ:
			f.WriteString("TIMESTAMPTZ " + quoteString(e.Text))
		default:
			f.WriteString(e.Text)
		}
	case *Interval:
		f.WriteString("INTERVAL " + quoteString(e.Value))
		if e.Unit != "" {
			f.WriteString(" " + strings.ToUpper(e.Unit))
		}
	case *ParamRef:
		fmt.Fprintf(f, "$%d", e.N)
	case *Unary:
		if e.Op == "not" {
			f.WriteString("NOT ")
			f.child(e.X, precNot, true)
		} else {
			f.WriteString(e.Op)
			if prec(e.X) <= precUnary {
				f.WriteString("(")
				f.expr(e.X, 0)
				f.WriteString(")")
			} else {
				f.expr(e.X, precUnary)
			}
		}
	case *Binary:
		lvl := prec(e)
		f.child(e.L, lvl, false)
		f.WriteString(" " + strings.ToUpper(e.Op) + " ")
		f.child(e.R, lvl, true)
	case *IsNull:
		f.child(e.X, precIs, false)
		if e.Not {
			f.WriteString(" IS NOT NULL")
		} else {
			f.WriteString(" IS NULL")
		}
	case *IsBool:
		f.child(e.X, precIs, false)
		f.WriteString(" IS ")
		if e.Not {
			f.WriteString("NOT ")
		}
		if e.Value {
			f.WriteString("TRUE")
		} else {
			f.WriteString("FALSE")
		}
	case *Between:
		f.child(e.X, precLike, false)
		if e.Not {
			f.WriteString(" NOT")
		}
		f.WriteString(" BETWEEN ")
		f.child(e.Lo, precLike, true)
		f.WriteString(" AND ")
		f.child(e.Hi, precLike, true)
	case *InList:
		f.child(e.X, precLike, false)
		if e.Not {
			f.WriteString(" NOT")
		}
		f.WriteString(" IN (")
		if e.Sub != nil {
			f.query(e.Sub)
		} else {
			f.exprList(e.List)
		}
		f.WriteString(")")
	case *Like:
		f.child(e.X, precLike, false)
		switch {
		case e.Regexp:
			op := "~"
			if e.Not {
				op = "!~"
			}
			if e.CaseInsensitive {
				op += "*"
			}
			f.WriteString(" " + op + " ")
		default:
			if e.Not {
				f.WriteString(" NOT")
			}
			if e.CaseInsensitive {
				f.WriteString(" ILIKE ")
			} else {
				f.WriteString(" LIKE ")
			}
		}
		f.child(e.Pattern, precLike, true)
		if e.Escape != nil {
			f.WriteString(" ESCAPE ")
			f.child(e.Escape, precLike, true)
		}
	case *Case:
		f.WriteString("CASE")
		if e.Operand != nil {
			f.WriteString(" ")
			f.expr(e.Operand, 0)
		}
		for _, w := range e.Whens {
			f.WriteString(" WHEN ")
			f.expr(w.Cond, 0)
			f.WriteString(" THEN ")
			f.expr(w.Result, 0)
		}
		if e.Else != nil {
			f.WriteString(" ELSE ")
			f.expr(e.Else, 0)
		}
		f.WriteString(" END")
	case *Cast:
		if e.Try {
			f.WriteString("TRY_CAST(")
		} else {
			f.WriteString("CAST(")
		}
		f.expr(e.X, 0)
		f.WriteString(" AS " + formatType(e.Type) + ")")
	case *Extract:
		f.WriteString("EXTRACT(" + strings.ToUpper(e.Field) + " FROM ")
		f.expr(e.X, 0)
		f.WriteString(")")
	case *Func:
		f.function(e)
	case *Subquery:
		if e.Exists {
			f.WriteString("EXISTS ")
		}
		f.WriteString("(")
		f.query(e.Query)
		f.WriteString(")")
	default:
		fmt.Fprintf(f, "<%T>", e)
	}
}

func (f *formatter) function(e *Func) {
	switch {
	case len(e.Args) == 0 && !e.Star && e.Over == nil && e.Filter == nil &&
		(e.Name == "current_timestamp" || e.Name == "current_date" || e.Name == "localtimestamp"):
		f.WriteString(strings.ToUpper(e.Name))
		return
	case e.Name == "position" && len(e.Args) == 2 && !e.Distinct:
		f.WriteString("position(")
		f.child(e.Args[0], precLike, false)
		f.WriteString(" IN ")
		f.child(e.Args[1], precLike, true)
		f.WriteString(")")
		return
	}
	name := e.Name
	if i := strings.IndexByte(name, '.'); i > 0 && isPlainWord(name[:i]) {
		f.WriteString(FormatName(name[:i]) + ".")
		name = name[i+1:]
	}
	if isPlainWord(name) {
		f.WriteString(name)
	} else {
		f.WriteString(FormatName(name))
	}
	f.WriteString("(")
	if e.Star {
		f.WriteString("*")
	} else {
		if e.Distinct {
			f.WriteString("DISTINCT ")
		}
		f.exprList(e.Args)
	}
	f.WriteString(")")
	if e.Filter != nil {
		f.WriteString(" FILTER (WHERE ")
		f.expr(e.Filter, 0)
		f.WriteString(")")
	}
	if e.Over != nil {
		f.WriteString(" OVER (")
		sep := ""
		if len(e.Over.PartitionBy) > 0 {
			f.WriteString("PARTITION BY ")
			f.exprList(e.Over.PartitionBy)
			sep = " "
		}
		if len(e.Over.OrderBy) > 0 {
			f.WriteString(sep + "ORDER BY ")
			f.orderItems(e.Over.OrderBy)
			sep = " "
		}
		if fr := e.Over.Frame; fr != nil {
			f.WriteString(sep + map[bool]string{false: "ROWS", true: "RANGE"}[fr.Range] + " BETWEEN ")
			f.frameBound(fr.Start)
			f.WriteString(" AND ")
			f.frameBound(fr.End)
		}
		f.WriteString(")")
	}
}

func (f *formatter) frameBound(b FrameBound) {
	switch b.Kind {
	case BoundUnboundedPreceding:
		f.WriteString("UNBOUNDED PRECEDING")
	case BoundUnboundedFollowing:
		f.WriteString("UNBOUNDED FOLLOWING")
	case BoundCurrentRow:
		f.WriteString("CURRENT ROW")
	case BoundPreceding, BoundFollowing:
		f.expr(b.Offset, 0)
		f.WriteString(map[bool]string{true: " PRECEDING", false: " FOLLOWING"}[b.Kind == BoundPreceding])
	}
}
