package kafka

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/clinksql/clinksql/connectors"
	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/sqlerr"
)

// NewSource returns the subtasks of a Kafka source. Configuration errors that only the brokers can tell (a topic
// that does not exist) surface at Open.
func NewSource(cfg SourceConfig) func(subtask int) exec.Source {
	return func(int) exec.Source { return &source{cfg: cfg} }
}

// requestTimeout bounds the source's own admin requests (offset listings, metadata, commits).
const requestTimeout = 30 * time.Second

// tp names a partition.
type tp struct {
	topic string
	part  int32
}

func (a tp) less(b tp) bool { return a.topic < b.topic || a.topic == b.topic && a.part < b.part }

// partition is the read state of one partition this subtask owns.
type partition struct {
	tp
	next int64 // the offset of the next record to read: everything before it was produced
	end  int64 // bounded: the offset to stop before; -1: none
	// known is the end of the partition last heard of (the last stable offset: read_committed reads no further),
	// from a listing at Open or discovery, then from every fetch response; -1 when not known.
	known   int64
	wm      int64 // the running maximum of the watermark over the partition's rows
	last    time.Time
	pending []*kgo.Record // fetched, not produced yet
	logged  bool          // a bad record of this partition was logged
	removed bool          // done, and no longer fetched
}

func (p *partition) done() bool { return p.end >= 0 && p.next >= p.end }

type source struct {
	cfg   SourceConfig
	ctx   *exec.TaskContext
	alloc memory.Allocator
	log   *slog.Logger
	sub   int
	par   int

	cl    *kgo.Client
	adm   *kadm.Client
	wake  chan struct{}
	parts map[tp]*partition
	order []tp // sorted, for round-robin and snapshots
	turn  int

	restored      *sourceOffset
	batcher       *batcher
	nextDiscovery time.Time
	// upsert: keys already in the batch being built (a repeat ends the batch first), and the state keys.
	batchKeys map[string]bool

	mu         sync.Mutex
	commits    []map[tp]int64 // offsets of snapshots whose checkpoints are neither complete nor aborted, oldest first
	closed     bool
	committing sync.WaitGroup

	connectors.ReadProgress // the records behind the ends of the partitions
}

var (
	_ exec.SourceProgress     = (*source)(nil)
	_ exec.Source             = (*source)(nil)
	_ exec.IdleWaiter         = (*source)(nil)
	_ exec.CheckpointListener = (*source)(nil)
)

// owner is the subtask that reads a partition: Flink's assignment (a topic's partitions spread round-robin from a
// start that depends on the topic's name), the same in every incarnation of a parallelism.
func owner(topic string, part int32, par int) int {
	h := fnv.New32a()
	h.Write([]byte(topic))
	start := int(h.Sum32()&0x7fffffff) % par
	return (start + int(part)) % par
}

func (s *source) RestoreOffset(b []byte) error {
	o, err := decodeSourceOffset(b)
	if err != nil {
		return err
	}
	s.restored = &o
	return nil
}

func (s *source) Open(ctx *exec.TaskContext) error {
	if ctx.Parallelism < 1 || ctx.Subtask < 0 || ctx.Subtask >= ctx.Parallelism {
		return fmt.Errorf("kafka source: subtask %d of %d", ctx.Subtask, ctx.Parallelism)
	}
	s.ctx, s.sub, s.par = ctx, ctx.Subtask, ctx.Parallelism
	s.alloc = ctx.Alloc
	if s.alloc == nil {
		s.alloc = memory.DefaultAllocator
	}
	s.log = ctx.Log
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if o := s.restored; o != nil && (o.sub != s.sub || o.par != s.par) {
		return fmt.Errorf("kafka source: offset of subtask %d of %d restored into subtask %d of %d: restore at the same parallelism",
			o.sub, o.par, s.sub, s.par)
	}
	if s.cfg.Upsert && ctx.State == nil {
		return errors.New("kafka source: upsert-kafka needs the subtask's state")
	}
	var err error
	if s.batcher, err = newBatcher(&s.cfg, s.alloc); err != nil {
		return fmt.Errorf("kafka source: %w", err)
	}
	s.wake = make(chan struct{}, 1)
	opts := append(s.cfg.Client.Opts(),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(), // so that a partition whose last records are a transaction's marker is seen to reach its end
		kgo.WithHooks(wakeHook(s.wake)),
		// Partitions added by a discovery are fetched once the client's metadata names them and the broker's
		// long-poll fetch returns: refresh the one soon, and bound the other as Kafka's consumer does (500 ms).
		kgo.MetadataMinAge(100*time.Millisecond),
		kgo.FetchMaxWait(500*time.Millisecond),
		kgo.WithPools(&recordPool{}), // batchOf recycles the records it read
	)
	if s.cl, err = kgo.NewClient(opts...); err != nil {
		return fmt.Errorf("kafka source: %w", err)
	}
	s.adm = kadm.NewClient(s.cl)
	s.parts = map[tp]*partition{}
	rctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	if s.restored != nil {
		// Exactly the partitions and positions of the checkpoint, then any partition that appeared since, from its
		// start.
		for _, p := range s.restored.parts {
			s.parts[p.tp] = &partition{tp: p.tp, next: p.next, end: p.end, wm: p.wm, last: time.Now(), known: -1}
		}
		s.sortOrder()
	}
	found, err := s.listPartitions(rctx)
	if err != nil {
		return err
	}
	var fresh []tp
	for _, t := range found {
		if _, ok := s.parts[t]; !ok {
			fresh = append(fresh, t)
		}
	}
	mode := s.cfg.Startup
	if s.restored != nil {
		mode = Position{Mode: ModeEarliest}
	}
	if err := s.addPartitions(rctx, fresh, mode); err != nil {
		return err
	}
	if s.restored == nil && s.cfg.Bounded.Mode != ModeUnbounded {
		if err := s.setEnds(rctx); err != nil {
			return err
		}
	}
	if s.cfg.Bounded.Mode == ModeUnbounded {
		if err := s.listEnds(rctx, s.order); err != nil {
			return err
		}
	}
	s.report()
	s.consume(s.order)
	if s.cfg.Discovery > 0 && s.cfg.Bounded.Mode == ModeUnbounded {
		s.nextDiscovery = time.Now().Add(s.cfg.Discovery)
	}
	return nil
}

// recordPool reuses the client's slices of fetched records (kgo.PoolRecords): the source recycles each record
// once it was read into a batch, and a slice whose records were all recycled comes back here.
type recordPool struct{ p sync.Pool }

func (rp *recordPool) GetRecords(n int) []kgo.Record {
	if s, ok := rp.p.Get().([]kgo.Record); ok && cap(s) >= n {
		return s[:0]
	}
	return make([]kgo.Record, 0, n)
}

func (rp *recordPool) PutRecords(s []kgo.Record) { rp.p.Put(s[:0]) }

// wakeHook signals that records were buffered (IdleWait).
type wakeHook chan struct{}

func (w wakeHook) OnFetchRecordBuffered(*kgo.Record) {
	select {
	case w <- struct{}{}:
	default:
	}
}

// IdleWait is signalled when the client buffered records (exec.IdleWaiter).
func (s *source) IdleWait() <-chan struct{} { return s.wake }

// listPartitions returns the partitions of the subscribed topics that this subtask owns, sorted. A named topic
// that does not exist is an error. It asks a broker (not the client's metadata cache, which may be seconds old).
func (s *source) listPartitions(ctx context.Context) ([]tp, error) {
	req := kmsg.NewPtrMetadataRequest()
	if s.cfg.TopicPattern == nil {
		for _, t := range s.cfg.Topics {
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(t)
			req.Topics = append(req.Topics, rt)
		}
	}
	resp, err := req.RequestWith(ctx, s.cl)
	if err != nil {
		return nil, fmt.Errorf("kafka source: listing topics: %w", err)
	}
	var out []tp
	seen := map[string]bool{}
	for _, t := range resp.Topics {
		if t.Topic == nil {
			continue
		}
		name := *t.Topic
		if s.cfg.TopicPattern != nil && (t.IsInternal || !s.cfg.TopicPattern.MatchString(name)) {
			continue
		}
		if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
			if errors.Is(err, kerr.UnknownTopicOrPartition) {
				return nil, fmt.Errorf("kafka source: topic %s does not exist", name)
			}
			return nil, fmt.Errorf("kafka source: topic %s: %w", name, err)
		}
		seen[name] = true
		for _, p := range t.Partitions {
			if owner(name, p.Partition, s.par) == s.sub {
				out = append(out, tp{name, p.Partition})
			}
		}
	}
	for _, name := range s.cfg.Topics {
		if !seen[name] {
			return nil, fmt.Errorf("kafka source: topic %s does not exist", name)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].less(out[j]) })
	return out, nil
}

// addPartitions starts reading partitions at the offsets pos resolves to now (exact numbers, so a checkpoint
// taken before their first record still records where they start).
func (s *source) addPartitions(ctx context.Context, ts []tp, pos Position) error {
	if len(ts) == 0 {
		return nil
	}
	topics := map[string]bool{}
	for _, t := range ts {
		topics[t.topic] = true
	}
	names := make([]string, 0, len(topics))
	for t := range topics {
		names = append(names, t)
	}
	sort.Strings(names)
	list := func(mode string) (kadm.ListedOffsets, error) {
		var l kadm.ListedOffsets
		var err error
		switch mode {
		case ModeLatest:
			l, err = s.adm.ListCommittedOffsets(ctx, names...) // read_committed: the last stable offset
		case ModeTimestamp:
			l, err = s.adm.ListOffsetsAfterMilli(ctx, pos.TimestampMillis, names...)
		default:
			l, err = s.adm.ListStartOffsets(ctx, names...)
		}
		if err == nil {
			err = l.Error()
		}
		if err != nil {
			return nil, fmt.Errorf("kafka source: listing %s offsets: %w", mode, err)
		}
		return l, nil
	}
	start, err := list(ModeEarliest)
	if err != nil {
		return err
	}
	var at kadm.ListedOffsets
	var group kadm.OffsetResponses
	switch pos.Mode {
	case ModeLatest, ModeTimestamp:
		if at, err = list(pos.Mode); err != nil {
			return err
		}
	case ModeGroup:
		if group, err = s.adm.FetchOffsets(ctx, s.cfg.GroupID); err == nil {
			err = group.Error()
		}
		if errors.Is(err, kerr.GroupIDNotFound) {
			group, err = nil, nil // a group that never committed: every partition starts at the reset position
		}
		if err != nil {
			return fmt.Errorf("kafka source: fetching the offsets of group %s: %w", s.cfg.GroupID, err)
		}
		if s.cfg.GroupReset == ModeLatest {
			if at, err = list(ModeLatest); err != nil {
				return err
			}
		}
	}
	for _, t := range ts {
		first, _ := start.Lookup(t.topic, t.part)
		next := first.Offset
		switch pos.Mode {
		case ModeLatest, ModeTimestamp:
			if o, ok := at.Lookup(t.topic, t.part); ok && o.Offset >= 0 {
				next = o.Offset
			}
		case ModeSpecific:
			if o, ok := pos.Offsets[t.part]; ok {
				next = o
			}
		case ModeGroup:
			if o, ok := group.Lookup(t.topic, t.part); ok && o.Err == nil && o.At >= 0 {
				next = o.At
			} else if o, ok := at.Lookup(t.topic, t.part); ok && o.Offset >= 0 {
				next = o.Offset
			}
		}
		if next < first.Offset {
			next = first.Offset
		}
		s.parts[t] = &partition{tp: t, next: next, end: -1, wm: exec.MinWatermark, last: time.Now(), known: -1}
	}
	s.sortOrder()
	return nil
}

// sortOrder lists the partitions in order.
func (s *source) sortOrder() {
	s.order = s.order[:0]
	for t := range s.parts {
		s.order = append(s.order, t)
	}
	sort.Slice(s.order, func(i, j int) bool { return s.order[i].less(s.order[j]) })
}

// topicsOf lists the topics of ts, each once.
func topicsOf(ts []tp) []string {
	var names []string
	for _, t := range ts {
		if !slices.Contains(names, t.topic) {
			names = append(names, t.topic)
		}
	}
	return names
}

// lastStable lists the last stable offsets (the ends a read_committed reader sees) of the partitions of topics.
func (s *source) lastStable(ctx context.Context, topics []string) (kadm.ListedOffsets, error) {
	lso, err := s.adm.ListCommittedOffsets(ctx, topics...)
	if err == nil {
		err = lso.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("kafka source: listing end offsets: %w", err)
	}
	return lso, nil
}

// setEnds captures the bounded mode's end offsets (they are kept in the offset, so a restore ends at the same).
func (s *source) setEnds(ctx context.Context) error {
	if len(s.order) == 0 {
		return nil
	}
	names := topicsOf(s.order)
	lso, err := s.lastStable(ctx, names)
	if err != nil {
		return err
	}
	var at kadm.ListedOffsets
	if s.cfg.Bounded.Mode == ModeTimestamp {
		if at, err = s.adm.ListOffsetsAfterMilli(ctx, s.cfg.Bounded.TimestampMillis, names...); err == nil {
			err = at.Error()
		}
		if err != nil {
			return fmt.Errorf("kafka source: listing offsets at %d: %w", s.cfg.Bounded.TimestampMillis, err)
		}
	}
	for _, t := range s.order {
		p := s.parts[t]
		end, _ := lso.Lookup(t.topic, t.part)
		p.end = end.Offset
		switch s.cfg.Bounded.Mode {
		case ModeTimestamp:
			if o, ok := at.Lookup(t.topic, t.part); ok && o.Offset >= 0 && o.Offset < p.end {
				p.end = o.Offset
			}
		case ModeSpecific:
			if o, ok := s.cfg.Bounded.Offsets[t.part]; ok {
				p.end = o
			}
		}
		p.end = max(p.end, 0)
	}
	return nil
}

// listEnds learns where partitions end now (their last stable offsets), for the progress; fetch responses keep
// it up to date after that.
func (s *source) listEnds(ctx context.Context, ts []tp) error {
	if len(ts) == 0 {
		return nil
	}
	lso, err := s.lastStable(ctx, topicsOf(ts))
	if err != nil {
		return err
	}
	for _, t := range ts {
		if o, ok := lso.Lookup(t.topic, t.part); ok && o.Offset >= 0 {
			s.parts[t].known = o.Offset
		}
	}
	return nil
}

// report sets the progress: the records between each partition's position and its end (a bounded partition's,
// else the last one heard of), unknown while a partition's end is not known. Transaction markers count as
// records, as in Kafka's own consumer lag.
func (s *source) report() {
	var lag int64
	for _, p := range s.parts {
		end := p.end
		if end < 0 {
			end = p.known
		}
		if end < 0 {
			s.Set(-1, -1, -1)
			return
		}
		lag += max(end-p.next, 0)
	}
	s.Set(lag, -1, -1)
}

// consume has the client fetch partitions from their positions (those not done).
func (s *source) consume(ts []tp) {
	m := map[string]map[int32]kgo.Offset{}
	for _, t := range ts {
		p := s.parts[t]
		if p.done() {
			continue
		}
		if m[t.topic] == nil {
			m[t.topic] = map[int32]kgo.Offset{}
		}
		m[t.topic][t.part] = kgo.NewOffset().At(p.next)
	}
	if len(m) > 0 {
		s.cl.AddConsumePartitions(m)
	}
}

// discover adds the partitions (and, with a pattern, topics) that appeared, read from their start.
func (s *source) discover(ctx context.Context) error {
	rctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	found, err := s.listPartitions(rctx)
	if err != nil {
		return err
	}
	var fresh []tp
	for _, t := range found {
		if _, ok := s.parts[t]; !ok {
			fresh = append(fresh, t)
		}
	}
	if err := s.addPartitions(rctx, fresh, Position{Mode: ModeEarliest}); err != nil {
		return err
	}
	if err := s.listEnds(rctx, fresh); err != nil {
		return err
	}
	s.consume(fresh)
	if len(fresh) > 0 {
		s.log.Info("kafka source: new partitions", "subtask", s.sub, "count", len(fresh))
	}
	return nil
}

// Produce returns a batch of one partition's records (partitions take turns), or Idle when nothing is fetched,
// or Finished when a bounded source read every partition to its end.
func (s *source) Produce(ctx context.Context) (exec.SourceResult, error) {
	if s.cl == nil {
		return exec.SourceResult{}, errors.New("kafka source: produce before open")
	}
	if !s.nextDiscovery.IsZero() && time.Now().After(s.nextDiscovery) {
		if err := s.discover(ctx); err != nil {
			return exec.SourceResult{}, err
		}
		s.nextDiscovery = time.Now().Add(s.cfg.Discovery)
	}
	if err := s.poll(); err != nil {
		return exec.SourceResult{}, err
	}
	defer s.report()
	for range len(s.order) {
		p := s.parts[s.order[s.turn%len(s.order)]]
		if len(p.pending) == 0 {
			s.turn++
			continue
		}
		b, err := s.batchOf(p)
		if err != nil {
			return exec.SourceResult{}, err
		}
		if len(p.pending) == 0 {
			s.turn++
		}
		if b.Rows() == 0 {
			b.Release()
			continue
		}
		return exec.SourceResult{Status: exec.Produced, Batch: b, WM: s.watermark()}, nil
	}
	if s.cfg.Bounded.Mode != ModeUnbounded && s.allDone() {
		return exec.SourceResult{Status: exec.Finished, WM: exec.MaxWatermark}, nil
	}
	return exec.SourceResult{Status: exec.Idle, WM: s.watermark()}, nil
}

func (s *source) allDone() bool {
	for _, p := range s.parts {
		if !p.done() || len(p.pending) > 0 {
			return false
		}
	}
	return true
}

// poll takes what the client buffered (without waiting) into the partitions' queues.
func (s *source) poll() error {
	fs := s.cl.PollRecords(nil, 0)
	var ferr error
	fs.EachError(func(topic string, part int32, err error) {
		if ferr == nil && !errors.Is(err, context.Canceled) {
			ferr = fmt.Errorf("kafka source: fetching %s/%d: %w", topic, part, err)
		}
	})
	if ferr != nil {
		return ferr
	}
	fs.EachPartition(func(fp kgo.FetchTopicPartition) {
		p := s.parts[tp{fp.Topic, fp.Partition}]
		if p == nil {
			return
		}
		p.pending = append(p.pending, fp.Records...)
		if fp.Err != nil {
			return
		}
		if end := fp.LastStableOffset; end >= 0 {
			p.known = end
		} else if fp.HighWatermark >= 0 {
			p.known = fp.HighWatermark
		}
	})
	return nil
}

// batchOf decodes up to a batch of p's pending records, skipping control records and stopping at the end of a
// bounded partition.
func (s *source) batchOf(p *partition) (exec.Batch, error) {
	limit := s.cfg.BatchRows
	if limit <= 0 {
		limit = DefaultBatchRows
	}
	b := s.batcher
	b.reserve(min(limit, len(p.pending)))
	clear(s.batchKeys)
	used, read := 0, false
	for used < len(p.pending) && b.rowCount() < limit {
		r := p.pending[used]
		if r.Offset < p.next {
			used++ // fetched again after a reset: already produced
			continue
		}
		if p.end >= 0 && r.Offset >= p.end {
			break
		}
		if r.Attrs.IsControl() {
			p.next = r.Offset + 1
			used++
			continue
		}
		var d *decodeErr
		if s.cfg.Upsert {
			k := string(r.Key)
			if s.batchKeys[k] {
				break // the key's last record is in this batch: the next batch reads it from the state
			}
			prev, err := s.lastRecord(r)
			if err != nil {
				return exec.Batch{}, err
			}
			if r.Key == nil {
				d = &decodeErr{err: sqlerr.New(sqlerr.InvalidTextRep, sqlerr.NoPos, "upsert-kafka record without a key")}
			} else {
				d = b.addUpsert(r, prev)
			}
			if s.batchKeys == nil {
				s.batchKeys = map[string]bool{}
			}
			s.batchKeys[k] = true
		} else {
			d = b.add(r)
		}
		if d != nil {
			if err := s.bad(p, r, d, 1); err != nil {
				b.reset()
				return exec.Batch{}, err
			}
		}
		p.next = r.Offset + 1
		read = true
		used++
	}
	if read {
		p.last = time.Now()
	}
	// The records read go back to the client's pool once the batch is built (every use of them is over then).
	consumed := p.pending[:used:used]
	defer func() {
		for _, r := range consumed {
			r.Recycle()
		}
		clear(consumed)
	}()
	p.pending = p.pending[used:]
	if p.done() && !p.removed {
		// What was fetched beyond the end is not read, and the client stops fetching the partition.
		p.pending, p.removed = nil, true
		s.cl.RemoveConsumePartitions(map[string][]int32{p.topic: {p.part}})
	}
	if b.rowCount() == 0 {
		b.reset()
		return exec.Batch{}, nil
	}
	out, dropped, first, err := b.batch()
	if err != nil {
		b.reset()
		return exec.Batch{}, fmt.Errorf("kafka source: %s/%d: %w", p.topic, p.part, err)
	}
	if len(dropped) > 0 {
		if err := s.bad(p, b.groups[first.group], first, len(dropped)); err != nil {
			out.Release()
			b.reset()
			return exec.Batch{}, err
		}
	}
	if s.cfg.Upsert {
		s.remember(dropped)
	}
	b.reset()
	if s.cfg.Watermark != nil && out.Rows() > 0 {
		wm, ok, err := s.cfg.Watermark(s.ctx, out.Rec)
		if err != nil {
			out.Release()
			return exec.Batch{}, err
		}
		if ok && wm > p.wm {
			p.wm = wm
		}
	}
	return out, nil
}

// bad handles n records that cannot be read, the first r: the error in fail mode, else counted and logged once
// per partition.
func (s *source) bad(p *partition, r *kgo.Record, d *decodeErr, n int) error {
	msg := describeBad(r, d)
	if s.cfg.BadRows == "fail" {
		return &sqlerr.Error{Code: d.err.Code, Pos: sqlerr.NoPos, Msg: msg, Err: d.err}
	}
	if s.ctx.Errors != nil {
		s.ctx.Errors.Add(int64(n))
	}
	if !p.logged {
		p.logged = true
		s.log.Warn("kafka source: skipping records that cannot be read (counted in the job's errors; logged once per partition)",
			"error", msg)
	}
	return nil
}

// watermark is the subtask's: the minimum over its partitions that are neither idle nor finished; when every
// partition is, the maximum (nothing holds it back).
func (s *source) watermark() int64 {
	if s.cfg.Watermark == nil {
		return exec.MinWatermark
	}
	now := time.Now()
	lo, hi, active := exec.MaxWatermark, exec.MinWatermark, false
	for _, p := range s.parts {
		hi = max(hi, p.wm)
		idle := s.cfg.IdleTimeout > 0 && len(p.pending) == 0 && now.Sub(p.last) >= s.cfg.IdleTimeout
		if p.done() && len(p.pending) == 0 || idle {
			continue
		}
		active = true
		lo = min(lo, p.wm)
	}
	if !active {
		return hi
	}
	return lo
}

// SnapshotOffset is every owned partition's next offset, end and watermark (sourceOffset); the offsets are also
// queued for the group commit once the checkpoint completes.
func (s *source) SnapshotOffset() ([]byte, error) {
	if s.cl == nil {
		return nil, errors.New("kafka source: snapshot before open")
	}
	o := sourceOffset{sub: s.sub, par: s.par}
	commit := make(map[tp]int64, len(s.order))
	for _, t := range s.order {
		p := s.parts[t]
		o.parts = append(o.parts, partOffset{tp: t, next: p.next, end: p.end, wm: p.wm})
		commit[t] = p.next
	}
	if s.cfg.GroupID != "" && s.cfg.CommitOffsets {
		s.mu.Lock()
		s.commits = append(s.commits, commit)
		s.mu.Unlock()
	}
	return o.encode(), nil
}

// NotifyCheckpointComplete commits the offsets of the oldest snapshot not yet completed or aborted to the group,
// for monitoring (restores never read them): each barrier's snapshot ends in exactly one notification, in order.
func (s *source) NotifyCheckpointComplete(uint64) {
	s.mu.Lock()
	if len(s.commits) == 0 || s.closed {
		s.mu.Unlock()
		return
	}
	offs := s.commits[0]
	s.commits = s.commits[1:]
	adm := s.adm
	s.mu.Unlock()
	os := make(kadm.Offsets)
	for t, n := range offs {
		os.Add(kadm.Offset{Topic: t.topic, Partition: t.part, At: n, LeaderEpoch: -1})
	}
	// Not on the coordinator's goroutine: a slow broker must not hold up the commit broadcast.
	s.committing.Add(1)
	go func() {
		defer s.committing.Done()
		ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
		defer cancel()
		resp, err := adm.CommitOffsets(ctx, s.cfg.GroupID, os)
		if err == nil {
			err = resp.Error()
		}
		if err != nil {
			s.log.Warn("kafka source: committing offsets to the group (informational only) failed", "group", s.cfg.GroupID, "error", err)
		}
	}()
}

// NotifyCheckpointAborted drops the oldest snapshot's offsets.
func (s *source) NotifyCheckpointAborted(uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.commits) > 0 {
		s.commits = s.commits[1:]
	}
}

func (s *source) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.committing.Wait()
	if s.cl != nil {
		s.cl.Close()
	}
	if s.batcher != nil {
		s.batcher.release()
		s.batcher = nil
	}
	for _, p := range s.parts {
		p.pending = nil
	}
	return nil
}
