package catalog

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

func TestNestedTypes(t *testing.T) {
	i32 := Type{Name: "INT", Precision: -1, Scale: -1}
	str := Type{Name: "VARCHAR", Precision: -1, Scale: -1}
	row := Type{Name: "ROW", Precision: -1, Scale: -1, Fields: []RowField{{Name: "id", Type: i32}, {Name: "Name", Type: str}}}
	arr := Type{Name: "ARRAY", Precision: -1, Scale: -1, Elem: &row}
	m := Type{Name: "MAP", Precision: -1, Scale: -1, Key: &str, Value: &arr}
	dt, err := m.Arrow()
	if err != nil {
		t.Fatal(err)
	}
	want := arrow.MapOf(arrow.BinaryTypes.String, arrow.ListOf(arrow.StructOf(
		arrow.Field{Name: "id", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		arrow.Field{Name: "Name", Type: arrow.BinaryTypes.String, Nullable: true})))
	if !arrow.TypeEqual(dt, want) {
		t.Fatalf("Arrow: %s, want %s", dt, want)
	}
	if got := m.String(); got != `MAP<VARCHAR, ARRAY<ROW<id INT, "Name" VARCHAR>>>` {
		t.Errorf("String: %s", got)
	}
	if back := TypeOf(dt); !reflect.DeepEqual(back, m) {
		t.Errorf("TypeOf: %+v, want %+v", back, m)
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var r Type
	if err := json.Unmarshal(b, &r); err != nil || !reflect.DeepEqual(r, m) {
		t.Errorf("JSON round trip: %+v (%v)", r, err)
	}
	if OID(dt) != OIDText || OID(arrow.ListOf(arrow.PrimitiveTypes.Int64)) != 1016 || OID(arrow.StructOf()) != OIDRecord {
		t.Error("OIDs")
	}
	for _, bad := range []Type{{Name: "ROW"}, {Name: "ARRAY"}, {Name: "MAP", Key: &arr, Value: &str}} {
		if _, err := bad.Arrow(); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}
