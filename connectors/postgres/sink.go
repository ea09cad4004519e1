package postgres

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/clinksql/clinksql/connectors"
	"github.com/clinksql/clinksql/exec"
)

// OpenTimeout bounds connecting, checking the table and recovering at Open.
const OpenTimeout = 30 * time.Second

// CommitTimeout bounds one COMMIT PREPARED or ROLLBACK PREPARED.
const CommitTimeout = 2 * time.Minute

// flushBytes is how much COPY text an append sink gathers before it sends it, whatever the row count.
const flushBytes = 4 << 20

// undefinedObject is Postgres' SQLSTATE for a prepared transaction identifier it does not know.
const undefinedObject = "42704"

// NewSink returns subtask sub of a Postgres sink: an exec.Sink whose commit is Postgres' two-phase commit.
func NewSink(cfg Config) exec.Sink { return &sink{cfg: cfg, prepared: map[uint64]preparedTxn{}} }

// sink is one subtask. Write and PreCommit run on the subtask goroutine over conn; Commit and Abort may run on
// another goroutine, concurrently with them, over commitConn (a connection runs one statement at a time, and
// conn may be waiting on a row lock that only the commit of an earlier checkpoint releases).
type sink struct {
	cfg    Config
	ctx    *exec.TaskContext
	runCtx context.Context
	cancel context.CancelFunc
	// prefix is <prefix>-<job>-<operator>-: every prepared transaction of this operator starts with it.
	prefix string

	conn    *pgx.Conn
	copySQL string
	row     *binaryRow
	buf     []byte // binary COPY tuples not sent yet, after the stream's header
	rows    int    // rows in buf
	ups     *upsertBuffer
	inTx    bool  // conn is inside the interval's transaction (BEGIN sent)
	txBytes int64 // bytes the open transaction was sent

	// mu guards commitConn and prepared.
	mu         sync.Mutex
	commitConn *pgx.Conn
	// prepared are this incarnation's prepared transactions by checkpoint, not committed or rolled back yet.
	prepared map[uint64]preparedTxn

	connectors.Committed
}

// preparedTxn is one checkpoint's prepared transaction: its identifier, its transaction id (to learn, when the
// identifier is gone, whether it committed) and the bytes it holds.
type preparedTxn struct {
	gid   string
	xid   uint64
	bytes int64
}

var (
	_ exec.Sink         = (*sink)(nil)
	_ exec.SinkProgress = (*sink)(nil)
)

func (s *sink) errorf(format string, args ...any) error {
	return fmt.Errorf("postgres sink %s: "+format, append([]any{s.cfg.Table}, args...)...)
}

// gid is the identifier of subtask sub's transaction of checkpoint id.
func (s *sink) gid(sub int, id uint64) string {
	return s.prefix + strconv.Itoa(sub) + "-" + strconv.FormatUint(id, 10)
}

// Open connects, checks the table and recovers: every prepared transaction of this operator's subtask (and, for
// subtask 0, of subtasks beyond the parallelism: a job restored with fewer) is committed when its checkpoint
// completed and rolled back otherwise.
func (s *sink) Open(ctx *exec.TaskContext) (err error) {
	s.ctx = ctx
	s.runCtx, s.cancel = context.WithCancel(context.Background())
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	s.prefix = s.cfg.Prefix + "-" + ctx.Job + "-" + ctx.Operator + "-"
	if g := s.gid(ctx.Subtask, 1<<64-1); len(g) > maxGID {
		return s.errorf("the prepared transaction identifier %q is longer than Postgres' %d bytes", g, maxGID)
	}
	octx, cancel := context.WithTimeout(s.runCtx, OpenTimeout)
	defer cancel()
	if s.conn, err = connect(octx, s.cfg); err != nil {
		return err
	}
	info, err := describe(octx, s.conn, s.cfg)
	if err != nil {
		return err
	}
	if s.commitConn, err = connect(octx, s.cfg); err != nil {
		return err
	}
	if err := s.recover(octx); err != nil {
		return err
	}
	names := make([]string, s.cfg.Schema.NumFields())
	for i, f := range s.cfg.Schema.Fields() {
		names[i] = pgx.Identifier{f.Name}.Sanitize()
	}
	if len(s.cfg.Key) > 0 {
		s.ups, err = newUpsertBuffer(s.cfg, info)
		return err
	}
	s.copySQL = fmt.Sprintf("COPY %s (%s) FROM STDIN (FORMAT binary)", s.cfg.Table.Quoted(), strings.Join(names, ", "))
	s.row = newBinaryRow(s.cfg.Schema, info.Bases)
	return nil
}

// recover settles what earlier incarnations prepared (see Open).
func (s *sink) recover(ctx context.Context) error {
	rows, err := s.commitConn.Query(ctx, `SELECT gid FROM pg_prepared_xacts
		WHERE database = current_database() AND starts_with(gid, $1)`, s.prefix)
	if err != nil {
		return s.errorf("recovery: listing pg_prepared_xacts: %w", err)
	}
	gids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return s.errorf("recovery: listing pg_prepared_xacts: %w", err)
	}
	slices.Sort(gids)
	for _, gid := range gids {
		subText, idText, ok := strings.Cut(strings.TrimPrefix(gid, s.prefix), "-")
		sub, err1 := strconv.Atoi(subText)
		id, err2 := strconv.ParseUint(idText, 10, 64)
		if !ok || err1 != nil || err2 != nil {
			continue // not one of ours: another job whose name extends this one's
		}
		if sub != s.ctx.Subtask && !(s.ctx.Subtask == 0 && s.ctx.Parallelism > 0 && sub >= s.ctx.Parallelism) {
			continue
		}
		verb := "ROLLBACK PREPARED "
		if s.ctx.IsCompleted != nil && s.ctx.IsCompleted(id) {
			verb = "COMMIT PREPARED "
		}
		if _, err := s.commitConn.Exec(ctx, verb+quoteLiteral(gid)); err != nil && !isCode(err, undefinedObject) {
			return s.errorf("recovery: %s'%s': %w", verb, gid, err)
		}
		if s.ctx.Log != nil {
			s.ctx.Log.Info("postgres sink: recovered a prepared transaction", "gid", gid, "action", strings.TrimSpace(verb))
		}
	}
	return nil
}

// Write gathers the batch's rows, sending them (in the interval's transaction) when MaxRows are gathered.
func (s *sink) Write(b exec.Batch) error {
	defer b.Release()
	n := b.Rows()
	if n == 0 {
		return nil
	}
	if s.ups != nil {
		if err := s.ups.add(b); err != nil {
			return s.errorf("%v", err)
		}
		if s.ups.len() >= s.cfg.MaxRows {
			return s.flush()
		}
		return nil
	}
	if b.Kinds != nil {
		for i := range n {
			if k := b.Kinds[i]; k != exec.Insert {
				return s.errorf("an append sink got a %s row: a sink of an updating result needs a PRIMARY KEY", k)
			}
		}
	}
	if err := s.row.bind(b.Rec.Columns()); err != nil {
		return s.errorf("%v", err)
	}
	defer s.row.unbind()
	for i := range n {
		if len(s.buf) == 0 {
			s.buf = append(s.buf, copyHeader...)
		}
		var err error
		if s.buf, err = s.row.appendRow(s.buf, i); err != nil {
			return s.errorf("%v", err)
		}
		s.rows++
		if s.rows >= s.cfg.MaxRows || len(s.buf) >= flushBytes {
			if err := s.flush(); err != nil {
				return err
			}
		}
	}
	return nil
}

// begin opens the interval's transaction, lazily: an interval without rows prepares nothing.
func (s *sink) begin() error {
	if s.inTx {
		return nil
	}
	if _, err := s.conn.Exec(s.runCtx, "BEGIN"); err != nil {
		return s.errorf("BEGIN: %w", err)
	}
	s.inTx = true
	return nil
}

// flush sends what is gathered.
func (s *sink) flush() error {
	if s.ups != nil {
		if s.ups.len() == 0 {
			return nil
		}
		if err := s.begin(); err != nil {
			return err
		}
		n, err := s.ups.flush(s.runCtx, s.conn)
		if err != nil {
			return s.errorf("%w", err)
		}
		s.txBytes += n
		return nil
	}
	if s.rows == 0 {
		return nil
	}
	if err := s.begin(); err != nil {
		return err
	}
	s.buf = append(s.buf, copyTrailer...)
	if _, err := s.conn.PgConn().CopyFrom(s.runCtx, bytes.NewReader(s.buf), s.copySQL); err != nil {
		return s.errorf("COPY: %w", err)
	}
	s.txBytes += int64(len(s.buf))
	s.buf, s.rows = s.buf[:0], 0
	return nil
}

// PreCommit sends what is gathered and prepares the interval's transaction as <prefix>-<job>-<op>-<sub>-<id>:
// durable in Postgres, invisible until COMMIT PREPARED. An interval that wrote nothing prepares nothing.
func (s *sink) PreCommit(id uint64) error {
	if err := s.flush(); err != nil {
		return err
	}
	if !s.inTx {
		return nil
	}
	s.inTx = false // a failed PREPARE ends the transaction too (rolled back)
	var xid string
	if err := s.conn.QueryRow(s.runCtx, "SELECT pg_current_xact_id()::text").Scan(&xid); err != nil {
		return s.errorf("checkpoint %d: %w", id, err)
	}
	x, err := strconv.ParseUint(xid, 10, 64)
	if err != nil {
		return s.errorf("checkpoint %d: transaction id %q: %v", id, xid, err)
	}
	gid := s.gid(s.ctx.Subtask, id)
	if _, err := s.conn.Exec(s.runCtx, "PREPARE TRANSACTION "+quoteLiteral(gid)); err != nil {
		return s.errorf("checkpoint %d: PREPARE TRANSACTION '%s': %w", id, gid, err)
	}
	s.mu.Lock()
	s.prepared[id] = preparedTxn{gid: gid, xid: x, bytes: s.txBytes}
	s.mu.Unlock()
	s.txBytes = 0
	return nil
}

// Commit commits every prepared transaction of a checkpoint up to id, in order. An identifier Postgres no longer
// knows is fine only if its transaction committed (an earlier COMMIT PREPARED whose answer was lost); one rolled
// back by someone else lost the checkpoint's rows, which is an error.
func (s *sink) Commit(id uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range slices.Sorted(maps.Keys(s.prepared)) {
		if k > id {
			break
		}
		p := s.prepared[k]
		err := s.settle("COMMIT PREPARED ", p.gid)
		if err != nil && isCode(err, undefinedObject) {
			err = s.committed(p)
		}
		if err != nil {
			return s.errorf("checkpoint %d: COMMIT PREPARED '%s': %w", k, p.gid, err)
		}
		delete(s.prepared, k)
		s.Add(p.bytes)
	}
	return nil
}

// committed checks that the transaction of p, whose identifier is gone, committed.
func (s *sink) committed(p preparedTxn) error {
	ctx, cancel := context.WithTimeout(s.runCtx, CommitTimeout)
	defer cancel()
	var status *string
	if err := s.commitConn.QueryRow(ctx, "SELECT pg_xact_status($1::text::xid8)", strconv.FormatUint(p.xid, 10)).Scan(&status); err != nil {
		return fmt.Errorf("the prepared transaction is gone, and its status could not be read: %w", err)
	}
	if status != nil && *status == "committed" {
		return nil
	}
	st := "unknown"
	if status != nil {
		st = *status
	}
	return fmt.Errorf("the prepared transaction (xid %d) is gone and did not commit (status %s): someone rolled it back outside clinksql, and the checkpoint's rows are not in the table", p.xid, st)
}

// Abort rolls back the prepared transaction of checkpoint id, if there is one.
func (s *sink) Abort(id uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.prepared[id]
	if !ok {
		return nil
	}
	if err := s.settle("ROLLBACK PREPARED ", p.gid); err != nil && !isCode(err, undefinedObject) {
		return s.errorf("checkpoint %d: ROLLBACK PREPARED '%s': %w", id, p.gid, err)
	}
	delete(s.prepared, id)
	return nil
}

// settle runs COMMIT PREPARED or ROLLBACK PREPARED over the commit connection, connecting again once when the
// connection was lost (a restarted server keeps its prepared transactions). Called with mu held.
func (s *sink) settle(verb, gid string) error {
	ctx, cancel := context.WithTimeout(s.runCtx, CommitTimeout)
	defer cancel()
	if s.commitConn == nil || s.commitConn.IsClosed() {
		c, err := connect(ctx, s.cfg)
		if err != nil {
			return err
		}
		s.commitConn = c
	}
	_, err := s.commitConn.Exec(ctx, verb+quoteLiteral(gid))
	if err != nil && s.commitConn.IsClosed() && ctx.Err() == nil {
		c, cerr := connect(ctx, s.cfg)
		if cerr != nil {
			return errors.Join(err, cerr)
		}
		s.commitConn = c
		_, err = s.commitConn.Exec(ctx, verb+quoteLiteral(gid))
	}
	return err
}

// Close disconnects: the open (unprepared) transaction is rolled back by the server, prepared ones stay for the
// next Open to settle.
func (s *sink) Close() error {
	if s.cancel != nil {
		s.cancel()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if s.conn != nil {
		s.conn.Close(ctx)
		s.conn = nil
	}
	s.mu.Lock()
	if s.commitConn != nil {
		s.commitConn.Close(ctx)
		s.commitConn = nil
	}
	s.mu.Unlock()
	if s.row != nil {
		s.row.unbind()
	}
	s.buf, s.rows, s.inTx, s.txBytes = nil, 0, false, 0
	if s.ups != nil {
		s.ups.reset()
	}
	return nil
}

// quoteLiteral quotes s as an SQL string literal.
func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// isCode reports whether err is a Postgres error with SQLSTATE code.
func isCode(err error, code string) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == code
}
