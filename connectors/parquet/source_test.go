package parquet

import (
	"context"
	"fmt"
	"math"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/deprecated"

	"github.com/clinksql/clinksql/connectors/connectortest"
	"github.com/clinksql/clinksql/exec"
)

// pqSrcSchema covers every Arrow type the Parquet sink writes, nullable and not.
var pqSrcSchema = arrow.NewSchema([]arrow.Field{
	{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "i8", Type: arrow.PrimitiveTypes.Int8, Nullable: true},
	{Name: "i16", Type: arrow.PrimitiveTypes.Int16, Nullable: true},
	{Name: "i32", Type: arrow.PrimitiveTypes.Int32},
	{Name: "i64", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "u8", Type: arrow.PrimitiveTypes.Uint8, Nullable: true},
	{Name: "u16", Type: arrow.PrimitiveTypes.Uint16, Nullable: true},
	{Name: "u32", Type: arrow.PrimitiveTypes.Uint32, Nullable: true},
	{Name: "u64", Type: arrow.PrimitiveTypes.Uint64},
	{Name: "f4", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
	{Name: "f8", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "s_nn", Type: arrow.BinaryTypes.String},
	{Name: "bin", Type: arrow.BinaryTypes.Binary, Nullable: true},
	{Name: "d", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
	{Name: "ts_s", Type: &arrow.TimestampType{Unit: arrow.Second}, Nullable: true},
	{Name: "ts_ms", Type: &arrow.TimestampType{Unit: arrow.Millisecond}, Nullable: true},
	{Name: "ts_us", Type: &arrow.TimestampType{Unit: arrow.Microsecond}, Nullable: true},
	{Name: "ts_ns", Type: &arrow.TimestampType{Unit: arrow.Nanosecond}, Nullable: true},
	{Name: "tz_us", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
	{Name: "dec9", Type: &arrow.Decimal128Type{Precision: 9, Scale: 2}, Nullable: true},
	{Name: "dec18", Type: &arrow.Decimal128Type{Precision: 18, Scale: 3}, Nullable: true},
	{Name: "dec20", Type: &arrow.Decimal128Type{Precision: 20, Scale: 0}, Nullable: true},
	{Name: "dec38", Type: &arrow.Decimal128Type{Precision: 38, Scale: 4}},
}, nil)

// pqSrcEdges are values placed in the first rows, cycling: the extremes of each type.
var pqSrcEdges = map[string][]any{
	"b":     {true, false},
	"i8":    {int8(math.MinInt8), int8(math.MaxInt8), int8(0), int8(-1)},
	"i16":   {int16(math.MinInt16), int16(math.MaxInt16), int16(0)},
	"i32":   {int32(math.MinInt32), int32(math.MaxInt32), int32(0), int32(-1)},
	"i64":   {int64(math.MinInt64), int64(math.MaxInt64), int64(0), int64(-1)},
	"u8":    {uint8(0), uint8(math.MaxUint8)},
	"u16":   {uint16(0), uint16(math.MaxUint16), uint16(1 << 15)},
	"u32":   {uint32(0), uint32(math.MaxUint32), uint32(1 << 31)},
	"u64":   {uint64(0), uint64(math.MaxUint64), uint64(1 << 63)},
	"f4":    {float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.Copysign(0, -1)), float32(0), float32(math.SmallestNonzeroFloat32), float32(math.MaxFloat32), float32(-math.MaxFloat32)},
	"f8":    {math.NaN(), math.Inf(1), math.Inf(-1), math.Copysign(0, -1), math.SmallestNonzeroFloat64, math.MaxFloat64, -math.MaxFloat64},
	"s":     {"", "héllo, 世界", "a\x00b", strings.Repeat("x", 1000)},
	"s_nn":  {"", "z"},
	"bin":   {[]byte{}, []byte{0}, []byte{0xff, 0, 0xfe}, []byte(strings.Repeat("\x80", 300))},
	"d":     {arrow.Date32(-719162), arrow.Date32(2932896), arrow.Date32(0), arrow.Date32(-1)},
	"ts_s":  {arrow.Timestamp(math.MaxInt64 / 1000), arrow.Timestamp(math.MinInt64 / 1000), arrow.Timestamp(-62135596800), arrow.Timestamp(-1), arrow.Timestamp(0)},
	"ts_ms": {arrow.Timestamp(math.MinInt64), arrow.Timestamp(math.MaxInt64), arrow.Timestamp(-1), arrow.Timestamp(0)},
	"ts_us": {arrow.Timestamp(math.MinInt64), arrow.Timestamp(math.MaxInt64), arrow.Timestamp(-1), arrow.Timestamp(253402300799999999)},
	"ts_ns": {arrow.Timestamp(math.MinInt64), arrow.Timestamp(math.MaxInt64), arrow.Timestamp(-1)},
	"tz_us": {arrow.Timestamp(-1), arrow.Timestamp(0), arrow.Timestamp(1)},
	"dec9":  {decimal128.FromI64(999999999), decimal128.FromI64(-999999999), decimal128.FromI64(0), decimal128.FromI64(1)},
	"dec18": {decimal128.FromI64(999999999999999999), decimal128.FromI64(-999999999999999999), decimal128.FromI64(-1)},
	"dec20": {connectortest.Decimal("99999999999999999999"), connectortest.Decimal("-99999999999999999999"), decimal128.FromI64(0)},
	"dec38": {connectortest.Decimal(strings.Repeat("9", 38)), connectortest.Decimal("-" + strings.Repeat("9", 38)), decimal128.FromI64(-1)},
}

// pqSrcEdgeRows is how many first rows hold edge values; after them every third row is NULL in nullable columns.
const pqSrcEdgeRows = 32

// pqSrcBatch builds rows [from, to) of the all-types test data: a pure function of the row number.
func pqSrcBatch(mem memory.Allocator, from, to int) arrow.RecordBatch {
	return connectortest.TypedRows(mem, pqSrcSchema, pqSrcEdges, pqSrcEdgeRows, from, to, func(col string, r int, h uint64) any {
		switch col {
		case "s", "s_nn":
			return connectortest.TypedText(r, h, " ünïcødé")
		case "d":
			return arrow.Date32(int64(h%2000000) - 1000000)
		case "ts_s":
			return arrow.Timestamp(int64(h) >> 20)
		case "ts_ms", "ts_us", "ts_ns", "tz_us":
			return arrow.Timestamp(int64(h))
		}
		return connectortest.TypedValue(col, r, h)
	})
}

// pqSinkFiles commits one Parquet file per transaction through the sink's two-phase protocol: transaction i holds
// the given batches (taken over) and is staged at checkpoint i+1; a transaction without rows leaves no file.
func pqSinkFiles(t *testing.T, mem memory.Allocator, dir string, schema *arrow.Schema, rowGroup int64, txns ...[]arrow.RecordBatch) {
	t.Helper()
	connectortest.CommitTxns(t, mem, NewSink(SinkConfig{Path: dir, Schema: schema, RowGroupRows: rowGroup}), txns...)
}

// pqSrcRows returns the all-types rows [from, to) in batches of at most 700 rows.
func pqSrcRows(mem memory.Allocator, from, to int) []arrow.RecordBatch {
	return connectortest.BatchesOf(mem, from, to, 700, pqSrcBatch)
}

func openPQSource(t *testing.T, mem memory.Allocator, cfg SourceConfig, offset []byte, sub, par int) exec.Source {
	t.Helper()
	return connectortest.OpenSource(t, NewSource(cfg), connectortest.NewTask(mem, connectortest.TaskOpts{Op: "src", Sub: sub, Par: par}), offset)
}

// Pins: a value of any type the sink writes read back differently (or NULL-ness lost, or edge values mangled),
// rows lost or repeated at row-group and file boundaries, batches over BatchRows or spanning files.
func TestParquetSourceAllTypes(t *testing.T) {
	mem := connectortest.CheckedAlloc(t)
	dir := t.TempDir()
	// Files of 900, 1 and 1099 rows with row groups of 400, and a transaction without rows (no file).
	pqSinkFiles(t, mem, dir, pqSrcSchema, 400,
		pqSrcRows(mem, 0, 900), pqSrcRows(mem, 900, 901), nil, pqSrcRows(mem, 901, 2000))
	if n := len(connectortest.CommittedFiles(t, dir)); n != 3 {
		t.Fatalf("%d files, want 3", n)
	}
	want := pqSrcBatch(mem, 0, 2000)
	defer want.Release()
	for _, batch := range []int{1, 3, 0} {
		t.Run(fmt.Sprintf("batch%d", batch), func(t *testing.T) {
			limit := batch
			if limit == 0 {
				limit = DefaultBatchRows
			}
			src := openPQSource(t, mem, SourceConfig{Path: dir, Schema: pqSrcSchema, BatchRows: batch}, nil, 0, 1)
			recs, _ := connectortest.DrainBounded(t, src, limit)
			connectortest.Must(t, src.Close())
			// A batch never spans files: with the default size, one batch per file.
			if batch == 0 && len(recs) != 3 {
				t.Errorf("%d batches, want 3 (one per file)", len(recs))
			}
			got := connectortest.Concat(t, mem, pqSrcSchema, recs)
			defer got.Release()
			connectortest.RequireSameRecords(t, "read", want, got)
		})
	}
}

// Pins: a restore that loses or repeats rows (mid-page, mid-row-group, at group and file boundaries, after the
// end), and a restore that silently reads a changed file list or at another parallelism.
func TestParquetSourceRestore(t *testing.T) {
	mem := connectortest.CheckedAlloc(t)
	dir := t.TempDir()
	pqSinkFiles(t, mem, dir, pqSrcSchema, 500,
		pqSrcRows(mem, 0, 1200), nil, pqSrcRows(mem, 1200, 1201), pqSrcRows(mem, 1201, 2000))
	cfg := SourceConfig{Path: dir, Schema: pqSrcSchema, BatchRows: 97}
	src := openPQSource(t, mem, cfg, nil, 0, 1)
	recs, offsets := connectortest.DrainBounded(t, src, 97)
	connectortest.Must(t, src.Close())
	connectortest.RequireRestores(t, mem, pqSrcSchema, recs, offsets, 2000, func(_ int, off []byte, _ arrow.RecordBatch, _ int64) []arrow.RecordBatch {
		if len(off) > 24 {
			t.Errorf("offset of %d bytes", len(off))
		}
		// Restore with a different batch size: positions need not fall on the earlier batches' boundaries.
		src := openPQSource(t, mem, SourceConfig{Path: dir, Schema: pqSrcSchema, BatchRows: 250}, off, 0, 1)
		rest, _ := connectortest.DrainBounded(t, src, 250)
		connectortest.Must(t, src.Close())
		return rest
	})

	mid := offsets[5]
	connectortest.RequireOpenFails(t, NewSource(cfg), mid, connectortest.NewTask(mem, connectortest.TaskOpts{Sub: 0, Par: 2}), "parallelism", "restore at another parallelism")
	if err := NewSource(cfg).RestoreOffset(mid[:len(mid)-1]); err == nil {
		t.Error("truncated offset accepted")
	}

	files := connectortest.CommittedFiles(t, dir)
	connectortest.Must(t, os.WriteFile(filepath.Join(dir, "zzz.parquet"), []byte("x"), 0o644))
	connectortest.RequireOpenFails(t, NewSource(cfg), mid, connectortest.NewTask(mem, connectortest.TaskOpts{}), "added", "restore after a file was added")
	connectortest.Must(t, os.Remove(filepath.Join(dir, "zzz.parquet")))
	connectortest.Must(t, os.Remove(filepath.Join(dir, files[len(files)-1])))
	connectortest.RequireOpenFails(t, NewSource(cfg), mid, connectortest.NewTask(mem, connectortest.TaskOpts{}), "disappeared", "restore after a file disappeared")
}

// Pins: subtasks that read overlapping or missing files, or not file k, k+p, ... in order.
func TestParquetSourceSubtasks(t *testing.T) {
	mem := connectortest.CheckedAlloc(t)
	dir := t.TempDir()
	var txns [][]arrow.RecordBatch
	for f := range 5 {
		txns = append(txns, []arrow.RecordBatch{connectortest.KVBatch(mem, int64(10*f), int64(10*f+1)).Rec})
	}
	pqSinkFiles(t, mem, dir, connectortest.KVSchema, 0, txns...)
	connectortest.RequireSubtaskFiles(t, []int{1, 2, 3, 7}, func(sub, par int) []int64 {
		src := openPQSource(t, mem, SourceConfig{Path: dir, Schema: connectortest.KVSchema}, nil, sub, par)
		recs, _ := connectortest.DrainBounded(t, src, DefaultBatchRows)
		connectortest.Must(t, src.Close())
		return connectortest.IDs(recs)
	})
}

// Pins: a bad file that panics, reads as garbage or fails without saying which file; schema mismatches that pass
// Open; a NULL slipping into a NOT NULL column.
func TestParquetSourceErrors(t *testing.T) {
	mem := connectortest.CheckedAlloc(t)
	dir := t.TempDir()
	pqSinkFiles(t, mem, dir, connectortest.KVSchema, 0, []arrow.RecordBatch{connectortest.KVBatch(mem, 1, 2).Rec})
	good := filepath.Join(dir, "j1-sink-0-1.parquet")
	raw, err := os.ReadFile(good)
	connectortest.Must(t, err)

	// A garbled page header in the second column, the footer intact: the failure comes after the first column's
	// values were appended.
	pf, err := parquet.OpenFile(bytesReaderAt(raw), int64(len(raw)))
	connectortest.Must(t, err)
	garbled := slices.Clone(raw)
	page := int(pf.Metadata().RowGroups[0].Columns[1].MetaData.DataPageOffset)
	for i := 2; i < 10; i++ {
		garbled[page+i] ^= 0x5a
	}

	// Rows of the files before a bad one come out; then the error names the bad file.
	badFiles := map[string][]byte{
		"not-parquet": []byte("this is not a Parquet file at all"),
		"truncated":   raw[:len(raw)/2],
		"no-footer":   raw[:len(raw)-8],
		"empty":       nil,
		"garbled":     garbled,
	}
	for name, data := range badFiles {
		t.Run(name, func(t *testing.T) {
			d := t.TempDir()
			connectortest.Must(t, os.WriteFile(filepath.Join(d, "a.parquet"), raw, 0o644))
			connectortest.Must(t, os.WriteFile(filepath.Join(d, "b.parquet"), data, 0o644))
			src := openPQSource(t, mem, SourceConfig{Path: d, Schema: connectortest.KVSchema}, nil, 0, 1)
			defer src.Close()
			res, err := src.Produce(context.Background())
			connectortest.Must(t, err)
			if res.Batch.Rows() != 2 {
				t.Fatalf("%d rows from the good file", res.Batch.Rows())
			}
			res.Batch.Rec.Release()
			_, err = src.Produce(context.Background())
			if err == nil || !strings.Contains(err.Error(), filepath.Join(d, "b.parquet")) {
				t.Fatalf("bad file: %v", err)
			}
			t.Log(err)
			if _, err2 := src.Produce(context.Background()); err2 == nil {
				t.Error("Produce after an error succeeded")
			}
		})
	}

	open := func(schema *arrow.Schema) error {
		src := NewSource(SourceConfig{Path: dir, Schema: schema})
		defer src.Close()
		return src.Open(connectortest.NewTask(mem, connectortest.TaskOpts{}))
	}
	missing := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "ID", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)
	if err := open(missing); err == nil || !strings.Contains(err.Error(), `no column "ID"`) || !strings.Contains(err.Error(), good) {
		t.Errorf("missing column: %v", err)
	}
	wrong := arrow.NewSchema([]arrow.Field{{Name: "s", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)
	if err := open(wrong); err == nil || !strings.Contains(err.Error(), "column s: cannot read Parquet BYTE_ARRAY (STRING) as int64") ||
		!strings.Contains(err.Error(), good) {
		t.Errorf("wrong type: %v", err)
	}
	narrow := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int32, Nullable: true}}, nil)
	if err := open(narrow); err == nil || !strings.Contains(err.Error(), "INT64 (INT(64,true)) as int32: values might not fit") {
		t.Errorf("narrowing: %v", err)
	}
	list := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64)}}, nil)
	if err := open(list); err == nil || !strings.Contains(err.Error(), "id is not a Parquet LIST") {
		t.Errorf("list column over a flat one: %v", err)
	}
	flat := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.MapOf(arrow.PrimitiveTypes.Int64, arrow.Null)}}, nil)
	if err := open(flat); err == nil || !strings.Contains(err.Error(), "cannot be read from Parquet") {
		t.Errorf("a map of an unreadable type: %v", err)
	}
	src := NewSource(SourceConfig{Path: filepath.Join(dir, "nope"), Schema: connectortest.KVSchema})
	if err := src.Open(connectortest.NewTask(mem, connectortest.TaskOpts{})); err == nil {
		t.Error("a missing path opened")
	}

	// A NULL read into a NOT NULL column.
	nd := t.TempDir()
	b := array.NewRecordBuilder(mem, connectortest.KVSchema)
	b.Field(0).AppendNull()
	b.Field(1).(*array.StringBuilder).Append("x")
	pqSinkFiles(t, mem, nd, connectortest.KVSchema, 0, []arrow.RecordBatch{b.NewRecordBatch()})
	b.Release()
	notNull := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
	src = openPQSource(t, mem, SourceConfig{Path: nd, Schema: notNull}, nil, 0, 1)
	if _, err := src.Produce(context.Background()); err == nil || !strings.Contains(err.Error(), "column id: NULL in a NOT NULL column") {
		t.Errorf("NULL into NOT NULL: %v", err)
	}
	connectortest.Must(t, src.Close())
}

// Pins: directory listing that picks up staged, hidden or non-Parquet files or subdirectories; globs; a single
// file; a column subset in another order.
func TestParquetSourcePaths(t *testing.T) {
	mem := connectortest.CheckedAlloc(t)
	dir := t.TempDir()
	pqSinkFiles(t, mem, dir, connectortest.KVSchema, 0, []arrow.RecordBatch{connectortest.KVBatch(mem, 1).Rec}, []arrow.RecordBatch{connectortest.KVBatch(mem, 2).Rec})
	// A staged transaction (its checkpoint never completed) lies in _staging/j1/.
	s := NewSink(SinkConfig{Path: dir, Schema: connectortest.KVSchema})
	connectortest.Must(t, s.Open(connectortest.NewTask(mem, connectortest.TaskOpts{Completed: map[uint64]bool{1: true, 2: true}})))
	connectortest.Must(t, s.Write(connectortest.KVBatch(mem, 99)))
	connectortest.Must(t, s.PreCommit(3))
	connectortest.Must(t, s.Close())
	connectortest.Must(t, os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("x"), 0o644))
	connectortest.Must(t, os.WriteFile(filepath.Join(dir, ".hidden.parquet"), []byte("x"), 0o644))
	connectortest.Must(t, os.Mkdir(filepath.Join(dir, "sub"), 0o755))
	raw, err := os.ReadFile(filepath.Join(dir, "j1-sink-0-1.parquet"))
	connectortest.Must(t, err)
	connectortest.Must(t, os.WriteFile(filepath.Join(dir, "sub", "x.parquet"), raw, 0o644))

	ids := func(path string, schema *arrow.Schema) string {
		t.Helper()
		src := openPQSource(t, mem, SourceConfig{Path: path, Schema: schema}, nil, 0, 1)
		recs, _ := connectortest.DrainBounded(t, src, DefaultBatchRows)
		connectortest.Must(t, src.Close())
		var out []string
		for _, r := range recs {
			for i := range int(r.NumRows()) {
				var vals []string
				for c := range int(r.NumCols()) {
					vals = append(vals, r.Column(c).ValueStr(i))
				}
				out = append(out, strings.Join(vals, "/"))
			}
		}
		connectortest.ReleaseAll(recs)
		return strings.Join(out, " ")
	}
	for path, want := range map[string]string{
		dir:                             "1/v1 2/v2",
		filepath.Join(dir, "*.parquet"): "1/v1 2/v2",
		filepath.Join(dir, "j1-sink-0-[2-9].parquet"): "2/v2",
		filepath.Join(dir, "*", "*.parquet"):          "1/v1",   // sub/, not _staging/
		filepath.Join(dir, "_staging", "*", "*"):      "99/v99", // named explicitly
		filepath.Join(dir, "sub", "x.parquet"):        "1/v1",
		filepath.Join(dir, "*.csv"):                   "",
	} {
		if got := ids(path, connectortest.KVSchema); got != want {
			t.Errorf("%s: read %q, want %q", path, got, want)
		}
	}
	reversed := arrow.NewSchema([]arrow.Field{{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)
	if got := ids(dir, reversed); got != "v1/1 v2/2" {
		t.Errorf("reordered columns: %q", got)
	}
	if got := ids(dir, arrow.NewSchema(nil, nil)); got != " " {
		t.Errorf("no columns: %q", got)
	}
	src := NewSource(SourceConfig{Path: filepath.Join(dir, "missing", "*.parquet"), Schema: connectortest.KVSchema})
	if err := src.Open(connectortest.NewTask(mem, connectortest.TaskOpts{})); err == nil {
		t.Error("a glob under a missing directory opened")
	}
}

// pqForeignCol is a column of a file written directly with parquet-go, as another tool would, read into an Arrow
// type that differs from the sink's mapping.
type pqForeignCol struct {
	name   string
	node   parquet.Node
	target arrow.DataType
	// value returns row r's Parquet value (nil for NULL) and the Arrow value the source must produce.
	value func(r int) (any, any)
}

func pqForeignCols() []pqForeignCol {
	dec := func(s string) any { return connectortest.Decimal(s) }
	be := func(v *big.Int, n int) []byte { // big-endian two's complement of n bytes
		m := new(big.Int).Set(v)
		if m.Sign() < 0 {
			m.Add(m, new(big.Int).Lsh(big.NewInt(1), uint(8*n)))
		}
		out := make([]byte, n)
		return m.FillBytes(out)
	}
	return []pqForeignCol{
		{"ts_ms_utc", parquet.Optional(parquet.Timestamp(parquet.Millisecond)), &arrow.TimestampType{Unit: arrow.Microsecond},
			func(r int) (any, any) { v := int64(r-1500) * 123457; return v, arrow.Timestamp(v * 1000) }},
		{"ts_ns", parquet.Optional(parquet.TimestampAdjusted(parquet.Nanosecond, false)), &arrow.TimestampType{Unit: arrow.Microsecond},
			func(r int) (any, any) {
				v := int64(r-1500)*1001 + int64(r%3) // floors: -1ns is -1us
				q := v / 1000
				if v%1000 < 0 {
					q--
				}
				return v, arrow.Timestamp(q)
			}},
		{"ts_us_s", parquet.Required(parquet.Timestamp(parquet.Microsecond)), &arrow.TimestampType{Unit: arrow.Second},
			func(r int) (any, any) {
				v := int64(r-1500) * 777777
				return v, arrow.Timestamp(math.Floor(float64(v) / 1e6))
			}},
		{"i32", parquet.Optional(parquet.Leaf(parquet.Int32Type)), arrow.PrimitiveTypes.Int64,
			func(r int) (any, any) { v := int32(r * -2654435761); return v, int64(v) }},
		{"i8", parquet.Optional(parquet.Int(8)), arrow.PrimitiveTypes.Int32,
			func(r int) (any, any) { v := int32(int8(r)); return v, v }},
		{"u32", parquet.Optional(parquet.Uint(32)), arrow.PrimitiveTypes.Int64,
			func(r int) (any, any) { v := uint32(math.MaxUint32 - r); return int32(v), int64(v) }},
		{"u16", parquet.Optional(parquet.Uint(16)), arrow.PrimitiveTypes.Uint32,
			func(r int) (any, any) { v := uint16(65535 - r); return int32(v), uint32(v) }},
		{"f", parquet.Optional(parquet.Leaf(parquet.FloatType)), arrow.PrimitiveTypes.Float64,
			func(r int) (any, any) { v := float32(r) / 3; return v, float64(v) }},
		{"raw", parquet.Optional(parquet.Leaf(parquet.ByteArrayType)), arrow.BinaryTypes.String,
			func(r int) (any, any) { v := fmt.Sprintf("raw %d é", r); return []byte(v), v }},
		{"enum", parquet.Optional(parquet.Enum()), arrow.BinaryTypes.String,
			func(r int) (any, any) { v := []string{"RED", "GREEN"}[r%2]; return []byte(v), v }},
		{"dict", parquet.Optional(parquet.Encoded(parquet.String(), &parquet.RLEDictionary)), arrow.BinaryTypes.String,
			func(r int) (any, any) { v := fmt.Sprintf("k%d", r%17); return []byte(v), v }},
		{"uuid", parquet.Optional(parquet.UUID()), arrow.BinaryTypes.Binary,
			func(r int) (any, any) { v := []byte(fmt.Sprintf("%016d", r)); return v, v }},
		{"date", parquet.Optional(parquet.Date()), arrow.FixedWidthTypes.Date32,
			func(r int) (any, any) { return int32(r - 1000), arrow.Date32(r - 1000) }},
		{"dec_small", parquet.Optional(parquet.Decimal(2, 5, parquet.Int32Type)), &arrow.Decimal128Type{Precision: 12, Scale: 4},
			func(r int) (any, any) { v := int32(r*37%199999 - 99999); return v, decimal128.FromI64(int64(v) * 100) }},
		{"dec_i64", parquet.Optional(parquet.Decimal(0, 18, parquet.Int64Type)), &arrow.Decimal128Type{Precision: 38, Scale: 0},
			func(r int) (any, any) { v := int64(r) * -999999999999; return v, decimal128.FromI64(v) }},
		{"dec_ba", parquet.Optional(parquet.Decimal(3, 20, parquet.ByteArrayType)), &arrow.Decimal128Type{Precision: 20, Scale: 3},
			func(r int) (any, any) {
				v := new(big.Int).Mul(big.NewInt(int64(r-1500)), big.NewInt(12345678901234567))
				n := len(v.Bytes()) + 1 // minimal-ish length, as writers of variable-length decimals do
				return be(v, n), decimal128.FromBigInt(v)
			}},
		{"dec_wide", parquet.Required(parquet.Decimal(0, 38, parquet.FixedLenByteArrayType(20))), &arrow.Decimal128Type{Precision: 38, Scale: 0},
			func(r int) (any, any) {
				s := "-" + strings.Repeat("9", 38)
				if r%2 == 0 {
					s = fmt.Sprintf("%d%s", r, strings.Repeat("0", 30))
				}
				v, _ := new(big.Int).SetString(s, 10)
				return be(v, 20), dec(s)
			}},
		{"int96", parquet.Optional(parquet.Leaf(parquet.Int96Type)), &arrow.TimestampType{Unit: arrow.Microsecond},
			func(r int) (any, any) {
				// Julian day 2440588 is 1970-01-01; nanoseconds of the day floor to microseconds.
				day := int64(2440588 + r - 1500)
				nanos := int64(r)*1_000_003_001 + 999
				v := deprecated.Int96{uint32(nanos), uint32(nanos >> 32), uint32(day)}
				return v, arrow.Timestamp((day-2440588)*86400_000_000 + nanos/1000)
			}},
	}
}

// writeForeignFile writes rows [0, n) of the foreign columns (NULL every 4th row in optional columns) with small
// pages and row groups.
func writeForeignFile(t *testing.T, path string, cols []pqForeignCol, n int, opts ...parquet.WriterOption) {
	t.Helper()
	g := parquet.Group{}
	for _, c := range cols {
		g[c.name] = c.node
	}
	schema := parquet.NewSchema("foreign", g)
	f, err := os.Create(path)
	connectortest.Must(t, err)
	defer f.Close()
	w := parquet.NewWriter(f, append([]parquet.WriterOption{schema, parquet.PageBufferSize(512), parquet.MaxRowsPerRowGroup(700)}, opts...)...)
	for r := range n {
		row := make(parquet.Row, 0, len(cols))
		for _, c := range cols {
			leaf, _ := schema.Lookup(c.name)
			v, _ := c.value(r)
			if c.node.Optional() && r%4 == 3 {
				row = append(row, parquet.NullValue().Level(0, 0, leaf.ColumnIndex))
				continue
			}
			var pv parquet.Value
			switch v := v.(type) {
			case int32:
				pv = parquet.Int32Value(v)
			case int64:
				pv = parquet.Int64Value(v)
			case float32:
				pv = parquet.FloatValue(v)
			case []byte:
				if c.node.Type().Kind() == parquet.FixedLenByteArray {
					pv = parquet.FixedLenByteArrayValue(v)
				} else {
					pv = parquet.ByteArrayValue(v)
				}
			case deprecated.Int96:
				pv = parquet.Int96Value(v)
			default:
				t.Fatalf("value %T", v)
			}
			def := 0
			if c.node.Optional() {
				def = 1
			}
			row = append(row, pv.Level(0, def, leaf.ColumnIndex))
		}
		// Rows go in leaf order.
		slices.SortFunc(row, func(a, b parquet.Value) int { return a.Column() - b.Column() })
		if _, err := w.WriteRows([]parquet.Row{row}); err != nil {
			t.Fatal(err)
		}
	}
	connectortest.Must(t, w.Close())
}

// Pins: files from other writers (other physical types for the same logical type, dictionary pages, data page
// v1, INT96, variable-length and wide decimals, small pages) read wrongly, or restores inside their pages losing
// or repeating rows.
func TestParquetSourceForeignFiles(t *testing.T) {
	mem := connectortest.CheckedAlloc(t)
	cols := pqForeignCols()
	fields := make([]arrow.Field, len(cols))
	for i, c := range cols {
		fields[i] = arrow.Field{Name: c.name, Type: c.target, Nullable: c.node.Optional()}
	}
	schema := arrow.NewSchema(fields, nil)
	const n = 3000
	wantB := array.NewRecordBuilder(mem, schema)
	defer wantB.Release()
	for r := range n {
		for i, c := range cols {
			if c.node.Optional() && r%4 == 3 {
				wantB.Field(i).AppendNull()
				continue
			}
			_, v := c.value(r)
			connectortest.AppendAny(wantB.Field(i), v)
		}
	}
	want := wantB.NewRecordBatch()
	defer want.Release()

	for _, version := range []int{1, 2} {
		t.Run(fmt.Sprintf("pagev%d", version), func(t *testing.T) {
			dir := t.TempDir()
			writeForeignFile(t, filepath.Join(dir, "f.parquet"), cols, n, parquet.DataPageVersion(version))
			cfg := SourceConfig{Path: dir, Schema: schema, BatchRows: 333}
			src := openPQSource(t, mem, cfg, nil, 0, 1)
			recs, offsets := connectortest.DrainBounded(t, src, 333)
			connectortest.Must(t, src.Close())
			got := connectortest.Concat(t, mem, schema, recs)
			connectortest.RequireSameRecords(t, "read", want, got)
			got.Release()
			for i, off := range offsets {
				src := openPQSource(t, mem, SourceConfig{Path: dir, Schema: schema, BatchRows: 1000}, off, 0, 1)
				rest, _ := connectortest.DrainBounded(t, src, 1000)
				connectortest.Must(t, src.Close())
				got := connectortest.Concat(t, mem, schema, rest)
				start := int64(min(i*333, n))
				w := want.NewSlice(start, n)
				connectortest.RequireSameRecords(t, fmt.Sprintf("restore at row %d", start), w, got)
				w.Release()
				got.Release()
			}
		})
	}

	// Conversions that would lose data are refused at Open, naming the file, column and types.
	dir := t.TempDir()
	writeForeignFile(t, filepath.Join(dir, "f.parquet"), cols, 10)
	for _, tc := range []struct {
		col    string
		target arrow.DataType
		msg    string
	}{
		{"u32", arrow.PrimitiveTypes.Int32, "INT32 (INT(32,false)) as int32: values might not fit"},
		{"u32", arrow.PrimitiveTypes.Uint16, "values might not fit"},
		{"i8", arrow.PrimitiveTypes.Uint64, "values might not fit"},
		{"ts_ms_utc", arrow.PrimitiveTypes.Int64, "cannot read Parquet INT64 (TIMESTAMP(isAdjustedToUTC=true,unit=MILLIS)) as int64"},
		{"date", &arrow.TimestampType{Unit: arrow.Microsecond}, "INT32 (DATE) as timestamp[us]"},
		{"dec_small", &arrow.Decimal128Type{Precision: 12, Scale: 1}, "values might not fit"},
		{"dec_small", &arrow.Decimal128Type{Precision: 4, Scale: 2}, "values might not fit"},
		{"f", arrow.PrimitiveTypes.Float32, ""}, // fine
		{"dec_wide", arrow.BinaryTypes.Binary, "FIXED_LEN_BYTE_ARRAY[20] (DECIMAL(38,0)) as binary"},
		{"uuid", arrow.BinaryTypes.String, "as utf8"},
	} {
		s := arrow.NewSchema([]arrow.Field{{Name: tc.col, Type: tc.target, Nullable: true}}, nil)
		src := NewSource(SourceConfig{Path: dir, Schema: s})
		err := src.Open(connectortest.NewTask(mem, connectortest.TaskOpts{}))
		connectortest.Must(t, src.Close())
		if tc.msg == "" {
			connectortest.Must(t, err)
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.msg) || !strings.Contains(err.Error(), "f.parquet: column "+tc.col) {
			t.Errorf("%s as %s: %v", tc.col, tc.target, err)
		}
	}
}

func BenchmarkParquetSource(b *testing.B) {
	mem := memory.NewGoAllocator()
	dir := b.TempDir()
	const rows = 200_000
	var recs []arrow.RecordBatch
	for r := 0; r < rows; r += 4096 {
		recs = append(recs, pqSrcBatch(mem, r, min(r+4096, rows)))
	}
	connectortest.CommitTxns(b, mem, NewSink(SinkConfig{Path: dir, Schema: pqSrcSchema}), recs)
	connectortest.BenchReadAll(b, mem, rows, func() exec.Source {
		return NewSource(SourceConfig{Path: dir, Schema: pqSrcSchema})
	})
	b.ReportMetric(float64(rows*b.N)/b.Elapsed().Seconds(), "rows/s")
}

// Pins: a Parquet source's progress (exec.SourceProgress) not matching the rows it reads: the total from the
// footers of the subtask's files, the rows left falling with every batch, and after a restore the rows left of
// the same total.
func TestParquetSourceProgress(t *testing.T) {
	mem := connectortest.CheckedAlloc(t)
	dir := t.TempDir()
	pqSinkFiles(t, mem, dir, pqSrcSchema, 400, pqSrcRows(mem, 0, 900), pqSrcRows(mem, 900, 901), pqSrcRows(mem, 901, 2000))
	cfg := SourceConfig{Path: dir, Schema: pqSrcSchema, BatchRows: 97}
	for _, par := range []int{1, 2} {
		var all int64
		for sub := range par {
			read, total := connectortest.RequireRowProgress(t, mem, NewSource(cfg), nil, sub, par)
			if read != total {
				t.Fatalf("subtask %d of %d read %d rows of a total of %d", sub, par, read, total)
			}
			all += total
		}
		if all != 2000 {
			t.Fatalf("parallelism %d: totals add up to %d, want 2000", par, all)
		}
	}
	// Restored in the second file (after 10 batches: 9 of the first file's 900 rows, then its 1 row).
	_, off := connectortest.Drain(t, mem, NewSource(cfg), nil, 0, 1, 11)
	if read, total := connectortest.RequireRowProgress(t, mem, NewSource(cfg), off, 0, 1); read != 1099 || total != 2000 {
		t.Fatalf("restored in the last file: read %d of %d", read, total)
	}
}
