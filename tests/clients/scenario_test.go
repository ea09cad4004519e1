package clients

import (
	"fmt"
	"os"
	"os/exec"
	"testing"

	"github.com/clinksql/clinksql/tests/clients/testserver"
	"github.com/clinksql/clinksql/tests/kafkatest"
)

// The scenario every client runs (the Python and Java clients in testdata spell the same statements and
// expectations in their own language):
//
//	CREATE STREAM clicks (user_id BIGINT, url VARCHAR, amount DECIMAL(10,2), ts TIMESTAMP(3),
//	                      WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)
//	CREATE MATERIALIZED VIEW per_url AS SELECT url, window_start, window_end, COUNT(*) AS n, SUM(amount) AS total,
//	    MAX(ts) AS last_ts, MAX(user_id) AS top_user
//	  FROM TABLE(TUMBLE(TABLE clicks, DESCRIPTOR(ts), INTERVAL '10' SECOND)) GROUP BY url, window_start, window_end
//	INSERT INTO clicks VALUES ($1, $2, $3, $4)      -- prepared, once per row below
//	FLUSH
//	SELECT url, window_start, window_end, n, total, last_ts, top_user FROM per_url ORDER BY window_start, url
const (
	createStream = `CREATE STREAM clicks (user_id BIGINT, url VARCHAR, amount DECIMAL(10,2), ts TIMESTAMP(3), ` +
		`WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)`
	createView = `CREATE MATERIALIZED VIEW per_url AS SELECT url, window_start, window_end, COUNT(*) AS n, ` +
		`SUM(amount) AS total, MAX(ts) AS last_ts, MAX(user_id) AS top_user ` +
		`FROM TABLE(TUMBLE(TABLE clicks, DESCRIPTOR(ts), INTERVAL '10' SECOND)) GROUP BY url, window_start, window_end`
	insertSQL = `INSERT INTO clicks VALUES ($1, $2, $3, $4)`
	selectSQL = `SELECT url, window_start, window_end, n, total, last_ts, top_user FROM per_url ORDER BY window_start, url`
)

// click is one inserted row, its values in text form.
type click struct{ userID, url, amount, ts string }

// clicks are the rows every client inserts, in this order.
var clicks = []click{
	{"1", "a", "1.50", "2026-01-01 00:00:01"},
	{"2", "b", "2.25", "2026-01-01 00:00:03"},
	{"1", "a", "3.00", "2026-01-01 00:00:07.25"},
	{"3", "a", "0.75", "2026-01-01 00:00:12"},
	{"2", "b", "10.00", "2026-01-01 00:00:15"},
	{"1", "c", "5.00", "2026-01-01 00:00:35"},
}

// perURL is the expected view, derived by hand: the last row (00:00:35) moves the watermark to 00:00:34, which
// fires the windows [00:00:00, 00:00:10) and [00:00:10, 00:00:20) ([00:00:20, 00:00:30) is empty; [00:00:30,
// 00:00:40) holds the 'c' row and has not fired). FLUSH commits them; it does not advance the watermark.
//
//	[0,10)  a: rows 1 (1.50, 00:00:01, user 1) and 3 (3.00, 00:00:07.25, user 1): n 2, total 4.50, last 00:00:07.25, top 1
//	[0,10)  b: row 2 (2.25, 00:00:03, user 2):                                      n 1, total 2.25, last 00:00:03, top 2
//	[10,20) a: row 4 (0.75, 00:00:12, user 3):                                      n 1, total 0.75, last 00:00:12, top 3
//	[10,20) b: row 5 (10.00, 00:00:15, user 2):                                     n 1, total 10.00, last 00:00:15, top 2
var perURL = [][7]string{
	{"a", "2026-01-01 00:00:00", "2026-01-01 00:00:10", "2", "4.50", "2026-01-01 00:00:07.25", "1"},
	{"b", "2026-01-01 00:00:00", "2026-01-01 00:00:10", "1", "2.25", "2026-01-01 00:00:03", "2"},
	{"a", "2026-01-01 00:00:10", "2026-01-01 00:00:20", "1", "0.75", "2026-01-01 00:00:12", "3"},
	{"b", "2026-01-01 00:00:10", "2026-01-01 00:00:20", "1", "10.00", "2026-01-01 00:00:15", "2"},
}

// Result column type OIDs: varchar, timestamp, timestamp, int8, numeric, timestamp, int8.
var perURLOIDs = []uint32{1043, 1114, 1114, 20, 1700, 1114, 20}

// bin is the clinksql binary, built once for the package.
var bin string

func TestMain(m *testing.M) { testserver.Main(m, &bin, kafkatest.RemoveBinary) }

// startServer starts `clinksql serve` on a fresh data directory; the test's clean-up stops it with SIGTERM and
// fails the test unless it exits 0.
func startServer(t *testing.T) *testserver.Server {
	t.Helper()
	s, err := testserver.Start(bin, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Error(err)
		} else if t.Failed() {
			t.Logf("server output:\n%s", s.Output())
		}
	})
	return s
}

// missingTool fails the test (CI installs every client) unless CLINKSQL_CLIENTS_OPTIONAL=1 asks for a skip.
func missingTool(t *testing.T, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("CLINKSQL_CLIENTS_OPTIONAL") == "1" {
		t.Skipf("%s (skipped: CLINKSQL_CLIENTS_OPTIONAL=1)", msg)
	}
	t.Fatalf("%s: `make test` (make test-tools) installs it; set CLINKSQL_CLIENTS_OPTIONAL=1 to skip this client on a developer machine", msg)
}

// lookTool returns the path of a command, or reports it missing.
func lookTool(t *testing.T, name, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		missingTool(t, "%s not found on PATH (Debian package %s)", name, pkg)
	}
	return p
}
