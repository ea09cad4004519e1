package streamlog

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clinksql/clinksql/connectors/txnfile"
	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/exec/textform"
	"github.com/clinksql/clinksql/state"
)

// Log is the storage of an internal stream and of a materialized view's changelog: an append-only, durable
// sequence of immutable segments in one directory, seg-<seq>[-<txn>].arrow, each an Arrow IPC stream whose last
// column (kindColumn, int8) holds the row kinds. Segments come from two writers:
//
//   - Append (INSERT INTO stream VALUES): the segment is written and made durable before Append returns;
//   - a job's LogSink, two-phase: a checkpoint's rows are staged under _staging/<job>/ at the barrier and renamed
//     in as the next segment when the checkpoint completed (Commit), so readers never see uncommitted rows.
//
// Readers (LogSource) go through segments in sequence order and remember (segment, batch) as their offset. One
// engine process owns a data directory, so the sequence is allocated in memory under mu, starting above the
// largest segment on disk.
//
// Every segment is a framed file (state.Frame: checksum and length), and the sequence numbers have no gaps; the
// file LAST (framed, written by Create and after every segment) holds the highest sequence number published.
// Open refuses, with a *state.CorruptError naming the file, a log with a missing segment (a gap, or fewer
// segments than LAST says), a missing LAST or directory; a damaged segment fails the read that meets it.
type Log struct {
	dir    string
	fsys   state.FS
	schema *arrow.Schema // the data columns, without kindColumn

	mu      sync.Mutex
	next    uint64            // the next segment's sequence number
	names   map[uint64]string // seq -> file name
	changed chan struct{}     // closed and replaced when a segment arrives
	// broken is set when an append could neither make its segment durable nor take it back (undoLocked): whether
	// segment next exists after a crash is unknown, so the log takes no more segments until it is opened again.
	broken error

	// For subscribers (tail.go), under mu: frontier is the highest checkpoint of the writing job whose commit
	// every sink subtask finished (Advance; at Open, the highest checkpoint a segment names); notify is closed and
	// replaced when a segment arrives, the frontier advances or the log is dropped.
	frontier uint64
	notify   chan struct{}
	dropped  bool
	// sizes[i] is the size of segment i+1, for the segments a subscriber's lag was measured over (tail.go).
	sizeMu sync.Mutex
	sizes  []int64
}

// kindColumn is the name of the row-kind column every segment ends with.
const kindColumn = "__kind"

// Create creates a new, empty log in dir (which must not hold one) and opens it: LAST exists from the start,
// so a log whose files vanish later is told apart from a new one.
func Create(fsys state.FS, dir string, schema *arrow.Schema) (*Log, error) {
	if fsys == nil {
		fsys = state.OS
	}
	if err := fsys.MkdirAll(dir); err != nil {
		return nil, err
	}
	l := &Log{dir: dir, fsys: fsys}
	if _, err := fsys.Stat(l.lastPath()); err == nil {
		return nil, fmt.Errorf("log %s exists already", dir)
	}
	if err := l.writeLast(0); err != nil {
		return nil, err
	}
	return Open(fsys, dir, schema)
}

// Open opens the log Create made in dir for rows of schema. A missing directory or LAST, a gap in the
// segments or fewer of them than LAST says are a *state.CorruptError.
func Open(fsys state.FS, dir string, schema *arrow.Schema) (*Log, error) {
	if fsys == nil {
		fsys = state.OS
	}
	l := &Log{dir: dir, fsys: fsys, schema: schema, next: 1, names: map[uint64]string{}, changed: make(chan struct{}),
		notify: make(chan struct{})}
	entries, err := fsys.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, state.Corrupt(dir, err, "the log's directory is missing")
	}
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		seq, ok := parseSegmentName(e.Name())
		if !ok {
			if strings.HasSuffix(e.Name(), ".tmp") {
				_ = fsys.Remove(filepath.Join(dir, e.Name())) // an Append cut short by a crash
			}
			continue
		}
		l.names[seq] = e.Name()
		l.next = max(l.next, seq+1)
		l.frontier = max(l.frontier, segmentCheckpoint(e.Name()))
	}
	last, err := state.MustReadFramed(fsys, l.lastPath())
	if err != nil {
		return nil, err
	}
	published, err := strconv.ParseUint(string(last), 10, 64)
	if err != nil {
		return nil, state.Corrupt(l.lastPath(), err, "not a sequence number")
	}
	// LAST is written after its segment, so it may lag the segments by one crash, never lead them.
	for seq := uint64(1); seq < max(l.next, published+1); seq++ {
		if _, ok := l.names[seq]; !ok {
			return nil, state.Corrupt(filepath.Join(dir, segmentName(seq, "")), nil,
				"segment %d of the log is missing (the log holds segments up to %d, LAST says %d)", seq, l.next-1, published)
		}
	}
	return l, nil
}

// Unstored returns a log of schema with no storage, for a plan that is explained and never run (EXPLAIN CREATE
// MATERIALIZED VIEW): planning it touches no disk.
func Unstored(schema *arrow.Schema) *Log {
	return &Log{schema: schema, next: 1, names: map[uint64]string{}, changed: make(chan struct{}), notify: make(chan struct{})}
}

// lastFile records the highest published sequence number.
const lastFile = "LAST"

func (l *Log) lastPath() string { return filepath.Join(l.dir, lastFile) }

func (l *Log) writeLast(seq uint64) error {
	return state.WriteFramed(l.fsys, l.lastPath(), []byte(strconv.FormatUint(seq, 10)))
}

// recordLast writes LAST after segment seq was published. The segment is durable and visible already, so a
// failure here is no failure of the append (its caller would report rows as lost that are stored, and a retry
// would store them twice): LAST may lag the segments, which Open allows, and the next append writes it again.
func (l *Log) recordLast(seq uint64) {
	if err := l.writeLast(seq); err != nil {
		slog.Warn("stream log: recording the last segment failed; it is written again with the next one",
			"dir", l.dir, "segment", seq, "err", err)
	}
}

// Schema returns the schema of the log's rows.
func (l *Log) Schema() *arrow.Schema { return l.schema }

// Dir returns the log's directory.
func (l *Log) Dir() string { return l.dir }

func segmentName(seq uint64, txn string) string {
	name := fmt.Sprintf("seg-%020d", seq)
	if txn != "" {
		name += "-" + strings.TrimSuffix(txn, ".arrow")
	}
	return name + ".arrow"
}

// segmentTxnName is the transaction file name inside a segment's name, seg-<seq>-<name> (txnfile.Sink.TxnNameOf).
func segmentTxnName(name string) (string, bool) {
	if _, ok := parseSegmentName(name); !ok {
		return "", false
	}
	return strings.TrimPrefix(name[len("seg-")+20:], "-"), true
}

func parseSegmentName(name string) (uint64, bool) {
	rest, ok := strings.CutPrefix(name, "seg-")
	if !ok || !strings.HasSuffix(rest, ".arrow") || len(rest) < 20 {
		return 0, false
	}
	seq, err := strconv.ParseUint(rest[:20], 10, 64)
	return seq, err == nil
}

// Next returns the sequence number the next segment will get: a reader that started at 1 and reached Next has
// read everything committed so far.
func (l *Log) Next() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.next
}

// Changed returns a channel closed when the next segment arrives.
func (l *Log) Changed() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.changed
}

func (l *Log) publishedLocked(seq uint64, name string) {
	l.names[seq] = name
	l.next = seq + 1
	close(l.changed)
	l.changed = make(chan struct{})
	l.wakeLocked()
}

// Append writes batches as one new segment (all or nothing) and returns once it is durable. The caller keeps
// their references.
func (l *Log) Append(bs ...exec.Batch) error {
	var buf bytes.Buffer
	enc := &logEncoder{}
	if err := enc.Init(l.schema); err != nil {
		return err
	}
	if err := enc.Begin(&buf); err != nil {
		return err
	}
	for _, b := range bs {
		if err := enc.Write(b.Rec, b.Kinds); err != nil {
			return err
		}
	}
	if err := enc.Finish(); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.broken != nil {
		return l.broken
	}
	seq := l.next
	name := segmentName(seq, "")
	if err := state.WriteFsyncRename(l.fsys, filepath.Join(l.dir, name), buf.Bytes()); err != nil {
		if errors.Is(err, state.ErrNotSynced) {
			return l.undoLocked(name, err)
		}
		return err
	}
	l.publishedLocked(seq, name)
	l.recordLast(seq)
	return nil
}

// undoLocked takes back a segment that was renamed into place but whose directory fsync failed (cause), so that the
// failed append changes nothing, even after a crash: it removes the file and fsyncs the directory again. It returns
// cause when that worked; otherwise the segment may come back after a crash or not, and the log is broken: this
// append and every later one fail with an error naming the segment (a restart reads what the disk holds).
func (l *Log) undoLocked(name string, cause error) error {
	path := filepath.Join(l.dir, name)
	err := l.fsys.Remove(path)
	if err == nil {
		err = l.fsys.SyncDir(l.dir)
	}
	if err == nil {
		return cause
	}
	l.broken = fmt.Errorf("stream log segment %s: an append failed and could not be taken back (%v), so whether its "+
		"rows are stored is known only after a restart; the log takes no more rows until then: %w", path, err, cause)
	slog.Error("stream log: a failed append could not be taken back", "segment", path, "err", cause, "undo", err)
	return l.broken
}

// commitStaged renames a staged, durable transaction file in as the next segment. A source that no longer exists
// was published by an earlier commit of the same transaction (renames move, so a file is staged or published,
// never both).
func (l *Log) commitStaged(src, txn string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.broken != nil {
		return l.broken
	}
	seq := l.next
	name := segmentName(seq, txn)
	err := l.fsys.RenameNoReplace(src, filepath.Join(l.dir, name))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	l.publishedLocked(seq, name)
	l.recordLast(seq)
	return nil
}

// segmentAfter returns the first segment at or after seq, if any.
func (l *Log) segmentAfter(seq uint64) (uint64, string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for s := seq; s < l.next; s++ {
		if name, ok := l.names[s]; ok {
			return s, name, true
		}
	}
	return 0, "", false
}

// readSegment decodes every batch of a segment.
func (l *Log) readSegment(name string, alloc memory.Allocator) ([]exec.Batch, error) {
	data, err := state.MustReadFramed(l.fsys, filepath.Join(l.dir, name))
	if err != nil {
		return nil, err
	}
	r, err := ipc.NewReader(bytes.NewReader(data), ipc.WithAllocator(alloc))
	if err != nil {
		return nil, fmt.Errorf("log segment %s: %w", name, err)
	}
	defer r.Release()
	var out []exec.Batch
	for r.Next() {
		rec := r.RecordBatch()
		b, err := splitKinds(rec)
		if err != nil {
			releaseBatches(out)
			return nil, fmt.Errorf("log segment %s: %w", name, err)
		}
		out = append(out, b)
	}
	if err := r.Err(); err != nil && !errors.Is(err, io.EOF) {
		releaseBatches(out)
		return nil, fmt.Errorf("log segment %s: %w", name, err)
	}
	return out, nil
}

func releaseBatches(bs []exec.Batch) {
	for _, b := range bs {
		b.Release()
	}
}

// splitKinds turns a segment record (data columns + kindColumn) into a Batch with its own reference.
func splitKinds(rec arrow.RecordBatch) (exec.Batch, error) {
	n := int(rec.NumCols())
	if n == 0 || rec.ColumnName(n-1) != kindColumn {
		return exec.Batch{}, fmt.Errorf("no %s column", kindColumn)
	}
	kcol, ok := rec.Column(n - 1).(*array.Int8)
	if !ok {
		return exec.Batch{}, fmt.Errorf("%s is %s, not int8", kindColumn, rec.Column(n-1).DataType())
	}
	var kinds []exec.RowKind
	for i, k := range kcol.Int8Values() {
		if k != int8(exec.Insert) {
			if kinds == nil {
				kinds = make([]exec.RowKind, kcol.Len())
			}
			kinds[i] = exec.RowKind(k)
		} else if kinds != nil {
			kinds[i] = exec.Insert
		}
	}
	fields := rec.Schema().Fields()[:n-1]
	cols := rec.Columns()[:n-1]
	data := array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, rec.NumRows())
	return exec.Batch{Rec: data, Kinds: kinds}, nil
}

// logEncoder writes a transaction of the LogSink (or one Append) as an Arrow IPC stream with the kind column.
type logEncoder struct {
	schema *arrow.Schema // with kindColumn
	w      *ipc.Writer
	frame  *state.FrameWriter // the segment's checksum and length around the IPC stream
}

func (e *logEncoder) Ext() string { return "arrow" }

func (e *logEncoder) Init(schema *arrow.Schema) error {
	fields := append(slices.Clone(schema.Fields()), arrow.Field{Name: kindColumn, Type: arrow.PrimitiveTypes.Int8})
	e.schema = arrow.NewSchema(fields, nil)
	return nil
}

func (e *logEncoder) Begin(w io.Writer) error {
	f, err := state.NewFrameWriter(w)
	if err != nil {
		return err
	}
	e.frame = f
	e.w = ipc.NewWriter(f, ipc.WithSchema(e.schema))
	return nil
}

func (e *logEncoder) Write(rec arrow.RecordBatch, kinds []exec.RowKind) error {
	n := int(rec.NumRows())
	kb := array.NewInt8Builder(memory.DefaultAllocator)
	defer kb.Release()
	kb.Reserve(n)
	for i := range n {
		k := exec.Insert
		if kinds != nil {
			k = kinds[i]
		}
		kb.UnsafeAppend(int8(k))
	}
	karr := kb.NewArray()
	defer karr.Release()
	cols := append(slices.Clone(rec.Columns()), karr)
	out := array.NewRecordBatch(e.schema, cols, int64(n))
	defer out.Release()
	return e.w.Write(out)
}

func (e *logEncoder) Finish() error {
	err := e.w.Close()
	e.w = nil
	if err != nil {
		return err
	}
	return e.frame.Close()
}

func (e *logEncoder) Abandon() {
	if e.w != nil {
		_ = e.w.Close()
		e.w = nil
	}
}

// NewSink returns a two-phase sink into l: what a checkpoint's barrier sealed becomes visible to readers as one
// segment when the checkpoint completed. It carries retractions (a materialized view's changelog).
func NewSink(l *Log) exec.Sink {
	s := txnfile.New("stream", l.dir, l.schema, &logEncoder{})
	s.Updating = true
	s.PublishTo, s.TxnNameOf = l.commitStaged, segmentTxnName
	return s
}

// SourceConfig configures a reader of a Log.
type SourceConfig struct {
	Log *Log
	// Bounded stops at the segments that exist when the source opens (a SELECT over a stream reads what is there);
	// otherwise the source follows new segments for ever.
	Bounded bool
	// Consolidate (with Bounded) folds the retractions of a changelog and produces the resulting rows as inserts:
	// what a materialized view holds as of its last commit, read by an ad-hoc SELECT.
	Consolidate bool
	// Progress, when set, is kept at the read position's segment: every segment below it has been produced (and
	// so emitted ahead of any later barrier). FLUSH waits on it before it checkpoints.
	Progress *atomic.Uint64
}

// NewSource returns a source reading cfg.Log from its first segment (or the restored offset). It has one split:
// run it at parallelism 1. It has no watermark of its own: wrap it in WithWatermark.
func NewSource(cfg SourceConfig) exec.Source {
	return &logSource{cfg: cfg, seq: 1}
}

type logSource struct {
	cfg   SourceConfig
	alloc memory.Allocator
	// The read position: segment seq, batch index within it.
	seq   uint64
	batch int
	until uint64 // Bounded: stop before this segment

	cur     []exec.Batch // the decoded batches of segment cur
	curSeq  uint64
	changed <-chan struct{}
	idle    <-chan struct{} // the changed channel of the last Idle answer

	consolidated []exec.Batch // Consolidate: the folded rows, produced in order
}

func (s *logSource) RestoreOffset(offset []byte) error {
	seq, batch, err := decodeOffset(offset)
	if err != nil {
		return err
	}
	s.seq, s.batch = seq, int(batch)
	return nil
}

// decodeOffset reads an offset SnapshotOffset wrote: the next segment and batch to read.
func decodeOffset(offset []byte) (seq, batch uint64, err error) {
	if len(offset) != 16 {
		return 0, 0, fmt.Errorf("stream source: offset of %d bytes, want 16", len(offset))
	}
	return binary.BigEndian.Uint64(offset), binary.BigEndian.Uint64(offset[8:]), nil
}

func (s *logSource) SnapshotOffset() ([]byte, error) {
	b := make([]byte, 16)
	binary.BigEndian.PutUint64(b, s.seq)
	binary.BigEndian.PutUint64(b[8:], uint64(s.batch))
	return b, nil
}

func (s *logSource) Open(ctx *exec.TaskContext) error {
	s.alloc = ctx.Alloc
	if s.alloc == nil {
		s.alloc = memory.DefaultAllocator
	}
	if s.cfg.Bounded {
		s.until = s.cfg.Log.Next()
	}
	s.report()
	return nil
}

func (s *logSource) report() {
	if s.cfg.Progress != nil {
		s.cfg.Progress.Store(s.seq)
	}
}

func (s *logSource) Produce(ctx context.Context) (exec.SourceResult, error) {
	if s.cfg.Consolidate {
		return s.produceConsolidated()
	}
	for {
		if s.cur != nil && s.curSeq == s.seq && s.batch < len(s.cur) {
			b := s.cur[s.batch]
			s.cur[s.batch] = exec.Batch{}
			s.batch++
			return exec.SourceResult{Status: exec.Produced, Batch: b, WM: exec.MinWatermark}, nil
		}
		if s.cur != nil && s.curSeq == s.seq {
			// Segment done: move past it.
			s.dropCurrent()
			s.seq++
			s.batch = 0
			s.report()
		}
		if s.cfg.Bounded && s.seq >= s.until {
			return exec.SourceResult{Status: exec.Finished}, nil
		}
		if s.changed == nil {
			s.changed = s.cfg.Log.Changed()
		}
		seq, name, ok := s.cfg.Log.segmentAfter(s.seq)
		if !ok || s.cfg.Bounded && seq >= s.until {
			if s.cfg.Bounded {
				return exec.SourceResult{Status: exec.Finished}, nil
			}
			// Wait briefly for a new segment, then let the runtime inject barriers.
			s.report()
			select {
			case <-s.changed:
				s.changed = nil
				continue
			case <-ctx.Done():
				return exec.SourceResult{}, ctx.Err()
			default:
				// Taken before the segment check, so a segment published since then has closed it already.
				s.idle = s.changed
				s.changed = nil
				return exec.SourceResult{Status: exec.Idle, WM: exec.MinWatermark}, nil
			}
		}
		if seq != s.seq {
			s.seq, s.batch = seq, 0
			s.report()
		}
		batches, err := s.cfg.Log.readSegment(name, s.alloc)
		if err != nil {
			return exec.SourceResult{}, err
		}
		s.cur, s.curSeq = batches, seq
	}
}

// produceConsolidated reads every segment below until at the first call, folds retractions, and then hands out
// the live rows batch by batch. Its offset is not meaningful: a consolidating read is an ad-hoc SELECT's, which is
// never restored.
func (s *logSource) produceConsolidated() (exec.SourceResult, error) {
	if s.consolidated == nil {
		var all []exec.Batch
		for seq := s.seq; seq < s.until; seq++ {
			sq, name, ok := s.cfg.Log.segmentAfter(seq)
			if !ok || sq >= s.until {
				break
			}
			batches, err := s.cfg.Log.readSegment(name, s.alloc)
			if err != nil {
				releaseBatches(all)
				return exec.SourceResult{}, err
			}
			all = append(all, batches...)
			seq = sq
		}
		out, err := consolidate(s.alloc, all)
		releaseBatches(all)
		if err != nil {
			return exec.SourceResult{}, err
		}
		s.consolidated = append(out, exec.Batch{}) // a sentinel keeps the slice non-nil when empty
		s.seq = s.until
	}
	for len(s.consolidated) > 0 {
		b := s.consolidated[0]
		s.consolidated = s.consolidated[1:]
		if b.Rec != nil {
			return exec.SourceResult{Status: exec.Produced, Batch: b, WM: exec.MinWatermark}, nil
		}
	}
	s.consolidated = []exec.Batch{}
	return exec.SourceResult{Status: exec.Finished}, nil
}

// consolidate folds a changelog: an insert or update-after adds its row, a delete or update-before removes one
// equal row. The live rows come back as insert-only batches (new references); without retractions the input
// batches are simply retained.
func consolidate(alloc memory.Allocator, in []exec.Batch) ([]exec.Batch, error) {
	retracting := false
	for _, b := range in {
		retracting = retracting || b.Kinds != nil
	}
	if !retracting {
		out := make([]exec.Batch, 0, len(in))
		for _, b := range in {
			if b.Rows() > 0 {
				b.Rec.Retain()
				out = append(out, exec.Batch{Rec: b.Rec})
			}
		}
		return out, nil
	}
	type pos struct{ batch, row int }
	live := map[string][]pos{}
	alive := make([][]bool, len(in))
	for bi, b := range in {
		rows, err := textform.Rows(b.Rec)
		if err != nil {
			return nil, err
		}
		alive[bi] = make([]bool, len(rows))
		for ri, row := range rows {
			key := textform.RowKey(row)
			switch b.Kind(ri) {
			case exec.Insert, exec.UpdateAfter:
				live[key] = append(live[key], pos{bi, ri})
				alive[bi][ri] = true
			default:
				if ps := live[key]; len(ps) > 0 {
					p := ps[len(ps)-1]
					live[key] = ps[:len(ps)-1]
					alive[p.batch][p.row] = false
				}
			}
		}
	}
	var out []exec.Batch
	for bi, b := range in {
		var rows []int32
		for ri, ok := range alive[bi] {
			if ok {
				rows = append(rows, int32(ri))
			}
		}
		if len(rows) == 0 {
			continue
		}
		part, err := exec.TakeRows(context.Background(), alloc, b, rows)
		if err != nil {
			releaseBatches(out)
			return nil, err
		}
		part.Kinds = nil // the live rows, as inserts
		out = append(out, part)
	}
	return out, nil
}

// IdleWait is closed when the log gets its next segment (exec.IdleWaiter).
func (s *logSource) IdleWait() <-chan struct{} { return s.idle }

func (s *logSource) dropCurrent() {
	releaseBatches(s.cur)
	s.cur = nil
}

func (s *logSource) Close() error {
	s.dropCurrent()
	releaseBatches(s.consolidated)
	s.consolidated = nil
	return nil
}
