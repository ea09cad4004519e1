package parquet

import (
	"fmt"
	"math/big"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/parquet-go/parquet-go"

	"github.com/clinksql/clinksql/connectors/connectortest"
	"github.com/clinksql/clinksql/exec"
)

func pqNestedSchema() *arrow.Schema {
	person := arrow.StructOf(
		arrow.Field{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
		arrow.Field{Name: "age", Type: arrow.PrimitiveTypes.Int32, Nullable: true})
	return arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "person", Type: person, Nullable: true},
		{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
		{Name: "grid", Type: arrow.ListOf(arrow.ListOf(arrow.PrimitiveTypes.Float64)), Nullable: true},
		{Name: "attrs", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.ListOf(arrow.PrimitiveTypes.Int32)), Nullable: true},
		{Name: "people", Type: arrow.ListOf(person), Nullable: true},
		{Name: "deep", Type: arrow.StructOf(
			arrow.Field{Name: "z", Type: arrow.MapOf(arrow.PrimitiveTypes.Int32, person), Nullable: true},
			arrow.Field{Name: "d", Type: &arrow.Decimal128Type{Precision: 20, Scale: 2}, Nullable: true},
			arrow.Field{Name: "ts", Type: arrow.FixedWidthTypes.Timestamp_us, Nullable: true},
			arrow.Field{Name: "a", Type: arrow.FixedWidthTypes.Boolean, Nullable: true}), Nullable: true},
	}, nil)
}

// pqRandomValue appends a random value of b's type, NULL one time in four at every nullable level.
func pqRandomValue(r *rand.Rand, b array.Builder, nullable bool) {
	if nullable && r.IntN(4) == 0 {
		b.AppendNull()
		return
	}
	switch b := b.(type) {
	case *array.Int64Builder:
		b.Append(r.Int64N(1000) - 500)
	case *array.Int32Builder:
		b.Append(r.Int32N(100))
	case *array.Float64Builder:
		b.Append(float64(r.IntN(100)) / 4)
	case *array.StringBuilder:
		b.Append([]string{"", "a", "a b", "ünï"}[r.IntN(4)])
	case *array.Decimal128Builder:
		b.Append(decimal128.FromI64(r.Int64N(1 << 40)))
	case *array.TimestampBuilder:
		b.Append(arrow.Timestamp(r.Int64N(1 << 50)))
	case *array.BooleanBuilder:
		b.Append(r.IntN(2) == 0)
	case *array.StructBuilder:
		b.Append(true)
		for k := 0; k < b.NumField(); k++ {
			pqRandomValue(r, b.FieldBuilder(k), true)
		}
	case *array.MapBuilder:
		b.Append(true)
		for k := range r.IntN(3) {
			switch kb := b.KeyBuilder().(type) {
			case *array.StringBuilder:
				kb.Append(string(rune('k' + k)))
			case *array.Int32Builder:
				kb.Append(int32(k))
			}
			pqRandomValue(r, b.ItemBuilder(), true)
		}
	case *array.ListBuilder:
		b.Append(true)
		for range r.IntN(4) {
			pqRandomValue(r, b.ValueBuilder(), true)
		}
	default:
		panic("pqRandomValue: " + b.Type().String())
	}
}

// Nested columns written by the sink (groups, 3-level LISTs and MAPs, nested in each other, NULLs at every level)
// read back as the same values through parquet-go's generic reader (Schema.Reconstruct: the assembly from
// repetition and definition levels is the reader's, apart from the sink's shredding), with LIST and MAP logical
// types. (No other Parquet reader is on this machine: arrow-go's pqarrow would pull grpc into go.mod.)
func TestParquetSinkNested(t *testing.T) {
	mem := connectortest.CheckedAlloc(t)
	dir := t.TempDir()
	schema := pqNestedSchema()
	s := NewSink(SinkConfig{Path: dir, Schema: schema, RowGroupRows: 700})
	connectortest.Must(t, s.Open(connectortest.NewTask(mem, connectortest.TaskOpts{})))
	r := rand.New(rand.NewPCG(16, 2))
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	var want []string
	for batch := range 3 {
		for i := range 1000 {
			b.Field(0).(*array.Int64Builder).Append(int64(batch*1000 + i))
			for c := 1; c < schema.NumFields(); c++ {
				pqRandomValue(r, b.Field(c), true)
			}
		}
		rec := b.NewRecordBatch()
		for i := range int(rec.NumRows()) {
			var parts []string
			for c := range schema.NumFields() {
				parts = append(parts, arrowCanon(rec.Column(c), i))
			}
			want = append(want, strings.Join(parts, " | "))
		}
		connectortest.Must(t, s.Write(exec.Batch{Rec: rec}))
	}
	connectortest.Must(t, s.PreCommit(1))
	connectortest.Must(t, s.Commit(1))
	connectortest.Must(t, s.Close())
	path := filepath.Join(dir, "j1-sink-0-1.parquet")

	// parquet-go's reader: the logical types, and every row.
	pf := openPQFile(t, path)
	if pf.NumRows() != int64(len(want)) || len(pf.RowGroups()) != 5 {
		t.Fatalf("%d rows in %d row groups", pf.NumRows(), len(pf.RowGroups()))
	}
	logical := map[string]string{}
	for _, fd := range pf.Schema().Fields() {
		if lt := fd.Type().LogicalType(); lt != nil {
			logical[fd.Name()] = lt.String()
		}
	}
	if logical["tags"] != "LIST" || logical["grid"] != "LIST" || logical["attrs"] != "MAP" || logical["people"] != "LIST" {
		t.Errorf("logical types %v", logical)
	}
	n := 0
	for _, rg := range pf.RowGroups() {
		rows := rg.Rows()
		buf := make([]parquet.Row, 64)
		for {
			k, err := rows.ReadRows(buf)
			for _, row := range buf[:k] {
				m := map[string]any{}
				connectortest.Must(t, pf.Schema().Reconstruct(&m, row))
				var parts []string
				for _, f := range schema.Fields() {
					parts = append(parts, goCanon(reflect.ValueOf(m[f.Name]), f.Type))
				}
				if got := strings.Join(parts, " | "); got != want[n] {
					t.Fatalf("row %d through parquet-go:\n got %s\nwant %s", n, got, want[n])
				}
				n++
			}
			if err != nil {
				break
			}
		}
		rows.Close()
	}
	if n != len(want) {
		t.Fatalf("parquet-go read %d rows, want %d", n, len(want))
	}
}

// arrowCanon and goCanon write a value in one canonical text, from an Arrow array and from what parquet-go's
// Reconstruct makes of a row (maps, slices, and for a MAP's values pointers to structs tagged with the Parquet
// names), so the two can be compared: ROWs as (a,b), lists as [a,b], maps as {k:v,...} sorted by key, NULL.
func arrowCanon(arr arrow.Array, i int) string {
	if arr.IsNull(i) {
		return "NULL"
	}
	switch a := arr.(type) {
	case *array.Struct:
		var parts []string
		for k := 0; k < a.NumField(); k++ {
			parts = append(parts, arrowCanon(a.Field(k), i))
		}
		return "(" + strings.Join(parts, ",") + ")"
	case *array.Map:
		lo, hi := a.ValueOffsets(i)
		var parts []string
		for j := int(lo); j < int(hi); j++ {
			parts = append(parts, arrowCanon(a.Keys(), j)+":"+arrowCanon(a.Items(), j))
		}
		slices.Sort(parts)
		return "{" + strings.Join(parts, ",") + "}"
	case *array.List:
		lo, hi := a.ValueOffsets(i)
		var parts []string
		for j := int(lo); j < int(hi); j++ {
			parts = append(parts, arrowCanon(a.ListValues(), j))
		}
		return "[" + strings.Join(parts, ",") + "]"
	case *array.Decimal128:
		return strconv.FormatFloat(a.Value(i).ToFloat64(a.DataType().(*arrow.Decimal128Type).Scale), 'f', 2, 64)
	case *array.Timestamp:
		return strconv.FormatInt(int64(a.Value(i)), 10)
	}
	return arr.ValueStr(i)
}

func goCanon(v reflect.Value, t arrow.DataType) string {
	for v.IsValid() && (v.Kind() == reflect.Interface || v.Kind() == reflect.Pointer) {
		if v.IsNil() {
			return "NULL"
		}
		v = v.Elem()
	}
	if !v.IsValid() {
		return "NULL"
	}
	switch t := t.(type) {
	case *arrow.StructType:
		var parts []string
		for _, f := range t.Fields() {
			parts = append(parts, goCanon(goField(v, f.Name), f.Type))
		}
		return "(" + strings.Join(parts, ",") + ")"
	case *arrow.MapType:
		var parts []string
		iter := v.MapRange()
		for iter.Next() {
			k := iter.Key()
			for k.Kind() == reflect.Interface {
				k = k.Elem()
			}
			ks := fmt.Sprint(k.Interface())
			if t.KeyType().ID() == arrow.INT32 && k.Kind() == reflect.String {
				ks = strconv.Itoa(int([]rune(k.String())[0])) // an int key of a Go map of string keys: string(rune(k))
			}
			parts = append(parts, ks+":"+goCanon(iter.Value(), t.ItemType()))
		}
		slices.Sort(parts)
		return "{" + strings.Join(parts, ",") + "}"
	case *arrow.ListType:
		if v.Kind() == reflect.Struct { // the 3-level form as a struct: list.element
			v = goField(v, "list")
		}
		var parts []string
		for j := 0; j < v.Len(); j++ {
			e := v.Index(j)
			for e.Kind() == reflect.Interface {
				e = e.Elem()
			}
			if e.Kind() == reflect.Struct && t.Elem().ID() != arrow.STRUCT {
				e = goField(e, "element")
			}
			parts = append(parts, goCanon(e, t.Elem()))
		}
		return "[" + strings.Join(parts, ",") + "]"
	case *arrow.Decimal128Type:
		if bf, ok := v.Interface().(big.Float); ok {
			f, _ := bf.Float64()
			return strconv.FormatFloat(f, 'f', 2, 64)
		}
		return strconv.FormatFloat(v.Convert(reflect.TypeOf(float64(0))).Float(), 'f', 2, 64)
	case *arrow.Float64Type:
		return strconv.FormatFloat(v.Float(), 'g', -1, 64)
	}
	if v.Kind() == reflect.Slice { // BYTE_ARRAY as []byte
		return string(v.Bytes())
	}
	return fmt.Sprint(v.Interface())
}

// goField is the field or map entry named name (a struct's field by its parquet tag).
func goField(v reflect.Value, name string) reflect.Value {
	for v.Kind() == reflect.Interface || v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return reflect.Value{}
		}
		v = v.Elem()
	}
	switch v.Kind() {
	case reflect.Map:
		return v.MapIndex(reflect.ValueOf(name))
	case reflect.Struct:
		for k := 0; k < v.NumField(); k++ {
			if tag, _, _ := strings.Cut(v.Type().Field(k).Tag.Get("parquet"), ","); tag == name {
				return v.Field(k)
			}
		}
	}
	return reflect.Value{}
}
