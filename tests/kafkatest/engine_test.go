package kafkatest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/clinksql/clinksql/engine"
	"github.com/clinksql/clinksql/sqlerr"
)

// The Kafka connectors through the engine, as a user meets them: CREATE STREAM ... WITH (connector = 'kafka'),
// refusals at the option, EXPLAIN, DESCRIBE, a SELECT that streams rows as they are produced, a bounded SELECT,
// and an upsert-kafka changelog feeding an updating materialized view.

func openEngine(t *testing.T) *engine.Session {
	t.Helper()
	e, err := engine.Open(engine.Config{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close(context.Background()) })
	return e.NewSession()
}

func exec1(t *testing.T, s *engine.Session, sql string) *engine.Result {
	t.Helper()
	rs, err := s.Execute(context.Background(), sql)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return rs[len(rs)-1]
}

func lines(r *engine.Result) []string {
	var out []string
	for _, row := range r.Rows {
		var parts []string
		for _, v := range row {
			if v == nil {
				parts = append(parts, "NULL")
			} else {
				parts = append(parts, *v)
			}
		}
		out = append(out, strings.Join(parts, " "))
	}
	return out
}

// streamWriter collects a streaming SELECT's rows and cancels it once it saw want of them.
type streamWriter struct {
	mu     sync.Mutex
	rows   []string
	want   int
	cancel func()
	seen   chan struct{} // a row arrived
}

func (w *streamWriter) Columns([]engine.Column) error { return nil }
func (w *streamWriter) Rows(rows [][]*string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.rows = append(w.rows, lines(&engine.Result{Rows: rows})...)
	select {
	case w.seen <- struct{}{}:
	default:
	}
	if len(w.rows) >= w.want {
		w.cancel()
	}
	return nil
}

func (w *streamWriter) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.rows)
}

func TestEngineKafkaStream(t *testing.T) {
	c := Start(t, Options{Topics: map[string]int32{"clicks": 2}})
	s := openEngine(t)
	create := fmt.Sprintf(`CREATE STREAM clicks (user_id BIGINT, url VARCHAR,
		ts TIMESTAMP(3) METADATA FROM 'timestamp', p INT METADATA FROM 'partition' VIRTUAL,
		WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)
		WITH (connector = 'kafka', topic = 'clicks', 'properties.bootstrap.servers' = '%s',
		'scan.startup.mode' = 'earliest-offset', format = 'json')`, c.Bootstrap())
	exec1(t, s, create)

	// Refusals at CREATE, at the option.
	bad := strings.Replace(create, "CREATE STREAM clicks", "CREATE STREAM c2", 1)
	for _, tc := range []struct{ from, to, want string }{
		{"'earliest-offset'", "'earliest'", "22023 at 'scan.startup.mode': option 'scan.startup.mode' = 'earliest'"},
		{"format = 'json'", "format = 'json', 'properties.max.poll.records' = '5'", "22023 at 'properties.max.poll.records': unknown option 'properties.max.poll.records' for connector 'kafka' (known: "},
		{"format = 'json'", "format = 'avro'", "22023 at format: option 'format' = 'avro': want json, csv, raw, debezium-json"},
		{"'properties.bootstrap.servers' = '" + c.Bootstrap() + "'", "'properties.bootstrap.servers' = 'nohost'", "22023 at 'properties.bootstrap.servers': option 'properties.bootstrap.servers': 'nohost' is not host:port"},
		{"topic = 'clicks'", "topic = 'clicks', 'properties.security.protocol' = 'SASL_PLAINTEXT', 'properties.sasl.mechanism' = 'PLAIN', 'properties.sasl.jaas.config' = 'x'", "22023 at 'properties.sasl.jaas.config': option 'properties.sasl.jaas.config': want"},
		{"p INT METADATA FROM 'partition'", "p INT METADATA FROM 'nope'", "22023 at METADATA: column \"p\": unknown metadata key 'nope' for connector 'kafka' (known: topic, partition"},
	} {
		sql := strings.Replace(bad, tc.from, tc.to, 1)
		_, err := s.Execute(context.Background(), sql)
		e := sqlerr.As(err)
		if e == nil {
			t.Fatalf("%s: no error, want %s", sql, tc.want)
		}
		at := "?"
		if e.Pos >= 0 && e.Pos < len(sql) {
			at = sql[e.Pos:]
			if i := strings.IndexAny(at, " ="); i > 0 {
				at = at[:i]
			}
		}
		if got := fmt.Sprintf("%s at %s: %s", e.Code, at, e.Msg); !strings.HasPrefix(got, tc.want) {
			t.Errorf("%s:\n got %s\nwant %s", tc.to, got, tc.want)
		}
	}

	desc := lines(exec1(t, s, "DESCRIBE clicks"))
	if want := "ts TIMESTAMP(3) YES METADATA FROM 'timestamp' WATERMARK AS ts - INTERVAL '1' SECOND"; desc[2] != want {
		t.Fatalf("DESCRIBE: %q, want %q", desc[2], want)
	}
	explain := strings.Join(lines(exec1(t, s, "EXPLAIN SELECT user_id, url FROM clicks LIMIT 10")), "\n")
	for _, want := range []string{"Source: kafka clicks", "topics: clicks", "startup: earliest-offset", "format: json",
		"watermark: ts - INTERVAL '1' SECOND (per partition, the minimum)"} {
		if !strings.Contains(explain, want) {
			t.Fatalf("EXPLAIN lacks %q:\n%s", want, explain)
		}
	}

	// A SELECT that streams rows as they are produced: some before it starts, some while it runs.
	for i := range 3 {
		c.Produce(t, &kgo.Record{Topic: "clicks", Partition: int32(i % 2), Value: []byte(fmt.Sprintf(`{"user_id": %d, "url": "u%d"}`, i, i))})
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := &streamWriter{want: 6, cancel: cancel, seen: make(chan struct{}, 1)}
	done := make(chan error, 1)
	go func() {
		done <- s.Run(ctx, "SELECT user_id, url, p FROM clicks LIMIT 1000000", w, func(*engine.Result) {})
	}()
	for w.count() < 3 {
		select {
		case <-w.seen:
		case err := <-done:
			t.Fatalf("the SELECT ended before its rows: %v", err)
		case <-time.After(60 * time.Second):
			t.Fatal("no rows from the streaming SELECT in 60 s")
		}
	}
	for i := 3; i < 6; i++ {
		c.Produce(t, &kgo.Record{Topic: "clicks", Partition: int32(i % 2), Value: []byte(fmt.Sprintf(`{"user_id": %d, "url": "u%d"}`, i, i))})
	}
	select {
	case err := <-done:
		if sqlerr.Code(err) != sqlerr.QueryCanceled {
			t.Fatalf("the streaming SELECT ended with %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("the streaming SELECT did not see the rows produced while it ran: %q", w.rows)
	}
	got := slices.Clone(w.rows)
	slices.Sort(got)
	want := []string{"0 u0 0", "1 u1 1", "2 u2 0", "3 u3 1", "4 u4 0", "5 u5 1"}
	if !slices.Equal(got, want) {
		t.Fatalf("streamed rows %q, want %q", got, want)
	}

	// A bounded stream over the same topic: a SELECT ends at the offsets of its start.
	exec1(t, s, strings.NewReplacer("CREATE STREAM clicks", "CREATE STREAM upto",
		"format = 'json'", "format = 'json', 'scan.bounded.mode' = 'latest-offset'").Replace(create))
	if got := lines(exec1(t, s, "SELECT count(*), sum(user_id) FROM upto")); !slices.Equal(got, []string{"6 15"}) {
		t.Fatalf("bounded count: %q", got)
	}
}

// upsert-kafka: the key is the PRIMARY KEY, a null value deletes it, and the stream is a changelog that an
// updating query (a GROUP BY) reads.
func TestEngineUpsertKafka(t *testing.T) {
	c := Start(t, Options{Topics: map[string]int32{"users": 2}})
	s := openEngine(t)
	exec1(t, s, "SET checkpoint.interval = '0'")
	exec1(t, s, fmt.Sprintf(`CREATE STREAM users (id BIGINT, region VARCHAR, PRIMARY KEY (id) NOT ENFORCED)
		WITH (connector = 'upsert-kafka', topic = 'users', 'properties.bootstrap.servers' = '%s',
		'key.format' = 'json', 'value.format' = 'json')`, c.Bootstrap()))
	if _, err := s.Execute(context.Background(), "SELECT region, count(*) FROM users GROUP BY region LIMIT 10"); sqlerr.Code(err) == "" ||
		!strings.Contains(err.Error(), "updating result") {
		t.Fatalf("an unbounded SELECT over a changelog: %v, want the refusal of an updating result", err)
	}
	exec1(t, s, "CREATE MATERIALIZED VIEW per_region AS SELECT region, count(*) AS n FROM users GROUP BY region")
	put := func(id int, region string) *kgo.Record {
		r := &kgo.Record{Topic: "users", Partition: int32(id % 2), Key: []byte(fmt.Sprintf(`{"id": %d}`, id))}
		if region != "" {
			r.Value = []byte(fmt.Sprintf(`{"id": %d, "region": "%s"}`, id, region))
		}
		return r
	}
	c.Produce(t, put(1, "eu"), put(2, "eu"), put(3, "us"), put(1, "us"), put(2, ""), put(4, ""))
	// Expected (upsert semantics): 1 -> us, 2 deleted, 3 -> us, 4 never existed: us 2, eu 0 (gone).
	deadline := time.Now().Add(60 * time.Second)
	for {
		exec1(t, s, "FLUSH")
		got := lines(exec1(t, s, "SELECT region, n FROM per_region ORDER BY region"))
		if slices.Equal(got, []string{"us 2"}) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("per_region = %q, want [us 2]", got)
		}
	}
}
