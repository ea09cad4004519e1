package kafkatest

// What kfake answers where a real broker answers differently, measured with raw requests. Each test asserts
// what kfake does today; a kfake upgrade that changes an answer fails the test that measured it, and the sink's
// in-doubt resolver must be revisited with it. The package doc summarises the findings.

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// txnCluster is a one-broker cluster (every request reaches the only coordinator) with topic "t" of one partition.
func txnCluster(t *testing.T) *Cluster {
	return Start(t, Options{Topics: map[string]int32{"t": 1}})
}

// request sends one raw request through cl (kgo routes transactional requests to the coordinator).
func request[R kmsg.Response](t *testing.T, cl *kgo.Client, req kmsg.Request) R {
	t.Helper()
	cx, cancel := ctx()
	defer cancel()
	resp, err := cl.Request(cx, req)
	if err != nil {
		t.Fatalf("%T: %v", req, err)
	}
	return resp.(R)
}

// openTxn starts a transaction of txnID with one record in t/0, left open; it returns the producer id and epoch.
func openTxn(t *testing.T, c *Cluster, txnID string) (int64, int16) {
	t.Helper()
	cl := c.Client(t, kgo.TransactionalID(txnID), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	c.produce(t, cl, []*kgo.Record{rec("t", 0, "in "+txnID)})
	cx, cancel := ctx()
	defer cancel()
	id, epoch, err := cl.ProducerID(cx)
	if err != nil {
		t.Fatal(err)
	}
	return id, epoch
}

func initProducerID(t *testing.T, cl *kgo.Client, txnID string, timeoutMs int32) *kmsg.InitProducerIDResponse {
	req := kmsg.NewPtrInitProducerIDRequest()
	req.TransactionalID = &txnID
	req.TransactionTimeoutMillis = timeoutMs
	req.ProducerID, req.ProducerEpoch = -1, -1
	return request[*kmsg.InitProducerIDResponse](t, cl, req)
}

// endTxn sends EndTxn and returns its error code; it checks that kgo negotiated version 5 (KIP-890, which bumps
// the epoch at each end and changes kfake's retry detection), the version franz-go's producer uses with kfake.
func endTxn(t *testing.T, cl *kgo.Client, txnID string, id int64, epoch int16, commit bool) int16 {
	t.Helper()
	req := kmsg.NewPtrEndTxnRequest()
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = txnID, id, epoch, commit
	resp := request[*kmsg.EndTxnResponse](t, cl, req)
	if resp.Version != 5 {
		t.Fatalf("EndTxn went out as v%d; these measurements are of v5", resp.Version)
	}
	return resp.ErrorCode
}

func describeTxn(t *testing.T, cl *kgo.Client, txnID string) kmsg.DescribeTransactionsResponseTransactionState {
	t.Helper()
	req := kmsg.NewPtrDescribeTransactionsRequest()
	req.TransactionalIDs = []string{txnID}
	resp := request[*kmsg.DescribeTransactionsResponse](t, cl, req)
	if len(resp.TransactionStates) != 1 || resp.TransactionStates[0].ErrorCode != 0 {
		t.Fatalf("DescribeTransactions(%s): %+v", txnID, resp.TransactionStates)
	}
	return resp.TransactionStates[0]
}

func errName(code int16) string {
	if code == 0 {
		return "NONE"
	}
	return kerr.ErrorForCode(code).(*kerr.Error).Message
}

// DescribeTransactions reports Ongoing during a transaction and Empty after it, whether it committed or aborted
// (a real broker says CompleteCommit or CompleteAbort): after the end the state does not tell the outcome.
func TestKfakeDescribeTransactionsOnlyOngoingOrEmpty(t *testing.T) {
	c := txnCluster(t)
	raw := c.Client(t)
	for _, commit := range []bool{true, false} {
		id, epoch := openTxn(t, c, "d")
		if st := describeTxn(t, raw, "d"); st.State != "Ongoing" || st.ProducerID != id {
			t.Fatalf("open transaction: state %q producer %d, want Ongoing %d", st.State, st.ProducerID, id)
		}
		if code := endTxn(t, raw, "d", id, epoch, commit); code != 0 {
			t.Fatalf("EndTxn(commit=%v): %s", commit, errName(code))
		}
		if st := describeTxn(t, raw, "d"); st.State != "Empty" {
			t.Fatalf("after EndTxn(commit=%v): state %q, want kfake's Empty", commit, st.State)
		}
	}
}

// A fence (InitProducerID of the same transactional id) aborts the open transaction at once and answers with the
// next epoch (a real broker answers CONCURRENT_TRANSACTIONS until its asynchronous abort completes): the ABORT
// marker is already in the log and the transaction's record is gone for read_committed readers.
func TestKfakeFenceAbortsOpenTransactionAtOnce(t *testing.T) {
	c := txnCluster(t)
	raw := c.Client(t)
	id, epoch := openTxn(t, c, "f")
	resp := initProducerID(t, raw, "f", 60000)
	if resp.ErrorCode != 0 || resp.ProducerID != id || resp.ProducerEpoch != epoch+1 {
		t.Fatalf("fence: %s producer %d epoch %d, want NONE %d %d", errName(resp.ErrorCode), resp.ProducerID,
			resp.ProducerEpoch, id, epoch+1)
	}
	if st := describeTxn(t, raw, "f"); st.State != "Empty" {
		t.Fatalf("after the fence: state %q, want Empty", st.State)
	}
	if got := controlMarkers(t, c, raw, "t", 0); len(got) != 1 || got[0] != (marker{id, epoch, false}) {
		t.Fatalf("markers after the fence %+v, want one ABORT of producer %d epoch %d", got, id, epoch)
	}
	if rs := c.ConsumeAll(t, "t"); len(rs) != 0 {
		t.Fatalf("read_committed after the fence: %q, want nothing", values(rs))
	}
}

// A late EndTxn(commit) with the old epoch: fenced once while open -> INVALID_TXN_STATE (kfake's KIP-890 retry
// check sees the last end was an abort); fenced twice -> PRODUCER_FENCED; after a commit that completed ->
// NONE (a retry of that commit), and after a commit and a fence -> PRODUCER_FENCED. None of them means
// "aborted" and none reveals the outcome.
func TestKfakeLateEndTxnOldEpochAnswersDependOnHistory(t *testing.T) {
	c := txnCluster(t)
	raw := c.Client(t)
	cases := []struct {
		name   string
		before func(txnID string, id int64, epoch int16)
		want   int16
	}{
		{"fenced once", func(txnID string, _ int64, _ int16) { initProducerID(t, raw, txnID, 60000) },
			kerr.InvalidTxnState.Code},
		{"fenced twice", func(txnID string, _ int64, _ int16) {
			initProducerID(t, raw, txnID, 60000)
			initProducerID(t, raw, txnID, 60000)
		}, kerr.ProducerFenced.Code},
		{"committed", func(txnID string, id int64, epoch int16) {
			if code := endTxn(t, raw, txnID, id, epoch, true); code != 0 {
				t.Fatalf("commit: %s", errName(code))
			}
		}, 0},
		{"committed then fenced", func(txnID string, id int64, epoch int16) {
			if code := endTxn(t, raw, txnID, id, epoch, true); code != 0 {
				t.Fatalf("commit: %s", errName(code))
			}
			initProducerID(t, raw, txnID, 60000)
		}, kerr.ProducerFenced.Code},
	}
	for _, tc := range cases {
		txnID := "late " + tc.name
		id, epoch := openTxn(t, c, txnID)
		tc.before(txnID, id, epoch)
		if code := endTxn(t, raw, txnID, id, epoch, true); code != tc.want {
			t.Errorf("%s: late EndTxn(commit) answered %s, want %s", tc.name, errName(code), errName(tc.want))
		}
	}
}

// EndTxn does not check that the transactional id matches the producer id: an EndTxn naming another
// transactional id commits the producer's transaction (a real broker answers INVALID_PRODUCER_ID_MAPPING).
func TestKfakeEndTxnIgnoresTransactionalID(t *testing.T) {
	c := txnCluster(t)
	raw := c.Client(t)
	id, epoch := openTxn(t, c, "right")
	initProducerID(t, raw, "other", 60000)
	if code := endTxn(t, raw, "other", id, epoch, true); code != 0 {
		t.Fatalf("EndTxn naming another transactional id: %s, want kfake's NONE", errName(code))
	}
	if got := values(c.ConsumeAll(t, "t")); got != "0:in right" {
		t.Fatalf("read_committed after the mismatched EndTxn: %q, want the committed record", got)
	}
}

// Transaction timeouts above transaction.max.timeout.ms (900 s by default) are refused with
// INVALID_TRANSACTION_TIMEOUT, as on a real broker; 900 s itself is accepted.
func TestKfakeRefusesTransactionTimeoutAbove900s(t *testing.T) {
	c := txnCluster(t)
	raw := c.Client(t)
	if resp := initProducerID(t, raw, "timeout", 900_001); resp.ErrorCode != kerr.InvalidTransactionTimeout.Code {
		t.Fatalf("timeout 900001 ms: %s, want INVALID_TRANSACTION_TIMEOUT", errName(resp.ErrorCode))
	}
	if resp := initProducerID(t, raw, "timeout", 900_000); resp.ErrorCode != 0 {
		t.Fatalf("timeout 900000 ms: %s, want NONE", errName(resp.ErrorCode))
	}
}

// kfake writes a control batch (COMMIT or ABORT) in every partition of a transaction when it ends, carrying the
// transaction's producer id and epoch (the epoch before KIP-890's bump), visible to a raw read_uncommitted
// Fetch, as a real broker does: a COMMIT marker of (producer id, epoch) proves that transaction committed.
func TestKfakeWritesControlRecords(t *testing.T) {
	c := txnCluster(t)
	raw := c.Client(t)
	id1, epoch1 := openTxn(t, c, "m")
	if code := endTxn(t, raw, "m", id1, epoch1, true); code != 0 {
		t.Fatalf("commit: %s", errName(code))
	}
	id2, epoch2 := openTxn(t, c, "m")
	if code := endTxn(t, raw, "m", id2, epoch2, false); code != 0 {
		t.Fatalf("abort: %s", errName(code))
	}
	want := []marker{{id1, epoch1, true}, {id2, epoch2, false}}
	got := controlMarkers(t, c, raw, "t", 0)
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("control markers %+v, want %+v", got, want)
	}
}

type marker struct {
	producerID int64
	epoch      int16
	commit     bool
}

// controlMarkers reads topic/partition from offset 0 with a raw read_uncommitted Fetch and returns its
// transaction markers in log order.
func controlMarkers(t *testing.T, c *Cluster, cl *kgo.Client, topic string, partition int32) []marker {
	t.Helper()
	meta := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = &topic
	meta.Topics = append(meta.Topics, mt)
	mresp := request[*kmsg.MetadataResponse](t, cl, meta)
	if len(mresp.Topics) != 1 || mresp.Topics[0].ErrorCode != 0 {
		t.Fatalf("metadata of %s: %+v", topic, mresp.Topics)
	}
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxBytes, req.IsolationLevel, req.SessionEpoch = -1, 1<<24, 0, -1
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic, ft.TopicID = topic, mresp.Topics[0].TopicID
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes, fp.CurrentLeaderEpoch, fp.LogStartOffset = partition, 0, 1<<24, -1, -1
	ft.Partitions = append(ft.Partitions, fp)
	req.Topics = append(req.Topics, ft)
	resp := request[*kmsg.FetchResponse](t, cl, req)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("fetch %s/%d: %+v", topic, partition, resp)
	}
	var out []marker
	for b := resp.Topics[0].Partitions[0].RecordBatches; len(b) > 0; {
		var batch kmsg.RecordBatch
		if err := batch.ReadFrom(b); err != nil {
			t.Fatalf("record batch: %v", err)
		}
		b = b[12+int(batch.Length):]
		if batch.Attributes&0x20 == 0 { // not a control batch
			continue
		}
		var r kmsg.Record
		if err := r.ReadFrom(batch.Records); err != nil {
			t.Fatalf("control record: %v", err)
		}
		var key kmsg.ControlRecordKey
		if err := key.ReadFrom(r.Key); err != nil {
			t.Fatalf("control record key: %v", err)
		}
		out = append(out, marker{batch.ProducerID, batch.ProducerEpoch, key.Type == kmsg.ControlRecordKeyTypeCommit})
	}
	return out
}
