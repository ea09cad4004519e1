package nats_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/clinksql/clinksql/engine"
	"github.com/clinksql/clinksql/sqlerr"
	"github.com/clinksql/clinksql/tests/natstest"
)

// harness is an engine over a data directory with a checked allocator, and a nats-server.
type harness struct {
	t    *testing.T
	srv  *natstest.Server
	js   jetstream.JetStream
	dir  string
	mem  *memory.CheckedAllocator
	e    *engine.Engine
	s    *engine.Session
	ctx  context.Context
	stop context.CancelFunc
}

func newHarness(t *testing.T) *harness {
	h := &harness{t: t, srv: natstest.StartT(t, natstest.Options{}), dir: t.TempDir()}
	h.js = h.srv.JetStream(t)
	h.ctx, h.stop = context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(h.stop)
	h.open()
	t.Cleanup(h.close)
	return h
}

func (h *harness) open() {
	h.mem = memory.NewCheckedAllocator(memory.NewGoAllocator())
	e, err := engine.Open(engine.Config{DataDir: h.dir, Alloc: h.mem})
	if err != nil {
		h.t.Fatal(err)
	}
	h.e, h.s = e, e.NewSession()
}

func (h *harness) close() {
	if h.e == nil {
		return
	}
	if err := h.e.Close(h.ctx); err != nil {
		h.t.Errorf("close: %v", err)
	}
	h.e = nil
	h.mem.AssertSize(h.t, 0)
}

func (h *harness) run(sql string) {
	h.t.Helper()
	if _, err := h.s.Execute(h.ctx, sql); err != nil {
		h.t.Fatalf("%s: %v", sql, err)
	}
}

func (h *harness) stream(name string, subjects ...string) {
	h.t.Helper()
	h.srv.CreateStream(h.t, jetstream.StreamConfig{Name: name, Subjects: subjects, Duplicates: 2 * time.Minute})
}

// publish publishes JSON messages {"id": i, "v": "v<i>"} for i in [from, to).
func (h *harness) publish(subject string, from, to int) {
	h.t.Helper()
	var ps [][]byte
	for i := from; i < to; i++ {
		ps = append(ps, fmt.Appendf(nil, `{"id": %d, "v": "v%d"}`, i, i))
	}
	if err := natstest.Publish(h.ctx, h.js, subject, ps); err != nil {
		h.t.Fatal(err)
	}
}

// outRow is a message of the output stream.
type outRow struct {
	ID   int64  `json:"id"`
	V    string `json:"v"`
	Subj string `json:"subj"`
	Seq  int64  `json:"seq"`
}

func (h *harness) read(stream string) ([]outRow, []string) {
	h.t.Helper()
	msgs, err := natstest.ReadAll(h.ctx, h.js, stream)
	if err != nil {
		h.t.Fatal(err)
	}
	var rows []outRow
	var ids []string
	for _, m := range msgs {
		var r outRow
		if err := json.Unmarshal(m.Data(), &r); err != nil {
			h.t.Fatalf("output %q: %v", m.Data(), err)
		}
		rows = append(rows, r)
		ids = append(ids, m.Headers().Get(jetstream.MsgIDHeader))
	}
	return rows, ids
}

// flushUntil runs FLUSH until the output stream holds n messages (or the test's deadline).
func (h *harness) flushUntil(stream string, n int) []outRow {
	h.t.Helper()
	for {
		h.run(`FLUSH`)
		st, err := h.js.Stream(h.ctx, stream)
		if err != nil {
			h.t.Fatal(err)
		}
		if int(st.CachedInfo().State.Msgs) >= n {
			rows, _ := h.read(stream)
			return rows
		}
		select {
		case <-h.ctx.Done():
			h.t.Fatalf("the output stream %s holds %d messages, want %d", stream, st.CachedInfo().State.Msgs, n)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// checkOnce checks that rows hold ids [0, n) once each.
func checkOnce(t *testing.T, rows []outRow, n int) {
	t.Helper()
	var ids []int64
	for _, r := range rows {
		ids = append(ids, r.ID)
	}
	slices.Sort(ids)
	if len(ids) != n {
		t.Fatalf("%d rows, want %d", len(ids), n)
	}
	for i, id := range ids {
		if id != int64(i) {
			t.Fatalf("row %d has id %d: ids %v...", i, id, ids[:min(len(ids), 20)])
		}
	}
}

func (h *harness) pipeline(consumer string) {
	h.stream("IN", "in.>")
	h.stream("OUT", "out.>")
	h.run(`SET checkpoint.interval = '200ms'`)
	h.run(fmt.Sprintf(`CREATE STREAM s (id BIGINT, v VARCHAR, subj VARCHAR METADATA FROM 'subject' VIRTUAL,
		seq BIGINT METADATA FROM 'stream-sequence' VIRTUAL) WITH (connector = 'nats', 'nats.url' = '%s',
		'nats.stream' = 'IN', 'nats.consumer' = '%s', format = 'json')`, h.srv.URL(), consumer))
	h.run(fmt.Sprintf(`CREATE SINK o (id BIGINT, v VARCHAR, subj VARCHAR, seq BIGINT) WITH (connector = 'nats',
		'nats.url' = '%s', 'nats.subject' = 'out.rows', format = 'json')`, h.srv.URL()))
	h.run(`INSERT INTO o SELECT id, v, subj, seq FROM s`)
}

// A NATS source through the engine into a NATS sink: every message once, with its subject and stream sequence,
// and every output message with its deterministic message id.
func TestEngineNATSToNATS(t *testing.T) {
	h := newHarness(t)
	h.pipeline("c1")
	h.publish("in.a", 0, 3000)
	rows := h.flushUntil("OUT", 3000)
	checkOnce(t, rows, 3000)
	for _, r := range rows {
		if r.Subj != "in.a" || r.Seq != r.ID+1 || r.V != fmt.Sprintf("v%d", r.ID) {
			t.Fatalf("row %+v: want subject in.a and sequence id+1", r)
		}
	}
	_, ids := h.read("OUT")
	for _, id := range ids {
		if id == "" {
			t.Fatal("an output message without Nats-Msg-Id")
		}
	}
}

// Across an engine restart (its jobs restored from their last completed checkpoints while messages are being
// published, so some were delivered to the closed engine and never acknowledged), every message reaches the
// sink exactly once.
func TestEngineNATSRestartOnce(t *testing.T) {
	h := newHarness(t)
	h.pipeline("c2")
	h.publish("in.a", 0, 2000)
	h.flushUntil("OUT", 2000)
	done := make(chan struct{})
	go func() {
		defer close(done)
		var ps [][]byte
		for i := 2000; i < 2500; i++ {
			ps = append(ps, fmt.Appendf(nil, `{"id": %d, "v": "v%d"}`, i, i))
		}
		if err := natstest.Publish(h.ctx, h.js, "in.a", ps); err != nil {
			t.Error(err)
		}
	}()
	h.close()
	<-done
	h.publish("in.a", 2500, 3000)
	h.open()
	rows := h.flushUntil("OUT", 3000)
	checkOnce(t, rows, 3000)
	c, err := h.js.Consumer(h.ctx, "IN", "c2")
	if err != nil {
		t.Fatal(err)
	}
	for {
		ci, err := c.Info(h.ctx)
		if err != nil {
			t.Fatal(err)
		}
		if ci.AckFloor.Stream == 3000 && ci.NumAckPending == 0 {
			break
		}
		h.run(`FLUSH`)
	}
}

// The server restarts under a running job (its store kept): the source's client reconnects and issues new pull
// requests (the old ones died with the server), the sink's commits go through once it is back, and every
// message reaches the sink exactly once.
func TestEngineNATSServerRestart(t *testing.T) {
	h := newHarness(t)
	h.pipeline("c3")
	h.publish("in.a", 0, 1000)
	h.flushUntil("OUT", 1000)
	h.srv.Kill()
	time.Sleep(300 * time.Millisecond)
	if err := h.srv.Restart(h.ctx); err != nil {
		t.Fatal(err)
	}
	h.js = h.srv.JetStream(t)
	h.publish("in.a", 1000, 2000)
	checkOnce(t, h.flushUntil("OUT", 2000), 2000)
}

// Two jobs on one durable consumer would split its messages between them, each seeing a part and neither saying
// so: with 'nats.consumer' a second job over the stream is refused (55006) while the first runs, naming the option
// that would give it a reader of its own.
func TestEngineSecondReaderOfDurableConsumerRefused(t *testing.T) {
	h := newHarness(t)
	h.pipeline("shared")
	_, err := h.s.Execute(h.ctx, `INSERT INTO o SELECT id, v, subj, seq FROM s`)
	if e := sqlerr.As(err); e == nil || e.Code != sqlerr.ObjectInUse || !strings.Contains(e.Hint, "nats.consumer") {
		t.Fatalf("a second job on the durable consumer: %v, want 55006 with a hint naming nats.consumer", err)
	}
	// Without a durable consumer each job has an ephemeral consumer of its own: two readers are fine.
	h.run(fmt.Sprintf(`CREATE STREAM e (id BIGINT, v VARCHAR) WITH (connector = 'nats', 'nats.url' = '%s',
		'nats.stream' = 'IN', format = 'json')`, h.srv.URL()))
	h.run(`INSERT INTO o SELECT id, v, 'e1', 0 FROM e`)
	h.run(`INSERT INTO o SELECT id, v, 'e2', 0 FROM e`)
}
