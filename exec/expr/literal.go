package expr

import (
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"
)

// Arrow types of the SQL types (DESIGN.md's data model). TIMESTAMP is always microseconds without a zone and
// INTERVAL a duration in microseconds.
var (
	TypeBool      arrow.DataType = arrow.FixedWidthTypes.Boolean
	TypeSmallint  arrow.DataType = arrow.PrimitiveTypes.Int16
	TypeInt       arrow.DataType = arrow.PrimitiveTypes.Int32
	TypeBigint    arrow.DataType = arrow.PrimitiveTypes.Int64
	TypeReal      arrow.DataType = arrow.PrimitiveTypes.Float32
	TypeDouble    arrow.DataType = arrow.PrimitiveTypes.Float64
	TypeText      arrow.DataType = arrow.BinaryTypes.String
	TypeBytea     arrow.DataType = arrow.BinaryTypes.Binary
	TypeDate      arrow.DataType = arrow.FixedWidthTypes.Date32
	TypeTimestamp arrow.DataType = &arrow.TimestampType{Unit: arrow.Microsecond}
	TypeInterval  arrow.DataType = &arrow.DurationType{Unit: arrow.Microsecond}
	TypeNull      arrow.DataType = arrow.Null
)

// TypeDecimal returns DECIMAL(p,s); p is clamped to [1, 38] and s to [0, p].
func TypeDecimal(p, s int32) arrow.DataType {
	p = max(1, min(p, 38))
	s = max(0, min(s, p))
	return &arrow.Decimal128Type{Precision: p, Scale: s}
}

type literal struct {
	sc scalar.Scalar
}

// Literal is a constant of sc's type (a NULL scalar for a typed NULL).
func Literal(sc scalar.Scalar) Expr { return &literal{sc: sc} }

// Null is the untyped NULL literal (arrow.Null): it adopts the type of what it meets.
func Null() Expr { return &literal{sc: scalar.MakeNullScalar(arrow.Null)} }

// NullOf is a NULL of type t.
func NullOf(t arrow.DataType) Expr { return &literal{sc: scalar.MakeNullScalar(t)} }

// Int64 is a BIGINT constant.
func Int64(v int64) Expr { return &literal{sc: scalar.NewInt64Scalar(v)} }

// Int32 is an INT constant.
func Int32(v int32) Expr { return &literal{sc: scalar.NewInt32Scalar(v)} }

// Float64 is a DOUBLE constant.
func Float64(v float64) Expr { return &literal{sc: scalar.NewFloat64Scalar(v)} }

// Bool is a BOOLEAN constant.
func Bool(v bool) Expr { return &literal{sc: scalar.NewBooleanScalar(v)} }

// String is a TEXT constant.
func String(v string) Expr { return &literal{sc: scalar.NewStringScalar(v)} }

// Timestamp is a TIMESTAMP constant in microseconds since the epoch.
func Timestamp(us int64) Expr {
	return &literal{sc: scalar.NewTimestampScalar(arrow.Timestamp(us), TypeTimestamp)}
}

// Interval is an INTERVAL constant in microseconds.
func Interval(us int64) Expr {
	return &literal{sc: scalar.NewDurationScalar(arrow.Duration(us), TypeInterval)}
}

// Date is a DATE constant in days since 1970-01-01.
func Date(days int32) Expr { return &literal{sc: scalar.NewDate32Scalar(arrow.Date32(days))} }

// Decimal parses a numeric literal ("0.908", "-12", "1e3") into a DECIMAL constant whose precision and scale are
// the literal's own, as Postgres types numeric constants: 0.908 is DECIMAL(3,3), 12.50 is DECIMAL(4,2).
func Decimal(text string) (Expr, error) {
	n, p, s, err := parseDecimal(text, -1)
	if err != nil {
		return nil, err
	}
	return &literal{sc: scalar.NewDecimal128Scalar(n, TypeDecimal(p, s))}, nil
}

// DecimalOf is a DECIMAL constant of the given unscaled value and type.
func DecimalOf(unscaled decimal128.Num, t *arrow.Decimal128Type) Expr {
	return &literal{sc: scalar.NewDecimal128Scalar(unscaled, t)}
}

func (l *literal) Type() arrow.DataType { return l.sc.DataType() }
func (l *literal) fallible() bool       { return false }
func (l *literal) Eval(ctx *Context, rec arrow.RecordBatch) (arrow.Array, error) {
	return evalTop(l, ctx, rec)
}
func (l *literal) eval(*evalCtx) (value, error) { return value{sc: l.sc}, nil }

func (l *literal) String() string {
	if !l.sc.IsValid() {
		if l.sc.DataType().ID() == arrow.NULL {
			return "NULL"
		}
		return "NULL::" + TypeName(l.sc.DataType())
	}
	txt := scalarText(l.sc)
	switch l.sc.DataType().ID() {
	case arrow.STRING, arrow.LARGE_STRING:
		return quoteString(txt)
	case arrow.BOOL, arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.DECIMAL128:
		return txt
	case arrow.FLOAT32, arrow.FLOAT64:
		if _, err := strconv.ParseFloat(txt, 64); err == nil && !strings.ContainsAny(txt, "IN") {
			return txt
		}
	case arrow.TIMESTAMP:
		return "TIMESTAMP " + quoteString(txt)
	case arrow.DATE32:
		return "DATE " + quoteString(txt)
	case arrow.DURATION:
		return "INTERVAL " + quoteString(txt)
	}
	return quoteString(txt) + "::" + TypeName(l.sc.DataType())
}

func quoteString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// scalarText is the Postgres text form of a valid scalar.
func scalarText(sc scalar.Scalar) string {
	arr, err := scalar.MakeArrayFromScalar(sc, 1, memory.DefaultAllocator)
	if err != nil {
		return sc.String()
	}
	defer arr.Release()
	app, err := textAppender(arr)
	if err != nil {
		return sc.String()
	}
	return string(app(nil, 0))
}

// IsConstant reports whether e is a constant (a literal, or a call the binder folded).
func IsConstant(e Expr) bool {
	_, ok := e.(*literal)
	return ok
}

// ConstantValue returns the scalar of a constant expression.
func ConstantValue(e Expr) (scalar.Scalar, bool) {
	if l, ok := e.(*literal); ok {
		return l.sc, true
	}
	return nil, false
}

// ConstantInt64 returns the raw int64 of a constant of an integer, TIMESTAMP (µs), INTERVAL (µs) or DATE (days)
// type; null reports a NULL constant. ok is false for anything else.
func ConstantInt64(e Expr) (v int64, null, ok bool) {
	l, isLit := e.(*literal)
	if !isLit {
		return 0, false, false
	}
	switch l.sc.DataType().ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.TIMESTAMP, arrow.DURATION, arrow.DATE32:
	default:
		return 0, false, false
	}
	if !l.sc.IsValid() {
		return 0, true, true
	}
	return scalarInt64(l.sc), false, true
}

// ConstantString returns the value of a TEXT constant.
func ConstantString(e Expr) (v string, null, ok bool) {
	l, isLit := e.(*literal)
	if !isLit || l.sc.DataType().ID() != arrow.STRING {
		return "", false, false
	}
	if !l.sc.IsValid() {
		return "", true, true
	}
	return scalarString(l.sc), false, true
}

// ---- Go values of scalars (bind time and per-batch setup only, never per row) ----

func scalarInt64(sc scalar.Scalar) int64 {
	switch s := sc.(type) {
	case *scalar.Int8:
		return int64(s.Value)
	case *scalar.Int16:
		return int64(s.Value)
	case *scalar.Int32:
		return int64(s.Value)
	case *scalar.Int64:
		return s.Value
	case *scalar.Timestamp:
		return int64(s.Value)
	case *scalar.Duration:
		return int64(s.Value)
	case *scalar.Date32:
		return int64(s.Value)
	case *scalar.Uint8:
		return int64(s.Value)
	case *scalar.Uint16:
		return int64(s.Value)
	case *scalar.Uint32:
		return int64(s.Value)
	case *scalar.Uint64:
		return int64(s.Value)
	}
	return 0
}

func scalarString(sc scalar.Scalar) string {
	switch s := sc.(type) {
	case *scalar.String:
		if s.Value == nil {
			return ""
		}
		return string(s.Value.Bytes())
	case *scalar.Binary:
		if s.Value == nil {
			return ""
		}
		return string(s.Value.Bytes())
	}
	return ""
}

func scalarBool(sc scalar.Scalar) bool {
	if s, ok := sc.(*scalar.Boolean); ok {
		return s.Value
	}
	return false
}
