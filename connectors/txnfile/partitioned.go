package txnfile

import (
	"bufio"
	"container/list"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clinksql/clinksql/connectors"
	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/state"
)

// partWriteBuffer is the buffer in front of each open partition file: smaller than an unpartitioned sink's, as a
// subtask may hold MaxOpenWriters of them.
const partWriteBuffer = 64 << 10

// pendingStateKey is where a partitioned sink keeps, in its subtask's checkpointed state, the partitions it wrote
// that are not committed yet (pendingPartition, as JSON).
var pendingStateKey = state.OperatorKey("sink/partitions")

// PartitionedSink is the two-phase protocol of a partitioned file or Parquet sink (PARTITIONED BY): each row goes
// into the Hive-style directory its partition columns name (dt=2026-01-01/hm=10%3A30/), in files without the
// partition columns. The layout, for a sink with path P, job J, operator O, subtask S:
//
//	P/<dir>/J-O-S-N-K.ext                  committed: file K of the rows subtask S wrote into <dir> between barriers N-1 and N
//	P/<dir>/_SUCCESS                        the partition is committed (policy success-file)
//	P/_staging/J/J-O-S/<dir>/J-O-S-N-K.ext  staged at barrier N, waiting for checkpoint N to complete
//	P/_staging/J/J-O-S/<dir>/J-O-S-K.inprogress  file K of the open transaction (never read)
//
// Each subtask stages under its own directory, so that it alone creates and removes directories there. Between
// barriers a subtask keeps one open file per partition it writes, at most MaxOpenWriters: past them the least
// recently written one is finished (footer, fsync) and stays in progress until the barrier; a later row of that
// partition opens a new file K. At barrier N every file is finished, made durable and renamed to its staged name,
// and the staging directories are made durable: only then does the subtask ack. Commit(N) renames every staged
// file with an id <= N into P/<dir>/ (created, and its parent made durable, when new) without replacing, then
// makes each directory it renamed into durable; Open recovers as the unpartitioned sink does: a staged file whose
// checkpoint completed is committed, any other one deleted, in-progress files deleted.
//
// Partition commit (PartitionConfig.SuccessFile): a partition whose files were staged becomes pending; the set of
// pending partitions (with each one's time and the last checkpoint that staged a file of it) is written into the
// subtask's checkpointed state at every barrier, so a restart restores it (its files are committed by the
// recovery of Open, the restored checkpoint being complete). FinishCommit(N, wm) runs once every sink subtask
// committed N (exec.CommitFinisher): a pending partition all of whose files this subtask staged are in a
// checkpoint <= N is committed when its trigger holds: process-time, when the wall clock is Delay past the first
// FinishCommit that saw its files committed; partition-time, when wm (the minimum watermark over the node's
// subtasks at barrier N) >= the partition's time + Delay (a partition whose time cannot be extracted, a NULL key,
// waits for the end of input). Committing writes an empty success file and makes the directory durable; a file
// already there is left as it is, so commit is idempotent, and several subtasks may commit the same partition.
// Rows that arrive for a committed partition (late rows) go into new files of it; the partition is committed
// again, which finds its success file in place.
type PartitionedSink struct {
	kind   string
	path   string
	schema *arrow.Schema
	cfg    PartitionConfig
	newEnc func() Encoder
	// Guard confines the directories and files the sink creates.
	Guard connectors.PathGuard

	keyIdx     []int
	keyNames   [][]byte // "name=", escaped
	dataIdx    []int
	dataSchema *arrow.Schema
	ext        string

	fsys      state.FS
	alloc     memory.Allocator
	backend   state.Backend
	log       *slog.Logger
	sub       int
	jobOp     string // "<job>-<op>-"
	root      string // P/_staging/<job>/<job>-<op>-<sub>: the subtask's staging tree
	subPrefix string // "<job>-<op>-<sub>-": the prefix of the subtask's file names

	// mu guards the open transaction: Write and PreCommit run on the subtask goroutine; Close may come from another.
	mu       sync.Mutex
	writers  map[string]*partWriter // open files by partition directory
	lru      list.List              // of *partWriter, most recently written first
	finished []*partWriter          // finished before the barrier (evicted), still under their in-progress names
	seq      int                    // the next file number K of the transaction
	encs     []Encoder              // idle encoders, initialized
	bufs     []*bufio.Writer
	cols     []partitionColumn
	key, val []byte
	groups   map[string]int
	groupDir []string
	groupRow [][]int32

	// stageMu guards the staged files, which Commit and Abort touch from the coordinator's goroutine.
	stageMu sync.Mutex
	staged  []stagedPart    // ascending checkpoint ids
	emptied map[string]bool // staging directories whose files were all published: removed at the next barrier

	// pendMu guards the partitions waiting for their commit (PreCommit adds, FinishCommit removes).
	pendMu  sync.Mutex
	pending map[string]*pendingPartition
	connectors.Committed
}

var (
	_ exec.Sink           = (*PartitionedSink)(nil)
	_ exec.CommitFinisher = (*PartitionedSink)(nil)
	_ exec.PublishChecker = (*PartitionedSink)(nil)
	_ exec.SinkProgress   = (*PartitionedSink)(nil)
)

// partWriter is one open (or finished, not yet staged) file of a partition.
type partWriter struct {
	dir        string
	seq        int
	inprogress string
	file       state.File
	out        countingWriter
	buf        *bufio.Writer
	enc        Encoder
	elem       *list.Element
	bytes      int64 // once finished
	ptime      int64 // the partition's time (PartitionTime), valid when hasTime
	hasTime    bool
}

// stagedPart is a staged file: P/_staging/J/J-O-S/<dir>/<name>.
type stagedPart struct {
	id    uint64
	dir   string
	name  string
	bytes int64
}

// pendingPartition is a partition that has files and no success file yet, as the checkpointed state holds it.
type pendingPartition struct {
	Dir string `json:"dir"`
	// Last is the highest checkpoint that staged a file of the partition.
	Last uint64 `json:"last"`
	// Time is the partition's time in microseconds (PartitionTime), valid when HasTime.
	Time    int64 `json:"time,omitempty"`
	HasTime bool  `json:"has_time,omitempty"`
	// Committed is when a FinishCommit first saw all its files committed (process-time), Unix microseconds; 0: not
	// yet.
	Committed int64 `json:"committed,omitempty"`
}

// NewPartitioned returns the protocol of a partitioned sink of the given kind ("file", "parquet") writing into
// path: newEnc makes the encoder of one file (each open partition has its own), for the columns that are not
// partition keys. Set Guard before Open.
func NewPartitioned(kind, path string, schema *arrow.Schema, cfg PartitionConfig, newEnc func() Encoder) *PartitionedSink {
	if cfg.MaxOpenWriters <= 0 {
		cfg.MaxOpenWriters = DefaultMaxOpenWriters
	}
	if cfg.DefaultName == "" {
		cfg.DefaultName = DefaultPartitionName
	}
	if cfg.SuccessFileName == "" {
		cfg.SuccessFileName = "_SUCCESS"
	}
	return &PartitionedSink{kind: kind, path: path, schema: schema, cfg: cfg, newEnc: newEnc}
}

func (s *PartitionedSink) errorf(format string, args ...any) error {
	return fmt.Errorf("%s sink %s: "+format, append([]any{s.kind, s.path}, args...)...)
}

// Open checks the configuration, recovers what earlier incarnations of this subtask staged (subtask 0 also those of
// subtasks at or above the parallelism), and restores the pending partitions from the checkpointed state.
func (s *PartitionedSink) Open(ctx *exec.TaskContext) error {
	if s.schema == nil {
		return s.errorf("no schema")
	}
	if len(s.cfg.Keys) == 0 {
		return s.errorf("no partition columns")
	}
	s.keyIdx, s.dataIdx, s.keyNames = nil, nil, nil
	var fields []arrow.Field
	for i, f := range s.schema.Fields() {
		if slices.Contains(s.cfg.Keys, f.Name) {
			continue
		}
		s.dataIdx = append(s.dataIdx, i)
		fields = append(fields, f)
	}
	for _, k := range s.cfg.Keys {
		i := slices.IndexFunc(s.schema.Fields(), func(f arrow.Field) bool { return f.Name == k })
		if i < 0 {
			return s.errorf("partition column %s is not a column of the sink", k)
		}
		if err := connectors.PartitionKeyType(s.schema.Field(i).Type); err != nil {
			return s.errorf("partition column %s: %v", k, err)
		}
		s.keyIdx = append(s.keyIdx, i)
		s.keyNames = append(s.keyNames, append(AppendEscaped(nil, []byte(k)), '='))
	}
	if len(fields) == 0 {
		return s.errorf("every column is a partition column")
	}
	s.dataSchema = arrow.NewSchema(fields, nil)
	enc := s.newEnc()
	if err := enc.Init(s.dataSchema); err != nil {
		return s.errorf("%v", err)
	}
	s.ext = enc.Ext()
	s.encs = append(s.encs[:0], enc)
	s.fsys = ctx.FS
	if s.fsys == nil {
		s.fsys = state.OS
	}
	s.alloc = ctx.Alloc
	if s.alloc == nil {
		s.alloc = memory.DefaultAllocator
	}
	s.backend, s.log = ctx.State, ctx.Log
	if s.log == nil {
		s.log = slog.Default()
	}
	s.sub = ctx.Subtask
	if err := checkNameIDs(ctx.Job, ctx.Operator); err != nil {
		return s.errorf("%v", err)
	}
	s.jobOp = ctx.Job + "-" + ctx.Operator + "-"
	s.subPrefix = s.jobOp + strconv.Itoa(s.sub) + "-"
	jobStage := filepath.Join(s.path, stagingDirName, ctx.Job)
	s.root = filepath.Join(jobStage, s.jobOp+strconv.Itoa(s.sub))
	if err := s.Guard.Check(s.root); err != nil {
		return s.errorf("%w", err)
	}
	if err := s.fsys.MkdirAll(s.root); err != nil {
		return s.errorf("%v", err)
	}
	if err := s.Guard.Check(s.root); err != nil {
		return s.errorf("%w", err)
	}
	if ctx.IsCompleted == nil {
		return s.errorf("recovery: the task context cannot tell completed checkpoints")
	}
	if err := s.recoverTree(s.root, s.subPrefix, ctx.IsCompleted, false); err != nil {
		return err
	}
	if s.sub == 0 && ctx.Parallelism > 0 {
		// The staging trees of subtasks that no longer exist after a restart at a lower parallelism.
		entries, err := s.fsys.ReadDir(jobStage)
		if err != nil {
			return s.errorf("recovery: %v", err)
		}
		for _, e := range entries {
			rest, ok := strings.CutPrefix(e.Name(), s.jobOp)
			if !e.IsDir() || !ok || !allDigits(rest) {
				continue
			}
			if k, err := strconv.Atoi(rest); err == nil && k >= ctx.Parallelism {
				if err := s.recoverTree(filepath.Join(jobStage, e.Name()), e.Name()+"-", ctx.IsCompleted, true); err != nil {
					return err
				}
			}
		}
	}
	s.stageMu.Lock()
	s.staged, s.emptied = nil, nil
	s.stageMu.Unlock()
	s.writers, s.finished, s.seq = map[string]*partWriter{}, nil, 0
	s.lru.Init()
	s.groups = map[string]int{}
	return s.restorePending()
}

// recoverTree commits the staged files under tree whose checkpoint completed, deletes the others and the in-progress
// files, then removes the directories left empty (tree itself too when whole is set: an adopted subtask's).
func (s *PartitionedSink) recoverTree(tree, prefix string, completed func(uint64) bool, whole bool) error {
	type found struct {
		dir, name string
		id        uint64
		seq       int
	}
	var files []found
	var dirs []string // every directory under tree, parents before children
	var walk func(rel string) error
	walk = func(rel string) error {
		entries, err := s.fsys.ReadDir(filepath.Join(tree, rel))
		if err != nil {
			return err
		}
		for _, e := range entries {
			name := e.Name()
			if e.IsDir() {
				sub := filepath.Join(rel, name)
				dirs = append(dirs, sub)
				if err := walk(sub); err != nil {
					return err
				}
				continue
			}
			if _, ok := parseInProgressPart(prefix, name); ok {
				if err := s.fsys.Remove(filepath.Join(tree, rel, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
					return err
				}
				continue
			}
			if id, seq, ok := parseStagedPart(prefix, s.ext, name); ok {
				files = append(files, found{rel, name, id, seq})
			}
		}
		return nil
	}
	if err := walk(""); err != nil {
		return s.errorf("recovery: %v", err)
	}
	slices.SortFunc(files, func(a, b found) int {
		if c := compareUint64(a.id, b.id); c != 0 {
			return c
		}
		if c := strings.Compare(a.dir, b.dir); c != 0 {
			return c
		}
		return a.seq - b.seq
	})
	touched := map[string]bool{}
	for _, f := range files {
		if completed(f.id) {
			if _, err := s.publishPart(tree, stagedPart{id: f.id, dir: f.dir, name: f.name}, touched); err != nil {
				return s.errorf("recovery: commit checkpoint %d: %w", f.id, err)
			}
		} else if err := s.fsys.Remove(filepath.Join(tree, f.dir, f.name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return s.errorf("recovery: %v", err)
		}
	}
	if err := s.syncDirs(touched); err != nil {
		return s.errorf("recovery: %v", err)
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		_ = s.fsys.Remove(filepath.Join(tree, dirs[i])) // fails, as it should, when not empty
	}
	if whole {
		_ = s.fsys.Remove(tree)
	}
	return nil
}

// parseStagedPart returns the checkpoint id and file number of a staged file name <prefix><N>-<K>.<ext>.
func parseStagedPart(prefix, ext, name string) (id uint64, seq int, ok bool) {
	rest, ok := strings.CutPrefix(name, prefix)
	if !ok {
		return 0, 0, false
	}
	if rest, ok = strings.CutSuffix(rest, "."+ext); !ok {
		return 0, 0, false
	}
	idStr, seqStr, ok := strings.Cut(rest, "-")
	if !ok || !allDigits(idStr) || !allDigits(seqStr) {
		return 0, 0, false
	}
	id, err1 := strconv.ParseUint(idStr, 10, 64)
	seq, err2 := strconv.Atoi(seqStr)
	return id, seq, err1 == nil && err2 == nil
}

// parseInProgressPart returns the file number of an in-progress file name <prefix><K>.inprogress.
func parseInProgressPart(prefix, name string) (seq int, ok bool) {
	rest, ok := strings.CutPrefix(name, prefix)
	if !ok {
		return 0, false
	}
	if rest, ok = strings.CutSuffix(rest, ".inprogress"); !ok || !allDigits(rest) {
		return 0, false
	}
	seq, err := strconv.Atoi(rest)
	return seq, err == nil
}

// restorePending reads the pending partitions of the restored checkpoint (none on a fresh start).
func (s *PartitionedSink) restorePending() error {
	s.pendMu.Lock()
	defer s.pendMu.Unlock()
	s.pending = map[string]*pendingPartition{}
	if s.backend == nil || !s.cfg.SuccessFile {
		return nil
	}
	v, ok, err := s.backend.Get(pendingStateKey)
	if err != nil || !ok {
		return err
	}
	var list []*pendingPartition
	if err := json.Unmarshal(v, &list); err != nil {
		return s.errorf("restored pending partitions: %v", err)
	}
	for _, p := range list {
		s.pending[p.Dir] = p
	}
	return nil
}

// savePending writes the pending partitions into the checkpointed state (the subtask goroutine, before the
// runtime captures it at the barrier).
func (s *PartitionedSink) savePending() error {
	if s.backend == nil || !s.cfg.SuccessFile {
		return nil
	}
	s.pendMu.Lock()
	list := make([]*pendingPartition, 0, len(s.pending))
	for _, p := range s.pending {
		list = append(list, p)
	}
	slices.SortFunc(list, func(a, b *pendingPartition) int { return strings.Compare(a.Dir, b.Dir) })
	v, err := json.Marshal(list)
	s.pendMu.Unlock()
	if err != nil {
		return err
	}
	s.backend.Put(pendingStateKey, v)
	return nil
}

// Write routes each row of the batch to the open file of its partition, without the partition columns.
func (s *PartitionedSink) Write(b exec.Batch) error {
	defer b.Release()
	n := b.Rows()
	if n == 0 {
		return nil
	}
	for i, k := range b.Kinds {
		if k != exec.Insert {
			return s.errorf("append-only sink got a %s row (row %d of a batch); an updating query must not reach it", k, i)
		}
	}
	if err := checkSchema(s.schema, b.Rec.Schema()); err != nil {
		return s.errorf("%v", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fsys == nil {
		return s.errorf("write before open")
	}
	s.cols = s.cols[:0]
	for _, k := range s.keyIdx {
		c, err := newPartitionColumn(b.Rec.Column(k))
		if err != nil {
			return s.errorf("%v", err)
		}
		s.cols = append(s.cols, c)
	}
	// Group the rows by partition; consecutive rows of one partition (the common case) cost one comparison.
	clear(s.groups)
	s.groupDir = s.groupDir[:0]
	prevKey, prev := "", -1
	for i := range n {
		s.key = s.appendDir(s.key[:0], i)
		if prev >= 0 && string(s.key) == prevKey {
			s.groupRow[prev] = append(s.groupRow[prev], int32(i))
			continue
		}
		g, ok := s.groups[string(s.key)]
		if !ok {
			g = len(s.groupDir)
			dir := string(s.key)
			s.groups[dir] = g
			s.groupDir = append(s.groupDir, dir)
			if g < len(s.groupRow) {
				s.groupRow[g] = s.groupRow[g][:0]
			} else {
				s.groupRow = append(s.groupRow, nil)
			}
		}
		s.groupRow[g] = append(s.groupRow[g], int32(i))
		prev, prevKey = g, s.groupDir[g]
	}
	cols := make([]arrow.Array, len(s.dataIdx))
	for i, c := range s.dataIdx {
		cols[i] = b.Rec.Column(c)
	}
	data := array.NewRecordBatch(s.dataSchema, cols, int64(n))
	defer data.Release()
	for g, dir := range s.groupDir {
		rec := data
		if len(s.groupDir) > 1 {
			tb, err := exec.TakeRows(context.Background(), s.alloc, exec.Batch{Rec: data}, s.groupRow[g])
			if err != nil {
				s.discardLocked()
				return s.errorf("%v", err)
			}
			rec = tb.Rec
		}
		err := s.writeGroup(dir, int(s.groupRow[g][0]), rec)
		if rec != data {
			rec.Release()
		}
		if err != nil {
			s.discardLocked()
			return err
		}
	}
	return nil
}

func (s *PartitionedSink) writeGroup(dir string, row int, rec arrow.RecordBatch) error {
	w, err := s.writerFor(dir, row)
	if err != nil {
		return err
	}
	if err := w.enc.Write(rec, nil); err != nil {
		return s.errorf("%v", err)
	}
	return nil
}

// appendDir appends the partition directory of row i.
func (s *PartitionedSink) appendDir(dst []byte, i int) []byte {
	for k := range s.cols {
		if k > 0 {
			dst = append(dst, '/')
		}
		dst = append(dst, s.keyNames[k]...)
		v := s.cols[k].value(s.val, i)
		if v == nil {
			dst = AppendEscaped(dst, []byte(s.cfg.DefaultName))
			continue
		}
		s.val = v[:0]
		dst = AppendEscaped(dst, v)
	}
	return dst
}

// rowValues are the unescaped key values of row i (nil: NULL or ”), for the partition's time.
func (s *PartitionedSink) rowValues(i int) []*string {
	vals := make([]*string, len(s.cols))
	for k := range s.cols {
		if v := s.cols[k].value(nil, i); v != nil {
			str := string(v)
			vals[k] = &str
		}
	}
	return vals
}

// writerFor returns the open file of partition dir, opening one (and finishing the least recently written one past
// the bound) when there is none; row is a row of the partition in the current batch.
func (s *PartitionedSink) writerFor(dir string, row int) (*partWriter, error) {
	if w := s.writers[dir]; w != nil {
		s.lru.MoveToFront(w.elem)
		return w, nil
	}
	if len(s.writers) >= s.cfg.MaxOpenWriters {
		back := s.lru.Back()
		w := back.Value.(*partWriter)
		s.lru.Remove(back)
		delete(s.writers, w.dir)
		err := s.finishLocked(w)
		s.finished = append(s.finished, w) // on a failure too: the caller's discard deletes its file
		if err != nil {
			return nil, err
		}
	}
	if err := s.ensureDir(s.root, dir, nil); err != nil {
		return nil, s.errorf("%w", err)
	}
	w := &partWriter{dir: dir, seq: s.seq}
	s.seq++
	w.inprogress = filepath.Join(s.root, dir, s.subPrefix+strconv.Itoa(w.seq)+".inprogress")
	if err := s.Guard.Check(w.inprogress); err != nil {
		return nil, s.errorf("%w", err)
	}
	f, err := s.fsys.Create(w.inprogress)
	if err != nil {
		return nil, s.errorf("%v", err)
	}
	w.file = f
	w.out = countingWriter{w: f}
	if n := len(s.bufs); n > 0 {
		w.buf, s.bufs = s.bufs[n-1], s.bufs[:n-1]
		w.buf.Reset(&w.out)
	} else {
		w.buf = bufio.NewWriterSize(&w.out, partWriteBuffer)
	}
	if n := len(s.encs); n > 0 {
		w.enc, s.encs = s.encs[n-1], s.encs[:n-1]
	} else {
		w.enc = s.newEnc()
		if err := w.enc.Init(s.dataSchema); err != nil {
			f.Close()
			_ = s.fsys.Remove(w.inprogress)
			return nil, s.errorf("%v", err)
		}
	}
	w.elem = s.lru.PushFront(w)
	s.writers[dir] = w
	if err := w.enc.Begin(w.buf); err != nil {
		return nil, s.errorf("%v", err)
	}
	if s.cfg.SuccessFile && s.cfg.Trigger == PartitionTime {
		w.ptime, w.hasTime = partitionTime(s.cfg.TimePattern, s.cfg.Keys, s.rowValues(row))
	}
	return w, nil
}

// finishLocked completes w's file (a Parquet footer), makes it durable and closes it; its encoder and buffer go
// back to the pools.
func (s *PartitionedSink) finishLocked(w *partWriter) error {
	err := w.enc.Finish()
	if err == nil {
		err = w.buf.Flush()
	}
	if err == nil && state.FsyncEnabled() {
		if err = w.file.Sync(); err != nil {
			err = fmt.Errorf("fsync: %w", err)
		}
	}
	if cerr := w.file.Close(); err == nil {
		err = cerr
	}
	w.file = nil
	w.bytes = w.out.n
	s.encs = append(s.encs, w.enc)
	s.bufs = append(s.bufs, w.buf)
	w.enc, w.buf = nil, nil
	if err != nil {
		return s.errorf("%s: %v", w.inprogress, err)
	}
	return nil
}

// discardLocked drops the open transaction after a failure: its files are deleted (best-effort: the next Open
// deletes them anyway) and its rows replayed after the restart.
func (s *PartitionedSink) discardLocked() {
	for e := s.lru.Front(); e != nil; e = e.Next() {
		w := e.Value.(*partWriter)
		w.enc.Abandon()
		s.encs = append(s.encs, w.enc)
		s.bufs = append(s.bufs, w.buf)
		w.file.Close()
		_ = s.fsys.Remove(w.inprogress)
	}
	for _, w := range s.finished {
		_ = s.fsys.Remove(w.inprogress)
	}
	clear(s.writers)
	s.lru.Init()
	s.finished = nil
	s.seq = 0
}

// PreCommit seals the transaction as checkpoint id: every file is finished, durable and renamed to its staged name,
// and every staging directory that got a file made durable, before the subtask may ack. The partitions it wrote
// become pending (written into the checkpointed state with the rest), and staging directories emptied by commits
// since the last barrier are removed.
func (s *PartitionedSink) PreCommit(id uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for e := s.lru.Front(); e != nil; e = s.lru.Front() {
		w := e.Value.(*partWriter)
		s.lru.Remove(e)
		delete(s.writers, w.dir)
		err := s.finishLocked(w)
		s.finished = append(s.finished, w)
		if err != nil {
			s.discardLocked()
			return err
		}
	}
	idStr := strconv.FormatUint(id, 10)
	staged := make([]stagedPart, 0, len(s.finished))
	dirs := map[string]bool{}
	for _, w := range s.finished {
		name := s.subPrefix + idStr + "-" + strconv.Itoa(w.seq) + "." + s.ext
		if err := s.fsys.RenameNoReplace(w.inprogress, filepath.Join(s.root, w.dir, name)); err != nil {
			// An existing staged name would mean a reused checkpoint id; never overwrite it.
			s.discardLocked()
			return s.errorf("pre-commit checkpoint %d: %v", id, err)
		}
		staged = append(staged, stagedPart{id: id, dir: w.dir, name: name, bytes: w.bytes})
		dirs[w.dir] = true
	}
	if state.FsyncEnabled() {
		for _, d := range slices.Sorted(mapsKeys(dirs)) {
			// Strict: a staged name lost in a power failure after the checkpoint completed is a transaction lost.
			if err := s.fsys.SyncDir(filepath.Join(s.root, d)); err != nil {
				s.discardLocked()
				return s.errorf("pre-commit checkpoint %d: fsync: %v", id, err)
			}
		}
	}
	if s.cfg.SuccessFile {
		s.pendMu.Lock()
		for _, w := range s.finished {
			p := s.pending[w.dir]
			if p == nil {
				p = &pendingPartition{Dir: w.dir, Time: w.ptime, HasTime: w.hasTime}
				s.pending[w.dir] = p
			}
			p.Last = max(p.Last, id)
		}
		s.pendMu.Unlock()
	}
	s.finished = s.finished[:0]
	s.seq = 0
	s.stageMu.Lock()
	s.staged = append(s.staged, staged...)
	emptied := s.emptied
	s.emptied = nil
	s.stageMu.Unlock()
	for _, d := range slices.Sorted(mapsKeys(emptied)) {
		if !dirs[d] {
			s.removeEmpty(d)
		}
	}
	if err := s.savePending(); err != nil {
		return s.errorf("pre-commit checkpoint %d: %v", id, err)
	}
	return nil
}

func mapsKeys(m map[string]bool) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// removeEmpty removes the staging directory dir and its parents up to the subtask's root while they are empty
// (best-effort: a leftover empty directory costs nothing but a name).
func (s *PartitionedSink) removeEmpty(dir string) {
	for d := dir; d != "." && d != "" && d != "/"; d = filepath.Dir(d) {
		if err := s.fsys.Remove(filepath.Join(s.root, d)); err != nil {
			return
		}
	}
}

// ensureDir creates base/rel's missing directories, each checked by the guard before and after it is created, and
// makes each new one durable in its parent. done caches the directories known to exist (nil: none).
func (s *PartitionedSink) ensureDir(base, rel string, done map[string]bool) error {
	if done[rel] {
		return nil
	}
	cur := base
	for _, part := range strings.Split(rel, "/") {
		parent := cur
		cur = filepath.Join(cur, part)
		if _, err := s.fsys.Stat(cur); err == nil {
			continue
		}
		if err := s.Guard.Check(cur); err != nil {
			return err
		}
		if err := s.fsys.MkdirAll(cur); err != nil {
			return err
		}
		if err := s.Guard.Check(cur); err != nil {
			return err
		}
		if state.FsyncEnabled() {
			if err := s.fsys.SyncDir(parent); err != nil {
				return fmt.Errorf("fsync: %w", err)
			}
		}
	}
	if done != nil {
		done[rel] = true
	}
	return nil
}

// Commit publishes every staged file with a checkpoint id <= id into its partition's directory, never over an
// existing file, then makes each directory it published into durable. Calling it again does nothing.
func (s *PartitionedSink) Commit(id uint64) error {
	s.stageMu.Lock()
	defer s.stageMu.Unlock()
	touched := map[string]bool{}
	var err error
	i := 0
	for ; i < len(s.staged) && s.staged[i].id <= id; i++ {
		p := s.staged[i]
		if _, err = s.publishPart(s.root, p, touched); err != nil {
			err = s.errorf("commit checkpoint %d: %w", p.id, err)
			break
		}
		s.Add(p.bytes)
		if s.emptied == nil {
			s.emptied = map[string]bool{}
		}
		s.emptied[p.dir] = true
	}
	s.staged = s.staged[i:]
	if serr := s.syncDirs(touched); serr != nil && err == nil {
		err = s.errorf("commit checkpoint %d: fsync: %v", id, serr)
	}
	return err
}

// publishPart renames a staged file of tree into its partition's directory under the sink's path, which it
// creates when missing (touched records it, for syncDirs). A target that already exists was committed by an
// earlier attempt (names are never reused): the staged copy is deleted, never renamed over it.
func (s *PartitionedSink) publishPart(tree string, p stagedPart, touched map[string]bool) (bool, error) {
	if err := s.ensureDir(s.path, p.dir, touched); err != nil {
		return false, err
	}
	src := filepath.Join(tree, p.dir, p.name)
	dst := filepath.Join(s.path, p.dir, p.name)
	if err := s.Guard.Check(dst); err != nil {
		return false, err
	}
	err := s.fsys.RenameNoReplace(src, dst)
	switch {
	case err == nil:
		touched[p.dir] = true
		return true, nil
	case errors.Is(err, fs.ErrExist):
		if rerr := s.fsys.Remove(src); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			return false, rerr
		}
		return false, nil
	case errors.Is(err, fs.ErrNotExist):
		if _, serr := s.fsys.Stat(dst); serr == nil {
			return false, nil // committed before, staged copy already gone
		}
	}
	return false, err
}

// syncDirs makes the partition directories a commit renamed into durable.
func (s *PartitionedSink) syncDirs(touched map[string]bool) error {
	if !state.FsyncEnabled() {
		return nil
	}
	for _, d := range slices.Sorted(mapsKeys(touched)) {
		if err := s.fsys.SyncDir(filepath.Join(s.path, d)); err != nil {
			return err
		}
	}
	return nil
}

// Abort deletes the staged files of checkpoint id; they are forgotten first, so a later Commit never publishes
// them. A file left behind is deleted by the next Open.
func (s *PartitionedSink) Abort(id uint64) error {
	s.stageMu.Lock()
	defer s.stageMu.Unlock()
	var err error
	kept := s.staged[:0]
	for _, p := range s.staged {
		if p.id != id {
			kept = append(kept, p)
			continue
		}
		if rerr := s.fsys.Remove(filepath.Join(s.root, p.dir, p.name)); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) && err == nil {
			err = s.errorf("abort checkpoint %d: %v", id, rerr)
		}
	}
	s.staged = kept
	return err
}

// FinishCommit commits the pending partitions whose trigger holds at checkpoint id (exec.CommitFinisher: every
// sink subtask committed id; wm is the node's watermark at it): each gets its success file.
func (s *PartitionedSink) FinishCommit(id uint64, wm int64) error {
	if !s.cfg.SuccessFile {
		return nil
	}
	s.pendMu.Lock()
	defer s.pendMu.Unlock()
	now := time.Now
	if s.cfg.Now != nil {
		now = s.cfg.Now
	}
	t := now()
	dirs := make([]string, 0, len(s.pending))
	for d := range s.pending {
		dirs = append(dirs, d)
	}
	slices.Sort(dirs)
	for _, d := range dirs {
		p := s.pending[d]
		if p.Last > id {
			continue // a file of it is staged for a later checkpoint
		}
		if !s.ready(p, t, wm) {
			continue
		}
		if err := s.writeSuccess(d); err != nil {
			return s.errorf("commit partition %s at checkpoint %d: %w", d, id, err)
		}
		delete(s.pending, d)
	}
	return nil
}

// ready reports whether pending partition p is to be committed now (t) at watermark wm.
func (s *PartitionedSink) ready(p *pendingPartition, t time.Time, wm int64) bool {
	delay := s.cfg.Delay.Microseconds()
	if s.cfg.Trigger == PartitionTime {
		if wm == exec.MaxWatermark {
			return true // end of input: every partition is complete
		}
		if !p.HasTime {
			return false
		}
		// wm >= time + delay, without overflowing near the ends of the line.
		return p.Time <= wm-delay && wm-delay <= wm
	}
	if p.Committed == 0 {
		p.Committed = t.UnixMicro()
	}
	return t.UnixMicro()-p.Committed >= delay
}

// writeSuccess writes the empty success file of partition dir, unless one is there; the directory is made durable.
func (s *PartitionedSink) writeSuccess(dir string) error {
	d := filepath.Join(s.path, dir)
	p := filepath.Join(d, s.cfg.SuccessFileName)
	if _, err := s.fsys.Stat(p); err == nil {
		return nil
	}
	if _, err := s.fsys.Stat(d); errors.Is(err, fs.ErrNotExist) {
		// Its files are committed, so someone removed the directory: nothing to mark.
		s.log.Warn("partitioned sink: the directory of a committed partition is gone; no success file", "path", d)
		return nil
	}
	if err := s.Guard.Check(p); err != nil {
		return err
	}
	f, err := s.fsys.Create(p)
	if err != nil {
		return err
	}
	if state.FsyncEnabled() {
		if err := f.Sync(); err != nil {
			f.Close()
			return err
		}
	}
	if err := f.Close(); err != nil {
		return err
	}
	if state.FsyncEnabled() {
		return s.fsys.SyncDir(d)
	}
	return nil
}

// PublishedAfter names a committed file of ctx's operator (any subtask, any partition) with a checkpoint id above
// after, "" when there is none (exec.PublishChecker).
func (s *PartitionedSink) PublishedAfter(ctx *exec.TaskContext, after uint64) (string, error) {
	fsys := ctx.FS
	if fsys == nil {
		fsys = state.OS
	}
	prefix := ctx.Job + "-" + ctx.Operator + "-"
	var found string
	var walk func(dir string) error
	walk = func(dir string) error {
		entries, err := fsys.ReadDir(dir)
		if err != nil {
			return err
		}
		for _, e := range entries {
			name := e.Name()
			if dir == s.path && name == stagingDirName || strings.HasPrefix(name, ".") {
				continue // staged files are not published; a partition directory may start with '_' (its column's name)
			}
			if e.IsDir() {
				if err := walk(filepath.Join(dir, name)); err != nil || found != "" {
					return err
				}
				continue
			}
			rest, ok := strings.CutPrefix(name, prefix)
			if !ok {
				continue
			}
			sub, tail, ok := strings.Cut(rest, "-")
			if !ok || !allDigits(sub) {
				continue
			}
			if id, _, ok := parseStagedPart("", strings.TrimPrefix(filepath.Ext(name), "."), tail); ok && id > after {
				found = filepath.Join(dir, name)
				return nil
			}
		}
		return nil
	}
	if err := walk(s.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", s.errorf("%v", err)
	}
	return found, nil
}

// Close drops the open transaction (its rows are replayed from the last checkpoint) and leaves staged files for the
// next Open to decide.
func (s *PartitionedSink) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fsys != nil {
		s.discardLocked()
	}
	return nil
}
