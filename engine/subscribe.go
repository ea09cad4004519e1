package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/clinksql/clinksql/catalog"
	"github.com/clinksql/clinksql/connectors/streamlog"
	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/exec/textform"
	"github.com/clinksql/clinksql/sql/parser"
	"github.com/clinksql/clinksql/sql/planner"
	"github.com/clinksql/clinksql/sqlerr"
	"github.com/clinksql/clinksql/state"
)

// SUBSCRIBE (Materialize's): a materialized view's contents as of one checkpoint of its job (the snapshot), then
// every change as the checkpoint that made it visible commits, each row with mz_timestamp (that checkpoint's id),
// mz_diff (+1 or -1; an update is -1 for the old row, then +1 for the new one) and the view's columns; WITH
// (PROGRESS) adds mz_progressed and a progress row (mz_progressed true, the other columns NULL) when the time
// advances, once after the snapshot and after every later checkpoint of the view's job. A progress row at time t
// says that no later row has an mz_timestamp below t.
//
// A subscription reads the view's committed changelog (streamlog.Tail), the storage every reader of the view
// reads, at its own pace: the job writing the view never waits for it. A subscriber that falls behind by more
// than max_subscribe_lag (bytes of changelog it has not been handed yet) is cut off with 53400, by a watcher that
// notices it while the subscriber reads nothing (a cursor nobody FETCHes, a client that stopped reading: a
// streaming writer's RowAborter is told, so a client blocked on a full socket is disconnected). The changelog is
// never compacted while the view exists, so a subscriber cannot miss a change; a segment that is gone all the
// same (deleted by hand) fails the subscription with an error that names the view.
//
// SUBSCRIBE over anything else (a query, a stream, a plain view) runs the query as a temporary materialized
// view: a job of the session's settings, owned by the subscription, writing a log under the data directory's
// tmp/, started with a consistent snapshot (the job catches up with what its input logs hold, then checkpoints)
// and dropped with its files when the subscription ends. It is not in the catalog (SHOW JOBS does not list it);
// FLUSH checkpoints it after the catalog's jobs.
//
// Rows reach a client three ways: streamed to the statement's RowWriter until it is canceled (the simple query
// protocol, the REPL), as COPY (SUBSCRIBE ...) TO STDOUT (a CopyWriter), or through a cursor: DECLARE c CURSOR FOR
// SUBSCRIBE ... inside BEGIN ... COMMIT, then FETCH, which waits for at least one row unless WITH (timeout = ...)
// says how long to wait at most. A subscription ends at cancel, CLOSE, COMMIT or ROLLBACK (cursors), the DROP of
// what it reads (42P01), a failure of its temporary job, the engine's Close (57P01; a new subscription after the
// next open starts from the view's contents then), or the lag bound.

// codeAdminShutdown is Postgres' admin_shutdown: the engine closed under a subscription.
const codeAdminShutdown = "57P01"

// Postgres' codes for cursors.
const (
	codeNoActiveTxn     = "25P01" // no_active_sql_transaction: DECLARE outside BEGIN ... COMMIT
	codeUndefinedCursor = "34000" // invalid_cursor_name
	codeDuplicateCursor = "42P03" // duplicate_cursor
)

// streamBatchRows is how many rows a streamed subscription hands its writer at most at a time.
const streamBatchRows = 4096

// RowAborter is implemented by a RowWriter that can be told to give up on a SUBSCRIBE whose subscriber is cut
// off (max_subscribe_lag) while a Rows call may be blocked on a client that stopped reading: it should make that
// call return (pgwire sets a write deadline, which ends the connection).
type RowAborter interface {
	AbortRows()
}

// CopyWriter is implemented by a RowWriter that takes the output of COPY (<query>) TO STDOUT: CopyOut once with
// the columns, then lines in COPY's text format (each ending in a newline) batch by batch as the rows come. The
// statement's Result then carries the tag COPY <n> and no rows.
type CopyWriter interface {
	CopyOut(cols []Column) error
	CopyData(lines [][]byte) error
}

// subscription is one SUBSCRIBE: what it reads, and its reader.
type subscription struct {
	e        *Engine
	id       int64     // its number in the engine (clink_catalog.subscriptions)
	text     string    // the SUBSCRIBE statement
	started  time.Time // when it started
	what     string    // "materialized view \"v\"" or "the query", for messages
	cols     []Column
	progress bool
	zone     *time.Location
	maxLag   int64
	log      *streamlog.Log
	// storages are the storage names of the logs whose DROP ends it (the view's, or the query's inputs').
	storages []string
	temp     *tempView

	mu      sync.Mutex // tail, pending, sent, err, onEnd
	tail    *streamlog.Tail
	pending [][]*string
	sent    int64         // rows handed to the client
	err     error         // why it ended; nil while it runs
	ended   chan struct{} // closed with err set
	onEnd   func()        // told when it ends (a streaming writer's RowAborter)
}

// tempView is the job and log of SUBSCRIBE over a query.
type tempView struct {
	e    *Engine
	name string // subscribe-<n>, its job's name
	job  *exec.Job
	key  string // the log's key in Engine.logs
	dir  string
	plan *planner.Physical
	// finished is set once a subscriber saw the job finish (a bounded query): its log holds all it ever will.
	finished atomic.Bool
}

// subscriptions are an engine's running subscriptions (Close and DROP end them).
type subscriptions struct {
	mu     sync.Mutex
	all    map[*subscription]struct{}
	seq    int   // numbers temporary views
	lastID int64 // numbers subscriptions
}

func (e *Engine) subs() *subscriptions { return &e.subscriptions }

// add registers sub, unless the engine is closing (Close sets closed before it lists the subscriptions to end).
func (s *subscriptions) add(e *Engine, sub *subscription) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	e.mu.Lock()
	closed := e.closed
	e.mu.Unlock()
	if closed {
		return sqlerr.New(codeAdminShutdown, sqlerr.NoPos, "the engine is shutting down")
	}
	if s.all == nil {
		s.all = map[*subscription]struct{}{}
	}
	s.lastID++
	sub.id = s.lastID
	s.all[sub] = struct{}{}
	return nil
}

// subscribe starts a subscription for st and takes its snapshot.
func (s *Session) subscribe(ctx context.Context, st *parser.Subscribe) (*subscription, error) {
	e := s.e
	e.mu.Lock()
	closed := e.closed
	e.mu.Unlock()
	if closed {
		return nil, sqlerr.New(codeAdminShutdown, sqlerr.NoPos, "the engine is shutting down")
	}
	sub := &subscription{e: e, progress: st.Progress, zone: s.vars.zone(), maxLag: s.vars.limit("max_subscribe_lag"),
		ended: make(chan struct{}), text: cmp.Or(st.SQL(), parser.Format(st)), started: time.Now()}
	var columns []catalog.Column
	if st.Query == nil {
		obj, ok := e.cat.Get(st.Name)
		if !ok {
			return nil, sqlerr.New(sqlerr.UndefinedTable, st.NameP, "relation %q does not exist", st.Name)
		}
		switch obj.Kind {
		case catalog.MaterializedView:
			l, err := e.Log(obj)
			if err != nil {
				return nil, err
			}
			sub.what, sub.log, sub.storages, columns = fmt.Sprintf("materialized view %q", obj.Name), l, []string{obj.Storage}, obj.Columns
		case catalog.Stream, catalog.View:
			q, err := relationQuery(obj.Name)
			if err != nil {
				return nil, err
			}
			if err := sub.startTemp(ctx, s, q, fmt.Sprintf("%s %q", strings.ToLower(string(obj.Kind)), obj.Name)); err != nil {
				return nil, err
			}
		default:
			return nil, sqlerr.New(sqlerr.WrongObjectType, st.NameP, "cannot subscribe to %s %q: only to a materialized view, a view, a stream or a query",
				strings.ToLower(string(obj.Kind)), obj.Name)
		}
	} else if err := sub.startTemp(ctx, s, st.Query, "the query"); err != nil {
		return nil, err
	}
	if sub.temp != nil {
		columns = sub.temp.columns()
	}
	sub.cols = subscribeColumns(columns, st.Progress)
	sub.tail = sub.log.NewTail(e.cfg.Alloc, !st.NoSnapshot)
	if err := e.subs().add(e, sub); err != nil {
		sub.tail.Close()
		if sub.temp != nil {
			sub.temp.stop()
		}
		return nil, err
	}
	// The snapshot now, as of the view's last commit: a cursor's rows are the view's contents when it was
	// declared, however late its first FETCH comes.
	sub.mu.Lock()
	err := sub.pull(1)
	sub.mu.Unlock()
	if err != nil {
		sub.close(err)
		return nil, err
	}
	go sub.watch()
	return sub, nil
}

// relationQuery is SELECT * FROM name, the query of SUBSCRIBE TO a stream or plain view.
func relationQuery(name string) (*parser.Query, error) {
	stmts, err := parser.Parse("SELECT * FROM " + `"` + strings.ReplaceAll(name, `"`, `""`) + `"`)
	if err != nil {
		return nil, err
	}
	return stmts[0].(*parser.Select).Query, nil
}

// subscribeColumns are a subscription's columns: mz_timestamp, mz_progressed (WITH (PROGRESS)), mz_diff, then the
// relation's.
func subscribeColumns(cols []catalog.Column, progress bool) []Column {
	out := []Column{{Name: "mz_timestamp", Type: arrow.PrimitiveTypes.Int64, OID: catalog.OID(arrow.PrimitiveTypes.Int64)}}
	if progress {
		out = append(out, Column{Name: "mz_progressed", Type: arrow.FixedWidthTypes.Boolean, OID: catalog.OID(arrow.FixedWidthTypes.Boolean)})
	}
	out = append(out, Column{Name: "mz_diff", Type: arrow.PrimitiveTypes.Int64, OID: catalog.OID(arrow.PrimitiveTypes.Int64)})
	for _, c := range cols {
		t, err := c.Type.Arrow()
		if err != nil {
			t = arrow.BinaryTypes.String
		}
		out = append(out, Column{Name: c.Name, Type: t, OID: catalog.OID(t)})
	}
	return out
}

// subscribeColumnsOf works out a SUBSCRIBE's columns without starting it (pgwire's Describe).
func (s *Session) subscribeColumnsOf(st *parser.Subscribe) ([]Column, error) {
	if st.Query == nil {
		obj, ok := s.e.cat.Get(st.Name)
		if !ok {
			return nil, sqlerr.New(sqlerr.UndefinedTable, st.NameP, "relation %q does not exist", st.Name)
		}
		if obj.Kind == catalog.MaterializedView || obj.Kind == catalog.Stream || obj.Kind == catalog.View {
			return subscribeColumns(obj.Columns, st.Progress), nil
		}
		return nil, sqlerr.New(sqlerr.WrongObjectType, st.NameP, "cannot subscribe to %s %q", strings.ToLower(string(obj.Kind)), obj.Name)
	}
	info, err := planner.BindView(s.e, st.Query, nil, true)
	if err != nil {
		return nil, err
	}
	return subscribeColumns(info.Columns, st.Progress), nil
}

// startTemp runs q as the subscription's temporary materialized view, and returns once the view holds a
// consistent snapshot: the job read everything its input logs held when it started, and checkpointed.
func (sub *subscription) startTemp(ctx context.Context, s *Session, q *parser.Query, what string) error {
	e := s.e
	info, err := planner.BindView(e, q, nil, true)
	if err != nil {
		return err
	}
	var storages []string
	for _, name := range info.Reads {
		obj, ok := e.cat.Get(name)
		if !ok {
			continue
		}
		if option := planner.SingleReader(obj); option != "" {
			return sqlerr.New(sqlerr.FeatureNotSupported, sqlerr.NoPos,
				"SUBSCRIBE cannot read stream %q: its connector '%s' allows one reader at a time (%s); subscribe to a materialized view over it instead",
				name, obj.Connector(), option)
		}
		if obj.Storage != "" {
			storages = append(storages, obj.Storage)
		}
	}
	js, _, err := s.settings()
	if err != nil {
		return err
	}
	subs := e.subs()
	subs.mu.Lock()
	subs.seq++
	n := subs.seq
	subs.mu.Unlock()
	name := fmt.Sprintf("subscribe-%d", n)
	dir := filepath.Join(e.dir, "tmp", fmt.Sprintf("subscribe-%d-%d", os.Getpid(), n))
	obj := &catalog.Object{Kind: catalog.MaterializedView, Name: name, Columns: info.Columns, Storage: "tmp/" + name}
	schema, err := schemaOfObject(obj)
	if err != nil {
		return err
	}
	l, err := streamlog.Create(state.OS, filepath.Join(dir, "log"), schema)
	if err != nil {
		os.RemoveAll(dir)
		return err
	}
	t := &tempView{e: e, name: name, key: obj.Storage, dir: dir}
	e.mu.Lock()
	e.logs[t.key] = l
	e.mu.Unlock()
	fail := func(err error) error {
		t.stop()
		return err
	}
	p, err := planner.PlanMaterializedView(e, q, obj, js.planner())
	if err != nil {
		return fail(err)
	}
	g, err := p.Graph()
	if err != nil {
		return fail(err)
	}
	job, err := exec.NewJob(g, exec.JobConfig{Name: name, Dir: filepath.Join(dir, "job"), Alloc: e.cfg.Alloc,
		Logger: e.selectLog, CheckpointInterval: js.interval, CheckpointMode: js.mode, StateCacheBytes: js.stateCache,
		WatermarkMaxDrift: js.maxDrift, RestartBudget: -1, AfterCommit: l.Advance, Clock: &e.clock})
	if err != nil {
		return fail(err)
	}
	t.job, t.plan = job, p
	job.Start(e.ctx)
	sub.temp, sub.log, sub.what = t, l, what
	sub.storages = append(storages, obj.Storage)
	if err := t.flush(ctx); err != nil {
		return fail(err)
	}
	return nil
}

// columns are the temporary view's columns.
func (t *tempView) columns() []catalog.Column {
	var cols []catalog.Column
	for _, c := range t.plan.Columns[:t.plan.Visible] {
		cols = append(cols, catalog.Column{Name: c.Name, Type: catalog.TypeOf(c.Type)})
	}
	return cols
}

// flush has the temporary view's job read what its input logs hold now, then checkpoint and commit.
func (t *tempView) flush(ctx context.Context) error {
	for _, r := range t.plan.LogReads {
		end := r.Log.Next()
		for r.Progress.Load() < end {
			select {
			case <-t.job.Done():
				return t.failure()
			case <-ctx.Done():
				return sqlerr.New(sqlerr.QueryCanceled, sqlerr.NoPos, "canceling statement due to user request")
			case <-time.After(time.Millisecond):
			}
		}
	}
	if _, err := t.job.Flush(ctx); err != nil {
		select {
		case <-t.job.Done():
			if st := t.job.Status(); st.State == exec.JobFinished {
				return nil // a bounded query: everything is committed
			}
			return t.failure()
		default:
		}
		if ctx.Err() != nil {
			return sqlerr.New(sqlerr.QueryCanceled, sqlerr.NoPos, "canceling statement due to user request")
		}
		return sqlerr.New(sqlerr.InvalidJobState, sqlerr.NoPos, "SUBSCRIBE: the query's job: %v", err)
	}
	return nil
}

// failure is the error of a temporary view's job that ended (nil when it finished: a bounded query).
func (t *tempView) failure() error {
	st := t.job.Status()
	if st.State == exec.JobFinished {
		return nil
	}
	if st.Err != nil {
		e := sqlerr.As(st.Err)
		return &sqlerr.Error{Code: e.Code, Pos: sqlerr.NoPos, Msg: "SUBSCRIBE: the query failed: " + e.Msg, Detail: e.Detail, Hint: e.Hint, Err: st.Err}
	}
	return sqlerr.New(sqlerr.InvalidJobState, sqlerr.NoPos, "SUBSCRIBE: the query's job ended (%s)", st.State)
}

// stop cancels the temporary view's job and deletes its files.
func (t *tempView) stop() {
	if t.job != nil {
		t.job.Cancel()
		<-t.job.Done()
	}
	t.e.mu.Lock()
	delete(t.e.logs, t.key)
	t.e.mu.Unlock()
	os.RemoveAll(t.dir)
}

// jobDone is closed when the temporary view's job ended (nil for a materialized view: never).
func (sub *subscription) jobDone() <-chan struct{} {
	if sub.temp == nil || sub.temp.finished.Load() {
		return nil
	}
	return sub.temp.job.Done()
}

// pull moves the events the tail has now into pending as rows, until pending holds max rows (max < 0: all there
// is). sub.mu held.
func (sub *subscription) pull(max int) error {
	for max < 0 || len(sub.pending) < max {
		ev, ok, err := sub.tail.Next()
		if err != nil {
			return sub.readError(err)
		}
		if !ok {
			return nil
		}
		ts := strconv.FormatUint(ev.Time, 10)
		if ev.Progress {
			if sub.progress {
				row := make([]*string, len(sub.cols))
				row[0], row[1] = &ts, ptr("t")
				sub.pending = append(sub.pending, row)
			}
			continue
		}
		text, err := textform.RowsIn(ev.Batch.Rec, sub.zone)
		if err != nil {
			ev.Batch.Release()
			return err
		}
		lead := 2
		if sub.progress {
			lead = 3
		}
		for i, r := range text {
			row := make([]*string, 0, lead+len(r))
			row = append(row, &ts)
			if sub.progress {
				row = append(row, ptr("f"))
			}
			diff := ptr("1")
			if k := ev.Batch.Kind(i); k == exec.Delete || k == exec.UpdateBefore {
				diff = ptr("-1")
			}
			row = append(append(row, diff), r...)
			sub.pending = append(sub.pending, row)
		}
		ev.Batch.Release()
	}
	return nil
}

func ptr(s string) *string { return &s }

// readError is the error of a tail that cannot go on, naming what the subscription reads.
func (sub *subscription) readError(err error) error {
	if errors.Is(err, streamlog.ErrDropped) {
		return sqlerr.New(sqlerr.UndefinedTable, sqlerr.NoPos, "SUBSCRIBE to %s ended: it was dropped", sub.what)
	}
	e := sqlerr.As(err)
	out := &sqlerr.Error{Code: e.Code, Pos: sqlerr.NoPos, Err: err,
		Msg:  fmt.Sprintf("SUBSCRIBE to %s cannot go on: its changelog %s", sub.what, e.Msg),
		Hint: "A changelog segment the subscription has not read yet is gone or damaged; subscribe again to start from the current contents."}
	return out
}

// lagError is max_subscribe_lag's error.
func (sub *subscription) lagError(lag int64) error {
	e := sqlerr.New(sqlerr.ConfigurationLimit, sqlerr.NoPos, "SUBSCRIBE to %s fell behind by more than max_subscribe_lag (%s): %d bytes of its changes are unread",
		sub.what, formatBytes(sub.maxLag), lag)
	e.Detail = "The job writing the view does not wait for subscribers; a subscriber that reads too slowly is cut off rather than left behind without bound."
	e.Hint = "Read the rows faster (FETCH more often), raise max_subscribe_lag, or subscribe again to start from the current contents."
	return e
}

// fetch returns the rows available, at most max (max < 0: all), waiting for at least one: for ever when wait is
// negative, else at most wait (then it may return none).
func (sub *subscription) fetch(ctx context.Context, max int, wait time.Duration) ([][]*string, error) {
	var timer <-chan time.Time
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		timer = t.C
	}
	for {
		sub.mu.Lock()
		if sub.err != nil {
			err := sub.err
			sub.mu.Unlock()
			return nil, err
		}
		if lag := sub.tail.Lag(); lag > sub.maxLag {
			sub.mu.Unlock()
			err := sub.lagError(lag)
			sub.close(err)
			return nil, err
		}
		notify := sub.tail.Wait()
		if err := sub.pull(max); err != nil {
			sub.mu.Unlock()
			sub.close(err)
			return nil, err
		}
		if n := len(sub.pending); n > 0 && max != 0 {
			if max > 0 && n > max {
				n = max
			}
			rows := sub.pending[:n:n]
			sub.pending = sub.pending[n:]
			sub.sent += int64(n)
			if len(sub.pending) == 0 {
				sub.pending = nil
			}
			sub.mu.Unlock()
			return rows, nil
		}
		sub.mu.Unlock()
		if wait == 0 || max == 0 {
			return nil, nil
		}
		select {
		case <-notify:
		case <-sub.ended:
		case <-timer:
			return nil, nil
		case <-sub.jobDone():
			if err := sub.temp.failure(); err != nil {
				sub.close(err)
				return nil, err
			}
			sub.temp.finished.Store(true)
		case <-ctx.Done():
			return nil, sqlerr.New(sqlerr.QueryCanceled, sqlerr.NoPos, "canceling statement due to user request")
		}
	}
}

// watch cuts the subscription off when it falls behind by more than max_subscribe_lag while nobody reads it.
func (sub *subscription) watch() {
	for {
		notify := sub.log.Notify()
		if lag := sub.tail.Lag(); lag > sub.maxLag {
			sub.close(sub.lagError(lag))
			return
		}
		select {
		case <-notify:
		case <-sub.ended:
			return
		}
	}
}

// close ends the subscription with err (the first reason stands) and frees what it holds: its tail, its pending
// rows, its temporary job and files. It tells a streaming writer (onEnd).
func (sub *subscription) close(err error) {
	sub.mu.Lock()
	if sub.err != nil {
		sub.mu.Unlock()
		return
	}
	sub.err = err
	close(sub.ended)
	sub.tail.Close()
	sub.pending = nil
	onEnd := sub.onEnd
	sub.mu.Unlock()
	subs := sub.e.subs()
	subs.mu.Lock()
	delete(subs.all, sub)
	subs.mu.Unlock()
	if sub.temp != nil {
		sub.temp.stop()
	}
	if onEnd != nil {
		onEnd()
	}
}

// errSubscriptionClosed ends a subscription its client closed (a canceled statement, CLOSE, COMMIT).
var errSubscriptionClosed = sqlerr.New(codeUndefinedCursor, sqlerr.NoPos, "the subscription was closed")

// endSubscriptions ends the subscriptions that read a log (storage) being dropped.
func (e *Engine) endSubscriptions(storage, what string) {
	for _, sub := range e.subs().list() {
		for _, st := range sub.storages {
			if st == storage {
				sub.close(sqlerr.New(sqlerr.UndefinedTable, sqlerr.NoPos, "SUBSCRIBE to %s ended: %s was dropped", sub.what, what))
				break
			}
		}
	}
}

// closeSubscriptions ends every subscription (Close).
func (e *Engine) closeSubscriptions() {
	for _, sub := range e.subs().list() {
		sub.close(sqlerr.New(codeAdminShutdown, sqlerr.NoPos, "terminating SUBSCRIBE to %s: the engine is shutting down", sub.what))
	}
}

// flushSubscriptions checkpoints the temporary views of running subscriptions (FLUSH, after the catalog's jobs).
func (e *Engine) flushSubscriptions(ctx context.Context) error {
	for _, sub := range e.subs().list() {
		sub.mu.Lock()
		t, running := sub.temp, sub.err == nil
		sub.mu.Unlock()
		if t == nil || !running {
			continue
		}
		if err := t.flush(ctx); err != nil && sqlerr.Code(err) == sqlerr.QueryCanceled {
			return err
		}
	}
	return nil
}

func (s *subscriptions) list() []*subscription {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*subscription, 0, len(s.all))
	for sub := range s.all {
		out = append(out, sub)
	}
	slices.SortFunc(out, func(a, b *subscription) int { return cmp.Compare(a.id, b.id) })
	return out
}

// SubscriptionInfo is one running SUBSCRIBE as clink_catalog.subscriptions shows it.
type SubscriptionInfo struct {
	ID        int64     `json:"subscription_id"`
	Statement string    `json:"statement"`
	Target    string    `json:"target"` // what it reads: materialized view "v", view "w", stream "s" or the query
	StartedAt time.Time `json:"started_at"`
	// TemporaryJob is the job a SUBSCRIBE to anything but a materialized view runs (docs/subscribe.md); empty
	// otherwise.
	TemporaryJob string `json:"temporary_job"`
	RowsSent     int64  `json:"rows_sent"`     // rows handed to the client, progress rows included
	LagBytes     int64  `json:"lag_bytes"`     // changelog not yet handed to the client
	MaxLagBytes  int64  `json:"max_lag_bytes"` // max_subscribe_lag: past it the subscription is cut off
}

// SubscriptionInfos lists the running subscriptions, oldest first.
func (e *Engine) SubscriptionInfos() []SubscriptionInfo {
	var out []SubscriptionInfo
	for _, sub := range e.subs().list() {
		sub.mu.Lock()
		if sub.err == nil {
			info := SubscriptionInfo{ID: sub.id, Statement: sub.text, Target: sub.what, StartedAt: sub.started,
				RowsSent: sub.sent, LagBytes: sub.tail.Lag(), MaxLagBytes: sub.maxLag}
			if sub.temp != nil {
				info.TemporaryJob = sub.temp.name
			}
			out = append(out, info)
		}
		sub.mu.Unlock()
	}
	return out
}

// viewCommitted is a job's AfterCommit: a materialized view's log learns that its changelog is complete up to the
// checkpoint (its subscribers' frontier). nil for a job writing anything else.
func (e *Engine) viewCommitted(spec *catalog.JobSpec) func(uint64) {
	obj, ok := e.cat.Get(spec.Target)
	if !ok || obj.Kind != catalog.MaterializedView {
		return nil
	}
	l, err := e.Log(obj)
	if err != nil {
		return nil
	}
	return l.Advance
}

// ---- statements ----

// subscribeStmt runs SUBSCRIBE, DECLARE, FETCH, CLOSE and COPY (subscribe.go's statements).
func (s *Session) subscribeStmt(ctx context.Context, st parser.Stmt, params *planner.Params, w RowWriter) (*Result, error) {
	switch st := st.(type) {
	case *parser.Subscribe:
		if w == nil {
			e := sqlerr.New(sqlerr.FeatureNotSupported, stmtStart(st), "SUBSCRIBE streams its rows until it is canceled, which needs a client that takes rows as they come")
			e.Hint = "Run it with the simple query protocol (psql), as COPY (SUBSCRIBE ...) TO STDOUT, or through a cursor: BEGIN; DECLARE c CURSOR FOR SUBSCRIBE ...; FETCH ..."
			return nil, e
		}
		return s.streamSubscription(ctx, st, w)
	case *parser.Copy:
		cw, ok := w.(CopyWriter)
		if !ok {
			return nil, sqlerr.New(sqlerr.FeatureNotSupported, stmtStart(st), "COPY ... TO STDOUT needs a client that speaks the COPY protocol (psql, a Postgres driver)")
		}
		out := &copyOut{w: cw}
		if a, ok := w.(RowAborter); ok {
			out.abort = a
		}
		switch inner := st.Stmt.(type) {
		case *parser.Select:
			res, err := s.query(ctx, inner.Query, params, out)
			if err != nil {
				return nil, err
			}
			if !res.Streamed {
				if err := out.Columns(res.Columns); err != nil {
					return nil, err
				}
				if err := out.Rows(res.Rows); err != nil {
					return nil, err
				}
			}
		case *parser.Subscribe:
			if _, err := s.streamSubscription(ctx, inner, out); err != nil {
				return nil, err
			}
		}
		return &Result{Tag: "COPY " + strconv.FormatInt(out.n, 10)}, nil
	case *parser.Declare:
		return s.declare(ctx, st, params)
	case *parser.Fetch:
		return s.fetch(ctx, st)
	case *parser.CloseCursor:
		if st.All {
			s.closeCursors()
			return &Result{Tag: "CLOSE CURSOR"}, nil
		}
		c, ok := s.cursors[st.Name]
		if !ok {
			return nil, sqlerr.New(codeUndefinedCursor, stmtStart(st), "cursor %q does not exist", st.Name)
		}
		delete(s.cursors, st.Name)
		c.close()
		return &Result{Tag: "CLOSE CURSOR"}, nil
	}
	return nil, sqlerr.New(sqlerr.FeatureNotSupported, stmtStart(st), "statement %T is not supported", st)
}

// streamSubscription runs SUBSCRIBE with its rows going to w as they come, until ctx ends or the subscription
// does.
func (s *Session) streamSubscription(ctx context.Context, st *parser.Subscribe, w RowWriter) (*Result, error) {
	sub, err := s.subscribe(ctx, st)
	if err != nil {
		return nil, err
	}
	defer sub.close(errSubscriptionClosed)
	if a, ok := w.(RowAborter); ok {
		sub.mu.Lock()
		sub.onEnd = a.AbortRows
		sub.mu.Unlock()
	}
	if err := w.Columns(sub.cols); err != nil {
		return nil, err
	}
	if err := w.Rows(nil); err != nil { // the columns reach the client before the first change
		return nil, err
	}
	for {
		rows, err := sub.fetch(ctx, streamBatchRows, -1)
		if err != nil {
			return nil, err
		}
		if err := w.Rows(rows); err != nil {
			sub.mu.Lock()
			why := sub.err
			sub.mu.Unlock()
			if why != nil && why != errSubscriptionClosed {
				return nil, why // cut off: the writer gave up because of it
			}
			return nil, err
		}
	}
}

// copyOut turns rows into COPY's text format for a CopyWriter.
type copyOut struct {
	w     CopyWriter
	abort RowAborter
	n     int64
}

func (c *copyOut) Columns(cols []Column) error { return c.w.CopyOut(cols) }

func (c *copyOut) Rows(rows [][]*string) error {
	if len(rows) == 0 {
		return c.w.CopyData(nil)
	}
	lines := make([][]byte, len(rows))
	for i, row := range rows {
		lines[i] = copyLine(row)
	}
	c.n += int64(len(rows))
	return c.w.CopyData(lines)
}

func (c *copyOut) AbortRows() {
	if c.abort != nil {
		c.abort.AbortRows()
	}
}

// copyLine is a row in COPY's text format: values tab-separated, NULL as \N, backslash, tab, newline and
// carriage return escaped, ended by a newline.
func copyLine(row []*string) []byte {
	var b []byte
	for i, v := range row {
		if i > 0 {
			b = append(b, '\t')
		}
		if v == nil {
			b = append(b, `\N`...)
			continue
		}
		for j := 0; j < len(*v); j++ {
			switch c := (*v)[j]; c {
			case '\\':
				b = append(b, `\\`...)
			case '\t':
				b = append(b, `\t`...)
			case '\n':
				b = append(b, `\n`...)
			case '\r':
				b = append(b, `\r`...)
			default:
				b = append(b, c)
			}
		}
	}
	return append(b, '\n')
}

// cursor is a DECLAREd cursor: a subscription, or a SELECT's rows.
type cursor struct {
	cols []Column
	sub  *subscription
	rows [][]*string
}

func (c *cursor) close() {
	if c.sub != nil {
		c.sub.close(errSubscriptionClosed)
	}
	c.rows = nil
}

// declare runs DECLARE name CURSOR FOR ...: inside BEGIN ... COMMIT only, as in Postgres; it ends with the
// transaction. A SELECT runs at once and its rows wait for FETCH; a SUBSCRIBE takes its snapshot at once.
func (s *Session) declare(ctx context.Context, st *parser.Declare, params *planner.Params) (*Result, error) {
	if !s.inTxn {
		return nil, sqlerr.New(codeNoActiveTxn, stmtStart(st), "DECLARE CURSOR can only be used in transaction blocks")
	}
	if _, ok := s.cursors[st.Name]; ok {
		return nil, sqlerr.New(codeDuplicateCursor, st.NameP, "cursor %q already exists", st.Name)
	}
	c := &cursor{}
	switch inner := st.Stmt.(type) {
	case *parser.Subscribe:
		sub, err := s.subscribe(ctx, inner)
		if err != nil {
			return nil, err
		}
		c.sub, c.cols = sub, sub.cols
	case *parser.Select:
		res, err := s.query(ctx, inner.Query, params, nil)
		if err != nil {
			return nil, err
		}
		c.cols, c.rows = res.Columns, res.Rows
	}
	if s.cursors == nil {
		s.cursors = map[string]*cursor{}
	}
	s.cursors[st.Name] = c
	return &Result{Tag: "DECLARE CURSOR"}, nil
}

// fetch runs FETCH: up to its count of the rows available. On a subscription it waits for at least one row,
// or at most WITH (timeout = ...) (then it may return none).
func (s *Session) fetch(ctx context.Context, st *parser.Fetch) (*Result, error) {
	c, ok := s.cursors[st.Name]
	if !ok {
		return nil, sqlerr.New(codeUndefinedCursor, st.NameP, "cursor %q does not exist", st.Name)
	}
	res := &Result{Columns: c.cols}
	max := int(min(st.Count, int64(1<<31)))
	if c.sub == nil {
		n := len(c.rows)
		if max >= 0 && max < n {
			n = max
		}
		res.Rows, c.rows = c.rows[:n:n], c.rows[n:]
	} else {
		wait := time.Duration(-1)
		if st.Timeout != "" {
			us, err := planner.ParseInterval(st.Timeout, "")
			if err != nil || us < 0 {
				return nil, sqlerr.New(sqlerr.InvalidParameter, st.TimeoutP, "invalid FETCH timeout %q (an interval such as '1s' or '500 ms')", st.Timeout)
			}
			wait = time.Duration(us) * time.Microsecond
		}
		rows, err := c.sub.fetch(ctx, max, wait)
		if err != nil {
			return nil, err
		}
		res.Rows = rows
	}
	res.Tag = "FETCH " + strconv.Itoa(len(res.Rows))
	return res, nil
}

// closeCursors closes every cursor (COMMIT, ROLLBACK, CLOSE ALL, the session's end).
func (s *Session) closeCursors() {
	for name, c := range s.cursors {
		c.close()
		delete(s.cursors, name)
	}
}

// Close ends the session: its cursors close (pgwire calls it when the connection ends).
func (s *Session) Close() { s.closeCursors() }

// cursorColumns are the columns a statement of subscribe.go returns, without running it (pgwire's Describe).
func (s *Session) cursorColumns(st parser.Stmt) ([]Column, error) {
	switch st := st.(type) {
	case *parser.Subscribe:
		return s.subscribeColumnsOf(st)
	case *parser.Fetch:
		c, ok := s.cursors[st.Name]
		if !ok {
			return nil, sqlerr.New(codeUndefinedCursor, st.NameP, "cursor %q does not exist", st.Name)
		}
		return c.cols, nil
	}
	return nil, nil
}
