package nats_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/clinksql/clinksql/connectors"
	natsconn "github.com/clinksql/clinksql/connectors/nats"
	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/tests/natstest"
)

// direct drives a source subtask as the runtime does, without an engine.
type direct struct {
	t   *testing.T
	src exec.Source
	mem *memory.CheckedAllocator
	ids []int64
}

func sourceConfig(t *testing.T, url, consumer string, extra map[string]string) natsconn.SourceConfig {
	t.Helper()
	cols := []natsconn.Column{{Field: arrow.Field{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true}},
		{Field: arrow.Field{Name: "seq", Type: arrow.PrimitiveTypes.Int64, Nullable: true}, MetadataKey: "stream-sequence"}}
	opts := map[string]string{"nats.url": url, "nats.stream": "IN", "format": "json"}
	if consumer != "" {
		opts["nats.consumer"] = consumer
	}
	for k, v := range extra {
		opts[k] = v
	}
	cfg, err := natsconn.SourceConfigFromOptions(cols, opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func openDirect(t *testing.T, cfg natsconn.SourceConfig, restore []byte) *direct {
	t.Helper()
	d := &direct{t: t, src: natsconn.NewSource(cfg)(0), mem: memory.NewCheckedAllocator(memory.NewGoAllocator())}
	var restored uint64
	if restore != nil {
		if err := d.src.RestoreOffset(restore); err != nil {
			t.Fatal(err)
		}
		restored = 1
	}
	if err := d.src.Open(&exec.TaskContext{Job: "j", Operator: "src", Parallelism: 1, Alloc: d.mem, Restored: restored}); err != nil {
		t.Fatal(err)
	}
	return d
}

func (d *direct) close() {
	d.t.Helper()
	if err := d.src.Close(); err != nil {
		d.t.Fatal(err)
	}
	d.mem.AssertSize(d.t, 0)
}

// readUntil produces until n rows were read in all (the test's deadline bounds it).
func (d *direct) readUntil(ctx context.Context, n int) {
	d.t.Helper()
	for len(d.ids) < n {
		res, err := d.src.Produce(ctx)
		if err != nil {
			d.t.Fatal(err)
		}
		switch res.Status {
		case exec.Produced:
			col := res.Batch.Rec.Column(0).(*array.Int64)
			for i := range col.Len() {
				d.ids = append(d.ids, col.Value(i))
			}
			res.Batch.Release()
		case exec.Idle:
			select {
			case <-d.src.(exec.IdleWaiter).IdleWait():
			case <-time.After(100 * time.Millisecond):
			case <-ctx.Done():
				d.t.Fatalf("read %d rows, want %d", len(d.ids), n)
			}
		}
	}
	if len(d.ids) != n {
		d.t.Fatalf("read %d rows, want %d", len(d.ids), n)
	}
}

// idle produces until the source has nothing for a while, failing on any row.
func (d *direct) idle(ctx context.Context) {
	d.t.Helper()
	for range 5 {
		res, err := d.src.Produce(ctx)
		if err != nil {
			d.t.Fatal(err)
		}
		if res.Status == exec.Produced {
			d.t.Fatalf("read %d more rows, want none", res.Batch.Rows())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func publishIDs(t *testing.T, ctx context.Context, js jetstream.JetStream, from, to int) {
	t.Helper()
	var ps [][]byte
	for i := from; i < to; i++ {
		ps = append(ps, fmt.Appendf(nil, `{"id": %d}`, i))
	}
	if err := natstest.Publish(ctx, js, "in.x", ps); err != nil {
		t.Fatal(err)
	}
}

func ackFloor(t *testing.T, ctx context.Context, js jetstream.JetStream, consumer string) (floor uint64, pending int) {
	t.Helper()
	c, err := js.Consumer(ctx, "IN", consumer)
	if err != nil {
		t.Fatal(err)
	}
	ci, err := c.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return ci.AckFloor.Stream, ci.NumAckPending
}

// waitFloor waits until the consumer's ack floor is at least want (acks are sent without waiting for the server).
func waitFloor(t *testing.T, ctx context.Context, js jetstream.JetStream, consumer string, want uint64) {
	t.Helper()
	for {
		if f, _ := ackFloor(t, ctx, js, consumer); f >= want {
			if f != want {
				t.Fatalf("ack floor %d, want %d", f, want)
			}
			return
		}
		select {
		case <-ctx.Done():
			f, _ := ackFloor(t, context.Background(), js, consumer)
			t.Fatalf("ack floor %d, want %d", f, want)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

var _ = connectors.Env{}

// Messages are acknowledged only once the checkpoint covering them completes: at the barrier nothing is, after
// NotifyCheckpointComplete exactly what the checkpoint covered is (the ack floor is its sequence), and an aborted
// checkpoint's messages stay unacknowledged until a later checkpoint completes.
func TestSourceAcksOnlyOnCompletion(t *testing.T) {
	srv := natstest.StartWithStream(t, jetstream.StreamConfig{Name: "IN", Subjects: []string{"in.>"}})
	js := srv.JetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	publishIDs(t, ctx, js, 0, 1000)
	d := openDirect(t, sourceConfig(t, srv.URL(), "c", nil), nil)
	defer d.close()
	d.readUntil(ctx, 1000)
	co := d.src.(exec.CheckpointOffsetter)
	l := d.src.(exec.CheckpointListener)
	if _, err := co.SnapshotOffsetAt(1); err != nil {
		t.Fatal(err)
	}
	publishIDs(t, ctx, js, 1000, 1500)
	d.readUntil(ctx, 1500)
	d.idle(ctx)
	if f, p := ackFloor(t, ctx, js, "c"); f != 0 || p != 1500 {
		t.Fatalf("after the barrier: ack floor %d, %d pending; want 0 and 1500 (nothing acknowledged at the barrier)", f, p)
	}
	if _, err := co.SnapshotOffsetAt(2); err != nil {
		t.Fatal(err)
	}
	l.NotifyCheckpointComplete(1)
	d.idle(ctx)
	waitFloor(t, ctx, js, "c", 1000)
	// Checkpoint 2 aborts: its messages stay unacknowledged, and checkpoint 3 (covering them too) acknowledges them.
	l.NotifyCheckpointAborted(2)
	d.idle(ctx)
	if f, p := ackFloor(t, ctx, js, "c"); f != 1000 || p != 500 {
		t.Fatalf("after the abort: ack floor %d, %d pending; want 1000 and 500", f, p)
	}
	publishIDs(t, ctx, js, 1500, 1600)
	d.readUntil(ctx, 1600)
	if _, err := co.SnapshotOffsetAt(3); err != nil {
		t.Fatal(err)
	}
	l.NotifyCheckpointComplete(3)
	d.idle(ctx)
	waitFloor(t, ctx, js, "c", 1600)
	for i, id := range d.ids {
		if id != int64(i) {
			t.Fatalf("row %d has id %d", i, id)
		}
	}
}

// A restore from a checkpoint that covered only part of what was delivered: the consumer is reset, so the server
// delivers the rest again at once (AckWait is 10 minutes: waiting for it would time the test out), and every
// message after the checkpoint is read exactly once, none before it.
func TestSourceRestoreRedeliversPromptlyOnce(t *testing.T) {
	srv := natstest.StartWithStream(t, jetstream.StreamConfig{Name: "IN", Subjects: []string{"in.>"}})
	js := srv.JetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := sourceConfig(t, srv.URL(), "c", map[string]string{"nats.ack-wait": "10 min"})
	publishIDs(t, ctx, js, 0, 600)
	a := openDirect(t, cfg, nil)
	a.readUntil(ctx, 600)
	off, err := a.src.(exec.CheckpointOffsetter).SnapshotOffsetAt(1)
	if err != nil {
		t.Fatal(err)
	}
	// Checkpoint 1 completed, but the process dies before its acks went out; 400 more are delivered and never
	// acknowledged.
	publishIDs(t, ctx, js, 600, 1000)
	a.readUntil(ctx, 1000)
	if _, err := a.src.(exec.CheckpointOffsetter).SnapshotOffsetAt(2); err != nil {
		t.Fatal(err)
	}
	a.close()
	if f, p := ackFloor(t, ctx, js, "c"); f != 0 || p != 1000 {
		t.Fatalf("before the restore: ack floor %d, %d pending; want 0 and 1000", f, p)
	}

	b := openDirect(t, cfg, off)
	defer b.close()
	b.readUntil(ctx, 400)
	b.idle(ctx)
	for i, id := range b.ids {
		if id != int64(600+i) {
			t.Fatalf("after the restore row %d has id %d, want %d", i, id, 600+i)
		}
	}
	c, _ := js.Consumer(ctx, "IN", "c")
	ci, _ := c.Info(ctx)
	t.Logf("after the restore: delivered %d (consumer sequence %d), redelivered %d, ack floor %d", ci.Delivered.Stream,
		ci.Delivered.Consumer, ci.NumRedelivered, ci.AckFloor.Stream)
	if _, err := b.src.(exec.CheckpointOffsetter).SnapshotOffsetAt(3); err != nil {
		t.Fatal(err)
	}
	b.src.(exec.CheckpointListener).NotifyCheckpointComplete(3)
	b.idle(ctx)
	waitFloor(t, ctx, js, "c", 1000)
}

// A message the server redelivers (AckWait passed) while the checkpoint covering it is in flight is dropped by
// its stream sequence, and acknowledged with that checkpoint.
func TestSourceDropsRedeliveryInFlight(t *testing.T) {
	srv := natstest.StartWithStream(t, jetstream.StreamConfig{Name: "IN", Subjects: []string{"in.>"}})
	js := srv.JetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := sourceConfig(t, srv.URL(), "c", map[string]string{"nats.ack-wait": "300 ms"})
	publishIDs(t, ctx, js, 0, 100)
	d := openDirect(t, cfg, nil)
	defer d.close()
	d.readUntil(ctx, 100)
	if _, err := d.src.(exec.CheckpointOffsetter).SnapshotOffsetAt(1); err != nil {
		t.Fatal(err)
	}
	// Wait until the server redelivered them (the consumer counts redeliveries), reading all the while.
	c, _ := js.Consumer(ctx, "IN", "c")
	for {
		d.idle(ctx)
		ci, err := c.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if ci.NumRedelivered >= 100 || ci.Delivered.Consumer >= 200 {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("no redelivery")
		}
	}
	d.idle(ctx)
	d.src.(exec.CheckpointListener).NotifyCheckpointComplete(1)
	d.idle(ctx)
	waitFloor(t, ctx, js, "c", 100)
	if len(d.ids) != 100 {
		t.Fatalf("read %d rows, want 100", len(d.ids))
	}
}

// 'latest-offset' starts a new consumer after the stream's last message at the first start, as an exact
// sequence: a restore from a checkpoint taken before anything was read starts there too (not at the then latest
// message), so what was published meanwhile is read.
func TestSourceLatestOffsetRestore(t *testing.T) {
	srv := natstest.StartWithStream(t, jetstream.StreamConfig{Name: "IN", Subjects: []string{"in.>"}})
	js := srv.JetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	publishIDs(t, ctx, js, 0, 10)
	cfg := sourceConfig(t, srv.URL(), "", map[string]string{"scan.startup.mode": "latest-offset"})
	a := openDirect(t, cfg, nil)
	a.idle(ctx)
	off, err := a.src.(exec.CheckpointOffsetter).SnapshotOffsetAt(1)
	if err != nil {
		t.Fatal(err)
	}
	a.close()
	publishIDs(t, ctx, js, 10, 20)
	b := openDirect(t, cfg, off)
	defer b.close()
	b.readUntil(ctx, 10)
	b.idle(ctx)
	if b.ids[0] != 10 || b.ids[9] != 19 {
		t.Fatalf("read %v, want 10..19", b.ids)
	}
}

// With the server stopped (SIGSTOP: connections open, nothing answers), nothing the runtime calls waits for it:
// Produce returns Idle, a barrier's snapshot and a completed checkpoint's acks return; once the server resumes,
// the acks arrive and reading goes on.
func TestSourceNeverWaitsForTheServer(t *testing.T) {
	srv := natstest.StartWithStream(t, jetstream.StreamConfig{Name: "IN", Subjects: []string{"in.>"}})
	js := srv.JetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	publishIDs(t, ctx, js, 0, 100)
	d := openDirect(t, sourceConfig(t, srv.URL(), "c", nil), nil)
	defer d.close()
	d.readUntil(ctx, 100)
	srv.Pause()
	resumed := false
	defer func() {
		if !resumed {
			srv.Resume()
		}
	}()
	d.idle(ctx)
	if _, err := d.src.(exec.CheckpointOffsetter).SnapshotOffsetAt(1); err != nil {
		t.Fatal(err)
	}
	d.src.(exec.CheckpointListener).NotifyCheckpointComplete(1)
	d.idle(ctx)
	srv.Resume()
	resumed = true
	waitFloor(t, ctx, js, "c", 100)
	publishIDs(t, ctx, js, 100, 150)
	d.readUntil(ctx, 150)
}

// 'nats.max-ack-pending' bounds what is delivered and not acknowledged: the consumer stalls at it until a
// checkpoint completes and its acks free room, then delivery goes on (no deadlock).
func TestSourceMaxAckPending(t *testing.T) {
	srv := natstest.StartWithStream(t, jetstream.StreamConfig{Name: "IN", Subjects: []string{"in.>"}})
	js := srv.JetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	publishIDs(t, ctx, js, 0, 300)
	d := openDirect(t, sourceConfig(t, srv.URL(), "c", map[string]string{"nats.max-ack-pending": "100", "nats.fetch-size": "100"}), nil)
	defer d.close()
	for id := uint64(1); id <= 3; id++ {
		d.readUntil(ctx, int(id)*100)
		d.idle(ctx) // stalled at 100 unacknowledged
		if _, err := d.src.(exec.CheckpointOffsetter).SnapshotOffsetAt(id); err != nil {
			t.Fatal(err)
		}
		d.src.(exec.CheckpointListener).NotifyCheckpointComplete(id)
	}
	d.idle(ctx)
	waitFloor(t, ctx, js, "c", 300)
}

// Messages published while the connection is down are lost on the wire and come back only after AckWait, behind
// later ones that moved the position past them: the source would drop them as redeliveries. After a reconnect it
// fails instead, so the job restarts from its last completed checkpoint (whose restore resets the consumer).
func TestSourceFailsAfterReconnect(t *testing.T) {
	srv := natstest.StartWithStream(t, jetstream.StreamConfig{Name: "IN", Subjects: []string{"in.>"}})
	js := srv.JetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	publishIDs(t, ctx, js, 0, 10)
	d := openDirect(t, sourceConfig(t, srv.URL(), "c", nil), nil)
	defer d.close()
	d.readUntil(ctx, 10)
	if err := srv.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	for {
		_, err := d.src.Produce(ctx)
		if err != nil {
			if !strings.Contains(err.Error(), "lost and re-established") {
				t.Fatalf("after a reconnect: %v", err)
			}
			return
		}
		select {
		case <-ctx.Done():
			t.Fatal("the source went on after a reconnect")
		case <-time.After(20 * time.Millisecond):
		}
	}
}
