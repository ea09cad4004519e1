package parquet

import (
	"errors"
	"io"
	"math/big"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/parquet-go/parquet-go"

	"github.com/clinksql/clinksql/connectors/connectortest"
	"github.com/clinksql/clinksql/exec"
)

// pqCase is one column of the round-trip test: its Arrow type, the Parquet physical and logical type the file
// must declare (written by hand from the Parquet format spec), and a function that checks a value read back.
type pqCase struct {
	name     string
	typ      arrow.DataType
	nullable bool
	kind     parquet.Kind
	logical  string // LogicalType's canonical string, "" for none
	fixedLen int
}

var pqCases = []pqCase{
	{"b", arrow.FixedWidthTypes.Boolean, true, parquet.Boolean, "", 0},
	{"i8", arrow.PrimitiveTypes.Int8, true, parquet.Int32, "INT(8,true)", 0},
	{"i16", arrow.PrimitiveTypes.Int16, true, parquet.Int32, "INT(16,true)", 0},
	{"i32", arrow.PrimitiveTypes.Int32, false, parquet.Int32, "INT(32,true)", 0},
	{"i64", arrow.PrimitiveTypes.Int64, false, parquet.Int64, "INT(64,true)", 0},
	{"u8", arrow.PrimitiveTypes.Uint8, true, parquet.Int32, "INT(8,false)", 0},
	{"u32", arrow.PrimitiveTypes.Uint32, true, parquet.Int32, "INT(32,false)", 0},
	{"u64", arrow.PrimitiveTypes.Uint64, true, parquet.Int64, "INT(64,false)", 0},
	{"f4", arrow.PrimitiveTypes.Float32, true, parquet.Float, "", 0},
	{"f8", arrow.PrimitiveTypes.Float64, true, parquet.Double, "", 0},
	{"s", arrow.BinaryTypes.String, true, parquet.ByteArray, "STRING", 0},
	{"bin", arrow.BinaryTypes.Binary, true, parquet.ByteArray, "", 0},
	{"d", arrow.FixedWidthTypes.Date32, true, parquet.Int32, "DATE", 0},
	{"ts_ms", &arrow.TimestampType{Unit: arrow.Millisecond}, true, parquet.Int64, "TIMESTAMP(isAdjustedToUTC=false,unit=MILLIS)", 0},
	{"ts_us", &arrow.TimestampType{Unit: arrow.Microsecond}, true, parquet.Int64, "TIMESTAMP(isAdjustedToUTC=false,unit=MICROS)", 0},
	{"ts_s", &arrow.TimestampType{Unit: arrow.Second}, true, parquet.Int64, "TIMESTAMP(isAdjustedToUTC=false,unit=MILLIS)", 0},
	{"dec9", &arrow.Decimal128Type{Precision: 9, Scale: 2}, true, parquet.Int32, "DECIMAL(9,2)", 0},
	{"dec18", &arrow.Decimal128Type{Precision: 18, Scale: 3}, true, parquet.Int64, "DECIMAL(18,3)", 0},
	// 38 digits need 127 bits of magnitude plus a sign: 16 bytes; 20 digits need 67 bits + sign: 9 bytes.
	{"dec38", &arrow.Decimal128Type{Precision: 38, Scale: 4}, true, parquet.FixedLenByteArray, "DECIMAL(38,4)", 16},
	{"dec20", &arrow.Decimal128Type{Precision: 20, Scale: 0}, true, parquet.FixedLenByteArray, "DECIMAL(20,0)", 9},
}

func pqSchema() *arrow.Schema {
	fields := make([]arrow.Field, len(pqCases))
	for i, c := range pqCases {
		fields[i] = arrow.Field{Name: c.name, Type: c.typ, Nullable: c.nullable}
	}
	return arrow.NewSchema(fields, nil)
}

// pqRow is one row of the round-trip test, with what the Parquet file must hold for each column (nil = NULL).
func pqRowValues(r int) []any {
	if r%3 == 2 { // every third row: NULL in every nullable column
		out := make([]any, len(pqCases))
		out[3], out[4] = int32(r), int64(r)<<40
		return out
	}
	big38, _ := new(big.Int).SetString("-12345678901234567890123456789012345678", 10)
	big38.Add(big38, big.NewInt(int64(r)))
	big20, _ := new(big.Int).SetString("99999999999999999999", 10)
	big20.Sub(big20, big.NewInt(int64(r)))
	return []any{
		r%2 == 0, int32(int8(r)), int32(-30000 + r), int32(r), int64(r) << 40,
		int32(200 + r%50), int32(-1 - r), // u32 4294967295-r stored in INT32's bits
		int64(-1 - r), // u64 max-r
		float32(r) + 0.5, float64(r) / 3, "s" + string(rune('a'+r%26)), []byte{byte(r), 0, 0xff},
		int32(20454 + r), int64(1767225601500 + r), int64(1767225601500000 + r), int64(1767225601000 + 1000*int64(r)),
		int32(12345 + r), int64(-123456789012345678 + int64(r)), big38, big20,
	}
}

func buildPQBatch(t *testing.T, b *array.RecordBuilder, rows []int) exec.Batch {
	t.Helper()
	for _, r := range rows {
		want := pqRowValues(r)
		for c := range pqCases {
			fb := b.Field(c)
			if want[c] == nil {
				fb.AppendNull()
				continue
			}
			switch fb := fb.(type) {
			case *array.BooleanBuilder:
				fb.Append(want[c].(bool))
			case *array.Int8Builder:
				fb.Append(int8(want[c].(int32)))
			case *array.Int16Builder:
				fb.Append(int16(want[c].(int32)))
			case *array.Int32Builder:
				fb.Append(want[c].(int32))
			case *array.Int64Builder:
				fb.Append(want[c].(int64))
			case *array.Uint8Builder:
				fb.Append(uint8(want[c].(int32)))
			case *array.Uint32Builder:
				fb.Append(uint32(want[c].(int32)))
			case *array.Uint64Builder:
				fb.Append(uint64(want[c].(int64)))
			case *array.Float32Builder:
				fb.Append(want[c].(float32))
			case *array.Float64Builder:
				fb.Append(want[c].(float64))
			case *array.StringBuilder:
				fb.Append(want[c].(string))
			case *array.BinaryBuilder:
				fb.Append(want[c].([]byte))
			case *array.Date32Builder:
				fb.Append(arrow.Date32(want[c].(int32)))
			case *array.TimestampBuilder:
				v := want[c].(int64)
				if pqCases[c].typ.(*arrow.TimestampType).Unit == arrow.Second {
					v /= 1000 // the file holds milliseconds
				}
				fb.Append(arrow.Timestamp(v))
			case *array.Decimal128Builder:
				switch v := want[c].(type) {
				case int32:
					fb.Append(decimal128.FromI64(int64(v)))
				case int64:
					fb.Append(decimal128.FromI64(v))
				case *big.Int:
					fb.Append(decimal128.FromBigInt(v))
				}
			default:
				t.Fatalf("column %s: builder %T", pqCases[c].name, fb)
			}
		}
	}
	return exec.Batch{Rec: b.NewRecordBatch()}
}

// Pins: a Parquet file that is incomplete, declares the wrong physical or logical types, reorders columns,
// drops NULLs, or holds values other than those written (checked by reading it back with parquet-go).
func TestParquetSinkRoundTrip(t *testing.T) {
	mem := connectortest.CheckedAlloc(t)
	dir := t.TempDir()
	schema := pqSchema()
	// A small row-group size so the file has several row groups.
	s := NewSink(SinkConfig{Path: dir, Schema: schema, RowGroupRows: 4000})
	connectortest.Must(t, s.Open(connectortest.NewTask(mem, connectortest.TaskOpts{})))
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	const total = 10000
	var rows []int
	for r := range total {
		rows = append(rows, r)
		if len(rows) == 3000 || r == total-1 { // batches larger than the writer's chunk
			connectortest.Must(t, s.Write(buildPQBatch(t, b, rows)))
			rows = rows[:0]
		}
	}
	connectortest.Must(t, s.PreCommit(3))
	connectortest.Must(t, s.Commit(3))
	connectortest.Must(t, s.Close())

	path := filepath.Join(dir, "j1-sink-0-3.parquet")
	pf := openPQFile(t, path)
	if pf.NumRows() != total {
		t.Fatalf("%d rows, want %d", pf.NumRows(), total)
	}
	if n := len(pf.RowGroups()); n != 3 {
		t.Errorf("%d row groups, want 3", n)
	}
	fields := pf.Schema().Fields()
	if len(fields) != len(pqCases) {
		t.Fatalf("%d columns, want %d", len(fields), len(pqCases))
	}
	for i, c := range pqCases {
		f := fields[i]
		if f.Name() != c.name {
			t.Errorf("column %d is %s, want %s", i, f.Name(), c.name)
			continue
		}
		if f.Optional() != c.nullable || f.Required() == c.nullable {
			t.Errorf("column %s: optional=%v, want %v", c.name, f.Optional(), c.nullable)
		}
		typ := f.Type()
		if typ.Kind() != c.kind {
			t.Errorf("column %s: physical %s, want %s", c.name, typ.Kind(), c.kind)
		}
		logical := ""
		if lt := typ.LogicalType(); lt != nil {
			logical = lt.String()
		}
		if logical != c.logical {
			t.Errorf("column %s: logical type %q, want %q", c.name, logical, c.logical)
		}
		if c.fixedLen != 0 && typ.Length() != c.fixedLen {
			t.Errorf("column %s: fixed length %d, want %d", c.name, typ.Length(), c.fixedLen)
		}
	}

	r := 0
	for _, rg := range pf.RowGroups() {
		rr := parquet.NewRowGroupReader(rg)
		buf := make([]parquet.Row, 100)
		for {
			n, err := rr.ReadRows(buf)
			for _, row := range buf[:n] {
				checkPQRow(t, r, row)
				r++
			}
			if errors.Is(err, io.EOF) {
				break
			}
			connectortest.Must(t, err)
		}
		rr.Close()
	}
	if r != total {
		t.Fatalf("read %d rows, want %d", r, total)
	}
}

func checkPQRow(t *testing.T, r int, row parquet.Row) {
	t.Helper()
	want := pqRowValues(r)
	if len(row) != len(want) {
		t.Fatalf("row %d has %d values", r, len(row))
	}
	for c, v := range row {
		if v.Column() != c {
			t.Fatalf("row %d: value %d is of column %d", r, c, v.Column())
		}
		if want[c] == nil {
			if !v.IsNull() {
				t.Errorf("row %d column %s: %v, want NULL", r, pqCases[c].name, v)
			}
			continue
		}
		if v.IsNull() {
			t.Errorf("row %d column %s: NULL, want %v", r, pqCases[c].name, want[c])
			continue
		}
		var ok bool
		switch w := want[c].(type) {
		case bool:
			ok = v.Boolean() == w
		case int32:
			ok = v.Int32() == w
		case int64:
			ok = v.Int64() == w
		case float32:
			ok = v.Float() == w
		case float64:
			ok = v.Double() == w
		case string:
			ok = string(v.ByteArray()) == w
		case []byte:
			ok = string(v.ByteArray()) == string(w)
		case *big.Int:
			ok = beTwosComplement(v.ByteArray()).Cmp(w) == 0
		}
		if !ok {
			t.Errorf("row %d column %s: %v, want %v", r, pqCases[c].name, v, want[c])
		}
	}
}

// beTwosComplement decodes a big-endian two's complement integer, the Parquet DECIMAL byte encoding.
func beTwosComplement(b []byte) *big.Int {
	v := new(big.Int).SetBytes(b)
	if len(b) > 0 && b[0]&0x80 != 0 {
		v.Sub(v, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
	}
	return v
}

// Pins: a committed Parquet file whose bytes are not a complete file (no footer) or that a second transaction's
// rows leak into.
func TestParquetSinkOneFilePerTransaction(t *testing.T) {
	mem := connectortest.CheckedAlloc(t)
	dir := t.TempDir()
	s := NewSink(SinkConfig{Path: dir, Schema: connectortest.KVSchema, Compression: "zstd"})
	connectortest.Must(t, s.Open(connectortest.NewTask(mem, connectortest.TaskOpts{})))
	connectortest.Must(t, s.Write(connectortest.KVBatch(mem, 1, 2, 3)))
	connectortest.Must(t, s.PreCommit(1))
	connectortest.Must(t, s.Write(connectortest.KVBatch(mem, 4)))
	connectortest.Must(t, s.PreCommit(2))
	connectortest.Must(t, s.Commit(2))
	connectortest.Must(t, s.Close())
	for id, want := range map[string][]int64{"1": {1, 2, 3}, "2": {4}} {
		path := filepath.Join(dir, "j1-sink-0-"+id+".parquet")
		raw, err := os.ReadFile(path)
		connectortest.Must(t, err)
		if string(raw[:4]) != "PAR1" || string(raw[len(raw)-4:]) != "PAR1" {
			t.Fatalf("%s lacks the Parquet magic at both ends", path)
		}
		rows, err := parquet.Read[struct {
			ID *int64  `parquet:"id"`
			S  *string `parquet:"s"`
		}](bytesReaderAt(raw), int64(len(raw)))
		connectortest.Must(t, err)
		if len(rows) != len(want) {
			t.Fatalf("%s: %d rows, want %d", path, len(rows), len(want))
		}
		for i, w := range want {
			if *rows[i].ID != w || *rows[i].S != "v"+string(rune('0'+w)) {
				t.Errorf("%s row %d: (%d, %s)", path, i, *rows[i].ID, *rows[i].S)
			}
		}
	}
}

type bytesReaderAt []byte

func (b bytesReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if off >= int64(len(b)) {
		return 0, io.EOF
	}
	n := copy(p, b[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// openPQFile opens a file with parquet-go's reader, closed when the test ends.
func openPQFile(t *testing.T, path string) *parquet.File {
	t.Helper()
	f, err := os.Open(path)
	connectortest.Must(t, err)
	t.Cleanup(func() { f.Close() })
	st, err := f.Stat()
	connectortest.Must(t, err)
	pf, err := parquet.OpenFile(f, st.Size())
	connectortest.Must(t, err)
	return pf
}
