package engine

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/clinksql/clinksql/catalog"
	"github.com/clinksql/clinksql/exec/expr"
	"github.com/clinksql/clinksql/exec/wasm"
	"github.com/clinksql/clinksql/sql/parser"
	"github.com/clinksql/clinksql/sql/planner"
	"github.com/clinksql/clinksql/sqlerr"
	"github.com/clinksql/clinksql/state"
)

// User-defined functions: CREATE [OR REPLACE] FUNCTION, DROP FUNCTION, SHOW FUNCTIONS, and the modules of wasm
// functions. A wasm function's module is copied into <data>/functions/<name>-<n>.wasm at CREATE (n from the
// catalog's storage counter, never reused) with its SHA-256 in the catalog; loading it back (every plan that calls
// the function, a job's re-deployment included) checks the checksum and refuses a changed file, naming it.

// functionsDir is the directory of wasm modules in the data directory.
const functionsDir = "functions"

// maxModuleSize bounds a module CREATE FUNCTION reads.
const maxModuleSize = 64 << 20

func (s *Session) createFunction(st *parser.CreateFunction) (*Result, error) {
	cat := s.e.cat
	old, exists := cat.Function(st.Name)
	if exists && !st.OrReplace {
		return nil, sqlerr.New(sqlerr.DuplicateFunction, st.NameP, "function %q already exists", st.Name)
	}
	var replacing *catalog.Function
	if exists {
		replacing = old
		if d := cat.FunctionDependents(st.Name); len(d.Jobs) > 0 || hasMaterialized(cat, d.Objects) {
			e := sqlerr.New(sqlerr.DependentObjects, st.NameP, "cannot replace function %s while running jobs use it: %s", old.Signature(), d)
			e.Detail = "Their plans were made with its definition, and are made again from it at every restart."
			e.Hint = "Drop them first (DROP ... CASCADE), or create a function of another name."
			return nil, e
		}
	}
	fn, err := planner.FunctionObject(s.e, st, replacing)
	if err != nil {
		return nil, err
	}
	if fn.Language == "wasm" {
		if err := s.e.storeModule(st, fn); err != nil {
			return nil, err
		}
	}
	if err := cat.CreateFunction(fn, exists); err != nil {
		s.e.removeModule(fn)
		return nil, withPos(err, st.NameP)
	}
	if exists && old.Module != "" && old.Module != fn.Module {
		s.e.removeModule(old)
	}
	return &Result{Tag: "CREATE FUNCTION"}, nil
}

func hasMaterialized(cat *catalog.Catalog, names []string) bool {
	for _, n := range names {
		if o, ok := cat.Get(n); ok && o.Kind == catalog.MaterializedView {
			return true
		}
	}
	return false
}

// storeModule reads a wasm function's module (a path, confined like connector paths, or base64), checks it
// against the declaration, and writes its copy into the data directory: fn gets Module, Checksum and Export.
func (e *Engine) storeModule(st *parser.CreateFunction, fn *catalog.Function) error {
	for _, o := range st.Options {
		if _, err := wasm.ParseOptions(fn.Name, map[string]string{o.Key: o.Value}); err != nil {
			return withPos(err, o.P)
		}
	}
	opts, err := wasm.ParseOptions(fn.Name, fn.Options)
	if err != nil {
		return withPos(err, st.StmtBase.Start)
	}
	bin, source, err := e.moduleBytes(st.As)
	if err != nil {
		return withPos(err, st.AsP)
	}
	params, ret, err := functionTypes(fn)
	if err != nil {
		return err
	}
	f, err := wasm.Compile(fn.Name, bin, opts, params, ret)
	if err != nil {
		return withPos(err, st.AsP)
	}
	if err := f.Check(); err != nil {
		return withPos(err, st.AsP)
	}
	storage, err := e.cat.NewStorage(fn.Name)
	if err != nil {
		return err
	}
	rel := filepath.Join(functionsDir, storage+".wasm")
	if err := os.MkdirAll(filepath.Join(e.dir, functionsDir), 0o755); err != nil {
		return sqlerr.Wrap(sqlerr.IOError, err)
	}
	if err := state.WriteFsyncRename(state.OS, filepath.Join(e.dir, rel), bin); err != nil {
		return sqlerr.Wrap(sqlerr.IOError, err)
	}
	sum := sha256.Sum256(bin)
	fn.Module, fn.Checksum, fn.Export, fn.Source = rel, hex.EncodeToString(sum[:]), opts.Export, source
	return nil
}

// moduleBytes reads the AS string of a wasm function: a path (relative to the data directory, confined as
// connector paths are) or the module in base64. source is what SHOW FUNCTIONS says it came from.
func (e *Engine) moduleBytes(as string) (bin []byte, source string, err error) {
	if as == "" {
		return nil, "", sqlerr.New(sqlerr.InvalidFunctionDefinition, sqlerr.NoPos, "a wasm function needs AS '<path to the .wasm file>' or AS '<the module in base64>'")
	}
	if !strings.HasSuffix(as, ".wasm") {
		if b, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(as), "")); err == nil && strings.HasPrefix(string(b), "\x00asm") {
			return b, "(base64)", nil
		}
	}
	path, err := e.Path(as)
	if err != nil {
		return nil, "", err
	}
	info, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, "", sqlerr.New(sqlerr.UndefinedFile, sqlerr.NoPos, "could not access file %q: no such file", as)
		}
		return nil, "", sqlerr.Wrap(sqlerr.IOError, err)
	}
	if info.IsDir() || info.Size() > maxModuleSize {
		return nil, "", sqlerr.New(sqlerr.InvalidFunctionDefinition, sqlerr.NoPos, "%q is not a module file (a directory, or over %d MB)", as, maxModuleSize>>20)
	}
	if err := e.Confine(path); err != nil {
		return nil, "", err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, "", sqlerr.Wrap(sqlerr.IOError, err)
	}
	return b, as, nil
}

// functionTypes are the Arrow types of a function's parameters and result.
func functionTypes(fn *catalog.Function) ([]arrow.DataType, arrow.DataType, error) {
	params := make([]arrow.DataType, len(fn.Params))
	for i, p := range fn.Params {
		t, err := p.Type.Arrow()
		if err != nil {
			return nil, nil, err
		}
		params[i] = t
	}
	ret, err := fn.Returns.Arrow()
	return params, ret, err
}

func (e *Engine) removeModule(fn *catalog.Function) {
	if fn.Module != "" {
		_ = os.Remove(filepath.Join(e.dir, fn.Module))
	}
}

// WasmFunction loads a wasm function's module from the data directory, checks its checksum and compiles it (the
// process keeps compiled modules): planner.WasmFunctions.
func (e *Engine) WasmFunction(fn *catalog.Function) (expr.UserFunction, error) {
	return loadWasm(e.dir, fn)
}

// WasmFunction loads a wasm function as the engine does, so that a plan made here is the job's.
func (e PlanOnlyEnv) WasmFunction(fn *catalog.Function) (expr.UserFunction, error) {
	return loadWasm(e.Dir, fn)
}

func loadWasm(dir string, fn *catalog.Function) (expr.UserFunction, error) {
	path := filepath.Join(dir, fn.Module)
	bin, err := os.ReadFile(path)
	if err != nil {
		return nil, state.Corrupt(path, err, "the module of function %s cannot be read", fn.Name)
	}
	if sum := sha256.Sum256(bin); hex.EncodeToString(sum[:]) != fn.Checksum {
		return nil, state.Corrupt(path, nil, "the module of function %s changed since CREATE FUNCTION (SHA-256 %x, the catalog has %s)",
			fn.Name, sum[:8], shortSum(fn.Checksum))
	}
	opts, err := wasm.ParseOptions(fn.Name, fn.Options)
	if err != nil {
		return nil, err
	}
	params, ret, err := functionTypes(fn)
	if err != nil {
		return nil, err
	}
	return wasm.Compile(fn.Name, bin, opts, params, ret)
}

func shortSum(s string) string { return s[:min(16, len(s))] }

// cleanFunctionFiles removes module files of the data directory that no function names: left by a CREATE or DROP
// that did not finish.
func cleanFunctionFiles(dir string, cat *catalog.Catalog) {
	files, _ := os.ReadDir(filepath.Join(dir, functionsDir))
	if len(files) == 0 {
		return
	}
	named := map[string]bool{}
	for _, fn := range cat.Functions() {
		named[filepath.Base(fn.Module)] = true
	}
	for _, f := range files {
		if !named[f.Name()] {
			_ = os.Remove(filepath.Join(dir, functionsDir, f.Name()))
		}
	}
}

// dropFunctions is DROP FUNCTION [IF EXISTS] name [(types)], ... [CASCADE].
func (s *Session) dropFunctions(ctx context.Context, st *parser.Drop) (*Result, error) {
	var notices []string
	for i, name := range st.Names {
		fn, ok := s.e.cat.Function(name)
		var args []parser.TypeName
		if i < len(st.Args) {
			args = st.Args[i]
		}
		if ok && args != nil && !sameTypes(fn, args) {
			ok = false
		}
		if !ok {
			sig := name
			if args != nil {
				parts := make([]string, len(args))
				for j, a := range args {
					parts[j] = strings.ToLower(parser.Format(a))
				}
				sig += "(" + strings.Join(parts, ", ") + ")"
			}
			if st.IfExists {
				notices = append(notices, fmt.Sprintf("function %s does not exist, skipping", sig))
				continue
			}
			return nil, sqlerr.New(sqlerr.UndefinedFunction, st.NamesP[i], "function %s does not exist", sig)
		}
		plan, err := s.e.cat.PlanDropFunction(name, st.Cascade)
		if err != nil {
			return nil, withPos(err, st.NamesP[i])
		}
		more, err := s.e.applyDrop(ctx, plan)
		if err != nil {
			return nil, err
		}
		notices = append(notices, more...)
	}
	return &Result{Tag: "DROP FUNCTION", Notices: notices}, nil
}

// sameTypes reports whether DROP FUNCTION's argument types are fn's.
func sameTypes(fn *catalog.Function, args []parser.TypeName) bool {
	if len(args) != len(fn.Params) {
		return false
	}
	for i, a := range args {
		t := catalog.Type{Name: a.Name, Precision: a.Precision, Scale: a.Scale}
		want := fn.Params[i].Type
		// Without a length or precision the type matches any: DROP FUNCTION f(varchar) drops f(x VARCHAR(10)).
		if t.Name != want.Name && !(isText(t.Name) && isText(want.Name)) {
			return false
		}
		if t.Precision >= 0 && t.String() != want.String() {
			return false
		}
	}
	return true
}

func isText(name string) bool { return name == "VARCHAR" || name == "TEXT" }

// FunctionInfo is a user-defined function as SHOW FUNCTIONS and clink_catalog.functions show it.
type FunctionInfo struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
	Returns   string `json:"returns"`
	Language  string `json:"language"`
	Strict    bool   `json:"strict"`
	// Definition is a SQL function's body; for a wasm function the module's export, source and checksum.
	Definition string    `json:"definition"`
	Created    time.Time `json:"created"`
}

// FunctionInfos lists the user-defined functions, by name.
func (e *Engine) FunctionInfos() []FunctionInfo {
	var out []FunctionInfo
	for _, fn := range e.cat.Functions() {
		def := fn.Body
		if fn.Language == "wasm" {
			def = fmt.Sprintf("export %s of %s (sha256 %s)", fn.Export, fn.Source, shortSum(fn.Checksum))
		}
		out = append(out, FunctionInfo{Name: fn.Name, Arguments: fn.Arguments(), Returns: fn.Returns.String(),
			Language: fn.Language, Strict: fn.Strict, Definition: def, Created: fn.Created})
	}
	return out
}

func (s *Session) showFunctions() *Result {
	t := newTable("name", "arguments", "returns", "language", "definition")
	for _, f := range s.e.FunctionInfos() {
		t.add(f.Name, f.Arguments, f.Returns, f.Language, f.Definition)
	}
	return t.result("")
}
