package parquet

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/parquet-go/parquet-go"

	"github.com/clinksql/clinksql/connectors/connectortest"
)

// Pins: nested values (ROWs, LISTs of LISTs, MAPs of LISTs, LISTs of ROWs, NULL and empty at every level) read back
// differently from what the sink wrote, rows lost or repeated at batch and row-group boundaries, and restores
// inside a row group (a seek in repeated columns) losing or repeating rows. The sink's files are checked against
// parquet-go's own reader in TestParquetSinkNested; this reads them back through the source.
func TestParquetSourceNested(t *testing.T) {
	mem := connectortest.CheckedAlloc(t)
	dir := t.TempDir()
	schema := pqNestedSchema()
	r := rand.New(rand.NewPCG(16, 3))
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	var txns [][]arrow.RecordBatch
	var all []arrow.RecordBatch
	id := 0
	for _, rows := range []int{1000, 0, 1, 900} {
		var txn []arrow.RecordBatch
		for rows > 0 {
			k := min(rows, 400)
			for range k {
				b.Field(0).(*array.Int64Builder).Append(int64(id))
				id++
				for c := 1; c < schema.NumFields(); c++ {
					pqRandomValue(r, b.Field(c), true)
				}
			}
			rec := b.NewRecordBatch()
			rec.Retain()
			txn, all = append(txn, rec), append(all, rec)
			rows -= k
		}
		txns = append(txns, txn)
	}
	pqSinkFiles(t, mem, dir, schema, 300, txns...)
	want := connectortest.Concat(t, mem, schema, all)
	defer want.Release()

	src := openPQSource(t, mem, SourceConfig{Path: dir, Schema: schema, BatchRows: 97}, nil, 0, 1)
	recs, offsets := connectortest.DrainBounded(t, src, 97)
	connectortest.Must(t, src.Close())
	connectortest.RequireRestores(t, mem, schema, recs, offsets, id, func(_ int, off []byte, _ arrow.RecordBatch, _ int64) []arrow.RecordBatch {
		src := openPQSource(t, mem, SourceConfig{Path: dir, Schema: schema, BatchRows: 250}, off, 0, 1)
		rest, _ := connectortest.DrainBounded(t, src, 250)
		connectortest.Must(t, src.Close())
		return rest
	})
	src = openPQSource(t, mem, SourceConfig{Path: dir, Schema: schema}, nil, 0, 1)
	recs, _ = connectortest.DrainBounded(t, src, DefaultBatchRows)
	connectortest.Must(t, src.Close())
	got := connectortest.Concat(t, mem, schema, recs)
	defer got.Release()
	connectortest.RequireSameRecords(t, "read", want, got)

	// A projection of the nested columns: fields of a ROW in another order and some left out, a ROW inside a MAP
	// with one field, columns of the file not read at all.
	person := arrow.StructOf(arrow.Field{Name: "age", Type: arrow.PrimitiveTypes.Int64, Nullable: true})
	proj := arrow.NewSchema([]arrow.Field{
		{Name: "deep", Type: arrow.StructOf(
			arrow.Field{Name: "a", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
			arrow.Field{Name: "z", Type: arrow.MapOf(arrow.PrimitiveTypes.Int32, person), Nullable: true}), Nullable: true},
		{Name: "people", Type: arrow.ListOf(person), Nullable: true},
	}, nil)
	src = openPQSource(t, mem, SourceConfig{Path: dir, Schema: proj, BatchRows: 333}, nil, 0, 1)
	recs, _ = connectortest.DrainBounded(t, src, 333)
	connectortest.Must(t, src.Close())
	got2 := connectortest.Concat(t, mem, proj, recs)
	defer got2.Release()
	for i := range int(want.NumRows()) {
		for c, col := range []int{6, 5} {
			if g, w := arrowCanon(got2.Column(c), i), arrowCanonAs(want.Column(col), i, proj.Field(c).Type); g != w {
				t.Fatalf("row %d, %s projected:\n got %s\nwant %s", i, proj.Field(c).Name, g, w)
			}
		}
	}
}

// arrowCanonAs is arrowCanon of a value shown as type t, a projection of the array's type: a ROW's fields those
// of t, by name and in t's order.
func arrowCanonAs(arr arrow.Array, i int, t arrow.DataType) string {
	if arr.IsNull(i) {
		return "NULL"
	}
	var parts []string
	switch t := t.(type) {
	case *arrow.StructType:
		a := arr.(*array.Struct)
		for _, f := range t.Fields() {
			k, _ := a.DataType().(*arrow.StructType).FieldIdx(f.Name)
			parts = append(parts, arrowCanonAs(a.Field(k), i, f.Type))
		}
		return "(" + strings.Join(parts, ",") + ")"
	case *arrow.MapType:
		a := arr.(*array.Map)
		lo, hi := a.ValueOffsets(i)
		for j := int(lo); j < int(hi); j++ {
			parts = append(parts, arrowCanonAs(a.Keys(), j, t.KeyType())+":"+arrowCanonAs(a.Items(), j, t.ItemType()))
		}
		slices.Sort(parts)
		return "{" + strings.Join(parts, ",") + "}"
	case *arrow.ListType:
		a := arr.(*array.List)
		lo, hi := a.ValueOffsets(i)
		for j := int(lo); j < int(hi); j++ {
			parts = append(parts, arrowCanonAs(a.ListValues(), j, t.Elem()))
		}
		return "[" + strings.Join(parts, ",") + "]"
	}
	return arrowCanon(arr, i)
}

// The row of a file written by parquet-go's generic writer from Go structs, as another tool writes nested data:
// unannotated repeated fields (the legacy list form), a repeated group as a list's element, a 3-level LIST with
// required elements, an optional group, a MAP with required values, and a field the reader does not declare.
type pqForeignNested struct {
	ID    int64                `parquet:"id"`
	Reps  []int32              `parquet:"reps"`
	Items []pqForeignInner     `parquet:"items"`
	Tags  []string             `parquet:"tags,list"`
	Opt   *pqForeignInner      `parquet:"opt,optional"`
	M     map[string]int32     `parquet:"m"`
	Deep  [][]pqForeignInner   `parquet:"deep,list"`
	Skip  map[string][]float64 `parquet:"skip"`
	// Groups of one repeated field that the declared ARRAYs read as the legacy 2-level lists of the Parquet spec:
	// the repeated field is the element when it is a leaf, a group of several fields, or a group named "array".
	L1 struct {
		X []int32 `parquet:"x"`
	} `parquet:"l1"`
	L2 struct {
		E []pqForeignInner `parquet:"e"`
	} `parquet:"l2"`
	L3 struct {
		Array []struct {
			X int32 `parquet:"x"`
		} `parquet:"array"`
	} `parquet:"l3"`
}

type pqForeignInner struct {
	X     int32  `parquet:"x"`
	Extra string `parquet:"extra"`
}

// Pins: the legacy list forms, optional and required markings that differ from the declared nullability, and
// undeclared fields read wrongly (levels taken from the declared type instead of the file).
func TestParquetSourceForeignNested(t *testing.T) {
	mem := connectortest.CheckedAlloc(t)
	path := filepath.Join(t.TempDir(), "foreign.parquet")
	r := rand.New(rand.NewPCG(7, 7))
	inner := func() pqForeignInner { return pqForeignInner{X: r.Int32N(100), Extra: "e"} }
	var rows []pqForeignNested
	for i := range 2500 {
		row := pqForeignNested{ID: int64(i)}
		for range r.IntN(4) {
			row.Reps = append(row.Reps, r.Int32N(1000)-500)
			row.Items = append(row.Items, inner())
			row.Tags = append(row.Tags, fmt.Sprintf("t%d", r.IntN(9)))
		}
		if r.IntN(3) > 0 {
			v := inner()
			row.Opt = &v
		}
		if n := r.IntN(3); n > 0 {
			row.M = map[string]int32{}
			for k := range n {
				row.M[fmt.Sprintf("k%d", k)] = r.Int32N(10)
			}
		}
		for range r.IntN(3) {
			var l []pqForeignInner
			for range r.IntN(3) {
				l = append(l, inner())
			}
			row.Deep = append(row.Deep, l)
		}
		row.Skip = map[string][]float64{"a": {1, 2}}
		for j := range r.IntN(3) {
			row.L1.X = append(row.L1.X, int32(j))
			row.L2.E = append(row.L2.E, inner())
			row.L3.Array = append(row.L3.Array, struct {
				X int32 `parquet:"x"`
			}{int32(10 + j)})
		}
		rows = append(rows, row)
	}
	f, err := os.Create(path)
	connectortest.Must(t, err)
	w := parquet.NewGenericWriter[pqForeignNested](f, parquet.PageBufferSize(256), parquet.MaxRowsPerRowGroup(900))
	_, err = w.Write(rows)
	connectortest.Must(t, err)
	connectortest.Must(t, w.Close())
	connectortest.Must(t, f.Close())

	x := arrow.StructOf(arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Int64, Nullable: true})
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "reps", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64), Nullable: true},
		{Name: "items", Type: arrow.ListOf(x), Nullable: true},
		{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
		{Name: "opt", Type: x, Nullable: true},
		{Name: "m", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int32), Nullable: true},
		{Name: "deep", Type: arrow.ListOf(arrow.ListOf(x)), Nullable: true},
		{Name: "l1", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32), Nullable: true},
		{Name: "l2", Type: arrow.ListOf(x), Nullable: true},
		{Name: "l3", Type: arrow.ListOf(x), Nullable: true},
	}, nil)
	src := openPQSource(t, mem, SourceConfig{Path: path, Schema: schema, BatchRows: 300}, nil, 0, 1)
	recs, _ := connectortest.DrainBounded(t, src, 300)
	connectortest.Must(t, src.Close())
	got := connectortest.Concat(t, mem, schema, recs)
	defer got.Release()
	if int(got.NumRows()) != len(rows) {
		t.Fatalf("%d rows, want %d", got.NumRows(), len(rows))
	}
	innerCanon := func(v pqForeignInner) string { return fmt.Sprintf("(%d)", v.X) }
	list := func(n int, f func(int) string) string {
		parts := make([]string, n)
		for i := range parts {
			parts[i] = f(i)
		}
		return "[" + strings.Join(parts, ",") + "]"
	}
	for i, row := range rows {
		// An unannotated repeated field or a required LIST is never NULL: nil is an empty list.
		opt := "NULL"
		if row.Opt != nil {
			opt = innerCanon(*row.Opt)
		}
		var m []string
		for k, v := range row.M {
			m = append(m, fmt.Sprintf("%s:%d", k, v))
		}
		slices.Sort(m)
		want := strings.Join([]string{
			fmt.Sprint(row.ID),
			list(len(row.Reps), func(j int) string { return fmt.Sprint(row.Reps[j]) }),
			list(len(row.Items), func(j int) string { return innerCanon(row.Items[j]) }),
			list(len(row.Tags), func(j int) string { return row.Tags[j] }),
			opt,
			"{" + strings.Join(m, ",") + "}",
			list(len(row.Deep), func(j int) string {
				return list(len(row.Deep[j]), func(k int) string { return innerCanon(row.Deep[j][k]) })
			}),
			list(len(row.L1.X), func(j int) string { return fmt.Sprint(row.L1.X[j]) }),
			list(len(row.L2.E), func(j int) string { return innerCanon(row.L2.E[j]) }),
			list(len(row.L3.Array), func(j int) string { return fmt.Sprintf("(%d)", row.L3.Array[j].X) }),
		}, " | ")
		var parts []string
		for c := range schema.NumFields() {
			parts = append(parts, arrowCanon(got.Column(c), i))
		}
		if g := strings.Join(parts, " | "); g != want {
			t.Fatalf("row %d:\n got %s\nwant %s", i, g, want)
		}
	}
	// Restores inside the small pages of the repeated columns.
	src = openPQSource(t, mem, SourceConfig{Path: path, Schema: schema, BatchRows: 97}, nil, 0, 1)
	recs, offsets := connectortest.DrainBounded(t, src, 97)
	connectortest.Must(t, src.Close())
	connectortest.RequireRestores(t, mem, schema, recs, offsets, len(rows), func(_ int, off []byte, _ arrow.RecordBatch, _ int64) []arrow.RecordBatch {
		src := openPQSource(t, mem, SourceConfig{Path: path, Schema: schema, BatchRows: 211}, off, 0, 1)
		rest, _ := connectortest.DrainBounded(t, src, 211)
		connectortest.Must(t, src.Close())
		return rest
	})

	// A NULL where the declared type is NOT NULL fails, naming the column: opt's x is required in the file but opt
	// itself is optional.
	strict := arrow.NewSchema([]arrow.Field{{Name: "opt", Type: arrow.StructOf(arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Int32}), Nullable: false}}, nil)
	src = openPQSource(t, mem, SourceConfig{Path: path, Schema: strict}, nil, 0, 1)
	if _, err := src.Produce(t.Context()); err == nil || !strings.Contains(err.Error(), "NULL in opt") {
		t.Errorf("NULL into a NOT NULL ROW: %v", err)
	}
	connectortest.Must(t, src.Close())
}
