package kafka

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/clinksql/clinksql/catalog"
	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/exec/operators"
	"github.com/clinksql/clinksql/exec/textform"
	"github.com/clinksql/clinksql/internal/testcert"
	"github.com/clinksql/clinksql/sqlerr"
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
func config(t testing.TB, c *kafkatest.Cluster, cols []Column, pk []string, opts map[string]string) SourceConfig {
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
		// Per partition, the restored source's rows are those after the snapshot, in order. (Across partitions
		// the order is the fetches' timing, in both runs.)
		restored, rest := rowsByPartition(h2.rows), rowsByPartition(after)
		if len(h2.rows) != len(after) || len(restored) != len(rest) {
			t.Fatalf("subtask %d: the restored source produced %d rows of %d partitions, the first run %d of %d after the snapshot",
				sub, len(h2.rows), len(restored), len(after), len(rest))
		}
		for p, rows := range rest {
			if !slices.Equal(restored[p], rows) {
				t.Fatalf("subtask %d, partition %d: the restored source produced %d rows, the first run %d after the snapshot; first difference:\n%s",
					sub, p, len(restored[p]), len(rows), firstDiff(restored[p], rows))
			}
		}
		// Every row of the subtask's partitions, once, in partition order; nothing aborted.
		got := map[int32][]int{}
		for p, rows := range rowsByPartition(all) {
			for _, r := range rows {
				var id int
				fmt.Sscanf(r, "+I %d", &id)
				got[p] = append(got[p], id)
			}
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

// rowsByPartition splits the rows of meta columns p and o ("+I id v p o") by partition, keeping their order.
func rowsByPartition(rows []string) map[int32][]string {
	by := map[int32][]string{}
	for _, r := range rows {
		var id, p, o int
		var v string
		fmt.Sscanf(r, "+I %d %s %d %d", &id, &v, &p, &o)
		by[int32(p)] = append(by[int32(p)], r)
	}
	return by
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
	// Exact per partition (ids alternate between the two): how the partitions interleave depends on fetch timing.
	if got, want := byParity(t, h2.rows), byParity(t, rest); !slices.Equal(got[0], want[0]) || !slices.Equal(got[1], want[1]) {
		t.Fatalf("restored bounded source: %q, want %q", h2.rows, rest)
	}
}

// byParity splits rows "+I <id>" by the parity of their id (the partition the test produced them into), keeping
// their order.
func byParity(t *testing.T, rows []string) [2][]string {
	t.Helper()
	var out [2][]string
	for _, r := range rows {
		var id int
		if _, err := fmt.Sscanf(r, "+I %d", &id); err != nil {
			t.Fatalf("row %q: %v", r, err)
		}
		out[id%2] = append(out[id%2], r)
	}
	return out
}

// Partitions that appear while the source runs are found at the next discovery and read from their start (the
// records produced into them before the discovery included).
func TestSourceDiscoversNewPartitions(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Options{Topics: map[string]int32{"grow": 1}})
	c.Produce(t, rec("grow", 0, "", `{"id": 1}`))
	cfg := config(t, c, []Column{col("id", bigint), meta("p", "partition", integer)}, nil, map[string]string{
		"topic": "grow", "format": "json", "scan.startup.mode": "earliest-offset",
		"scan.topic-partition-discovery.interval": "10 ms"})
	h := start(t, cfg, 0, 1, nil, nil)
	h.until("the first partition's row", func() bool { return len(h.rows) == 1 })
	c.AddPartitions(t, "grow", 2)
	c.Produce(t, rec("grow", 1, "", `{"id": 2}`), rec("grow", 2, "", `{"id": 3}`))
	h.until("the new partitions' rows", func() bool { return len(h.rows) == 3 })
	got := slices.Clone(h.rows)
	slices.Sort(got)
	if want := []string{"+I 1 0", "+I 2 1", "+I 3 2"}; !slices.Equal(got, want) {
		t.Fatalf("rows %q, want %q", got, want)
	}
}

// The subtask's watermark is the minimum over its partitions: an empty partition holds it back until it has been
// idle for scan.watermark.idle-timeout, after which the partition with rows alone sets it.
func TestSourceIdlePartitionStopsHoldingTheWatermark(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Options{Topics: map[string]int32{"w": 2}})
	for i := range 5 {
		c.Produce(t, rec("w", 0, "", fmt.Sprintf(`{"id": %d, "ts": "2026-01-01 00:00:0%d"}`, i, i)))
	}
	cols := []Column{col("id", bigint), col("ts", ts)}
	wmFunc := func(_ *exec.TaskContext, r arrow.RecordBatch) (int64, bool, error) {
		v, ok := operators.MaxTimestamp(r.Column(1))
		return v, ok, nil
	}
	opts := map[string]string{"topic": "w", "format": "json", "scan.startup.mode": "earliest-offset"}
	noIdle := config(t, c, cols, nil, opts)
	noIdle.Watermark = wmFunc
	h := start(t, noIdle, 0, 1, nil, nil)
	h.until("the rows", func() bool { return len(h.rows) == 5 })
	if h.wm != exec.MinWatermark {
		t.Fatalf("without an idle timeout the empty partition holds the watermark back; it is %d", h.wm)
	}
	h.close()

	opts["scan.watermark.idle-timeout"] = "20 ms"
	idle := config(t, c, cols, nil, opts)
	idle.Watermark = wmFunc
	h2 := start(t, idle, 0, 1, nil, nil)
	want := time.Date(2026, 1, 1, 0, 0, 4, 0, time.UTC).UnixMicro()
	h2.until("the watermark of partition 0", func() bool { return h2.wm == want })
}

// Formats: csv and raw values, a json key with EXCEPT_KEY, and the metadata columns; records that cannot be read
// are skipped and counted (skip), or fail the source naming where they are (fail).
func TestSourceFormatsAndBadRows(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Options{Topics: map[string]int32{"csv": 1, "raw": 1, "keyed": 1}})
	c.Produce(t, rec("csv", 0, "", "1,a\n"), rec("csv", 0, "", `2,"b,c"`), rec("csv", 0, "", "3"),
		rec("csv", 0, "", "x,d"), rec("csv", 0, "", "5,"))
	c.Produce(t, rec("raw", 0, "", "hello"), rec("raw", 0, "", "\xff"), rec("raw", 0, "", "x\x00"))
	hdr := rec("keyed", 0, `{"k": 7}`, `{"v": "seven", "k": 99}`)
	hdr.Headers = []kgo.RecordHeader{{Key: "trace", Value: []byte("t-1")}, {Key: "bin", Value: []byte{0xff}}}
	hdr.Timestamp = time.UnixMilli(1767225600123)
	c.Produce(t, hdr, rec("keyed", 0, `{"k": "x"}`, `{"v": "bad key"}`), rec("keyed", 0, "", `{"v": "null key"}`))

	run := func(cfg SourceConfig) (*harness, error) {
		h := start(t, cfg, 0, 1, nil, nil)
		var err error
		for h.status != exec.Finished && err == nil {
			err = h.step()
		}
		return h, err
	}
	bounded := map[string]string{"scan.startup.mode": "earliest-offset", "scan.bounded.mode": "latest-offset"}
	with := func(extra map[string]string) map[string]string {
		m := maps.Clone(bounded)
		maps.Copy(m, extra)
		return m
	}

	// csv: a record with too few fields and one whose id is not a number are skipped and counted.
	h, err := run(config(t, c, []Column{col("id", bigint), col("s", varchar)}, nil, with(map[string]string{"topic": "csv", "format": "csv"})))
	if err != nil || !slices.Equal(h.rows, []string{"+I 1 a", "+I 2 b,c", "+I 5 NULL"}) || h.tc.Errors.Load() != 2 {
		t.Fatalf("csv: %v, rows %q, %d bad", err, h.rows, h.tc.Errors.Load())
	}
	_, err = run(config(t, c, []Column{col("id", bigint), col("s", varchar)}, nil, with(map[string]string{"topic": "csv", "format": "csv", "csv.ignore-parse-errors": "false"})))
	if e := sqlerr.As(err); e == nil || e.Code != "22P04" || !strings.Contains(e.Msg, "topic csv partition 0 offset 2") {
		t.Fatalf("csv, fail: %v", err)
	}

	// raw: the bytes as VARCHAR (not UTF-8: bad) or as BYTEA.
	h, err = run(config(t, c, []Column{col("s", varchar)}, nil, with(map[string]string{"topic": "raw", "format": "raw"})))
	if err != nil || !slices.Equal(h.rows, []string{"+I hello", "+I x\x00"}) || h.tc.Errors.Load() != 1 {
		t.Fatalf("raw varchar: %v, rows %q, %d bad", err, h.rows, h.tc.Errors.Load())
	}
	h, err = run(config(t, c, []Column{col("b", arrow.BinaryTypes.Binary)}, nil, with(map[string]string{"topic": "raw", "format": "raw"})))
	if err != nil || !slices.Equal(h.rows, []string{`+I \x68656c6c6f`, `+I \xff`, `+I \x7800`}) {
		t.Fatalf("raw bytea: %v, rows %q", err, h.rows)
	}

	// A json key and value (the value's k is not read: EXCEPT_KEY), and the metadata.
	cols := []Column{col("k", bigint), col("v", varchar), meta("t", "topic", varchar), meta("o", "offset", bigint),
		meta("ts", "timestamp", ts), meta("h", "headers", varchar), meta("tt", "timestamp-type", varchar)}
	h, err = run(config(t, c, cols, nil, with(map[string]string{"topic": "keyed", "value.format": "json",
		"key.format": "json", "key.fields": "k", "value.fields-include": "EXCEPT_KEY"})))
	want := []string{
		"+I 7 seven keyed 0 2026-01-01 00:00:00.123 {\"trace\":\"t-1\",\"bin\":\"\ufffd\"} CreateTime",
		`+I NULL null key keyed 2 ` + h.rows[len(h.rows)-1][len("+I NULL null key keyed 2 "):],
	}
	if err != nil || len(h.rows) != 2 || h.rows[0] != want[0] || !strings.HasPrefix(h.rows[1], "+I NULL null key keyed 2 ") || h.tc.Errors.Load() != 1 {
		t.Fatalf("keyed: %v, rows %q (want %q), %d bad", err, h.rows, want, h.tc.Errors.Load())
	}
}

// debezium-json is a changelog: c and r insert, u retracts the before image and inserts the after, d retracts;
// a tombstone has no row, an event without its before image is bad.
func TestSourceDebeziumChangelog(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Options{Topics: map[string]int32{"cdc": 1}})
	c.Produce(t,
		rec("cdc", 0, "", `{"before": null, "after": {"id": 1, "name": "a"}, "op": "c"}`),
		rec("cdc", 0, "", `{"before": null, "after": {"id": 2, "name": "b"}, "op": "r"}`),
		rec("cdc", 0, "", `{"before": {"id": 1, "name": "a"}, "after": {"id": 1, "name": "aa"}, "op": "u"}`),
		rec("cdc", 0, "", `{"before": null, "after": {"id": 2, "name": "bb"}, "op": "u"}`),
		rec("cdc", 0, "", `{"before": {"id": 2, "name": "b"}, "after": null, "op": "d"}`),
		rec("cdc", 0, "", "\x00"),
		rec("cdc", 0, "", `{"before": {"id": "x"}, "after": {"id": 3}, "op": "u"}`),
	)
	cfg := config(t, c, []Column{col("id", bigint), col("name", varchar)}, nil, map[string]string{"topic": "cdc",
		"format": "debezium-json", "scan.startup.mode": "earliest-offset", "scan.bounded.mode": "latest-offset"})
	h := start(t, cfg, 0, 1, nil, nil)
	h.finish()
	want := []string{"+I 1 a", "+I 2 b", "-U 1 a", "+U 1 aa", "-D 2 b"}
	if !slices.Equal(h.rows, want) || h.tc.Errors.Load() != 2 {
		t.Fatalf("rows %q, want %q; %d bad, want 2 (an update without its before image, one with a bad before)", h.rows, want, h.tc.Errors.Load())
	}
}

// upsert-kafka: the key's last record is in the subtask's state, captured with the offset: a source restored
// from a snapshot and its state retracts exactly the rows the first source had produced before it.
func TestSourceUpsertChangelogRestores(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Options{Topics: map[string]int32{"u": 1}})
	put := func(k int, v string) *kgo.Record {
		if v == "" {
			return rec("u", 0, fmt.Sprintf(`{"k": %d}`, k), "\x00")
		}
		return rec("u", 0, fmt.Sprintf(`{"k": %d}`, k), fmt.Sprintf(`{"k": %d, "v": "%s"}`, k, v))
	}
	c.Produce(t, put(1, "a"), put(2, "b"), put(1, "c"), put(3, ""), put(2, ""), put(1, "d"))
	o := map[string]string{"connector": "upsert-kafka", "properties.bootstrap.servers": c.Bootstrap(), "topic": "u",
		"key.format": "json", "value.format": "json"}
	cfg, err := SourceConfigFromOptions([]Column{col("k", bigint), col("v", varchar)}, []string{"k"}, o, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg.BatchRows = 2
	dir := t.TempDir()
	st, err := state.OpenMemory(state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	h := start(t, cfg, 0, 1, nil, st)
	h.until("the first two keys", func() bool { return len(h.rows) >= 2 })
	off, before := h.snapshot(), len(h.rows)
	snap, err := st.Capture(1)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "snap")
	if err := snap.Persist(path); err != nil {
		t.Fatal(err)
	}
	want := []string{"+I 1 a", "+I 2 b", "-U 1 a", "+U 1 c", "-D 2 b", "-U 1 c", "+U 1 d"}
	h.until("every change", func() bool { return len(h.rows) == len(want) })
	if !slices.Equal(h.rows, want) {
		t.Fatalf("changelog %q, want %q", h.rows, want)
	}
	h.close()
	st.Close()

	st2, err := state.OpenMemory(state.Options{RestorePath: path})
	if err != nil {
		t.Fatal(err)
	}
	defer st2.Close()
	h2 := start(t, cfg, 0, 1, off, st2)
	h2.until("the rest", func() bool { return len(h2.rows) == len(want)-before })
	if !slices.Equal(h2.rows, want[before:]) {
		t.Fatalf("restored changelog %q, want %q", h2.rows, want[before:])
	}
}

// SASL: the source logs in with the user and password of Flink's JAAS line (SCRAM-SHA-512 here).
func TestSourceSASL(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Options{Topics: map[string]int32{"s": 1},
		Users: []kafkatest.User{{Mechanism: "SCRAM-SHA-512", Name: "reader", Password: `p"w\d`}}})
	c.Produce(t, rec("s", 0, "", `{"id": 1}`))
	cfg := config(t, c, []Column{col("id", bigint)}, nil, map[string]string{"topic": "s", "format": "json",
		"scan.startup.mode": "earliest-offset", "scan.bounded.mode": "latest-offset",
		"properties.security.protocol": "SASL_PLAINTEXT", "properties.sasl.mechanism": "SCRAM-SHA-512",
		"properties.sasl.jaas.config": `org.apache.kafka.common.security.scram.ScramLoginModule required username="reader" password="p\"w\\d";`})
	h := start(t, cfg, 0, 1, nil, nil)
	h.finish()
	if !slices.Equal(h.rows, []string{"+I 1"}) {
		t.Fatalf("rows %q", h.rows)
	}
}

// The group's offsets are committed after a checkpoint completes (only then), for monitoring; a fresh start in
// group-offsets mode begins there.
func TestSourceCommitsGroupOffsetsAfterCheckpoint(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Options{Topics: map[string]int32{"g": 1}})
	for i := range 4 {
		c.Produce(t, rec("g", 0, "", fmt.Sprintf(`{"id": %d}`, i)))
	}
	opts := map[string]string{"topic": "g", "format": "json", "properties.group.id": "watchers",
		"scan.startup.mode": "earliest-offset"}
	cfg := config(t, c, []Column{col("id", bigint)}, nil, opts)
	cfg.BatchRows = 2
	h := start(t, cfg, 0, 1, nil, nil)
	h.until("two rows", func() bool { return len(h.rows) == 2 })
	h.snapshot() // checkpoint 1, at offset 2
	h.until("four rows", func() bool { return len(h.rows) == 4 })
	h.snapshot() // checkpoint 2, at offset 4
	committed := func() int64 {
		cx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		os, err := c.Admin(t).FetchOffsets(cx, "watchers")
		if errors.Is(err, kerr.GroupIDNotFound) {
			return -1
		}
		if err != nil {
			t.Fatal(err)
		}
		o, ok := os.Lookup("g", 0)
		if !ok {
			return -1
		}
		return o.At
	}
	if got := committed(); got != -1 {
		t.Fatalf("committed %d before any checkpoint completed", got)
	}
	h.src.(exec.CheckpointListener).NotifyCheckpointAborted(1)
	h.src.(exec.CheckpointListener).NotifyCheckpointComplete(2)
	h.close() // waits for the commit
	if got := committed(); got != 4 {
		t.Fatalf("committed %d after checkpoint 2, want 4", got)
	}
	c.Produce(t, rec("g", 0, "", `{"id": 4}`))
	opts["scan.startup.mode"] = "group-offsets"
	h2 := start(t, config(t, c, []Column{col("id", bigint)}, nil, opts), 0, 1, nil, nil)
	h2.until("the row after the group's offset", func() bool { return len(h2.rows) == 1 })
	if h2.rows[0] != "+I 4" {
		t.Fatalf("group-offsets start read %q first", h2.rows[0])
	}
}

// TLS with a PEM truststore, and SASL PLAIN over it (SASL_SSL).
func TestSourceTLSAndPlain(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, _ := testcert.Files(t, dir)
	c := kafkatest.Start(t, kafkatest.Options{Topics: map[string]int32{"sec": 1}, TLSCert: certFile, TLSKey: keyFile,
		Users: []kafkatest.User{{Mechanism: "PLAIN", Name: "app", Password: "secret"}}})
	c.Produce(t, rec("sec", 0, "", `{"id": 1}`))
	opts := map[string]string{"topic": "sec", "format": "json",
		"scan.startup.mode": "earliest-offset", "scan.bounded.mode": "latest-offset",
		"properties.security.protocol": "SASL_SSL", "properties.sasl.mechanism": "PLAIN",
		"properties.sasl.jaas.config":        `org.apache.kafka.common.security.plain.PlainLoginModule required username="app" password="secret";`,
		"properties.ssl.truststore.location": certFile, "properties.ssl.truststore.type": "PEM"}
	h := start(t, config(t, c, []Column{col("id", bigint)}, nil, opts), 0, 1, nil, nil)
	h.finish()
	if !slices.Equal(h.rows, []string{"+I 1"}) {
		t.Fatalf("rows %q", h.rows)
	}
}

// Pins: the source's progress (exec.SourceProgress) not matching the records behind the ends of its partitions:
// known from Open (a listing), falling with every row read, following records produced later (fetch responses),
// counting a transaction's marker until it is read past; a bounded source's from its end offsets, also restored.
func TestSourceProgressIsTheLagBehindTheEnds(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Options{Topics: map[string]int32{"p": 2}})
	for i := range 30 {
		c.Produce(t, rec("p", int32(i%2), "", fmt.Sprintf(`{"id": %d}`, i)))
	}
	lag := func(h *harness) int64 {
		l, bytes, total := h.src.(exec.SourceProgress).Progress()
		if bytes != -1 || total != -1 {
			t.Fatalf("progress: %d bytes, %d total; Kafka knows neither", bytes, total)
		}
		return l
	}
	unbounded := config(t, c, []Column{col("id", bigint)}, nil, map[string]string{"topic": "p", "format": "json",
		"scan.startup.mode": "earliest-offset"})
	unbounded.BatchRows = 4
	h := start(t, unbounded, 0, 1, nil, nil)
	if l := lag(h); l != 30 {
		t.Fatalf("at open: %d records behind, want 30", l)
	}
	for len(h.rows) < 30 {
		h.until("a batch", func() bool { return h.status == exec.Produced })
		if l := lag(h); l != int64(30-len(h.rows)) {
			t.Fatalf("after %d rows: %d records behind, want %d", len(h.rows), l, 30-len(h.rows))
		}
		h.status = exec.Idle
	}
	// 10 records in a transaction (its commit marker is one more offset), then the source reads them.
	var txn []*kgo.Record
	for i := 30; i < 40; i++ {
		txn = append(txn, rec("p", 0, "", fmt.Sprintf(`{"id": %d}`, i)))
	}
	c.ProduceTxn(t, "progress", true, txn...)
	// The fetch response that brings the transaction's records brings its end too (its last stable offset): until
	// the last record was read, the records left and the marker are behind.
	for len(h.rows) < 40 {
		h.until("a batch of the transaction", func() bool { return h.status == exec.Produced })
		if l := lag(h); len(h.rows) < 40 && l != int64(41-len(h.rows)) {
			t.Fatalf("after %d rows: %d records behind, want %d (with the marker)", len(h.rows), l, 41-len(h.rows))
		}
		h.status = exec.Idle
	}
	h.until("the transaction read past its marker", func() bool { return len(h.rows) == 40 && lag(h) == 0 })

	bounded := unbounded
	bounded.Bounded = Position{Mode: ModeLatest}
	hb := start(t, bounded, 0, 1, nil, nil)
	if l := lag(hb); l != 41 {
		t.Fatalf("bounded at open: %d records behind, want 41 (40 records and a marker)", l)
	}
	hb.until("8 rows", func() bool { return len(hb.rows) >= 8 })
	off, read := hb.snapshot(), len(hb.rows)
	hb.finish()
	if l := lag(hb); l != 0 {
		t.Fatalf("bounded at its end: %d records behind", l)
	}
	hr := start(t, bounded, 0, 1, off, nil)
	if l := lag(hr); l != int64(41-read) {
		t.Fatalf("restored after %d rows: %d records behind, want %d", read, l, 41-read)
	}
}
