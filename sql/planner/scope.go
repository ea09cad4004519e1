package planner

import (
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/clinksql/clinksql/exec/expr"
	"github.com/clinksql/clinksql/sql/parser"
	"github.com/clinksql/clinksql/sqlerr"
)

// Col is a column of a plan node's output: what a name in an enclosing query can resolve to.
type Col struct {
	Name  string
	Table string // the range variable it belongs to ("" for computed columns)
	Type  arrow.DataType
	// Hidden columns ride along for ORDER BY or aggregation but are not part of SELECT *.
	Hidden bool
	// QualOnly columns resolve only qualified (a USING column's own sides: the unqualified name is the merged
	// column).
	QualOnly bool
}

// scope is the set of columns a name resolves against: the output of the FROM clause.
type scope struct {
	cols []Col
	// inner, when positive, layers the scope (a correlated subquery's condition): cols[inner:] are the
	// subquery's own columns, which a name resolves against first, and cols[:inner] the enclosing query's.
	inner int
	// subs are expressions computed below the scope's input, bound to their values: the scalar subqueries joined
	// into it (subquery.go) and the OVER calls of its select list (over.go), by node.
	subs map[parser.Expr]expr.Expr
}

// resolve finds [table.]name in s. A name two range variables share is ambiguous (42702); none is 42703 (or 42P01
// for an unknown qualifier, as Postgres reports `missing FROM-clause entry for table`).
func (s *scope) resolve(table, name string, pos int) (int, error) {
	if s.inner > 0 {
		i, err := (&scope{cols: s.cols[s.inner:]}).resolve(table, name, pos)
		if err == nil {
			return s.inner + i, nil
		}
		if undefinedName(err) {
			j, err2 := (&scope{cols: s.cols[:s.inner]}).resolve(table, name, pos)
			if err2 == nil {
				return j, nil
			}
			if sqlerr.Code(err) == sqlerr.UndefinedTable {
				return 0, err2 // the qualifier is not the subquery's: the enclosing query's error names the column
			}
		}
		return 0, err
	}
	found := -1
	tableSeen := table == ""
	for i, c := range s.cols {
		if table != "" {
			if c.Table != table {
				continue
			}
			tableSeen = true
		} else if c.QualOnly {
			continue
		}
		if c.Name != name {
			continue
		}
		if found >= 0 {
			return 0, sqlerr.New(sqlerr.AmbiguousColumn, pos, "column reference %q is ambiguous", name)
		}
		found = i
	}
	if found >= 0 {
		return found, nil
	}
	if !tableSeen {
		return 0, sqlerr.New(sqlerr.UndefinedTable, pos, "missing FROM-clause entry for table %q", table)
	}
	if table != "" {
		return 0, sqlerr.New(sqlerr.UndefinedColumn, pos, "column %s.%s does not exist", table, name)
	}
	return 0, sqlerr.New(sqlerr.UndefinedColumn, pos, "column %q does not exist", name)
}

// schemaOf returns the Arrow schema of cols (every field nullable: streams carry NULLs everywhere).
func schemaOf(cols []Col) *arrow.Schema {
	fields := make([]arrow.Field, len(cols))
	for i, c := range cols {
		fields[i] = arrow.Field{Name: c.Name, Type: c.Type, Nullable: true}
	}
	return arrow.NewSchema(fields, nil)
}

// visible returns the columns SELECT * shows.
func visible(cols []Col) []int {
	var out []int
	for i, c := range cols {
		if !c.Hidden {
			out = append(out, i)
		}
	}
	return out
}

func lower(s string) string { return strings.ToLower(s) }
