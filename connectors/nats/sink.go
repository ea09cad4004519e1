package nats

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
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
	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/clinksql/clinksql/connectors"
	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/exec/textform"
	"github.com/clinksql/clinksql/state"
)

// SinkConfig is a NATS JetStream sink.
type SinkConfig struct {
	Client  Client
	Subject string
	Format  string
	Schema  *arrow.Schema
	// StagingDir holds the staged messages of every job's sinks (<StagingDir>/<job>/<operator>-<subtask>-<N>.msgs).
	StagingDir string
}

// SinkOptionNames lists the sink's options.
func SinkOptionNames() []string { return slices.Sorted(slices.Values(sinkOptions)) }

// SinkConfigFromOptions reads and checks a sink's options.
func SinkConfigFromOptions(schema *arrow.Schema, meta []string, opts map[string]string, path func(string) (string, error)) (SinkConfig, error) {
	cfg := SinkConfig{Schema: schema}
	var err error
	if cfg.Client, err = clientFromOptions("sink", opts, path); err != nil {
		return cfg, err
	}
	cfg.Subject = strings.TrimSpace(opts["nats.subject"])
	if cfg.Subject == "" {
		return cfg, optionError("", "connector 'nats' (sink) needs 'nats.subject' (the subject to publish to)")
	}
	if !validSubject(cfg.Subject, false) {
		return cfg, optionError("nats.subject", "option 'nats.subject' = '%s': not a subject to publish to (no wildcards)", cfg.Subject)
	}
	for i, m := range meta {
		if m != "" {
			return cfg, connectors.ColumnError(schema.Field(i).Name, "nats sink: metadata column %s ('%s'): the sink writes no metadata", schema.Field(i).Name, m)
		}
	}
	if cfg.Format, err = format("sink", opts, schema.Fields()); err != nil {
		return cfg, err
	}
	if cfg.Format != FormatRaw {
		if err := connectors.CheckSinkColumns("nats", schema, textform.CheckType); err != nil {
			return cfg, err
		}
	}
	return cfg, nil
}

// publishTimeout bounds waiting for the acknowledgements of one staged checkpoint's messages.
const publishTimeout = 2 * time.Minute

// sink stages each checkpoint's encoded messages in a checksummed file at PreCommit and publishes them with
// deterministic message ids at Commit (doc.go).
type sink struct {
	cfg   SinkConfig
	log   *slog.Logger
	fsys  state.FS
	dir   string
	jobOp string // <instance>-<job>-<operator>-: message ids are <jobOp><subtask>-<checkpoint>-<i>
	opPre string // <operator>-: staged files are <operator>-<subtask>-<checkpoint>.msgs
	sub   int
	nc    *natsgo.Conn
	js    jetstream.JetStream
	// atomic: the stream allows atomic batch publishing (nats-server 2.12+, AllowAtomicPublish): a checkpoint of
	// at most maxAtomicBatch messages is published as one batch.
	atomic bool

	enc  *textform.Row
	buf  []byte // the open transaction: uvarint length, payload, ...
	rows int

	mu     sync.Mutex // staged and publishing: Commit runs on another goroutine
	staged []uint64
	connectors.Committed
}

var (
	_ exec.Sink         = (*sink)(nil)
	_ exec.SinkProgress = (*sink)(nil)
)

// NewSink returns a sink subtask.
func NewSink(cfg SinkConfig) exec.Sink { return &sink{cfg: cfg} }

func (s *sink) Open(ctx *exec.TaskContext) error {
	s.log = ctx.Log
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.fsys = ctx.FS
	if s.fsys == nil {
		s.fsys = state.OS
	}
	if s.cfg.Format != FormatRaw {
		var err error
		if s.enc, err = textform.NewRow(s.cfg.Format, s.cfg.Schema); err != nil {
			return fmt.Errorf("nats sink: %w", err)
		}
	}
	s.opPre = sanitize(ctx.Operator) + "-"
	s.sub = ctx.Subtask
	s.dir = filepath.Join(s.cfg.StagingDir, sanitize(ctx.Job))
	if err := s.fsys.MkdirAll(s.dir); err != nil {
		return fmt.Errorf("nats sink: staging directory: %w", err)
	}
	inst, err := instance(s.fsys, s.dir)
	if err != nil {
		return fmt.Errorf("nats sink: %w", err)
	}
	s.jobOp = inst + "-" + ctx.Job + "-" + ctx.Operator + "-"
	if s.nc, err = s.cfg.Client.Connect("clinksql " + ctx.Job + " sink"); err != nil {
		return fmt.Errorf("nats sink: connecting to %s: %w", redact(s.cfg.Client.URL), err)
	}
	if s.js, err = jetstream.New(s.nc, jetstream.WithPublishAsyncMaxPending(4096)); err != nil {
		return fmt.Errorf("nats sink: %w", err)
	}
	rctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	if err := s.checkStream(rctx); err != nil {
		return err
	}
	// Recovery: a staged checkpoint that completed is published again (the stream's duplicate window drops what
	// an earlier attempt published), every other one deleted. Subtask 0 also recovers the files of subtasks at or
	// above the parallelism, left by an incarnation that ran wider (with their own subtask's message ids).
	files, err := s.stagedFiles(ctx.Subtask, ctx.Parallelism)
	if err != nil {
		return err
	}
	for _, f := range files {
		if ctx.IsCompleted != nil && ctx.IsCompleted(f.id) {
			if err := s.publish(f.sub, f.id); err != nil {
				return err
			}
			continue
		}
		if err := s.fsys.Remove(s.path(f.sub, f.id)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("nats sink: recovery: %w", err)
		}
	}
	return nil
}

// instance is the job's random token in dir (created by the first subtask to open, durably, once): message ids
// start with it, so that the same job id of another data directory (or of this one wiped) never collides with
// this job's ids in a stream's duplicate window.
func instance(fsys state.FS, dir string) (string, error) {
	path := filepath.Join(dir, "INSTANCE")
	read := func() (string, error) {
		b, err := state.ReadFramed(fsys, path)
		if err != nil {
			return "", err
		}
		if len(b) != 16 {
			return "", fmt.Errorf("%s: not a token", path)
		}
		return string(b), nil
	}
	if tok, err := read(); !errors.Is(err, fs.ErrNotExist) {
		return tok, err
	}
	var r [8]byte
	if _, err := rand.Read(r[:]); err != nil {
		return "", err
	}
	tmp := filepath.Join(dir, fmt.Sprintf("INSTANCE.%x", r))
	if err := state.WriteFramed(fsys, tmp, []byte(hex.EncodeToString(r[:]))); err != nil {
		return "", err
	}
	// Several subtasks may race: the first rename wins, the others read its token.
	err := fsys.RenameNoReplace(tmp, path)
	if err != nil {
		_ = fsys.Remove(tmp)
		if !errors.Is(err, fs.ErrExist) {
			return "", err
		}
	} else if state.FsyncEnabled() {
		if err := fsys.SyncDir(dir); err != nil {
			return "", err
		}
	}
	return read()
}

// checkStream refuses a subject no stream captures, and a stream without a duplicate window.
func (s *sink) checkStream(ctx context.Context) error {
	name, err := s.js.StreamNameBySubject(ctx, s.cfg.Subject)
	if err != nil {
		return fmt.Errorf("nats sink: no JetStream stream captures subject %q: %w", s.cfg.Subject, err)
	}
	st, err := s.js.Stream(ctx, name)
	if err != nil {
		return fmt.Errorf("nats sink: stream %q: %w", name, err)
	}
	cfg := st.CachedInfo().Config
	if cfg.Duplicates <= 0 {
		return fmt.Errorf("nats sink: stream %q has no duplicate window (duplicate_window 0): the sink's exactly-once publishing needs one (the default is 2 minutes)", name)
	}
	s.atomic = cfg.AllowAtomicPublish
	return nil
}

func (s *sink) path(sub int, id uint64) string {
	return filepath.Join(s.dir, s.opPre+strconv.Itoa(sub)+"-"+strconv.FormatUint(id, 10)+".msgs")
}

// stagedFile is a staged checkpoint of a subtask.
type stagedFile struct {
	sub int
	id  uint64
}

// stagedFiles lists what subtask sub staged (sub 0: also the subtasks at or above par), by subtask and id.
func (s *sink) stagedFiles(sub, par int) ([]stagedFile, error) {
	ents, err := s.fsys.ReadDir(s.dir)
	if err != nil {
		return nil, fmt.Errorf("nats sink: %w", err)
	}
	var out []stagedFile
	for _, e := range ents {
		n := e.Name()
		if !strings.HasPrefix(n, s.opPre) || !strings.HasSuffix(n, ".msgs") {
			continue
		}
		subS, idS, ok := strings.Cut(strings.TrimSuffix(strings.TrimPrefix(n, s.opPre), ".msgs"), "-")
		f, err1 := strconv.Atoi(subS)
		id, err2 := strconv.ParseUint(idS, 10, 64)
		if !ok || err1 != nil || err2 != nil || f < 0 {
			continue
		}
		if f == sub || sub == 0 && f >= par {
			out = append(out, stagedFile{sub: f, id: id})
		}
	}
	slices.SortFunc(out, func(a, b stagedFile) int {
		if a.sub != b.sub {
			return a.sub - b.sub
		}
		return cmp.Compare(a.id, b.id)
	})
	return out, nil
}

// Write encodes the batch's rows into the open transaction.
func (s *sink) Write(b exec.Batch) error {
	defer b.Release()
	rec := b.Rec
	n := int(rec.NumRows())
	if s.enc != nil {
		if err := s.enc.Bind(rec.Columns()); err != nil {
			return fmt.Errorf("nats sink: %w", err)
		}
		defer s.enc.Unbind()
	}
	var scratch []byte
	for i := range n {
		if b.Kinds != nil && b.Kinds[i] != exec.Insert {
			return errors.New("nats sink: an append-only sink got an update or a delete")
		}
		if s.enc != nil {
			scratch = s.enc.Append(scratch[:0], i)
			s.buf = appendFramed(s.buf, scratch)
		} else {
			switch a := rec.Column(0).(type) {
			case *array.String:
				s.buf = appendFramed(s.buf, a.Value(i))
			case *array.Binary:
				s.buf = appendFramed(s.buf, a.Value(i))
			default:
				s.buf = appendFramed(s.buf, "")
			}
		}
		s.rows++
	}
	return nil
}

// appendFramed appends a message to the staged buffer: its length, then its bytes.
func appendFramed[T string | []byte](buf []byte, v T) []byte {
	buf = binary.AppendUvarint(buf, uint64(len(v)))
	return append(buf, v...)
}

// PreCommit seals the open transaction under id: its messages, framed and checksummed, in a staged file (none
// when it has no rows).
func (s *sink) PreCommit(id uint64) error {
	if s.rows == 0 {
		return nil
	}
	if err := state.WriteFramed(s.fsys, s.path(s.sub, id), s.buf); err != nil {
		return fmt.Errorf("nats sink: staging checkpoint %d: %w", id, err)
	}
	s.buf, s.rows = s.buf[:0], 0
	s.mu.Lock()
	s.staged = append(s.staged, id)
	s.mu.Unlock()
	return nil
}

// Commit publishes the staged messages of every checkpoint <= id, waits for every acknowledgement, then deletes
// the staged files.
func (s *sink) Commit(id uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var left []uint64
	for _, sid := range s.staged {
		if sid > id {
			left = append(left, sid)
			continue
		}
		if err := s.publish(s.sub, sid); err != nil {
			return err
		}
	}
	s.staged = left
	return nil
}

// publish publishes subtask sub's staged checkpoint id with their ids (<jobOp><sub>-<id>-<i>) and
// deletes its file once the stream acknowledged every one. A file already gone was published.
func (s *sink) publish(sub int, id uint64) error {
	path := s.path(sub, id)
	data, err := state.ReadFramed(s.fsys, path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("nats sink: staged checkpoint %d: %w", id, err)
	}
	var payloads [][]byte
	for len(data) > 0 {
		n, k := binary.Uvarint(data)
		if k <= 0 || uint64(len(data)-k) < n {
			return fmt.Errorf("nats sink: staged checkpoint %d: bad framing", id)
		}
		payloads = append(payloads, data[k:k+int(n)])
		data = data[k+int(n):]
	}
	pre := s.jobOp + strconv.Itoa(sub) + "-" + strconv.FormatUint(id, 10) + "-"
	if s.atomic && len(payloads) <= maxAtomicBatch && len(pre) <= 64 {
		err := s.publishAtomic(pre, payloads)
		if err == nil {
			return s.published(path, payloads)
		}
		// The batch was refused as a whole (one of its ids is stored already, the server's batch limits, ...):
		// publish the messages one by one, the duplicate window dropping those stored before.
		s.log.Debug("nats sink: atomic batch refused, publishing one by one", "checkpoint", id, "error", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), publishTimeout)
	defer cancel()
	futs := make([]jetstream.PubAckFuture, 0, 4096)
	wait := func() error {
		for _, f := range futs {
			select {
			case <-f.Ok():
			case err := <-f.Err():
				return fmt.Errorf("nats sink: publishing checkpoint %d: %w", id, err)
			case <-ctx.Done():
				return fmt.Errorf("nats sink: publishing checkpoint %d: no acknowledgement: %w", id, ctx.Err())
			}
		}
		futs = futs[:0]
		return nil
	}
	for i, payload := range payloads {
		m := &natsgo.Msg{Subject: s.cfg.Subject, Data: payload, Header: natsgo.Header{}}
		m.Header.Set(jetstream.MsgIDHeader, pre+strconv.Itoa(i+1))
		f, err := s.js.PublishMsgAsync(m)
		if err != nil {
			return fmt.Errorf("nats sink: publishing checkpoint %d: %w", id, err)
		}
		futs = append(futs, f)
		if len(futs) == cap(futs) {
			if err := wait(); err != nil {
				return err
			}
		}
	}
	if err := wait(); err != nil {
		return err
	}
	return s.published(path, payloads)
}

// published deletes a staged checkpoint's file once the stream stored all its messages.
func (s *sink) published(path string, payloads [][]byte) error {
	if err := s.fsys.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("nats sink: %w", err)
	}
	var n int64
	for _, p := range payloads {
		n += int64(len(p))
	}
	s.Add(n)
	return nil
}

// maxAtomicBatch is nats-server's default limit of an atomic batch's messages.
const maxAtomicBatch = 1000

// publishAtomic publishes payloads as one atomic batch (Nats-Batch-Id: the ids' prefix; the last message
// commits it) and waits for the commit's acknowledgement: the stream stores all of them or none.
func (s *sink) publishAtomic(pre string, payloads [][]byte) error {
	batch := strings.TrimSuffix(pre, "-")
	for i, p := range payloads {
		m := &natsgo.Msg{Subject: s.cfg.Subject, Data: p, Header: natsgo.Header{}}
		m.Header.Set(jetstream.MsgIDHeader, pre+strconv.Itoa(i+1))
		m.Header.Set("Nats-Batch-Id", batch)
		m.Header.Set("Nats-Batch-Sequence", strconv.Itoa(i+1))
		if i < len(payloads)-1 {
			if err := s.nc.PublishMsg(m); err != nil {
				return err
			}
			continue
		}
		m.Header.Set("Nats-Batch-Commit", "1")
		resp, err := s.nc.RequestMsg(m, publishTimeout)
		if err != nil {
			return err
		}
		var ack struct {
			Error *struct {
				Code        int    `json:"err_code"`
				Description string `json:"description"`
			} `json:"error"`
			Count int `json:"count"`
		}
		if err := json.Unmarshal(resp.Data, &ack); err != nil {
			return fmt.Errorf("commit acknowledgement %q: %w", resp.Data, err)
		}
		if ack.Error != nil {
			return fmt.Errorf("%s (%d)", ack.Error.Description, ack.Error.Code)
		}
		if ack.Count != len(payloads) {
			return fmt.Errorf("the batch's commit acknowledged %d messages, not %d", ack.Count, len(payloads))
		}
	}
	return nil
}

// Abort deletes staged checkpoint id.
func (s *sink) Abort(id uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.staged = slices.DeleteFunc(s.staged, func(x uint64) bool { return x == id })
	if err := s.fsys.Remove(s.path(s.sub, id)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("nats sink: %w", err)
	}
	return nil
}

// Close leaves the staged files for the next Open.
func (s *sink) Close() error {
	if s.nc != nil {
		s.nc.Close()
	}
	return nil
}
