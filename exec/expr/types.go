package expr

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/clinksql/clinksql/sqlerr"
)

// TypeName is the Postgres name of the SQL type of t, as error messages print it ("bigint", "text",
// "timestamp without time zone").
func TypeName(t arrow.DataType) string {
	switch t.ID() {
	case arrow.NULL:
		return "unknown"
	case arrow.BOOL:
		return "boolean"
	case arrow.INT8:
		return "tinyint"
	case arrow.INT16:
		return "smallint"
	case arrow.INT32:
		return "integer"
	case arrow.INT64:
		return "bigint"
	case arrow.FLOAT32:
		return "real"
	case arrow.FLOAT64:
		return "double precision"
	case arrow.DECIMAL128:
		return "numeric"
	case arrow.STRING, arrow.LARGE_STRING:
		return "text"
	case arrow.BINARY, arrow.LARGE_BINARY:
		return "bytea"
	case arrow.DATE32:
		return "date"
	case arrow.TIMESTAMP:
		if t.(*arrow.TimestampType).TimeZone != "" {
			return "timestamp with time zone"
		}
		return "timestamp without time zone"
	case arrow.DURATION:
		return "interval"
	case arrow.LIST:
		return TypeName(t.(*arrow.ListType).Elem()) + "[]"
	case arrow.MAP:
		m := t.(*arrow.MapType)
		return "map<" + TypeName(m.KeyType()) + ", " + TypeName(m.ItemType()) + ">"
	case arrow.STRUCT:
		var parts []string
		for _, f := range t.(*arrow.StructType).Fields() {
			parts = append(parts, f.Name+" "+TypeName(f.Type))
		}
		return "row<" + strings.Join(parts, ", ") + ">"
	}
	return t.String()
}

// SQLTypeString is a short SQL spelling of t for EXPLAIN and CAST rendering (BIGINT, DECIMAL(10,2), TIMESTAMP).
func SQLTypeString(t arrow.DataType) string {
	switch t.ID() {
	case arrow.DECIMAL128:
		d := t.(*arrow.Decimal128Type)
		return fmt.Sprintf("DECIMAL(%d,%d)", d.Precision, d.Scale)
	case arrow.TIMESTAMP:
		return "TIMESTAMP"
	case arrow.FLOAT64:
		return "DOUBLE"
	case arrow.STRING:
		return "VARCHAR"
	}
	return strings.ToUpper(TypeName(t))
}

func isNull(t arrow.DataType) bool   { return t.ID() == arrow.NULL }
func isString(t arrow.DataType) bool { return t.ID() == arrow.STRING }
func isBool(t arrow.DataType) bool   { return t.ID() == arrow.BOOL }
func isDecimal(t arrow.DataType) bool {
	return t.ID() == arrow.DECIMAL128
}
func isTimestamp(t arrow.DataType) bool { return t.ID() == arrow.TIMESTAMP }
func isInterval(t arrow.DataType) bool  { return t.ID() == arrow.DURATION }
func isDate(t arrow.DataType) bool      { return t.ID() == arrow.DATE32 }

func isInteger(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64:
		return true
	}
	return false
}

func isFloat(t arrow.DataType) bool { return t.ID() == arrow.FLOAT32 || t.ID() == arrow.FLOAT64 }

func isNumeric(t arrow.DataType) bool { return isInteger(t) || isFloat(t) || isDecimal(t) }

// intDigits is the precision of the DECIMAL an integer type converts to exactly.
func intDigits(t arrow.DataType) int32 {
	switch t.ID() {
	case arrow.INT8:
		return 3
	case arrow.INT16:
		return 5
	case arrow.INT32:
		return 10
	}
	return 19
}

// asDecimal is the DECIMAL type an exact numeric type converts to without loss.
func asDecimal(t arrow.DataType) *arrow.Decimal128Type {
	if d, ok := t.(*arrow.Decimal128Type); ok {
		return d
	}
	return &arrow.Decimal128Type{Precision: intDigits(t), Scale: 0}
}

func intRank(t arrow.DataType) int {
	switch t.ID() {
	case arrow.INT8:
		return 0
	case arrow.INT16:
		return 1
	case arrow.INT32:
		return 2
	}
	return 3
}

// CommonNumeric is the type two numeric types are compared or combined in: the wider integer; DECIMAL when a
// DECIMAL meets an integer or DECIMAL (scale the larger of the two, enough integer digits for both, at most 38
// digits); DOUBLE when a float meets anything else, REAL only with REAL. nil when either is not numeric.
func CommonNumeric(a, b arrow.DataType) arrow.DataType {
	if !isNumeric(a) || !isNumeric(b) {
		return nil
	}
	switch {
	case isFloat(a) || isFloat(b):
		if a.ID() == arrow.FLOAT32 && b.ID() == arrow.FLOAT32 {
			return TypeReal
		}
		return TypeDouble
	case isDecimal(a) || isDecimal(b):
		da, db := asDecimal(a), asDecimal(b)
		s := max(da.Scale, db.Scale)
		ip := max(da.Precision-da.Scale, db.Precision-db.Scale)
		return TypeDecimal(min(38, ip+s), s)
	}
	if intRank(a) >= intRank(b) {
		return a
	}
	return b
}

// commonType unifies the types of CASE branches, COALESCE, IN lists, GREATEST/LEAST and comparison operands:
// NULL adopts the other type; numerics promote; DATE widens to TIMESTAMP; TEXT meets TEXT. An untyped string
// literal meeting a temporal, numeric or boolean type is handled by the callers (coerceConst).
func commonType(a, b arrow.DataType) (arrow.DataType, bool) {
	switch {
	case isNull(a):
		return b, true
	case isNull(b):
		return a, true
	case arrow.TypeEqual(a, b):
		return a, true
	}
	if t := CommonNumeric(a, b); t != nil {
		return t, true
	}
	if IsTimestampTZ(a) || IsTimestampTZ(b) {
		if IsTimestampTZ(a) && IsTimestampTZ(b) {
			return TypeTimestampTZ, true
		}
		return nil, false // a TIMESTAMP or DATE meets an instant: only in a zone (the planner's)
	}
	if (isDate(a) && isTimestamp(b)) || (isTimestamp(a) && isDate(b)) {
		return TypeTimestamp, true
	}
	if isTimestamp(a) && isTimestamp(b) {
		return TypeTimestamp, true
	}
	return nil, false
}

// coerce converts e to t for an operator or function argument: nothing when it already has t, a typed NULL for
// the NULL literal, an implicit cast otherwise.
func coerce(e Expr, t arrow.DataType) (Expr, error) {
	if arrow.TypeEqual(e.Type(), t) {
		return e, nil
	}
	if l, ok := e.(*literal); ok && isNull(l.Type()) {
		return NullOf(t), nil
	}
	return Cast(e, t)
}

// unify coerces all of es to one common type. A string constant among values of a non-string type is cast to
// that type (as Postgres resolves an unknown literal). what names the construct for the 42804 error.
func unify(what string, es []Expr) ([]Expr, arrow.DataType, error) {
	var t arrow.DataType = arrow.Null
	for _, e := range es {
		if isStringConst(e) {
			continue
		}
		c, ok := commonType(t, e.Type())
		if !ok {
			return nil, nil, sqlerr.New(sqlerr.DatatypeMismatch, sqlerr.NoPos, "%s types %s and %s cannot be matched", what, TypeName(t), TypeName(e.Type()))
		}
		t = c
	}
	if isNull(t) {
		for _, e := range es {
			if isStringConst(e) {
				t = TypeText
			}
		}
	}
	out := make([]Expr, len(es))
	for i, e := range es {
		c, err := coerce(e, t)
		if err != nil {
			return nil, nil, err
		}
		out[i] = c
	}
	return out, t, nil
}

func isStringConst(e Expr) bool {
	l, ok := e.(*literal)
	return ok && isString(l.Type())
}

// opNotExist is Postgres' 42883 for a binary operator.
func opNotExist(op string, a, b arrow.DataType) *sqlerr.Error {
	return sqlerr.New(sqlerr.UndefinedFunction, sqlerr.NoPos, "operator does not exist: %s %s %s", TypeName(a), op, TypeName(b))
}

// fnNotExist is Postgres' 42883 for a function call.
func fnNotExist(name string, args []Expr) *sqlerr.Error {
	names := make([]string, len(args))
	for i, a := range args {
		names[i] = TypeName(a.Type())
	}
	return sqlerr.New(sqlerr.UndefinedFunction, sqlerr.NoPos, "function %s(%s) does not exist", name, strings.Join(names, ", "))
}
