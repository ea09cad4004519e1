package wasm

import (
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/exec/expr"
	"github.com/clinksql/clinksql/exec/wasm/wasmtest"
	"github.com/clinksql/clinksql/sqlerr"
)

var (
	text    = expr.TypeText
	bigint  = expr.TypeBigint
	double  = expr.TypeDouble
	boolean = expr.TypeBool
)

// run evaluates fn over one column per argument (Go values, nil for NULL) and returns the text forms, "NULL" for
// NULL, with the error mode mode.
func run(t *testing.T, fn *Function, ret arrow.DataType, mode expr.ErrorMode, bad *exec.Counter, cols ...[]any) ([]string, error) {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	var fields []arrow.Field
	var arrs []arrow.Array
	var args []expr.Expr
	for i, c := range cols {
		typ := fn.params[i]
		b := array.NewBuilder(mem, typ)
		for _, v := range c {
			switch {
			case v == nil:
				b.AppendNull()
			default:
				switch bb := b.(type) {
				case *array.StringBuilder:
					bb.Append(v.(string))
				case *array.BinaryBuilder:
					bb.Append([]byte(v.(string)))
				case *array.Int64Builder:
					bb.Append(int64(v.(int)))
				case *array.Int32Builder:
					bb.Append(int32(v.(int)))
				case *array.Float64Builder:
					bb.Append(v.(float64))
				case *array.Float32Builder:
					bb.Append(float32(v.(float64)))
				case *array.Date32Builder:
					bb.Append(arrow.Date32(v.(int)))
				case *array.TimestampBuilder:
					bb.Append(arrow.Timestamp(v.(int)))
				default:
					t.Fatalf("builder %T", b)
				}
			}
		}
		arrs = append(arrs, b.NewArray())
		b.Release()
		fields = append(fields, arrow.Field{Name: "c", Type: typ, Nullable: true})
		args = append(args, expr.Column(i, "c", typ))
	}
	rec := array.NewRecordBatch(arrow.NewSchema(fields, nil), arrs, int64(arrs[0].Len()))
	for _, a := range arrs {
		a.Release()
	}
	defer rec.Release()
	ctx := &expr.Context{Alloc: mem, Mode: mode, BadValues: bad}
	defer ctx.Close()
	out, err := expr.UserCall(fn, ret, args...).Eval(ctx, rec)
	if err != nil {
		return nil, err
	}
	defer out.Release()
	res := make([]string, out.Len())
	for i := range res {
		if out.IsNull(i) {
			res[i] = "NULL"
		} else {
			res[i] = out.ValueStr(i)
		}
	}
	return res, nil
}

func compile(t *testing.T, bin []byte, export string, params []arrow.DataType, ret arrow.DataType, opts map[string]string) *Function {
	t.Helper()
	o, err := ParseOptions(export, opts)
	if err != nil {
		t.Fatal(err)
	}
	f, err := Compile(export, bin, o, params, ret)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// pins: count_char over a batch with NULLs (not called: strict) and UTF-8, through expr.UserCall; one instance
// per Context, reused across batches.
func TestCountChar(t *testing.T) {
	bin := wasmtest.Bytes(t, "countchar")
	f := compile(t, bin, "count_char", []arrow.DataType{text, text}, bigint, nil)
	if err := f.Check(); err != nil {
		t.Fatal(err)
	}
	got, err := run(t, f, bigint, expr.ErrorsFail, nil,
		[]any{"banana", "héhé é", nil, "", "abc", "日本日本日", "x"},
		[]any{"a", "é", "a", "a", nil, "日", ""})
	if err != nil {
		t.Fatal(err)
	}
	if want := "3,3,NULL,0,NULL,3,0"; strings.Join(got, ",") != want {
		t.Fatalf("got %s, want %s", strings.Join(got, ","), want)
	}
	// A long string grows the argument buffer.
	long := strings.Repeat("ab", 100_000)
	if got, err := run(t, f, bigint, expr.ErrorsFail, nil, []any{long, "xx"}, []any{"b", "x"}); err != nil || strings.Join(got, ",") != "100000,2" {
		t.Fatalf("long: %v %v", got, err)
	}
}

// pins: every argument and result kind of the ABI: strings in and out (UTF-8), DOUBLE, BOOLEAN, REAL, DATE,
// TIMESTAMP, INT to SMALLINT, BYTEA.
func TestValueKinds(t *testing.T) {
	bin := wasmtest.Bytes(t, "misbehave")
	for _, c := range []struct {
		export string
		params []arrow.DataType
		ret    arrow.DataType
		cols   [][]any
		want   string
	}{
		{"reverse", []arrow.DataType{text}, text, [][]any{{"abc", "héllo", "", nil, "日本"}}, "cba,olléh,,NULL,本日"},
		{"hypot", []arrow.DataType{double, double}, double, [][]any{{3.0, 5.0}, {4.0, 12.0}}, "5,13"},
		{"is_even", []arrow.DataType{bigint}, boolean, [][]any{{2, 3, nil}}, "true,false,NULL"},
		{"half", []arrow.DataType{expr.TypeReal}, expr.TypeReal, [][]any{{3.0}}, "1.5"},
		{"next_day", []arrow.DataType{expr.TypeDate}, expr.TypeDate, [][]any{{0}}, "1970-01-02"},
		{"plus_hour", []arrow.DataType{expr.TypeTimestamp}, expr.TypeTimestamp, [][]any{{0}}, "1970-01-01T01:00:00"},
		{"small", []arrow.DataType{expr.TypeInt}, expr.TypeSmallint, [][]any{{7, -7}}, "7,-7"},
		{"byte_sum", []arrow.DataType{expr.TypeBytea}, bigint, [][]any{{"\x01\x02\xff", ""}}, "258,0"},
	} {
		f := compile(t, bin, c.export, c.params, c.ret, nil)
		got, err := run(t, f, c.ret, expr.ErrorsFail, nil, c.cols...)
		if err != nil {
			t.Errorf("%s: %v", c.export, err)
			continue
		}
		if g := strings.Join(got, ","); g != c.want {
			t.Errorf("%s: got %s, want %s", c.export, g, c.want)
		}
	}
}

// pins: a trap, a panic (proc_exit), a result out of range, a string outside the module's memory and text that
// is not UTF-8 are bad values: NULL and counted by default, the error in fail mode; the rows after a trap get a
// fresh instance.
func TestBadValues(t *testing.T) {
	bin := wasmtest.Bytes(t, "misbehave")
	for _, c := range []struct {
		export string
		params []arrow.DataType
		ret    arrow.DataType
		col    []any
		want   string
		code   string
		msg    string
	}{
		{"boom", []arrow.DataType{bigint}, bigint, []any{1, -1, 2}, "1,NULL,2", sqlerr.DataException, "function boom trapped: unreachable"},
		{"small", []arrow.DataType{expr.TypeInt}, expr.TypeSmallint, []any{1, 70000}, "1,NULL", sqlerr.NumericOutOfRange, "out of range for type smallint"},
		{"bad_ptr", []arrow.DataType{bigint}, text, []any{1}, "NULL", sqlerr.DataException, "outside its memory"},
		{"bad_utf8", []arrow.DataType{bigint}, text, []any{1}, "NULL", "22021", "not valid UTF-8"},
	} {
		f := compile(t, bin, c.export, c.params, c.ret, nil)
		var n exec.Counter
		got, err := run(t, f, c.ret, expr.ErrorsNull, &n, c.col)
		if err != nil || strings.Join(got, ",") != c.want || n.Load() != 1 {
			t.Errorf("%s null mode: %v %v, %d bad values", c.export, got, err, n.Load())
		}
		_, err = run(t, f, c.ret, expr.ErrorsFail, nil, c.col)
		if sqlerr.Code(err) != c.code || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s fail mode: %v (%s)", c.export, err, sqlerr.Code(err))
		}
	}
	// The panic's message reaches the error's detail.
	f := compile(t, bin, "boom", []arrow.DataType{bigint}, bigint, nil)
	_, err := run(t, f, bigint, expr.ErrorsFail, nil, []any{-1})
	if e := sqlerr.As(err); !strings.Contains(e.Detail, "boom: negative") {
		t.Errorf("detail %q", e.Detail)
	}
}

// pins: a true wasm trap (unreachable) is a bad value.
func TestUnreachable(t *testing.T) {
	bin := moduleWith(fn("trap", []byte{i64}, []byte{i64}, op(0x00))).bytes() // unreachable
	f := compile(t, bin, "trap", []arrow.DataType{bigint}, bigint, nil)
	var n exec.Counter
	got, err := run(t, f, bigint, expr.ErrorsNull, &n, []any{1, nil, 2})
	if err != nil || strings.Join(got, ",") != "NULL,NULL,NULL" || n.Load() != 2 {
		t.Fatalf("null mode: %v %v %d", got, err, n.Load())
	}
	_, err = run(t, f, bigint, expr.ErrorsFail, nil, []any{1})
	if sqlerr.Code(err) != sqlerr.DataException || !strings.Contains(err.Error(), "function trap trapped: unreachable") {
		t.Fatalf("fail mode: %v", err)
	}
}

// pins: a function that loops forever fails its batch at the timeout (57014), in either mode, instead of hanging;
// the next batch gets a fresh instance.
func TestTimeout(t *testing.T) {
	bin := wasmtest.Bytes(t, "misbehave")
	f := compile(t, bin, "spin", []arrow.DataType{bigint}, bigint, map[string]string{"timeout": "300ms"})
	start := time.Now()
	_, err := run(t, f, bigint, expr.ErrorsNull, nil, []any{1, -1, 2})
	if sqlerr.Code(err) != sqlerr.QueryCanceled || !strings.Contains(err.Error(), "function spin: a call did not return within 300ms") {
		t.Fatalf("got %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("took %s", d)
	}
	// Many quick calls in one batch are each within the timeout, however long the batch takes.
	got, err := run(t, f, bigint, expr.ErrorsFail, nil, []any{1, 2, 3})
	if err != nil || strings.Join(got, ",") != "1,2,3" {
		t.Fatalf("after: %v %v", got, err)
	}
	// A handwritten infinite loop (loop br 0 end), not Go's.
	loop := moduleWith(fn("loop", []byte{i64}, []byte{i64}, op(0x03, 0x40, 0x0c, 0x00, 0x0b), op(0x42, 0x00))).bytes()
	lf := compile(t, loop, "loop", []arrow.DataType{bigint}, bigint, map[string]string{"timeout": "100ms"})
	if _, err := run(t, lf, bigint, expr.ErrorsNull, nil, []any{1}); sqlerr.Code(err) != sqlerr.QueryCanceled {
		t.Fatalf("loop: %v", err)
	}
}

// pins: memory.limit caps the module's memory: a function that needs more fails that row as a bad value, with a
// hint naming the limit.
func TestMemoryLimit(t *testing.T) {
	bin := wasmtest.Bytes(t, "misbehave")
	f := compile(t, bin, "hog", []arrow.DataType{bigint}, bigint, map[string]string{"memory.limit": "16MB"})
	var n exec.Counter
	got, err := run(t, f, bigint, expr.ErrorsNull, &n, []any{1, 64, 1})
	if err != nil || got[0] != "1" || got[1] != "NULL" || got[2] != "1" || n.Load() != 1 {
		t.Fatalf("got %v %v, %d bad", got, err, n.Load())
	}
	_, err = run(t, f, bigint, expr.ErrorsFail, nil, []any{64})
	if e := sqlerr.As(err); e == nil || !strings.Contains(e.Hint, "limit of 16 MiB") {
		t.Fatalf("fail mode: %v", err)
	}
	// The same module without the cap takes the memory.
	big := compile(t, bin, "hog", []arrow.DataType{bigint}, bigint, nil)
	if got, err := run(t, big, bigint, expr.ErrorsFail, nil, []any{32}); err != nil || got[0] != "1" {
		t.Fatalf("64 MiB: %v %v", got, err)
	}
}

// pins: CREATE's checks: each says what is wrong.
func TestCompileErrors(t *testing.T) {
	cc := wasmtest.Bytes(t, "countchar")
	good := fn("f", []byte{i64}, []byte{i64}, op(0x20, 0x00))
	for _, c := range []struct {
		name   string
		bin    []byte
		export string
		params []arrow.DataType
		ret    arrow.DataType
		want   string
	}{
		{"not wasm", []byte("hello, world"), "f", []arrow.DataType{bigint}, bigint, "is not a WebAssembly binary"},
		{"damaged", append([]byte("\x00asm\x01\x00\x00\x00"), 0x01, 0x05, 0x01), "f", []arrow.DataType{bigint}, bigint, "does not compile"},
		{"missing export", cc, "count_chars", []arrow.DataType{text, text}, bigint, "does not export count_chars (the function; name another with WITH (export = '...'); it exports _initialize, clink_alloc, clink_free, count_char)"},
		{"wrong signature", cc, "count_char", []arrow.DataType{text}, bigint, "the module's count_char has the signature (i32, i32, i32, i32) -> i64; function count_char needs (i32, i32) -> i64"},
		{"wrong result", cc, "count_char", []arrow.DataType{text, text}, double, "needs (i32, i32, i32, i32) -> f64"},
		{"no allocator", moduleWith(good).without("clink_alloc"), "f", []arrow.DataType{bigint}, bigint, "does not export clink_alloc"},
		{"no memory", moduleWith(good).without("memory"), "f", []arrow.DataType{bigint}, bigint, `does not export its memory as "memory"`},
		{"bad import", moduleWith(good).importing("env", "now"), "f", []arrow.DataType{bigint}, bigint, "imports env.now: a module may import only WASI"},
		{"command", moduleWith(good, fn("_start", nil, nil)).bytes(), "f", []arrow.DataType{bigint}, bigint, "is a command (it exports _start)"},
		{"decimal", cc, "count_char", []arrow.DataType{expr.TypeDecimal(10, 2)}, bigint, "type numeric is not supported by wasm functions"},
	} {
		o, _ := ParseOptions(c.export, nil)
		_, err := Compile(c.export, c.bin, o, c.params, c.ret)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
		}
	}
	// A module whose _initialize traps does not instantiate.
	bad := moduleWith(good, fn("_initialize", nil, nil, op(0x00))).bytes()
	f := compile(t, bad, "f", []arrow.DataType{bigint}, bigint, nil)
	if err := f.Check(); sqlerr.Code(err) != sqlerr.InvalidFunctionDefinition || !strings.Contains(err.Error(), "does not instantiate") {
		t.Errorf("trapping _initialize: %v", err)
	}
}

func TestParseOptions(t *testing.T) {
	o, err := ParseOptions("f", map[string]string{"export": "g", "memory.limit": "1MB", "timeout": "250ms"})
	if err != nil || o.Export != "g" || o.Limits.MemoryPages != 16 || o.Limits.Timeout != 250*time.Millisecond {
		t.Fatalf("%+v %v", o, err)
	}
	o, _ = ParseOptions("f", nil)
	if o.Export != "f" || o.Limits.MemoryPages != 1024 || o.Limits.Timeout != 10*time.Second {
		t.Fatalf("defaults %+v", o)
	}
	for opts, want := range map[string]string{
		"memory.limit=lots": "invalid value for option 'memory.limit'",
		"timeout=-1s":       "invalid value for option 'timeout'",
		"exprot=g":          `unknown option "exprot" for a wasm function (known: export, memory.limit, timeout)`,
	} {
		k, v, _ := strings.Cut(opts, "=")
		if _, err := ParseOptions("f", map[string]string{k: v}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v", opts, err)
		}
	}
}

// ---------- a minimal wasm encoder for hand-made modules ----------

const (
	i32 = 0x7f
	i64 = 0x7e
)

type testFn struct {
	name            string
	params, results []byte
	body            []byte
}

// fn is a function of the module; its body is the instructions given, then end.
func fn(name string, params, results []byte, instrs ...[]byte) testFn {
	var body []byte
	for _, in := range instrs {
		body = append(body, in...)
	}
	return testFn{name, params, results, body}
}

func op(b ...byte) []byte { return b }

// testModule is a module of functions plus memory and a clink_alloc that returns 1024; without drops exports
// and importing adds a function import.
type testModule struct {
	fns     []testFn
	drop    map[string]bool
	imports [][2]string
}

func moduleWith(fns ...testFn) testModule { return testModule{fns: fns, drop: map[string]bool{}} }

func (m testModule) without(name string) []byte { m.drop[name] = true; return m.bytes() }

func (m testModule) importing(mod, name string) []byte {
	m.imports = append(m.imports, [2]string{mod, name})
	return m.bytes()
}

func leb(n int) []byte {
	var out []byte
	for {
		b := byte(n & 0x7f)
		n >>= 7
		if n == 0 {
			return append(out, b)
		}
		out = append(out, b|0x80)
	}
}

func name(s string) []byte { return append(leb(len(s)), s...) }

func vec(items ...[]byte) []byte {
	out := leb(len(items))
	for _, it := range items {
		out = append(out, it...)
	}
	return out
}

func section(id byte, content []byte) []byte {
	return append(append([]byte{id}, leb(len(content))...), content...)
}

func (m testModule) bytes() []byte {
	fns := append([]testFn{fn("clink_alloc", []byte{i32}, []byte{i32}, op(0x41, 0x80, 0x08))}, m.fns...)
	var types, funcs, exports, codes, imports [][]byte
	for _, imp := range m.imports {
		types = append(types, []byte{0x60, 0x00, 0x00})
		imports = append(imports, append(append(name(imp[0]), name(imp[1])...), 0x00, byte(len(types)-1)))
	}
	for i, f := range fns {
		types = append(types, append(append([]byte{0x60}, vec(bytesOf(f.params)...)...), vec(bytesOf(f.results)...)...))
		funcs = append(funcs, leb(len(types)-1))
		if !m.drop[f.name] {
			exports = append(exports, append(name(f.name), 0x00, byte(len(m.imports)+i)))
		}
		body := append([]byte{0x00}, append(f.body, 0x0b)...)
		codes = append(codes, append(leb(len(body)), body...))
	}
	if !m.drop["memory"] {
		exports = append(exports, append(name("memory"), 0x02, 0x00))
	}
	out := []byte("\x00asm\x01\x00\x00\x00")
	out = append(out, section(1, vec(types...))...)
	if len(imports) > 0 {
		out = append(out, section(2, vec(imports...))...)
	}
	out = append(out, section(3, vec(funcs...))...)
	out = append(out, section(5, vec([]byte{0x00, 0x01}))...)
	out = append(out, section(7, vec(exports...))...)
	out = append(out, section(10, vec(codes...))...)
	return out
}

func bytesOf(b []byte) [][]byte {
	out := make([][]byte, len(b))
	for i, x := range b {
		out[i] = []byte{x}
	}
	return out
}
