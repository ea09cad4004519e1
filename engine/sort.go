package engine

import (
	"cmp"
	"math"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"

	"github.com/clinksql/clinksql/sql/planner"
)

// sortValue is one ORDER BY key of one row, typed so that numbers sort as numbers.
type sortValue struct {
	null bool
	i    int64
	f    float64
	s    string
	d    decimal128.Num
	kind uint8 // 0 int, 1 float, 2 string, 3 decimal
}

// sortValues extracts the ORDER BY keys of every row of rec.
func sortValues(rec arrow.RecordBatch, order []planner.OrderKey) [][]sortValue {
	n := int(rec.NumRows())
	out := make([][]sortValue, n)
	for i := range out {
		out[i] = make([]sortValue, len(order))
	}
	for k, o := range order {
		col := rec.Column(o.Col)
		for i := 0; i < n; i++ {
			v := &out[i][k]
			if col.IsNull(i) {
				v.null = true
				continue
			}
			switch a := col.(type) {
			case *array.Int8:
				v.i = int64(a.Value(i))
			case *array.Int16:
				v.i = int64(a.Value(i))
			case *array.Int32:
				v.i = int64(a.Value(i))
			case *array.Int64:
				v.i = a.Value(i)
			case *array.Timestamp:
				v.i = int64(a.Value(i))
			case *array.Date32:
				v.i = int64(a.Value(i))
			case *array.Duration:
				v.i = int64(a.Value(i))
			case *array.Boolean:
				if a.Value(i) {
					v.i = 1
				}
			case *array.Float32:
				v.kind, v.f = 1, float64(a.Value(i))
			case *array.Float64:
				v.kind, v.f = 1, a.Value(i)
			case *array.String:
				v.kind, v.s = 2, a.Value(i)
			case *array.Binary:
				v.kind, v.s = 2, string(a.Value(i))
			case *array.Decimal128:
				v.kind, v.d = 3, a.Value(i)
			default:
				v.kind, v.s = 2, col.ValueStr(i)
			}
		}
	}
	return out
}

func compareValue(a, b sortValue) int {
	switch a.kind {
	case 1:
		// NaN sorts above every number, as in Postgres.
		switch {
		case math.IsNaN(a.f) && math.IsNaN(b.f):
			return 0
		case math.IsNaN(a.f):
			return 1
		case math.IsNaN(b.f):
			return -1
		}
		return cmp.Compare(a.f, b.f)
	case 2:
		return cmp.Compare(a.s, b.s)
	case 3:
		return a.d.Cmp(b.d)
	}
	return cmp.Compare(a.i, b.i)
}

// sortRows sorts rows by their keys (stable, so equal keys keep arrival order). NULLs sort last ascending and
// first descending unless NULLS FIRST/LAST says otherwise.
func sortRows(rows []collectedRow, order []planner.OrderKey) {
	slices.SortStableFunc(rows, func(x, y collectedRow) int {
		for k, o := range order {
			a, b := x.key[k], y.key[k]
			var c int
			switch {
			case a.null && b.null:
				c = 0
			case a.null:
				if o.NullsFirst {
					return -1
				}
				return 1
			case b.null:
				if o.NullsFirst {
					return 1
				}
				return -1
			default:
				c = compareValue(a, b)
				if o.Desc {
					c = -c
				}
			}
			if c != 0 {
				return c
			}
		}
		return 0
	})
}
