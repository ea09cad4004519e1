package catalog

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
)

// Type is a SQL column type as declared: the canonical upper-case name (BOOLEAN, SMALLINT, INT, BIGINT, REAL,
// DOUBLE, DECIMAL, VARCHAR, TEXT, DATE, TIMESTAMP, TIMESTAMPTZ, INTERVAL, BYTEA) and its precision and scale, -1
// when not given.
type Type struct {
	Name      string `json:"name"`
	Precision int    `json:"precision"`
	Scale     int    `json:"scale"`
}

// Postgres type OIDs of the SQL types (what pgwire's RowDescription sends).
const (
	OIDBool        = 16
	OIDBytea       = 17
	OIDInt8        = 20
	OIDInt2        = 21
	OIDInt4        = 23
	OIDText        = 25
	OIDFloat4      = 700
	OIDFloat8      = 701
	OIDVarchar     = 1043
	OIDDate        = 1082
	OIDTimestamp   = 1114
	OIDTimestampTZ = 1184
	OIDInterval    = 1186
	OIDNumeric     = 1700
	OIDUnknown     = 705
)

// TimestampType is the one physical type of every TIMESTAMP(p): microseconds since the epoch, no time zone. The
// declared precision is catalog metadata (DESCRIBE shows it), values keep microseconds.
var TimestampType = &arrow.TimestampType{Unit: arrow.Microsecond}

// TimestampTZType is TIMESTAMP WITH TIME ZONE: an instant, microseconds since the epoch in UTC (expr.TypeTimestampTZ).
var TimestampTZType = &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}

// IntervalType is the physical type of INTERVAL: a duration in microseconds (months are not supported).
var IntervalType = &arrow.DurationType{Unit: arrow.Microsecond}

// Arrow returns the Arrow type values of t have.
func (t Type) Arrow() (arrow.DataType, error) {
	switch t.Name {
	case "BOOLEAN":
		return arrow.FixedWidthTypes.Boolean, nil
	case "SMALLINT":
		return arrow.PrimitiveTypes.Int16, nil
	case "INT":
		return arrow.PrimitiveTypes.Int32, nil
	case "BIGINT":
		return arrow.PrimitiveTypes.Int64, nil
	case "REAL":
		return arrow.PrimitiveTypes.Float32, nil
	case "DOUBLE":
		return arrow.PrimitiveTypes.Float64, nil
	case "DECIMAL":
		p, s := t.Precision, t.Scale
		if p < 0 {
			p, s = 38, 10 // NUMERIC without a precision: Postgres' is unbounded; ours is the widest decimal128
		}
		if s < 0 {
			s = 0
		}
		if p < 1 || p > 38 || s > p {
			return nil, fmt.Errorf("invalid DECIMAL(%d,%d): precision must be 1..38 and scale 0..precision", p, s)
		}
		return &arrow.Decimal128Type{Precision: int32(p), Scale: int32(s)}, nil
	case "VARCHAR", "TEXT":
		return arrow.BinaryTypes.String, nil
	case "DATE":
		return arrow.FixedWidthTypes.Date32, nil
	case "TIMESTAMP":
		if t.Precision > 6 {
			return nil, fmt.Errorf("TIMESTAMP(%d) precision must be 0..6", t.Precision)
		}
		return TimestampType, nil
	case "TIMESTAMPTZ":
		if t.Precision > 6 {
			return nil, fmt.Errorf("TIMESTAMP(%d) WITH TIME ZONE precision must be 0..6", t.Precision)
		}
		return TimestampTZType, nil
	case "INTERVAL":
		return IntervalType, nil
	case "BYTEA":
		return arrow.BinaryTypes.Binary, nil
	}
	return nil, fmt.Errorf("type %q does not exist", strings.ToLower(t.Name))
}

// String is the type as DESCRIBE shows it: BIGINT, VARCHAR, VARCHAR(20), TIMESTAMP(3), DECIMAL(10,2).
func (t Type) String() string {
	switch {
	case t.Name == "DECIMAL" && t.Precision >= 0 && t.Scale >= 0:
		return fmt.Sprintf("DECIMAL(%d,%d)", t.Precision, t.Scale)
	case (t.Name == "DECIMAL" || t.Name == "VARCHAR" || t.Name == "TIMESTAMP") && t.Precision >= 0:
		return fmt.Sprintf("%s(%d)", t.Name, t.Precision)
	case t.Name == "TIMESTAMPTZ" && t.Precision >= 0:
		return fmt.Sprintf("TIMESTAMP(%d) WITH TIME ZONE", t.Precision)
	case t.Name == "TIMESTAMPTZ":
		return "TIMESTAMP WITH TIME ZONE"
	}
	return t.Name
}

// TypeOf returns the SQL type of an Arrow type, for result columns the planner derived.
func TypeOf(dt arrow.DataType) Type {
	t := Type{Precision: -1, Scale: -1}
	switch dt.ID() {
	case arrow.BOOL:
		t.Name = "BOOLEAN"
	case arrow.INT16, arrow.INT8:
		t.Name = "SMALLINT"
	case arrow.INT32:
		t.Name = "INT"
	case arrow.INT64:
		t.Name = "BIGINT"
	case arrow.FLOAT32:
		t.Name = "REAL"
	case arrow.FLOAT64:
		t.Name = "DOUBLE"
	case arrow.DECIMAL128:
		d := dt.(*arrow.Decimal128Type)
		t.Name, t.Precision, t.Scale = "DECIMAL", int(d.Precision), int(d.Scale)
	case arrow.STRING, arrow.LARGE_STRING:
		t.Name = "VARCHAR"
	case arrow.DATE32:
		t.Name = "DATE"
	case arrow.TIMESTAMP:
		t.Name = "TIMESTAMP"
		if dt.(*arrow.TimestampType).TimeZone != "" {
			t.Name = "TIMESTAMPTZ"
		}
	case arrow.DURATION:
		t.Name = "INTERVAL"
	case arrow.BINARY:
		t.Name = "BYTEA"
	default:
		t.Name = strings.ToUpper(dt.Name())
	}
	return t
}

// OID returns the Postgres type OID of an Arrow type.
func OID(dt arrow.DataType) uint32 {
	switch dt.ID() {
	case arrow.BOOL:
		return OIDBool
	case arrow.INT8, arrow.INT16:
		return OIDInt2
	case arrow.INT32:
		return OIDInt4
	case arrow.INT64:
		return OIDInt8
	case arrow.FLOAT32:
		return OIDFloat4
	case arrow.FLOAT64:
		return OIDFloat8
	case arrow.DECIMAL128:
		return OIDNumeric
	case arrow.STRING, arrow.LARGE_STRING:
		return OIDVarchar
	case arrow.DATE32:
		return OIDDate
	case arrow.TIMESTAMP:
		if dt.(*arrow.TimestampType).TimeZone != "" {
			return OIDTimestampTZ
		}
		return OIDTimestamp
	case arrow.DURATION:
		return OIDInterval
	case arrow.BINARY:
		return OIDBytea
	}
	return OIDUnknown
}

// TypeOfOID returns the Arrow type of a Postgres type OID a client declared for a parameter.
func TypeOfOID(oid uint32) (arrow.DataType, bool) {
	switch oid {
	case OIDBool:
		return arrow.FixedWidthTypes.Boolean, true
	case OIDInt2:
		return arrow.PrimitiveTypes.Int16, true
	case OIDInt4:
		return arrow.PrimitiveTypes.Int32, true
	case OIDInt8:
		return arrow.PrimitiveTypes.Int64, true
	case OIDFloat4:
		return arrow.PrimitiveTypes.Float32, true
	case OIDFloat8:
		return arrow.PrimitiveTypes.Float64, true
	case OIDNumeric:
		return &arrow.Decimal128Type{Precision: 38, Scale: 10}, true
	case OIDText, OIDVarchar, OIDUnknown, 1042: // 1042 bpchar
		return arrow.BinaryTypes.String, true
	case OIDDate:
		return arrow.FixedWidthTypes.Date32, true
	case OIDTimestamp:
		return TimestampType, true
	case OIDTimestampTZ:
		return TimestampTZType, true
	case OIDInterval:
		return IntervalType, true
	case OIDBytea:
		return arrow.BinaryTypes.Binary, true
	}
	return nil, false
}
