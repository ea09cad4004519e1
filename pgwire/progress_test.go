package pgwire

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/clinksql/clinksql/engine"
	"github.com/clinksql/clinksql/tests/kafkatest"
)

func TestMain(m *testing.M) { kafkatest.Main(m) }

// Pins: FLUSH's progress notices held back until the statement ends (the client sees nothing while FLUSH waits)
// or not sent at all. FLUSH waits on a job whose Kafka sink cannot commit while the broker is paused, so the
// notices must reach the client before FLUSH's CommandComplete, which comes only after the broker resumes.
func TestFlushSendsProgressNoticesWhileItWaits(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Options{Topics: map[string]int32{"out": 1}})
	ts := startServerEngine(t, Config{}, engine.Config{DataDir: t.TempDir(), ProgressInterval: 20 * time.Millisecond})
	notices := make(chan string, 1000)
	cfg := ts.pgxConfig(t, "")
	cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
		select {
		case notices <- n.Message:
		default:
		}
	}
	conn := connectWith(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, sql := range []string{
		`CREATE STREAM g (id BIGINT) WITH (connector = 'datagen', 'rows-per-second' = '200', 'fields.id.kind' = 'sequence', 'fields.id.start' = '1')`,
		fmt.Sprintf(`CREATE SINK k (id BIGINT) WITH (connector = 'kafka', topic = 'out', 'properties.bootstrap.servers' = '%s',
			format = 'json', 'sink.delivery-guarantee' = 'at-least-once')`, c.Bootstrap()),
		`INSERT INTO k SELECT id FROM g`,
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	for len(notices) > 0 {
		<-notices // the INSERT's own
	}
	if err := c.Pause(); err != nil {
		t.Fatal(err)
	}
	resumed := false
	defer func() {
		if !resumed {
			c.Resume()
		}
	}()
	flushed := make(chan error, 1)
	go func() {
		_, err := conn.Exec(ctx, `FLUSH`)
		flushed <- err
	}()
	// The sink's pre-commit waits for the paused broker's acknowledgements: FLUSH cannot end before Resume.
	var first string
	select {
	case first = <-notices:
	case err := <-flushed:
		t.Fatalf("FLUSH ended (%v) with the broker paused, before any progress notice", err)
	case <-time.After(30 * time.Second): // 1500 intervals
		t.Fatal("no progress notice while FLUSH waited")
	}
	if !strings.HasPrefix(first, "job-1: ") || !strings.Contains(first, " rows read (") {
		t.Fatalf("progress notice %q", first)
	}
	resumed = true
	if err := c.Resume(); err != nil {
		t.Fatal(err)
	}
	if err := <-flushed; err != nil {
		t.Fatalf("FLUSH after the broker resumed: %v", err)
	}
}
