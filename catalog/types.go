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
	// The nested types: ROW's fields, ARRAY's element, MAP's key and value.
	Fields []RowField `json:"fields,omitempty"`
	Elem   *Type      `json:"elem,omitempty"`
	Key    *Type      `json:"key,omitempty"`
	Value  *Type      `json:"value,omitempty"`
}

// RowField is one field of a ROW type.
type RowField struct {
	Name string `json:"name"`
	Type Type   `json:"type"`
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
	OIDRecord      = 2249 // a ROW value (Postgres\' anonymous record)
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
	case "ROW":
		if len(t.Fields) == 0 {
			return nil, fmt.Errorf("a ROW type needs at least one field")
		}
		fields := make([]arrow.Field, len(t.Fields))
		for i, f := range t.Fields {
			ft, err := f.Type.Arrow()
			if err != nil {
				return nil, err
			}
			fields[i] = arrow.Field{Name: f.Name, Type: ft, Nullable: true}
		}
		return arrow.StructOf(fields...), nil
	case "ARRAY":
		if t.Elem == nil {
			return nil, fmt.Errorf("an ARRAY type needs its element type")
		}
		et, err := t.Elem.Arrow()
		if err != nil {
			return nil, err
		}
		return arrow.ListOf(et), nil
	case "MAP":
		if t.Key == nil || t.Value == nil {
			return nil, fmt.Errorf("a MAP type needs its key and value types")
		}
		kt, err := t.Key.Arrow()
		if err != nil {
			return nil, err
		}
		switch kt.(type) {
		case *arrow.StructType, *arrow.ListType, *arrow.MapType:
			return nil, fmt.Errorf("a MAP key cannot be of type %s", t.Key)
		}
		vt, err := t.Value.Arrow()
		if err != nil {
			return nil, err
		}
		return arrow.MapOf(kt, vt), nil
	}
	return nil, fmt.Errorf("type %q does not exist", strings.ToLower(t.Name))
}

// String is the type as DESCRIBE shows it: BIGINT, VARCHAR, VARCHAR(20), TIMESTAMP(3), DECIMAL(10,2),
// ROW<a INT, b VARCHAR>, ARRAY<INT>, MAP<VARCHAR, INT> (Flink's spelling, which the parser reads back).
func (t Type) String() string {
	switch t.Name {
	case "ROW":
		parts := make([]string, len(t.Fields))
		for i, f := range t.Fields {
			parts[i] = quoteField(f.Name) + " " + f.Type.String()
		}
		return "ROW<" + strings.Join(parts, ", ") + ">"
	case "ARRAY":
		if t.Elem != nil {
			return "ARRAY<" + t.Elem.String() + ">"
		}
	case "MAP":
		if t.Key != nil && t.Value != nil {
			return "MAP<" + t.Key.String() + ", " + t.Value.String() + ">"
		}
	}
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

// quoteField quotes a ROW field name that is not a plain lower-case word.
func quoteField(n string) string {
	for i, c := range n {
		if !(c >= 'a' && c <= 'z' || c == '_' || i > 0 && c >= '0' && c <= '9') {
			return `"` + strings.ReplaceAll(n, `"`, `""`) + `"`
		}
	}
	if n == "" {
		return `""`
	}
	return n
}

// TypeOf returns the SQL type of an Arrow type, for result columns the planner derived.
func TypeOf(dt arrow.DataType) Type {
	t := Type{Precision: -1, Scale: -1}
	switch dt.ID() {
	case arrow.STRUCT:
		t.Name = "ROW"
		for _, f := range dt.(*arrow.StructType).Fields() {
			t.Fields = append(t.Fields, RowField{Name: f.Name, Type: TypeOf(f.Type)})
		}
		return t
	case arrow.LIST:
		e := TypeOf(dt.(*arrow.ListType).Elem())
		t.Name, t.Elem = "ARRAY", &e
		return t
	case arrow.MAP:
		m := dt.(*arrow.MapType)
		k, v := TypeOf(m.KeyType()), TypeOf(m.ItemType())
		t.Name, t.Key, t.Value = "MAP", &k, &v
		return t
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
	case arrow.LIST:
		if oid, ok := arrayOIDs[OID(dt.(*arrow.ListType).Elem())]; ok {
			return oid
		}
		return OIDText
	case arrow.STRUCT:
		return OIDRecord
	case arrow.MAP:
		return OIDText
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

// arrayOIDs are the Postgres array types of element OIDs (int4[] is 1007, ...): an ARRAY column's OID.
var arrayOIDs = map[uint32]uint32{OIDBool: 1000, OIDBytea: 1001, OIDInt2: 1005, OIDInt4: 1007, OIDText: 1009,
	OIDVarchar: 1015, OIDInt8: 1016, OIDFloat4: 1021, OIDFloat8: 1022, OIDTimestamp: 1115, OIDDate: 1182,
	OIDTimestampTZ: 1185, OIDInterval: 1187, OIDNumeric: 1231, OIDRecord: 2287}
