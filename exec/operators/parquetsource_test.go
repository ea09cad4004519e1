package operators

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

func pqDecStr(s string) decimal128.Num {
	v, ok := new(big.Int).SetString(s, 10)
	if !ok {
		panic(s)
	}
	return decimal128.FromBigInt(v)
}

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
	"dec20": {pqDecStr("99999999999999999999"), pqDecStr("-99999999999999999999"), decimal128.FromI64(0)},
	"dec38": {pqDecStr(strings.Repeat("9", 38)), pqDecStr("-" + strings.Repeat("9", 38)), decimal128.FromI64(-1)},
}

// pqSrcEdgeRows is how many first rows hold edge values; after them every third row is NULL in nullable columns.
const pqSrcEdgeRows = 32

// pqSrcBatch builds rows [from, to) of the all-types test data: a pure function of the row number.
func pqSrcBatch(mem memory.Allocator, from, to int) arrow.RecordBatch {
	return typedRows(mem, pqSrcSchema, pqSrcEdges, pqSrcEdgeRows, from, to, func(col string, r int, h uint64) any {
		switch col {
		case "s", "s_nn":
			return typedText(r, h, " ünïcødé")
		case "d":
			return arrow.Date32(int64(h%2000000) - 1000000)
		case "ts_s":
			return arrow.Timestamp(int64(h) >> 20)
		case "ts_ms", "ts_us", "ts_ns", "tz_us":
			return arrow.Timestamp(int64(h))
		}
		return typedValue(col, r, h)
	})
}

// typedRows builds rows [from, to) of all-types test data: row r < edgeRows holds edges' values of each column,
// cycling; after those every third row is NULL in nullable columns, and value(column, r, h) gives the others, h
// being a hash of r.
func typedRows(mem memory.Allocator, schema *arrow.Schema, edges map[string][]any, edgeRows, from, to int,
	value func(col string, r int, h uint64) any) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	for r := from; r < to; r++ {
		h := uint64(r)*0x9E3779B97F4A7C15 ^ uint64(r)<<7
		for c, f := range schema.Fields() {
			fb := b.Field(c)
			if r < edgeRows {
				e := edges[f.Name]
				pqAppendAny(fb, e[r%len(e)])
				continue
			}
			if f.Nullable && r%3 == 2 {
				fb.AppendNull()
				continue
			}
			pqAppendAny(fb, value(f.Name, r, h))
		}
	}
	return b.NewRecordBatch()
}

// typedText is a text value of row r of hash h; every fifth row's ends in suffix.
func typedText(r int, h uint64, suffix string) string {
	v := fmt.Sprintf("row %d %x", r, h)
	if r%5 == 0 {
		v += suffix
	}
	return v
}

// typedValue is the value of the columns the all-types schemas name alike, for row r of hash h.
func typedValue(col string, r int, h uint64) any {
	switch col {
	case "b":
		return h&1 == 1
	case "i8":
		return int8(h)
	case "i16":
		return int16(h)
	case "i32":
		return int32(h)
	case "i64":
		return int64(h)
	case "u8":
		return uint8(h)
	case "u16":
		return uint16(h)
	case "u32":
		return uint32(h)
	case "u64":
		return h
	case "f4":
		return float32(int32(h)) / 7
	case "f8":
		return float64(int64(h)) / 3
	case "bin":
		return []byte(fmt.Sprintf("%x", h))[:r%9]
	case "dec9":
		return decimal128.FromI64(int64(h) % 999999999)
	case "dec18":
		return decimal128.FromI64(int64(h) % 999999999999999999)
	case "dec20":
		return decimal128.FromI64(int64(h)).Mul(decimal128.FromI64(int64(r%7) + 1))
	case "dec38":
		return decimal128.New(int64(h)>>3, h*31)
	}
	panic("no value for column " + col)
}

func pqAppendAny(b array.Builder, v any) {
	switch b := b.(type) {
	case *array.BooleanBuilder:
		b.Append(v.(bool))
	case *array.Int8Builder:
		b.Append(v.(int8))
	case *array.Int16Builder:
		b.Append(v.(int16))
	case *array.Int32Builder:
		b.Append(v.(int32))
	case *array.Int64Builder:
		b.Append(v.(int64))
	case *array.Uint8Builder:
		b.Append(v.(uint8))
	case *array.Uint16Builder:
		b.Append(v.(uint16))
	case *array.Uint32Builder:
		b.Append(v.(uint32))
	case *array.Uint64Builder:
		b.Append(v.(uint64))
	case *array.Float32Builder:
		b.Append(v.(float32))
	case *array.Float64Builder:
		b.Append(v.(float64))
	case *array.StringBuilder:
		b.Append(v.(string))
	case *array.BinaryBuilder:
		b.Append(v.([]byte))
	case *array.Date32Builder:
		b.Append(v.(arrow.Date32))
	case *array.TimestampBuilder:
		b.Append(v.(arrow.Timestamp))
	case *array.Decimal128Builder:
		b.Append(v.(decimal128.Num))
	case *array.DurationBuilder:
		b.Append(v.(arrow.Duration))
	default:
		panic(fmt.Sprintf("builder %T", b))
	}
}

// pqSinkFiles commits one Parquet file per transaction through the sink's two-phase protocol: transaction i holds
// the given batches (taken over) and is staged at checkpoint i+1; a transaction without rows leaves no file.
func pqSinkFiles(t *testing.T, mem memory.Allocator, dir string, schema *arrow.Schema, rowGroup int64, txns ...[]arrow.RecordBatch) {
	t.Helper()
	commitTxns(t, mem, NewParquetSink(ParquetSinkConfig{Path: dir, Schema: schema, RowGroupRows: rowGroup}), txns...)
}

// commitTxns writes the transactions through a two-phase sink: transaction i holds the batches (taken over) and is
// pre-committed as checkpoint i+1; the last checkpoint is committed at the end.
func commitTxns(t testing.TB, mem memory.Allocator, s exec.Sink, txns ...[]arrow.RecordBatch) {
	t.Helper()
	must(t, s.Open(newTask(mem, taskOpts{})))
	for i, txn := range txns {
		for _, rec := range txn {
			must(t, s.Write(exec.Batch{Rec: rec}))
		}
		must(t, s.PreCommit(uint64(i+1)))
	}
	must(t, s.Commit(uint64(len(txns))))
	must(t, s.Close())
}

// pqSrcRows returns the all-types rows [from, to) in batches of at most 700 rows.
func pqSrcRows(mem memory.Allocator, from, to int) []arrow.RecordBatch {
	return batchesOf(mem, from, to, 700, pqSrcBatch)
}

// batchesOf returns the rows [from, to) of gen in batches of at most size rows.
func batchesOf(mem memory.Allocator, from, to, size int, gen func(memory.Allocator, int, int) arrow.RecordBatch) []arrow.RecordBatch {
	var out []arrow.RecordBatch
	for r := from; r < to; r += size {
		out = append(out, gen(mem, r, min(r+size, to)))
	}
	return out
}

func openPQSource(t *testing.T, mem memory.Allocator, cfg ParquetSourceConfig, offset []byte, sub, par int) exec.Source {
	t.Helper()
	return openSource(t, NewParquetSource(cfg), newTask(mem, taskOpts{op: "src", sub: sub, par: par}), offset)
}

// openSource opens src in ctx, restored at offset unless it is nil.
func openSource(t testing.TB, src exec.Source, ctx *exec.TaskContext, offset []byte) exec.Source {
	t.Helper()
	if offset != nil {
		must(t, src.RestoreOffset(offset))
	}
	must(t, src.Open(ctx))
	return src
}

// drainBounded reads a bounded source to its end, checking that no batch exceeds limit rows and that there is no
// watermark, and returns the batches and the offset taken before each of them and after the last.
func drainBounded(t testing.TB, src exec.Source, limit int) (recs []arrow.RecordBatch, offsets [][]byte) {
	t.Helper()
	for {
		off, err := src.SnapshotOffset()
		must(t, err)
		offsets = append(offsets, off)
		res, err := src.Produce(context.Background())
		must(t, err)
		switch res.Status {
		case exec.Finished:
			return recs, offsets
		case exec.Produced:
			n := res.Batch.Rows()
			if n == 0 || n > limit {
				t.Fatalf("batch of %d rows, limit %d", n, limit)
			}
			if res.WM != exec.MinWatermark {
				t.Fatalf("watermark %d", res.WM)
			}
			recs = append(recs, res.Batch.Rec)
		default:
			t.Fatalf("status %d", res.Status)
		}
	}
}

// concatPQ concatenates batches into one (releasing them).
func concatPQ(t testing.TB, mem memory.Allocator, schema *arrow.Schema, recs []arrow.RecordBatch) arrow.RecordBatch {
	t.Helper()
	defer pqReleaseAll(recs)
	if len(recs) == 0 {
		b := array.NewRecordBuilder(mem, schema)
		defer b.Release()
		return b.NewRecordBatch()
	}
	cols := make([]arrow.Array, schema.NumFields())
	rows := int64(0)
	for _, r := range recs {
		rows += r.NumRows()
	}
	for c := range cols {
		parts := make([]arrow.Array, len(recs))
		for i, r := range recs {
			parts[i] = r.Column(c)
		}
		col, err := array.Concatenate(parts, mem)
		must(t, err)
		cols[c] = col
	}
	rec := array.NewRecordBatch(schema, cols, rows)
	for _, c := range cols {
		c.Release()
	}
	return rec
}

func pqReleaseAll(recs []arrow.RecordBatch) {
	for _, r := range recs {
		r.Release()
	}
}

// requireSameRecords compares two batches value for value: floats by their bits, so NaN, -0 and infinities count.
func pqRequireSame(t testing.TB, what string, want, got arrow.RecordBatch) {
	t.Helper()
	if !want.Schema().Equal(got.Schema()) {
		t.Fatalf("%s: schema\n%s\nwant\n%s", what, got.Schema(), want.Schema())
	}
	if want.NumRows() != got.NumRows() {
		t.Fatalf("%s: %d rows, want %d", what, got.NumRows(), want.NumRows())
	}
	for c := range int(want.NumCols()) {
		w, g := want.Column(c), got.Column(c)
		same := true
		switch w := w.(type) {
		case *array.Float32:
			g := g.(*array.Float32)
			for i := range w.Len() {
				if w.IsNull(i) != g.IsNull(i) || !w.IsNull(i) && math.Float32bits(w.Value(i)) != math.Float32bits(g.Value(i)) {
					same = false
				}
			}
		case *array.Float64:
			g := g.(*array.Float64)
			for i := range w.Len() {
				if w.IsNull(i) != g.IsNull(i) || !w.IsNull(i) && math.Float64bits(w.Value(i)) != math.Float64bits(g.Value(i)) {
					same = false
				}
			}
		default:
			same = array.Equal(w, g)
		}
		if same {
			continue
		}
		for i := range w.Len() {
			if !array.SliceEqual(w, int64(i), int64(i+1), g, int64(i), int64(i+1)) {
				t.Fatalf("%s: column %s row %d: %v, want %v", what, want.ColumnName(c), i, g.ValueStr(i), w.ValueStr(i))
			}
		}
		t.Fatalf("%s: column %s differs (floats)", what, want.ColumnName(c))
	}
}

// Pins: a value of any type the sink writes read back differently (or NULL-ness lost, or edge values mangled),
// rows lost or repeated at row-group and file boundaries, batches over BatchRows or spanning files.
func TestParquetSourceAllTypes(t *testing.T) {
	mem := checkedAlloc(t)
	dir := t.TempDir()
	// Files of 900, 1 and 1099 rows with row groups of 400, and a transaction without rows (no file).
	pqSinkFiles(t, mem, dir, pqSrcSchema, 400,
		pqSrcRows(mem, 0, 900), pqSrcRows(mem, 900, 901), nil, pqSrcRows(mem, 901, 2000))
	if n := len(committedFiles(t, dir)); n != 3 {
		t.Fatalf("%d files, want 3", n)
	}
	want := pqSrcBatch(mem, 0, 2000)
	defer want.Release()
	for _, batch := range []int{1, 3, 0} {
		t.Run(fmt.Sprintf("batch%d", batch), func(t *testing.T) {
			limit := batch
			if limit == 0 {
				limit = DefaultParquetBatchRows
			}
			src := openPQSource(t, mem, ParquetSourceConfig{Path: dir, Schema: pqSrcSchema, BatchRows: batch}, nil, 0, 1)
			recs, _ := drainBounded(t, src, limit)
			must(t, src.Close())
			// A batch never spans files: with the default size, one batch per file.
			if batch == 0 && len(recs) != 3 {
				t.Errorf("%d batches, want 3 (one per file)", len(recs))
			}
			got := concatPQ(t, mem, pqSrcSchema, recs)
			defer got.Release()
			pqRequireSame(t, "read", want, got)
		})
	}
}

// Pins: a restore that loses or repeats rows (mid-page, mid-row-group, at group and file boundaries, after the
// end), and a restore that silently reads a changed file list or at another parallelism.
func TestParquetSourceRestore(t *testing.T) {
	mem := checkedAlloc(t)
	dir := t.TempDir()
	pqSinkFiles(t, mem, dir, pqSrcSchema, 500,
		pqSrcRows(mem, 0, 1200), nil, pqSrcRows(mem, 1200, 1201), pqSrcRows(mem, 1201, 2000))
	cfg := ParquetSourceConfig{Path: dir, Schema: pqSrcSchema, BatchRows: 97}
	src := openPQSource(t, mem, cfg, nil, 0, 1)
	recs, offsets := drainBounded(t, src, 97)
	must(t, src.Close())
	requireRestores(t, mem, pqSrcSchema, recs, offsets, 2000, func(_ int, off []byte, _ arrow.RecordBatch, _ int64) []arrow.RecordBatch {
		if len(off) > 24 {
			t.Errorf("offset of %d bytes", len(off))
		}
		// Restore with a different batch size: positions need not fall on the earlier batches' boundaries.
		src := openPQSource(t, mem, ParquetSourceConfig{Path: dir, Schema: pqSrcSchema, BatchRows: 250}, off, 0, 1)
		rest, _ := drainBounded(t, src, 250)
		must(t, src.Close())
		return rest
	})

	mid := offsets[5]
	requireOpenFails(t, NewParquetSource(cfg), mid, newTask(mem, taskOpts{sub: 0, par: 2}), "parallelism", "restore at another parallelism")
	if err := NewParquetSource(cfg).RestoreOffset(mid[:len(mid)-1]); err == nil {
		t.Error("truncated offset accepted")
	}

	files := committedFiles(t, dir)
	must(t, os.WriteFile(filepath.Join(dir, "zzz.parquet"), []byte("x"), 0o644))
	requireOpenFails(t, NewParquetSource(cfg), mid, newTask(mem, taskOpts{}), "added", "restore after a file was added")
	must(t, os.Remove(filepath.Join(dir, "zzz.parquet")))
	must(t, os.Remove(filepath.Join(dir, files[len(files)-1])))
	requireOpenFails(t, NewParquetSource(cfg), mid, newTask(mem, taskOpts{}), "disappeared", "restore after a file disappeared")
}

// requireRestores checks a bounded source's offsets: recs (taken over) are a first read, offsets[i] the offset
// drainBounded took before recs[i] (and after the last), and rows the rows they must hold in all. restore(i, off,
// full, start) reads a fresh source restored at off to its end: it must read the rows of full from start on.
func requireRestores(t testing.TB, mem memory.Allocator, schema *arrow.Schema, recs []arrow.RecordBatch, offsets [][]byte, rows int,
	restore func(i int, off []byte, full arrow.RecordBatch, start int64) []arrow.RecordBatch) {
	t.Helper()
	starts := []int64{0}
	for _, r := range recs {
		starts = append(starts, starts[len(starts)-1]+r.NumRows())
	}
	full := concatPQ(t, mem, schema, recs)
	defer full.Release()
	if int(full.NumRows()) != rows {
		t.Fatalf("%d rows, want %d", full.NumRows(), rows)
	}
	for i, off := range offsets {
		requireRowsFrom(t, mem, fmt.Sprintf("restore at batch %d", i), full, starts[i], restore(i, off, full, starts[i]))
	}
}

// requireRowsFrom requires recs (taken over) to hold the rows of full from row from on.
func requireRowsFrom(t testing.TB, mem memory.Allocator, what string, full arrow.RecordBatch, from int64, recs []arrow.RecordBatch) {
	t.Helper()
	got := concatPQ(t, mem, full.Schema(), recs)
	defer got.Release()
	want := full.NewSlice(from, full.NumRows())
	defer want.Release()
	pqRequireSame(t, what, want, got)
}

// requireOpenFails requires src, restored at off, to fail Open in ctx with an error containing want.
func requireOpenFails(t testing.TB, src exec.Source, off []byte, ctx *exec.TaskContext, want, what string) {
	t.Helper()
	must(t, src.RestoreOffset(off))
	if err := src.Open(ctx); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("%s: %v", what, err)
	}
	must(t, src.Close())
}

// Pins: subtasks that read overlapping or missing files, or not file k, k+p, ... in order.
func TestParquetSourceSubtasks(t *testing.T) {
	mem := checkedAlloc(t)
	dir := t.TempDir()
	var txns [][]arrow.RecordBatch
	for f := range 5 {
		txns = append(txns, []arrow.RecordBatch{kvBatch(mem, int64(10*f), int64(10*f+1)).Rec})
	}
	pqSinkFiles(t, mem, dir, kvSchema, 0, txns...)
	requireSubtaskFiles(t, []int{1, 2, 3, 7}, func(sub, par int) []int64 {
		src := openPQSource(t, mem, ParquetSourceConfig{Path: dir, Schema: kvSchema}, nil, sub, par)
		recs, _ := drainBounded(t, src, DefaultParquetBatchRows)
		must(t, src.Close())
		return fsIDs(recs)
	})
}

// requireSubtaskFiles checks how a bounded source splits 5 files among subtasks, file f holding the ids 10f and
// 10f+1: at each parallelism par, read(sub, par) returns the ids subtask sub read, which must be those of files
// sub, sub+par, ... in order, and every id must be read once.
func requireSubtaskFiles(t testing.TB, pars []int, read func(sub, par int) []int64) {
	t.Helper()
	for _, par := range pars {
		seen := map[int64]bool{}
		for sub := range par {
			ids := read(sub, par)
			var want []int64
			for f := sub; f < 5; f += par {
				want = append(want, int64(10*f), int64(10*f+1))
			}
			if fmt.Sprint(ids) != fmt.Sprint(want) {
				t.Errorf("subtask %d of %d read %v, want %v", sub, par, ids, want)
			}
			for _, id := range ids {
				if seen[id] {
					t.Errorf("parallelism %d: row %d read twice", par, id)
				}
				seen[id] = true
			}
		}
		if len(seen) != 10 {
			t.Errorf("parallelism %d: %d rows read, want 10", par, len(seen))
		}
	}
}

// Pins: a bad file that panics, reads as garbage or fails without saying which file; schema mismatches that pass
// Open; a NULL slipping into a NOT NULL column.
func TestParquetSourceErrors(t *testing.T) {
	mem := checkedAlloc(t)
	dir := t.TempDir()
	pqSinkFiles(t, mem, dir, kvSchema, 0, []arrow.RecordBatch{kvBatch(mem, 1, 2).Rec})
	good := filepath.Join(dir, "j1-sink-0-1.parquet")
	raw, err := os.ReadFile(good)
	must(t, err)

	// A garbled page header in the second column, the footer intact: the failure comes after the first column's
	// values were appended.
	pf, err := parquet.OpenFile(bytesReaderAt(raw), int64(len(raw)))
	must(t, err)
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
			must(t, os.WriteFile(filepath.Join(d, "a.parquet"), raw, 0o644))
			must(t, os.WriteFile(filepath.Join(d, "b.parquet"), data, 0o644))
			src := openPQSource(t, mem, ParquetSourceConfig{Path: d, Schema: kvSchema}, nil, 0, 1)
			defer src.Close()
			res, err := src.Produce(context.Background())
			must(t, err)
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
		src := NewParquetSource(ParquetSourceConfig{Path: dir, Schema: schema})
		defer src.Close()
		return src.Open(newTask(mem, taskOpts{}))
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
	if err := open(list); err == nil || !strings.Contains(err.Error(), "cannot be read from Parquet") {
		t.Errorf("list column: %v", err)
	}
	src := NewParquetSource(ParquetSourceConfig{Path: filepath.Join(dir, "nope"), Schema: kvSchema})
	if err := src.Open(newTask(mem, taskOpts{})); err == nil {
		t.Error("a missing path opened")
	}

	// A NULL read into a NOT NULL column.
	nd := t.TempDir()
	b := array.NewRecordBuilder(mem, kvSchema)
	b.Field(0).AppendNull()
	b.Field(1).(*array.StringBuilder).Append("x")
	pqSinkFiles(t, mem, nd, kvSchema, 0, []arrow.RecordBatch{b.NewRecordBatch()})
	b.Release()
	notNull := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
	src = openPQSource(t, mem, ParquetSourceConfig{Path: nd, Schema: notNull}, nil, 0, 1)
	if _, err := src.Produce(context.Background()); err == nil || !strings.Contains(err.Error(), "column id: NULL in a NOT NULL column") {
		t.Errorf("NULL into NOT NULL: %v", err)
	}
	must(t, src.Close())
}

// Pins: directory listing that picks up staged, hidden or non-Parquet files or subdirectories; globs; a single
// file; a column subset in another order.
func TestParquetSourcePaths(t *testing.T) {
	mem := checkedAlloc(t)
	dir := t.TempDir()
	pqSinkFiles(t, mem, dir, kvSchema, 0, []arrow.RecordBatch{kvBatch(mem, 1).Rec}, []arrow.RecordBatch{kvBatch(mem, 2).Rec})
	// A staged transaction (its checkpoint never completed) lies in _staging/j1/.
	s := NewParquetSink(ParquetSinkConfig{Path: dir, Schema: kvSchema})
	must(t, s.Open(newTask(mem, taskOpts{completed: map[uint64]bool{1: true, 2: true}})))
	must(t, s.Write(kvBatch(mem, 99)))
	must(t, s.PreCommit(3))
	must(t, s.Close())
	must(t, os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("x"), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, ".hidden.parquet"), []byte("x"), 0o644))
	must(t, os.Mkdir(filepath.Join(dir, "sub"), 0o755))
	raw, err := os.ReadFile(filepath.Join(dir, "j1-sink-0-1.parquet"))
	must(t, err)
	must(t, os.WriteFile(filepath.Join(dir, "sub", "x.parquet"), raw, 0o644))

	ids := func(path string, schema *arrow.Schema) string {
		t.Helper()
		src := openPQSource(t, mem, ParquetSourceConfig{Path: path, Schema: schema}, nil, 0, 1)
		recs, _ := drainBounded(t, src, DefaultParquetBatchRows)
		must(t, src.Close())
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
		pqReleaseAll(recs)
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
		if got := ids(path, kvSchema); got != want {
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
	src := NewParquetSource(ParquetSourceConfig{Path: filepath.Join(dir, "missing", "*.parquet"), Schema: kvSchema})
	if err := src.Open(newTask(mem, taskOpts{})); err == nil {
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
	dec := func(s string) any { return pqDecStr(s) }
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
	must(t, err)
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
	must(t, w.Close())
}

// Pins: files from other writers (other physical types for the same logical type, dictionary pages, data page
// v1, INT96, variable-length and wide decimals, small pages) read wrongly, or restores inside their pages losing
// or repeating rows.
func TestParquetSourceForeignFiles(t *testing.T) {
	mem := checkedAlloc(t)
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
			pqAppendAny(wantB.Field(i), v)
		}
	}
	want := wantB.NewRecordBatch()
	defer want.Release()

	for _, version := range []int{1, 2} {
		t.Run(fmt.Sprintf("pagev%d", version), func(t *testing.T) {
			dir := t.TempDir()
			writeForeignFile(t, filepath.Join(dir, "f.parquet"), cols, n, parquet.DataPageVersion(version))
			cfg := ParquetSourceConfig{Path: dir, Schema: schema, BatchRows: 333}
			src := openPQSource(t, mem, cfg, nil, 0, 1)
			recs, offsets := drainBounded(t, src, 333)
			must(t, src.Close())
			got := concatPQ(t, mem, schema, recs)
			pqRequireSame(t, "read", want, got)
			got.Release()
			for i, off := range offsets {
				src := openPQSource(t, mem, ParquetSourceConfig{Path: dir, Schema: schema, BatchRows: 1000}, off, 0, 1)
				rest, _ := drainBounded(t, src, 1000)
				must(t, src.Close())
				got := concatPQ(t, mem, schema, rest)
				start := int64(min(i*333, n))
				w := want.NewSlice(start, n)
				pqRequireSame(t, fmt.Sprintf("restore at row %d", start), w, got)
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
		src := NewParquetSource(ParquetSourceConfig{Path: dir, Schema: s})
		err := src.Open(newTask(mem, taskOpts{}))
		must(t, src.Close())
		if tc.msg == "" {
			must(t, err)
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
	commitTxns(b, mem, NewParquetSink(ParquetSinkConfig{Path: dir, Schema: pqSrcSchema}), recs)
	benchReadAll(b, mem, rows, func() exec.Source {
		return NewParquetSource(ParquetSourceConfig{Path: dir, Schema: pqSrcSchema})
	})
	b.ReportMetric(float64(rows*b.N)/b.Elapsed().Seconds(), "rows/s")
}

// benchReadAll times reading a bounded source of rows rows to its end b.N times, a fresh one from newSource each
// time.
func benchReadAll(b *testing.B, mem memory.Allocator, rows int, newSource func() exec.Source) {
	b.ResetTimer()
	for range b.N {
		src := newSource()
		must(b, src.Open(newTask(mem, taskOpts{})))
		n := 0
		for {
			res, err := src.Produce(context.Background())
			must(b, err)
			if res.Status == exec.Finished {
				break
			}
			n += res.Batch.Rows()
			res.Batch.Rec.Release()
		}
		must(b, src.Close())
		if n != rows {
			b.Fatalf("%d rows", n)
		}
	}
}
