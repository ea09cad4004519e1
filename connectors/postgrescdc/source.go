package postgrescdc

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/clinksql/clinksql/connectors"
	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/state"
)

const (
	maxBatchRows   = 8192
	receiveWindow  = 25 * time.Millisecond // how long one Produce waits for WAL
	statusInterval = 10 * time.Second      // standby status updates at least this often (wal_sender_timeout is 60 s)
	cursorName     = "clinksql_cdc_snapshot"
)

type phase uint8

const (
	phaseRetract  phase = iota + 1 // restored inside a snapshot: retracting what it had emitted
	phaseSnapshot                  // reading the exported snapshot
	phaseStream                    // replicating
)

// offset is the source's checkpointed position.
type offset struct {
	Slot string `json:"slot"`
	// Snapshot: the checkpoint was taken during the initial snapshot (LSN is the slot's consistent point).
	Snapshot bool `json:"snapshot,omitempty"`
	// LSN is the end of the last transaction whose rows were all emitted: what completion confirms.
	LSN uint64 `json:"lsn"`
	// Txn is the commit LSN of a transaction partly emitted at the barrier, Skip its row messages emitted.
	Txn  uint64 `json:"txn,omitempty"`
	Skip int    `json:"skip,omitempty"`
}

type pending struct {
	id  uint64
	lsn pglogrepl.LSN
}

type stored struct{ key, value []byte }

var (
	keyRows = state.OperatorKey("pgcdc/r/") // DEFAULT identity: the current row of each key
	keySnap = state.OperatorKey("pgcdc/s/") // FULL identity: the rows of a snapshot in progress
)

// Source is one postgres-cdc subtask (the stream has one).
type Source struct {
	cfg    Config
	schema *arrow.Schema
	spec   connectors.Spec

	tctx  *exec.TaskContext
	log   *slog.Logger
	alloc memory.Allocator

	restored *offset
	slot     string // the slot read: cfg.Slot
	table    tableInfo
	colIdx   []int // stream column -> table column
	conn     *pgx.Conn
	repl     *pgconn.PgConn
	phase    phase

	pos         pglogrepl.LSN // end of the last fully emitted transaction
	inTxn       bool
	txn         pglogrepl.LSN
	txnMsgs     int
	skipping    bool
	skipUpTo    int
	restoreLSN  pglogrepl.LSN
	restoreTxn  pglogrepl.LSN
	restoreSkip int
	relID       uint32
	relSeen     bool
	serverEnd   pglogrepl.LSN
	snapSeq     uint64
	retract     []stored
	pendings    []pending
	completed   atomic.Uint64
	handled     uint64
	confirmed   pglogrepl.LSN
	lastStatus  time.Time
	badLogged   bool
	decs        []*decoder
	kinds       []exec.RowKind
	rows        int
	tupNew      []tupleCol
	tupOld      []tupleCol
	tupRes      []tupleCol
	snapVals    []tupleCol
	connectors.ReadProgress
}

var (
	_ exec.Source              = (*Source)(nil)
	_ exec.CheckpointOffsetter = (*Source)(nil)
	_ exec.CheckpointListener  = (*Source)(nil)
	_ exec.SourceProgress      = (*Source)(nil)
)

// NewSource returns the subtask factory of a stream over cfg.
func NewSource(cfg Config, spec connectors.Spec) func(int) exec.Source {
	return func(int) exec.Source { return &Source{cfg: cfg, schema: spec.Schema, spec: spec} }
}

// RestoreOffset implements exec.Source.
func (s *Source) RestoreOffset(b []byte) error {
	var o offset
	if err := json.Unmarshal(b, &o); err != nil {
		return fmt.Errorf("postgres-cdc: offset %q: %w", b, err)
	}
	if o.Slot != s.cfg.Slot {
		return fmt.Errorf("postgres-cdc: the checkpoint read slot %q, the stream now names %q", o.Slot, s.cfg.Slot)
	}
	s.restored = &o
	return nil
}

func (s *Source) logger() *slog.Logger {
	if s.log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.log
}

// Open connects, checks the table again and sets up the start: a fresh start creates the slot (and the snapshot),
// a restore inside the snapshot retracts and starts over, a restore while streaming resumes from the LSN.
func (s *Source) Open(ctx *exec.TaskContext) error {
	s.tctx, s.log, s.alloc = ctx, ctx.Log, connectors.TaskAlloc(ctx)
	s.slot = s.cfg.Slot
	if err := connectors.CheckSubtask("postgres-cdc", ctx); err != nil {
		return err
	}
	octx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var err error
	if s.conn, err = connect(octx, s.cfg); err != nil {
		return err
	}
	if s.table, s.colIdx, err = checkTable(octx, s.conn, s.cfg, s.spec); err != nil {
		return err
	}
	for i, f := range s.schema.Fields() {
		s.decs = append(s.decs, newDecoder(s.alloc, f.Name, f.Type, s.table.Columns[s.colIdx[i]].OID))
	}
	rc, err := s.cfg.pgConfig(true)
	if err != nil {
		return err
	}
	if s.repl, err = pgconn.ConnectConfig(octx, rc); err != nil {
		return fmt.Errorf("postgres-cdc: replication connection to %s:%d: %w", s.cfg.Host, s.cfg.Port, err)
	}
	if err := s.ensurePublication(octx); err != nil {
		return err
	}
	switch {
	case s.restored == nil:
		return s.startFresh(octx)
	case s.restored.Snapshot:
		// The exported snapshot died with the process that read it, and a new one is not consistent with the rows
		// already emitted: retract every row the checkpoint's state says was emitted, then snapshot again from a new
		// slot.
		prefix := keySnap
		if !s.table.full() {
			prefix = keyRows
		}
		err := ctx.State.Scan(prefix, func(k, v []byte) error {
			s.retract = append(s.retract, stored{key: append([]byte(nil), k...), value: append([]byte(nil), v...)})
			return nil
		})
		if err != nil {
			return err
		}
		s.logger().Info("postgres-cdc: restored inside the initial snapshot: retracting its rows and starting over",
			"slot", s.slot, "rows", len(s.retract))
		s.phase = phaseRetract
		return nil
	default:
		o := s.restored
		confirmed, err := s.restoredSlot(octx)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("postgres-cdc: replication slot %q does not exist: the WAL after the checkpoint (LSN %s) is gone; "+
				"start the job afresh", s.slot, pglogrepl.LSN(o.LSN))
		} else if err != nil {
			return err
		}
		if confirmed != nil {
			c, err := pglogrepl.ParseLSN(*confirmed)
			if err == nil && c > pglogrepl.LSN(o.LSN) {
				return fmt.Errorf("postgres-cdc: slot %q is confirmed up to %s, past the restored checkpoint's %s: the WAL between is gone",
					s.slot, c, pglogrepl.LSN(o.LSN))
			}
		}
		s.pos, s.confirmed = pglogrepl.LSN(o.LSN), pglogrepl.LSN(o.LSN)
		s.restoreLSN, s.restoreTxn, s.restoreSkip = s.pos, pglogrepl.LSN(o.Txn), o.Skip
		return s.startReplication(octx)
	}
}

// restoredSlot returns the slot's confirmed flush LSN once no server process reads it: the walsender of a process
// that crashed a moment ago may still hold it, and START_REPLICATION would be refused. It waits up to
// slotReleaseWait, then refuses as a fresh start does (a running job reads the stream).
func (s *Source) restoredSlot(ctx context.Context) (*string, error) {
	for end := time.Now().Add(slotReleaseWait); ; {
		var confirmed *string
		var pid *int32
		err := s.conn.QueryRow(ctx, `SELECT confirmed_flush_lsn::text, active_pid FROM pg_replication_slots WHERE slot_name = $1`,
			s.slot).Scan(&confirmed, &pid)
		if err != nil || pid == nil {
			return confirmed, err
		}
		if time.Now().After(end) {
			return nil, fmt.Errorf("postgres-cdc: replication slot %q: it is %w by server process %d for more than %s: "+
				"another job reads this stream (a slot has one reader; give each stream its own slot.name)",
				s.slot, errSlotInUse, *pid, slotReleaseWait)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// ensurePublication creates the publication FOR TABLE when it does not exist, and refuses one that does not
// publish the table's inserts, updates and deletes.
func (s *Source) ensurePublication(ctx context.Context) error {
	var ins, upd, del bool
	err := s.conn.QueryRow(ctx, `SELECT pubinsert, pubupdate, pubdelete FROM pg_publication WHERE pubname = $1`,
		s.cfg.Publication).Scan(&ins, &upd, &del)
	if errors.Is(err, pgx.ErrNoRows) {
		// One simple query, one implicit transaction: the publication never exists without the mark that makes it
		// the source's to drop (release.go).
		_, err = s.conn.Exec(ctx, fmt.Sprintf("CREATE PUBLICATION %s FOR TABLE %s; COMMENT ON PUBLICATION %s IS %s",
			s.cfg.Publication, s.cfg.QualifiedTable(), s.cfg.Publication, quoteLiteral(publicationMark(s.cfg.Slot))))
		if err != nil {
			return fmt.Errorf("postgres-cdc: CREATE PUBLICATION %s: %w", s.cfg.Publication, err)
		}
		return nil
	}
	if err != nil {
		return err
	}
	var n int
	if err := s.conn.QueryRow(ctx, `SELECT count(*) FROM pg_publication_tables WHERE pubname = $1 AND schemaname = $2 AND tablename = $3`,
		s.cfg.Publication, s.cfg.Schema, s.cfg.Table).Scan(&n); err != nil {
		return err
	}
	if n == 0 || !ins || !upd || !del {
		return fmt.Errorf("postgres-cdc: publication %s does not publish the inserts, updates and deletes of %s.%s "+
			"(ALTER PUBLICATION %s ADD TABLE %s)", s.cfg.Publication, s.cfg.Schema, s.cfg.Table, s.cfg.Publication, s.cfg.QualifiedTable())
	}
	return nil
}

// startFresh (re)creates the slot: with an exported snapshot that the normal connection imports (initial), or
// without (latest-offset, which then streams from the slot's consistent point).
func (s *Source) startFresh(ctx context.Context) error {
	// A slot of a start that never completed a checkpoint, or of an earlier job: a fresh start needs its own
	// consistent point. One in use (a running job reads the stream) is not taken over; a crashed process's
	// walsender lets go of it within moments.
	if err := dropSlot(ctx, s.conn, s.slot); err != nil {
		if errors.Is(err, errSlotInUse) {
			return fmt.Errorf("postgres-cdc: replication slot %q: %v: another job reads this stream "+
				"(a slot has one reader; give each stream its own slot.name)", s.slot, err)
		}
		return fmt.Errorf("postgres-cdc: dropping the old slot %q for a fresh start: %w", s.slot, err)
	}
	action := "NOEXPORT_SNAPSHOT"
	if s.cfg.Startup == StartupInitial {
		action = "EXPORT_SNAPSHOT"
	}
	res, err := pglogrepl.CreateReplicationSlot(ctx, s.repl, s.slot, "pgoutput",
		pglogrepl.CreateReplicationSlotOptions{Mode: pglogrepl.LogicalReplication, SnapshotAction: action})
	if err != nil {
		return fmt.Errorf("postgres-cdc: creating replication slot %q: %w", s.slot, err)
	}
	lsn, err := pglogrepl.ParseLSN(res.ConsistentPoint)
	if err != nil {
		return err
	}
	s.pos, s.confirmed = lsn, lsn
	s.logger().Info("postgres-cdc: created replication slot", "slot", s.slot, "lsn", lsn.String(), "startup", s.cfg.Startup)
	if s.cfg.Startup != StartupInitial {
		return s.startReplication(ctx)
	}
	cols := ""
	for i, c := range s.table.Columns {
		if i > 0 {
			cols += ", "
		}
		cols += quoteIdent(c.Name)
	}
	sql := "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; SET TRANSACTION SNAPSHOT " + quoteLiteral(res.SnapshotName) +
		"; DECLARE " + cursorName + " NO SCROLL CURSOR FOR SELECT " + cols + " FROM " + s.cfg.QualifiedTable()
	if _, err := s.conn.PgConn().Exec(ctx, sql).ReadAll(); err != nil {
		return fmt.Errorf("postgres-cdc: opening the snapshot: %w", err)
	}
	s.phase = phaseSnapshot
	s.snapSeq = 0
	return nil
}

func (s *Source) startReplication(ctx context.Context) error {
	err := pglogrepl.StartReplication(ctx, s.repl, s.slot, s.pos, pglogrepl.StartReplicationOptions{
		Mode:       pglogrepl.LogicalReplication,
		PluginArgs: []string{"proto_version '1'", "publication_names " + quoteLiteral(s.cfg.Publication)}})
	if err != nil {
		return fmt.Errorf("postgres-cdc: START_REPLICATION of slot %q at %s: %w", s.slot, s.pos, err)
	}
	s.phase = phaseStream
	s.lastStatus = time.Now()
	s.logger().Debug("postgres-cdc: streaming", "slot", s.slot, "from", s.pos.String())
	return nil
}

// Produce implements exec.Source.
func (s *Source) Produce(ctx context.Context) (exec.SourceResult, error) {
	if err := s.applyCompleted(); err != nil {
		return exec.SourceResult{}, err
	}
	var err error
	switch s.phase {
	case phaseRetract:
		err = s.produceRetract(ctx)
	case phaseSnapshot:
		err = s.produceSnapshot(ctx)
	case phaseStream:
		err = s.produceStream()
	}
	if err != nil {
		s.discard()
		return exec.SourceResult{}, err
	}
	if s.rows == 0 {
		return exec.SourceResult{Status: exec.Idle, WM: exec.MinWatermark}, nil
	}
	return exec.SourceResult{Status: exec.Produced, Batch: s.flush(), WM: exec.MinWatermark}, nil
}

func (s *Source) flush() exec.Batch {
	cols := make([]arrow.Array, len(s.decs))
	for i, d := range s.decs {
		cols[i] = d.b.NewArray()
	}
	rec := array.NewRecordBatch(s.schema, cols, int64(s.rows))
	for _, c := range cols {
		c.Release()
	}
	b := exec.Batch{Rec: rec, Kinds: s.kinds}
	// The next batch is likely as big as this one: reserve for it, so the builders do not grow step by step.
	for _, d := range s.decs {
		d.b.Reserve(s.rows)
	}
	s.kinds, s.rows = make([]exec.RowKind, 0, max(s.rows, 16)), 0
	return b
}

func (s *Source) discard() {
	for _, d := range s.decs {
		if a := d.b.NewArray(); a != nil {
			a.Release()
		}
	}
	s.kinds, s.rows = s.kinds[:0], 0
}

// emit appends one row of a table tuple (no 'u' columns left) to the batch.
func (s *Source) emit(kind exec.RowKind, cols []tupleCol) error {
	for i, d := range s.decs {
		c := cols[s.colIdx[i]]
		switch c.kind {
		case 'n':
			d.appendNull()
		case 't':
			if err := d.appendText(c.data); err != nil {
				// A value the column cannot hold (NaN into a DECIMAL, a date out of range): NULL, counted.
				d.appendNull()
				if s.tctx.Errors != nil {
					s.tctx.Errors.Add(1)
				}
				if !s.badLogged {
					s.badLogged = true
					s.logger().Warn("postgres-cdc: a value was turned into NULL", "column", d.name, "error", err.Error())
				}
			}
		default:
			return fmt.Errorf("postgres-cdc: column %s: value kind %q (unchanged TOAST value with no old row to take it from)",
				d.name, c.kind)
		}
	}
	s.kinds = append(s.kinds, kind)
	s.rows++
	return nil
}

// rowKey is the state key of the row with tuple cols (its key columns' text forms).
func (s *Source) rowKey(cols []tupleCol) ([]byte, error) {
	n := len(keyRows)
	for _, i := range s.table.Key {
		if i >= len(cols) || cols[i].kind != 't' {
			return nil, fmt.Errorf("postgres-cdc: key column %s missing from a change", s.table.Columns[i].Name)
		}
		n += 4 + len(cols[i].data)
	}
	k := append(make([]byte, 0, n), keyRows...) // one allocation per row: the state takes ownership of the key
	for _, i := range s.table.Key {
		k = binary.BigEndian.AppendUint32(k, uint32(len(cols[i].data)))
		k = append(k, cols[i].data...)
	}
	return k, nil
}

func (s *Source) produceRetract(ctx context.Context) error {
	for s.rows < maxBatchRows && len(s.retract) > 0 {
		r := s.retract[0]
		s.retract = s.retract[1:]
		var err error
		if s.tupOld, _, err = parseTuple(r.value, s.tupOld); err != nil {
			return err
		}
		if err := s.emit(exec.Delete, s.tupOld); err != nil {
			return err
		}
		s.tctx.State.Delete(r.key)
	}
	if len(s.retract) > 0 || s.rows > 0 {
		return nil
	}
	s.retract = nil
	octx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	return s.startFresh(octx)
}

func (s *Source) produceSnapshot(ctx context.Context) error {
	octx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	mrr := s.conn.PgConn().Exec(octx, fmt.Sprintf("FETCH %d FROM %s", maxBatchRows, cursorName))
	n := 0
	var rerr error
	for mrr.NextResult() {
		rr := mrr.ResultReader()
		for rr.NextRow() {
			vals := rr.Values()
			s.snapVals = s.snapVals[:0]
			for _, v := range vals {
				if v == nil {
					s.snapVals = append(s.snapVals, tupleCol{kind: 'n'})
				} else {
					s.snapVals = append(s.snapVals, tupleCol{kind: 't', data: v})
				}
			}
			n++
			if rerr == nil {
				rerr = s.snapshotRow(s.snapVals)
			}
		}
		if _, err := rr.Close(); err != nil && rerr == nil {
			rerr = err
		}
	}
	if err := mrr.Close(); err != nil && rerr == nil {
		rerr = err
	}
	if rerr != nil {
		return fmt.Errorf("postgres-cdc: reading the snapshot: %w", rerr)
	}
	if n > 0 {
		return nil
	}
	if _, err := s.conn.PgConn().Exec(octx, "COMMIT").ReadAll(); err != nil {
		return err
	}
	if s.table.full() {
		var keys [][]byte
		if err := s.tctx.State.Scan(keySnap, func(k, _ []byte) error {
			keys = append(keys, append([]byte(nil), k...))
			return nil
		}); err != nil {
			return err
		}
		for _, k := range keys {
			s.tctx.State.Delete(k)
		}
	}
	s.logger().Info("postgres-cdc: snapshot done", "slot", s.slot, "rows", s.snapSeq)
	return s.startReplication(octx)
}

func (s *Source) snapshotRow(cols []tupleCol) error {
	if err := s.emit(exec.Insert, cols); err != nil {
		return err
	}
	s.snapSeq++
	var key []byte
	if s.table.full() {
		key = binary.BigEndian.AppendUint64(append(make([]byte, 0, len(keySnap)+8), keySnap...), s.snapSeq)
	} else {
		var err error
		if key, err = s.rowKey(cols); err != nil {
			return err
		}
	}
	s.tctx.State.Put(key, appendTuple(make([]byte, 0, tupleSize(cols)), cols))
	return nil
}

func (s *Source) produceStream() error {
	if time.Since(s.lastStatus) >= statusInterval {
		if err := s.sendStatus(); err != nil {
			return err
		}
	}
	if err := s.repl.Conn().SetReadDeadline(time.Now().Add(receiveWindow)); err != nil {
		return err
	}
	for s.rows < maxBatchRows {
		msg, err := s.repl.ReceiveMessage(context.Background())
		if err != nil {
			if pgconn.Timeout(err) {
				break
			}
			return fmt.Errorf("postgres-cdc: replication: %w", err)
		}
		switch m := msg.(type) {
		case *pgproto3.CopyData:
			if len(m.Data) == 0 {
				continue
			}
			switch m.Data[0] {
			case pglogrepl.PrimaryKeepaliveMessageByteID:
				pkm, err := pglogrepl.ParsePrimaryKeepaliveMessage(m.Data[1:])
				if err != nil {
					return err
				}
				s.serverEnd = max(s.serverEnd, pkm.ServerWALEnd)
				// A keepalive's WAL end is where the walsender has decoded to (its sentPtr): every transaction
				// that committed before it and touched the table has been sent ahead of this message. Between
				// transactions the position moves there, so a table that is idle while others are written
				// still lets its slot free their WAL at the next completed checkpoint.
				if !s.inTxn && pkm.ServerWALEnd > s.pos {
					s.pos = pkm.ServerWALEnd
				}
				if pkm.ReplyRequested {
					if err := s.sendStatus(); err != nil {
						return err
					}
				}
			case pglogrepl.XLogDataByteID:
				if len(m.Data) < 25 {
					return fmt.Errorf("postgres-cdc: short XLogData")
				}
				s.serverEnd = max(s.serverEnd, pglogrepl.LSN(binary.BigEndian.Uint64(m.Data[9:])))
				if err := s.handleWAL(m.Data[25:]); err != nil {
					return err
				}
			}
		case *pgproto3.ErrorResponse:
			return fmt.Errorf("postgres-cdc: replication: %w", pgconn.ErrorResponseToPgError(m))
		case *pgproto3.CopyDone:
			return fmt.Errorf("postgres-cdc: the server ended replication of slot %q", s.slot)
		}
	}
	lag := int64(-1)
	if s.serverEnd > 0 {
		lag = max(int64(s.serverEnd)-int64(s.pos), 0)
	}
	s.ReadProgress.Set(-1, lag, -1)
	return nil
}

// handleWAL applies one pgoutput message.
func (s *Source) handleWAL(d []byte) error {
	if len(d) == 0 {
		return nil
	}
	switch d[0] {
	case 'B':
		if len(d) < 9 {
			return fmt.Errorf("postgres-cdc: short Begin")
		}
		final := pglogrepl.LSN(binary.BigEndian.Uint64(d[1:]))
		s.inTxn, s.txn, s.txnMsgs = true, final, 0
		s.skipping = s.restoreLSN != 0 && final < s.restoreLSN
		s.skipUpTo = 0
		if s.restoreTxn != 0 && final == s.restoreTxn {
			s.skipUpTo = s.restoreSkip
		}
	case 'C':
		if len(d) < 18 {
			return fmt.Errorf("postgres-cdc: short Commit")
		}
		end := pglogrepl.LSN(binary.BigEndian.Uint64(d[10:]))
		if !s.skipping && end > s.pos {
			s.pos = end
		}
		s.inTxn, s.txnMsgs, s.skipping, s.skipUpTo = false, 0, false, 0
	case 'R':
		var m pglogrepl.RelationMessage
		if err := m.Decode(d[1:]); err != nil {
			return err
		}
		if m.Namespace != s.cfg.Schema || m.RelationName != s.cfg.Table {
			return nil
		}
		if len(m.Columns) != len(s.table.Columns) {
			return s.schemaChanged()
		}
		for i, c := range m.Columns {
			if c.Name != s.table.Columns[i].Name || c.DataType != s.table.Columns[i].OID {
				return s.schemaChanged()
			}
		}
		s.relID, s.relSeen = m.RelationID, true
	case 'I', 'U', 'D':
		if len(d) < 6 {
			return fmt.Errorf("postgres-cdc: short change message")
		}
		if !s.relSeen || binary.BigEndian.Uint32(d[1:]) != s.relID {
			return nil
		}
		s.txnMsgs++
		if s.skipping || s.txnMsgs <= s.skipUpTo {
			return nil // emitted before the restored checkpoint: its effects are in the restored state
		}
		return s.change(d[0], d[5:])
	case 'T':
		if len(d) < 6 {
			return nil
		}
		n := int(binary.BigEndian.Uint32(d[1:]))
		for i := 0; i < n && 6+4*i+4 <= len(d); i++ {
			if s.relSeen && binary.BigEndian.Uint32(d[6+4*i:]) == s.relID && !s.skipping {
				return fmt.Errorf("postgres-cdc: TRUNCATE of %s.%s (transaction at %s): a truncate carries no rows to retract, "+
					"so the changelog cannot follow it; drop the stream's jobs and the slot (SELECT pg_drop_replication_slot('%s')) and start afresh",
					s.cfg.Schema, s.cfg.Table, s.txn, s.slot)
			}
		}
	}
	return nil
}

func (s *Source) schemaChanged() error {
	return fmt.Errorf("postgres-cdc: the columns of %s.%s changed (ALTER TABLE) while it was captured: not supported; "+
		"recreate the stream and its jobs", s.cfg.Schema, s.cfg.Table)
}

// change applies an Insert, Update or Delete (body after the relation id).
func (s *Source) change(kind byte, b []byte) error {
	var err error
	var n int
	switch kind {
	case 'I':
		if len(b) < 1 || b[0] != 'N' {
			return fmt.Errorf("postgres-cdc: malformed Insert")
		}
		if s.tupNew, n, err = parseTuple(b[1:], s.tupNew); err != nil {
			return err
		}
		if err := s.checkNoToast(s.tupNew); err != nil {
			return err
		}
		if err := s.emit(exec.Insert, s.tupNew); err != nil {
			return err
		}
		if !s.table.full() {
			key, err := s.rowKey(s.tupNew)
			if err != nil {
				return err
			}
			s.tctx.State.Put(key, append([]byte(nil), b[1:1+n]...))
		}
		return nil
	case 'U':
		var oldTuple []tupleCol
		haveOld := false
		var oldKind byte
		if len(b) > 0 && (b[0] == 'K' || b[0] == 'O') {
			oldKind = b[0]
			if s.tupOld, n, err = parseTuple(b[1:], s.tupOld); err != nil {
				return err
			}
			haveOld = true
			b = b[1+n:]
		}
		if len(b) < 1 || b[0] != 'N' {
			return fmt.Errorf("postgres-cdc: malformed Update")
		}
		if s.tupNew, _, err = parseTuple(b[1:], s.tupNew); err != nil {
			return err
		}
		var oldKey []byte
		if s.table.full() {
			if !haveOld || oldKind != 'O' {
				return fmt.Errorf("postgres-cdc: an update of %s.%s came without its old row: is the table still REPLICA IDENTITY FULL?",
					s.cfg.Schema, s.cfg.Table)
			}
			oldTuple = s.tupOld
		} else {
			src := s.tupNew
			if haveOld {
				src = s.tupOld
			}
			if oldKey, err = s.rowKey(src); err != nil {
				return err
			}
			v, ok, err := s.tctx.State.Get(oldKey)
			if err != nil {
				return err
			}
			if !ok {
				return fmt.Errorf("postgres-cdc: an update of %s.%s names a row the source has not seen (key %q)", s.cfg.Schema, s.cfg.Table, oldKey[len(keyRows):])
			}
			if s.tupRes, _, err = parseTuple(v, s.tupRes); err != nil {
				return err
			}
			oldTuple = s.tupRes
		}
		if err := s.checkNoToast(oldTuple); err != nil {
			return err
		}
		// Unchanged TOAST values are not sent: take them from the old row.
		for i := range s.tupNew {
			if s.tupNew[i].kind == 'u' && i < len(oldTuple) {
				s.tupNew[i] = oldTuple[i]
			}
		}
		if err := s.checkNoToast(s.tupNew); err != nil {
			return err
		}
		var newVal, newKey []byte
		if !s.table.full() {
			newVal = appendTuple(make([]byte, 0, tupleSize(s.tupNew)), s.tupNew)
			if newKey, err = s.rowKey(s.tupNew); err != nil {
				return err
			}
		}
		if err := s.emit(exec.UpdateBefore, oldTuple); err != nil {
			return err
		}
		if err := s.emit(exec.UpdateAfter, s.tupNew); err != nil {
			return err
		}
		if !s.table.full() {
			if string(newKey) != string(oldKey) {
				s.tctx.State.Delete(oldKey)
			}
			s.tctx.State.Put(newKey, newVal)
		}
		return nil
	case 'D':
		if len(b) < 1 || (b[0] != 'K' && b[0] != 'O') {
			return fmt.Errorf("postgres-cdc: malformed Delete")
		}
		if s.tupOld, _, err = parseTuple(b[1:], s.tupOld); err != nil {
			return err
		}
		if s.table.full() {
			if b[0] != 'O' {
				return fmt.Errorf("postgres-cdc: a delete of %s.%s came with its key only: is the table still REPLICA IDENTITY FULL?",
					s.cfg.Schema, s.cfg.Table)
			}
			if err := s.checkNoToast(s.tupOld); err != nil {
				return err
			}
			return s.emit(exec.Delete, s.tupOld)
		}
		key, err := s.rowKey(s.tupOld)
		if err != nil {
			return err
		}
		v, ok, err := s.tctx.State.Get(key)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("postgres-cdc: a delete of %s.%s names a row the source has not seen (key %q)", s.cfg.Schema, s.cfg.Table, key[len(keyRows):])
		}
		if s.tupRes, _, err = parseTuple(v, s.tupRes); err != nil {
			return err
		}
		if err := s.emit(exec.Delete, s.tupRes); err != nil {
			return err
		}
		s.tctx.State.Delete(key)
	}
	return nil
}

func (s *Source) checkNoToast(cols []tupleCol) error {
	if len(cols) != len(s.table.Columns) {
		return fmt.Errorf("postgres-cdc: a change of %s.%s has %d columns, the table %d", s.cfg.Schema, s.cfg.Table, len(cols), len(s.table.Columns))
	}
	for i, c := range cols {
		if c.kind == 'u' {
			return fmt.Errorf("postgres-cdc: column %s of %s.%s: unchanged TOAST value with no old value to take it from "+
				"(ALTER TABLE %s REPLICA IDENTITY FULL)", s.table.Columns[i].Name, s.cfg.Schema, s.cfg.Table, s.cfg.QualifiedTable())
		}
	}
	return nil
}

// SnapshotOffset implements exec.Source (the runtime calls SnapshotOffsetAt instead).
func (s *Source) SnapshotOffset() ([]byte, error) { return s.offsetBytes() }

func (s *Source) offsetBytes() ([]byte, error) {
	o := offset{Slot: s.cfg.Slot, Snapshot: s.phase != phaseStream, LSN: uint64(s.pos)}
	if s.inTxn && s.txnMsgs > 0 {
		o.Txn, o.Skip = uint64(s.txn), s.txnMsgs
	}
	return json.Marshal(o)
}

// SnapshotOffsetAt records that checkpoint id covers everything up to the current position: its completion
// confirms that LSN to the server, never earlier.
func (s *Source) SnapshotOffsetAt(id uint64) ([]byte, error) {
	b, err := s.offsetBytes()
	if err != nil {
		return nil, err
	}
	s.pendings = append(s.pendings, pending{id: id, lsn: s.pos})
	s.logger().Debug("postgres-cdc: checkpoint covers", "checkpoint", id, "lsn", s.pos.String(), "lsn_int", uint64(s.pos),
		"snapshot", s.phase != phaseStream)
	return b, nil
}

// NotifyCheckpointComplete hands the id to the source goroutine, which confirms its LSN (coordinator goroutine).
func (s *Source) NotifyCheckpointComplete(id uint64) {
	for {
		c := s.completed.Load()
		if id <= c || s.completed.CompareAndSwap(c, id) {
			return
		}
	}
}

// NotifyCheckpointAborted does nothing: the aborted checkpoint's LSN is confirmed by a later completion.
func (s *Source) NotifyCheckpointAborted(uint64) {}

// applyCompleted confirms the LSN of the latest completed checkpoint (source goroutine).
func (s *Source) applyCompleted() error {
	c := s.completed.Load()
	if c <= s.handled {
		return nil
	}
	s.handled = c
	var lsn pglogrepl.LSN
	var id uint64
	keep := s.pendings[:0]
	for _, p := range s.pendings {
		if p.id <= c {
			lsn, id = max(lsn, p.lsn), p.id
		} else {
			keep = append(keep, p)
		}
	}
	s.pendings = keep
	if id == 0 || lsn <= s.confirmed {
		return nil
	}
	s.confirmed = lsn
	s.logger().Debug("postgres-cdc: checkpoint completed", "checkpoint", id, "lsn", lsn.String(), "lsn_int", uint64(lsn))
	if s.phase == phaseStream {
		return s.sendStatus()
	}
	return nil
}

// sendStatus tells the server the last completed checkpoint's LSN: the slot may free the WAL before it.
func (s *Source) sendStatus() error {
	s.lastStatus = time.Now()
	err := pglogrepl.SendStandbyStatusUpdate(context.Background(), s.repl, pglogrepl.StandbyStatusUpdate{
		WALWritePosition: s.confirmed, WALFlushPosition: s.confirmed, WALApplyPosition: s.confirmed})
	if err != nil {
		return fmt.Errorf("postgres-cdc: standby status update: %w", err)
	}
	return nil
}

// Close implements exec.Source.
func (s *Source) Close() error {
	s.discard()
	for _, d := range s.decs {
		d.b.Release()
	}
	s.decs = nil
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if s.repl != nil {
		_ = s.repl.Close(ctx)
		s.repl = nil
	}
	if s.conn != nil {
		_ = s.conn.Close(ctx)
		s.conn = nil
	}
	return nil
}
