package main

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// binary is the clinksql binary built once for these tests: `clinksql exec` is tested as users run it.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "clinksql-bin")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "clinksql")
	build := exec.Command("go", "build", "-o", binary, ".")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		panic(err)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// run runs the binary and returns stdout, stderr and whether it exited 0.
func run(t *testing.T, args ...string) (string, string, bool) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			t.Fatalf("run %v: %v", args, err)
		}
	}
	return out.String(), errb.String(), err == nil
}

// pins: --format csv prints each result set as a header line and rows in Postgres text form, NULL as an empty
// field and the empty string quoted, result sets separated by one empty line; statements without rows print
// nothing.
func TestExecCSV(t *testing.T) {
	dir := t.TempDir()
	out, errOut, ok := run(t, "exec", "--data-dir", dir, "--format", "csv",
		"-c", "CREATE STREAM s (a INT, b VARCHAR); SELECT 1 AS a, 'x,y' AS b, '' AS c, NULL::int AS d",
		"-c", "SELECT TRUE AS t, 2.50 AS n, TIMESTAMP '2026-01-01 00:00:01.500' AS ts")
	if !ok {
		t.Fatalf("exit non-zero: %s", errOut)
	}
	want := "a,b,c,d\n1,\"x,y\",\"\",\n\nt,n,ts\nt,2.50,2026-01-01 00:00:01.5\n"
	if out != want {
		t.Fatalf("output:\n%q\nwant:\n%q", out, want)
	}
}

// pins: a statement error prints its SQLSTATE and the line and column in the user's file, and exits non-zero;
// the statements before it took effect.
func TestExecErrorExitsNonZero(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(t.TempDir(), "bad.sql")
	script := "CREATE STREAM s (a INT);\n\nSELECT a,\n       nope FROM s;\nCREATE STREAM never (a INT);\n"
	if err := os.WriteFile(file, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	_, errOut, ok := run(t, "exec", "--data-dir", dir, "-f", file)
	if ok {
		t.Fatal("exit 0 on a statement error")
	}
	if !strings.Contains(errOut, "bad.sql:4:8: ERROR:  column \"nope\" does not exist (SQLSTATE 42703)") {
		t.Fatalf("stderr: %s", errOut)
	}
	out, _, ok := run(t, "exec", "--data-dir", dir, "--format", "csv", "-c", "SHOW STREAMS")
	if !ok || !strings.Contains(out, "\ns,") || strings.Contains(out, "never") {
		t.Fatalf("after the error: %s", out)
	}
}

// pins (issue 11, item 2): exec, serve and the REPL share one default data directory, ./clink-data: a stream that
// `clinksql exec` creates without --data-dir is there for the REPL started the same way, and the reverse.
func TestDefaultDataDirShared(t *testing.T) {
	cwd := t.TempDir()
	execIn := func(stdin string, args ...string) string {
		t.Helper()
		cmd := exec.Command(binary, args...)
		cmd.Dir, cmd.Stdin = cwd, strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	execIn("", "exec", "-c", "CREATE STREAM from_exec (a INT)")
	if _, err := os.Stat(filepath.Join(cwd, "clink-data", "catalog")); err != nil {
		t.Fatalf("exec without --data-dir: %v", err)
	}
	if out := execIn("SHOW STREAMS;\nCREATE STREAM from_repl (a INT);\n"); !strings.Contains(out, "from_exec") {
		t.Fatalf("the REPL does not see exec's stream:\n%s", out)
	}
	if out := execIn("", "exec", "--format", "csv", "-c", "SHOW STREAMS"); !strings.Contains(out, "from_repl") {
		t.Fatalf("exec does not see the REPL's stream:\n%s", out)
	}
}

// pins: clinksql exec runs a script statement by statement, each checked against max_statement_size before it is
// parsed: a statement over it fails with 54000 at its line, the ones before it ran.
func TestExecMaxStatementSize(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(t.TempDir(), "big.sql")
	script := "SET max_statement_size = '1kB';\nCREATE STREAM s (a INT);\nSELECT '" + strings.Repeat("x", 2000) + "';\n"
	if err := os.WriteFile(file, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	_, errOut, ok := run(t, "exec", "--data-dir", dir, "-f", file)
	if ok || !strings.Contains(errOut, "exceeds max_statement_size (1kB) (SQLSTATE 54000)") {
		t.Fatalf("exit 0 = %v, stderr: %.300s", ok, errOut)
	}
	out, _, ok := run(t, "exec", "--data-dir", dir, "--format", "csv", "-c", "SHOW STREAMS")
	if !ok || !strings.Contains(out, "\ns,") {
		t.Fatalf("the statements before it did not run: %s", out)
	}
}

// pins: exec printing no statement notices, or --wait printing no progress while a bounded job runs: the job's
// rows read, the rate and the total its source knows. The source's throttle makes the job last over a second,
// many progress intervals.
func TestExecWaitPrintsProgressAndNotices(t *testing.T) {
	dir := t.TempDir()
	_, errOut, ok := run(t, "exec", "--data-dir", dir, "--wait", "--progress-interval", "50ms",
		"-c", `CREATE STREAM g (id BIGINT) WITH (connector = 'datagen', 'number-of-rows' = '300', 'rows-per-second' = '200',
			'fields.id.kind' = 'sequence', 'fields.id.start' = '1');
		CREATE SINK b (id BIGINT) WITH (connector = 'blackhole');
		INSERT INTO b SELECT id FROM g`)
	if !ok {
		t.Fatalf("exit non-zero: %s", errOut)
	}
	if !strings.Contains(errOut, "NOTICE:  started job job-1\n") {
		t.Fatalf("stderr has no notice of the started job:\n%s", errOut)
	}
	progress := regexp.MustCompile(`(?m)^job-1: (\d+) rows read \(\d+ rows/s\) of 300$`)
	m := progress.FindStringSubmatch(errOut)
	if m == nil {
		t.Fatalf("stderr has no progress line of job-1:\n%s", errOut)
	}
	if n, _ := strconv.Atoi(m[1]); n > 300 {
		t.Fatalf("progress of %s rows read of 300", m[1])
	}
}

// pins: a --progress-interval of zero or less refused before anything runs (the engine would take 0 for its
// default and print progress every 5 s, not what was asked).
func TestExecRefusesNonPositiveProgressInterval(t *testing.T) {
	for _, d := range []string{"0s", "-1s"} {
		dir := t.TempDir()
		out, errOut, ok := run(t, "exec", "--data-dir", dir, "--wait", "--progress-interval", d, "-c", "SELECT 1 AS a")
		if ok || out != "" {
			t.Fatalf("--progress-interval %s: exit 0, stdout %q", d, out)
		}
		if !strings.Contains(errOut, "--progress-interval must be positive") {
			t.Fatalf("--progress-interval %s: stderr %s", d, errOut)
		}
	}
}

// pins: --cpu-profile and --mem-profile write pprof files (gzip-compressed protocol buffers) of the run, the
// allocation profile naming the allocating functions of a job that ran.
func TestExecWritesProfiles(t *testing.T) {
	dir := t.TempDir()
	cpu, mem := filepath.Join(dir, "cpu.pprof"), filepath.Join(dir, "mem.pprof")
	_, errOut, ok := run(t, "exec", "--data-dir", filepath.Join(dir, "data"), "--wait", "--cpu-profile", cpu, "--mem-profile", mem,
		"-c", `CREATE STREAM g (id BIGINT) WITH (connector = 'datagen', 'number-of-rows' = '200000',
			'fields.id.kind' = 'sequence', 'fields.id.start' = '1');
		CREATE SINK b (id BIGINT) WITH (connector = 'blackhole');
		INSERT INTO b SELECT id FROM g`)
	if !ok {
		t.Fatalf("exit non-zero: %s", errOut)
	}
	for _, f := range []string{cpu, mem} {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			t.Fatalf("%s is not gzip: %v", f, err)
		}
		body, err := io.ReadAll(zr)
		if err != nil || len(body) == 0 {
			t.Fatalf("%s: %d bytes, %v", f, len(body), err)
		}
		if f == mem && !bytes.Contains(body, []byte("github.com/clinksql/clinksql/exec")) {
			t.Fatalf("the allocation profile names no function of the engine's exec package")
		}
	}
}
