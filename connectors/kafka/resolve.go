package kafka

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/clinksql/clinksql/exec"
)

// Resolver settles the staged transactions of a dead incarnation from their handles (exec.InDoubtResolver). It
// speaks the wire protocol with its own short-lived client per call, never as a transactional producer, so it
// never fences anything.
//
// What the answers prove, on a real broker and on kfake (whose differences tests/kafkatest measures):
//
//   - EndTxn(commit) with the handle's identity succeeds: committed, by this call or before it (a broker answers a
//     commit retry of a completed commit with success).
//   - It is refused with PRODUCER_FENCED, INVALID_PRODUCER_EPOCH, INVALID_TXN_STATE or
//     INVALID_PRODUCER_ID_MAPPING: the transaction ended (or the identity moved on: the staged epoch lags the
//     broker's per-commit epoch bumps), which proves nothing by itself. DescribeTransactions decides a
//     transaction whose markers are still being written (PrepareCommit / PrepareAbort of the same producer); the
//     control records after the handle's last offsets decide the rest: a COMMIT marker of the producer id proves
//     committed, an ABORT marker aborted. kfake describes only Ongoing or Empty, so there the markers decide.
//     No marker proves nothing: Unknown, never Aborted.
//   - Any other error, or no answer: a transport error, which the runtime retries.
type Resolver struct {
	cfg SinkConfig
}

// NewResolver returns the resolver of a sink's handles.
func NewResolver(cfg SinkConfig) *Resolver { return &Resolver{cfg: cfg} }

func (r *Resolver) client() (*kgo.Client, error) {
	cl, err := kgo.NewClient(r.cfg.Client.Opts()...)
	if err != nil {
		return nil, fmt.Errorf("kafka resolver: %w", err)
	}
	return cl, nil
}

// fencedAnswers are EndTxn refusals that mean the transaction is no longer the producer's open one.
var fencedAnswers = []*kerr.Error{kerr.ProducerFenced, kerr.InvalidProducerEpoch, kerr.InvalidTxnState, kerr.InvalidProducerIDMapping}

// ResolveCommit commits the handle's transaction with the dead producer's identity and says what is known after.
func (r *Resolver) ResolveCommit(ctx context.Context, handle []byte) (exec.Verdict, error) {
	h, err := ParseHandle(handle)
	if err != nil {
		return exec.VerdictUnknown, err
	}
	cl, err := r.client()
	if err != nil {
		return exec.VerdictUnknown, err
	}
	defer cl.Close()
	req := kmsg.NewPtrEndTxnRequest()
	req.TransactionalID = h.TransactionalID
	req.ProducerID = h.ProducerID
	req.ProducerEpoch = h.ProducerEpoch
	req.Commit = true
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return exec.VerdictUnknown, fmt.Errorf("kafka resolver: EndTxn(commit) of '%s': %w", h.TransactionalID, err)
	}
	answer := kerr.ErrorForCode(resp.ErrorCode)
	if answer == nil {
		return exec.VerdictCommitted, nil
	}
	if !isFenced(answer) {
		return exec.VerdictUnknown, fmt.Errorf("kafka resolver: EndTxn(commit) of '%s': %w", h.TransactionalID, answer)
	}
	return r.settle(ctx, cl, h, false)
}

// Describe says what is known of the handle's transaction without changing anything: DescribeTransactions and
// the control records. Open is a transaction still open under the handle's producer with no marker written.
func (r *Resolver) Describe(ctx context.Context, handle []byte) (exec.Verdict, error) {
	h, err := ParseHandle(handle)
	if err != nil {
		return exec.VerdictUnknown, err
	}
	cl, err := r.client()
	if err != nil {
		return exec.VerdictUnknown, err
	}
	defer cl.Close()
	return r.settle(ctx, cl, h, true)
}

func isFenced(err error) bool {
	for _, e := range fencedAnswers {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// settle decides from DescribeTransactions and the control records.
func (r *Resolver) settle(ctx context.Context, cl *kgo.Client, h Handle, describeOnly bool) (exec.Verdict, error) {
	st, err := describeTxn(ctx, cl, h.TransactionalID)
	if err != nil {
		return exec.VerdictUnknown, err
	}
	if v, ok := verdictFromState(st, h); ok {
		return v, nil
	}
	v, err := markerVerdict(ctx, cl, h)
	if err != nil || v != exec.VerdictUnknown {
		return v, err
	}
	if describeOnly && st != nil && st.State == "Ongoing" && st.ProducerID == h.ProducerID && st.ProducerEpoch == h.ProducerEpoch {
		return exec.VerdictOpen, nil
	}
	return exec.VerdictUnknown, nil
}

// txnState is what DescribeTransactions said of a transactional id; nil when the broker does not know it.
type txnState struct {
	State         string
	ProducerID    int64
	ProducerEpoch int16
}

func describeTxn(ctx context.Context, cl *kgo.Client, id string) (*txnState, error) {
	req := kmsg.NewPtrDescribeTransactionsRequest()
	req.TransactionalIDs = []string{id}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("kafka resolver: DescribeTransactions of '%s': %w", id, err)
	}
	for _, s := range resp.TransactionStates {
		if s.TransactionalID != id {
			continue
		}
		if err := kerr.ErrorForCode(s.ErrorCode); err != nil {
			if errors.Is(err, kerr.TransactionalIDNotFound) {
				return nil, nil
			}
			return nil, fmt.Errorf("kafka resolver: DescribeTransactions of '%s': %w", id, err)
		}
		return &txnState{State: s.State, ProducerID: s.ProducerID, ProducerEpoch: s.ProducerEpoch}, nil
	}
	return nil, fmt.Errorf("kafka resolver: DescribeTransactions did not describe '%s'", id)
}

// verdictFromState decides from a real broker's description when it can: a transaction of the handle's producer
// whose decision is taken but whose markers may not be written yet (PrepareCommit, PrepareAbort) at the handle's
// epoch or the one its end bumped to (KIP-890). Every other state leaves it to the control records: a completed
// state or Ongoing may describe a later transaction of the same id.
func verdictFromState(st *txnState, h Handle) (exec.Verdict, bool) {
	if st == nil || st.ProducerID != h.ProducerID || (st.ProducerEpoch != h.ProducerEpoch && st.ProducerEpoch != h.ProducerEpoch+1) {
		return exec.VerdictUnknown, false
	}
	switch st.State {
	case "PrepareCommit":
		return exec.VerdictCommitted, true
	case "PrepareAbort":
		return exec.VerdictAborted, true
	}
	return exec.VerdictUnknown, false
}

// markerVerdict reads each partition of the handle after its last offset (read_uncommitted) for the first control
// batch of the handle's producer: the marker that ended the transaction (a producer's next transaction on a
// partition starts only after its markers are written). COMMIT proves committed, ABORT aborted; no marker in any
// partition proves nothing. Partitions that disagree are an error (they cannot on a consistent log).
func markerVerdict(ctx context.Context, cl *kgo.Client, h Handle) (exec.Verdict, error) {
	leaders, topicID, err := partitionLeaders(ctx, cl, h.Topic)
	if err != nil {
		return exec.VerdictUnknown, err
	}
	found := exec.VerdictUnknown
	for _, p := range h.Partitions {
		leader, ok := leaders[p.Partition]
		if !ok {
			return exec.VerdictUnknown, fmt.Errorf("kafka resolver: topic '%s' has no partition %d", h.Topic, p.Partition)
		}
		v, err := partitionMarker(ctx, cl.Broker(int(leader)), h, topicID, p)
		if err != nil {
			return exec.VerdictUnknown, err
		}
		if v == exec.VerdictUnknown {
			continue
		}
		if found != exec.VerdictUnknown && found != v {
			return exec.VerdictUnknown, fmt.Errorf("kafka resolver: transaction '%s' (producer %d) has both commit and abort markers", h.TransactionalID, h.ProducerID)
		}
		found = v
	}
	return found, nil
}

func partitionLeaders(ctx context.Context, cl *kgo.Client, topic string) (map[int32]int32, [16]byte, error) {
	req := kmsg.NewPtrMetadataRequest()
	t := kmsg.NewMetadataRequestTopic()
	t.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, t)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, [16]byte{}, fmt.Errorf("kafka resolver: metadata of topic '%s': %w", topic, err)
	}
	if len(resp.Topics) != 1 {
		return nil, [16]byte{}, fmt.Errorf("kafka resolver: metadata of topic '%s' did not come back", topic)
	}
	if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil {
		return nil, [16]byte{}, fmt.Errorf("kafka resolver: topic '%s': %w", topic, err)
	}
	leaders := map[int32]int32{}
	for _, p := range resp.Topics[0].Partitions {
		leaders[p.Partition] = p.Leader
	}
	return leaders, resp.Topics[0].TopicID, nil
}

// partitionMarker scans one partition from the handle's last offset + 1 up to the high watermark.
func partitionMarker(ctx context.Context, b *kgo.Broker, h Handle, topicID [16]byte, p HandlePartition) (exec.Verdict, error) {
	offset := p.Last + 1
	for {
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID = -1
		req.MaxWaitMillis = 0
		req.MinBytes = 1
		req.MaxBytes = 4 << 20
		req.IsolationLevel = 0 // read_uncommitted: the markers of every producer
		req.SessionEpoch = -1  // no fetch session
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = h.Topic, topicID
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition = p.Partition
		rp.FetchOffset = offset
		rp.PartitionMaxBytes = 4 << 20
		rp.CurrentLeaderEpoch = -1
		rp.LastFetchedEpoch = -1
		rp.LogStartOffset = -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		kresp, err := b.Request(ctx, req)
		if err != nil {
			return exec.VerdictUnknown, fmt.Errorf("kafka resolver: reading partition %d of '%s': %w", p.Partition, h.Topic, err)
		}
		resp := kresp.(*kmsg.FetchResponse)
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			return exec.VerdictUnknown, fmt.Errorf("kafka resolver: reading partition %d of '%s': %w", p.Partition, h.Topic, err)
		}
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			return exec.VerdictUnknown, fmt.Errorf("kafka resolver: reading partition %d of '%s': no answer for it", p.Partition, h.Topic)
		}
		rpart := resp.Topics[0].Partitions[0]
		if err := kerr.ErrorForCode(rpart.ErrorCode); err != nil {
			if errors.Is(err, kerr.OffsetOutOfRange) {
				return exec.VerdictUnknown, nil // deleted by retention, or never written: no proof
			}
			return exec.VerdictUnknown, fmt.Errorf("kafka resolver: reading partition %d of '%s': %w", p.Partition, h.Topic, err)
		}
		v, next, err := scanBatches(rpart.RecordBatches, h.ProducerID, offset)
		if err != nil || v != exec.VerdictUnknown {
			return v, err
		}
		if next <= offset || next >= rpart.HighWatermark {
			return exec.VerdictUnknown, nil
		}
		offset = next
	}
}

// scanBatches looks through raw record batches for the first control batch of producer pid at or after from; it
// returns the offset after the last batch read.
func scanBatches(raw []byte, pid int64, from int64) (exec.Verdict, int64, error) {
	next := from
	for len(raw) >= 12 {
		length := int(int32(uint32(raw[8])<<24 | uint32(raw[9])<<16 | uint32(raw[10])<<8 | uint32(raw[11])))
		if length <= 0 || 12+length > len(raw) {
			break // a partial batch at the end of the response
		}
		var batch kmsg.RecordBatch
		if err := batch.ReadFrom(raw[:12+length]); err != nil {
			return exec.VerdictUnknown, next, fmt.Errorf("kafka resolver: unreadable record batch: %w", err)
		}
		raw = raw[12+length:]
		end := batch.FirstOffset + int64(batch.LastOffsetDelta) + 1
		if end > next {
			next = end
		}
		if end <= from || batch.Attributes&0x20 == 0 || batch.ProducerID != pid {
			continue
		}
		var rec kmsg.Record
		if err := rec.ReadFrom(batch.Records); err != nil {
			return exec.VerdictUnknown, next, fmt.Errorf("kafka resolver: unreadable control record: %w", err)
		}
		var key kmsg.ControlRecordKey
		if err := key.ReadFrom(rec.Key); err != nil {
			return exec.VerdictUnknown, next, fmt.Errorf("kafka resolver: unreadable control record key: %w", err)
		}
		switch key.Type {
		case kmsg.ControlRecordKeyTypeCommit:
			return exec.VerdictCommitted, next, nil
		case kmsg.ControlRecordKeyTypeAbort:
			return exec.VerdictAborted, next, nil
		}
	}
	return exec.VerdictUnknown, next, nil
}
