package nats

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/clinksql/clinksql/connectors"
	"github.com/clinksql/clinksql/exec"
)

// NewSource returns the (single) subtask of a NATS JetStream source.
func NewSource(cfg SourceConfig) func(subtask int) exec.Source {
	return func(int) exec.Source { return &source{cfg: cfg} }
}

// requestTimeout bounds the source's JetStream API calls (stream and consumer info, create, reset).
const requestTimeout = 30 * time.Second

// pullExpires is how long one pull request waits on the server for messages.
const pullExpires = 5 * time.Second

// covered is what one barrier's snapshot covers: the reply (ack) subjects of the messages delivered since the
// barrier before, and the highest stream sequence produced so far.
type covered struct {
	id      uint64
	high    uint64
	replies []string
}

// pullReq is an outstanding pull request: the messages it may still deliver.
type pullReq struct {
	id   string
	left int
	sent time.Time
}

type source struct {
	cfg   SourceConfig
	ctx   *exec.TaskContext
	alloc memory.Allocator
	log   *slog.Logger

	nc       *natsgo.Conn
	consumer string // the consumer's name
	next     string // its pull subject
	inbox    string
	// One subscription (inbox.*) takes the replies of every pull request (inbox.<n>), so that messages are queued
	// in the order the server delivered them (each subscription has a goroutine of its own). The server serves
	// a consumer's pull requests in order: a message counts against the oldest request; a status message (on
	// the request's own subject) ends its request.
	sub  *natsgo.Subscription
	reqs []*pullReq
	reqN int
	left int // sum of reqs' left

	// Filled by the subscription's goroutine, drained by Produce.
	qmu         sync.Mutex
	queue       []*natsgo.Msg
	spare       []*natsgo.Msg
	wake        chan struct{}
	reconnected atomic.Bool

	// Acknowledgement bookkeeping, on the source's goroutine only.
	restored bool
	restHigh uint64    // the restored checkpoint's highest stream sequence
	produced uint64    // the highest stream sequence produced (or restored)
	acked    uint64    // the highest stream sequence covered by a checkpoint known complete
	cur      []string  // reply subjects of the messages delivered since the last barrier
	pending  []covered // snapshots whose checkpoints are not known complete, oldest first
	stalled  bool      // logged that max-ack-pending stalls the consumer
	latest   uint64    // a new consumer of 'latest-offset' starts after this stream sequence

	// completed is the highest checkpoint id notified complete (set by the coordinator's goroutine).
	mu        sync.Mutex
	completed uint64

	batch  *batcher
	logged bool
	connectors.ReadProgress
}

var (
	_ exec.Source              = (*source)(nil)
	_ exec.IdleWaiter          = (*source)(nil)
	_ exec.CheckpointOffsetter = (*source)(nil)
	_ exec.CheckpointListener  = (*source)(nil)
	_ exec.SourceProgress      = (*source)(nil)
	_ exec.OffsetDecoder       = (*source)(nil)
)

// offset encoding: version 1, the highest stream sequence covered, the stream's name.
const offsetVersion = 1

func encodeOffset(high uint64, stream string) []byte {
	b := []byte{offsetVersion}
	b = binary.AppendUvarint(b, high)
	return append(b, stream...)
}

func decodeOffset(b []byte) (high uint64, stream string, err error) {
	if len(b) < 2 || b[0] != offsetVersion {
		return 0, "", errors.New("nats source: unreadable checkpointed offset")
	}
	high, n := binary.Uvarint(b[1:])
	if n <= 0 {
		return 0, "", errors.New("nats source: unreadable checkpointed offset")
	}
	return high, string(b[1+n:]), nil
}

// DecodeOffset shows a checkpointed offset (clinksql state-cat).
func (s *source) DecodeOffset(b []byte) ([]exec.StateField, error) {
	high, stream, err := decodeOffset(b)
	if err != nil {
		return nil, err
	}
	return []exec.StateField{exec.Field("stream", stream), exec.Field("covers_up_to_sequence", high)}, nil
}

func (s *source) RestoreOffset(b []byte) error {
	high, stream, err := decodeOffset(b)
	if err != nil {
		return err
	}
	if stream != s.cfg.Stream {
		return fmt.Errorf("nats source: the checkpoint read stream %q, the stream is now %q", stream, s.cfg.Stream)
	}
	s.restored, s.restHigh = true, high
	return nil
}

func (s *source) Open(ctx *exec.TaskContext) error {
	if ctx.Parallelism != 1 {
		return fmt.Errorf("nats source: runs as one subtask, not %d", ctx.Parallelism)
	}
	s.ctx = ctx
	s.alloc = ctx.Alloc
	if s.alloc == nil {
		s.alloc = memory.DefaultAllocator
	}
	s.log = ctx.Log
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.produced, s.acked = s.restHigh, s.restHigh
	var err error
	if s.batch, err = newBatcher(&s.cfg, s.alloc); err != nil {
		return fmt.Errorf("nats source: %w", err)
	}
	s.wake = make(chan struct{}, 1)
	opts, err := s.cfg.Client.Options("clinksql " + ctx.Job + " source")
	if err != nil {
		return fmt.Errorf("nats source: %w", err)
	}
	opts = append(opts, natsgo.ReconnectHandler(func(*natsgo.Conn) {
		s.reconnected.Store(true)
		s.signal()
	}))
	if s.nc, err = natsgo.Connect(s.cfg.Client.URL, opts...); err != nil {
		return fmt.Errorf("nats source: connecting to %s: %w", redact(s.cfg.Client.URL), err)
	}
	rctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	if err := s.openConsumer(rctx); err != nil {
		return err
	}
	s.inbox = natsgo.NewInbox()
	if s.sub, err = s.nc.Subscribe(s.inbox+".*", s.receive); err != nil {
		return fmt.Errorf("nats source: %w", err)
	}
	_ = s.sub.SetPendingLimits(-1, -1)
	s.pull()
	return nil
}

// openConsumer finds or creates the pull consumer and has it deliver, at once, everything not acknowledged by a
// completed checkpoint:
//
//   - restored from a checkpoint that covers stream sequence H > 0: the consumer is reset to H+1 (its ack floor
//     becomes H: what H covers is in the restored state; everything after it is delivered again, even what a
//     later checkpoint that never became the restored one may have had acknowledged);
//   - otherwise an existing durable is reset to its ack floor + 1 (the messages delivered to an earlier
//     incarnation and never acknowledged come again now rather than after AckWait);
//   - a new consumer starts at H+1 when restored, else at 'scan.startup.mode'.
func (s *source) openConsumer(ctx context.Context) error {
	js, err := jetstream.New(s.nc)
	if err != nil {
		return fmt.Errorf("nats source: %w", err)
	}
	st, err := js.Stream(ctx, s.cfg.Stream)
	if err != nil {
		return fmt.Errorf("nats source: stream %q: %w", s.cfg.Stream, err)
	}
	cc := jetstream.ConsumerConfig{
		Durable: s.cfg.Consumer, AckPolicy: jetstream.AckExplicitPolicy, AckWait: s.cfg.AckWait,
		MaxAckPending: s.cfg.MaxAckPending, FilterSubject: s.cfg.Subject, MaxDeliver: -1,
		Description: "clinksql job " + s.ctx.Job,
	}
	switch {
	case s.restored && s.restHigh > 0:
		cc.DeliverPolicy, cc.OptStartSeq = jetstream.DeliverByStartSequencePolicy, s.restHigh+1
	case s.cfg.Startup == StartLatest && !s.restored:
		// After the stream's last message now, as an exact sequence: the offset covers everything before it, so a
		// restore before the first message read starts at the same place, not at the then latest.
		last := st.CachedInfo().State.LastSeq
		cc.DeliverPolicy, cc.OptStartSeq = jetstream.DeliverByStartSequencePolicy, last+1
		s.latest = last
	default:
		cc.DeliverPolicy = jetstream.DeliverAllPolicy
	}
	if s.cfg.Consumer == "" {
		cc.Name = fmt.Sprintf("clinksql_%s_%d", sanitize(s.ctx.Job), time.Now().UnixNano())
		cc.InactiveThreshold = max(time.Hour, 2*s.cfg.AckWait)
		c, err := st.CreateConsumer(ctx, cc)
		if err != nil {
			return fmt.Errorf("nats source: creating a consumer on stream %q: %w", s.cfg.Stream, err)
		}
		s.consumer = c.CachedInfo().Name
		s.startAfter(s.latest)
	} else {
		c, err := st.Consumer(ctx, s.cfg.Consumer)
		switch {
		case errors.Is(err, jetstream.ErrConsumerNotFound):
			if c, err = st.CreateConsumer(ctx, cc); err != nil {
				return fmt.Errorf("nats source: creating durable consumer %q on stream %q: %w", s.cfg.Consumer, s.cfg.Stream, err)
			}
			s.startAfter(s.latest)
		case err != nil:
			return fmt.Errorf("nats source: consumer %q of stream %q: %w", s.cfg.Consumer, s.cfg.Stream, err)
		default:
			have := c.CachedInfo().Config
			if have.AckPolicy != jetstream.AckExplicitPolicy {
				return fmt.Errorf("nats source: durable consumer %q acknowledges with policy %s; the source needs an explicit-ack consumer (delete it, or name another in 'nats.consumer')", s.cfg.Consumer, have.AckPolicy)
			}
			if have.FilterSubject != s.cfg.Subject || len(have.FilterSubjects) > 0 {
				return fmt.Errorf("nats source: durable consumer %q filters %q, option 'nats.subject' is %q (delete it, or name another in 'nats.consumer')", s.cfg.Consumer, have.FilterSubject, s.cfg.Subject)
			}
			if have.DeliverSubject != "" {
				return fmt.Errorf("nats source: durable consumer %q is a push consumer; the source needs a pull consumer", s.cfg.Consumer)
			}
			if have.AckWait != s.cfg.AckWait || have.MaxAckPending != s.cfg.MaxAckPending || have.MaxDeliver != -1 {
				have.AckWait, have.MaxAckPending, have.MaxDeliver = s.cfg.AckWait, s.cfg.MaxAckPending, -1
				if _, err := st.UpdateConsumer(ctx, have); err != nil {
					return fmt.Errorf("nats source: updating durable consumer %q (ack wait, max ack pending): %w", s.cfg.Consumer, err)
				}
			}
			var rerr error
			if s.restored && s.restHigh > 0 {
				_, rerr = st.ResetConsumerToSequence(ctx, s.cfg.Consumer, s.restHigh+1)
				if errors.Is(rerr, jetstream.ErrConsumerInvalidReset) {
					// The consumer starts after H+1 (a later start sequence or time): from its ack floor, and what
					// is at or below H is acknowledged and dropped as it comes.
					_, rerr = st.ResetConsumer(ctx, s.cfg.Consumer)
				}
			} else {
				_, rerr = st.ResetConsumer(ctx, s.cfg.Consumer)
			}
			if rerr != nil {
				// Without the reset (a server before 2.14, or no answer) the unacknowledged messages would come back
				// only after AckWait, behind later ones that moved the position past them, and be dropped as
				// redeliveries: refuse rather than lose them.
				return fmt.Errorf("nats source: could not reset durable consumer %q to its ack floor (the consumer "+
					"reset API needs nats-server 2.14 or later): %w", s.cfg.Consumer, rerr)
			}
		}
		s.consumer = s.cfg.Consumer
	}
	s.next = fmt.Sprintf("$JS.API.CONSUMER.MSG.NEXT.%s.%s", s.cfg.Stream, s.consumer)
	if c, err := st.Consumer(ctx, s.consumer); err == nil {
		s.Set(int64(c.CachedInfo().NumPending), -1, -1)
	}
	s.log.Info("nats source: consuming", "stream", s.cfg.Stream, "consumer", s.consumer, "restored_sequence", s.restHigh)
	return nil
}

// startAfter makes a new consumer's start (after stream sequence last) the position: checkpoints cover it.
func (s *source) startAfter(last uint64) {
	s.produced, s.acked = max(s.produced, last), max(s.acked, last)
}

func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, s)
}

// redact drops a URL's password.
func redact(u string) string {
	if i, j := strings.Index(u, "://"), strings.LastIndex(u, "@"); i >= 0 && j > i {
		return u[:i+3] + "***@" + u[j+1:]
	}
	return u
}

// receive runs on the subscription's goroutine: it only queues the message and wakes Produce.
func (s *source) receive(m *natsgo.Msg) {
	s.qmu.Lock()
	s.queue = append(s.queue, m)
	s.qmu.Unlock()
	s.signal()
}

func (s *source) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// IdleWait is signalled when messages arrived, a checkpoint completed or the connection came back.
func (s *source) IdleWait() <-chan struct{} { return s.wake }

// pull keeps up to two pull requests' worth of messages requested or queued.
func (s *source) pull() {
	now := time.Now()
	live := s.reqs[:0]
	for _, r := range s.reqs {
		if now.Sub(r.sent) > pullExpires+5*time.Second { // its end status was lost
			s.left -= r.left
			continue
		}
		live = append(live, r)
	}
	clear(s.reqs[len(live):])
	s.reqs = live
	s.qmu.Lock()
	queued := len(s.queue)
	s.qmu.Unlock()
	n := s.cfg.FetchSize
	if s.cfg.MaxAckPending > 0 {
		n = min(n, s.cfg.MaxAckPending)
	}
	if s.left+queued >= n || len(s.reqs) >= 2 {
		return
	}
	s.reqN++
	id := strconv.Itoa(s.reqN)
	req := fmt.Appendf(nil, `{"batch":%d,"expires":%d}`, n, pullExpires.Nanoseconds())
	if err := s.nc.PublishRequest(s.next, s.inbox+"."+id, req); err != nil {
		s.log.Debug("nats source: pull request", "error", err)
		return
	}
	s.reqs = append(s.reqs, &pullReq{id: id, left: n, sent: now})
	s.left += n
}

// endRequest forgets a pull request that ended with a status or was lost.
func (s *source) endRequest(id string) {
	i := slices.IndexFunc(s.reqs, func(r *pullReq) bool { return r.id == id })
	if i < 0 {
		return
	}
	s.left -= s.reqs[i].left
	s.reqs = slices.Delete(s.reqs, i, i+1)
}

// delivered counts a message against the oldest request.
func (s *source) delivered() {
	if len(s.reqs) == 0 {
		return
	}
	r := s.reqs[0]
	r.left--
	s.left--
	if r.left <= 0 {
		s.reqs = slices.Delete(s.reqs, 0, 1)
	}
}

// take takes up to n queued messages.
func (s *source) take(n int) []*natsgo.Msg {
	s.qmu.Lock()
	defer s.qmu.Unlock()
	if len(s.queue) <= n {
		out := s.queue
		s.queue = s.spare[:0]
		s.spare = nil
		return out
	}
	out := make([]*natsgo.Msg, n)
	copy(out, s.queue)
	s.queue = append(s.queue[:0], s.queue[n:]...)
	return out
}

// ackCompleted acknowledges every message covered by a checkpoint known complete, without waiting for the
// server (a lost ack only means a redelivery, which is acknowledged and dropped by its stream sequence).
func (s *source) ackCompleted() {
	s.mu.Lock()
	done := s.completed
	s.mu.Unlock()
	n := 0
	for n < len(s.pending) && s.pending[n].id <= done {
		c := s.pending[n]
		for _, r := range c.replies {
			if err := s.nc.Publish(r, ackPayload); err != nil {
				s.log.Debug("nats source: ack", "error", err)
			}
		}
		s.acked = max(s.acked, c.high)
		n++
	}
	if n > 0 {
		clear(s.pending[:n])
		s.pending = s.pending[n:]
		s.stalled = false
	}
}

var ackPayload = []byte("+ACK")

// Produce decodes the queued messages into a batch, or returns Idle when none came.
func (s *source) Produce(ctx context.Context) (exec.SourceResult, error) {
	if s.nc == nil {
		return exec.SourceResult{}, errors.New("nats source: produce before open")
	}
	if s.reconnected.Load() {
		// Messages sent while the connection was down are lost on the wire; the server redelivers them only after
		// AckWait, by which time later ones have moved the position past them and they would be dropped as
		// redeliveries. A restart from the last completed checkpoint resets the consumer there: nothing is lost.
		return exec.SourceResult{}, fmt.Errorf("nats source: the connection to %s was lost and re-established "+
			"while messages were in flight; restarting from the last completed checkpoint so that none is lost",
			redact(s.cfg.Client.URL))
	}
	s.ackCompleted()
	limit := s.cfg.BatchRows
	var lastPending int64 = -1
	for s.batch.rowCount() < limit {
		msgs := s.take(limit - s.batch.rowCount())
		if len(msgs) == 0 {
			break
		}
		for i, m := range msgs {
			msgs[i] = nil
			if m.Reply == "" {
				s.status(m)
				continue
			}
			md, ok := parseReply(m.Reply)
			if !ok {
				s.log.Warn("nats source: message without JetStream metadata dropped", "subject", m.Subject)
				continue
			}
			s.delivered()
			lastPending = int64(md.pending)
			switch {
			case md.seq <= s.acked:
				// Reflected in the state of a completed checkpoint (a redelivery after a lost ack, or after a
				// restore that could not reset the consumer): acknowledged and dropped.
				_ = s.nc.Publish(m.Reply, ackPayload)
				continue
			case md.seq <= s.produced:
				// Redelivered while the checkpoint that covers it is in flight: dropped, acknowledged with it.
				s.cur = append(s.cur, m.Reply)
				continue
			}
			s.produced = md.seq
			s.cur = append(s.cur, m.Reply)
			if err := s.batch.add(m, md); err != nil {
				if err := s.bad(md, err); err != nil {
					return exec.SourceResult{}, err
				}
			}
		}
		s.qmu.Lock()
		if s.spare == nil {
			s.spare = msgs[:0]
		}
		s.qmu.Unlock()
	}
	s.pull()
	s.report(lastPending)
	if s.cfg.MaxAckPending > 0 && !s.stalled && s.unacked() >= s.cfg.MaxAckPending {
		s.stalled = true
		s.log.Warn("nats source: 'nats.max-ack-pending' reached: the consumer delivers nothing more until the next checkpoint completes and acknowledges; raise it (or -1) or shorten the checkpoint interval",
			"max_ack_pending", s.cfg.MaxAckPending)
	}
	if s.batch.rowCount() == 0 {
		return exec.SourceResult{Status: exec.Idle, WM: exec.MinWatermark}, nil
	}
	b, bad, err := s.batch.build()
	if err != nil {
		return exec.SourceResult{}, fmt.Errorf("nats source: %w", err)
	}
	if bad != nil {
		if err := s.bad(bad.md, bad.err); err != nil {
			b.Release()
			return exec.SourceResult{}, err
		}
		if n := bad.count - 1; n > 0 && s.ctx.Errors != nil {
			s.ctx.Errors.Add(int64(n))
		}
	}
	if b.Rows() == 0 {
		b.Release()
		return exec.SourceResult{Status: exec.Idle, WM: exec.MinWatermark}, nil
	}
	return exec.SourceResult{Status: exec.Produced, Batch: b, WM: exec.MinWatermark}, nil
}

func (s *source) unacked() int {
	n := len(s.cur)
	for _, c := range s.pending {
		n += len(c.replies)
	}
	return n
}

func (s *source) report(lastPending int64) {
	s.qmu.Lock()
	queued := int64(len(s.queue))
	s.qmu.Unlock()
	if lastPending >= 0 {
		s.Set(lastPending+queued, -1, -1)
	}
}

// status handles a status message of a pull request (404 no messages, 408 expired, 409 a limit): the request
// is over.
func (s *source) status(m *natsgo.Msg) {
	code := m.Header.Get("Status")
	if code == "100" { // a heartbeat
		return
	}
	if strings.HasPrefix(m.Subject, s.inbox+".") {
		s.endRequest(m.Subject[len(s.inbox)+1:])
	}
	if code == "409" {
		s.log.Debug("nats source: pull request ended", "status", code, "description", m.Header.Get("Description"))
	}
}

// bad handles a message that cannot be read: the error in fail mode, else counted, logged once, skipped (and
// acknowledged with its checkpoint like every other).
func (s *source) bad(md msgMeta, err error) error {
	msg := fmt.Sprintf("nats source: stream %s sequence %d: %v", s.cfg.Stream, md.seq, err)
	if s.cfg.BadRows == "fail" {
		return badRowError(msg, err)
	}
	if s.ctx.Errors != nil {
		s.ctx.Errors.Add(1)
	}
	if !s.logged {
		s.logged = true
		s.log.Warn("nats source: skipping messages that cannot be read (counted in the job's errors; logged once)", "error", msg)
	}
	return nil
}

// SnapshotOffsetAt records that checkpoint id covers every message delivered so far: they are acknowledged once
// it (or a later checkpoint) completes, never at the barrier.
func (s *source) SnapshotOffsetAt(id uint64) ([]byte, error) {
	if s.nc == nil {
		return nil, errors.New("nats source: snapshot before open")
	}
	// Nothing new since the last barrier: nothing to record (whatever is pending waits for its own, lower, id, and
	// the completion of this one implies it).
	if len(s.cur) > 0 {
		s.pending = append(s.pending, covered{id: id, high: s.produced, replies: s.cur})
		s.cur = nil
	}
	s.log.Debug("nats source: checkpoint covers", "checkpoint", id, "sequence", s.produced)
	return encodeOffset(s.produced, s.cfg.Stream), nil
}

// SnapshotOffset is the offset without a checkpoint id (the runtime calls SnapshotOffsetAt).
func (s *source) SnapshotOffset() ([]byte, error) {
	return encodeOffset(s.produced, s.cfg.Stream), nil
}

// NotifyCheckpointComplete hands id to the source's goroutine, which acknowledges what checkpoints <= id cover.
func (s *source) NotifyCheckpointComplete(id uint64) {
	s.mu.Lock()
	if id > s.completed {
		s.completed = id
	}
	s.mu.Unlock()
	if s.wake != nil {
		s.signal()
	}
}

// NotifyCheckpointAborted leaves the messages unacknowledged: the next checkpoint to complete covers them too.
func (s *source) NotifyCheckpointAborted(uint64) {}

func (s *source) Close() error {
	if s.sub != nil {
		_ = s.sub.Unsubscribe()
	}
	if s.nc != nil {
		s.nc.Close()
	}
	if s.batch != nil {
		s.batch.release()
		s.batch = nil
	}
	s.qmu.Lock()
	s.queue = nil
	s.qmu.Unlock()
	return nil
}

// msgMeta is what a message's reply subject tells: $JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.<dseq>.<ns>.
// <pending> (or the v2 form with a domain and an account hash before the stream, and a token after).
type msgMeta struct {
	seq, pending uint64
	delivered    uint64
	ts           int64
}

func parseReply(r string) (msgMeta, bool) {
	if !strings.HasPrefix(r, "$JS.ACK.") {
		return msgMeta{}, false
	}
	var toks [12]string
	n := 0
	rest := r
	for n < len(toks) {
		i := strings.IndexByte(rest, '.')
		if i < 0 {
			toks[n] = rest
			n++
			break
		}
		toks[n] = rest[:i]
		rest = rest[i+1:]
		n++
	}
	var t []string
	switch {
	case n == 9:
		t = toks[4:9]
	case n >= 11:
		t = toks[6:11]
	default:
		return msgMeta{}, false
	}
	var md msgMeta
	var err error
	if md.delivered, err = strconv.ParseUint(t[0], 10, 64); err != nil {
		return md, false
	}
	if md.seq, err = strconv.ParseUint(t[1], 10, 64); err != nil {
		return md, false
	}
	if md.ts, err = strconv.ParseInt(t[3], 10, 64); err != nil {
		return md, false
	}
	if md.pending, err = strconv.ParseUint(t[4], 10, 64); err != nil {
		return md, false
	}
	return md, true
}

// headersJSON is the headers as a JSON object of strings (a repeated name: its last value).
func headersJSON(h natsgo.Header) string {
	if len(h) == 0 {
		return "{}"
	}
	m := make(map[string]string, len(h))
	for k, vs := range h {
		if len(vs) > 0 {
			m[strings.ToValidUTF8(k, "\uFFFD")] = strings.ToValidUTF8(vs[len(vs)-1], "\uFFFD")
		}
	}
	b, _ := json.Marshal(m)
	return string(b)
}
