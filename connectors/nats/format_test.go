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

// readRows opens a source over the stream IN and produces until it has n rows (or fails); rows are returned as
// Go values (int64 for integers and timestamps, string for text).
func readRows(t *testing.T, ctx context.Context, cfg natsconn.SourceConfig, n int, errs *exec.Counter) ([][]any, error) {
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
	var rows [][]any
	for len(rows) < n {
		res, err := src.Produce(ctx)
		if err != nil {
			return nil, err
		}
		if res.Status == exec.Produced {
			rec := res.Batch.Rec
			for i := range int(rec.NumRows()) {
				row := make([]any, rec.NumCols())
				for c := range row {
					switch a := rec.Column(c).(type) {
					case *array.Int64:
						row[c] = a.Value(i)
					case *array.Timestamp:
						row[c] = int64(a.Value(i))
					case *array.String:
						row[c] = a.Value(i)
					}
				}
				rows = append(rows, row)
			}
			res.Batch.Release()
			continue
		}
		select {
		case <-src.(exec.IdleWaiter).IdleWait():
		case <-time.After(50 * time.Millisecond):
		case <-ctx.Done():
			t.Fatalf("read %d rows, want %d", len(rows), n)
		}
	}
	if len(rows) != n {
		t.Fatalf("read %d rows, want %d", len(rows), n)
	}
	return rows, nil
}

// Metadata columns carry the subject, the stream sequence, the stored time and the headers (a JSON object); csv
// and raw payloads decode; a message that cannot be read is skipped and counted, or fails the job with its
// SQLSTATE and stream sequence.
func TestSourceFormatsAndMetadata(t *testing.T) {
	srv := natstest.StartWithStream(t, jetstream.StreamConfig{Name: "IN", Subjects: []string{"in.>"}})
	js := srv.JetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	before := time.Now().Add(-time.Second)
	// The bad message first: reading stops at the second good row, so a bad one after it might not be fetched yet.
	for _, m := range []*natsgo.Msg{
		{Subject: "in.c", Data: []byte(`oops,1`)},
		{Subject: "in.a", Data: []byte(`1,x`), Header: natsgo.Header{"H": []string{"v1", "v2"}}},
		{Subject: "in.b", Data: []byte(`2,"y,z"`)},
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
	rows, err := readRows(t, ctx, cfg, 2, errs)
	if err != nil {
		t.Fatal(err)
	}
	if rows[1][0] != int64(2) || rows[1][1] != "y,z" || rows[0][2] != "in.a" || rows[1][2] != "in.b" || rows[1][3] != int64(3) {
		t.Fatalf("rows %v", rows)
	}
	if rows[0][5] != `{"H":"v2"}` || rows[1][5] != `{}` {
		t.Fatalf("headers %q %q", rows[0][5], rows[1][5])
	}
	if at := time.UnixMicro(rows[0][4].(int64)); at.Before(before) || at.After(time.Now()) {
		t.Fatalf("timestamp %v", at)
	}
	if got := errs.Load(); got != 1 {
		t.Fatalf("errors counted %d, want 1 (the message 'oops,1')", got)
	}

	// fail: the job fails with the value's SQLSTATE and the message's stream sequence.
	cfg.BadRows = "fail"
	_, err = readRows(t, ctx, cfg, 3, errs)
	if err == nil || sqlerr.Code(err) != "22P02" || !strings.Contains(err.Error(), "stream IN sequence 1") {
		t.Fatalf("fail mode: %v (%s)", err, sqlerr.Code(err))
	}

	// raw: the payload as the one VARCHAR column.
	rawCfg, err := natsconn.SourceConfigFromOptions(cols[1:2], map[string]string{"nats.url": srv.URL(), "nats.stream": "IN", "format": "raw"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := readRows(t, ctx, rawCfg, 3, errs)
	if err != nil {
		t.Fatal(err)
	}
	if raw[2][0] != `2,"y,z"` {
		t.Fatalf("raw %q", raw[1][0])
	}
}
