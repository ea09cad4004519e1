package nats_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/nats-io/nats.go/jetstream"

	natsconn "github.com/clinksql/clinksql/connectors/nats"
	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/state"
	"github.com/clinksql/clinksql/tests/natstest"
)

var sinkSchema = arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)

func sinkCfg(t *testing.T, url, dir string) natsconn.SinkConfig {
	t.Helper()
	cfg, err := natsconn.SinkConfigFromOptions(sinkSchema, []string{""}, map[string]string{"nats.url": url,
		"nats.subject": "out.x", "format": "json"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg.StagingDir = dir
	return cfg
}

func idBatch(mem memory.Allocator, from, to int) exec.Batch {
	b := array.NewInt64Builder(mem)
	defer b.Release()
	for i := from; i < to; i++ {
		b.Append(int64(i))
	}
	col := b.NewArray()
	defer col.Release()
	return exec.Batch{Rec: array.NewRecordBatch(sinkSchema, []arrow.Array{col}, int64(to-from))}
}

func openSink(t *testing.T, cfg natsconn.SinkConfig, completed func(uint64) bool) exec.Sink {
	t.Helper()
	s := natsconn.NewSink(cfg)
	if err := s.Open(&exec.TaskContext{Job: "j", Operator: "snk", Parallelism: 1, FS: state.OS, IsCompleted: completed,
		Alloc: memory.DefaultAllocator}); err != nil {
		t.Fatal(err)
	}
	return s
}

// stage writes b and stages it for checkpoint id.
func stage(t *testing.T, s exec.Sink, b exec.Batch, id uint64) {
	t.Helper()
	if err := s.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := s.PreCommit(id); err != nil {
		t.Fatal(err)
	}
}

func streamMsgs(t *testing.T, ctx context.Context, js jetstream.JetStream) uint64 {
	t.Helper()
	st, err := js.Stream(ctx, "OUT")
	if err != nil {
		t.Fatal(err)
	}
	return st.CachedInfo().State.Msgs
}

// Nothing is published before Commit; a crash after PreCommit leaves the staged messages, which the next Open
// publishes when their checkpoint completed (and deletes when it did not); a crash after the publish but before
// the staged file's delete publishes them again, and the stream's duplicate window drops every one (Nats-Msg-Id
// is the same): exactly once.
func TestSinkRecoveryPublishesOnce(t *testing.T) {
	srv := natstest.StartWithStream(t, jetstream.StreamConfig{Name: "OUT", Subjects: []string{"out.>"}, Duplicates: time.Minute})
	js := srv.JetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	dir := t.TempDir()
	cfg := sinkCfg(t, srv.URL(), dir)

	a := openSink(t, cfg, func(uint64) bool { return false })
	stage(t, a, idBatch(mem, 0, 100), 1)
	stage(t, a, idBatch(mem, 100, 150), 2)
	if n := streamMsgs(t, ctx, js); n != 0 {
		t.Fatalf("%d messages published before any commit", n)
	}
	a.Close() // the crash: checkpoint 1 completed, 2 did not

	b := openSink(t, cfg, func(id uint64) bool { return id == 1 })
	if n := streamMsgs(t, ctx, js); n != 100 {
		t.Fatalf("after recovery %d messages, want 100 (checkpoint 1's)", n)
	}
	staged, _ := filepath.Glob(filepath.Join(dir, "*", "*.msgs"))
	if len(staged) != 0 {
		t.Fatalf("staged files left after recovery: %v", staged)
	}
	// Checkpoint 3 published, then a crash before its staged file was deleted (a copy stands for it).
	stage(t, b, idBatch(mem, 200, 260), 3)
	staged, _ = filepath.Glob(filepath.Join(dir, "*", "*-3.msgs"))
	if len(staged) != 1 {
		t.Fatalf("staged %v, want checkpoint 3's file", staged)
	}
	keep, err := os.ReadFile(staged[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(3); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(3); err != nil { // idempotent
		t.Fatal(err)
	}
	b.Close()
	if err := os.WriteFile(staged[0], keep, 0o644); err != nil {
		t.Fatal(err)
	}
	c := openSink(t, cfg, func(id uint64) bool { return id <= 3 })
	defer c.Close()
	if n := streamMsgs(t, ctx, js); n != 160 {
		t.Fatalf("after the second recovery %d messages, want 160: a republished checkpoint was not deduplicated", n)
	}
	msgs, err := natstest.ReadAll(ctx, js, "OUT")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, m := range msgs {
		id := m.Headers().Get(jetstream.MsgIDHeader)
		if !strings.HasPrefix(idTail(id), "j-snk-0-") || seen[id] {
			t.Fatalf("message id %q (seen before: %v)", id, seen[id])
		}
		seen[id] = true
	}
}

// A subject no stream captures is refused at Open, naming the subject.
func TestSinkRefusesUncapturedSubject(t *testing.T) {
	srv := natstest.StartWithStream(t, jetstream.StreamConfig{Name: "OTHER", Subjects: []string{"other.>"}})
	s := natsconn.NewSink(sinkCfg(t, srv.URL(), t.TempDir()))
	err := s.Open(&exec.TaskContext{Job: "j", Operator: "snk", Parallelism: 1, FS: state.OS})
	if err == nil || !strings.Contains(err.Error(), `no JetStream stream captures subject "out.x"`) {
		t.Fatalf("open: %v", err)
	}
	s.Close()
}

// On a stream that allows atomic batch publishing, a checkpoint's messages are stored as one batch (all or
// none); republished after a crash, the batch is refused for its stored ids and nothing is stored twice; a
// checkpoint above the server's batch limit is published message by message.
func TestSinkAtomicBatch(t *testing.T) {
	srv := natstest.StartWithStream(t, jetstream.StreamConfig{Name: "OUT", Subjects: []string{"out.>"}, Duplicates: time.Minute, AllowAtomicPublish: true})
	js := srv.JetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	dir := t.TempDir()
	cfg := sinkCfg(t, srv.URL(), dir)
	a := openSink(t, cfg, func(uint64) bool { return false })
	stage(t, a, idBatch(mem, 0, 50), 1)
	staged, _ := filepath.Glob(filepath.Join(dir, "*", "*-1.msgs"))
	if len(staged) != 1 {
		t.Fatalf("staged %v", staged)
	}
	keep, err := os.ReadFile(staged[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Commit(1); err != nil {
		t.Fatal(err)
	}
	msgs, err := natstest.ReadAll(ctx, js, "OUT")
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 50 || idTail(msgs[0].Headers().Get("Nats-Batch-Id")) != "j-snk-0-1" {
		t.Fatalf("%d messages, the first with batch id %q: want 50 in batch j-snk-0-1", len(msgs), msgs[0].Headers().Get("Nats-Batch-Id"))
	}
	a.Close()
	if err := os.WriteFile(staged[0], keep, 0o644); err != nil {
		t.Fatal(err)
	}
	b := openSink(t, cfg, func(id uint64) bool { return id == 1 })
	defer b.Close()
	if n := streamMsgs(t, ctx, js); n != 50 {
		t.Fatalf("after the republish %d messages, want 50", n)
	}
	stage(t, b, idBatch(mem, 100, 1600), 2)
	if err := b.Commit(2); err != nil {
		t.Fatal(err)
	}
	if n := streamMsgs(t, ctx, js); n != 1550 {
		t.Fatalf("%d messages, want 1550", n)
	}
}

// A restore at a lower parallelism: subtask 0 recovers what the subtasks above it staged, with their message ids.
func TestSinkRecoversWiderIncarnation(t *testing.T) {
	srv := natstest.StartWithStream(t, jetstream.StreamConfig{Name: "OUT", Subjects: []string{"out.>"}, Duplicates: time.Minute})
	js := srv.JetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	cfg := sinkCfg(t, srv.URL(), t.TempDir())
	never := func(uint64) bool { return false }
	open := func(sub, par int, completed func(uint64) bool) exec.Sink {
		s := natsconn.NewSink(cfg)
		if err := s.Open(&exec.TaskContext{Job: "j", Operator: "snk", Subtask: sub, Parallelism: par, FS: state.OS,
			IsCompleted: completed}); err != nil {
			t.Fatal(err)
		}
		return s
	}
	for sub := range 2 {
		s := open(sub, 2, never)
		stage(t, s, idBatch(mem, sub*10, sub*10+10), 4)
		s.Close()
	}
	s := open(0, 1, func(id uint64) bool { return id == 4 })
	defer s.Close()
	msgs, err := natstest.ReadAll(ctx, js, "OUT")
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, m := range msgs {
		ids[idTail(m.Headers().Get(jetstream.MsgIDHeader))] = true
	}
	if len(msgs) != 20 || !ids["j-snk-0-4-1"] || !ids["j-snk-1-4-10"] {
		t.Fatalf("%d messages with ids %v, want 20 of subtasks 0 and 1", len(msgs), ids)
	}
}

// idTail is a message id without the job's instance token.
func idTail(id string) string {
	_, tail, _ := strings.Cut(id, "-")
	return tail
}

// The same job id in another data directory (or this one wiped) publishes under another instance token: its
// messages are not taken for duplicates of the first one's in the stream's duplicate window.
func TestSinkInstancesDoNotCollide(t *testing.T) {
	srv := natstest.StartWithStream(t, jetstream.StreamConfig{Name: "OUT", Subjects: []string{"out.>"}, Duplicates: time.Minute})
	js := srv.JetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	for range 2 {
		s := openSink(t, sinkCfg(t, srv.URL(), t.TempDir()), func(uint64) bool { return false })
		stage(t, s, idBatch(mem, 0, 10), 1)
		if err := s.Commit(1); err != nil {
			t.Fatal(err)
		}
		s.Close()
	}
	if n := streamMsgs(t, ctx, js); n != 20 {
		t.Fatalf("%d messages, want 20: a second data directory's job-1 was taken for the first's duplicates", n)
	}
}

// A raw sink publishes a string or bytes column's values as the payloads themselves, a null as an empty message.
func TestSinkRawPayloads(t *testing.T) {
	srv := natstest.StartWithStream(t, jetstream.StreamConfig{Name: "OUT", Subjects: []string{"out.>"}, Duplicates: time.Minute})
	js := srv.JetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	for _, typ := range []arrow.DataType{arrow.BinaryTypes.String, arrow.BinaryTypes.Binary} {
		schema := arrow.NewSchema([]arrow.Field{{Name: "v", Type: typ, Nullable: true}}, nil)
		cfg, err := natsconn.SinkConfigFromOptions(schema, []string{""}, map[string]string{"nats.url": srv.URL(),
			"nats.subject": "out.x", "format": "raw"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		cfg.StagingDir = t.TempDir()
		bb := array.NewBuilder(mem, typ)
		switch b := bb.(type) {
		case *array.StringBuilder:
			b.AppendValues([]string{"skip", "a", "", "bc"}, nil)
			b.AppendNull()
		case *array.BinaryBuilder:
			b.AppendValues([][]byte{[]byte("skip"), []byte("a"), {}, []byte("bc")}, nil)
			b.AppendNull()
		}
		col := bb.NewArray()
		bb.Release()
		rec := array.NewRecordBatch(schema, []arrow.Array{col}, 5)
		col.Release()
		sliced := rec.NewSlice(1, 5) // values at an offset in their buffers
		rec.Release()
		s := openSink(t, cfg, func(uint64) bool { return false })
		stage(t, s, exec.Batch{Rec: sliced}, 1)
		if err := s.Commit(1); err != nil {
			t.Fatal(err)
		}
		s.Close()
	}
	msgs, err := natstest.ReadAll(ctx, js, "OUT")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range msgs {
		got = append(got, string(m.Data()))
	}
	if want := []string{"a", "", "bc", "", "a", "", "bc", ""}; !slices.Equal(got, want) {
		t.Fatalf("payloads %q, want %q", got, want)
	}
}
