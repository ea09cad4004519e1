package wasm

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/clinksql/clinksql/exec/expr"
	"github.com/clinksql/clinksql/sqlerr"
)

// Limits bound what one instance of a function may take.
type Limits struct {
	// MemoryPages caps the module's linear memory, in 64 KiB pages.
	MemoryPages uint32
	// Timeout bounds each call (and the instantiation, _initialize included).
	Timeout time.Duration
}

// Defaults of the WITH options.
const (
	DefaultMemory  = 64 << 20
	DefaultTimeout = 10 * time.Second
	pageSize       = 64 << 10
)

// Options are a wasm function's WITH options: the export it calls and its limits.
type Options struct {
	Export string
	Limits Limits
}

// optionNames are the WITH options a wasm function takes.
var optionNames = []string{"export", "memory.limit", "timeout"}

// ParseOptions reads a wasm function's WITH options (keys as written, lower-cased here). export defaults to the
// function's name, memory.limit to 64MB (a size: 16MB, 512kB, 1GB, bytes), timeout to 10s (a Go duration: 500ms,
// 2s). Errors are 22023 naming the option; the caller points them at it.
func ParseOptions(function string, opts map[string]string) (Options, error) {
	o := Options{Export: function, Limits: Limits{MemoryPages: DefaultMemory / pageSize, Timeout: DefaultTimeout}}
	for k, v := range opts {
		switch strings.ToLower(k) {
		case "export":
			if v == "" {
				return o, sqlerr.New(sqlerr.InvalidParameter, sqlerr.NoPos, "option 'export' must name the module's function")
			}
			o.Export = v
		case "memory.limit":
			n, err := parseSize(v)
			if err != nil || n < pageSize || n > 4<<30 {
				return o, sqlerr.New(sqlerr.InvalidParameter, sqlerr.NoPos,
					"invalid value for option 'memory.limit': %q (a size from 64kB to 4GB, e.g. '16MB')", v)
			}
			o.Limits.MemoryPages = uint32((n + pageSize - 1) / pageSize)
		case "timeout":
			d, err := time.ParseDuration(strings.ReplaceAll(v, " ", ""))
			if err != nil || d <= 0 {
				return o, sqlerr.New(sqlerr.InvalidParameter, sqlerr.NoPos,
					"invalid value for option 'timeout': %q (a duration, e.g. '500ms' or '10s')", v)
			}
			o.Limits.Timeout = d
		default:
			return o, sqlerr.New(sqlerr.InvalidParameter, sqlerr.NoPos, "unknown option %q for a wasm function (known: %s)",
				k, strings.Join(optionNames, ", "))
		}
	}
	return o, nil
}

// parseSize reads 64MB, 512 kB, 1GiB or a number of bytes (a kB is 1024 bytes, as in Postgres' settings).
func parseSize(s string) (int64, error) {
	s = strings.TrimSpace(s)
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	n, err := strconv.ParseInt(s[:i], 10, 64)
	if err != nil {
		return 0, err
	}
	mult := map[string]int64{"": 1, "b": 1, "kb": 1 << 10, "kib": 1 << 10, "mb": 1 << 20, "mib": 1 << 20,
		"gb": 1 << 30, "gib": 1 << 30}
	m, ok := mult[strings.ToLower(strings.TrimSpace(s[i:]))]
	if !ok || n > (8<<30)/m {
		return 0, fmt.Errorf("bad size %q", s)
	}
	return n * m, nil
}

// ---------- runtimes and compiled modules, shared in the process ----------

// cache is the compilation cache every Runtime shares: a module's machine code is made once per process.
var cache = wazero.NewCompilationCache()

// runtime is a wazero Runtime for one memory limit (wazero caps memory per Runtime), with WASI instantiated and
// the modules compiled in it, by SHA-256.
type runtime struct {
	r        wazero.Runtime
	mu       sync.Mutex
	compiled map[[32]byte]wazero.CompiledModule
}

var (
	runtimesMu sync.Mutex
	runtimes   = map[uint32]*runtime{}
)

func runtimeFor(pages uint32) (*runtime, error) {
	runtimesMu.Lock()
	defer runtimesMu.Unlock()
	if rt, ok := runtimes[pages]; ok {
		return rt, nil
	}
	ctx := context.Background()
	cfg := wazero.NewRuntimeConfig().WithCompilationCache(cache).WithCloseOnContextDone(true).WithMemoryLimitPages(pages)
	r := wazero.NewRuntimeWithConfig(ctx, cfg)
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, r); err != nil {
		_ = r.Close(ctx)
		return nil, err
	}
	rt := &runtime{r: r, compiled: map[[32]byte]wazero.CompiledModule{}}
	runtimes[pages] = rt
	return rt, nil
}

func (rt *runtime) compile(bin []byte) (wazero.CompiledModule, error) {
	sum := sha256.Sum256(bin)
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if cm, ok := rt.compiled[sum]; ok {
		return cm, nil
	}
	cm, err := rt.r.CompileModule(context.Background(), bin)
	if err != nil {
		return nil, err
	}
	rt.compiled[sum] = cm
	return cm, nil
}

// ---------- functions ----------

// Function is a compiled wasm function with its SQL signature: an expr.UserFunction.
type Function struct {
	name   string
	export string
	params []arrow.DataType
	ret    arrow.DataType
	lim    Limits
	rt     *runtime
	cm     wazero.CompiledModule
	free   bool // the module exports clink_free
}

var _ expr.UserFunction = (*Function)(nil)

// Name is the SQL function's name.
func (f *Function) Name() string { return f.name }

// Limits are the function's limits.
func (f *Function) Limits() Limits { return f.lim }

func defErr(format string, args ...any) *sqlerr.Error {
	return sqlerr.New(sqlerr.InvalidFunctionDefinition, sqlerr.NoPos, format, args...)
}

// Compile compiles module bin (or takes it from the process' cache) for the SQL function name(params) RETURNS
// ret and checks the ABI (doc.go): errors are 42P13 saying what does not fit, 0A000 for a SQL type the ABI has no
// form for.
func Compile(name string, bin []byte, o Options, params []arrow.DataType, ret arrow.DataType) (*Function, error) {
	want, err := signature(params, ret)
	if err != nil {
		return nil, err
	}
	if len(bin) < 8 || string(bin[:4]) != "\x00asm" {
		return nil, defErr("the module of function %s is not a WebAssembly binary (it does not start with \\0asm)", name)
	}
	if o.Limits.MemoryPages == 0 {
		o.Limits.MemoryPages = DefaultMemory / pageSize
	}
	if o.Limits.Timeout <= 0 {
		o.Limits.Timeout = DefaultTimeout
	}
	rt, err := runtimeFor(o.Limits.MemoryPages)
	if err != nil {
		return nil, err
	}
	cm, err := rt.compile(bin)
	if err != nil {
		return nil, defErr("the module of function %s does not compile: %v", name, err)
	}
	f := &Function{name: name, export: o.Export, params: params, ret: ret, lim: o.Limits, rt: rt, cm: cm}
	for _, imp := range cm.ImportedFunctions() {
		mod, fn, _ := imp.Import()
		if mod != wasi_snapshot_preview1.ModuleName {
			return nil, defErr("the module of function %s imports %s.%s: a module may import only WASI (%s)", name, mod, fn,
				wasi_snapshot_preview1.ModuleName)
		}
	}
	if len(cm.ImportedMemories()) > 0 {
		return nil, defErr("the module of function %s imports its memory: it must export it as \"memory\"", name)
	}
	if _, ok := cm.ExportedMemories()["memory"]; !ok {
		return nil, defErr("the module of function %s does not export its memory as \"memory\"", name)
	}
	exports := cm.ExportedFunctions()
	if _, ok := exports["_initialize"]; !ok {
		if _, ok := exports["_start"]; ok {
			return nil, defErr("the module of function %s is a command (it exports _start): build it as a reactor (Go: -buildmode=c-shared)", name)
		}
	}
	check := func(export string, want wasmSig, what string) error {
		fd, ok := exports[export]
		if !ok {
			return defErr("the module of function %s does not export %s%s", name, export, what)
		}
		if got := (wasmSig{fd.ParamTypes(), fd.ResultTypes()}); !got.equal(want) {
			return defErr("the module's %s has the signature %s; function %s needs %s", export, got, name, want)
		}
		return nil
	}
	if err := check(o.Export, want, fmt.Sprintf(" (the function; name another with WITH (export = '...'); it exports %s)", exportList(exports))); err != nil {
		return nil, err
	}
	i32 := api.ValueTypeI32
	if err := check("clink_alloc", wasmSig{[]api.ValueType{i32}, []api.ValueType{i32}}, " (the allocator the host copies strings with: clink_alloc(size i32) -> ptr i32)"); err != nil {
		return nil, err
	}
	if _, ok := exports["clink_free"]; ok {
		if err := check("clink_free", wasmSig{[]api.ValueType{i32}, nil}, ""); err != nil {
			return nil, err
		}
		f.free = true
	}
	return f, nil
}

// exportList names a module's exported functions, sorted.
func exportList(m map[string]api.FunctionDefinition) string {
	var names []string
	for n := range m {
		names = append(names, n)
	}
	slices.Sort(names)
	if len(names) == 0 {
		return "no function"
	}
	return strings.Join(names, ", ")
}

// Check instantiates the function once (its _initialize runs) and releases the instance: CREATE FUNCTION's last
// check.
func (f *Function) Check() error {
	in := &instance{f: f}
	defer in.Close()
	if err := in.instantiate(); err != nil {
		var e *sqlerr.Error
		if errors.As(err, &e) && e.Code == sqlerr.QueryCanceled {
			return err
		}
		return defErr("the module of function %s does not instantiate: %v", f.name, err)
	}
	return nil
}

// wasmSig is a wasm function type.
type wasmSig struct{ params, results []api.ValueType }

func (s wasmSig) equal(o wasmSig) bool {
	return slices.Equal(s.params, o.params) && slices.Equal(s.results, o.results)
}

func (s wasmSig) String() string {
	names := func(ts []api.ValueType) string {
		parts := make([]string, len(ts))
		for i, t := range ts {
			parts[i] = api.ValueTypeName(t)
		}
		return strings.Join(parts, ", ")
	}
	out := "(" + names(s.params) + ")"
	if len(s.results) > 0 {
		out += " -> " + names(s.results)
	}
	return out
}

// signature is the wasm function type the ABI gives the SQL signature.
func signature(params []arrow.DataType, ret arrow.DataType) (wasmSig, error) {
	var s wasmSig
	for _, p := range params {
		ts, err := valueTypes(p, false)
		if err != nil {
			return s, err
		}
		s.params = append(s.params, ts...)
	}
	ts, err := valueTypes(ret, true)
	if err != nil {
		return s, err
	}
	s.results = ts
	return s, nil
}

func valueTypes(t arrow.DataType, result bool) ([]api.ValueType, error) {
	switch t.ID() {
	case arrow.BOOL, arrow.INT16, arrow.INT32, arrow.DATE32:
		return []api.ValueType{api.ValueTypeI32}, nil
	case arrow.INT64, arrow.DURATION:
		return []api.ValueType{api.ValueTypeI64}, nil
	case arrow.TIMESTAMP:
		if t.(*arrow.TimestampType).TimeZone == "" {
			return []api.ValueType{api.ValueTypeI64}, nil
		}
	case arrow.FLOAT32:
		return []api.ValueType{api.ValueTypeF32}, nil
	case arrow.FLOAT64:
		return []api.ValueType{api.ValueTypeF64}, nil
	case arrow.STRING, arrow.BINARY:
		if result {
			return []api.ValueType{api.ValueTypeI64}, nil
		}
		return []api.ValueType{api.ValueTypeI32, api.ValueTypeI32}, nil
	}
	return nil, sqlerr.New(sqlerr.FeatureNotSupported, sqlerr.NoPos, "type %s is not supported by wasm functions", expr.TypeName(t))
}

// Open returns a new instance; the module is instantiated at its first batch.
func (f *Function) Open() (expr.UserInstance, error) { return &instance{f: f}, nil }
