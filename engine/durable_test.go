package engine

import (
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/clinksql/clinksql/checkpoint"
	"github.com/clinksql/clinksql/sqlerr"
)

// wantCorrupt fails unless err is XX001 and names every one of names.
func wantCorrupt(t *testing.T, what string, err error, names ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: no error, want XX001", what)
	}
	if code := sqlerr.As(err).Code; code != sqlerr.DataCorrupted {
		t.Fatalf("%s: %s %v, want XX001", what, code, err)
	}
	for _, n := range names {
		if !strings.Contains(err.Error(), n) {
			t.Fatalf("%s: %v does not name %s", what, err, n)
		}
	}
}

// onlyDir returns the one entry of dir (a stream's storage).
func onlyDir(t *testing.T, dir string) string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil || len(es) != 1 {
		t.Fatalf("%s holds %v (%v), want one entry", dir, es, err)
	}
	return filepath.Join(dir, es[0].Name())
}

// Pins issue 11: one flipped byte of a stream segment changed SUM with no error. The read now fails with XX001
// naming the segment.
func TestFlippedSegmentByteIsDataCorrupted(t *testing.T) {
	dir := t.TempDir()
	e, s := testEngine(t, dir)
	mustExec(t, s, `CREATE STREAM t (x BIGINT)`)
	mustExec(t, s, `INSERT INTO t VALUES (1), (123456789), (3)`)
	equalLines(t, "sum", rows(t, s, "SELECT SUM(x) FROM t"), []string{"123456793"})
	closeEngine(t, e)

	seg := ""
	files, _ := filepath.Glob(filepath.Join(onlyDir(t, filepath.Join(dir, "streams")), "seg-*"))
	if len(files) != 1 {
		t.Fatalf("segments %v", files)
	}
	seg = files[0]
	data, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(data, binary.LittleEndian.AppendUint64(nil, 123456789))
	if i < 0 {
		t.Fatal("value not found in the segment")
	}
	data[i] ^= 0x10
	if err := os.WriteFile(seg, data, 0o644); err != nil {
		t.Fatal(err)
	}

	e, s = testEngine(t, dir)
	defer closeEngine(t, e)
	_, err = s.Execute(context.Background(), "SELECT SUM(x) FROM t")
	wantCorrupt(t, "SELECT after the flip", err, filepath.Base(seg))
}

// Pins issue 11: with catalog/catalog.json gone, the engine started an empty catalog and a new stream and job-1
// took over the old ones' storage and checkpoints. Opening is now refused, naming the catalog and what is there.
func TestMissingCatalogIsRefused(t *testing.T) {
	dir := t.TempDir()
	e, s := testEngine(t, dir)
	mustExec(t, s, `CREATE STREAM ev (k BIGINT)`)
	mustExec(t, s, `INSERT INTO ev VALUES (1), (2)`)
	mustExec(t, s, `CREATE MATERIALIZED VIEW c AS SELECT k, COUNT(*) AS n FROM ev GROUP BY k`)
	mustExec(t, s, `FLUSH`)
	closeEngine(t, e)
	if err := os.Remove(filepath.Join(dir, "catalog", "catalog.json")); err != nil {
		t.Fatal(err)
	}
	e2, err := Open(Config{DataDir: dir})
	if err == nil {
		e2.Close(context.Background())
	}
	wantCorrupt(t, "open without a catalog", err, "catalog.json", filepath.Join("jobs", "job-1"), "streams"+string(filepath.Separator)+"ev")

	// A fresh directory is not refused, and once it has a catalog, losing it is noticed even before any object.
	fresh := t.TempDir()
	e, _ = testEngine(t, fresh)
	closeEngine(t, e)
	if _, err := os.Stat(filepath.Join(fresh, "catalog", "catalog.json")); err != nil {
		t.Fatalf("a new data directory has no catalog file: %v", err)
	}
}

// Pins issue 11: a stream's storage was its name, so a leftover log of a dropped stream (DROP deletes it after
// the catalog forgot the stream, and a crash can come in between) became the new stream's contents.
func TestDroppedStreamStorageIsNeverReused(t *testing.T) {
	dir := t.TempDir()
	e, s := testEngine(t, dir)
	mustExec(t, s, `CREATE STREAM t (x BIGINT)`)
	mustExec(t, s, `INSERT INTO t VALUES (7)`)
	old := onlyDir(t, filepath.Join(dir, "streams"))
	saved := t.TempDir()
	if err := os.CopyFS(saved, os.DirFS(old)); err != nil {
		t.Fatal(err)
	}
	mustExec(t, s, `DROP STREAM t`)
	// The crash between the catalog write and the deletion: the old log is back where it was.
	if err := os.CopyFS(old, os.DirFS(saved)); err != nil {
		t.Fatal(err)
	}
	mustExec(t, s, `CREATE STREAM t (x BIGINT)`)
	equalLines(t, "new stream t", rows(t, s, "SELECT COUNT(*) FROM t"), []string{"0"})
	closeEngine(t, e)
	// The next open deletes the leftover.
	e, s = testEngine(t, dir)
	defer closeEngine(t, e)
	if _, err := os.Stat(old); err == nil {
		t.Fatalf("leftover %s still there", old)
	}
	equalLines(t, "new stream t after reopen", rows(t, s, "SELECT COUNT(*) FROM t"), []string{"0"})
}

// Pins issue 11: a materialized view's job whose checkpoints were deleted while stopped replayed its whole input
// on top of the output it had committed (every count doubled). The job now fails at once, naming itself and what
// is missing, and the view keeps its committed rows.
func TestJobWithMissingCheckpointsFails(t *testing.T) {
	dir := t.TempDir()
	e, s := testEngine(t, dir)
	mustExec(t, s, `CREATE STREAM ev (k BIGINT)`)
	mustExec(t, s, `INSERT INTO ev VALUES (1), (1), (2)`)
	mustExec(t, s, `CREATE MATERIALIZED VIEW c AS SELECT k, COUNT(*) AS n FROM ev GROUP BY k`)
	mustExec(t, s, `FLUSH`)
	want := []string{"1|2", "2|1"}
	equalLines(t, "view", rows(t, s, "SELECT k, n FROM c ORDER BY k"), want)
	closeEngine(t, e)

	cp := filepath.Join(dir, "jobs", "job-1", "checkpoints")
	for _, pat := range []string{"chk-*", "COMPLETED-*"} {
		ms, _ := filepath.Glob(filepath.Join(cp, pat))
		for _, m := range ms {
			if err := os.RemoveAll(m); err != nil {
				t.Fatal(err)
			}
		}
	}

	e, s = testEngine(t, dir)
	defer closeEngine(t, e)
	e.mu.Lock()
	rj := e.jobs["job-1"]
	e.mu.Unlock()
	if rj == nil {
		t.Fatal("job-1 not deployed")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	select {
	case <-rj.job.Done():
	case <-ctx.Done():
		mustExec(t, s, "FLUSH")
		t.Fatalf("job-1 still runs without its checkpoints; the view now holds %q", rows(t, s, "SELECT k, n FROM c ORDER BY k"))
	}
	job := strings.Split(rows(t, s, "SHOW JOBS")[0], "|")
	if job[2] != "FAILED" || !strings.Contains(job[10], "job-1") || !strings.Contains(job[10], "COMPLETED") {
		t.Fatalf("SHOW JOBS: %q, want job-1 FAILED naming the missing markers", job)
	}
	equalLines(t, "view after the refusal", rows(t, s, "SELECT k, n FROM c ORDER BY k"), want)
}

// Pins issue 11: a damaged latest checkpoint failed the job although an older retained one was intact. The job
// now falls back to the older one when no sink published output after it (here the last checkpoint only closed
// the job: the view's rows stay exact and the job goes on), and refuses, naming the checkpoint and the published
// file, when falling back would publish again.
func TestDamagedLatestCheckpointFallsBackOnlyWhenNothingWasPublished(t *testing.T) {
	for _, tc := range []struct {
		name      string
		published bool
	}{{"nothing published after", false}, {"published after", true}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			e, s := testEngine(t, dir)
			mustExec(t, s, `SET checkpoint.interval = '0'`)
			mustExec(t, s, `CREATE STREAM ev (k BIGINT)`)
			mustExec(t, s, `INSERT INTO ev VALUES (1), (1), (2)`)
			mustExec(t, s, `CREATE MATERIALIZED VIEW c AS SELECT k, COUNT(*) AS n FROM ev GROUP BY k`)
			mustExec(t, s, `FLUSH`)
			want := []string{"1|2", "2|1"}
			if tc.published {
				mustExec(t, s, `INSERT INTO ev VALUES (2)`)
				want = []string{"1|2", "2|2"}
				// The job reads the row before the close's checkpoint, so that checkpoint publishes it (else it
				// publishes nothing, and falling back is right: the row is read again from the stream).
				e.mu.Lock()
				rj := e.jobs["job-1"]
				e.mu.Unlock()
				if _, err := catchUp(context.Background(), rj); err != nil {
					t.Fatal(err)
				}
			}
			closeEngine(t, e) // the final checkpoint: it publishes the new row, if any

			cp := filepath.Join(dir, "jobs", "job-1", "checkpoints")
			ids, err := checkpoint.CompletedIDs(nil, cp)
			if err != nil || len(ids) != 2 {
				t.Fatalf("completed checkpoints %v (%v), want two retained", ids, err)
			}
			latest := strconv.FormatUint(ids[1], 10)
			snap := onlyFirst(t, filepath.Join(cp, "chk-"+latest))
			data, err := os.ReadFile(snap)
			if err != nil {
				t.Fatal(err)
			}
			data[len(data)/2] ^= 0x40
			if err := os.WriteFile(snap, data, 0o644); err != nil {
				t.Fatal(err)
			}

			e, s = testEngine(t, dir)
			defer closeEngine(t, e)
			if !tc.published {
				mustExec(t, s, `INSERT INTO ev VALUES (3)`)
				mustExec(t, s, `FLUSH`)
				equalLines(t, "view after the fallback", rows(t, s, "SELECT k, n FROM c ORDER BY k"), append(want, "3|1"))
				return
			}
			e.mu.Lock()
			rj := e.jobs["job-1"]
			e.mu.Unlock()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			select {
			case <-rj.job.Done():
			case <-ctx.Done():
				t.Fatal("job-1 runs from a checkpoint older than output it published")
			}
			job := strings.Split(rows(t, s, "SHOW JOBS")[0], "|")
			if job[2] != "FAILED" || !strings.Contains(job[10], "checkpoint "+latest+" is damaged") ||
				!strings.Contains(job[10], "already published") || !strings.Contains(job[10], filepath.Base(snap)) {
				t.Fatalf("SHOW JOBS: %q, want job-1 FAILED: checkpoint %s damaged, fallback refused", job, latest)
			}
			equalLines(t, "view after the refusal", rows(t, s, "SELECT k, n FROM c ORDER BY k"), want)
		})
	}
}

// onlyFirst returns the first regular file of dir, by name.
func onlyFirst(t *testing.T, dir string) string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		if e.Type().IsRegular() {
			return filepath.Join(dir, e.Name())
		}
	}
	t.Fatalf("%s has no file", dir)
	return ""
}
