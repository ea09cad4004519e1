package engine

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clinksql/clinksql/sqlerr"
)

// logRecord is one captured log line: its level, message and every attribute, those of With included, in order.
type logRecord struct {
	level slog.Level
	msg   string
	attrs []slog.Attr
}

func (r logRecord) get(key string) string {
	for _, a := range r.attrs {
		if a.Key == key {
			return a.Value.String()
		}
	}
	return ""
}

func (r logRecord) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %q", r.level, r.msg)
	for _, a := range r.attrs {
		fmt.Fprintf(&b, " %s=%s", a.Key, a.Value)
	}
	return b.String()
}

// captureLog is a slog.Handler that keeps every record.
type captureLog struct {
	mu    *sync.Mutex
	recs  *[]logRecord
	attrs []slog.Attr
}

func newCaptureLog() captureLog { return captureLog{mu: &sync.Mutex{}, recs: &[]logRecord{}} }

func (h captureLog) Enabled(context.Context, slog.Level) bool { return true }
func (h captureLog) Handle(_ context.Context, r slog.Record) error {
	rec := logRecord{level: r.Level, msg: r.Message, attrs: append([]slog.Attr(nil), h.attrs...)}
	r.Attrs(func(a slog.Attr) bool { rec.attrs = append(rec.attrs, a); return true })
	h.mu.Lock()
	*h.recs = append(*h.recs, rec)
	h.mu.Unlock()
	return nil
}
func (h captureLog) WithAttrs(as []slog.Attr) slog.Handler {
	c := h
	c.attrs = append(append([]slog.Attr(nil), h.attrs...), as...)
	return c
}
func (h captureLog) WithGroup(string) slog.Handler { return h }

func (h captureLog) records() []logRecord {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]logRecord(nil), *h.recs...)
}

// await waits for a record with msg (and, if job is set, that job's).
func (h captureLog) await(t *testing.T, msg, job string) logRecord {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		for _, r := range h.records() {
			if r.msg == msg && (job == "" || r.get("job") == job) {
				return r
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no log line %q for %s in:\n%s", msg, job, h)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (h captureLog) String() string {
	var lines []string
	for _, r := range h.records() {
		lines = append(lines, r.String())
	}
	return strings.Join(lines, "\n")
}

// pins: the log says what happens to jobs - started, restarted with its cause, failed, dropped, stopped at
// shutdown - at INFO and WARN, each attribute once (a logger With'd twice printed job=job-5 job=job-5); an ad-hoc
// SELECT that reached its LIMIT or divided by zero logs no ERROR (it logged "restart budget exhausted").
func TestJobLifecycleIsLogged(t *testing.T) {
	dir := t.TempDir()
	logs := newCaptureLog()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	e, err := Open(Config{DataDir: dir, Alloc: mem, Logger: slog.New(logs)})
	if err != nil {
		t.Fatal(err)
	}
	s := e.NewSession()
	mustExec(t, s, `CREATE STREAM nums (a INT, b INT)`)
	mustExec(t, s, `CREATE STREAM q (v INT)`)
	mustExec(t, s, `CREATE SINK out (a INT) WITH (connector = 'file', format = 'csv', path = 'out')`)
	mustExec(t, s, `CREATE STREAM gen (x BIGINT) WITH (connector = 'datagen')`)

	// Ad-hoc SELECTs that end early or fail: the client's business, not the server log's.
	if got := rows(t, s, "SELECT x FROM gen LIMIT 1"); len(got) != 1 {
		t.Fatalf("LIMIT 1: %q", got)
	}
	if _, err := s.Execute(context.Background(), "SELECT 1 / 0"); sqlerr.Code(err) != sqlerr.DivisionByZero {
		t.Fatalf("SELECT 1 / 0: %v", err)
	}

	mustExec(t, s, `INSERT INTO out SELECT a FROM nums`) // job-1
	logs.await(t, "job started", "job-1")
	mustExec(t, s, `SET errors.mode = 'fail'`)
	mustExec(t, s, `INSERT INTO q SELECT a / b FROM nums`) // job-2
	logs.await(t, "job started", "job-2")
	mustExec(t, s, `INSERT INTO nums VALUES (6, 3)`)
	mustExec(t, s, "DROP JOB job-2")
	logs.await(t, "job dropped", "job-2")

	// A sink directory that became a file: the job restarts, saying why.
	out := filepath.Join(dir, "out")
	if err := os.RemoveAll(out); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, []byte("in the way"), 0o644); err != nil {
		t.Fatal(err)
	}
	restart := logs.await(t, "job failure -> whole-job restart from the last completed checkpoint", "job-1")
	if restart.level != slog.LevelWarn || restart.get("err") == "" || restart.get("operator") == "" {
		t.Fatalf("restart line: %s", restart)
	}
	logs.await(t, "job restarted", "job-1")
	if err := os.Remove(out); err != nil {
		t.Fatal(err)
	}

	mustExec(t, s, `SET errors.mode = 'null'`)
	mustExec(t, s, `CREATE STREAM r (v INT)`)
	mustExec(t, s, `SET errors.mode = 'fail'`)
	mustExec(t, s, `INSERT INTO r SELECT b / (a - 6) FROM nums`) // job-3: fails at once on (6, 3)
	failed := logs.await(t, "job failed", "job-3")
	if failed.level != slog.LevelWarn || !strings.Contains(failed.get("err"), "division by zero") || failed.get("cause") == "" {
		t.Fatalf("failure line: %s", failed)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := e.Close(ctx); err != nil {
		t.Fatal(err)
	}
	logs.await(t, "engine closing: stopping the jobs with a final checkpoint", "")
	logs.await(t, "job stopped", "job-1")
	mem.AssertSize(t, 0)

	if testing.Verbose() {
		t.Log(logs)
	}
	for _, r := range logs.records() {
		if r.level >= slog.LevelError {
			t.Errorf("ERROR line: %s", r)
		}
		seen := map[string]bool{}
		for _, a := range r.attrs {
			if seen[a.Key] {
				t.Errorf("attribute %s twice: %s", a.Key, r)
			}
			seen[a.Key] = true
		}
	}
}
