package clients

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/clinksql/clinksql/tests/pgtest"
)

// pins (issue 14, the psql session): in psql, a Postgres table, a postgres-cdc stream over it and a materialized
// GROUP BY view in clinksql; an UPDATE and then a DELETE run by psql against Postgres appear in the view, which psql
// polls. The time from psql's return (the commit) to the change in the view is logged (the issue wants < 1 s;
// measured, not asserted). The same GROUP BY also runs as a job into a Postgres upsert sink (over a second stream:
// a replication slot has one reader), whose table psql reads in Postgres: after each change it equals the view.
func TestPsqlPostgresCDC(t *testing.T) {
	psqlBin := lookTool(t, "psql", "postgresql-client")
	pg := pgtest.StartT(t, pgtest.Options{Logical: true, MaxPreparedTransactions: 10})
	srv := startServer(t)
	onPG := func(script string) string {
		t.Helper()
		return runClient(t, 60*time.Second, "", psqlBin, "-X", "-v", "ON_ERROR_STOP=1", "-A", "-t", "-h", "127.0.0.1",
			"-p", fmt.Sprint(pg.Port), "-U", "postgres", "-d", "postgres", "-c", script)
	}
	onClink := func(script string) string { return psql(t, psqlBin, srv.Host, srv.Port, script, "-A", "-t") }

	onPG(`CREATE TABLE orders (id INT PRIMARY KEY, k TEXT NOT NULL, v NUMERIC(10,2) NOT NULL);
INSERT INTO orders SELECT g, 'k' || (g % 4), g * 1.25 FROM generate_series(1, 100) g;
CREATE TABLE orders_by_k (k TEXT PRIMARY KEY, n BIGINT NOT NULL, total NUMERIC(12,2) NOT NULL);`)
	// The view publishes at each completed checkpoint (exactly-once): the interval bounds the latency.
	ddl := fmt.Sprintf(`SET checkpoint.interval = '250ms';
CREATE STREAM orders (id INT, k VARCHAR, v DECIMAL(10,2)) WITH (connector = 'postgres-cdc',
  hostname = '127.0.0.1', port = '%d', username = 'postgres', 'database-name' = 'postgres', 'table-name' = 'orders',
  'slot.name' = 'psql_slot', sslmode = 'disable');
CREATE MATERIALIZED VIEW v AS SELECT k, COUNT(*) AS n, SUM(v) AS total FROM orders GROUP BY k;
`, pg.Port)
	if got := onClink(ddl); !regexp.MustCompile(`^SET\nCREATE STREAM\n.*NOTICE:  started job job-1\nCREATE MATERIALIZED VIEW\n$`).MatchString(got) {
		t.Fatalf("DDL: %q", got)
	}
	sinkDDL := fmt.Sprintf(`SET checkpoint.interval = '250ms';
CREATE STREAM orders2 (id INT, k VARCHAR, v DECIMAL(10,2)) WITH (connector = 'postgres-cdc',
  hostname = '127.0.0.1', port = '%d', username = 'postgres', 'database-name' = 'postgres', 'table-name' = 'orders',
  'slot.name' = 'psql_slot2', sslmode = 'disable');
CREATE SINK by_k (k VARCHAR, n BIGINT, total DECIMAL(12,2), PRIMARY KEY (k) NOT ENFORCED) WITH (
  connector = 'postgres', url = '%s', 'table-name' = 'orders_by_k');
INSERT INTO by_k SELECT k, COUNT(*), SUM(v) FROM orders2 GROUP BY k;
`, pg.Port, pg.DSN())
	if got := onClink(sinkDDL); !regexp.MustCompile(`^SET\nCREATE STREAM\nCREATE SINK\n.*NOTICE:  started job job-2\nINSERT 0 0\n$`).MatchString(got) {
		t.Fatalf("sink DDL: %q", got)
	}
	pgView := `SELECT k || '|' || count(*) || '|' || sum(v) FROM orders GROUP BY k ORDER BY k`
	view := `SELECT k, n, total FROM v ORDER BY k;`
	sinkTable := `SELECT k || '|' || n || '|' || total FROM orders_by_k ORDER BY k`
	// waitFor polls the view through psql until it shows what Postgres' GROUP BY shows; it returns how long that
	// took from since.
	waitFor := func(what string, since time.Time) time.Duration {
		t.Helper()
		want := onPG(pgView)
		var got string
		for end := time.Now().Add(time.Minute); time.Now().Before(end); {
			if got = onClink(view); got == want {
				return time.Since(since)
			}
		}
		t.Fatalf("%s: the view shows\n%s\nPostgres' GROUP BY\n%s", what, got, want)
		return 0
	}
	// sinkEquals polls the sink's table in Postgres until it equals the view (both at Postgres' GROUP BY).
	sinkEquals := func(what string) {
		t.Helper()
		want := onPG(pgView)
		var got string
		for end := time.Now().Add(time.Minute); time.Now().Before(end); {
			if got = onPG(sinkTable); got == want {
				if v := onClink(view); v != got {
					t.Fatalf("%s: the view moved on? view\n%s\nsink table\n%s", what, v, got)
				}
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Fatalf("%s: the upsert sink's table shows\n%s\nthe view and Postgres' GROUP BY\n%s", what, got, want)
	}
	waitFor("the snapshot", time.Now())
	sinkEquals("the snapshot")
	for _, change := range []string{
		`UPDATE orders SET v = v + 100, k = 'k9' WHERE id % 10 = 3`,
		`DELETE FROM orders WHERE k = 'k1'`,
		`UPDATE orders SET v = 0.01 WHERE id = 2`,
		`DELETE FROM orders WHERE id = 4`,
	} {
		onPG(change)
		committed := time.Now()
		lat := waitFor(change, committed)
		verb, _, _ := strings.Cut(change, " ")
		t.Logf("%s committed in Postgres appeared in the clinksql view %s later (psql polling; the issue wants < 1 s)", verb, lat.Round(time.Millisecond))
		sinkEquals(change)
	}
}
