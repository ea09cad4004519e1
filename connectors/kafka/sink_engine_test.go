package kafka_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clinksql/clinksql/engine"
	"github.com/clinksql/clinksql/sqlerr"
	"github.com/clinksql/clinksql/tests/kafkatest"
)

// INSERT INTO an exactly-once Kafka sink from a datagen stream through the engine, two subtasks: once the job
// finished (its final checkpoint committed) and after a FLUSH of a second job, a read_committed consumer reads
// every row exactly once.
func TestEngineInsertIntoExactlyOnceKafkaSink(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Options{Topics: map[string]int32{"out": 4, "out2": 1}})
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	e, err := engine.Open(engine.Config{DataDir: t.TempDir(), Alloc: mem})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	defer func() {
		if err := e.Close(ctx); err != nil {
			t.Errorf("close: %v", err)
		}
		mem.AssertSize(t, 0)
	}()
	s := e.NewSession()
	run := func(sql string) {
		t.Helper()
		if _, err := s.Execute(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	run(`SET parallelism = 2`)
	run(`CREATE STREAM g (id BIGINT) WITH (connector = 'datagen', 'number-of-rows' = '20000',
		'fields.id.kind' = 'sequence', 'fields.id.start' = '1')`)
	run(fmt.Sprintf(`CREATE SINK k (id BIGINT) WITH (connector = 'kafka', topic = 'out',
		'properties.bootstrap.servers' = '%s', format = 'json', 'sink.delivery-guarantee' = 'exactly-once',
		'sink.transactional-id-prefix' = 'e2e')`, c.Bootstrap()))
	// A plain projection has no row time: the INSERT says what a fallback's restore would do.
	res, err := s.Execute(ctx, `INSERT INTO k SELECT id FROM g`)
	if err != nil {
		t.Fatal(err)
	}
	if n := res[len(res)-1].Notices; !slices.ContainsFunc(n, func(s string) bool { return strings.Contains(s, "replay suppression: the rows sink k receives") }) {
		t.Fatalf("notices %q: want the one about replay suppression", n)
	}
	if err := e.WaitBounded(ctx, nil); err != nil {
		t.Fatal(err)
	}
	expect := func(n int) {
		t.Helper()
		var ids []int
		for _, r := range c.ConsumeAll(t, "out") {
			v, ok := strings.CutPrefix(string(r.Value), `{"id":`)
			id, err := strconv.Atoi(strings.TrimSuffix(v, "}"))
			if !ok || err != nil {
				t.Fatalf("record %q", r.Value)
			}
			ids = append(ids, id)
		}
		slices.Sort(ids)
		distinct := len(slices.Compact(slices.Clone(ids)))
		if len(ids) != n || distinct != n || ids[0] != 1 || ids[n-1] != n {
			t.Fatalf("a read_committed consumer read %d rows (%d distinct), want 1..%d once each", len(ids), distinct, n)
		}
	}
	expect(20000)
	run(`INSERT INTO k VALUES (20001), (20002)`)
	run(`FLUSH`)
	expect(20002)
	// A transaction timeout close to what the checkpoint interval needs starts the job with a warning.
	run(fmt.Sprintf(`CREATE SINK k2 (id BIGINT) WITH (connector = 'kafka', topic = 'out2',
		'properties.bootstrap.servers' = '%s', format = 'json', 'sink.delivery-guarantee' = 'exactly-once',
		'sink.transactional-id-prefix' = 'e2e2', 'properties.transaction.timeout.ms' = '100000')`, c.Bootstrap()))
	res, err = s.Execute(ctx, `INSERT INTO k2 VALUES (1)`)
	if err != nil {
		t.Fatal(err)
	}
	if n := res[len(res)-1].Notices; !slices.ContainsFunc(n, func(s string) bool { return strings.Contains(s, "leaves little room") }) {
		t.Errorf("notices %q, want the transaction timeout's warning", n)
	}
	// An at-least-once sink (the default) says what the job guarantees.
	run(fmt.Sprintf(`CREATE SINK k3 (id BIGINT) WITH (connector = 'kafka', topic = 'out2',
		'properties.bootstrap.servers' = '%s', format = 'json')`, c.Bootstrap()))
	if res, err = s.Execute(ctx, `INSERT INTO k3 VALUES (2)`); err != nil {
		t.Fatal(err)
	}
	if n := res[len(res)-1].Notices; !slices.ContainsFunc(n, func(s string) bool { return strings.Contains(s, "at-least-once, not exactly-once: sink k3") }) {
		t.Errorf("notices %q, want the at-least-once guarantee", n)
	}
	run(`FLUSH`)
}

// CREATE SINK refuses what no Kafka sink could run with at the option at fault (22023), and a plain kafka sink
// refuses an updating query at planning (upsert-kafka takes it).
func TestEngineKafkaSinkRefusals(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	e, err := engine.Open(engine.Config{DataDir: t.TempDir(), Alloc: mem})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	defer func() {
		if err := e.Close(ctx); err != nil {
			t.Errorf("close: %v", err)
		}
		mem.AssertSize(t, 0)
	}()
	s := e.NewSession()
	base := `CREATE SINK %s (id BIGINT, n BIGINT) WITH (connector = 'kafka', topic = 'out', 'properties.bootstrap.servers' = '127.0.0.1:1', format = 'json'%s)`
	for _, tc := range []struct{ extra, at string }{
		{`, 'sink.delivery-guarantee' = 'exactly-once', 'sink.transactional-id-prefix' = 'p', 'properties.transaction.timeout.ms' = '900001'`, `'properties.transaction.timeout.ms'`},
		{`, 'sink.delivery-guarantee' = 'exactly-once'`, `'sink.delivery-guarantee'`},
		{`, 'sink.partitioner' = 'custom'`, `'sink.partitioner'`},
		{`, 'sink.buffer-flush.interval' = '1s'`, `'sink.buffer-flush.interval'`},
	} {
		sql := fmt.Sprintf(base, "bad", tc.extra)
		_, err := s.Execute(ctx, sql)
		se, ok := err.(*sqlerr.Error)
		if !ok || se.Code != sqlerr.InvalidParameter || se.Pos != strings.Index(sql, tc.at) {
			t.Errorf("%s:\n got %v, want 22023 at %d", sql, err, strings.Index(sql, tc.at))
		}
	}
	for _, sql := range []string{
		`CREATE STREAM g (id BIGINT) WITH (connector = 'datagen', 'number-of-rows' = '10')`,
		fmt.Sprintf(base, "k", ""),
		`CREATE SINK u (id BIGINT, n BIGINT, PRIMARY KEY (id) NOT ENFORCED) WITH (connector = 'upsert-kafka', topic = 'out', 'properties.bootstrap.servers' = '127.0.0.1:1', 'key.format' = 'json', 'value.format' = 'json')`,
	} {
		if _, err := s.Execute(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	// The transaction timeout against the job's checkpoint interval, at INSERT: 60 s cannot outlive 3 intervals
	// and a restart.
	if _, err := s.Execute(ctx, fmt.Sprintf(base, "short", `, 'sink.delivery-guarantee' = 'exactly-once', 'sink.transactional-id-prefix' = 'p', 'properties.transaction.timeout.ms' = '60000'`)); err != nil {
		t.Fatal(err)
	}
	_, err = s.Execute(ctx, `INSERT INTO short SELECT id, id FROM g`)
	if sqlerr.Code(err) != sqlerr.InvalidParameter || !strings.Contains(err.Error(), "shorter than a transaction needs at checkpoint.interval 1s") {
		t.Errorf("INSERT into a sink whose transactions time out too soon: %v, want 22023", err)
	}
	_, err = s.Execute(ctx, `EXPLAIN INSERT INTO k SELECT id, COUNT(*) FROM g GROUP BY id`)
	if err == nil || !strings.Contains(err.Error(), "updat") {
		t.Errorf("an updating query into a kafka sink: %v, want a refusal", err)
	}
	if _, err := s.Execute(ctx, `EXPLAIN INSERT INTO u SELECT id, COUNT(*) FROM g GROUP BY id`); err != nil {
		t.Errorf("an updating query into an upsert-kafka sink: %v", err)
	}
}

// A job writing into an exactly-once Kafka sink survives the engine closing mid-stream and opening again (its
// sealed transactions left open by Close, settled by in-doubt resolution or replayed after the restore): a
// read_committed consumer reads ids 1..n, each once.
func TestEngineRestartKeepsExactlyOnce(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Options{Topics: map[string]int32{"out": 2}})
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	open := func() (*engine.Engine, *engine.Session, func()) {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		e, err := engine.Open(engine.Config{DataDir: dir, Alloc: mem})
		if err != nil {
			t.Fatal(err)
		}
		return e, e.NewSession(), func() {
			if err := e.Close(ctx); err != nil {
				t.Fatalf("close: %v", err)
			}
			mem.AssertSize(t, 0)
		}
	}
	_, s, closeEngine := open()
	for _, sql := range []string{
		`SET checkpoint.interval = '200ms'`,
		`CREATE STREAM g (id BIGINT) WITH (connector = 'datagen', 'rows-per-second' = '20000',
			'fields.id.kind' = 'sequence', 'fields.id.start' = '1')`,
		fmt.Sprintf(`CREATE SINK k (id BIGINT) WITH (connector = 'kafka', topic = 'out',
			'properties.bootstrap.servers' = '%s', format = 'json', 'sink.delivery-guarantee' = 'exactly-once',
			'sink.transactional-id-prefix' = 'restart')`, c.Bootstrap()),
		`INSERT INTO k SELECT id FROM g`,
		`FLUSH`,
	} {
		if _, err := s.Execute(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	closeEngine()
	_, s, closeEngine = open()
	if _, err := s.Execute(ctx, `FLUSH`); err != nil {
		t.Fatal(err)
	}
	closeEngine()
	var ids []int
	for _, r := range c.ConsumeAll(t, "out") {
		id, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(string(r.Value), `{"id":`), "}"))
		if err != nil {
			t.Fatalf("record %q", r.Value)
		}
		ids = append(ids, id)
	}
	slices.Sort(ids)
	n := len(ids)
	distinct := len(slices.Compact(slices.Clone(ids)))
	if n == 0 || distinct != n || ids[0] != 1 || ids[n-1] != n {
		t.Fatalf("read %d rows (%d distinct, %v ... %v), want 1..n once each", n, distinct, ids[:min(n, 3)], ids[max(n-3, 0):])
	}
	t.Logf("%d rows across the restart", n)
}
