package file

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clinksql/clinksql/connectors/connectortest"
	"github.com/clinksql/clinksql/connectors/parquet"
	"github.com/clinksql/clinksql/exec"
)

// textCase is one column type with values and the text Postgres prints for each: in CSV (COPY ... CSV) and as a
// JSON value (to_json). The expectations are written by hand from Postgres' documented output formats.
type textCase struct {
	name  string
	typ   arrow.DataType
	build func(b array.Builder) // appends the values, in order
	csv   []string
	json  []string
}

func textCases() []textCase {
	const day = int64(86_400_000_000) // microseconds
	ts2026 := 20454 * day             // 2026-01-01 00:00:00
	return []textCase{
		{
			name: "bool", typ: arrow.FixedWidthTypes.Boolean,
			build: func(b array.Builder) {
				b.(*array.BooleanBuilder).AppendValues([]bool{true, false}, nil)
				b.AppendNull()
			},
			csv:  []string{"t", "f", ""},
			json: []string{"true", "false", "null"},
		},
		{
			name: "int8", typ: arrow.PrimitiveTypes.Int8,
			build: func(b array.Builder) { b.(*array.Int8Builder).AppendValues([]int8{-128, 0, 127}, nil) },
			csv:   []string{"-128", "0", "127"}, json: []string{"-128", "0", "127"},
		},
		{
			name: "int16", typ: arrow.PrimitiveTypes.Int16,
			build: func(b array.Builder) { b.(*array.Int16Builder).AppendValues([]int16{32767}, nil) },
			csv:   []string{"32767"}, json: []string{"32767"},
		},
		{
			name: "int32", typ: arrow.PrimitiveTypes.Int32,
			build: func(b array.Builder) { b.(*array.Int32Builder).AppendValues([]int32{math.MinInt32}, nil) },
			csv:   []string{"-2147483648"}, json: []string{"-2147483648"},
		},
		{
			name: "int64", typ: arrow.PrimitiveTypes.Int64,
			build: func(b array.Builder) {
				b.(*array.Int64Builder).AppendValues([]int64{math.MinInt64, 42}, nil)
				b.AppendNull()
			},
			csv:  []string{"-9223372036854775808", "42", ""},
			json: []string{"-9223372036854775808", "42", "null"},
		},
		{
			name: "uint64", typ: arrow.PrimitiveTypes.Uint64,
			build: func(b array.Builder) { b.(*array.Uint64Builder).AppendValues([]uint64{math.MaxUint64}, nil) },
			csv:   []string{"18446744073709551615"}, json: []string{"18446744073709551615"},
		},
		{
			// float8out since Postgres 12: shortest round-trip digits; scientific below 1e-4 and from 1e15.
			name: "float8", typ: arrow.PrimitiveTypes.Float64,
			build: func(b array.Builder) {
				b.(*array.Float64Builder).AppendValues([]float64{1.5, 100, 1e20, 1e15, 1e14, 123456789012345678,
					0.0001, 0.00001, 1.0 / 3, math.Copysign(0, -1), 2.5e-300, math.NaN(), math.Inf(1), math.Inf(-1)}, nil)
			},
			csv: []string{"1.5", "100", "1e+20", "1e+15", "100000000000000", "1.2345678901234568e+17",
				"0.0001", "1e-05", "0.3333333333333333", "-0", "2.5e-300", "NaN", "Infinity", "-Infinity"},
			json: []string{"1.5", "100", "1e+20", "1e+15", "100000000000000", "1.2345678901234568e+17",
				"0.0001", "1e-05", "0.3333333333333333", "-0", "2.5e-300", `"NaN"`, `"Infinity"`, `"-Infinity"`},
		},
		{
			// float4out: the same, scientific from 1e6.
			name: "float4", typ: arrow.PrimitiveTypes.Float32,
			build: func(b array.Builder) {
				b.(*array.Float32Builder).AppendValues([]float32{1.5, 100000, 1e6, 0.1, 3.4028235e38, float32(1.0) / 3}, nil)
			},
			csv:  []string{"1.5", "100000", "1e+06", "0.1", "3.4028235e+38", "0.33333334"},
			json: []string{"1.5", "100000", "1e+06", "0.1", "3.4028235e+38", "0.33333334"},
		},
		{
			name: "string", typ: arrow.BinaryTypes.String,
			build: func(b array.Builder) {
				b.(*array.StringBuilder).AppendValues([]string{"plain", "a,b", `say "hi"`, "", "line\nbreak",
					`back\slash`, "héllo", `\.`, "ctl\x01"}, nil)
				b.AppendNull()
			},
			csv: []string{"plain", `"a,b"`, `"say ""hi"""`, `""`, "\"line\nbreak\"", `back\slash`, "héllo",
				`"\."`, "ctl\x01", ""},
			json: []string{`"plain"`, `"a,b"`, `"say \"hi\""`, `""`, `"line\nbreak"`, `"back\\slash"`, `"héllo"`,
				`"\\."`, `"ctl\u0001"`, "null"},
		},
		{
			name: "bytea", typ: arrow.BinaryTypes.Binary,
			build: func(b array.Builder) {
				b.(*array.BinaryBuilder).AppendValues([][]byte{{0xde, 0xad, 0xbe, 0xef}, {}}, nil)
			},
			csv:  []string{`\xdeadbeef`, `\x`},
			json: []string{`"\\xdeadbeef"`, `"\\x"`},
		},
		{
			name: "date", typ: arrow.FixedWidthTypes.Date32,
			build: func(b array.Builder) {
				b.(*array.Date32Builder).AppendValues([]arrow.Date32{20454, 10956, 0, -719528, -719163}, nil)
			},
			csv: []string{"2026-01-01", "1999-12-31", "1970-01-01", "0001-01-01 BC", "0001-12-31 BC"},
			json: []string{`"2026-01-01"`, `"1999-12-31"`, `"1970-01-01"`, `"0001-01-01 BC"`,
				`"0001-12-31 BC"`},
		},
		{
			name: "timestamp_us", typ: &arrow.TimestampType{Unit: arrow.Microsecond},
			build: func(b array.Builder) {
				b.(*array.TimestampBuilder).AppendValues([]arrow.Timestamp{
					arrow.Timestamp(ts2026 + 1_500_000), arrow.Timestamp(ts2026), -1, 123456,
					arrow.Timestamp(-719528 * day)}, nil)
				b.AppendNull()
			},
			csv: []string{"2026-01-01 00:00:01.5", "2026-01-01 00:00:00", "1969-12-31 23:59:59.999999",
				"1970-01-01 00:00:00.123456", "0001-01-01 00:00:00 BC", ""},
			json: []string{`"2026-01-01 00:00:01.5"`, `"2026-01-01 00:00:00"`, `"1969-12-31 23:59:59.999999"`,
				`"1970-01-01 00:00:00.123456"`, `"0001-01-01 00:00:00 BC"`, "null"},
		},
		{
			name: "timestamp_ms", typ: &arrow.TimestampType{Unit: arrow.Millisecond},
			build: func(b array.Builder) {
				b.(*array.TimestampBuilder).AppendValues([]arrow.Timestamp{arrow.Timestamp(ts2026/1000 + 1500), -1}, nil)
			},
			csv:  []string{"2026-01-01 00:00:01.5", "1969-12-31 23:59:59.999"},
			json: []string{`"2026-01-01 00:00:01.5"`, `"1969-12-31 23:59:59.999"`},
		},
		{
			name: "timestamp_s", typ: &arrow.TimestampType{Unit: arrow.Second},
			build: func(b array.Builder) {
				b.(*array.TimestampBuilder).AppendValues([]arrow.Timestamp{arrow.Timestamp(ts2026/1_000_000 + 1)}, nil)
			},
			csv: []string{"2026-01-01 00:00:01"}, json: []string{`"2026-01-01 00:00:01"`},
		},
		{
			// Postgres keeps microseconds: the nanosecond is dropped.
			name: "timestamp_ns", typ: &arrow.TimestampType{Unit: arrow.Nanosecond},
			build: func(b array.Builder) {
				b.(*array.TimestampBuilder).AppendValues([]arrow.Timestamp{arrow.Timestamp((ts2026+1_500_000)*1000 + 1)}, nil)
			},
			csv: []string{"2026-01-01 00:00:01.5"}, json: []string{`"2026-01-01 00:00:01.5"`},
		},
		{
			name: "timestamptz", typ: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"},
			build: func(b array.Builder) { b.(*array.TimestampBuilder).Append(0) },
			csv:   []string{"1970-01-01 00:00:00+00"}, json: []string{`"1970-01-01 00:00:00+00"`},
		},
		{
			name: "decimal(5,2)", typ: &arrow.Decimal128Type{Precision: 5, Scale: 2},
			build: func(b array.Builder) {
				b.(*array.Decimal128Builder).AppendValues([]decimal128.Num{decimal128.FromI64(150),
					decimal128.FromI64(-5), decimal128.FromI64(0), decimal128.FromI64(99999)}, nil)
			},
			csv:  []string{"1.50", "-0.05", "0.00", "999.99"},
			json: []string{"1.50", "-0.05", "0.00", "999.99"},
		},
		{
			name: "decimal(38,10)", typ: &arrow.Decimal128Type{Precision: 38, Scale: 10},
			build: func(b array.Builder) {
				big, _ := decimal128.FromString("1234567890123.4567890123", 38, 10)
				b.(*array.Decimal128Builder).AppendValues([]decimal128.Num{big, decimal128.FromI64(-1)}, nil)
			},
			csv:  []string{"1234567890123.4567890123", "-0.0000000001"},
			json: []string{"1234567890123.4567890123", "-0.0000000001"},
		},
		{
			// IntervalStyle postgres.
			name: "interval", typ: arrow.FixedWidthTypes.MonthDayNanoInterval,
			build: func(b array.Builder) {
				hour := int64(3_600_000_000_000)
				b.(*array.MonthDayNanoIntervalBuilder).AppendValues([]arrow.MonthDayNanoInterval{
					{Months: 14, Days: 3, Nanoseconds: 4*hour + 5*60_000_000_000 + 6_500_000_000},
					{}, {Days: -1}, {Days: 1, Nanoseconds: -hour}, {Months: -1, Days: 1}, {Months: 1},
					{Nanoseconds: 100 * hour}, {Nanoseconds: -1000},
				}, nil)
			},
			csv: []string{"1 year 2 mons 3 days 04:05:06.5", "00:00:00", "-1 days", "1 day -01:00:00",
				"-1 mons +1 day", "1 mon", "100:00:00", "-00:00:00.000001"},
			json: []string{`"1 year 2 mons 3 days 04:05:06.5"`, `"00:00:00"`, `"-1 days"`, `"1 day -01:00:00"`,
				`"-1 mons +1 day"`, `"1 mon"`, `"100:00:00"`, `"-00:00:00.000001"`},
		},
		{
			// INTERVAL is a duration: whole days print as days, as Postgres prints ts - ts (25h 1m 1s).
			name: "duration", typ: &arrow.DurationType{Unit: arrow.Microsecond},
			build: func(b array.Builder) { b.(*array.DurationBuilder).Append(90061000000) },
			csv:   []string{"1 day 01:01:01"}, json: []string{`"1 day 01:01:01"`},
		},
	}
}

// writeOneColumn writes the case's values through a committed file sink of the given format and returns the file.
func writeOneColumn(t *testing.T, mem memory.Allocator, tc textCase, format string) string {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{{Name: "v", Type: tc.typ, Nullable: true}}, nil)
	dir := t.TempDir()
	s := NewSink(SinkConfig{Path: dir, Format: format, Schema: schema})
	connectortest.Must(t, s.Open(connectortest.NewTask(mem, connectortest.TaskOpts{})))
	b := array.NewRecordBuilder(mem, schema)
	tc.build(b.Field(0))
	rec := b.NewRecordBatch()
	b.Release()
	connectortest.Must(t, s.Write(exec.Batch{Rec: rec}))
	connectortest.Must(t, s.PreCommit(7))
	connectortest.Must(t, s.Commit(7))
	connectortest.Must(t, s.Close())
	return connectortest.ReadFile(t, filepath.Join(dir, "j1-sink-0-7."+format))
}

// Pins: any value leaving a CSV file in another text form than Postgres prints it (timestamps with T or
// trailing zeros, booleans as true/false, floats in Go's %g, NULL indistinguishable from an empty string...).
func TestFileSinkCSVTextForms(t *testing.T) {
	mem := connectortest.CheckedAlloc(t)
	for _, tc := range textCases() {
		t.Run(tc.name, func(t *testing.T) {
			got := writeOneColumn(t, mem, tc, "csv")
			want := strings.Join(tc.csv, "\n") + "\n"
			if got != want {
				t.Errorf("csv\n got %q\nwant %q", got, want)
			}
		})
	}
}

// Pins: JSON lines that are not one valid object per row, or whose values differ from Postgres' to_json forms.
func TestFileSinkJSONTextForms(t *testing.T) {
	mem := connectortest.CheckedAlloc(t)
	for _, tc := range textCases() {
		t.Run(tc.name, func(t *testing.T) {
			got := writeOneColumn(t, mem, tc, "json")
			var want strings.Builder
			for _, v := range tc.json {
				want.WriteString(`{"v":` + v + "}\n")
			}
			if got != want.String() {
				t.Errorf("json\n got %q\nwant %q", got, want.String())
			}
		})
	}
}

// Pins: a header line written without 'csv.header', missing with it, or with unquoted special names; a multi-column
// row with a NULL in the middle losing its field separator.
func TestFileSinkCSVHeaderAndRows(t *testing.T) {
	mem := connectortest.CheckedAlloc(t)
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "a", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "b,c", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "d", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	}, nil)
	for _, header := range []bool{false, true} {
		dir := t.TempDir()
		s := NewSink(SinkConfig{Path: dir, Format: "csv", CSVHeader: header, Schema: schema})
		connectortest.Must(t, s.Open(connectortest.NewTask(mem, connectortest.TaskOpts{})))
		b := array.NewRecordBuilder(mem, schema)
		b.Field(0).(*array.Int64Builder).AppendValues([]int64{1, 2}, nil)
		b.Field(1).(*array.StringBuilder).AppendNull()
		b.Field(1).(*array.StringBuilder).Append("x")
		b.Field(2).(*array.BooleanBuilder).AppendValues([]bool{true, false}, nil)
		rec := b.NewRecordBatch()
		b.Release()
		connectortest.Must(t, s.Write(exec.Batch{Rec: rec}))
		connectortest.Must(t, s.PreCommit(1))
		connectortest.Must(t, s.Commit(1))
		connectortest.Must(t, s.Close())
		want := "1,,t\n2,x,f\n"
		if header {
			want = "a,\"b,c\",d\n" + want
		}
		if got := connectortest.ReadFile(t, filepath.Join(dir, "j1-sink-0-1.csv")); got != want {
			t.Errorf("header=%v: got %q, want %q", header, got, want)
		}
		if _, err := os.Stat(filepath.Join(dir, "j1-sink-0-1.json")); err == nil {
			t.Error("csv sink wrote a .json file")
		}
	}
}

// Pins: a mistyped format or an unsupported column type failing late (at the first row) or silently.
func TestFileSinkConfigErrorsAtOpen(t *testing.T) {
	mem := connectortest.CheckedAlloc(t)
	if err := NewSink(SinkConfig{Path: t.TempDir(), Format: "xml", Schema: connectortest.KVSchema}).Open(connectortest.NewTask(mem, connectortest.TaskOpts{})); err == nil {
		t.Error("format xml accepted")
	}
	// An ARRAY has Postgres' text form ({1,2}); one of a type without any does not.
	noText := arrow.NewSchema([]arrow.Field{{Name: "l", Type: arrow.ListOf(arrow.FixedWidthTypes.Float16)}}, nil)
	if err := NewSink(SinkConfig{Path: t.TempDir(), Format: "csv", Schema: noText}).Open(connectortest.NewTask(mem, connectortest.TaskOpts{})); err == nil {
		t.Error("a list of float16 accepted by the csv sink")
	}
	// The Parquet sink writes an ARRAY as a LIST now; an element type without a Parquet form still fails at Open.
	if err := parquet.NewSink(parquet.SinkConfig{Path: t.TempDir(), Schema: noText}).Open(connectortest.NewTask(mem, connectortest.TaskOpts{})); err == nil {
		t.Error("a list of float16 accepted by the parquet sink")
	}
}
