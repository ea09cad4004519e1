package engine

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/clinksql/clinksql/sqlerr"
)

// subscribeSetup makes a stream and a materialized view over it (an updating GROUP BY) in a session whose jobs
// checkpoint only at FLUSH, so that every FLUSH is one checkpoint of the view's job.
func subscribeSetup(t *testing.T, s *Session) {
	t.Helper()
	mustExec(t, s, `SET checkpoint.interval = '0'`)
	mustExec(t, s, `CREATE STREAM clicks (user_id BIGINT, url VARCHAR)`)
	mustExec(t, s, `CREATE MATERIALIZED VIEW counts AS SELECT user_id, COUNT(*) AS n FROM clicks GROUP BY user_id`)
}

// subRow is a subscription's row split into its time and the rest ("diff|cols").
type subRow struct {
	ts   uint64
	rest string
}

func splitSubRows(t *testing.T, lines []string) []subRow {
	t.Helper()
	out := make([]subRow, len(lines))
	for i, l := range lines {
		ts, rest, _ := strings.Cut(l, "|")
		n, err := strconv.ParseUint(ts, 10, 64)
		if err != nil {
			t.Fatalf("row %q: mz_timestamp %q", l, ts)
		}
		out[i] = subRow{n, rest}
	}
	return out
}

// oneTime checks that rows all have one time, above after, and returns it with the rest of each row.
func oneTime(t *testing.T, what string, rows []subRow, after uint64) (uint64, []string) {
	t.Helper()
	if len(rows) == 0 {
		t.Fatalf("%s: no rows", what)
	}
	var rest []string
	for _, r := range rows {
		if r.ts != rows[0].ts {
			t.Fatalf("%s: times differ: %v", what, rows)
		}
		rest = append(rest, r.rest)
	}
	if rows[0].ts <= after {
		t.Fatalf("%s: time %d, want above %d", what, rows[0].ts, after)
	}
	return rows[0].ts, rest
}

// pins: SUBSCRIBE through a cursor: the view's contents as of its last commit (every row +1, one time), then
// each later checkpoint's changes at that checkpoint's time, an update as -1 for the old row then +1 for the
// new; FETCH n hands out at most n, what is available; FETCH ... WITH (timeout) returns none when nothing comes;
// a new row not yet flushed is not visible; COMMIT closes the cursor.
func TestSubscribeSnapshotThenChanges(t *testing.T) {
	e, s := testEngine(t, t.TempDir())
	subscribeSetup(t, s)
	mustExec(t, s, `INSERT INTO clicks VALUES (1, 'a'), (2, 'b'), (1, 'c')`)
	mustExec(t, s, `FLUSH`)
	mustExec(t, s, `BEGIN`)
	res, err := s.Execute(context.Background(), `DECLARE c CURSOR FOR SUBSCRIBE TO counts`)
	if err != nil || res[0].Tag != "DECLARE CURSOR" {
		t.Fatalf("DECLARE: %v %v", res, err)
	}
	res, err = s.Execute(context.Background(), `FETCH ALL c`)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range res[0].Columns {
		names = append(names, c.Name)
	}
	equalLines(t, "columns", names, []string{"mz_timestamp", "mz_diff", "user_id", "n"})
	snap := resultLines(res[0])
	slices.Sort(snap)
	t0, rest := oneTime(t, "snapshot", splitSubRows(t, snap), 0)
	equalLines(t, "snapshot", rest, []string{"1|1|2", "1|2|1"})
	if res[0].Tag != "FETCH 2" {
		t.Fatalf("tag %q", res[0].Tag)
	}
	// A materialized view's subscription runs no job of its own; the statement is the cursor's query.
	equalLines(t, "clink_catalog.subscriptions", rows(t, s, `SELECT statement, target, temporary_job, rows_sent
		FROM clink_catalog.subscriptions`), []string{`SUBSCRIBE TO counts|materialized view "counts"||2`})

	// Nothing new: a FETCH with a timeout returns no rows.
	equalLines(t, "nothing yet", rows(t, s, `FETCH ALL c WITH (timeout = '10ms')`), nil)
	mustExec(t, s, `INSERT INTO clicks VALUES (2, 'd')`)
	equalLines(t, "inserted, not flushed", rows(t, s, `FETCH 10 FROM c WITH (timeout = '10ms')`), nil)
	mustExec(t, s, `FLUSH`)
	_, rest = oneTime(t, "update", splitSubRows(t, rows(t, s, `FETCH ALL c`)), t0)
	equalLines(t, "update", rest, []string{"-1|2|1", "1|2|2"})

	// FETCH n: at most n of what is there, the rest for the next FETCH.
	mustExec(t, s, `INSERT INTO clicks VALUES (3, 'e'), (4, 'f')`)
	mustExec(t, s, `FLUSH`)
	first := rows(t, s, `FETCH 1 c`)
	second := rows(t, s, `FETCH 5 c`)
	if len(first) != 1 || len(second) != 1 {
		t.Fatalf("FETCH 1 then FETCH 5: %q, %q", first, second)
	}
	mustExec(t, s, `COMMIT`)
	if _, err := s.Execute(context.Background(), `FETCH 1 c`); sqlerr.Code(err) != codeUndefinedCursor {
		t.Fatalf("FETCH after COMMIT: %v", err)
	}
	if n := len(e.subs().list()); n != 0 {
		t.Fatalf("%d subscriptions after COMMIT", n)
	}
	if _, err := s.Execute(context.Background(), `DECLARE d CURSOR FOR SUBSCRIBE counts`); sqlerr.Code(err) != codeNoActiveTxn {
		t.Fatalf("DECLARE outside a transaction: %v", err)
	}
}

// chanWriter is a RowWriter that hands each row ("a|b", NULL as "NULL") to a channel. With block set, a Rows
// call with rows waits until AbortRows (a subscriber that stopped reading).
type chanWriter struct {
	cols    chan []Column
	rows    chan string
	block   bool
	abort   chan struct{}
	aborted sync.Once
}

func newChanWriter() *chanWriter {
	return &chanWriter{cols: make(chan []Column, 1), rows: make(chan string, 1000), abort: make(chan struct{})}
}

func (w *chanWriter) Columns(cols []Column) error { w.cols <- cols; return nil }

func (w *chanWriter) Rows(rows [][]*string) error {
	if w.block && len(rows) > 0 {
		<-w.abort
		return errors.New("aborted")
	}
	for _, l := range resultLines(&Result{Rows: rows}) {
		w.rows <- l
	}
	return nil
}

func (w *chanWriter) AbortRows() { w.aborted.Do(func() { close(w.abort) }) }

// next waits for the writer's next n rows.
func (w *chanWriter) next(t *testing.T, n int) []string {
	t.Helper()
	var out []string
	deadline := time.After(30 * time.Second)
	for len(out) < n {
		select {
		case r := <-w.rows:
			out = append(out, r)
		case <-deadline:
			t.Fatalf("waited 30 s for %d rows, got %q", n, out)
		}
	}
	return out
}

// runSubscribe runs sql (a SUBSCRIBE) in its own session until ctx ends; the statement's error comes on the
// channel.
func runSubscribe(ctx context.Context, e *Engine, setup []string, sql string, w RowWriter) <-chan error {
	done := make(chan error, 1)
	s := e.NewSession()
	go func() {
		for _, st := range setup {
			if _, err := s.Execute(ctx, st); err != nil {
				done <- err
				return
			}
		}
		_, err := s.RunStmtText(ctx, sql, w)
		done <- err
	}()
	return done
}

// RunStmtText runs one statement with its rows streamed to w (tests).
func (s *Session) RunStmtText(ctx context.Context, sql string, w RowWriter) (*Result, error) {
	var res *Result
	err := s.Run(ctx, sql, w, func(r *Result) { res = r })
	return res, err
}

func waitErr(t *testing.T, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(30 * time.Second):
		t.Fatal("the statement did not end within 30 s")
		return nil
	}
}

// pins: a streamed SUBSCRIBE WITH (PROGRESS) (what the simple query protocol and the REPL run): the columns at
// once, the snapshot rows with mz_progressed false, a progress row at the snapshot's time + 1, a progress row
// after every later checkpoint (FLUSH) even without changes, changes before their checkpoint's progress; cancel
// ends it with 57014 and frees the subscription.
func TestSubscribeProgressStreamed(t *testing.T) {
	e, s := testEngine(t, t.TempDir())
	subscribeSetup(t, s)
	mustExec(t, s, `INSERT INTO clicks VALUES (1, 'a')`)
	mustExec(t, s, `FLUSH`)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := newChanWriter()
	done := runSubscribe(ctx, e, nil, `SUBSCRIBE counts WITH (PROGRESS)`, w)
	cols := <-w.cols
	if len(cols) != 5 || cols[1].Name != "mz_progressed" || cols[2].Name != "mz_diff" {
		t.Fatalf("columns %v", cols)
	}
	got := splitSubRows(t, w.next(t, 2))
	t0 := got[0].ts
	if got[0].rest != "f|1|1|1" || got[1] != (subRow{t0 + 1, "t|NULL|NULL|NULL"}) {
		t.Fatalf("snapshot and progress: %v", got)
	}
	mustExec(t, s, `FLUSH`) // no change: progress only
	p := splitSubRows(t, w.next(t, 1))[0]
	if p.rest != "t|NULL|NULL|NULL" || p.ts <= t0+1 {
		t.Fatalf("progress after an empty checkpoint: %v (snapshot at %d)", p, t0)
	}
	mustExec(t, s, `INSERT INTO clicks VALUES (1, 'b')`)
	mustExec(t, s, `FLUSH`)
	got = splitSubRows(t, w.next(t, 3))
	t1 := got[0].ts
	if t1 < p.ts || got[0].rest != "f|-1|1|1" || got[1] != (subRow{t1, "f|1|1|2"}) || got[2] != (subRow{t1 + 1, "t|NULL|NULL|NULL"}) {
		t.Fatalf("update then progress: %v (last progress %d)", got, p.ts)
	}
	cancel()
	if err := waitErr(t, done); sqlerr.Code(err) != sqlerr.QueryCanceled {
		t.Fatalf("after cancel: %v", err)
	}
	if n := len(e.subs().list()); n != 0 {
		t.Fatalf("%d subscriptions after cancel", n)
	}
	if _, err := s.Execute(context.Background(), `SUBSCRIBE counts`); sqlerr.Code(err) != sqlerr.FeatureNotSupported {
		t.Fatalf("SUBSCRIBE without a writer: %v", err)
	}
}

// pins: a subscriber that reads nothing never holds the view's job back: FLUSH (a checkpoint of the job, and its
// commit) completes again and again while the subscriber's writer is blocked; once the unread changelog passes
// max_subscribe_lag the subscription is cut off (its writer told to abort) and the statement ends with 53400. A
// cursor nobody FETCHes is cut off the same way, and its next FETCH says why.
func TestSubscribeSlowSubscriberIsCutOff(t *testing.T) {
	e, s := testEngine(t, t.TempDir())
	subscribeSetup(t, s)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := newChanWriter()
	w.block = true
	done := runSubscribe(ctx, e, []string{`SET max_subscribe_lag = '4kB'`}, `SUBSCRIBE counts`, w)
	<-w.cols

	mustExec(t, s, `BEGIN`)
	mustExec(t, s, `SET max_subscribe_lag = '4kB'`)
	mustExec(t, s, `DECLARE c CURSOR FOR SUBSCRIBE counts`)
	for i := range 40 {
		mustExec(t, s, `INSERT INTO clicks VALUES (`+strconv.Itoa(i)+`, 'some url that makes the changelog grow')`)
		flushCtx, cancelFlush := context.WithTimeout(context.Background(), 30*time.Second)
		if _, err := s.Execute(flushCtx, `FLUSH`); err != nil {
			t.Fatalf("FLUSH %d with a blocked subscriber: %v", i, err)
		}
		cancelFlush()
	}
	err := waitErr(t, done)
	if sqlerr.Code(err) != sqlerr.ConfigurationLimit || !strings.Contains(err.Error(), `materialized view "counts"`) ||
		!strings.Contains(err.Error(), "max_subscribe_lag") {
		t.Fatalf("blocked subscriber: %v", err)
	}
	select {
	case <-w.abort:
	default:
		t.Fatal("the blocked writer was not told to abort")
	}
	// The cursor was cut off too, by the watcher, before anyone fetched.
	deadline := time.Now().Add(30 * time.Second)
	for len(e.subs().list()) != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d subscriptions still running", len(e.subs().list()))
		}
		time.Sleep(time.Millisecond)
	}
	if _, err := s.Execute(context.Background(), `FETCH ALL c`); sqlerr.Code(err) != sqlerr.ConfigurationLimit {
		t.Fatalf("FETCH from the cut-off cursor: %v", err)
	}
	mustExec(t, s, `ROLLBACK`)
	// The view is complete all the same.
	equalLines(t, "the view", rows(t, s, `SELECT COUNT(*) FROM counts`), []string{"40"})
}

// pins: SUBSCRIBE over a query runs it as a temporary view: its snapshot holds what the inputs held when it
// started, FLUSH reaches its job, its changes follow; SUBSCRIBE TO a stream works the same way; cancel stops the
// job and deletes its files; the DROP of an input ends the subscription with 42P01 naming it.
func TestSubscribeQueryAndStream(t *testing.T) {
	dir := t.TempDir()
	e, s := testEngine(t, dir)
	subscribeSetup(t, s)
	mustExec(t, s, `INSERT INTO clicks VALUES (1, 'a'), (1, 'b'), (2, 'c')`)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := newChanWriter()
	done := runSubscribe(ctx, e, []string{`SET checkpoint.interval = '0'`},
		`SUBSCRIBE (SELECT url, user_id * 10 AS x FROM clicks WHERE user_id = 1)`, w)
	cols := <-w.cols
	if len(cols) != 4 || cols[2].Name != "url" || cols[3].Name != "x" {
		t.Fatalf("columns %v", cols)
	}
	snap := w.next(t, 2)
	slices.Sort(snap)
	t0, rest := oneTime(t, "snapshot", splitSubRows(t, snap), 0)
	equalLines(t, "snapshot", rest, []string{"1|a|10", "1|b|10"})
	tmp, _ := filepath.Glob(filepath.Join(dir, "tmp", "subscribe-*"))
	if len(tmp) != 1 {
		t.Fatalf("temporary views: %v", tmp)
	}
	mustExec(t, s, `INSERT INTO clicks VALUES (1, 'd'), (3, 'e')`)
	mustExec(t, s, `FLUSH`)
	_, rest = oneTime(t, "change", splitSubRows(t, w.next(t, 1)), t0)
	equalLines(t, "change", rest, []string{"1|d|10"})
	// The subscription and its temporary job show in clink_catalog.subscriptions while it runs, with the rows
	// handed out (the snapshot's two and the change); not a job of the catalog.
	want := "1|SUBSCRIBE (SELECT url, user_id * 10 AS x FROM clicks WHERE user_id = 1)|the query|subscribe-1|3|0|t"
	equalLines(t, "clink_catalog.subscriptions", rows(t, s, `SELECT subscription_id, statement, target, temporary_job,
		rows_sent, lag_bytes, started_at > TIMESTAMP '2026-01-01 00:00:00' FROM clink_catalog.subscriptions`), []string{want})
	cancel()
	if err := waitErr(t, done); sqlerr.Code(err) != sqlerr.QueryCanceled {
		t.Fatalf("after cancel: %v", err)
	}
	if got := rows(t, s, `SELECT * FROM clink_catalog.subscriptions`); len(got) != 0 {
		t.Fatalf("clink_catalog.subscriptions after cancel: %v", got)
	}
	if tmp, _ := filepath.Glob(filepath.Join(dir, "tmp", "subscribe-*")); len(tmp) != 0 {
		t.Fatalf("temporary views left after cancel: %v", tmp)
	}

	// A stream, then its DROP.
	mustExec(t, s, `CREATE STREAM other (v INT)`)
	mustExec(t, s, `INSERT INTO other VALUES (7)`)
	w = newChanWriter()
	done = runSubscribe(context.Background(), e, nil, `SUBSCRIBE TO other`, w)
	if got := splitSubRows(t, w.next(t, 1)); got[0].rest != "1|7" {
		t.Fatalf("stream snapshot: %v", got)
	}
	equalLines(t, "clink_catalog.subscriptions", rows(t, s, `SELECT subscription_id, target, temporary_job, rows_sent
		FROM clink_catalog.subscriptions`), []string{`2|stream "other"|subscribe-2|1`})
	mustExec(t, s, `DROP STREAM other`)
	if err := waitErr(t, done); sqlerr.Code(err) != sqlerr.UndefinedTable || !strings.Contains(err.Error(), `stream "other" was dropped`) {
		t.Fatalf("after DROP: %v", err)
	}
	if n := len(e.subs().list()); n != 0 {
		t.Fatalf("%d subscriptions after DROP", n)
	}
	if tmp, _ := filepath.Glob(filepath.Join(dir, "tmp", "subscribe-*")); len(tmp) != 0 {
		t.Fatalf("temporary views left after DROP: %v", tmp)
	}
	if _, err := s.RunStmtText(context.Background(), `SUBSCRIBE nope`, newChanWriter()); sqlerr.Code(err) != sqlerr.UndefinedTable {
		t.Fatalf("SUBSCRIBE to nothing: %v", err)
	}
}

// pins: closing the engine ends a subscription with 57P01; after the next open a new subscription starts from
// the view's contents then, at a time no lower than the old subscription's snapshot; DROP of the view ends it
// with 42P01; a changelog segment that is gone fails the subscription with an error naming the view.
func TestSubscribeAcrossRestartAndDrop(t *testing.T) {
	dir := t.TempDir()
	e, s := testEngine(t, dir)
	subscribeSetup(t, s)
	mustExec(t, s, `INSERT INTO clicks VALUES (1, 'a')`)
	mustExec(t, s, `FLUSH`)
	mustExec(t, s, `BEGIN`)
	mustExec(t, s, `DECLARE c CURSOR FOR SUBSCRIBE counts`)
	t0, _ := oneTime(t, "before the restart", splitSubRows(t, rows(t, s, `FETCH ALL c`)), 0)
	closeEngine(t, e)
	if _, err := s.Execute(context.Background(), `FETCH ALL c`); sqlerr.Code(err) != codeAdminShutdown {
		t.Fatalf("FETCH after Close: %v", err)
	}

	e2, s2 := testEngine(t, dir)
	mustExec(t, s2, `INSERT INTO clicks VALUES (1, 'b'), (5, 'x')`)
	mustExec(t, s2, `FLUSH`)
	mustExec(t, s2, `BEGIN`)
	mustExec(t, s2, `DECLARE c CURSOR FOR SUBSCRIBE counts`)
	snap := rows(t, s2, `FETCH ALL c`)
	slices.Sort(snap)
	_, rest := oneTime(t, "after the restart", splitSubRows(t, snap), t0)
	equalLines(t, "after the restart", rest, []string{"1|1|2", "1|5|1"})

	mustExec(t, s2, `DECLARE d CURSOR FOR SUBSCRIBE counts`)
	mustExec(t, s2, `DROP MATERIALIZED VIEW counts`)
	if _, err := s2.Execute(context.Background(), `FETCH ALL c WITH (timeout = '1s')`); sqlerr.Code(err) != sqlerr.UndefinedTable ||
		!strings.Contains(err.Error(), `materialized view "counts"`) {
		t.Fatalf("FETCH after DROP: %v", err)
	}
	mustExec(t, s2, `ROLLBACK`)

	// A segment removed behind the log's back (nothing in clinksql deletes one while the view exists).
	mustExec(t, s2, `CREATE MATERIALIZED VIEW v2 AS SELECT user_id FROM clicks`)
	mustExec(t, s2, `FLUSH`)
	mustExec(t, s2, `BEGIN`)
	mustExec(t, s2, `DECLARE c CURSOR FOR SUBSCRIBE v2`)
	rows(t, s2, `FETCH ALL c`)
	mustExec(t, s2, `INSERT INTO clicks VALUES (9, 'z')`)
	mustExec(t, s2, `FLUSH`)
	obj, _ := e2.cat.Get("v2")
	segs, _ := filepath.Glob(filepath.Join(e2.storageDir(obj), "seg-*"))
	slices.Sort(segs)
	if len(segs) < 2 {
		t.Fatalf("segments %v", segs)
	}
	if err := os.Remove(segs[len(segs)-1]); err != nil {
		t.Fatal(err)
	}
	if _, err := s2.Execute(context.Background(), `FETCH ALL c`); err == nil || !strings.Contains(err.Error(), `materialized view "v2"`) {
		t.Fatalf("FETCH over a removed segment: %v", err)
	}
	mustExec(t, s2, `ROLLBACK`)
}

// pins: a view written by two sink subtasks (parallelism 2) is read consistently: each checkpoint's changes,
// from both subtasks' segments, come at that checkpoint's one time, and the snapshot is one time too.
func TestSubscribeParallelViewIsConsistent(t *testing.T) {
	_, s := testEngine(t, t.TempDir())
	mustExec(t, s, `SET parallelism = 2`)
	subscribeSetup(t, s)
	var values []string
	for k := range 50 {
		values = append(values, "("+strconv.Itoa(k)+", 'a')")
	}
	mustExec(t, s, `INSERT INTO clicks VALUES `+strings.Join(values, ", "))
	mustExec(t, s, `FLUSH`)
	mustExec(t, s, `BEGIN`)
	mustExec(t, s, `DECLARE c CURSOR FOR SUBSCRIBE counts`)
	t0, snap := oneTime(t, "snapshot", splitSubRows(t, rows(t, s, `FETCH ALL c`)), 0)
	if len(snap) != 50 {
		t.Fatalf("snapshot of %d rows", len(snap))
	}
	mustExec(t, s, `INSERT INTO clicks VALUES `+strings.Join(values, ", "))
	mustExec(t, s, `FLUSH`)
	_, changes := oneTime(t, "changes", splitSubRows(t, rows(t, s, `FETCH ALL c`)), t0)
	if len(changes) != 100 {
		t.Fatalf("%d changes, want 100: %q", len(changes), changes)
	}
	mustExec(t, s, `COMMIT`)
}

// pins: a cursor over a SELECT: its rows are computed at DECLARE and handed out by FETCH n, then FETCH ALL,
// then none; CLOSE ALL closes it.
func TestCursorOverSelect(t *testing.T) {
	_, s := testEngine(t, t.TempDir())
	mustExec(t, s, `CREATE STREAM nums (v INT)`)
	mustExec(t, s, `INSERT INTO nums VALUES (3), (1), (2)`)
	mustExec(t, s, `BEGIN`)
	mustExec(t, s, `DECLARE c CURSOR FOR SELECT v FROM nums ORDER BY v`)
	mustExec(t, s, `INSERT INTO nums VALUES (0)`) // after DECLARE: not in the cursor
	equalLines(t, "FETCH 2", rows(t, s, `FETCH 2 FROM c`), []string{"1", "2"})
	equalLines(t, "FETCH ALL", rows(t, s, `FETCH ALL IN c`), []string{"3"})
	equalLines(t, "FETCH past the end", rows(t, s, `FETCH c`), nil)
	mustExec(t, s, `CLOSE ALL`)
	if _, err := s.Execute(context.Background(), `CLOSE c`); sqlerr.Code(err) != codeUndefinedCursor {
		t.Fatalf("CLOSE after CLOSE ALL: %v", err)
	}
	mustExec(t, s, `COMMIT`)
}
