package clients

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/clinksql/clinksql/tests/kafkatest"
)

// kafkaClick is one JSON message of the clicks topic.
type kafkaClick struct {
	UserID int64  `json:"user_id"`
	URL    string `json:"url"`
	TS     string `json:"ts"`
}

func clickRecords(from, to int) []*kgo.Record {
	var recs []*kgo.Record
	for i := from; i < to; i++ {
		v, _ := json.Marshal(kafkaClick{UserID: int64(i % 7), URL: fmt.Sprintf("/p/%d", i), TS: fmt.Sprintf("2026-12-01 10:00:%02d.000", i%60)})
		recs = append(recs, &kgo.Record{Topic: "clicks", Partition: int32(i % 4), Value: v})
	}
	return recs
}

// pins (issue 12, the psql session): against the real server, psql creates a Kafka stream and an exactly-once
// Kafka sink; a SELECT started before the rows exist returns rows produced after it started (it follows the
// topic); an INSERT INTO the sink publishes every row of the topic, and a read_committed consumer of the sink's
// topic reads each exactly once, also after more rows and another checkpoint.
func TestPsqlKafkaPipeline(t *testing.T) {
	psqlBin := lookTool(t, "psql", "postgresql-client")
	kc := kafkatest.Start(t, kafkatest.Options{Topics: map[string]int32{"clicks": 4, "big_clicks": 2}})
	srv := startServer(t)
	run := func(script string) string { return psql(t, psqlBin, srv.Host, srv.Port, script, "-A", "-t") }

	ddl := fmt.Sprintf(`CREATE STREAM clicks (user_id BIGINT, url VARCHAR, ts TIMESTAMP(3),
  "partition" INT METADATA VIRTUAL, WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)
  WITH (connector = 'kafka', topic = 'clicks', 'properties.bootstrap.servers' = '%[1]s',
        'scan.startup.mode' = 'earliest-offset', format = 'json');
CREATE SINK big_clicks (user_id BIGINT, url VARCHAR)
  WITH (connector = 'kafka', topic = 'big_clicks', 'properties.bootstrap.servers' = '%[1]s', format = 'json',
        'sink.delivery-guarantee' = 'exactly-once', 'sink.transactional-id-prefix' = 'psql-test');
`, kc.Bootstrap())
	if got := run(ddl); got != "CREATE STREAM\nCREATE SINK\n" {
		t.Fatalf("DDL: %q", got)
	}

	// A SELECT that needs 8 rows while the topic holds 4: it returns once the next 4 are produced.
	kc.Produce(t, clickRecords(0, 4)...)
	script := filepath.Join(t.TempDir(), "select.sql")
	if err := os.WriteFile(script, []byte("SELECT url, \"partition\" FROM clicks LIMIT 8;\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sel := exec.Command(psqlBin, "-X", "-v", "ON_ERROR_STOP=1", "-A", "-t", "-h", srv.Host, "-p", strconv.Itoa(srv.Port),
		"-U", "clinksql", "-d", "clinksql", "-f", script)
	var out strings.Builder
	sel.Stdout, sel.Stderr = &out, &out
	if err := sel.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- sel.Wait() }()
	kc.Produce(t, clickRecords(4, 8)...)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("psql SELECT: %v\n%s", err, out.String())
		}
	case <-time.After(60 * time.Second):
		sel.Process.Kill()
		t.Fatalf("the SELECT did not return the rows produced after it started:\n%s", out.String())
	}
	var got, want []string
	for i := 0; i < 8; i++ {
		want = append(want, fmt.Sprintf("/p/%d|%d", i, i%4))
	}
	got = strings.Split(strings.TrimSpace(out.String()), "\n")
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("streamed SELECT: got %q, want %q", got, want)
	}

	// The pipeline into the exactly-once sink: every row with an even user_id.
	if got := run("INSERT INTO big_clicks SELECT user_id, url FROM clicks WHERE user_id % 2 = 0;\n"); !regexp.MustCompile(
		`^psql:\S+: NOTICE:  started job job-1\npsql:\S+: NOTICE:  replay suppression: the rows sink big_clicks receives are not fired by the watermark [^\n]*\nINSERT 0 0\n$`).MatchString(got) {
		t.Fatalf("INSERT: %q", got)
	}
	expect := func(n int) []string {
		var w []string
		for i := 0; i < n; i++ {
			if (i%7)%2 == 0 {
				v, _ := json.Marshal(map[string]any{"user_id": i % 7, "url": fmt.Sprintf("/p/%d", i)})
				w = append(w, string(v))
			}
		}
		slices.Sort(w)
		return w
	}
	committed := func() []string {
		var vals []string
		for _, r := range kc.ConsumeAll(t, "big_clicks") {
			var m map[string]any
			if err := json.Unmarshal(r.Value, &m); err != nil {
				t.Fatalf("sink record %q: %v", r.Value, err)
			}
			v, _ := json.Marshal(m) // keys sorted, as in expect
			vals = append(vals, string(v))
		}
		slices.Sort(vals)
		return vals
	}
	for _, n := range []int{8, 40} {
		if n > 8 {
			kc.Produce(t, clickRecords(8, n)...)
		}
		// FLUSH completes a checkpoint and its commit; the job may not have read the newest rows before it, so
		// wait for the count, then check that nothing is doubled.
		deadline := time.Now().Add(60 * time.Second)
		var vals []string
		for {
			// A FLUSH that waits over 5 s (a loaded machine) reports the job's progress first.
			if got := run("FLUSH;\n"); !regexp.MustCompile(`^(psql:\S+: NOTICE:  job-1: \d+ rows read [^\n]*\n)*FLUSH\n$`).MatchString(got) {
				t.Fatalf("FLUSH: %q", got)
			}
			vals = committed()
			if len(vals) >= len(expect(n)) || time.Now().After(deadline) {
				break
			}
		}
		if w := expect(n); !slices.Equal(vals, w) {
			t.Fatalf("after %d rows, a read_committed consumer of big_clicks reads %d records, want %d:\n%q\nwant\n%q",
				n, len(vals), len(w), vals, w)
		}
	}
}
