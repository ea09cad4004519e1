package planner

import (
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/clinksql/clinksql/catalog"
	"github.com/clinksql/clinksql/exec/expr"
	"github.com/clinksql/clinksql/sql/parser"
	"github.com/clinksql/clinksql/sqlerr"
)

// SystemSchema is the schema of the engine's system relations (clink_catalog.jobs, ...): what the engine shows of
// its jobs, readable with SQL.
const SystemSchema = "clink_catalog"

// SystemTable is a snapshot of one system relation, taken when a statement that reads it is planned. A value of
// Rows is nil (NULL) or, by its column's type: string (TEXT), bool (BOOLEAN), int64 (BIGINT), float64 (DOUBLE),
// time.Time (TIMESTAMP).
type SystemTable struct {
	Columns []catalog.Column
	Rows    [][]any
}

// systemTable binds clink_catalog.<name> as constant rows: a bounded relation that SELECT filters, joins, sorts and
// aggregates like any other. A continuous job cannot read it (its rows would never change).
func (b *binder) systemTable(t *parser.TableName, alias string) (node, error) {
	qualified := SystemSchema + "." + t.Name
	st, ok := b.system[t.Name]
	if !ok {
		if st, ok = b.env.SystemTable(t.Name); !ok {
			return nil, sqlerr.New(sqlerr.UndefinedTable, t.P, "relation %q does not exist", qualified)
		}
		if b.system == nil {
			b.system = map[string]*SystemTable{}
		}
		b.system[t.Name] = st
	}
	if !b.bounded {
		e := sqlerr.New(sqlerr.FeatureNotSupported, t.P, "%s cannot be read by a continuous job: it is a snapshot of the engine's state, taken when a SELECT is planned", qualified)
		e.Hint = "Query it with SELECT."
		return nil, e
	}
	n := &valuesNode{label: qualified}
	for _, c := range st.Columns {
		dt, err := c.Type.Arrow()
		if err != nil {
			return nil, sqlerr.New(sqlerr.InternalError, sqlerr.NoPos, "column %s of %s: %v", c.Name, qualified, err)
		}
		n.out = append(n.out, Col{Name: c.Name, Table: alias, Type: dt})
	}
	for _, r := range st.Rows {
		if len(r) != len(n.out) {
			return nil, sqlerr.New(sqlerr.InternalError, sqlerr.NoPos, "%s: a row of %d values for %d columns", qualified, len(r), len(n.out))
		}
		row := make([]expr.Expr, len(r))
		for j, v := range r {
			sc, err := systemScalar(v, n.out[j].Type)
			if err != nil {
				return nil, sqlerr.New(sqlerr.InternalError, sqlerr.NoPos, "%s.%s: %v", qualified, n.out[j].Name, err)
			}
			row[j] = expr.Literal(sc)
		}
		n.rows = append(n.rows, row)
	}
	return n, nil
}

// systemScalar is one value of a system relation as a scalar of its column's type.
func systemScalar(v any, dt arrow.DataType) (scalar.Scalar, error) {
	switch v := v.(type) {
	case nil:
		return scalar.MakeNullScalar(dt), nil
	case string, bool, int64, float64:
		if sc := scalar.MakeScalar(v); arrow.TypeEqual(sc.DataType(), dt) {
			return sc, nil
		}
	case time.Time:
		if dt.ID() == arrow.TIMESTAMP {
			return scalar.NewTimestampScalar(arrow.Timestamp(v.UnixMicro()), dt), nil
		}
	}
	return nil, fmt.Errorf("value %v (%T) for a column of type %s", v, v, dt)
}
