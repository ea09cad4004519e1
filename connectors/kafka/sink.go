package kafka

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/clinksql/clinksql/connectors"
	"github.com/clinksql/clinksql/exec"
)

// OpenTimeout bounds how long Open waits for a broker to answer. An exactly-once sink that hears none refuses to
// open: initialising its transactional ids blind would fence (abort) transactions whose fate in-doubt resolution
// has not learned yet.
const OpenTimeout = 15 * time.Second

// FlushTimeout bounds the wait for every record's acknowledgement at a barrier: past it the PreCommit fails (the
// job restarts) rather than holding the barrier forever while no broker answers. (Not kgo's RecordDeliveryTimeout:
// that counts from the record's timestamp, which a 'timestamp' metadata column sets to any time.)
const FlushTimeout = 2 * time.Minute

// flush waits for every buffered record of cl to be acknowledged, at most FlushTimeout.
func (s *sinkBase) flush(cl *kgo.Client) error {
	ctx, cancel := context.WithTimeout(s.prodCtx, FlushTimeout)
	defer cancel()
	return cl.Flush(ctx)
}

// NewSink returns subtask sub of a Kafka sink. An exactly-once sink is an exec.InDoubtSink and an
// exec.InDoubtResolver (txnSink); the others are plain exec.Sinks that flush (at-least-once) or not (none) at each
// barrier. Configuration errors surface at Open.
func NewSink(cfg SinkConfig) exec.Sink {
	if cfg.Delivery == ExactlyOnce {
		return &txnSink{sinkBase: sinkBase{cfg: cfg}, resolver: &Resolver{cfg: cfg}}
	}
	return &plainSink{sinkBase: sinkBase{cfg: cfg}}
}

// sinkBase is what every delivery guarantee shares: the records of a batch and the client options.
type sinkBase struct {
	cfg   SinkConfig
	ctx   *exec.TaskContext
	enc   *recordEncoder
	fixed int32 // PartitionFixed: this subtask's partition; -1 otherwise
	// prodCtx is the context of every Produce: cancelled by Close, so a Produce blocked on a full buffer returns.
	prodCtx context.Context
	cancel  context.CancelFunc
	// valueSize is the last batch's bytes per row, to size the next batch's buffer in one allocation.
	valueSize int

	// The bytes (keys and values) of the records published: acknowledged ones without transactions, those of
	// committed transactions with them.
	connectors.Committed
}

var (
	_ exec.SinkProgress = (*plainSink)(nil)
	_ exec.SinkProgress = (*txnSink)(nil)
)

// recordBytes is what a record counts in the committed bytes: its key and value.
func recordBytes(r *kgo.Record) int64 { return int64(len(r.Key) + len(r.Value)) }

func (s *sinkBase) start(ctx *exec.TaskContext) error {
	s.ctx = ctx
	enc, err := newRecordEncoder(s.cfg)
	if err != nil {
		return err
	}
	s.enc = enc
	s.fixed = -1
	s.prodCtx, s.cancel = context.WithCancel(context.Background())
	return nil
}

// stopIfFailed releases what start took when Open fails.
func (s *sinkBase) stopIfFailed(err *error) {
	if *err != nil {
		s.cancel()
	}
}

// clientOpts are the kgo options of one producer of this sink.
func (s *sinkBase) clientOpts(extra ...kgo.Opt) ([]kgo.Opt, error) {
	opts := append(s.cfg.Client.Opts(), kgo.DefaultProduceTopic(s.cfg.Topic), kgo.ProducerLinger(5*time.Millisecond),
		kgo.MaxBufferedRecords(1<<16), kgo.ProducerBatchMaxBytes(1<<20))
	switch {
	case s.cfg.Partitioner == PartitionFixed:
		opts = append(opts, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	case s.cfg.Partitioner == PartitionRoundRobin:
		opts = append(opts, kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	default:
		// murmur2 of the key as the Java client; sticky for records without a key.
		opts = append(opts, kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)))
	}
	return append(opts, extra...), nil
}

// probe asks the cluster for the topic's metadata within OpenTimeout: no answer is a clear refusal, a missing
// topic another. It sets the fixed partition.
func (s *sinkBase) probe(cl *kgo.Client) error {
	ctx, cancel := context.WithTimeout(context.Background(), OpenTimeout)
	defer cancel()
	req := kmsg.NewPtrMetadataRequest()
	t := kmsg.NewMetadataRequestTopic()
	t.Topic = kmsg.StringPtr(s.cfg.Topic)
	req.Topics = append(req.Topics, t)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("kafka sink: no broker answered at %s within %s: %w", fmt.Sprintf("'%s'", strings.Join(s.cfg.Client.Brokers, ",")), OpenTimeout, err)
	}
	if len(resp.Topics) != 1 {
		return fmt.Errorf("kafka sink: the metadata of topic '%s' did not come back", s.cfg.Topic)
	}
	if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil {
		return fmt.Errorf("kafka sink: topic '%s': %w", s.cfg.Topic, err)
	}
	if n := int32(len(resp.Topics[0].Partitions)); s.cfg.Partitioner == PartitionFixed && n > 0 {
		s.fixed = int32(s.ctx.Subtask) % n
	}
	return nil
}

// records turns the rows of b into records; the caller produces them and keeps them alive until acknowledged.
func (s *sinkBase) records(b exec.Batch) ([]kgo.Record, error) {
	n := b.Rows()
	if n == 0 {
		return nil, nil
	}
	if b.Kinds != nil && !s.cfg.Upsert {
		for i := range n {
			if k := b.Kind(i); k != exec.Insert {
				return nil, fmt.Errorf("kafka sink: a %s row reached an append-only sink (connector 'kafka'; updating results go to 'upsert-kafka')", k)
			}
		}
	}
	if err := s.enc.bind(b.Rec); err != nil {
		return nil, err
	}
	defer s.enc.unbind()
	recs := make([]kgo.Record, 0, n)
	// One buffer for the batch's keys and values: offsets first, slices once it stops growing.
	buf := make([]byte, 0, max(s.valueSize, 16)*n)
	type span struct{ ks, ke, vs, ve int }
	spans := make([]span, 0, n)
	now := time.Now()
	keyed := len(s.enc.keyCols) > 0
	for i := range n {
		kind := b.Kind(i)
		if kind == exec.UpdateBefore {
			continue // upsert: the +U that follows replaces the value
		}
		var sp span
		var keyNull, valNull bool
		if keyed {
			sp.ks = len(buf)
			buf, keyNull = s.enc.key.append(buf, i)
			sp.ke = len(buf)
			if keyNull {
				sp.ke = -1
			}
		}
		sp.vs = len(buf)
		if kind == exec.Delete {
			valNull = true // a tombstone
		} else {
			buf, valNull = s.enc.value.append(buf, i)
		}
		sp.ve = len(buf)
		if valNull {
			sp.ve = -1
		}
		spans = append(spans, sp)
		hs, err := s.enc.recordHeaders(i)
		if err != nil {
			return nil, err
		}
		recs = append(recs, kgo.Record{Timestamp: s.enc.timestamp(i, now), Partition: s.fixed, Headers: hs})
	}
	s.valueSize = len(buf)/n + 1
	for j, sp := range spans {
		r := &recs[j]
		if keyed && sp.ke >= 0 {
			r.Key = buf[sp.ks:sp.ke:sp.ke]
		}
		if sp.ve >= 0 {
			r.Value = buf[sp.vs:sp.ve:sp.ve]
		}
	}
	return recs, nil
}

// plainSink is an at-least-once or none sink: one idempotent producer, no transactions.
type plainSink struct {
	sinkBase
	cl *kgo.Client

	errMu    sync.Mutex
	firstErr error
	promise  func(*kgo.Record, error)
}

var _ exec.Sink = (*plainSink)(nil)

func (s *plainSink) Open(ctx *exec.TaskContext) (err error) {
	if err := s.start(ctx); err != nil {
		return err
	}
	defer s.stopIfFailed(&err) // the runtime does not Close a sink whose Open failed
	opts, err := s.clientOpts()
	if err != nil {
		return err
	}
	if s.cl, err = kgo.NewClient(opts...); err != nil {
		return fmt.Errorf("kafka sink: %w", err)
	}
	if err := s.probe(s.cl); err != nil {
		s.cl.Close()
		return err
	}
	s.promise = func(r *kgo.Record, err error) {
		if err == nil {
			s.Add(recordBytes(r))
		}
		if err != nil {
			s.errMu.Lock()
			if s.firstErr == nil {
				s.firstErr = fmt.Errorf("kafka sink: producing to topic '%s': %w", s.cfg.Topic, err)
			}
			s.errMu.Unlock()
		}
	}
	return nil
}

func (s *plainSink) err() error {
	s.errMu.Lock()
	defer s.errMu.Unlock()
	return s.firstErr
}

func (s *plainSink) Write(b exec.Batch) error {
	defer b.Release()
	if err := s.err(); err != nil {
		return err
	}
	recs, err := s.records(b)
	if err != nil {
		return err
	}
	for i := range recs {
		s.cl.Produce(s.prodCtx, &recs[i], s.promise)
	}
	return nil
}

// PreCommit flushes an at-least-once sink: every record is acknowledged before the barrier is, so a restart from
// this checkpoint loses nothing. A 'none' sink only reports what failed so far.
func (s *plainSink) PreCommit(uint64) error {
	if s.cfg.Delivery == AtLeastOnce {
		if err := s.flush(s.cl); err != nil {
			return fmt.Errorf("kafka sink: flushing topic '%s': %w", s.cfg.Topic, err)
		}
	}
	return s.err()
}

func (s *plainSink) Commit(uint64) error { return nil }
func (s *plainSink) Abort(uint64) error  { return nil }

// Close flushes what is buffered (bounded by OpenTimeout), so a finished job's last rows are sent even by a 'none'
// sink.
func (s *plainSink) Close() error {
	if s.cl == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(s.prodCtx, OpenTimeout)
	err := s.cl.Flush(ctx)
	cancel()
	s.cancel()
	s.cl.Close()
	s.cl = nil
	if err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("kafka sink: flushing topic '%s' at close: %w", s.cfg.Topic, err)
	}
	return nil
}
