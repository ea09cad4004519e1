package crash

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// pins: the comparison counts a row missing from the output as lost, one more copy than expected as duplicated
// (naming the files that hold the copies), and a row nobody expected as unexpected.
func TestDiffReports(t *testing.T) {
	want := []string{"a", "b", "b", "c"}
	if d := diff(&committed{rows: []string{"c", "b", "a", "b"}, files: []string{"1", "1", "2", "2"}, n: 2}, want); d != "" {
		t.Fatalf("equal multisets reported: %s", d)
	}
	got := &committed{rows: []string{"a", "a", "b", "x"}, files: []string{"f-1", "f-2", "f-2", "f-3"}, n: 3}
	d := diff(got, want)
	for _, s := range []string{"4 rows committed in 3 files, 4 expected: 2 lost, 1 duplicated, 1 unexpected",
		"lost: b", "lost: c", "duplicated: a (x2, in f-1 f-2)", "unexpected: x (in f-3)"} {
		if !strings.Contains(d, s) {
			t.Errorf("report lacks %q:\n%s", s, d)
		}
	}
}

// pins: the Go model of the generator's random columns and of the Postgres text form of timestamps.
func TestModelForms(t *testing.T) {
	for ms, want := range map[int64]string{
		epoch.UnixMilli():        "2026-01-01 00:00:00",
		epoch.UnixMilli() + 20:   "2026-01-01 00:00:00.02",
		epoch.UnixMilli() + 1500: "2026-01-01 00:00:01.5",
		epoch.UnixMilli() + 123:  "2026-01-01 00:00:00.123",
	} {
		if got := pgTimestamp(ms); got != want {
			t.Errorf("pgTimestamp(%d) = %q, want %q", ms, got, want)
		}
	}
	key := columnKey(7, "v")
	for r := uint64(0); r < 1000; r++ {
		if v := randomInt(key, r, -3, 3); v < -3 || v > 3 {
			t.Fatalf("row %d: %d outside [-3, 3]", r, v)
		}
		if s := randomString(key, r, 11); len(s) != 11 || strings.Trim(s, alphanumeric) != "" {
			t.Fatalf("row %d: %q", r, s)
		}
	}
}

// Applying a changelog leaves the live rows; a change applied twice (a transaction committed twice) shows as a row
// retracted more often than it was added, or as a row left twice.
func TestApplyChangelog(t *testing.T) {
	log := []string{"+I,1,1,5", "+I,2,1,7", "-U,1,1,5", "+U,1,2,9"}
	got, err := applyChangelog(&committed{rows: log})
	if err != nil {
		t.Fatal(err)
	}
	if d := diff(got, []string{"1,2,9", "2,1,7"}); d != "" {
		t.Fatalf("applied: %s", d)
	}
	twice := append(append([]string{}, log...), "-U,1,1,5", "+U,1,2,9") // the last transaction again
	if _, err := applyChangelog(&committed{rows: twice}); err == nil {
		t.Fatal("a change applied twice went unnoticed")
	}
	if _, err := applyChangelog(&committed{rows: []string{"?,1"}}); err == nil {
		t.Fatal("an unknown row kind went unnoticed")
	}
}

// The counters and the aimed kills read the server's log lines: pin the patterns against slog's text form of the
// lines the engine prints (the engine's logger carries component and job attributes before the line's own).
func TestLogLinePatterns(t *testing.T) {
	var buf strings.Builder
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})).With("component", "engine")
	job := log.With("job", kafkaSinkJob)
	job.Debug("checkpoint completed", "checkpoint", 3, "mode", "aligned", "duration", time.Millisecond)
	log.With("job", kafkaSinkJob+"0").Debug("checkpoint completed", "checkpoint", 3) // job-50 is another job
	job.Info("in-doubt resolution: checkpoints completed but not confirmed", "checkpoints", []uint64{4, 5}, "confirmed", 3)
	job.Info("in-doubt resolution: commit receipt taken as proof", "checkpoint", 4, "sink", "sink-1", "subtask", 0)
	job.Info("in-doubt resolution: handle probed", "checkpoint", 4, "sink", "sink-1", "subtask", 1, "verdict", "committed")
	job.Warn("in-doubt resolution: no answer, retrying", "checkpoint", 4, "sink", "sink-1", "subtask", 1, "err", errors.New("dial"), "backoff", time.Second)
	job.Info("in-doubt resolution: checkpoint committed and confirmed", "checkpoint", 4)
	job.Warn("in-doubt resolution stopped", "at", 5, "cause", errors.New("fenced"), "unresolved_markers", []string{"sink-1/sub0-5", "sink-1/sub1-5"})
	job.Warn("in-doubt resolution stopped", "at", 6, "cause", errors.New("x"), "unresolved_markers", []string(nil))
	job.Warn("in-doubt resolution stopped: restoring from the newest confirmed checkpoint; replay of receipted "+
		"intervals is suppressed, unresolved transactions are settled when their sink opens", "restore", 3, "abandoned", []uint64{5})
	job.Info("unresolved transaction settled before open", "checkpoint", 5, "verdict", "aborted")
	job.Info("replay suppression armed: rows of receipted checkpoints are dropped until the input watermark "+
		"reaches the horizon", "receipted", []uint64{4}, "restored", 3, "horizon", "2026-01-01 00:00:03")
	job.Info("replay suppression ended: the input watermark reached the horizon", "suppressed_rows", 17)

	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	completed := 0
	for _, l := range lines {
		if lineRe[onCompleted].MatchString(l) {
			completed++
		}
	}
	if completed != 1 {
		t.Errorf("%d lines taken for the sink job's checkpoint completion, want 1:\n%s", completed, buf.String())
	}
	if !lineRe[onInDoubt].MatchString(lines[2]) || !lineRe[onInDoubt].MatchString(lines[3]) || !lineRe[onInDoubt].MatchString(lines[4]) {
		t.Errorf("the in-doubt walk's lines are not all aimed at:\n%s", strings.Join(lines[2:5], "\n"))
	}
	logs := t.TempDir()
	if err := os.WriteFile(filepath.Join(logs, "run-1.log"), []byte(buf.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(logs, "reference.log"), []byte(buf.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	n, err := countInDoubt(logs)
	if err != nil {
		t.Fatal(err)
	}
	want := inDoubtCounts{walks: 1, confirmed: 1, fallbacks: 1, probes: 1, retries: 1, receipts: 1, unresolved: 2, settled: 1, armed: 1, suppressed: 17}
	if n != want {
		t.Errorf("counted %+v, want %+v from:\n%s", n, want, buf.String())
	}
}

// The exactly-once topic's rows come back in the aggregate's comparable form.
func TestAggFromJSON(t *testing.T) {
	got, err := aggFromJSON([]byte(`{"k":3,"window_start":"2026-01-01 00:00:01","window_end":"2026-01-01 00:00:02.5",` +
		`"n":2,"sum_id":5,"min_id":2,"max_id":3,"sum_v":-7,"min_v":-9,"max_v":2}`))
	want := aggRow(3, epoch.UnixMilli()+1000, epoch.UnixMilli()+2500, 2, 5, 2, 3, -7, -9, 2)
	if err != nil || got != want {
		t.Fatalf("got %q, %v; want %q", got, err, want)
	}
}
