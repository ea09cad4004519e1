package txnfile

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/clinksql/clinksql/connectors"
	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/state"
)

// Encoder turns the batches of one transaction into the bytes of one file. The two-phase protocol around it
// (in-progress file, staging, commit, recovery) is the same for every format.
type Encoder interface {
	// Ext is the file extension, without the dot.
	Ext() string
	// Init checks the sink's schema once, at Open.
	Init(schema *arrow.Schema) error
	// Begin starts a new file on w.
	Begin(w io.Writer) error
	// Write appends a batch; kinds is nil for all inserts (only an encoder whose sink allows updates sees others).
	Write(rec arrow.RecordBatch, kinds []exec.RowKind) error
	// Finish writes whatever ends a file (a Parquet footer) into w.
	Finish() error
	// Abandon drops a transaction that will never be finished.
	Abandon()
}

// stagingDirName is the directory under a sink's path that holds staged transactions. The leading '_' hides it
// from Parquet readers and globs such as read_parquet('path/*.parquet'), as Spark and Hadoop do.
const stagingDirName = "_staging"

// writeBufferSize is the buffer between the encoders and the in-progress file: large enough that a write system
// call moves a useful amount of data.
const writeBufferSize = 256 << 10

// Sink is the two-phase-commit protocol of the file sinks (CSV, JSON lines, Parquet): one in-progress file
// per subtask, sealed into staging at each barrier, renamed into the sink's path when the checkpoint completed.
type Sink struct {
	kind   string // "file" or "parquet", for messages
	path   string
	schema *arrow.Schema
	enc    Encoder
	// Updating lets retractions through (the changelog of a materialized view); the file sinks are append-only.
	Updating bool
	// PublishTo, when set, replaces the rename into path at commit: the stream log renames into its next
	// sequence number. It reports success when src no longer exists because an earlier commit published it.
	PublishTo func(src, name string) error
	// TxnNameOf, with PublishTo, gives the transaction file name inside the name of a file PublishTo published
	// (the stream log's seg-<seq>-<name>), ok false for another file.
	TxnNameOf func(published string) (txn string, ok bool)
	// Guard confines the directories and files the sink creates (nil: the stream log, inside the data directory).
	Guard connectors.PathGuard

	fsys       state.FS
	sub        int
	jobOp      string // "<job>-<op>-", escaped: the prefix of every file this operator writes
	stageDir   string
	inprogress string

	// mu guards the open transaction. Write and PreCommit run on the subtask goroutine; the lock keeps Close safe
	// and costs nothing uncontended.
	mu   sync.Mutex
	file state.File
	out  countingWriter // the file, counting the bytes of the transaction
	buf  *bufio.Writer
	rows int64

	// stageMu guards the sealed transactions, which Commit and Abort touch from the coordinator's goroutine while
	// the subtask goes on writing the next transaction under mu.
	stageMu sync.Mutex
	staged  []uint64 // ascending checkpoint ids
	// stagedBytes are the sizes of the staged transactions this incarnation wrote, counted as committed once
	// published (exec.SinkProgress); those a restart recovers are not counted.
	stagedBytes map[uint64]int64
	connectors.Committed
}

var _ exec.SinkProgress = (*Sink)(nil)

// countingWriter counts what goes through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// New returns the protocol around enc for a sink of the given kind ("file", "parquet", "stream": for messages)
// writing into path. Set Guard, Updating, PublishTo and TxnNameOf before Open.
func New(kind, path string, schema *arrow.Schema, enc Encoder) *Sink {
	return &Sink{kind: kind, path: path, schema: schema, enc: enc}
}

// checkNameIDs refuses a job or operator id that cannot be a file-name component as it is. Committed names are
// <job>-<op>-<subtask>-<checkpoint>.<ext> in [A-Za-z0-9._-] only (S3, HTTP and Hadoop readers take them as they
// are), never hidden ('.' or '_' first). For the names of different transactions to differ, a job id is a word of
// [A-Za-z0-9._] with at most one -<digits> at its end (the engine's job-<n>), and an operator id starts with a
// letter (the planner's words and '-', with -<n> for repeats): then no job id followed by '-' starts another, and
// the two number fields at the end of a name are its subtask and checkpoint.
func checkNameIDs(job, op string) error {
	word := func(s string) bool {
		for i := 0; i < len(s); i++ {
			c := s[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_') {
				return false
			}
		}
		return s != ""
	}
	w, n, dash := strings.Cut(job, "-")
	if !word(w) || w[0] == '.' || w[0] == '_' || dash && !allDigits(n) {
		return fmt.Errorf("job id %q cannot be part of a file name (a word of letters, digits, '.' and '_', then at most one -<digits>)", job)
	}
	ok := op != "" && (op[0] >= 'a' && op[0] <= 'z' || op[0] >= 'A' && op[0] <= 'Z')
	for _, part := range strings.Split(op, "-") {
		ok = ok && word(part)
	}
	if !ok {
		return fmt.Errorf("operator id %q cannot be part of a file name (a letter, then letters, digits, '.', '_' and '-')", op)
	}
	return nil
}

// legacyEscapeName is how versions before issue 11 escaped a job or operator id in file names ('-' became %2D):
// Open still recovers the transactions they staged (legacyStaging).
func legacyEscapeName(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' && i > 0 {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// txnName is the file name of subtask sub's transaction for checkpoint id, the same in staging and when
// committed: <job>-<op>-<sub>-<id>.<ext>; prefix is "<job>-<op>-".
func (s *Sink) txnName(prefix string, sub int, id uint64) string {
	return prefix + strconv.Itoa(sub) + "-" + strconv.FormatUint(id, 10) + "." + s.enc.Ext()
}

func (s *Sink) stagedPath(id uint64) string {
	return filepath.Join(s.stageDir, s.txnName(s.jobOp, s.sub, id))
}

// parseTxnName returns the subtask and checkpoint id of a transaction file whose name starts with prefix.
func (s *Sink) parseTxnName(prefix, name string) (sub int, id uint64, ok bool) {
	rest, ok := strings.CutPrefix(name, prefix)
	if !ok {
		return 0, 0, false
	}
	if rest, ok = strings.CutSuffix(rest, "."+s.enc.Ext()); !ok {
		return 0, 0, false
	}
	subStr, idStr, ok := strings.Cut(rest, "-")
	if !ok || !allDigits(subStr) || !allDigits(idStr) {
		return 0, 0, false
	}
	sub, err := strconv.Atoi(subStr)
	if err != nil {
		return 0, 0, false
	}
	id, err = strconv.ParseUint(idStr, 10, 64)
	if err != nil {
		return 0, 0, false
	}
	return sub, id, true
}

// parseInProgressName returns the subtask of an in-progress file whose name starts with prefix.
func (s *Sink) parseInProgressName(prefix, name string) (sub int, ok bool) {
	rest, ok := strings.CutPrefix(name, prefix)
	if !ok {
		return 0, false
	}
	if rest, ok = strings.CutSuffix(rest, ".inprogress"); !ok || !allDigits(rest) {
		return 0, false
	}
	sub, err := strconv.Atoi(rest)
	return sub, err == nil
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// errorf starts a message with the sink's kind and path; %w keeps the cause's SQLSTATE.
func (s *Sink) errorf(format string, args ...any) error {
	return fmt.Errorf("%s sink %s: "+format, append([]any{s.kind, s.path}, args...)...)
}

// Open recovers what earlier incarnations of this subtask left in staging: a transaction whose checkpoint
// completed is committed (its commit may have been cut short by a crash), every other one is deleted, and so is
// the in-progress file. Subtask 0 also recovers the subtasks that no longer exist after a restart at a lower
// parallelism, which nobody else would.
func (s *Sink) Open(ctx *exec.TaskContext) error {
	if s.schema == nil {
		return s.errorf("no schema")
	}
	if err := s.enc.Init(s.schema); err != nil {
		return s.errorf("%v", err)
	}
	s.fsys = ctx.FS
	if s.fsys == nil {
		s.fsys = state.OS
	}
	s.sub = ctx.Subtask
	if err := checkNameIDs(ctx.Job, ctx.Operator); err != nil {
		return s.errorf("%v", err)
	}
	s.jobOp = ctx.Job + "-" + ctx.Operator + "-"
	s.stageDir = filepath.Join(s.path, stagingDirName, ctx.Job)
	s.inprogress = filepath.Join(s.stageDir, s.jobOp+strconv.Itoa(s.sub)+".inprogress")
	// The guard sees the staging directory before MkdirAll creates it (a planted link must not make it create
	// directories elsewhere) and after (a link swapped in meanwhile).
	if err := s.Guard.Check(s.stageDir); err != nil {
		return s.errorf("%w", err)
	}
	if err := s.fsys.MkdirAll(s.stageDir); err != nil {
		return s.errorf("%v", err)
	}
	if err := s.Guard.Check(s.stageDir); err != nil {
		return s.errorf("%w", err)
	}
	published, err := s.recoverStaged(ctx, s.stageDir, s.jobOp)
	if err != nil {
		return err
	}
	// A job restored across issue 11 staged under the escaped names of earlier versions (_staging/job%2D1/
	// job%2D1-sink-0-5.parquet): those are recovered too, a completed one committed under the name it was staged
	// with. A name is its transaction's identity: committing it under the new name could publish it twice after a
	// crash between the link and the remove of a rename without RENAME_NOREPLACE.
	legacyJob := legacyEscapeName(ctx.Job)
	legacyDir := filepath.Join(s.path, stagingDirName, legacyJob)
	if legacyPrefix := legacyJob + "-" + legacyEscapeName(ctx.Operator) + "-"; legacyPrefix != s.jobOp {
		if _, err := s.fsys.Stat(legacyDir); err == nil {
			if err := s.Guard.Check(legacyDir); err != nil {
				return s.errorf("%w", err)
			}
			p, err := s.recoverStaged(ctx, legacyDir, legacyPrefix)
			if err != nil {
				return err
			}
			published = published || p
			if legacyDir != s.stageDir {
				_ = s.fsys.Remove(legacyDir) // empty once every operator of the job recovered its files
			}
		}
	}
	if published && state.FsyncEnabled() {
		if err := s.fsys.SyncDir(s.path); err != nil {
			return s.errorf("recovery: fsync: %v", err)
		}
	}
	s.stageMu.Lock()
	s.staged = s.staged[:0]
	s.stageMu.Unlock()
	return nil
}

// recoverStaged recovers what earlier incarnations of this subtask staged in dir under names starting with prefix:
// the in-progress file is deleted, a transaction whose checkpoint completed is committed, every other one deleted.
// It reports whether it committed any.
func (s *Sink) recoverStaged(ctx *exec.TaskContext, dir, prefix string) (published bool, err error) {
	mine := func(sub int) bool {
		return sub == s.sub || s.sub == 0 && ctx.Parallelism > 0 && sub >= ctx.Parallelism
	}
	entries, err := s.fsys.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) && dir != s.stageDir {
		return false, nil // a legacy directory another subtask emptied and removed
	}
	if err != nil {
		return false, s.errorf("recovery: %v", err)
	}
	type stagedFile struct {
		sub int
		id  uint64
	}
	var found []stagedFile
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		if sub, ok := s.parseInProgressName(prefix, e.Name()); ok && mine(sub) {
			if err := s.fsys.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return false, s.errorf("recovery: %v", err)
			}
			continue
		}
		if sub, id, ok := s.parseTxnName(prefix, e.Name()); ok && mine(sub) {
			found = append(found, stagedFile{sub, id})
		}
	}
	slices.SortFunc(found, func(a, b stagedFile) int {
		if a.id != b.id {
			return compareUint64(a.id, b.id)
		}
		return a.sub - b.sub
	})
	for _, f := range found {
		if ctx.IsCompleted == nil {
			return false, s.errorf("recovery: staged transaction %d found but the task context cannot tell completed checkpoints", f.id)
		}
		name := s.txnName(prefix, f.sub, f.id)
		if ctx.IsCompleted(f.id) {
			if err := s.publish(dir, name); err != nil {
				return false, s.errorf("recovery: commit checkpoint %d: %w", f.id, err)
			}
			published = true
		} else if err := s.fsys.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return false, s.errorf("recovery: %v", err)
		}
	}
	return published, nil
}

func compareUint64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Write appends the batch to the in-progress transaction. The file sinks are append-only: a retraction has no
// meaning in a file of rows, so a batch with any non-insert row is an error (the planner refuses updating queries
// into append-only sinks; this is the runtime's guard).
func (s *Sink) Write(b exec.Batch) error {
	defer b.Release()
	n := b.Rows()
	if n == 0 {
		return nil
	}
	for i, k := range b.Kinds {
		if k != exec.Insert && !s.Updating {
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
	if s.file == nil {
		if err := s.Guard.Check(s.inprogress); err != nil {
			return s.errorf("%w", err)
		}
		f, err := s.fsys.Create(s.inprogress)
		if err != nil {
			return s.errorf("%v", err)
		}
		s.file = f
		s.out = countingWriter{w: f}
		if s.buf == nil {
			s.buf = bufio.NewWriterSize(&s.out, writeBufferSize)
		} else {
			s.buf.Reset(&s.out)
		}
		if err := s.enc.Begin(s.buf); err != nil {
			s.discardLocked()
			return s.errorf("%v", err)
		}
	}
	if err := s.enc.Write(b.Rec, b.Kinds); err != nil {
		s.discardLocked()
		return s.errorf("%v", err)
	}
	s.rows += int64(n)
	return nil
}

// checkSchema checks a batch against the sink's schema by column types; names may differ (a query's aliases).
func checkSchema(want, got *arrow.Schema) error {
	if want.NumFields() != got.NumFields() {
		return fmt.Errorf("batch has %d columns, the sink %d", got.NumFields(), want.NumFields())
	}
	for i := range want.NumFields() {
		if !arrow.TypeEqual(want.Field(i).Type, got.Field(i).Type) {
			return fmt.Errorf("column %d (%s) is %s in the batch, %s in the sink", i, want.Field(i).Name,
				got.Field(i).Type, want.Field(i).Type)
		}
	}
	return nil
}

// discardLocked drops the in-progress transaction after a failure; the job restarts and replays it.
func (s *Sink) discardLocked() {
	s.enc.Abandon()
	if s.file != nil {
		s.file.Close()
		s.file = nil
		_ = s.fsys.Remove(s.inprogress) // best-effort: the next Open deletes it anyway
	}
	s.rows = 0
}

// PreCommit seals the in-progress transaction as checkpoint id: the file is completed, made durable and renamed
// into staging under the id; then the staging directory is made durable so the name survives a crash. Only a
// nil return lets the subtask ack, so any failure here fails the checkpoint rather than losing rows. A transaction
// without rows leaves no file.
func (s *Sink) PreCommit(id uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.file == nil {
		return nil
	}
	fsync := state.FsyncEnabled()
	if err := s.enc.Finish(); err != nil {
		s.discardLocked()
		return s.errorf("pre-commit checkpoint %d: %v", id, err)
	}
	if err := s.buf.Flush(); err != nil {
		s.discardLocked()
		return s.errorf("pre-commit checkpoint %d: %v", id, err)
	}
	if fsync {
		if err := s.file.Sync(); err != nil {
			s.discardLocked()
			return s.errorf("pre-commit checkpoint %d: fsync: %v", id, err)
		}
	}
	err := s.file.Close()
	s.file = nil
	s.rows = 0
	if err != nil {
		_ = s.fsys.Remove(s.inprogress)
		return s.errorf("pre-commit checkpoint %d: %v", id, err)
	}
	staged := s.stagedPath(id)
	if err := s.fsys.RenameNoReplace(s.inprogress, staged); err != nil {
		// An existing staged file for id would mean a reused checkpoint id; never overwrite it.
		_ = s.fsys.Remove(s.inprogress)
		return s.errorf("pre-commit checkpoint %d: %v", id, err)
	}
	if fsync {
		// Strict, like every directory fsync of a checkpoint: a staged name lost in a power
		// failure after the checkpoint completed would be a transaction lost.
		if err := s.fsys.SyncDir(s.stageDir); err != nil {
			_ = s.fsys.Remove(staged)
			return s.errorf("pre-commit checkpoint %d: fsync: %v", id, err)
		}
	}
	s.stageMu.Lock()
	s.staged = append(s.staged, id)
	slices.Sort(s.staged)
	if s.stagedBytes == nil {
		s.stagedBytes = map[uint64]int64{}
	}
	s.stagedBytes[id] = s.out.n
	s.stageMu.Unlock()
	return nil
}

// Commit publishes every staged transaction with a checkpoint id <= id by renaming it into the sink's path,
// never over an existing file, then makes the path's directory durable. Calling it again does nothing.
func (s *Sink) Commit(id uint64) error {
	s.stageMu.Lock()
	defer s.stageMu.Unlock()
	published := 0
	var err error
	for len(s.staged) > 0 && s.staged[0] <= id {
		sid := s.staged[0]
		if err = s.publish(s.stageDir, s.txnName(s.jobOp, s.sub, sid)); err != nil {
			err = s.errorf("commit checkpoint %d: %w", sid, err)
			break
		}
		s.staged = s.staged[1:]
		s.Add(s.stagedBytes[sid])
		delete(s.stagedBytes, sid)
		published++
	}
	if published > 0 && state.FsyncEnabled() {
		if serr := s.fsys.SyncDir(s.path); serr != nil && err == nil {
			err = s.errorf("commit checkpoint %d: fsync: %v", id, serr)
		}
	}
	return err
}

// publish renames staged file dir/name into the sink's path. A target that already exists means an earlier commit of
// the same transaction got that far (ids are never reused, so the name is the transaction): the staged copy is
// then a leftover and is deleted, never renamed over the committed file.
func (s *Sink) publish(dir, name string) error {
	src := filepath.Join(dir, name)
	if s.PublishTo != nil {
		return s.PublishTo(src, name)
	}
	dst := filepath.Join(s.path, name)
	if err := s.Guard.Check(dst); err != nil {
		return err
	}
	err := s.fsys.RenameNoReplace(src, dst)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, fs.ErrExist):
		if rerr := s.fsys.Remove(src); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			return rerr
		}
		return nil
	case errors.Is(err, fs.ErrNotExist):
		if _, serr := s.fsys.Stat(dst); serr == nil {
			return nil // committed before, staged copy already gone
		}
	}
	return err
}

// Abort deletes staged transaction id. It is forgotten first, so that whatever happens to the file, a later
// Commit can never publish an aborted transaction; a file left behind is deleted by the next Open.
func (s *Sink) Abort(id uint64) error {
	s.stageMu.Lock()
	defer s.stageMu.Unlock()
	if i := slices.Index(s.staged, id); i >= 0 {
		s.staged = slices.Delete(s.staged, i, i+1)
	}
	delete(s.stagedBytes, id)
	if s.fsys == nil {
		return nil
	}
	if err := s.fsys.Remove(s.stagedPath(id)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return s.errorf("abort checkpoint %d: %v", id, err)
	}
	return nil
}

// PublishedAfter names a published transaction file of ctx's operator (any subtask) with a checkpoint id above
// after, "" when there is none (exec.PublishChecker). Published files carry their checkpoint id in their names.
func (s *Sink) PublishedAfter(ctx *exec.TaskContext, after uint64) (string, error) {
	fsys := ctx.FS
	if fsys == nil {
		fsys = state.OS
	}
	// Files published before issue 11 carry the legacy escaped names (job%2D1-...).
	prefixes := []string{ctx.Job + "-" + ctx.Operator + "-", legacyEscapeName(ctx.Job) + "-" + legacyEscapeName(ctx.Operator) + "-"}
	entries, err := fsys.ReadDir(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", s.errorf("%v", err)
	}
	for _, e := range entries {
		name := e.Name()
		if s.TxnNameOf != nil { // a log segment: seg-<seq>-<transaction file name>
			if txn, ok := s.TxnNameOf(name); ok {
				name = txn
			}
		}
		for _, prefix := range prefixes {
			if _, id, ok := s.parseTxnName(prefix, name); ok && id > after {
				return filepath.Join(s.path, e.Name()), nil
			}
		}
	}
	return "", nil
}

// Close drops the in-progress transaction (its rows are replayed from the last checkpoint) and leaves staged
// ones for the next Open to decide.
func (s *Sink) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.file != nil {
		s.discardLocked()
	}
	return nil
}
