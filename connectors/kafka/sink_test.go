package kafka

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/tests/kafkatest"
)

var testSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

// rig is one test's cluster, topic and allocator.
type rig struct {
	t       *testing.T
	cluster *kafkatest.Cluster
	topic   string
	mem     *memory.CheckedAllocator
}

func newRig(t *testing.T, partitions int32) *rig {
	c := kafkatest.Start(t, kafkatest.Options{})
	r := &rig{t: t, cluster: c, topic: "out", mem: memory.NewCheckedAllocator(memory.DefaultAllocator)}
	c.CreateTopic(t, r.topic, partitions)
	t.Cleanup(func() { r.mem.AssertSize(t, 0) })
	return r
}

func (r *rig) options(extra ...string) map[string]string {
	opts := map[string]string{
		"topic": r.topic, "properties.bootstrap.servers": r.cluster.Bootstrap(), "format": "json",
		"sink.delivery-guarantee": "exactly-once", "sink.transactional-id-prefix": "tx",
	}
	for i := 0; i+1 < len(extra); i += 2 {
		opts[extra[i]] = extra[i+1]
	}
	if opts["sink.delivery-guarantee"] != "exactly-once" {
		delete(opts, "sink.transactional-id-prefix")
	}
	return opts
}

func (r *rig) config(extra ...string) SinkConfig {
	cfg, err := SinkConfigFromOptions("kafka", testSchema, nil, nil, r.options(extra...), nil)
	if err != nil {
		r.t.Fatal(err)
	}
	return cfg
}

// receipts records the checkpoints a sink receipted, in order.
type receipts struct {
	mu  sync.Mutex
	ids []uint64
}

func (rc *receipts) add(id uint64) error {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.ids = append(rc.ids, id)
	return nil
}

func (rc *receipts) get() []uint64 {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return slices.Clone(rc.ids)
}

// open opens subtask sub of a sink of cfg in job "job-1".
func (r *rig) open(cfg SinkConfig, sub int, rc *receipts) exec.Sink {
	s := NewSink(cfg)
	ctx := &exec.TaskContext{Job: "job-1", Operator: "sink", Subtask: sub, Parallelism: 1, Alloc: r.mem}
	if rc != nil {
		ctx.Receipt = rc.add
	}
	if err := s.Open(ctx); err != nil {
		r.t.Fatal(err)
	}
	return s
}

// batch makes rows ids [from, to) named "n<id>".
func (r *rig) batch(from, to int) exec.Batch {
	ib := array.NewInt64Builder(r.mem)
	defer ib.Release()
	sb := array.NewStringBuilder(r.mem)
	defer sb.Release()
	for i := from; i < to; i++ {
		ib.Append(int64(i))
		sb.Append("n" + strconv.Itoa(i))
	}
	ia, sa := ib.NewArray(), sb.NewArray()
	defer ia.Release()
	defer sa.Release()
	return exec.Batch{Rec: array.NewRecordBatch(testSchema, []arrow.Array{ia, sa}, int64(to-from))}
}

func (r *rig) write(s exec.Sink, from, to int) {
	r.t.Helper()
	if err := s.Write(r.batch(from, to)); err != nil {
		r.t.Fatal(err)
	}
}

// committedIDs are the ids a read_committed consumer reads from the topic, sorted.
func (r *rig) committedIDs() []int {
	r.t.Helper()
	var ids []int
	for _, rec := range r.cluster.ConsumeAll(r.t, r.topic) {
		v := string(rec.Value)
		i := strings.Index(v, `"id":`)
		j := strings.Index(v, `,"name"`)
		if i < 0 || j < 0 {
			r.t.Fatalf("record %q is not a row", v)
		}
		n, err := strconv.Atoi(v[i+5 : j])
		if err != nil {
			r.t.Fatalf("record %q: %v", v, err)
		}
		ids = append(ids, n)
	}
	slices.Sort(ids)
	return ids
}

// expectEndTxnAnswer sends EndTxn(commit) with the handle's identity and checks kfake's refusal: which answer a
// test's resolution path starts from.
func (r *rig) expectEndTxnAnswer(handle []byte, want *kerr.Error) {
	r.t.Helper()
	h, err := ParseHandle(handle)
	if err != nil {
		r.t.Fatal(err)
	}
	req := kmsg.NewPtrEndTxnRequest()
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = h.TransactionalID, h.ProducerID, h.ProducerEpoch, true
	ctx, cancel := bg()
	defer cancel()
	resp, err := req.RequestWith(ctx, r.cluster.Client(r.t))
	if err != nil {
		r.t.Fatal(err)
	}
	if got := kerr.ErrorForCode(resp.ErrorCode); got != want {
		r.t.Fatalf("EndTxn(commit) with the handle's identity answered %v, want %v", got, want)
	}
}

func seq(from, to int) []int {
	var out []int
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

func (r *rig) expectIDs(want []int) {
	r.t.Helper()
	if got := r.committedIDs(); !slices.Equal(got, want) {
		r.t.Fatalf("read_committed consumer read %d rows %v, want %d rows %v", len(got), abbrev(got), len(want), abbrev(want))
	}
}

func abbrev(ids []int) string {
	if len(ids) > 12 {
		return fmt.Sprintf("%v ... %v", ids[:6], ids[len(ids)-6:])
	}
	return fmt.Sprint(ids)
}

func preCommit(t *testing.T, s exec.Sink, id uint64) []byte {
	t.Helper()
	if err := s.PreCommit(id); err != nil {
		t.Fatal(err)
	}
	h, err := s.(exec.InDoubtSink).Handle(id)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func resolver(cfg SinkConfig) exec.InDoubtResolver { return NewSink(cfg).(exec.InDoubtResolver) }

func bg() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), time.Minute)
}

// A read_committed consumer sees exactly the rows of the checkpoints whose commit ran, each once, and every commit
// is receipted in order.
func TestExactlyOnceConsumerSeesOnlyCommittedCheckpoints(t *testing.T) {
	r := newRig(t, 3)
	rc := &receipts{}
	s := r.open(r.config(), 0, rc)
	defer s.Close()
	r.write(s, 0, 100)
	r.write(s, 100, 150)
	preCommit(t, s, 1)
	r.write(s, 150, 300)
	preCommit(t, s, 2)
	if h := preCommit(t, s, 3); h != nil {
		t.Fatalf("a checkpoint without rows staged handle %s", h)
	}
	r.write(s, 300, 400)
	preCommit(t, s, 4)
	r.write(s, 400, 450) // open, never sealed
	if err := s.Commit(3); err != nil {
		t.Fatal(err)
	}
	r.expectIDs(seq(0, 300))
	if got := rc.get(); !slices.Equal(got, []uint64{1, 2}) {
		t.Fatalf("receipts %v, want [1 2]", got)
	}
}

// A crash between PreCommit and Commit (the sink dropped, nothing closed or committed): ResolveCommit from a fresh
// client commits the transaction with the dead producer's identity.
func TestCrashBeforeCommitResolveCommits(t *testing.T) {
	r := newRig(t, 2)
	cfg := r.config()
	s := r.open(cfg, 0, &receipts{})
	t.Cleanup(func() { s.Close() }) // only at the end: until then the "dead" producer is as a crash left it
	r.write(s, 0, 500)
	h := preCommit(t, s, 1)
	r.expectIDs(nil)
	ctx, cancel := bg()
	defer cancel()
	if v, err := resolver(cfg).Describe(ctx, h); err != nil || v != exec.VerdictOpen {
		t.Fatalf("Describe of the open transaction = %v, %v; want open", v, err)
	}
	if v, err := resolver(cfg).ResolveCommit(ctx, h); err != nil || v != exec.VerdictCommitted {
		t.Fatalf("ResolveCommit = %v, %v; want committed", v, err)
	}
	r.expectIDs(seq(0, 500))
	// Asked again (a walk that died after the commit): still committed, nothing doubled.
	if v, err := resolver(cfg).ResolveCommit(ctx, h); err != nil || v != exec.VerdictCommitted {
		t.Fatalf("ResolveCommit again = %v, %v; want committed", v, err)
	}
	r.expectIDs(seq(0, 500))
}

// A commit that already happened, with the producer's id moved on (later transactions on the same slot bumped its
// epoch): EndTxn is refused as fenced and the COMMIT control record after the handle's offsets proves committed.
func TestResolveAfterCommitProvesCommittedByControlRecords(t *testing.T) {
	r := newRig(t, 2)
	cfg := r.config()
	s := r.open(cfg, 0, &receipts{})
	defer s.Close()
	r.write(s, 0, 50)
	h := preCommit(t, s, 1)
	if err := s.Commit(1); err != nil {
		t.Fatal(err)
	}
	for ck := uint64(2); ck <= 3; ck++ { // slot 0 again: its epoch moves past the handle's
		r.write(s, int(ck)*100, int(ck)*100+10)
		preCommit(t, s, ck)
		if err := s.Commit(ck); err != nil {
			t.Fatal(err)
		}
	}
	r.expectEndTxnAnswer(h, kerr.ProducerFenced) // kfake: the epoch is two ahead of the handle's
	ctx, cancel := bg()
	defer cancel()
	for _, call := range []func(context.Context, []byte) (exec.Verdict, error){resolver(cfg).ResolveCommit, resolver(cfg).Describe} {
		if v, err := call(ctx, h); err != nil || v != exec.VerdictCommitted {
			t.Fatalf("verdict of a committed transaction = %v, %v; want committed", v, err)
		}
	}
	r.expectIDs(append(seq(0, 50), append(seq(200, 210), seq(300, 310)...)...))
}

// A transaction aborted by the fence of the next incarnation's Open: EndTxn(commit) is refused and the ABORT
// control record proves aborted (never committed by the resolver, never read by a read_committed consumer).
func TestFencedTransactionProvesAborted(t *testing.T) {
	r := newRig(t, 2)
	cfg := r.config()
	dead := r.open(cfg, 0, &receipts{})
	t.Cleanup(func() { dead.Close() })
	r.write(dead, 0, 80)
	h := preCommit(t, dead, 1)
	next := r.open(cfg, 0, &receipts{}) // initialises the same ids: fences and aborts
	defer next.Close()
	r.expectEndTxnAnswer(h, kerr.InvalidTxnState) // kfake: one epoch ahead, and the last end was an abort
	ctx, cancel := bg()
	defer cancel()
	if v, err := resolver(cfg).Describe(ctx, h); err != nil || v != exec.VerdictAborted {
		t.Fatalf("Describe of the fenced transaction = %v, %v; want aborted", v, err)
	}
	if v, err := resolver(cfg).ResolveCommit(ctx, h); err != nil || v != exec.VerdictAborted {
		t.Fatalf("ResolveCommit of the fenced transaction = %v, %v; want aborted", v, err)
	}
	if err := dead.Commit(1); err == nil {
		t.Fatal("the fenced producer's commit succeeded")
	}
	r.expectIDs(nil)
}

// A handle whose partitions hold no marker of its producer and whose id the broker does not know proves nothing:
// Unknown, never Aborted.
func TestNoMarkerProvesNothing(t *testing.T) {
	r := newRig(t, 1)
	cfg := r.config()
	r.cluster.Produce(t, &kgo.Record{Topic: r.topic, Partition: 0, Value: []byte(`{"id":1,"name":"x"}`)})
	h := []byte(`{"v":1,"txn":"tx-job-9-0-0","pid":4242,"epoch":3,"topic":"out","parts":[{"p":0,"first":0,"last":0}]}`)
	r.expectEndTxnAnswer(h, kerr.InvalidProducerIDMapping)
	ctx, cancel := bg()
	defer cancel()
	for _, call := range []func(context.Context, []byte) (exec.Verdict, error){resolver(cfg).ResolveCommit, resolver(cfg).Describe} {
		if v, err := call(ctx, h); err != nil || v != exec.VerdictUnknown {
			t.Fatalf("verdict without any proof = %v, %v; want unknown", v, err)
		}
	}
}

// The broker paused (SIGSTOP) across Commit: the commit waits for it or fails with an error; after the resume the
// staged transaction is committed exactly once (by the commit, its retry through the resolver, or resolution).
func TestBrokerPausedAcrossCommit(t *testing.T) {
	r := newRig(t, 2)
	cfg := r.config()
	rc := &receipts{}
	s := r.open(cfg, 0, rc)
	defer s.Close()
	r.write(s, 0, 300)
	h := preCommit(t, s, 1)
	if err := r.cluster.Pause(); err != nil {
		t.Fatal(err)
	}
	waitStopped(t, r.cluster) // SIGSTOP takes effect asynchronously: the broker must not answer the commit
	done := make(chan error, 1)
	go func() { done <- s.Commit(1) }()
	waitBytesQueuedAt(t, r.cluster) // the EndTxn reached the stopped broker's socket
	select {
	case err := <-done:
		t.Fatalf("Commit returned %v while the broker was stopped", err)
	default:
	}
	if err := r.cluster.Resume(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Logf("commit across the pause failed: %v; retrying", err)
		if err := s.Commit(1); err != nil {
			t.Fatalf("retried commit: %v", err)
		}
	}
	if got := rc.get(); !slices.Equal(got, []uint64{1}) {
		t.Fatalf("receipts %v, want [1]", got)
	}
	ctx, cancel := bg()
	defer cancel()
	if v, err := resolver(cfg).ResolveCommit(ctx, h); err != nil || v != exec.VerdictCommitted {
		t.Fatalf("ResolveCommit after the pause = %v, %v; want committed", v, err)
	}
	r.expectIDs(seq(0, 300))
}

// waitStopped waits until every thread of the process listening on the cluster's first broker port is stopped
// (state T in /proc), finding the process by its listening socket's inode.
func waitStopped(t *testing.T, c *kafkatest.Cluster) {
	t.Helper()
	_, port, _ := strings.Cut(c.Addrs[0], ":")
	p, _ := strconv.Atoi(port)
	local := fmt.Sprintf(":%04X", p)
	data, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		t.Skipf("no /proc/net/tcp: %v", err)
	}
	inode := ""
	for _, line := range strings.Split(string(data), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) > 9 && strings.HasSuffix(f[1], local) && f[3] == "0A" { // LISTEN
			inode = f[9]
		}
	}
	if inode == "" {
		t.Fatalf("no socket listens on %s", c.Addrs[0])
	}
	pid := ""
	procs, _ := os.ReadDir("/proc")
	for _, e := range procs {
		fds, err := os.ReadDir("/proc/" + e.Name() + "/fd")
		if err != nil {
			continue
		}
		for _, fd := range fds {
			if l, _ := os.Readlink("/proc/" + e.Name() + "/fd/" + fd.Name()); l == "socket:["+inode+"]" {
				pid = e.Name()
			}
		}
	}
	if pid == "" {
		t.Fatalf("no process holds the listening socket of %s", c.Addrs[0])
	}
	deadline := time.Now().Add(kafkatest.Timeout)
	for time.Now().Before(deadline) {
		tasks, err := os.ReadDir("/proc/" + pid + "/task")
		if err != nil {
			t.Fatal(err)
		}
		stopped := true
		for _, task := range tasks {
			stat, err := os.ReadFile("/proc/" + pid + "/task/" + task.Name() + "/stat")
			if err != nil {
				continue // a thread that ended
			}
			if i := strings.LastIndexByte(string(stat), ')'); i < 0 || i+2 >= len(stat) || stat[i+2] != 'T' {
				stopped = false
			}
		}
		if stopped {
			return
		}
		time.Sleep(time.Millisecond) // polling /proc: the stop has no event to wait on
	}
	t.Fatalf("process %s did not stop", pid)
}

// waitBytesQueuedAt waits until some connection to the cluster's first broker has unread bytes queued (the broker
// is stopped, so a request sent to it stays there), reading /proc/net/tcp.
func waitBytesQueuedAt(t *testing.T, c *kafkatest.Cluster) {
	t.Helper()
	_, port, _ := strings.Cut(c.Addrs[0], ":")
	p, _ := strconv.Atoi(port)
	local := fmt.Sprintf(":%04X ", p)
	deadline := time.Now().Add(kafkatest.Timeout)
	for time.Now().Before(deadline) {
		data, err := os.ReadFile("/proc/net/tcp")
		if err != nil {
			t.Skipf("no /proc/net/tcp: %v", err)
		}
		for _, line := range strings.Split(string(data), "\n")[1:] {
			f := strings.Fields(line)
			if len(f) < 5 || !strings.HasSuffix(f[1]+" ", local) {
				continue
			}
			if _, rx, ok := strings.Cut(f[4], ":"); ok && strings.Trim(rx, "0") != "" {
				return
			}
		}
		time.Sleep(5 * time.Millisecond) // polling the kernel's table: there is no event to wait on
	}
	t.Fatal("no request reached the stopped broker")
}

// No broker answering at Open: the exactly-once sink refuses to open, saying why, and initialises nothing.
func TestOpenRefusesWithoutBroker(t *testing.T) {
	r := newRig(t, 1)
	cfg := r.config()
	r.cluster.Kill()
	s := NewSink(cfg)
	err := s.Open(&exec.TaskContext{Job: "job-1", Subtask: 0, Parallelism: 1, Alloc: r.mem, Receipt: (&receipts{}).add})
	if err == nil {
		s.Close()
		t.Fatal("Open succeeded without a broker")
	}
	if !strings.Contains(err.Error(), "no broker answered") || !strings.Contains(err.Error(), "exactly-once sink opens only when a broker answers") {
		t.Fatalf("Open's refusal does not say why: %v", err)
	}
	// The resolver without a broker: an error (the runtime retries, or refuses to open), never a verdict.
	h := []byte(`{"v":1,"txn":"tx-job-1-0-0","pid":1,"epoch":0,"topic":"out","parts":[{"p":0,"first":0,"last":0}]}`)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, call := range []func(context.Context, []byte) (exec.Verdict, error){resolver(cfg).ResolveCommit, resolver(cfg).Describe} {
		if v, err := call(ctx, h); err == nil {
			t.Fatalf("the resolver answered %v without a broker", v)
		}
	}
}

// At-least-once: every record is acknowledged by the time PreCommit returns (a plain consumer reads them all);
// 'fixed' sends subtask k's records to partition k.
func TestAtLeastOnceFlushesAtPreCommit(t *testing.T) {
	r := newRig(t, 3)
	cfg := r.config("sink.delivery-guarantee", "at-least-once", "sink.partitioner", "fixed")
	s := r.open(cfg, 2, nil)
	defer s.Close()
	r.write(s, 0, 1000)
	if err := s.PreCommit(1); err != nil {
		t.Fatal(err)
	}
	recs := r.cluster.ConsumeAll(t, r.topic)
	if len(recs) != 1000 {
		t.Fatalf("read %d records after PreCommit, want 1000", len(recs))
	}
	for _, rec := range recs {
		if rec.Partition != 2 {
			t.Fatalf("subtask 2 with 'fixed' wrote to partition %d", rec.Partition)
		}
	}
}

// upsert-kafka: the key is the primary key, +I/+U are values, -D a tombstone (a null value), -U nothing.
func TestUpsertWritesKeysAndTombstones(t *testing.T) {
	r := newRig(t, 1)
	opts := r.options("key.format", "json", "sink.delivery-guarantee", "at-least-once")
	cfg, err := SinkConfigFromOptions("upsert-kafka", testSchema, nil, []string{"id"}, opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := r.open(cfg, 0, nil)
	defer s.Close()
	b := r.batch(0, 4)
	b.Kinds = []exec.RowKind{exec.Insert, exec.UpdateBefore, exec.UpdateAfter, exec.Delete}
	if err := s.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := s.PreCommit(1); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, rec := range r.cluster.ConsumeAll(t, r.topic) {
		v := "null"
		if rec.Value != nil {
			v = string(rec.Value)
		}
		got = append(got, string(rec.Key)+"="+v)
	}
	want := []string{`{"id":0}={"id":0,"name":"n0"}`, `{"id":2}={"id":2,"name":"n2"}`, `{"id":3}=null`}
	if !slices.Equal(got, want) {
		t.Fatalf("records %q, want %q", got, want)
	}
}

// A plain kafka sink refuses a retraction instead of writing it as an insert.
func TestAppendOnlySinkRefusesRetractions(t *testing.T) {
	r := newRig(t, 1)
	cfg := r.config("sink.delivery-guarantee", "at-least-once")
	s := r.open(cfg, 0, nil)
	defer s.Close()
	b := r.batch(0, 2)
	b.Kinds = []exec.RowKind{exec.Insert, exec.Delete}
	if err := s.Write(b); err == nil || !strings.Contains(err.Error(), "upsert-kafka") {
		t.Fatalf("Write of a -D row = %v, want a refusal naming upsert-kafka", err)
	}
}

// Close keeps barrier-sealed transactions open (a teardown must not decide them): after it, ResolveCommit still
// commits the staged transaction, and the open one that no barrier sealed is aborted by the next Open's fence.
func TestCloseLeavesStagedTransactionsOpen(t *testing.T) {
	r := newRig(t, 2)
	cfg := r.config()
	s := r.open(cfg, 0, &receipts{})
	r.write(s, 0, 40)
	h := preCommit(t, s, 1)
	r.write(s, 40, 60) // never sealed
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := bg()
	defer cancel()
	if v, err := resolver(cfg).Describe(ctx, h); err != nil || v != exec.VerdictOpen {
		t.Fatalf("Describe after Close = %v, %v; want open", v, err)
	}
	if v, err := resolver(cfg).ResolveCommit(ctx, h); err != nil || v != exec.VerdictCommitted {
		t.Fatalf("ResolveCommit after Close = %v, %v; want committed", v, err)
	}
	next := r.open(cfg, 0, &receipts{})
	defer next.Close()
	r.expectIDs(seq(0, 40))
}

// Writable metadata columns: 'timestamp' becomes the record's timestamp and 'headers' (a JSON object) its
// headers; neither is part of the value.
func TestMetadataColumnsWriteTimestampAndHeaders(t *testing.T) {
	r := newRig(t, 1)
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond}, Nullable: true},
		{Name: "hs", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	opts := r.options("sink.delivery-guarantee", "at-least-once")
	cfg, err := SinkConfigFromOptions("kafka", schema, []string{"", "timestamp", "headers"}, nil, opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := r.open(cfg, 0, nil)
	defer s.Close()
	ib := array.NewInt64Builder(r.mem)
	defer ib.Release()
	tb := array.NewTimestampBuilder(r.mem, schema.Field(1).Type.(*arrow.TimestampType))
	defer tb.Release()
	hb := array.NewStringBuilder(r.mem)
	defer hb.Release()
	ib.AppendValues([]int64{1, 2}, nil)
	tb.AppendValues([]arrow.Timestamp{1_700_000_000_123_000, 0}, []bool{true, false})
	hb.AppendValues([]string{`{"b":"2","a":"1"}`, ""}, []bool{true, false})
	cols := []arrow.Array{ib.NewArray(), tb.NewArray(), hb.NewArray()}
	rec := array.NewRecordBatch(schema, cols, 2)
	for _, c := range cols {
		c.Release()
	}
	if err := s.Write(exec.Batch{Rec: rec}); err != nil {
		t.Fatal(err)
	}
	if err := s.PreCommit(1); err != nil {
		t.Fatal(err)
	}
	recs := r.cluster.ConsumeAll(t, r.topic)
	if len(recs) != 2 {
		t.Fatalf("%d records, want 2", len(recs))
	}
	if v := string(recs[0].Value); v != `{"id":1}` {
		t.Errorf("value %s, want only the data column", v)
	}
	if got := recs[0].Timestamp.UnixMilli(); got != 1_700_000_000_123 {
		t.Errorf("timestamp %d ms, want 1700000000123", got)
	}
	if hs := recs[0].Headers; len(hs) != 2 || hs[0].Key != "a" || string(hs[0].Value) != "1" || hs[1].Key != "b" {
		t.Errorf("headers %v, want a=1, b=2", hs)
	}
	if len(recs[1].Headers) != 0 || recs[1].Timestamp.Before(time.Now().Add(-time.Hour)) {
		t.Errorf("NULL metadata: headers %v, timestamp %v; want none and the write's time", recs[1].Headers, recs[1].Timestamp)
	}
}

// The formats: csv and raw values, a raw key with the default partitioner (the key's murmur2 hash, as the Java
// client: records of one key share a partition), and 'none' (fire and forget, everything sent by Close).
func TestFormatsKeysAndNone(t *testing.T) {
	r := newRig(t, 4)
	cfg := r.config("sink.delivery-guarantee", "none", "format", "csv", "key.format", "raw", "key.fields", "name")
	s := r.open(cfg, 0, nil)
	r.write(s, 0, 3)
	r.write(s, 0, 3) // the same keys again
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	byKey := map[string][]string{}
	part := map[string]int32{}
	for _, rec := range r.cluster.ConsumeAll(t, r.topic) {
		k := string(rec.Key)
		if p, ok := part[k]; ok && p != rec.Partition {
			t.Errorf("key %s in partitions %d and %d", k, p, rec.Partition)
		}
		part[k] = rec.Partition
		byKey[k] = append(byKey[k], string(rec.Value))
	}
	want := map[string][]string{"n0": {"0,n0", "0,n0"}, "n1": {"1,n1", "1,n1"}, "n2": {"2,n2", "2,n2"}}
	if fmt.Sprint(byKey) != fmt.Sprint(want) {
		t.Fatalf("records by key %v, want %v", byKey, want)
	}
	// The sink hashes keys with kgo's default hasher, Kafka's murmur2 (the Java client's partition), not sticky.
	if p := kgo.StickyKeyPartitioner(nil).ForTopic(r.topic).Partition(&kgo.Record{Key: []byte("n0")}, 4); part["n0"] != int32(p) {
		t.Errorf("key n0 in partition %d, murmur2 says %d", part["n0"], p)
	}
}

// SASL through 'properties.*' (Flink's jaas config form): the sink logs in and writes; a wrong password is
// refused at Open.
func TestSASLThroughProperties(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Options{Users: []kafkatest.User{{Mechanism: "SCRAM-SHA-256", Name: "app", Password: "s3cret"}}})
	c.CreateTopic(t, "out", 1)
	r := &rig{t: t, cluster: c, topic: "out", mem: memory.NewCheckedAllocator(memory.DefaultAllocator)}
	defer r.mem.AssertSize(t, 0)
	jaas := func(pass string) string {
		return `org.apache.kafka.common.security.scram.ScramLoginModule required username="app" password="` + pass + `";`
	}
	cfg := r.config("sink.delivery-guarantee", "at-least-once", "properties.security.protocol", "SASL_PLAINTEXT",
		"properties.sasl.mechanism", "SCRAM-SHA-256", "properties.sasl.jaas.config", jaas("s3cret"))
	s := r.open(cfg, 0, nil)
	r.write(s, 0, 10)
	if err := s.PreCommit(1); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if n := len(c.ConsumeAll(t, "out")); n != 10 {
		t.Fatalf("read %d records, want 10", n)
	}
	bad := r.config("sink.delivery-guarantee", "at-least-once", "properties.security.protocol", "SASL_PLAINTEXT",
		"properties.sasl.mechanism", "SCRAM-SHA-256", "properties.sasl.jaas.config", jaas("wrong"))
	s = NewSink(bad)
	if err := s.Open(&exec.TaskContext{Job: "job-1", Parallelism: 1, Alloc: r.mem}); err == nil {
		t.Fatal("Open with a wrong password succeeded")
	}
	s.Close()
}

// kfake's other late-EndTxn answers (tests/kafkatest measures them): a transaction fenced twice answers
// PRODUCER_FENCED and its ABORT marker proves aborted; one committed and then fenced answers PRODUCER_FENCED and
// its COMMIT marker proves committed.
func TestResolveAfterFenceHistories(t *testing.T) {
	for _, tc := range []struct {
		name   string
		commit bool // commit before the fences
		fences int
		want   exec.Verdict
	}{
		{"fenced twice", false, 2, exec.VerdictAborted},
		{"committed then fenced", true, 1, exec.VerdictCommitted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, 2)
			cfg := r.config()
			dead := r.open(cfg, 0, &receipts{})
			t.Cleanup(func() { dead.Close() })
			r.write(dead, 0, 30)
			h := preCommit(t, dead, 1)
			if tc.commit {
				if err := dead.Commit(1); err != nil {
					t.Fatal(err)
				}
			}
			for range tc.fences {
				r.open(cfg, 0, &receipts{}).Close()
			}
			r.expectEndTxnAnswer(h, kerr.ProducerFenced)
			ctx, cancel := bg()
			defer cancel()
			for _, call := range []func(context.Context, []byte) (exec.Verdict, error){resolver(cfg).ResolveCommit, resolver(cfg).Describe} {
				if v, err := call(ctx, h); err != nil || v != tc.want {
					t.Fatalf("verdict = %v, %v; want %v", v, err, tc.want)
				}
			}
			want := []int(nil)
			if tc.commit {
				want = seq(0, 30)
			}
			r.expectIDs(want)
		})
	}
}

// A commit that fails (the broker died, its state kept on disk) leaves the transaction staged and its producer
// unused; the next Commit, once the broker is back, retries through the resolver and receipts it once.
func TestCommitRetriedThroughResolverAfterBrokerRestart(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Options{DataDir: t.TempDir(), Topics: map[string]int32{"out": 2}})
	r := &rig{t: t, cluster: c, topic: "out", mem: memory.NewCheckedAllocator(memory.DefaultAllocator)}
	defer r.mem.AssertSize(t, 0)
	cfg := r.config()
	rc := &receipts{}
	s := r.open(cfg, 0, rc)
	defer s.Close()
	r.write(s, 0, 100)
	preCommit(t, s, 1)
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(1); err == nil {
		t.Fatal("Commit succeeded without a broker")
	}
	if got := rc.get(); len(got) != 0 {
		t.Fatalf("receipts %v after a failed commit", got)
	}
	back, err := c.Restart()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(back.Kill)
	r.cluster = back
	if err := s.Commit(1); err != nil {
		t.Fatalf("Commit again: %v", err)
	}
	if got := rc.get(); !slices.Equal(got, []uint64{1}) {
		t.Fatalf("receipts %v, want [1]", got)
	}
	r.expectIDs(seq(0, 100))
}

// consumedBytes are the key and value bytes a read_committed consumer reads from the topic.
func (r *rig) consumedBytes() int64 {
	r.t.Helper()
	var n int64
	for _, rec := range r.cluster.ConsumeAll(r.t, r.topic) {
		n += int64(len(rec.Key) + len(rec.Value))
	}
	return n
}

// Pins: the committed bytes (exec.SinkProgress) counting a transaction before it commits, or differing from what a
// read_committed consumer reads; without transactions, from what the brokers acknowledged.
func TestSinkCountsCommittedBytes(t *testing.T) {
	r := newRig(t, 2)
	s := r.open(r.config(), 0, &receipts{})
	defer s.Close()
	sp := s.(exec.SinkProgress)
	r.write(s, 0, 100)
	preCommit(t, s, 1)
	r.write(s, 100, 250)
	preCommit(t, s, 2)
	if n := sp.CommittedBytes(); n != 0 {
		t.Fatalf("%d bytes committed before any commit", n)
	}
	if err := s.Commit(1); err != nil {
		t.Fatal(err)
	}
	one := sp.CommittedBytes()
	if want := r.consumedBytes(); one == 0 || one != want {
		t.Fatalf("after Commit(1): %d bytes committed, a consumer reads %d", one, want)
	}
	r.write(s, 250, 300) // open, never sealed
	if err := s.Commit(2); err != nil {
		t.Fatal(err)
	}
	if n, want := sp.CommittedBytes(), r.consumedBytes(); n <= one || n != want {
		t.Fatalf("after Commit(2): %d bytes committed, a consumer reads %d", n, want)
	}

	r2 := newRig(t, 2)
	s2 := r2.open(r2.config("sink.delivery-guarantee", "at-least-once"), 0, nil)
	defer s2.Close()
	r2.write(s2, 0, 500)
	if err := s2.PreCommit(1); err != nil {
		t.Fatal(err)
	}
	if n, want := s2.(exec.SinkProgress).CommittedBytes(), r2.consumedBytes(); n == 0 || n != want {
		t.Fatalf("at-least-once after PreCommit: %d bytes counted, a consumer reads %d", n, want)
	}
}
