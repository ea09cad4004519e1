package file

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clinksql/clinksql/connectors/connectortest"
	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/exec/textform"
	"github.com/clinksql/clinksql/sqlerr"
)

// fsSchema covers every type the engine has (and the other timestamp units), nullable and not.
var fsSchema = arrow.NewSchema([]arrow.Field{
	{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "i8", Type: arrow.PrimitiveTypes.Int8, Nullable: true},
	{Name: "i16", Type: arrow.PrimitiveTypes.Int16, Nullable: true},
	{Name: "i32", Type: arrow.PrimitiveTypes.Int32},
	{Name: "i64", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
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
	{Name: "iv", Type: &arrow.DurationType{Unit: arrow.Microsecond}, Nullable: true},
	{Name: "dec9", Type: &arrow.Decimal128Type{Precision: 9, Scale: 2}, Nullable: true},
	{Name: "dec20", Type: &arrow.Decimal128Type{Precision: 20, Scale: 0}, Nullable: true},
	{Name: "dec38", Type: &arrow.Decimal128Type{Precision: 38, Scale: 4}},
}, nil)

const (
	usYear1    = -62135596800 * 1_000_000 // 0001-01-01 00:00:00
	usYear9999 = 253402300799999999       // 9999-12-31 23:59:59.999999
)

// fsEdges are the values of the first rows, cycling: extremes and the texts CSV and JSON must quote or escape.
var fsEdges = map[string][]any{
	"b":     {true, false},
	"i8":    {int8(math.MinInt8), int8(math.MaxInt8), int8(0), int8(-1)},
	"i16":   {int16(math.MinInt16), int16(math.MaxInt16), int16(0)},
	"i32":   {int32(math.MinInt32), int32(math.MaxInt32), int32(0), int32(-1)},
	"i64":   {int64(math.MinInt64), int64(math.MaxInt64), int64(0), int64(-1)},
	"f4":    {float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.Copysign(0, -1)), float32(0), float32(math.SmallestNonzeroFloat32), float32(math.MaxFloat32), float32(-math.MaxFloat32), float32(0.1), float32(1e20), float32(1e-5)},
	"f8":    {math.NaN(), math.Inf(1), math.Inf(-1), math.Copysign(0, -1), math.SmallestNonzeroFloat64, math.MaxFloat64, -math.MaxFloat64, 0.1, 1e15, 1e-5},
	"s":     {"", ",", `"`, `""`, "a\nb", "a\r\nb\r", "\r", `\.`, `\N`, " padded ", "NULL", "héllo, 世界", "a\x00b", "tab\there", "{\"k\": [1]}", strings.Repeat("x", 1000), "\\x41"},
	"s_nn":  {"", "z", "\n"},
	"bin":   {[]byte{}, []byte{0}, []byte{0xff, 0, 0xfe}, []byte(strings.Repeat("\x80", 300)), []byte(`,"`)},
	"d":     {arrow.Date32(-719162), arrow.Date32(2932896), arrow.Date32(0), arrow.Date32(-1)},
	"ts_s":  {arrow.Timestamp(usYear1 / 1_000_000), arrow.Timestamp(usYear9999 / 1_000_000), arrow.Timestamp(-1), arrow.Timestamp(0)},
	"ts_ms": {arrow.Timestamp(usYear1 / 1000), arrow.Timestamp(usYear9999 / 1000), arrow.Timestamp(-1), arrow.Timestamp(1500)},
	"ts_us": {arrow.Timestamp(usYear1), arrow.Timestamp(usYear9999), arrow.Timestamp(-1), arrow.Timestamp(1)},
	"ts_ns": {arrow.Timestamp(math.MinInt64 / 1000 * 1000), arrow.Timestamp(math.MaxInt64 / 1000 * 1000), arrow.Timestamp(-1000)},
	"tz_us": {arrow.Timestamp(-1), arrow.Timestamp(0), arrow.Timestamp(1)},
	"iv":    {arrow.Duration(0), arrow.Duration(1), arrow.Duration(-1), arrow.Duration(26 * 3600e6), arrow.Duration(-(26*3600e6 + 30)), arrow.Duration(1e15 + 7)},
	"dec9":  {decimal128.FromI64(999999999), decimal128.FromI64(-999999999), decimal128.FromI64(0), decimal128.FromI64(1)},
	"dec20": {connectortest.Decimal("99999999999999999999"), connectortest.Decimal("-99999999999999999999"), decimal128.FromI64(0)},
	"dec38": {connectortest.Decimal(strings.Repeat("9", 38)), connectortest.Decimal("-" + strings.Repeat("9", 38)), decimal128.FromI64(-1)},
}

const fsEdgeRows = 40

// fsBatch builds rows [from, to) of the all-types data: a pure function of the row number.
func fsBatch(mem memory.Allocator, from, to int) arrow.RecordBatch {
	return connectortest.TypedRows(mem, fsSchema, fsEdges, fsEdgeRows, from, to, func(col string, r int, h uint64) any {
		ts := int64(h%(usYear9999-usYear1)) + usYear1 // within years 1 to 9999
		switch col {
		case "s", "s_nn":
			return connectortest.TypedText(r, h, ", \"ünïcødé\"")
		case "d":
			return arrow.Date32(int64(h%2000000) - 700000)
		case "ts_s":
			return arrow.Timestamp(ts / 1e6)
		case "ts_ms":
			return arrow.Timestamp(ts / 1e3)
		case "ts_us", "tz_us":
			return arrow.Timestamp(ts)
		case "ts_ns":
			return arrow.Timestamp(ts % (math.MaxInt64 / 1000) * 1000)
		case "iv":
			return arrow.Duration(int64(h) >> 12)
		}
		return connectortest.TypedValue(col, r, h)
	})
}

// fsRows returns rows [from, to) in batches of at most 300.
func fsRows(mem memory.Allocator, from, to int) []arrow.RecordBatch {
	return connectortest.BatchesOf(mem, from, to, 300, fsBatch)
}

// fsSinkFiles commits one file per transaction through the file sink: transaction i holds the batches (taken over)
// and is committed as checkpoint i+1.
func fsSinkFiles(t testing.TB, mem memory.Allocator, dir, format string, header bool, schema *arrow.Schema, txns ...[]arrow.RecordBatch) {
	t.Helper()
	connectortest.CommitTxns(t, mem, NewSink(SinkConfig{Path: dir, Format: format, CSVHeader: header, Schema: schema}), txns...)
}

// fsTask is a task context with an error counter and a log that records what it is told.
type fsTask struct {
	*exec.TaskContext
	logs *fsLog
}

type fsLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *fsLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *fsLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func newFSTask(mem memory.Allocator, sub, par int) fsTask {
	ctx := connectortest.NewTask(mem, connectortest.TaskOpts{Op: "src", Sub: sub, Par: par})
	l := &fsLog{}
	ctx.Log = slog.New(slog.NewTextHandler(l, nil))
	ctx.Errors = &exec.Counter{}
	return fsTask{ctx, l}
}

func openFS(t testing.TB, cfg SourceConfig, task fsTask, offset []byte) exec.Source {
	t.Helper()
	return connectortest.OpenSource(t, NewSource(cfg)(task.Subtask), task.TaskContext, offset)
}

func readAllFS(t testing.TB, mem memory.Allocator, cfg SourceConfig, task fsTask) arrow.RecordBatch {
	t.Helper()
	src := openFS(t, cfg, task, nil)
	recs, _ := connectortest.DrainBounded(t, src, cmp0(cfg.BatchRows, DefaultBatchRows))
	connectortest.Must(t, src.Close())
	return connectortest.Concat(t, mem, cfg.Schema, recs)
}

// Pins: a value of any type the file sink writes read back differently (NULL vs empty string, quoting, escapes,
// NaN/Infinity, -0, extreme values, timestamp units), rows lost or repeated between batches and files.
func TestFileSourceRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		format string
		header bool
	}{{"csv", false}, {"csv", true}, {"json", false}} {
		t.Run(fmt.Sprintf("%s_header=%v", tc.format, tc.header), func(t *testing.T) {
			mem := connectortest.CheckedAlloc(t)
			dir := t.TempDir()
			fsSinkFiles(t, mem, dir, tc.format, tc.header, fsSchema,
				fsRows(mem, 0, 700), fsRows(mem, 700, 701), nil, fsRows(mem, 701, 1500))
			if n := len(connectortest.CommittedFiles(t, dir)); n != 3 {
				t.Fatalf("%d files, want 3", n)
			}
			want := fsBatch(mem, 0, 1500)
			defer want.Release()
			for _, batch := range []int{1, 7, 0} {
				cfg := SourceConfig{Path: dir, Format: tc.format, Schema: fsSchema, CSVHeader: tc.header, BatchRows: batch, BadRows: BadRowsFail}
				task := newFSTask(mem, 0, 1)
				got := readAllFS(t, mem, cfg, task)
				connectortest.RequireSameRecords(t, fmt.Sprintf("batch %d", batch), want, got)
				got.Release()
				if task.Errors.Load() != 0 {
					t.Errorf("%d errors", task.Errors.Load())
				}
			}
		})
	}
}

// fsKV is a small schema for handwritten files.
var fsKV = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Millisecond}, Nullable: true},
}, nil)

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	connectortest.Must(t, os.WriteFile(path, []byte(content), 0o644))
}

// fsText renders a batch's rows as text lines (NULL as <null>) for handwritten expectations.
func fsText(t testing.TB, rec arrow.RecordBatch) []string {
	t.Helper()
	rows, err := textform.Rows(rec)
	connectortest.Must(t, err)
	var out []string
	for _, r := range rows {
		var parts []string
		for _, v := range r {
			if v == nil {
				parts = append(parts, "<null>")
			} else {
				parts = append(parts, fmt.Sprintf("%q", *v))
			}
		}
		out = append(out, strings.Join(parts, "|"))
	}
	return out
}

func readText(t *testing.T, mem memory.Allocator, cfg SourceConfig) ([]string, fsTask) {
	t.Helper()
	task := newFSTask(mem, 0, 1)
	rec := readAllFS(t, mem, cfg, task)
	defer rec.Release()
	return fsText(t, rec), task
}

func checkLines(t *testing.T, what string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s:\n got %s\nwant %s", what, strings.Join(got, "\n     "), strings.Join(want, "\n     "))
	}
}

// Pins: COPY ... CSV's rules as the file sink relies on them: an unquoted empty field is NULL, "" an empty
// string; quotes anywhere in a field, doubled quotes, newlines inside quotes (line numbers keep counting), CRLF,
// a last line without newline, a header skipped per file, hidden files skipped.
func TestFileSourceCSVQuoting(t *testing.T) {
	mem := connectortest.CheckedAlloc(t)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.csv"), "id,s,ts\n"+
		"1,,\n"+
		"2,\"\",2026-01-01 00:00:01.5\n"+
		"3,\"a,b\"\"c\"\"\nd\",\"2026-01-01\"\r\n"+
		"4,x\"y,z\"w,\n"+
		",  spaced  ,\r\n"+
		"5,\\.,\n"+
		"x,bad,\n"+
		"6,last,")
	writeFile(t, filepath.Join(dir, "b.csv"), "id,s,ts\n7,\"\"\"\",\n")
	writeFile(t, filepath.Join(dir, "c.csv"), "id,s,ts\n")
	writeFile(t, filepath.Join(dir, "d.csv"), "")
	writeFile(t, filepath.Join(dir, ".hidden.csv"), "x\n")
	writeFile(t, filepath.Join(dir, "_staging"), "x\n")
	got, task := readText(t, mem, SourceConfig{Path: dir, Format: "csv", Schema: fsKV, CSVHeader: true})
	checkLines(t, "csv", got, []string{
		`"1"|<null>|<null>`,
		`"2"|""|"2026-01-01 00:00:01.5"`,
		`"3"|"a,b\"c\"\nd"|"2026-01-01 00:00:00"`,
		`"4"|"xy,zw"|<null>`,
		`<null>|"  spaced  "|<null>`,
		`"5"|"\\."|<null>`,
		`"6"|"last"|<null>`,
		`"7"|"\""|<null>`,
	})
	// The bad row's line counts the newline inside the quoted field of record 3.
	if n := task.Errors.Load(); n != 1 {
		t.Errorf("%d errors, want 1", n)
	}
	if l := task.logs.String(); !strings.Contains(l, "a.csv") || !strings.Contains(l, "line=9") || !strings.Contains(l, "column=id") {
		t.Errorf("log: %s", l)
	}
}

// Pins: JSON lines as the file sink writes them and as others do: keys matched case-insensitively (exact match
// first), missing keys and null are NULL, unknown keys (with nested values) ignored, escapes and surrogate pairs,
// numbers and booleans as values, blank lines skipped, the last of repeated keys wins, a second column differing
// only in case matched exactly.
//
// Keys naming the same column (exactly or not) are repeated keys: the last wins.
func TestFileSourceJSON(t *testing.T) {
	mem := connectortest.CheckedAlloc(t)
	dir := t.TempDir()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "ok", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: "x", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "Mixed", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	writeFile(t, filepath.Join(dir, "a.json"), ``+
		`{"id":1,"s":"a\"b\\c\n\u00e9\ud83d\ude00\/","ok":true,"x":1.5e3,"mixed":"m"}`+"\n"+
		"\n"+
		`  {"ID": 2, "S": "", "extra": {"a": [1, {"b": null}], "c": "}"}, "ok": false, "x": "NaN"}  `+"\r\n"+
		`{}`+"\n"+
		`{"id":3,"s":null,"s":"later","Mixed":"exact","mixed":"folded","x":-0}`+"\n"+
		`{"id":4,"s":12.5,"ok":"t","x":"-Infinity","mixed":["raw",1]}`)
	got, task := readText(t, mem, SourceConfig{Path: filepath.Join(dir, "a.json"), Format: "json", Schema: schema, BadRows: BadRowsFail})
	checkLines(t, "json", got, []string{
		`"1"|"a\"b\\c\né😀/"|"t"|"1500"|"m"`,
		`"2"|""|"f"|"NaN"|<null>`,
		`<null>|<null>|<null>|<null>|<null>`,
		`"3"|"later"|<null>|"-0"|"folded"`,
		`"4"|"12.5"|"t"|"-Infinity"|"[\"raw\",1]"`,
	})
	if n := task.Errors.Load(); n != 0 {
		t.Errorf("%d errors", n)
	}
}

// Pins: bad rows silently mangled, or skipped without being counted, or failing without naming file, line and
// column, or failing with an error the runtime would restart on forever.
func TestFileSourceBadRows(t *testing.T) {
	cases := []struct {
		name, format, content string
		line                  int
		want                  string // in the fail-mode error
		code                  string
	}{
		{"few fields", "csv", "1,a,\n2,b\n3,c,\n", 2, `missing data for column "ts"`, "22P04"},
		{"many fields", "csv", "1,a,\n2,b,,\n3,c,\n", 2, "extra data after last expected column", "22P04"},
		{"bad int", "csv", "1,a,\n2,\"x\ny\",\n2x,b,\n3,c,\n", 4, `column "id": invalid input syntax for type bigint: "2x"`, "22P02"},
		{"int range", "csv", "1,a,\n99999999999999999999,b,\n3,c,\n", 2, `column "id": value "99999999999999999999" is out of range`, "22003"},
		{"bad timestamp", "csv", "1,a,\n2,b,2026-13-01\n3,c,\n", 2, `column "ts": invalid input syntax for type timestamp`, "22007"},
		{"bad utf8", "csv", "1,a,\n2,\xff,\n3,c,\n", 2, `column "s": invalid byte sequence`, "22021"},
		{"unterminated", "csv", "1,a,\n3,c,\n2,\"b,\n4,d,\n", 3, "unterminated CSV quoted field", "22P04"},
		{"bad json", "json", `{"id":1}` + "\n" + `{"id":2,}` + "\n" + `{"id":3}` + "\n", 2, "invalid JSON at character 9", "22P02"},
		{"json not object", "json", `{"id":1}` + "\n" + `[1]` + "\n" + `{"id":3}` + "\n", 2, "invalid JSON at character 1", "22P02"},
		{"json bad value", "json", `{"id":1}` + "\n" + `{"id":"1.5"}` + "\n" + `{"id":3}` + "\n", 2, `column "id": invalid input syntax for type bigint: "1.5"`, "22P02"},
		{"json trailing", "json", `{"id":1}` + "\n" + `{"id":2} x` + "\n" + `{"id":3}` + "\n", 2, "data after the object", "22P02"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mem := connectortest.CheckedAlloc(t)
			dir := t.TempDir()
			file := filepath.Join(dir, "f."+tc.format)
			writeFile(t, file, tc.content)
			writeFile(t, filepath.Join(dir, "g."+tc.format), tc.content)
			cfg := SourceConfig{Path: dir, Format: tc.format, Schema: fsKV, BatchRows: 2}

			// skip: every other row read, one error per bad row, one log line per file naming it and the line.
			task := newFSTask(mem, 0, 1)
			rec := readAllFS(t, mem, cfg, task)
			rows := int(rec.NumRows())
			rec.Release()
			total := strings.Count(tc.content, "\n")
			if tc.name == "bad int" {
				total-- // a newline inside a quoted field
			}
			if tc.name == "unterminated" {
				total = 3 // the open quote runs to the end of the file: one bad record
			}
			if task.Errors.Load() != 2 || rows != 2*(total-1) {
				t.Errorf("skip: %d rows, %d errors; want %d rows, 2 errors", rows, task.Errors.Load(), 2*(total-1))
			}
			logs := task.logs.String()
			for _, f := range []string{"f.", "g."} {
				if !strings.Contains(logs, filepath.Join(dir, f+tc.format)) {
					t.Errorf("skip: file %s not logged: %s", f, logs)
				}
			}
			if !strings.Contains(logs, fmt.Sprintf("line=%d", tc.line)) || strings.Count(logs, "\n") != 2 {
				t.Errorf("skip: log should name line %d once per file: %s", tc.line, logs)
			}

			// fail: the first bad row fails Produce with a permanent data error.
			cfg.BadRows = BadRowsFail
			src := openFS(t, cfg, newFSTask(mem, 0, 1), nil)
			defer src.Close()
			var err error
			for err == nil {
				var res exec.SourceResult
				res, err = src.Produce(context.Background())
				if err == nil && res.Status == exec.Finished {
					t.Fatal("fail: finished without error")
				}
				if res.Batch.Rec != nil {
					res.Batch.Rec.Release()
				}
			}
			wantWhere := fmt.Sprintf("%s:%d: ", file, tc.line)
			if !strings.Contains(err.Error(), wantWhere) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("fail: %v\nwant %q and %q", err, wantWhere, tc.want)
			}
			if sqlerr.Code(err) != tc.code {
				t.Errorf("fail: SQLSTATE %s, want %s", sqlerr.Code(err), tc.code)
			}
			var p exec.Permanent
			if !errors.As(err, &p) || !p.Permanent() {
				t.Errorf("fail: %T is not a permanent error", err)
			}
			if _, err2 := src.Produce(context.Background()); err2 == nil {
				t.Error("fail: Produce after the error succeeded")
			}
		})
	}
}

// Pins: a NULL in a NOT NULL column slipping through.
func TestFileSourceNotNull(t *testing.T) {
	mem := connectortest.CheckedAlloc(t)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.csv"), "1\n\n2\n")
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
	got, task := readText(t, mem, SourceConfig{Path: dir, Format: "csv", Schema: schema})
	checkLines(t, "not null", got, []string{`"1"`, `"2"`})
	if task.Errors.Load() != 1 || !strings.Contains(task.logs.String(), "not-null") {
		t.Errorf("%d errors, log %s", task.Errors.Load(), task.logs.String())
	}
}

// Pins: records longer than the read buffer (which must grow) or split across reads, in either format.
func TestFileSourceLongRecords(t *testing.T) {
	mem := connectortest.CheckedAlloc(t)
	dir := t.TempDir()
	long := strings.Repeat("ab\"\"c,\n", fsReadBuf/7+1000) // > fsReadBuf, quotes and newlines
	writeFile(t, filepath.Join(dir, "a.csv"), "1,\""+strings.ReplaceAll(long, `"`, `""`)+"\",\n2,"+strings.Repeat("y", 3*fsReadBuf)+",\n3,z,")
	got, _ := readText(t, mem, SourceConfig{Path: dir, Format: "csv", Schema: fsKV, BadRows: BadRowsFail})
	checkLines(t, "csv", got, []string{
		fmt.Sprintf("%q|%q|<null>", "1", long),
		fmt.Sprintf("%q|%q|<null>", "2", strings.Repeat("y", 3*fsReadBuf)),
		`"3"|"z"|<null>`,
	})
	jdir := t.TempDir()
	writeFile(t, filepath.Join(jdir, "a.json"), fmt.Sprintf(`{"s":%q,"id":1}`+"\n"+`{"id":2}`, long))
	got, _ = readText(t, mem, SourceConfig{Path: jdir, Format: "json", Schema: fsKV, BadRows: BadRowsFail})
	checkLines(t, "json", got, []string{fmt.Sprintf("%q|%q|<null>", "1", long), `"2"|<null>|<null>`})
}

// fsRestoreFiles writes dir's files for the restore tests: several CSV or JSON files of kv rows with a header, one of them with
// bad rows, one empty and one header-only.
func fsRestoreFiles(t *testing.T, dir, format string) (rows int) {
	id := 0
	for f := range 5 {
		var sb strings.Builder
		if format == "csv" {
			sb.WriteString("id,s,ts\n")
		}
		n := []int{37, 0, 1, 120, 55}[f]
		for range n {
			id++
			switch {
			case f == 3 && id%17 == 0: // a bad row
				if format == "csv" {
					sb.WriteString("oops,x,\n")
				} else {
					sb.WriteString("{oops}\n")
				}
				id--
			case format == "csv":
				fmt.Fprintf(&sb, "%d,\"v %d\nline two\",2026-01-01 00:00:%02d\n", id, id, id%60)
			default:
				fmt.Fprintf(&sb, `{"id":%d,"s":"v %d\nline two","ts":"2026-01-01 00:00:%02d"}`+"\n", id, id, id%60)
			}
		}
		writeFile(t, filepath.Join(dir, fmt.Sprintf("f%d.%s", f, format)), sb.String())
	}
	return id
}

// Pins: a restore that loses or repeats rows: offsets taken before every batch (mid-file, at file boundaries,
// after bad rows, after the end) restored into a fresh source with another batch size; a restore at another
// parallelism, over a changed list or from a truncated offset.
func TestFileSourceRestore(t *testing.T) {
	for _, format := range []string{"csv", "json"} {
		t.Run(format, func(t *testing.T) {
			mem := connectortest.CheckedAlloc(t)
			dir := t.TempDir()
			total := fsRestoreFiles(t, dir, format)
			cfg := SourceConfig{Path: dir, Format: format, Schema: fsKV, CSVHeader: format == "csv", BatchRows: 9}
			src := openFS(t, cfg, newFSTask(mem, 0, 1), nil)
			recs, offsets := connectortest.DrainBounded(t, src, 9)
			connectortest.Must(t, src.Close())
			connectortest.RequireRestores(t, mem, fsKV, recs, offsets, total, func(i int, off []byte, full arrow.RecordBatch, start int64) []arrow.RecordBatch {
				cfg2 := cfg
				cfg2.BatchRows = 4
				src := openFS(t, cfg2, newFSTask(mem, 0, 1), off)
				rest, more := connectortest.DrainBounded(t, src, 4)
				connectortest.Must(t, src.Close())
				// Offsets of the restored read restore too: from the middle of it, read to the end again.
				if len(more) > 2 {
					k := len(more) / 2
					src := openFS(t, cfg, newFSTask(mem, 0, 1), more[k])
					tail, _ := connectortest.DrainBounded(t, src, 9)
					connectortest.Must(t, src.Close())
					before := int64(0)
					for _, r := range rest[:k] {
						before += r.NumRows()
					}
					connectortest.RequireRowsFrom(t, mem, fmt.Sprintf("restore at batch %d, then at its batch %d", i, k), full, start+before, tail)
				}
				return rest
			})

			mid := offsets[5]
			connectortest.RequireOpenFails(t, NewSource(cfg)(0), mid, newFSTask(mem, 0, 2).TaskContext, "parallelism", "restore at another parallelism")
			if err := NewSource(cfg)(0).RestoreOffset(mid[:len(mid)-1]); err == nil {
				t.Error("truncated offset accepted")
			}
			follow := cfg
			follow.Follow = true
			connectortest.RequireOpenFails(t, NewSource(follow)(0), mid, newFSTask(mem, 0, 1).TaskContext, "monitor-interval", "bounded offset into a following source")
			writeFile(t, filepath.Join(dir, "zz."+format), "")
			connectortest.RequireOpenFails(t, NewSource(cfg)(0), mid, newFSTask(mem, 0, 1).TaskContext, "added", "restore after a file was added")
		})
	}
}

// Pins: subtasks that read overlapping or missing files in bounded mode.
func TestFileSourceSubtasks(t *testing.T) {
	mem := connectortest.CheckedAlloc(t)
	dir := t.TempDir()
	for f := range 5 {
		writeFile(t, filepath.Join(dir, fmt.Sprintf("f%d.csv", f)), fmt.Sprintf("%d,a,\n%d,b,\n", 10*f, 10*f+1))
	}
	connectortest.RequireSubtaskFiles(t, []int{1, 2, 3}, func(sub, par int) []int64 {
		src := openFS(t, SourceConfig{Path: filepath.Join(dir, "*.csv"), Format: "csv", Schema: fsKV}, newFSTask(mem, sub, par), nil)
		recs, _ := connectortest.DrainBounded(t, src, DefaultBatchRows)
		connectortest.Must(t, src.Close())
		return connectortest.IDs(recs)
	})
}

// produceFollow calls Produce until it is Idle with nothing left that is due, waiting on IdleWait once so that a
// listing due by then happens; it returns the ids read.
func produceFollow(t *testing.T, src exec.Source) []int64 {
	t.Helper()
	var recs []arrow.RecordBatch
	waited := false
	for {
		res, err := src.Produce(context.Background())
		connectortest.Must(t, err)
		switch res.Status {
		case exec.Produced:
			recs = append(recs, res.Batch.Rec)
			continue
		case exec.Finished:
			t.Fatal("a following source finished")
		}
		if waited {
			return connectortest.IDs(recs)
		}
		select {
		case <-src.(exec.IdleWaiter).IdleWait():
		case <-time.After(10 * time.Second):
			t.Fatal("IdleWait never fired")
		}
		waited = true
	}
}

// renameIn writes a CSV file of ids under a hidden name and renames it into dir, as the file sink commits.
func renameIn(t *testing.T, dir, name string, ids ...int64) {
	t.Helper()
	var sb strings.Builder
	for _, id := range ids {
		fmt.Fprintf(&sb, "%d,v,\n", id)
	}
	tmp := filepath.Join(dir, "."+name+".tmp")
	writeFile(t, tmp, sb.String())
	connectortest.Must(t, os.Rename(tmp, filepath.Join(dir, name)))
}

// Pins: a following source that misses a file renamed in after it started, re-reads files after a restore
// (done files are in the offset), loses the rest of a file it was in the middle of, reads a file on two subtasks,
// or busy-polls (IdleWait) instead of waiting for the interval.
func TestFileSourceFollow(t *testing.T) {
	mem := connectortest.CheckedAlloc(t)
	dir := t.TempDir()
	renameIn(t, dir, "a.csv", 1, 2, 3)
	renameIn(t, dir, "b.csv", 4)
	cfg := SourceConfig{Path: dir, Format: "csv", Schema: fsKV, Follow: true, MonitorInterval: 5 * time.Millisecond, BatchRows: 2}
	src := openFS(t, cfg, newFSTask(mem, 0, 1), nil)
	if ids := produceFollow(t, src); fmt.Sprint(ids) != "[1 2 3 4]" {
		t.Fatalf("first read %v", ids)
	}
	renameIn(t, dir, "0-early-name.csv", 5, 6, 7) // sorts before the files already read
	if ids := produceFollow(t, src); fmt.Sprint(ids) != "[5 6 7]" {
		t.Fatalf("after a file was renamed in: %v", ids)
	}
	// Snapshot mid-file: one batch of a new file.
	renameIn(t, dir, "c.csv", 8, 9, 10, 11, 12)
	var got []int64
	for len(got) == 0 {
		res, err := src.Produce(context.Background())
		connectortest.Must(t, err)
		if res.Status == exec.Produced {
			got = connectortest.IDs([]arrow.RecordBatch{res.Batch.Rec})
		} else {
			<-src.(exec.IdleWaiter).IdleWait()
		}
	}
	if fmt.Sprint(got) != "[8 9]" {
		t.Fatalf("first batch of c.csv: %v", got)
	}
	off, err := src.SnapshotOffset()
	connectortest.Must(t, err)
	rest := produceFollow(t, src)
	connectortest.Must(t, src.Close())
	if fmt.Sprint(rest) != "[10 11 12]" {
		t.Fatalf("rest of c.csv: %v", rest)
	}

	// Restore: the rest of c.csv, then only files that are new; old ones are not read again.
	renameIn(t, dir, "d.csv", 13)
	src = openFS(t, cfg, newFSTask(mem, 0, 1), off)
	if ids := produceFollow(t, src); fmt.Sprint(ids) != "[10 11 12 13]" {
		t.Fatalf("after restore: %v", ids)
	}
	// A done file that disappears leaves the offset; the offset stays small.
	off1, err := src.SnapshotOffset()
	connectortest.Must(t, err)
	connectortest.Must(t, os.Remove(filepath.Join(dir, "a.csv")))
	renameIn(t, dir, "e.csv", 14)
	if ids := produceFollow(t, src); fmt.Sprint(ids) != "[14]" {
		t.Fatalf("after a removal: %v", ids)
	}
	off2, err := src.SnapshotOffset()
	connectortest.Must(t, err)
	connectortest.Must(t, src.Close())
	o1, err := decodeFSOffset(off1)
	connectortest.Must(t, err)
	o2, err := decodeFSOffset(off2)
	connectortest.Must(t, err)
	if len(o1.done) != 5 || len(o2.done) != 5 || slices.Contains(o2.done, filepath.Join(dir, "a.csv")) {
		t.Errorf("done sets %v then %v", o1.done, o2.done)
	}
	if len(off2) > 100 {
		t.Errorf("offset of %d bytes for 5 files (front-coded names expected)", len(off2))
	}
	src = openFS(t, cfg, newFSTask(mem, 0, 1), off2)
	if ids := produceFollow(t, src); len(ids) != 0 {
		t.Errorf("restored at the end: read %v", ids)
	}
	connectortest.Must(t, src.Close())

	// Parallelism 2: every file read once, the same after restores.
	seen := map[int64]int{}
	var offs [2][]byte
	for sub := range 2 {
		src := openFS(t, cfg, newFSTask(mem, sub, 2), nil)
		for _, id := range produceFollow(t, src) {
			seen[id]++
		}
		offs[sub], err = src.SnapshotOffset()
		connectortest.Must(t, err)
		connectortest.Must(t, src.Close())
	}
	for f := range 6 {
		renameIn(t, dir, fmt.Sprintf("p%d.csv", f), int64(100+f))
	}
	for sub := range 2 {
		src := openFS(t, cfg, newFSTask(mem, sub, 2), offs[sub])
		for _, id := range produceFollow(t, src) {
			seen[id]++
		}
		connectortest.Must(t, src.Close())
	}
	if len(seen) != 17 { // rows 4 to 14 (a.csv was removed) and 100 to 105
		t.Errorf("parallelism 2 read %d distinct rows, want 17: %v", len(seen), seen)
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("row %d read %d times", id, n)
		}
	}
}

// Pins: a following source that fails on a listed file deleted before it was read (it is skipped and logged), or
// whose IdleWait fires before the interval is up.
func TestFileSourceFollowVanished(t *testing.T) {
	mem := connectortest.CheckedAlloc(t)
	dir := t.TempDir()
	renameIn(t, dir, "q1.csv", 1, 2, 3)
	renameIn(t, dir, "q2.csv", 4)
	task := newFSTask(mem, 0, 1)
	src := openFS(t, SourceConfig{Path: dir, Format: "csv", Schema: fsKV, Follow: true, MonitorInterval: time.Hour, BatchRows: 2}, task, nil)
	defer src.Close()
	res, err := src.Produce(context.Background())
	connectortest.Must(t, err)
	if ids := connectortest.IDs([]arrow.RecordBatch{res.Batch.Rec}); fmt.Sprint(ids) != "[1 2]" {
		t.Fatalf("first batch %v", ids)
	}
	connectortest.Must(t, os.Remove(filepath.Join(dir, "q2.csv")))
	var ids []int64
	for {
		res, err := src.Produce(context.Background())
		connectortest.Must(t, err)
		if res.Status != exec.Produced {
			if res.Status != exec.Idle {
				t.Fatalf("status %d", res.Status)
			}
			break
		}
		ids = append(ids, connectortest.IDs([]arrow.RecordBatch{res.Batch.Rec})...)
	}
	if fmt.Sprint(ids) != "[3]" || !strings.Contains(task.logs.String(), "disappeared") {
		t.Errorf("read %v, log %s", ids, task.logs.String())
	}
	select {
	case <-src.(exec.IdleWaiter).IdleWait():
		t.Error("IdleWait fired long before the monitor interval")
	case <-time.After(20 * time.Millisecond):
	}
}

// Pins: options read wrongly, unknown or misapplied options accepted.
func TestFileSourceOptions(t *testing.T) {
	cfg, err := SourceConfigFromOptions(fsKV, "/p", map[string]string{
		"connector": "filesystem", "path": "x", "format": "CSV", "csv.header": "true",
		"source.monitor-interval": "1 min", "errors.bad-rows": "fail",
	})
	connectortest.Must(t, err)
	if cfg.Path != "/p" || cfg.Format != "csv" || !cfg.CSVHeader || !cfg.Follow || cfg.MonitorInterval != time.Minute || cfg.BadRows != BadRowsFail {
		t.Errorf("%+v", cfg)
	}
	cfg, err = SourceConfigFromOptions(fsKV, "/p", map[string]string{"format": "json", "json.ignore-parse-errors": "false"})
	connectortest.Must(t, err)
	if cfg.Follow || cfg.BadRows != BadRowsFail || cfg.Format != "json" {
		t.Errorf("%+v", cfg)
	}
	cfg, err = SourceConfigFromOptions(fsKV, "/p", map[string]string{"format": "json", "source.monitor-interval": "250ms"})
	connectortest.Must(t, err)
	if cfg.BadRows != BadRowsSkip || cfg.MonitorInterval != 250*time.Millisecond {
		t.Errorf("%+v", cfg)
	}
	for _, bad := range []map[string]string{
		{},
		{"format": "parquet"},
		{"format": "csv", "bogus": "1"},
		{"format": "json", "csv.header": "true"},
		{"format": "csv", "csv.header": "yes please"},
		{"format": "csv", "source.monitor-interval": "0"},
		{"format": "csv", "source.monitor-interval": "soon"},
		{"format": "csv", "errors.bad-rows": "ignore"},
		{"format": "csv", "errors.bad-rows": "skip", "csv.ignore-parse-errors": "false"},
	} {
		if _, err := SourceConfigFromOptions(fsKV, "/p", bad); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
	list := arrow.NewSchema([]arrow.Field{{Name: "l", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64)}}, nil)
	if _, err := SourceConfigFromOptions(list, "/p", map[string]string{"format": "csv"}); err == nil {
		t.Error("a list column accepted")
	}
}

// Pins: garbage offsets accepted.
func TestFileSourceOffsetDecode(t *testing.T) {
	for _, b := range [][]byte{nil, {1}, {2, 0}, {1, 2}, {1, 0, 0, 1}, {1, 1, 0, 1, 0, 0, 0, 0}} {
		if _, err := decodeFSOffset(b); err == nil {
			t.Errorf("%v decoded", b)
		}
	}
}

// BenchmarkFileSourceCSV reads a bid-like CSV file (Nexmark's bid columns) as the file sink writes it.
func BenchmarkFileSourceCSV(b *testing.B) {
	mem := memory.NewGoAllocator()
	dir := b.TempDir()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "auction", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "bidder", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "price", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "channel", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "url", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "date_time", Type: &arrow.TimestampType{Unit: arrow.Microsecond}, Nullable: true},
		{Name: "extra", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	const rows = 200_000
	var recs []arrow.RecordBatch
	channels := []string{"Google", "Facebook", "Baidu", "Apple"}
	for r := 0; r < rows; r += 4096 {
		bld := array.NewRecordBuilder(mem, schema)
		for i := r; i < min(r+4096, rows); i++ {
			h := uint64(i) * 0x9E3779B97F4A7C15
			bld.Field(0).(*array.Int64Builder).Append(int64(1000 + h%1000))
			bld.Field(1).(*array.Int64Builder).Append(int64(1000 + h>>20%5000))
			bld.Field(2).(*array.Int64Builder).Append(int64(h >> 40 % 10_000_000))
			bld.Field(3).(*array.StringBuilder).Append(channels[h%4])
			bld.Field(4).(*array.StringBuilder).Append(fmt.Sprintf("https://www.nexmark.com/%x/item.htm?query=1", h>>48))
			bld.Field(5).(*array.TimestampBuilder).Append(arrow.Timestamp(1_700_000_000_000_000 + int64(i)*1000))
			bld.Field(6).(*array.StringBuilder).Append(strings.Repeat("x", int(h%20)))
		}
		recs = append(recs, bld.NewRecordBatch())
		bld.Release()
	}
	fsSinkFiles(b, mem, dir, "csv", false, schema, recs)
	connectortest.BenchReadAll(b, mem, rows, func() exec.Source {
		return NewSource(SourceConfig{Path: dir, Format: "csv", Schema: schema})(0)
	})
	b.ReportMetric(float64(rows*b.N)/b.Elapsed().Seconds(), "file_source_csv_rows_per_sec:rows/s")
}

// Pins: a file source's progress (exec.SourceProgress) not matching the bytes it has not read yet: bounded, per
// subtask and after a restore; following, the bytes of listed files not read yet. Every line is 5 bytes here.
func TestFileSourceProgress(t *testing.T) {
	mem := connectortest.CheckedAlloc(t)
	dir := t.TempDir()
	renameIn(t, dir, "a.csv", 1, 2, 3)
	renameIn(t, dir, "b.csv", 4, 5, 6, 7)
	renameIn(t, dir, "c.csv", 8, 9)
	cfg := SourceConfig{Path: dir, Format: "csv", Schema: fsKV, BatchRows: 2}
	// drain reads src to its end, checking that the bytes left fall by 5 per row from start; it returns the rows.
	drain := func(src exec.Source, start int64) int64 {
		t.Helper()
		sp := src.(exec.SourceProgress)
		if lag, bytes, total := sp.Progress(); lag != -1 || bytes != start || total != -1 {
			t.Fatalf("progress at open: %d records, %d bytes left of %d; want %d bytes, the rest unknown", lag, bytes, total, start)
		}
		var read int64
		for {
			res, err := src.Produce(context.Background())
			connectortest.Must(t, err)
			if res.Status == exec.Finished {
				break
			}
			read += int64(res.Batch.Rows())
			res.Batch.Release()
			if _, bytes, _ := sp.Progress(); bytes != start-5*read {
				t.Fatalf("after %d rows: %d bytes left, want %d", read, bytes, start-5*read)
			}
		}
		connectortest.Must(t, src.Close())
		return read
	}
	if n := drain(openFS(t, cfg, newFSTask(mem, 0, 1), nil), 45); n != 9 {
		t.Fatalf("read %d rows", n)
	}
	// Subtask 0 of 2 reads a.csv and c.csv, subtask 1 b.csv.
	if n := drain(openFS(t, cfg, newFSTask(mem, 0, 2), nil), 25); n != 5 {
		t.Fatalf("subtask 0 of 2 read %d rows", n)
	}
	if n := drain(openFS(t, cfg, newFSTask(mem, 1, 2), nil), 20); n != 4 {
		t.Fatalf("subtask 1 of 2 read %d rows", n)
	}
	// Restored after the batches [1 2], [3] (the end of a.csv), [4 5].
	for batches, left := range map[int]int64{1: 35, 2: 30, 3: 20} {
		_, off := connectortest.Drain(t, mem, NewSource(cfg)(0), nil, 0, 1, batches)
		if n := drain(openFS(t, cfg, newFSTask(mem, 0, 1), off), left); n != left/5 {
			t.Fatalf("restored after %d batches: read %d rows", batches, n)
		}
	}

	// Following: the listed files' bytes not read yet, a new file's once listed.
	follow := cfg
	follow.Follow, follow.MonitorInterval = true, 5*time.Millisecond
	src := openFS(t, follow, newFSTask(mem, 0, 1), nil)
	defer src.Close()
	sp := src.(exec.SourceProgress)
	if _, bytes, _ := sp.Progress(); bytes != 45 {
		t.Fatalf("following, at open: %d bytes left, want 45", bytes)
	}
	if ids := produceFollow(t, src); len(ids) != 9 {
		t.Fatalf("following read %v", ids)
	}
	if _, bytes, _ := sp.Progress(); bytes != 0 {
		t.Fatalf("following, everything read: %d bytes left", bytes)
	}
	renameIn(t, dir, "d.csv", 1, 2, 3, 4, 5)
	for {
		res, err := src.Produce(context.Background())
		connectortest.Must(t, err)
		if res.Status == exec.Produced {
			res.Batch.Release()
			break
		}
		<-src.(exec.IdleWaiter).IdleWait()
	}
	if _, bytes, _ := sp.Progress(); bytes != 15 {
		t.Fatalf("following, 2 rows of a new file of 5 read: %d bytes left, want 15", bytes)
	}
}
