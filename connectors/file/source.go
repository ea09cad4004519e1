package file

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"io/fs"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clinksql/clinksql/connectors"
	"github.com/clinksql/clinksql/connectors/filelist"
	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/exec/expr"
	"github.com/clinksql/clinksql/sqlerr"
	"github.com/clinksql/clinksql/state"
)

// SourceConfig configures a CSV or JSON-lines file source.
type SourceConfig struct {
	// Path is a directory (every regular file directly in it whose name does not start with '.' or '_'), a glob
	// such as 'dir/*.csv' (a wildcard matches no leading '.' or '_' either) or a single file.
	Path string
	// Format is "csv" (COPY ... CSV as the file sink writes it) or "json" (JSON lines).
	Format string
	// Schema is the columns to produce: CSV fields by position, JSON keys by name (case-insensitive).
	Schema *arrow.Schema
	// CSVHeader: the first line of every file is a header and is skipped.
	CSVHeader bool
	// Follow keeps watching Path: it is listed again every MonitorInterval (0: DefaultMonitorInterval) and files
	// that appeared are read. Without it the source reads the files present at Open and finishes.
	Follow          bool
	MonitorInterval time.Duration
	// BadRows is BadRowsSkip (also ""): a row that cannot be read is counted in TaskContext.Errors, logged once per
	// file and skipped; or BadRowsFail: Produce fails with a data error naming the file, the line and the column.
	BadRows string
	// BatchRows bounds the rows of a batch; 0 means DefaultBatchRows. A batch never spans two files.
	BatchRows int
	// Guard confines the files read: every file of every listing, and each again when it is opened.
	Guard connectors.PathGuard
}

const (
	BadRowsSkip = "skip"
	BadRowsFail = "fail"

	DefaultBatchRows       = 4096
	DefaultMonitorInterval = 10 * time.Second
)

// SQLSTATEs of bad rows besides the value parsers' own (22P02, 22003, 22007, ...).
const (
	codeBadCopyFormat = "22P04" // bad_copy_file_format: wrong field count, unterminated quote
	codeNullNotAllow  = "22004" // null_value_not_allowed (class 22, so a permanent data error)
	codeBadEncoding   = "22021" // character_not_in_repertoire: text that is not UTF-8
	codeDatetimeRange = "22008" // datetime_field_overflow
)

// NewSource returns the subtasks of a source reading CSV or JSON-lines files in the Postgres text forms the file
// sink writes (see the package documentation, "File sources"). Configuration errors surface at Open.
func NewSource(cfg SourceConfig) func(subtask int) exec.Source {
	return func(int) exec.Source { return &fileSource{cfg: cfg} }
}

// checkSourceSchema reports a column whose type the file source cannot produce.
func checkSourceSchema(schema *arrow.Schema) error {
	if schema == nil {
		return errors.New("file source: no schema")
	}
	for _, f := range schema.Fields() {
		if _, err := planFSColumn(f); err != nil {
			return err
		}
	}
	return nil
}

// ---- columns: texts in, Arrow arrays out ----

type fsConv uint8

const (
	fcString    fsConv = iota // VARCHAR: the text itself, checked to be UTF-8
	fcCast                    // integers, DOUBLE, BOOLEAN, DECIMAL, BYTEA: the engine's CAST from text
	fcTimestamp               // expr.ParseTimestamp, then to the column's unit
	fcDate                    // expr.ParseDate
	fcInterval                // expr.ParseInterval (a DURATION), then to the column's unit
)

type fsColumn struct {
	name     string
	typ      arrow.DataType
	nullable bool
	conv     fsConv
	cast     expr.Expr  // fcCast: CAST($0 AS typ)
	mul, div int64      // fcTimestamp, fcInterval: microseconds to the unit
	text     textColumn // the rows' texts since the last batch
}

var fsTextSchema = arrow.NewSchema([]arrow.Field{{Name: "v", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)

func planFSColumn(f arrow.Field) (fsColumn, error) {
	col := fsColumn{name: f.Name, typ: f.Type, nullable: f.Nullable, mul: 1, div: 1}
	text := expr.Column(0, "v", arrow.BinaryTypes.String)
	var err error
	switch f.Type.ID() {
	case arrow.STRING:
		col.conv = fcString
	case arrow.BOOL, arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.FLOAT32, arrow.FLOAT64, arrow.DECIMAL128,
		arrow.BINARY:
		col.conv = fcCast
		col.cast, err = expr.Cast(text, f.Type)
	case arrow.TIMESTAMP:
		col.conv = fcTimestamp
		col.mul, col.div = fsMicrosTo(f.Type.(*arrow.TimestampType).Unit)
	case arrow.DATE32:
		col.conv = fcDate
	case arrow.DURATION:
		col.conv = fcInterval
		col.mul, col.div = fsMicrosTo(f.Type.(*arrow.DurationType).Unit)
	default:
		err = errors.New("no text input form")
	}
	if err != nil {
		return col, fmt.Errorf("file source: column %s: type %s cannot be read from text: %v", f.Name, f.Type, err)
	}
	return col, nil
}

func fsMicrosTo(u arrow.TimeUnit) (mul, div int64) {
	switch u {
	case arrow.Second:
		return 1, 1_000_000
	case arrow.Millisecond:
		return 1, 1000
	case arrow.Nanosecond:
		return 1000, 1
	}
	return 1, 1
}

// fsScale converts microseconds to a unit: multiplied (checked) or divided rounding half away from zero, as
// Postgres rounds a timestamp to a coarser precision.
func fsScale(us, mul, div int64) (int64, bool) {
	switch {
	case mul > 1:
		if us > math.MaxInt64/mul || us < math.MinInt64/mul {
			return 0, false
		}
		return us * mul, true
	case div > 1:
		q, r := us/div, us%div
		if 2*r >= div {
			q++
		} else if 2*r <= -div {
			q--
		}
		return q, true
	}
	return us, true
}

// fsBad is a row that cannot be read: a record that does not parse (row -1) or a value of column col of batch
// row row (a BadValue of TextDecoder, with its line).
type fsBad struct {
	row  int
	col  int
	line int64
	err  *sqlerr.Error
}

// ---- the source ----

type fileSource struct {
	cfg      SourceConfig
	fsys     state.FS
	alloc    memory.Allocator
	log      *slog.Logger
	errs     *exec.Counter
	sub, par int
	batch    int
	interval time.Duration
	fail     bool
	csv      bool
	opened   bool

	// Bounded: the list made at Open, its fingerprint, and the index of the file being read (or next to read);
	// next steps by par.
	files []filelist.File
	fp    uint64
	next  int
	// restBytes[i] is the size of the subtask's files i, i+par, ... (the bytes left from the start of file i).
	restBytes []int64

	// Follow: the files of this subtask read to their end (pruned to those still listed), cached encoded; the
	// files listed but not read yet, sorted; the file being read ("" for none).
	done    map[string]struct{}
	doneEnc []byte
	pending []filelist.File
	curName string
	// pendingBytes is the size of the pending files when listed, curSize the current file's when opened.
	pendingBytes, curSize int64
	nextList              time.Time
	wake                  chan struct{}
	timer                 *time.Timer

	// The position of the next record of the current file: byte offset and line number (1-based).
	pos  int64
	line int64

	restored *fsOffset
	cur      *fsReader
	buf      []byte
	logged   bool // a bad row of the current file was logged
	err      error

	TextDecoder         // the records' values, decoded column at a time
	lines       []int64 // per row of the batch being built: its line
	cctx        context.Context
	keepMask    []bool

	connectors.ReadProgress // the bytes not read yet of what was listed
}

var _ exec.SourceProgress = (*fileSource)(nil)

func (s *fileSource) Open(ctx *exec.TaskContext) error {
	cfg := &s.cfg
	if cfg.Path == "" {
		return errors.New("file source: no path")
	}
	if err := checkSourceSchema(cfg.Schema); err != nil {
		return err
	}
	switch cfg.Format {
	case "csv":
		s.csv = true
	case "json":
	default:
		return fmt.Errorf("file source: unknown format %q (want csv or json)", cfg.Format)
	}
	switch cfg.BadRows {
	case "", BadRowsSkip:
	case BadRowsFail:
		s.fail = true
	default:
		return fmt.Errorf("file source: bad-rows policy %q (want skip or fail)", cfg.BadRows)
	}
	if cfg.CSVHeader && !s.csv {
		return errors.New("file source: a header applies to CSV only")
	}
	if cfg.BatchRows < 0 || cfg.MonitorInterval < 0 {
		return errors.New("file source: negative batch size or monitor interval")
	}
	if err := connectors.CheckSubtask("file source", ctx); err != nil {
		return err
	}
	s.fsys, s.alloc = connectors.TaskFS(ctx), connectors.TaskAlloc(ctx)
	s.log = ctx.Log
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.errs = ctx.Errors
	s.sub, s.par = ctx.Subtask, ctx.Parallelism
	s.batch = cmp0(cfg.BatchRows, DefaultBatchRows)
	s.interval = cmp0(cfg.MonitorInterval, DefaultMonitorInterval)

	if o := s.restored; o != nil {
		if err := connectors.CheckOffsetSubtask("file source", o.sub, o.par, s.sub, s.par); err != nil {
			return err
		}
		if o.follow != cfg.Follow {
			return errors.New("file source: offset of a bounded source restored into a following one, or back: " +
				"restore with the same 'source.monitor-interval' setting")
		}
	}
	files, err := filelist.List(s.fsys, cfg.Path, "")
	if err == nil {
		err = filelist.Guard(cfg.Guard, files)
	}
	if err != nil {
		return fmt.Errorf("file source: %w", err)
	}
	s.pos, s.line = 0, 1
	if cfg.Follow {
		s.done = map[string]struct{}{}
		if o := s.restored; o != nil {
			for _, n := range o.done {
				s.done[n] = struct{}{}
			}
			s.curName, s.pos, s.line = o.cur, o.pos, o.line
		}
		s.applyListing(files)
	} else {
		s.files, s.fp = files, filelist.Fingerprint(files)
		s.next = s.sub
		if o := s.restored; o != nil {
			if err := filelist.CheckSame("file source", cfg.Path, o.files, o.fp, len(files), s.fp); err != nil {
				return err
			}
			if o.next < len(files) && o.next%s.par != s.sub {
				return fmt.Errorf("file source: offset (file %d) is not subtask %d's", o.next, s.sub)
			}
			s.next, s.pos, s.line = o.next, o.pos, o.line
		}
		s.restBytes = connectors.StridedRest(len(files), s.par, func(i int) int64 { return files[i].Size })
	}

	if err := s.TextDecoder.init(cfg.Schema, s.alloc); err != nil {
		return err
	}
	s.cctx = compute.WithAllocator(context.Background(), s.alloc)
	s.opened = true
	s.report()
	return nil
}

// report sets the progress: the bytes of what was listed that are not read yet (records and the total rows are
// not known before the files are parsed).
func (s *fileSource) report() {
	var left int64
	if s.cfg.Follow {
		left = s.pendingBytes
		if s.curName != "" {
			left += max(s.curSize-s.pos, 0)
		}
	} else if s.next < len(s.files) {
		left = s.restBytes[s.next] - s.pos
	}
	s.Set(-1, max(left, 0), -1)
}

func cmp0[T int | time.Duration](v, def T) T {
	if v == 0 {
		return def
	}
	return v
}

// fsOwner is the subtask that reads a file in follow mode: a stable hash (FNV-1a) of its path, modulo the
// parallelism, so that a file keeps its subtask however the list grows.
func fsOwner(name string, par int) int {
	h := fnv.New64a()
	h.Write([]byte(name))
	return int(h.Sum64() % uint64(par))
}

// applyListing takes a new listing in follow mode: the done set keeps only files still listed, and pending
// becomes this subtask's listed files that are neither done nor being read.
func (s *fileSource) applyListing(files []filelist.File) {
	listed := make(map[string]struct{}, len(files))
	s.pending, s.pendingBytes = s.pending[:0], 0
	for _, f := range files {
		if fsOwner(f.Name, s.par) != s.sub {
			continue
		}
		listed[f.Name] = struct{}{}
		if _, ok := s.done[f.Name]; !ok && f.Name != s.curName {
			s.pending = append(s.pending, f) // files are sorted
			s.pendingBytes += f.Size
		}
	}
	for n := range s.done {
		if _, ok := listed[n]; !ok {
			delete(s.done, n)
			s.doneEnc = nil
		}
	}
	s.nextList = time.Now().Add(s.interval)
	if s.timer != nil {
		s.timer.Stop()
		s.timer, s.wake = nil, nil
	}
}

// IdleWait is closed when the next listing is due (exec.IdleWaiter); a bounded source is never idle.
func (s *fileSource) IdleWait() <-chan struct{} {
	if !s.cfg.Follow || !s.opened {
		return nil
	}
	if s.wake == nil {
		ch := make(chan struct{})
		s.wake = ch
		s.timer = time.AfterFunc(max(time.Until(s.nextList), 0), func() { close(ch) })
	}
	return s.wake
}

func (s *fileSource) Close() error {
	s.closeFile()
	if s.timer != nil {
		s.timer.Stop()
		s.timer, s.wake = nil, nil
	}
	s.TextDecoder.Release()
	s.opened = false
	return nil
}

// ---- offsets ----

const fsOffsetVersion = 1

type fsOffset struct {
	follow    bool
	sub, par  int
	files     int    // bounded
	fp        uint64 // bounded
	next      int    // bounded
	cur       string // follow
	done      []string
	pos, line int64
}

func (s *fileSource) RestoreOffset(b []byte) error {
	return connectors.RestoreOffset(&s.restored, b, decodeFSOffset)
}

// SnapshotOffset encodes a version byte, a mode byte (0 bounded, 1 follow), uvarints subtask and parallelism;
// bounded: uvarint file count, the 8-byte list fingerprint, uvarints file index, byte offset and line; follow:
// the current file's name (uvarint length, bytes; empty for none), uvarints byte offset and line, then the done
// files sorted and front-coded (uvarints shared prefix length and suffix length, the suffix).
func (s *fileSource) SnapshotOffset() ([]byte, error) {
	if !s.opened {
		return nil, errors.New("file source: snapshot before open")
	}
	b := make([]byte, 0, 48)
	b = append(b, fsOffsetVersion)
	if !s.cfg.Follow {
		b = filelist.AppendPos(append(b, 0), s.sub, s.par, len(s.files), s.fp, s.next)
		b = binary.AppendUvarint(b, uint64(s.pos))
		return binary.AppendUvarint(b, uint64(s.line)), nil
	}
	b = append(b, 1)
	b = binary.AppendUvarint(b, uint64(s.sub))
	b = binary.AppendUvarint(b, uint64(s.par))
	b = binary.AppendUvarint(b, uint64(len(s.curName)))
	b = append(b, s.curName...)
	b = binary.AppendUvarint(b, uint64(s.pos))
	b = binary.AppendUvarint(b, uint64(s.line))
	if s.doneEnc == nil {
		names := make([]string, 0, len(s.done))
		for n := range s.done {
			names = append(names, n)
		}
		slices.Sort(names)
		enc := binary.AppendUvarint(make([]byte, 0, 16*len(names)+1), uint64(len(names)))
		prev := ""
		for _, n := range names {
			k := 0
			for k < len(prev) && k < len(n) && prev[k] == n[k] {
				k++
			}
			enc = binary.AppendUvarint(enc, uint64(k))
			enc = binary.AppendUvarint(enc, uint64(len(n)-k))
			enc = append(enc, n[k:]...)
			prev = n
		}
		s.doneEnc = enc
	}
	return append(b, s.doneEnc...), nil
}

func decodeFSOffset(b []byte) (fsOffset, error) {
	bad := fmt.Errorf("file source: unreadable offset (%d bytes)", len(b))
	if len(b) < 2 || b[0] != fsOffsetVersion || b[1] > 1 {
		return fsOffset{}, bad
	}
	o := fsOffset{follow: b[1] == 1}
	r := filelist.NewOffsetReader(b[2:])
	o.sub, o.par = int(r.Uvarint(math.MaxInt32)), int(r.Uvarint(math.MaxInt32))
	if !o.follow {
		o.files = int(r.Uvarint(math.MaxInt32))
		o.fp = r.Fixed64()
		o.next = int(r.Uvarint(math.MaxInt32))
	} else {
		o.cur = r.Str()
	}
	o.pos, o.line = r.Uvarint(math.MaxInt64), r.Uvarint(math.MaxInt64)
	if o.follow && r.OK() {
		n := r.Uvarint(uint64(r.Len()))
		prev := ""
		for i := int64(0); i < n && r.OK(); i++ {
			k := r.Uvarint(uint64(len(prev)))
			suffix := r.Str()
			name := prev[:k] + suffix
			if r.OK() && name <= prev && i > 0 {
				r.Fail()
			}
			o.done = append(o.done, name)
			prev = name
		}
	}
	if !r.Done() || o.line < 1 || o.par < 1 || o.sub >= o.par {
		return fsOffset{}, bad
	}
	return o, nil
}

// ---- reading ----

// fsReader is a buffered reader over one file that knows the byte offset and line of what it has not consumed.
type fsReader struct {
	f    state.File
	name string
	buf  []byte
	r, w int // buf[r:w] is read but not consumed
	eof  bool
	off  int64 // file offset of buf[r]
	line int64 // line number at buf[r]
}

const fsReadBuf = 256 << 10

// fill reads more of the file behind the unconsumed bytes, growing the buffer when a record fills it.
func (rd *fsReader) fill() error {
	if rd.r > 0 {
		copy(rd.buf, rd.buf[rd.r:rd.w])
		rd.w -= rd.r
		rd.r = 0
	}
	if rd.w == len(rd.buf) {
		rd.buf = slices.Grow(rd.buf[:rd.w], len(rd.buf))[:2*len(rd.buf)]
	}
	for range 100 {
		n, err := rd.f.Read(rd.buf[rd.w:])
		rd.w += n
		if errors.Is(err, io.EOF) {
			rd.eof = true
			return nil
		}
		if err != nil || n > 0 {
			return err
		}
	}
	return io.ErrNoProgress
}

func (rd *fsReader) consume(n, nl int) {
	rd.r += n
	rd.off += int64(n)
	rd.line += int64(nl)
}

// Produce returns the next batch of the current file, moving on to the next file at the end of one; a following
// source is Idle when it has read everything listed and the next listing is not due yet.
func (s *fileSource) Produce(context.Context) (exec.SourceResult, error) {
	if !s.opened {
		return exec.SourceResult{}, errors.New("file source: produce before open")
	}
	defer s.report()
	if s.err != nil {
		return exec.SourceResult{}, s.err
	}
	for {
		if s.cur == nil {
			name, st, err := s.nextFile()
			if err != nil {
				s.err = err
				return exec.SourceResult{}, err
			}
			switch st {
			case exec.Finished, exec.Idle:
				return exec.SourceResult{Status: st, WM: exec.MinWatermark}, nil
			}
			if name == "" {
				continue // a following source skipped a file that vanished before it was read
			}
		}
		rec, err := s.readBatch()
		if err != nil {
			s.err = err
			return exec.SourceResult{}, err
		}
		if rec != nil {
			return exec.SourceResult{Status: exec.Produced, Batch: exec.Batch{Rec: rec}, WM: exec.MinWatermark}, nil
		}
	}
}

// nextFile opens the file to read next, at the current position. It returns the status Produce returns when
// there is none; an empty name with status Produced means try again.
func (s *fileSource) nextFile() (string, exec.SourceStatus, error) {
	var name string
	var size int64 = -1
	if !s.cfg.Follow {
		if s.next >= len(s.files) {
			return "", exec.Finished, nil
		}
		name, size = s.files[s.next].Name, s.files[s.next].Size
	} else {
		if s.curName == "" {
			if !time.Now().Before(s.nextList) {
				files, err := filelist.List(s.fsys, s.cfg.Path, "")
				if err == nil {
					err = filelist.Guard(s.cfg.Guard, files)
				}
				if err != nil {
					return "", 0, fmt.Errorf("file source: %w", err)
				}
				s.applyListing(files)
			}
			if len(s.pending) == 0 {
				return "", exec.Idle, nil
			}
			s.curName, s.curSize, s.pending = s.pending[0].Name, s.pending[0].Size, s.pending[1:]
			s.pendingBytes -= s.curSize
			s.pos, s.line = 0, 1
		}
		name = s.curName
	}
	rd, err := s.openFile(name, size)
	if err != nil {
		if s.cfg.Follow && s.pos == 0 && errors.Is(err, fs.ErrNotExist) {
			s.log.Warn("file source: a listed file disappeared before it was read; skipping it", "file", name)
			s.curName = ""
			return "", exec.Produced, nil
		}
		return "", 0, fmt.Errorf("file source: %s: %w", name, err)
	}
	s.cur, s.logged = rd, false
	if s.pos == 0 && s.csv && s.cfg.CSVHeader {
		// The header is one record, whatever it holds; a restored position is past it already.
		if _, _, err := s.csvNext(rd); err != nil {
			rd.f.Close()
			s.cur = nil
			return "", 0, fmt.Errorf("file source: %s: %w", name, err)
		}
		s.pos, s.line = rd.off, rd.line
	}
	return name, exec.Produced, nil
}

// openFile opens a file positioned at s.pos; size >= 0 is the size it had when listed.
func (s *fileSource) openFile(name string, size int64) (*fsReader, error) {
	if err := s.cfg.Guard.Check(name); err != nil {
		return nil, err
	}
	st, err := s.fsys.Stat(name)
	if err != nil {
		return nil, err
	}
	if size >= 0 && st.Size() != size {
		return nil, fmt.Errorf("size changed from %d to %d bytes since the file list was made", size, st.Size())
	}
	if s.pos > st.Size() {
		return nil, fmt.Errorf("the offset %d is beyond the file's %d bytes", s.pos, st.Size())
	}
	s.curSize = st.Size()
	f, err := s.fsys.Open(name)
	if err != nil {
		return nil, err
	}
	if s.pos > 0 {
		if sk, ok := f.(io.Seeker); ok {
			_, err = sk.Seek(s.pos, io.SeekStart)
		} else {
			_, err = io.CopyN(io.Discard, f, s.pos)
		}
		if err != nil {
			f.Close()
			return nil, err
		}
	}
	if s.buf == nil {
		s.buf = make([]byte, fsReadBuf)
	}
	return &fsReader{f: f, name: name, buf: s.buf, off: s.pos, line: s.line}, nil
}

func (s *fileSource) closeFile() {
	if s.cur != nil {
		s.cur.f.Close()
		s.buf = s.cur.buf // keep a grown buffer
		s.cur = nil
	}
}

// fileDone moves past the current file after its last record.
func (s *fileSource) fileDone() {
	s.closeFile()
	s.pos, s.line = 0, 1
	if !s.cfg.Follow {
		s.next += s.par
		return
	}
	s.done[s.curName] = struct{}{}
	s.doneEnc = nil
	s.curName = ""
}

type recStatus uint8

const (
	recRow  recStatus = iota // a row, appended to the column texts
	recEnd                   // no more records in the file
	recBad                   // a record that cannot be read (consumed)
	recNone                  // nothing to read (a blank JSON line, consumed)
)

// readBatch reads up to a batch of rows of the current file and converts them. It returns nil when the file ended
// without another row to produce; the position moves past every record consumed, bad ones included.
func (s *fileSource) readBatch() (arrow.RecordBatch, error) {
	rd := s.cur
	rows := 0
	s.lines = s.lines[:0]
	s.Reserve(s.batch)
	var stop *fsBad // fail mode: the record that ends the batch
	eof := false
loop:
	for rows < s.batch {
		line := rd.line
		var st recStatus
		var bad *sqlerr.Error
		var err error
		if s.csv {
			st, bad, err = s.csvRow(rd)
		} else {
			st, bad, err = s.jsonRow(rd)
		}
		if err != nil {
			s.Discard()
			return nil, fmt.Errorf("file source: %s: %w", rd.name, err)
		}
		switch st {
		case recRow:
			s.lines = append(s.lines, line)
			rows++
		case recEnd:
			eof = true
			break loop
		case recBad:
			b := fsBad{row: -1, col: -1, line: line, err: bad}
			if s.fail {
				stop = &b
				break loop
			}
			s.skipped(b, 1)
		}
	}
	rec, bvs, err := s.Batch(rows)
	if err != nil {
		return nil, fmt.Errorf("file source: %s: %w", rd.name, err)
	}
	bads := make([]fsBad, len(bvs))
	for i, b := range bvs {
		bads[i] = fsBad{row: b.Row, col: b.Col, line: s.lines[b.Row], err: b.Err}
	}
	if s.fail && (len(bads) > 0 || stop != nil) {
		rec.Release()
		if len(bads) > 0 {
			return nil, s.badError(bads[0])
		}
		return nil, s.badError(*stop)
	}
	s.pos, s.line = rd.off, rd.line
	if len(bads) > 0 {
		rec, err = s.dropRows(rec, bads)
		if err != nil {
			return nil, err
		}
	}
	if eof {
		s.fileDone()
	}
	if rec.NumRows() == 0 {
		rec.Release()
		return nil, nil
	}
	return rec, nil
}

// skipped counts n bad rows and logs the first of the current file.
func (s *fileSource) skipped(b fsBad, n int) {
	s.errs.Add(int64(n))
	if s.logged {
		return
	}
	s.logged = true
	attrs := []any{"file", s.cur.name, "line", b.line}
	if b.col >= 0 {
		attrs = append(attrs, "column", s.cols[b.col].name)
	}
	attrs = append(attrs, "error", b.err.Msg)
	s.log.Warn("file source: skipping rows that cannot be read (counted in the job's errors; logged once per file)", attrs...)
}

// badError is the error of a bad row in fail mode: a data error (class 22, so the job fails rather than
// restarting) naming the file, the line and the column.
func (s *fileSource) badError(b fsBad) error {
	where := fmt.Sprintf("%s:%d", s.cur.name, b.line)
	msg := b.err.Msg
	if b.col >= 0 {
		msg = fmt.Sprintf("column %s: %s", strconv.Quote(s.cols[b.col].name), msg)
	}
	return &sqlerr.Error{Code: b.err.Code, Pos: sqlerr.NoPos, Msg: "file source: " + where + ": " + msg, Err: b.err}
}

// dropRows removes the rows of bads (sorted by row; the first has its error) from rec, counting and logging them.
func (s *fileSource) dropRows(rec arrow.RecordBatch, bads []fsBad) (arrow.RecordBatch, error) {
	defer rec.Release()
	n := int(rec.NumRows())
	s.keepMask = slices.Grow(s.keepMask[:0], n)[:n]
	for i := range s.keepMask {
		s.keepMask[i] = true
	}
	dropped := 0
	for _, b := range bads {
		if s.keepMask[b.row] {
			s.keepMask[b.row] = false
			dropped++
		}
	}
	s.skipped(bads[0], dropped)
	mb := array.NewBooleanBuilder(s.alloc)
	defer mb.Release()
	mb.AppendValues(s.keepMask, nil)
	mask := mb.NewArray()
	defer mask.Release()
	out, err := compute.FilterRecordBatch(s.cctx, rec, mask, compute.DefaultFilterOptions())
	if err != nil {
		return nil, fmt.Errorf("file source: dropping bad rows: %w", err)
	}
	return out, nil
}

// ---- CSV ----

// csvField is one field of a record: bytes [start, end) of the record's data, or of the parser's scratch when the
// record had quotes; quoted is whether a quote appeared in it (COPY's rule: only an unquoted empty field is NULL).
type csvField struct {
	start, end      int
	scratch, quoted bool
}

type csvParser struct {
	fields  []csvField
	scratch []byte
	data    []byte // the record's bytes, which unquoted fields point into
}

// parse reads the record at the start of data. It returns the bytes and newlines the record spans; recNone when
// data ends before the record does (and more may come).
func (p *csvParser) parse(data []byte, atEOF bool) (n, nl int, st recStatus, bad *sqlerr.Error) {
	p.fields = p.fields[:0]
	if len(data) == 0 {
		if atEOF {
			return 0, 0, recEnd, nil
		}
		return 0, 0, recNone, nil
	}
	i := bytes.IndexByte(data, '\n')
	var line []byte
	switch {
	case i >= 0:
		line, n, nl = data[:i], i+1, 1
	case atEOF:
		line, n = data, len(data)
	default:
		return 0, 0, recNone, nil
	}
	if bytes.IndexByte(line, '"') >= 0 {
		return p.parseQuoted(data, atEOF)
	}
	if k := len(line) - 1; k >= 0 && line[k] == '\r' {
		line = line[:k]
	}
	start := 0
	for {
		j := bytes.IndexByte(line[start:], ',')
		if j < 0 {
			p.fields = append(p.fields, csvField{start: start, end: len(line)})
			return n, nl, recRow, nil
		}
		p.fields = append(p.fields, csvField{start: start, end: start + j})
		start += j + 1
	}
}

// parseQuoted is parse for a record with quotes, which may span lines: Postgres' CSV rules (a quote anywhere in
// a field opens a quoted part, "" inside one is a quote, the record ends at a newline outside quotes, \r\n ends
// it as \n does). The fields go to scratch.
func (p *csvParser) parseQuoted(data []byte, atEOF bool) (n, nl int, st recStatus, bad *sqlerr.Error) {
	p.scratch = p.scratch[:0]
	start, quoted, inQuote := 0, false, false
	field := func() {
		p.fields = append(p.fields, csvField{start: start, end: len(p.scratch), scratch: true, quoted: quoted})
		start, quoted = len(p.scratch), false
	}
	for i := 0; i < len(data); {
		if inQuote {
			j := bytes.IndexByte(data[i:], '"')
			if j < 0 {
				nl += bytes.Count(data[i:], []byte{'\n'})
				break
			}
			seg := data[i : i+j]
			nl += bytes.Count(seg, []byte{'\n'})
			p.scratch = append(p.scratch, seg...)
			i += j
			switch {
			case i+1 < len(data) && data[i+1] == '"':
				p.scratch = append(p.scratch, '"')
				i += 2
			case i+1 == len(data) && !atEOF:
				return 0, 0, recNone, nil // is the quote doubled?
			default:
				inQuote = false
				i++
			}
			continue
		}
		switch c := data[i]; c {
		case '"':
			inQuote, quoted = true, true
			i++
		case ',':
			field()
			i++
		case '\n':
			field()
			return i + 1, nl + 1, recRow, nil
		case '\r':
			switch {
			case i+1 < len(data) && data[i+1] == '\n':
				field()
				return i + 2, nl + 1, recRow, nil
			case i+1 == len(data) && !atEOF:
				return 0, 0, recNone, nil
			case i+1 == len(data):
				field()
				return i + 1, nl, recRow, nil
			}
			p.scratch = append(p.scratch, c)
			i++
		default:
			p.scratch = append(p.scratch, c)
			i++
		}
	}
	if !atEOF {
		return 0, 0, recNone, nil
	}
	if inQuote {
		return len(data), nl, recBad, sqlerr.New(codeBadCopyFormat, sqlerr.NoPos, "unterminated CSV quoted field")
	}
	field()
	return len(data), nl, recRow, nil
}

// csvNext parses the next record of rd into s.csvp and consumes it; the fields stay valid until the next read.
// recBad comes with its error.
func (s *fileSource) csvNext(rd *fsReader) (recStatus, *sqlerr.Error, error) {
	for {
		n, nl, st, bad := s.csvp.parse(rd.buf[rd.r:rd.w], rd.eof)
		if st == recNone {
			if err := rd.fill(); err != nil {
				return 0, nil, err
			}
			continue
		}
		if st != recEnd {
			s.csvp.data = rd.buf[rd.r : rd.r+n]
			rd.consume(n, nl)
		}
		return st, bad, nil
	}
}

// csvRow reads the next CSV record and appends its fields to the column texts.
func (s *fileSource) csvRow(rd *fsReader) (recStatus, *sqlerr.Error, error) {
	st, bad, err := s.csvNext(rd)
	if err != nil || st != recRow {
		return st, bad, err
	}
	if bad := s.appendCSV(); bad != nil {
		return recBad, bad, nil
	}
	return recRow, nil, nil
}

// ---- JSON lines ----

// jsonSlot is the value a line gave one column: bytes [start, end) of the line or of the scratch.
type jsonSlot struct {
	set, null, scratch bool
	start, end         int
}

type jsonParser struct {
	slots   []jsonSlot
	scratch []byte
	lower   []byte
	exact   map[string]int
	folded  map[string]int
	depth   int
	// names are the columns' names; seen[k] the column the k-th key of the last object named exactly (-1: none),
	// the first guess for the k-th key of the next one (records of a stream repeat their keys' order).
	names [][]byte
	seen  []int
	// ignored takes the values of keys that name no column.
	ignored jsonSlot
}

const jsonMaxDepth = 512

func (p *jsonParser) init(schema *arrow.Schema) {
	p.slots = make([]jsonSlot, schema.NumFields())
	p.exact = map[string]int{}
	p.folded = map[string]int{}
	p.names = make([][]byte, schema.NumFields())
	for i, f := range schema.Fields() {
		p.names[i] = []byte(f.Name)
		if _, ok := p.exact[f.Name]; !ok {
			p.exact[f.Name] = i
		}
		if _, ok := p.folded[strings.ToLower(f.Name)]; !ok {
			p.folded[strings.ToLower(f.Name)] = i
		}
	}
}

// keyColumn finds the column the k-th key of an object names (column), trying first the column the k-th key of
// the last object named exactly.
func (p *jsonParser) keyColumn(k int, key []byte) int {
	if k < len(p.seen) {
		if c := p.seen[k]; c >= 0 && bytes.Equal(p.names[c], key) {
			return c
		}
	}
	c, exact := p.column(key)
	if k < len(p.seen) {
		p.seen[k] = -1
		if exact {
			p.seen[k] = c
		}
	} else if k == len(p.seen) && k < 4*len(p.names)+4 {
		p.seen = append(p.seen, -1)
		if exact {
			p.seen[k] = c
		}
	}
	return c
}

// column finds the column a key names: exactly (exact true), else case-insensitively; -1 for none.
func (p *jsonParser) column(key []byte) (c int, exact bool) {
	if c, ok := p.exact[string(key)]; ok {
		return c, true
	}
	return p.columnFolded(key), false
}

func (p *jsonParser) columnFolded(key []byte) int {
	p.lower = p.lower[:0]
	for _, ch := range key {
		if ch >= utf8.RuneSelf {
			c, ok := p.folded[strings.ToLower(string(key))]
			if !ok {
				return -1
			}
			return c
		}
		if 'A' <= ch && ch <= 'Z' {
			ch += 'a' - 'A'
		}
		p.lower = append(p.lower, ch)
	}
	if c, ok := p.folded[string(p.lower)]; ok {
		return c
	}
	return -1
}

func jsonSyntax(i int, format string, args ...any) *sqlerr.Error {
	return sqlerr.New(sqlerr.InvalidTextRep, sqlerr.NoPos, "invalid JSON at character %d: %s", i+1, fmt.Sprintf(format, args...))
}

func jsonWS(line []byte, i int) int {
	for i < len(line) {
		switch line[i] {
		case ' ', '\t', '\r', '\n':
			i++
		default:
			return i
		}
	}
	return i
}

// parse reads one line: blank when it holds only white space, otherwise one object whose values land in slots.
func (p *jsonParser) parse(line []byte) (blank bool, bad *sqlerr.Error) {
	for i := range p.slots {
		p.slots[i].set = false
	}
	p.scratch = p.scratch[:0]
	i := jsonWS(line, 0)
	if i == len(line) {
		return true, nil
	}
	if line[i] != '{' {
		return false, jsonSyntax(i, "a line must hold one JSON object")
	}
	i = jsonWS(line, i+1)
	if i < len(line) && line[i] == '}' {
		i++
	} else {
		for k := 0; ; k++ {
			if i >= len(line) || line[i] != '"' {
				return false, jsonSyntax(i, "expected a string key")
			}
			ks, ke, inScratch, j, bad := p.str(line, i)
			if bad != nil {
				return false, bad
			}
			key := line[ks:ke]
			if inScratch {
				key = p.scratch[ks:ke]
			}
			col := p.keyColumn(k, key)
			i = jsonWS(line, j)
			if i >= len(line) || line[i] != ':' {
				return false, jsonSyntax(i, "expected ':'")
			}
			i = jsonWS(line, i+1)
			dst := &p.ignored
			if col >= 0 {
				dst = &p.slots[col] // a repeated key: the last one wins
			}
			j, bad = p.value(line, i, dst)
			if bad != nil {
				return false, bad
			}
			i = jsonWS(line, j)
			if i < len(line) && line[i] == ',' {
				i = jsonWS(line, i+1)
				continue
			}
			if i < len(line) && line[i] == '}' {
				i++
				break
			}
			return false, jsonSyntax(i, "expected ',' or '}'")
		}
	}
	if i = jsonWS(line, i); i != len(line) {
		return false, jsonSyntax(i, "data after the object")
	}
	return false, nil
}

// value reads the JSON value at line[i] into dst: a string's contents, null, or the text of anything else
// (true, false, numbers, and nested objects and arrays, checked).
func (p *jsonParser) value(line []byte, i int, dst *jsonSlot) (int, *sqlerr.Error) {
	if i >= len(line) {
		return i, jsonSyntax(i, "expected a value")
	}
	switch c := line[i]; {
	case c == '"':
		s, e, sc, j, bad := p.str(line, i)
		*dst = jsonSlot{set: true, scratch: sc, start: s, end: e}
		return j, bad
	case c == 'n':
		if bytes.HasPrefix(line[i:], []byte("null")) {
			*dst = jsonSlot{set: true, null: true}
			return i + 4, nil
		}
	case c == 't':
		if bytes.HasPrefix(line[i:], []byte("true")) {
			*dst = jsonSlot{set: true, start: i, end: i + 4}
			return i + 4, nil
		}
	case c == 'f':
		if bytes.HasPrefix(line[i:], []byte("false")) {
			*dst = jsonSlot{set: true, start: i, end: i + 5}
			return i + 5, nil
		}
	case c == '-' || '0' <= c && c <= '9':
		j, ok := jsonNumber(line, i)
		if !ok {
			return j, jsonSyntax(j, "malformed number")
		}
		*dst = jsonSlot{set: true, start: i, end: j}
		return j, nil
	case c == '{' || c == '[':
		j, bad := p.skipComposite(line, i)
		*dst = jsonSlot{set: true, start: i, end: j}
		return j, bad
	}
	return i, jsonSyntax(i, "expected a value")
}

func jsonNumber(line []byte, i int) (int, bool) {
	digits := func() bool {
		k := i
		for i < len(line) && '0' <= line[i] && line[i] <= '9' {
			i++
		}
		return i > k
	}
	if line[i] == '-' {
		i++
	}
	if i < len(line) && line[i] == '0' {
		i++
	} else if !digits() {
		return i, false
	}
	if i < len(line) && line[i] == '.' {
		i++
		if !digits() {
			return i, false
		}
	}
	if i < len(line) && (line[i] == 'e' || line[i] == 'E') {
		i++
		if i < len(line) && (line[i] == '+' || line[i] == '-') {
			i++
		}
		if !digits() {
			return i, false
		}
	}
	return i, true
}

// skipComposite checks the object or array at line[i] and returns the index after it.
func (p *jsonParser) skipComposite(line []byte, i int) (int, *sqlerr.Error) {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > jsonMaxDepth {
		return i, jsonSyntax(i, "nested too deeply")
	}
	obj := line[i] == '{'
	end := byte(']')
	if obj {
		end = '}'
	}
	i = jsonWS(line, i+1)
	if i < len(line) && line[i] == end {
		return i + 1, nil
	}
	for {
		if obj {
			if i >= len(line) || line[i] != '"' {
				return i, jsonSyntax(i, "expected a string key")
			}
			_, _, _, j, bad := p.str(line, i)
			if bad != nil {
				return j, bad
			}
			if i = jsonWS(line, j); i >= len(line) || line[i] != ':' {
				return i, jsonSyntax(i, "expected ':'")
			}
			i = jsonWS(line, i+1)
		}
		j, bad := p.value(line, i, &p.ignored)
		if bad != nil {
			return j, bad
		}
		i = jsonWS(line, j)
		if i < len(line) && line[i] == ',' {
			i = jsonWS(line, i+1)
			continue
		}
		if i < len(line) && line[i] == end {
			return i + 1, nil
		}
		return i, jsonSyntax(i, "expected ',' or '%c'", end)
	}
}

// str reads the string at line[i] (a quote): its contents are line[start:end], or scratch[start:end] when it had
// escapes; next is the index after the closing quote. Lone surrogates become U+FFFD, as encoding/json does.
func (p *jsonParser) str(line []byte, i int) (start, end int, inScratch bool, next int, bad *sqlerr.Error) {
	j := i + 1
	// Eight bytes at a time while none is a quote, a backslash or a control character.
	for j+8 <= len(line) && !jsonStrStop(binary.LittleEndian.Uint64(line[j:])) {
		j += 8
	}
	for j < len(line) {
		c := line[j]
		if c == '"' {
			return i + 1, j, false, j + 1, nil
		}
		if c == '\\' || c < 0x20 {
			break
		}
		j++
	}
	start = len(p.scratch)
	p.scratch = append(p.scratch, line[i+1:j]...)
	for j < len(line) {
		c := line[j]
		switch {
		case c == '"':
			return start, len(p.scratch), true, j + 1, nil
		case c < 0x20:
			return 0, 0, false, j, jsonSyntax(j, "control character in a string")
		case c != '\\':
			p.scratch = append(p.scratch, c)
			j++
			continue
		}
		if j+1 >= len(line) {
			break
		}
		switch e := line[j+1]; e {
		case '"', '\\', '/':
			p.scratch = append(p.scratch, e)
		case 'b':
			p.scratch = append(p.scratch, '\b')
		case 'f':
			p.scratch = append(p.scratch, '\f')
		case 'n':
			p.scratch = append(p.scratch, '\n')
		case 'r':
			p.scratch = append(p.scratch, '\r')
		case 't':
			p.scratch = append(p.scratch, '\t')
		case 'u':
			r, ok := jsonHex4(line, j+2)
			if !ok {
				return 0, 0, false, j, jsonSyntax(j, "malformed \\u escape")
			}
			j += 6
			if utf16.IsSurrogate(r) {
				if r2, ok := jsonHex4(line, j+2); ok && j+1 < len(line) && line[j] == '\\' && line[j+1] == 'u' {
					if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
						p.scratch = utf8.AppendRune(p.scratch, dec)
						j += 6
						continue
					}
				}
				r = utf8.RuneError
			}
			p.scratch = utf8.AppendRune(p.scratch, r)
			continue
		default:
			return 0, 0, false, j, jsonSyntax(j, "unknown escape \\%c", e)
		}
		j += 2
	}
	return 0, 0, false, j, jsonSyntax(j, "unterminated string")
}

// jsonStrStop reports whether one of the eight bytes of x is '"', '\\' or below 0x20 (the bytes that end the plain
// run of a JSON string).
func jsonStrStop(x uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	zero := func(v uint64) uint64 { return (v - ones) &^ v & highs } // a zero byte of v
	return (x-0x20*ones)&^x&highs|zero(x^'"'*ones)|zero(x^'\\'*ones) != 0
}

func jsonHex4(line []byte, i int) (rune, bool) {
	if i+4 > len(line) {
		return 0, false
	}
	var r rune
	for _, c := range line[i : i+4] {
		var d byte
		switch {
		case '0' <= c && c <= '9':
			d = c - '0'
		case 'a' <= c && c <= 'f':
			d = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			d = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(d)
	}
	return r, true
}

// jsonRow reads the next line and appends its values to the column texts: a missing key or null is NULL, unknown
// keys are ignored; a blank line is recNone.
func (s *fileSource) jsonRow(rd *fsReader) (recStatus, *sqlerr.Error, error) {
	for {
		data := rd.buf[rd.r:rd.w]
		i := bytes.IndexByte(data, '\n')
		n, nl := i+1, 1
		if i < 0 {
			if !rd.eof {
				if err := rd.fill(); err != nil {
					return 0, nil, err
				}
				continue
			}
			if len(data) == 0 {
				return recEnd, nil, nil
			}
			i, n, nl = len(data), len(data), 0
		}
		line := data[:i]
		rd.consume(n, nl)
		blank, bad := s.jsonp.parse(line)
		if bad != nil {
			return recBad, bad, nil
		}
		if blank {
			return recNone, nil, nil
		}
		s.appendJSON(line)
		return recRow, nil, nil
	}
}
