package nats_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	natsconn "github.com/clinksql/clinksql/connectors/nats"
	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/sqlerr"
	"github.com/clinksql/clinksql/tests/natstest"
)

// readAll opens a source over the stream IN and produces until it has n rows (or fails).
func readRows(t *testing.T, ctx context.Context, cfg natsconn.SourceConfig, n int, errs *exec.Counter, check func(arrow.RecordBatch)) error {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	src := natsconn.NewSource(cfg)(0)
	if err := src.Open(&exec.TaskContext{Job: "j", Parallelism: 1, Alloc: mem, Errors: errs}); err != nil {
		t.Fatal(err)
	}
	defer func() {
		src.Close()
		mem.AssertSize(t, 0)
	}()
	for {
		res, err := src.Produce(ctx)
		if err != nil {
			return err
		}
		if res.Status == exec.Produced {
			if int(res.Batch.Rows()) != n {
				res.Batch.Release()
				t.Fatalf("a batch of %d rows, want %d", res.Batch.Rows(), n)
			}
			defer res.Batch.Release()
			check(res.Batch.Rec)
			return nil
		}
		select {
		case <-src.(exec.IdleWaiter).IdleWait():
		case <-time.After(50 * time.Millisecond):
		case <-ctx.Done():
			t.Fatal("no rows")
		}
	}
}

// Metadata columns carry the subject, the stream sequence, the stored time and the headers (a JSON object); csv
// and raw payloads decode; a message that cannot be read is skipped and counted, or fails the job with its
// SQLSTATE and stream sequence.
func TestSourceFormatsAndMetadata(t *testing.T) {
	srv := natstest.StartT(t, natstest.Options{})
	srv.CreateStream(t, jetstream.StreamConfig{Name: "IN", Subjects: []string{"in.>"}})
	js := srv.JetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	before := time.Now().Add(-time.Second)
	for _, m := range []*natsgo.Msg{
		{Subject: "in.a", Data: []byte(`1,x`), Header: natsgo.Header{"H": []string{"v1", "v2"}}},
		{Subject: "in.b", Data: []byte(`2,"y,z"`)},
		{Subject: "in.c", Data: []byte(`oops,1`)},
	} {
		if _, err := js.PublishMsg(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	str := arrow.BinaryTypes.String
	cols := []natsconn.Column{
		{Field: arrow.Field{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true}},
		{Field: arrow.Field{Name: "s", Type: str, Nullable: true}},
		{Field: arrow.Field{Name: "subj", Type: str, Nullable: true}, MetadataKey: "subject"},
		{Field: arrow.Field{Name: "seq", Type: arrow.PrimitiveTypes.Int64, Nullable: true}, MetadataKey: "stream-sequence"},
		{Field: arrow.Field{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond}, Nullable: true}, MetadataKey: "timestamp"},
		{Field: arrow.Field{Name: "h", Type: str, Nullable: true}, MetadataKey: "headers"},
	}
	cfg, err := natsconn.SourceConfigFromOptions(cols, map[string]string{"nats.url": srv.URL(), "nats.stream": "IN", "format": "csv"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	errs := &exec.Counter{}
	if err := readRows(t, ctx, cfg, 2, errs, func(r arrow.RecordBatch) { checkMeta(t, r, before) }); err != nil {
		t.Fatal(err)
	}
	if got := errs.Load(); got != 1 {
		t.Fatalf("errors counted %d, want 1 (the message 'oops,1')", got)
	}

	// fail: the job fails with the value's SQLSTATE and the message's stream sequence.
	cfg.BadRows = "fail"
	err = readRows(t, ctx, cfg, 2, errs, func(arrow.RecordBatch) {})
	if err == nil || sqlerr.Code(err) != "22P02" || !strings.Contains(err.Error(), "stream IN sequence 3") {
		t.Fatalf("fail mode: %v (%s)", err, sqlerr.Code(err))
	}

	// raw: the payload as the one VARCHAR column.
	rawCfg, err := natsconn.SourceConfigFromOptions(cols[1:2], map[string]string{"nats.url": srv.URL(), "nats.stream": "IN", "format": "raw"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := readRows(t, ctx, rawCfg, 3, errs, func(raw arrow.RecordBatch) {
		if v := raw.Column(0).(*array.String).Value(1); v != `2,"y,z"` {
			t.Errorf("raw %q", v)
		}
	}); err != nil {
		t.Fatal(err)
	}
}

func checkMeta(t *testing.T, rec arrow.RecordBatch, before time.Time) {
	ids, ss := rec.Column(0).(*array.Int64), rec.Column(1).(*array.String)
	subj, seq := rec.Column(2).(*array.String), rec.Column(3).(*array.Int64)
	ts, hs := rec.Column(4).(*array.Timestamp), rec.Column(5).(*array.String)
	if ids.Value(1) != 2 || ss.Value(1) != "y,z" || subj.Value(0) != "in.a" || subj.Value(1) != "in.b" || seq.Value(1) != 2 {
		t.Fatalf("rows %v", rec)
	}
	if hs.Value(0) != `{"H":"v2"}` || hs.Value(1) != `{}` {
		t.Fatalf("headers %q %q", hs.Value(0), hs.Value(1))
	}
	if at := time.UnixMicro(int64(ts.Value(0))); at.Before(before) || at.After(time.Now()) {
		t.Fatalf("timestamp %v", at)
	}
}
