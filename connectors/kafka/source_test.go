package kafka

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/clinksql/clinksql/catalog"
	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/exec/textform"
	"github.com/clinksql/clinksql/state"
	"github.com/clinksql/clinksql/tests/kafkatest"
)

func TestMain(m *testing.M) { kafkatest.Main(m) }

// col is a column of the data; meta one of the metadata.
func col(name string, t arrow.DataType) Column {
	return Column{Field: arrow.Field{Name: name, Type: t, Nullable: true}}
}

func meta(name, key string, t arrow.DataType) Column {
	c := col(name, t)
	c.MetadataKey = key
	return c
}

var (
	bigint  = arrow.PrimitiveTypes.Int64
	integer = arrow.PrimitiveTypes.Int32
	varchar = arrow.BinaryTypes.String
	ts      = catalog.TimestampType
)

// config reads options (plus the cluster's bootstrap servers) for columns, failing the test on a refusal.
func config(t *testing.T, c *kafkatest.Cluster, cols []Column, pk []string, opts map[string]string) SourceConfig {
	t.Helper()
	o := map[string]string{"connector": "kafka", "properties.bootstrap.servers": c.Bootstrap()}
	for k, v := range opts {
		o[k] = v
	}
	cfg, err := SourceConfigFromOptions(cols, pk, o, nil)
	if err != nil {
		t.Fatalf("options %v: %v", o, err)
	}
	return cfg
}

// harness drives one source subtask as the runtime does: RestoreOffset, Open, Produce until a condition.
type harness struct {
	t      *testing.T
	src    exec.Source
	tc     *exec.TaskContext
	mem    *memory.CheckedAllocator
	rows   []string // "+I a b ..." per row produced, in order
	wm     int64
	status exec.SourceStatus
}

func start(t *testing.T, cfg SourceConfig, sub, par int, offset []byte, st state.Backend) *harness {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	h := &harness{t: t, mem: mem, wm: exec.MinWatermark,
		tc: &exec.TaskContext{Subtask: sub, Parallelism: par, Alloc: mem, Errors: &exec.Counter{}, State: st}}
	h.src = NewSource(cfg)(sub)
	if offset != nil {
		if err := h.src.RestoreOffset(offset); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.src.Open(h.tc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		h.close()
		mem.AssertSize(t, 0)
	})
	return h
}

func (h *harness) close() {
	if h.src != nil {
		if err := h.src.Close(); err != nil {
			h.t.Error(err)
		}
		h.src = nil
	}
}

// step runs one Produce and records its rows and watermark.
func (h *harness) step() error {
	res, err := h.src.Produce(context.Background())
	if err != nil {
		return err
	}
	h.status = res.Status
	if res.Status == exec.Produced {
		h.rows = append(h.rows, render(h.t, res.Batch)...)
		res.Batch.Release()
	}
	if res.Status != exec.Finished && res.WM > h.wm {
		h.wm = res.WM
	}
	return nil
}

// until steps until cond holds (or the source finished), waiting for buffered records while idle.
func (h *harness) until(what string, cond func() bool) {
	h.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if err := h.step(); err != nil {
			h.t.Fatalf("%s: %v", what, err)
		}
		switch h.status {
		case exec.Finished:
			if !cond() {
				h.t.Fatalf("%s: the source finished first (rows %q)", what, h.rows)
			}
			return
		case exec.Idle:
			select {
			case <-h.src.(exec.IdleWaiter).IdleWait():
			case <-time.After(5 * time.Millisecond): // discovery and idleness are checked at each Produce
			}
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("%s: not reached in 60 s (rows %q, watermark %d)", what, h.rows, h.wm)
		}
	}
}

func (h *harness) finish() { h.until("finish", func() bool { return h.status == exec.Finished }) }

func (h *harness) snapshot() []byte {
	b, err := h.src.SnapshotOffset()
	if err != nil {
		h.t.Fatal(err)
	}
	return b
}

func render(t *testing.T, b exec.Batch) []string {
	rows, err := textform.Rows(b.Rec)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(rows))
	for i, r := range rows {
		parts := []string{b.Kind(i).String()}
		for _, v := range r {
			if v == nil {
				parts = append(parts, "NULL")
			} else {
				parts = append(parts, *v)
			}
		}
		out[i] = strings.Join(parts, " ")
	}
	return out
}

func rec(topic string, part int32, key, value string) *kgo.Record {
	r := &kgo.Record{Topic: topic, Partition: part}
	if key != "" {
		r.Key = []byte(key)
	}
	if value != "\x00" {
		r.Value = []byte(value)
	}
	return r
}

// produceMixed writes n JSON rows {"id": i, "v": "..."} over parts partitions of topic (seeded), some in
// committed transactions and one aborted transaction in between, and returns the ids expected per partition.
func produceMixed(t *testing.T, c *kafkatest.Cluster, topic string, parts int32, n int, seed uint64) map[int32][]int {
	rng := rand.New(rand.NewPCG(seed, 1))
	want := map[int32][]int{}
	var batch []*kgo.Record
	flush := func(txn int) {
		switch txn % 3 {
		case 0:
			c.Produce(t, batch...)
		default:
			c.ProduceTxn(t, "mixed", true, batch...)
		}
		batch = batch[:0]
	}
	for i := range n {
		p := int32(rng.IntN(int(parts)))
		batch = append(batch, rec(topic, p, "", fmt.Sprintf(`{"id": %d, "v": "r%d"}`, i, i)))
		want[p] = append(want[p], i)
		if len(batch) == 25 {
			flush(i / 25)
			c.ProduceTxn(t, "aborted", false, rec(topic, p, "", `{"id": -1, "v": "aborted"}`))
		}
	}
	if len(batch) > 0 {
		flush(0)
	}
	return want
}

// The offset is exact: a source restored from a snapshot taken after some rows reproduces exactly the rows the
// first source produced after that snapshot (read_committed: the aborted transactions are never read), at the
// same parallelism, per subtask.
func TestSourceRestoreIsExact(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Options{Topics: map[string]int32{"events": 4}})
	want := produceMixed(t, c, "events", 4, 400, 7)
	cols := []Column{col("id", bigint), col("v", varchar), meta("p", "partition", integer), meta("o", "offset", bigint)}
	cfg := config(t, c, cols, nil, map[string]string{"topic": "events", "format": "json",
		"scan.startup.mode": "earliest-offset", "scan.bounded.mode": "latest-offset"})
	cfg.BatchRows = 7
	const par = 2
	total := 0
	for sub := range par {
		h := start(t, cfg, sub, par, nil, nil)
		h.until("some rows", func() bool { return len(h.rows) >= 60 })
		off := h.snapshot()
		before := len(h.rows)
		h.finish()
		after := h.rows[before:]
		all := h.rows
		h.close()

		h2 := start(t, cfg, sub, par, off, nil)
		h2.finish()
		if !slices.Equal(h2.rows, after) {
			t.Fatalf("subtask %d: the restored source produced %d rows, the first %d after the snapshot; first difference:\n%s",
				sub, len(h2.rows), len(after), firstDiff(h2.rows, after))
		}
		// Every row of the subtask's partitions, once, in partition order; nothing aborted.
		got := map[int32][]int{}
		for _, r := range all {
			var id, p, o int
			var v string
			fmt.Sscanf(r, "+I %d %s %d %d", &id, &v, &p, &o)
			got[int32(p)] = append(got[int32(p)], id)
		}
		for p, ids := range got {
			if owner("events", p, par) != sub {
				t.Fatalf("subtask %d read partition %d, owned by %d", sub, p, owner("events", p, par))
			}
			if !slices.Equal(ids, want[p]) {
				t.Fatalf("partition %d: ids %v, want %v", p, ids, want[p])
			}
		}
		total += len(all)
	}
	if total != 400 {
		t.Fatalf("%d rows over both subtasks, want 400", total)
	}
}

func firstDiff(a, b []string) string {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return fmt.Sprintf("row %d: %q vs %q", i, a[i], b[i])
		}
	}
	return fmt.Sprintf("lengths %d vs %d", len(a), len(b))
}

// A bounded source ends at the offsets captured when it started: records produced later are not read, and a
// restore ends at the same offsets (they are in the offset).
func TestSourceBoundedEndsAtStartOffsets(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Options{Topics: map[string]int32{"b": 2}})
	for i := range 30 {
		c.Produce(t, rec("b", int32(i%2), "", fmt.Sprintf(`{"id": %d}`, i)))
	}
	cfg := config(t, c, []Column{col("id", bigint)}, nil, map[string]string{"topic": "b", "format": "json",
		"scan.startup.mode": "earliest-offset", "scan.bounded.mode": "latest-offset"})
	cfg.BatchRows = 4
	h := start(t, cfg, 0, 1, nil, nil)
	h.until("some rows", func() bool { return len(h.rows) >= 8 })
	off, before := h.snapshot(), len(h.rows)
	c.Produce(t, rec("b", 0, "", `{"id": 100}`), rec("b", 1, "", `{"id": 101}`))
	h.finish()
	if len(h.rows) != 30 {
		t.Fatalf("bounded source produced %d rows, want the 30 present at its start", len(h.rows))
	}
	rest := h.rows[before:]
	h.close()
	h2 := start(t, cfg, 0, 1, off, nil)
	h2.finish()
	if !slices.Equal(h2.rows, rest) {
		t.Fatalf("restored bounded source: %q, want %q", h2.rows, rest)
	}
}
