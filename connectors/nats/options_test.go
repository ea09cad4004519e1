package nats_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clinksql/clinksql/engine"
	"github.com/clinksql/clinksql/sqlerr"
)

// Options are checked at CREATE, AckWait against the checkpoint interval at INSERT, each refusal with its
// SQLSTATE and the option's name.
func TestOptionErrors(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	e, err := engine.Open(engine.Config{DataDir: t.TempDir(), Alloc: mem})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	defer func() {
		if err := e.Close(ctx); err != nil {
			t.Error(err)
		}
		mem.AssertSize(t, 0)
	}()
	s := e.NewSession()
	url := "nats://127.0.0.1:1" // never dialled: validation needs no server
	src := func(cols, opts string) string {
		return fmt.Sprintf(`CREATE STREAM s (%s) WITH (connector = 'nats', 'nats.url' = '%s', 'nats.stream' = 'IN', format = 'json'%s)`, cols, url, opts)
	}
	for _, c := range []struct{ sql, code, want string }{
		{`CREATE STREAM s (id BIGINT) WITH (connector = 'nats', 'nats.stream' = 'IN', format = 'json')`, "22023", "needs 'nats.url'"},
		{fmt.Sprintf(`CREATE STREAM s (id BIGINT) WITH (connector = 'nats', 'nats.url' = '%s', format = 'json')`, url), "22023", "needs 'nats.stream'"},
		{src("id BIGINT", ", 'nats.strem' = 'x'"), "22023", "unknown option 'nats.strem'"},
		{strings.Replace(src("id BIGINT", ""), "'json'", "'avro'", 1), "22023", "option 'format' = 'avro'"},
		{src("id BIGINT", ", 'nats.ack-wait' = 'soon'"), "22023", "'nats.ack-wait'"},
		{src("id BIGINT", ", 'nats.max-ack-pending' = '10'"), "22023", "below 'nats.fetch-size'"},
		{src("id BIGINT", ", 'nats.subject' = 'a..b'"), "22023", "'nats.subject'"},
		{src("id BIGINT", ", 'scan.startup.mode' = 'timestamp'"), "22023", "'scan.startup.mode'"},
		{src("id BIGINT", ", 'nats.password' = 'p'"), "22023", "needs 'nats.user'"},
		{src("id BIGINT, q INT METADATA FROM 'stream-sequence' VIRTUAL", ""), "42804", "'stream-sequence'"},
		{src("id BIGINT, q BIGINT METADATA FROM 'offset' VIRTUAL", ""), "", "offset"},
		{fmt.Sprintf(`CREATE SINK o (id BIGINT) WITH (connector = 'nats', 'nats.url' = '%s', format = 'json')`, url), "22023", "needs 'nats.subject'"},
		{fmt.Sprintf(`CREATE SINK o (id BIGINT) WITH (connector = 'nats', 'nats.url' = '%s', 'nats.subject' = 'o.*', format = 'json')`, url), "22023", "no wildcards"},
		// Atomic batches follow the stream's allow_atomic: no option turns them on or off.
		{fmt.Sprintf(`CREATE SINK o (id BIGINT) WITH (connector = 'nats', 'nats.url' = '%s', 'nats.subject' = 'o', format = 'json', 'nats.atomic-publish' = 'false')`, url), "22023", "unknown option 'nats.atomic-publish'"},
		{fmt.Sprintf(`CREATE SINK o (id BIGINT, v VARCHAR) WITH (connector = 'nats', 'nats.url' = '%s', 'nats.subject' = 'o', format = 'raw')`, url), "22023", "exactly one column"},
	} {
		_, err := s.Execute(ctx, c.sql)
		if err == nil || !strings.Contains(err.Error(), c.want) || c.code != "" && sqlerr.Code(err) != c.code {
			t.Errorf("%s:\n got %v (%s)\nwant %s containing %q", c.sql, err, sqlerr.Code(err), c.code, c.want)
		}
	}
	// AckWait below two checkpoint intervals is refused at INSERT, naming both.
	for _, sql := range []string{src("id BIGINT", ", 'nats.ack-wait' = '1 s'"),
		fmt.Sprintf(`CREATE SINK o (id BIGINT) WITH (connector = 'blackhole')`), `SET checkpoint.interval = '1s'`} {
		if _, err := s.Execute(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	_, err = s.Execute(ctx, `INSERT INTO o SELECT id FROM s`)
	if err == nil || sqlerr.Code(err) != "22023" || !strings.Contains(err.Error(), "'nats.ack-wait' = 1s is less than twice the job's checkpoint interval") ||
		!strings.Contains(err.Error(), "checkpoint.interval") {
		t.Fatalf("INSERT with ack-wait 1 s, interval 1 s: %v (%s)", err, sqlerr.Code(err))
	}
}
