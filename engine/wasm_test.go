package engine

import (
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clinksql/clinksql/catalog"
	"github.com/clinksql/clinksql/exec/wasm/wasmtest"
	"github.com/clinksql/clinksql/sqlerr"
	"github.com/clinksql/clinksql/state"
)

// putModule copies test module name into the data directory dir as udf/<file> and returns that relative path.
func putModule(t *testing.T, dir, name, file string) string {
	t.Helper()
	bin := wasmtest.Bytes(t, name)
	if err := os.MkdirAll(filepath.Join(dir, "udf"), 0o755); err != nil {
		t.Fatal(err)
	}
	rel := filepath.Join("udf", file)
	if err := os.WriteFile(filepath.Join(dir, rel), bin, 0o644); err != nil {
		t.Fatal(err)
	}
	return rel
}

// storedModules lists the module files of the data directory.
func storedModules(t *testing.T, dir string) []string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "functions", "*"))
	for i, f := range files {
		files[i] = filepath.Base(f)
	}
	return files
}

// pins: a wasm function from a file: correct over a stream with NULLs and UTF-8, ad hoc and in a materialized
// view; the module is copied into the data directory at CREATE, so a restart does not need the original; DROP
// FUNCTION ... CASCADE removes the copy.
func TestWasmFunction(t *testing.T) {
	dir := t.TempDir()
	e, s := testEngine(t, dir)
	rel := putModule(t, dir, "countchar", "count_char.wasm")
	mustExec(t, s, `CREATE FUNCTION count_char(s VARCHAR, c VARCHAR) RETURNS BIGINT LANGUAGE wasm AS '`+rel+`'`)
	if got := storedModules(t, dir); len(got) != 1 || !strings.HasPrefix(got[0], "count_char-") {
		t.Fatalf("stored modules %v", got)
	}
	mustExec(t, s, `CREATE STREAM words (w VARCHAR, c VARCHAR)`)
	mustExec(t, s, `INSERT INTO words VALUES ('banana', 'a'), ('héhé', 'é'), (NULL, 'a'), ('abc', NULL), ('日本日', '日')`)
	equalLines(t, "ad hoc", rows(t, s, `SELECT w, count_char(w, c) FROM words`),
		[]string{"banana|3", "héhé|2", "NULL|NULL", "abc|NULL", "日本日|2"})
	mustExec(t, s, `CREATE MATERIALIZED VIEW counts AS SELECT w, count_char(w, 'a') AS n FROM words`)
	mustExec(t, s, `FLUSH`)
	closeEngine(t, e)
	if err := os.Remove(filepath.Join(dir, rel)); err != nil {
		t.Fatal(err)
	}
	_, s2 := testEngine(t, dir)
	mustExec(t, s2, `INSERT INTO words VALUES ('aaaa', 'x')`)
	mustExec(t, s2, `FLUSH`)
	equalLines(t, "after restart", rows(t, s2, `SELECT w, n FROM counts WHERE n > 0 ORDER BY n`), []string{"abc|1", "banana|3", "aaaa|4"})
	equalLines(t, "SHOW FUNCTIONS", rows(t, s2, `SELECT name, arguments, returns, language, strict FROM clink_catalog.functions`),
		[]string{"count_char|s VARCHAR, c VARCHAR|BIGINT|wasm|t"})
	if got := execErr(t, s2, `DROP FUNCTION count_char`); !strings.Contains(got, "2BP01") || !strings.Contains(got, "counts") {
		t.Fatalf("drop while used: %s", got)
	}
	mustExec(t, s2, `DROP FUNCTION count_char(varchar, varchar) CASCADE`)
	if got := storedModules(t, dir); len(got) != 0 {
		t.Fatalf("module left after DROP: %v", got)
	}
}

// pins: a stored module that changed is refused when it is loaded back, naming the file: the job that uses it
// fails at its re-deployment instead of running another function, and an ad-hoc call fails with XX001.
func TestWasmChecksumMismatch(t *testing.T) {
	dir := t.TempDir()
	e, s := testEngine(t, dir)
	rel := putModule(t, dir, "countchar", "cc.wasm")
	mustExec(t, s, `CREATE FUNCTION count_char(s VARCHAR, c VARCHAR) RETURNS BIGINT LANGUAGE wasm AS '`+rel+`'`)
	mustExec(t, s, `CREATE STREAM words (w VARCHAR)`)
	mustExec(t, s, `CREATE MATERIALIZED VIEW counts AS SELECT count_char(w, 'a') AS n FROM words`)
	closeEngine(t, e)
	stored := filepath.Join(dir, "functions", storedModules(t, dir)[0])
	// Another valid module in its place (same exports would run silently otherwise).
	if err := os.WriteFile(stored, wasmtest.Bytes(t, "misbehave"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, s2 := testEngine(t, dir)
	st, errText := jobState(t, s2, "job-1")
	if st != "FAILED" || !strings.Contains(errText, stored) || !strings.Contains(errText, "changed since CREATE FUNCTION") {
		t.Fatalf("job-1 %s: %s", st, errText)
	}
	_, err := s2.Execute(context.Background(), `SELECT count_char('abc', 'a')`)
	wantCorrupt(t, "ad-hoc call", err, stored)
}

// pins: CREATE FUNCTION ... LANGUAGE wasm checks the module against the declaration and says what is wrong, at the
// AS string (or the option); a base64 module works like a file.
func TestWasmCreateErrors(t *testing.T) {
	dir := t.TempDir()
	_, s := testEngine(t, dir)
	rel := putModule(t, dir, "countchar", "cc.wasm")
	if err := os.WriteFile(filepath.Join(dir, "udf", "text.wasm"), []byte("not a module"), 0o644); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "cc.wasm")
	if err := os.WriteFile(outside, wasmtest.Bytes(t, "countchar"), 0o644); err != nil {
		t.Fatal(err)
	}
	head := `CREATE FUNCTION count_char(s VARCHAR, c VARCHAR) RETURNS BIGINT LANGUAGE wasm AS `
	for _, c := range []struct{ sql, want string }{
		{head + `'udf/text.wasm'`, "42P13 at 1:82: the module of function count_char is not a WebAssembly binary"},
		{head + `'udf/none.wasm'`, `58P01 at 1:82: could not access file "udf/none.wasm": no such file`},
		{head + `'` + outside + `'`, "42501 at 1:82: "},
		{head + `'` + rel + `' WITH (export = 'nope')`, "42P13 at 1:82: the module of function count_char does not export nope"},
		{head + `'` + rel + `' WITH (exprot = 'count_char')`, `22023 at 1:102: unknown option "exprot" for a wasm function`},
		{head + `'` + rel + `' WITH (timeout = 'soon')`, `22023 at 1:102: invalid value for option 'timeout'`},
		{`CREATE FUNCTION count_char(s VARCHAR) RETURNS BIGINT LANGUAGE wasm AS '` + rel + `'`,
			"42P13 at 1:71: the module's count_char has the signature (i32, i32, i32, i32) -> i64; function count_char needs (i32, i32) -> i64"},
		{`CREATE FUNCTION count_char(s VARCHAR, c VARCHAR) RETURNS NUMERIC LANGUAGE wasm AS '` + rel + `'`,
			"0A000 at 1:83: type numeric is not supported by wasm functions"},
		{`CREATE FUNCTION count_char(s VARCHAR, c VARCHAR) RETURNS BIGINT LANGUAGE wasm AS 'AAAA'`,
			`58P01 at 1:82: could not access file "AAAA": no such file`},
	} {
		got := execErr(t, s, c.sql)
		if !strings.HasPrefix(got, c.want) {
			t.Errorf("%s\n got %s\nwant %s...", c.sql, got, c.want)
		}
	}
	if got := storedModules(t, dir); len(got) != 0 {
		t.Fatalf("failed CREATEs left modules: %v", got)
	}
	b64 := base64.StdEncoding.EncodeToString(wasmtest.Bytes(t, "countchar"))
	mustExec(t, s, `CREATE FUNCTION cc(s VARCHAR, c VARCHAR) RETURNS BIGINT LANGUAGE wasm AS '`+b64+`' WITH (export = 'count_char')`)
	equalLines(t, "base64 module", rows(t, s, `SELECT cc('xxx', 'x')`), []string{"3"})
	if got := rows(t, s, `SELECT definition FROM clink_catalog.functions`); len(got) != 1 || !strings.HasPrefix(got[0], "export count_char of (base64)") {
		t.Fatalf("definition %v", got)
	}
}

// pins: a trap inside a running job is a bad value (NULL, counted in bad_values), or fails the job under
// errors.mode = 'fail'; a function that loops forever fails an ad-hoc SELECT at its timeout (57014).
func TestWasmErrorsInJobs(t *testing.T) {
	dir := t.TempDir()
	_, s := testEngine(t, dir)
	rel := putModule(t, dir, "misbehave", "mb.wasm")
	mustExec(t, s, `CREATE FUNCTION boom(x BIGINT) RETURNS BIGINT LANGUAGE wasm AS '`+rel+`'`)
	mustExec(t, s, `CREATE FUNCTION spin(x BIGINT) RETURNS BIGINT LANGUAGE wasm AS '`+rel+`' WITH (timeout = '200ms')`)
	mustExec(t, s, `CREATE STREAM nums (x BIGINT)`)
	mustExec(t, s, `INSERT INTO nums VALUES (1), (-1), (2)`)
	mustExec(t, s, `CREATE MATERIALIZED VIEW safe AS SELECT x, boom(x) AS y FROM nums`)
	mustExec(t, s, `FLUSH`)
	equalLines(t, "null mode", rows(t, s, `SELECT x, y FROM safe ORDER BY x`), []string{"-1|NULL", "1|1", "2|2"})
	equalLines(t, "bad_values", rows(t, s, `SELECT bad_values FROM clink_catalog.jobs WHERE job_id = 'job-1'`), []string{"1"})
	mustExec(t, s, `SET errors.mode = 'fail'`)
	mustExec(t, s, `CREATE MATERIALIZED VIEW strict AS SELECT boom(x) AS y FROM nums`)
	if errText := waitJobState(t, s, "job-2", "FAILED"); !strings.Contains(errText, "function boom trapped") {
		t.Fatalf("job-2: %s", errText)
	}
	_, err := s.Execute(context.Background(), `SELECT spin(x) FROM nums`)
	if e := sqlerr.As(err); e == nil || e.Code != sqlerr.QueryCanceled || !strings.Contains(e.Msg, "did not return within 200ms") {
		t.Fatalf("timeout: %v", err)
	}
	if _, err := s.Execute(context.Background(), `SELECT boom(x) FROM nums`); sqlerr.Code(err) != sqlerr.DataException {
		t.Fatalf("ad-hoc trap: %v", err)
	}
}

// pins: the functions/ directory is the engine's own: CREATE FUNCTION cannot name a file in it (nor can a
// connector), a module file no function names (a CREATE or DROP that did not finish) is removed at open, and a
// job that calls a wasm function is planned from the catalog alone (PlanOnlyEnv, as clinksql state-cat does).
func TestWasmModuleFiles(t *testing.T) {
	dir := t.TempDir()
	e, s := testEngine(t, dir)
	rel := putModule(t, dir, "countchar", "cc.wasm")
	mustExec(t, s, `CREATE FUNCTION count_char(s VARCHAR, c VARCHAR) RETURNS BIGINT LANGUAGE wasm AS '`+rel+`'`)
	stored := filepath.Join("functions", storedModules(t, dir)[0])
	if got := execErr(t, s, `CREATE FUNCTION cc2(s VARCHAR, c VARCHAR) RETURNS BIGINT LANGUAGE wasm AS '`+stored+`' WITH (export = 'count_char')`); !strings.HasPrefix(got, "42501") {
		t.Fatalf("a module in functions/: %s", got)
	}
	mustExec(t, s, `CREATE STREAM words (w VARCHAR)`)
	mustExec(t, s, `CREATE MATERIALIZED VIEW counts AS SELECT count_char(w, 'a') AS n FROM words`)
	closeEngine(t, e)

	stray := filepath.Join(dir, "functions", "left-99.wasm")
	if err := os.WriteFile(stray, []byte("\x00asm"), 0o644); err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.Open(state.OS, filepath.Join(dir, "catalog"))
	if err != nil {
		t.Fatal(err)
	}
	spec, _ := cat.Job("job-1")
	p, err := PlanJob(PlanOnlyEnv{Dir: dir, Cat: cat}, spec)
	if err != nil {
		t.Fatalf("PlanJob: %v", err)
	}
	if len(p.Functions) != 1 || p.Functions[0] != "count_char" || planDigest(p) != spec.PlanDigest {
		t.Fatalf("plan functions %v, digest %s of %s", p.Functions, planDigest(p), spec.PlanDigest)
	}
	_, s2 := testEngine(t, dir)
	if _, err := os.Stat(stray); !os.IsNotExist(err) {
		t.Fatalf("stray module still there: %v", err)
	}
	if got := storedModules(t, dir); len(got) != 1 {
		t.Fatalf("modules after open: %v", got)
	}
	mustExec(t, s2, `INSERT INTO words VALUES ('banana')`)
	mustExec(t, s2, `FLUSH`)
	equalLines(t, "after reopen", rows(t, s2, `SELECT n FROM counts`), []string{"3"})
}
