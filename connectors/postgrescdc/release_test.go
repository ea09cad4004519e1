package postgrescdc_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/clinksql/clinksql/engine"
	"github.com/clinksql/clinksql/sqlerr"
	"github.com/clinksql/clinksql/tests/pgtest"
)

// What the engine's DROPs leave in Postgres, and the one-reader rule (release.go, engine/release.go).

func cdcStream(pg *pgtest.Postgres, name, slot, extra string) string {
	return fmt.Sprintf(`CREATE STREAM %s (id INT, k INT, v BIGINT) WITH (connector = 'postgres-cdc',
		hostname = '127.0.0.1', port = '%d', username = 'postgres', 'database-name' = 'postgres',
		'table-name' = 'src', 'slot.name' = '%s', sslmode = 'disable'%s)`, name, pg.Port, slot, extra)
}

func startPG(t *testing.T) (*pgtest.Postgres, *pgx.Conn) {
	t.Helper()
	pg := pgtest.StartT(t, pgtest.Options{Logical: true})
	c := pg.ConnectT(t)
	pgExec(t, c, `CREATE TABLE src (id INT PRIMARY KEY, k INT, v BIGINT)`)
	pgExec(t, c, `ALTER TABLE src REPLICA IDENTITY FULL`)
	pgExec(t, c, `INSERT INTO src SELECT g, g % 10, g FROM generate_series(1, 100) g`)
	return pg, c
}

func slots(t testing.TB, c *pgx.Conn) string {
	return strings.Join(pgtest.Lines(t, c, `SELECT slot_name || ':' || active FROM pg_replication_slots ORDER BY 1`), ",")
}

func publications(t testing.TB, c *pgx.Conn) string {
	return strings.Join(pgtest.Lines(t, c, `SELECT pubname::text FROM pg_publication ORDER BY 1`), ",")
}

// waitSlotActive waits until a job reads the slot (a minute at most).
func waitSlotActive(t testing.TB, c *pgx.Conn, slot string) {
	t.Helper()
	for end := time.Now().Add(time.Minute); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if slots(t, c) == slot+":true" {
			return
		}
	}
	t.Fatalf("slot %s never became active: %s", slot, slots(t, c))
}

func execResult(t testing.TB, s *engine.Session, sql string) *engine.Result {
	t.Helper()
	res, err := s.Execute(context.Background(), sql)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return res[len(res)-1]
}

// DROP STREAM drops the stream's slot and the publication the source created; a publication the user created
// and named with publication.name stays.
func TestEngineDropStreamDropsSlotAndPublication(t *testing.T) {
	t.Parallel()
	pg, c := startPG(t)
	pgExec(t, c, `CREATE PUBLICATION userpub FOR TABLE src`)
	s, _ := openEngine(t, t.TempDir())
	run(t, s, `SET checkpoint.interval = '100ms'`)
	run(t, s, cdcStream(pg, "s", "slot_default", ""))                              // creates slot_default_pub
	run(t, s, cdcStream(pg, "s2", "slot_named", ", 'publication.name' = 'mypub'")) // creates mypub
	run(t, s, cdcStream(pg, "s3", "slot_user", ", 'publication.name' = 'userpub'"))
	for _, st := range []string{"s", "s2", "s3"} {
		run(t, s, `CREATE MATERIALIZED VIEW mv_`+st+` AS SELECT k, COUNT(*) AS n FROM `+st+` GROUP BY k`)
	}
	for end := time.Now().Add(time.Minute); slots(t, c) != "slot_default:true,slot_named:true,slot_user:true"; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("slots: %s", slots(t, c))
		}
	}
	if got := publications(t, c); got != "mypub,slot_default_pub,userpub" {
		t.Fatalf("publications %q", got)
	}
	for _, st := range []string{"s", "s2", "s3"} {
		if res := execResult(t, s, `DROP STREAM `+st+` CASCADE`); len(res.Notices) > 0 {
			t.Fatalf("DROP STREAM %s: notices %q", st, res.Notices)
		}
	}
	if got := slots(t, c); got != "" {
		t.Fatalf("slots left after DROP STREAM: %s", got)
	}
	if got := publications(t, c); got != "userpub" {
		t.Fatalf("publications after DROP STREAM: %q, want only the user's userpub", got)
	}
}

// DROP JOB (and DROP MATERIALIZED VIEW) of the job reading a stream drops its slot once the job stopped; the
// publication stays with the stream, and a new job over the stream starts afresh.
func TestEngineDropJobReleasesSlot(t *testing.T) {
	t.Parallel()
	pg, c := startPG(t)
	s, _ := openEngine(t, t.TempDir())
	run(t, s, `SET checkpoint.interval = '100ms'`)
	run(t, s, cdcStream(pg, "s", "slot_job", ""))
	run(t, s, `CREATE SINK hole (id INT, k INT, v BIGINT) WITH (connector = 'blackhole')`)
	res := execResult(t, s, `INSERT INTO hole SELECT * FROM s`)
	id := strings.TrimPrefix(res.Notices[0], "started job ")
	waitSlotActive(t, c, "slot_job")
	if res := execResult(t, s, `DROP JOB `+id); len(res.Notices) > 0 {
		t.Fatalf("DROP JOB: notices %q", res.Notices)
	}
	if got := slots(t, c); got != "" {
		t.Fatalf("slots left after DROP JOB: %s", got)
	}
	if got := publications(t, c); got != "slot_job_pub" {
		t.Fatalf("publications after DROP JOB: %q", got)
	}
	run(t, s, `CREATE MATERIALIZED VIEW mv AS SELECT k, COUNT(*) AS n, SUM(v) AS sv FROM s GROUP BY k`)
	waitView(t, s, c, "a new job after DROP JOB")
	waitSlotActive(t, c, "slot_job")
	if res := execResult(t, s, `DROP MATERIALIZED VIEW mv`); len(res.Notices) > 0 {
		t.Fatalf("DROP MATERIALIZED VIEW: notices %q", res.Notices)
	}
	if got := slots(t, c); got != "" {
		t.Fatalf("slots left after DROP MATERIALIZED VIEW: %s", got)
	}
}

func wantInUse(t *testing.T, s *engine.Session, sql string, wants ...string) {
	t.Helper()
	_, err := s.Execute(context.Background(), sql)
	if err == nil {
		t.Fatalf("%s: accepted", sql)
	}
	e := sqlerr.As(err)
	text := e.Msg + " " + e.Hint
	if e.Code != sqlerr.ObjectInUse {
		t.Fatalf("%s: SQLSTATE %s (%v), want 55006", sql, e.Code, err)
	}
	for _, w := range wants {
		if !strings.Contains(text, w) {
			t.Fatalf("%s: %q does not say %q", sql, text, w)
		}
	}
}

// A second job over a CDC stream that a live job reads is refused at once with 55006, naming the
// stream, the job and the fix. The first job keeps its slot. One statement reading the stream twice reads it once
// (the planner reuses the scan): a self-join runs on the one slot.
func TestEngineSecondReaderRefused(t *testing.T) {
	t.Parallel()
	pg, c := startPG(t)
	s, _ := openEngine(t, t.TempDir())
	run(t, s, `SET checkpoint.interval = '100ms'`)
	run(t, s, cdcStream(pg, "s", "slot_one", ""))
	run(t, s, `CREATE SINK hole (id INT, k INT, v BIGINT) WITH (connector = 'blackhole')`)
	run(t, s, `CREATE MATERIALIZED VIEW mv AS SELECT k, COUNT(*) AS n, SUM(v) AS sv FROM s GROUP BY k`)
	waitView(t, s, c, "the first job")
	job := lines(run(t, s, `SELECT job_id FROM clink_catalog.jobs`))
	if len(job) != 1 {
		t.Fatalf("jobs: %q", job)
	}
	fix := "slot.name"
	wantInUse(t, s, `INSERT INTO hole SELECT * FROM s`, `"s"`, job[0], fix)
	wantInUse(t, s, `CREATE MATERIALIZED VIEW mv2 AS SELECT k FROM s`, `"s"`, job[0], fix)
	if _, err := s.Execute(context.Background(), `SELECT * FROM mv2`); sqlerr.Code(err) != sqlerr.UndefinedTable {
		t.Fatalf("mv2 exists after its refusal: %v", err)
	}
	run(t, s, `BEGIN STATEMENT SET`)
	run(t, s, `INSERT INTO hole SELECT * FROM s`)
	wantInUse(t, s, `END`, `"s"`, job[0])
	pgExec(t, c, `INSERT INTO src VALUES (1000, 3, 7)`)
	waitView(t, s, c, "the first job after the refusals")
	if got := slots(t, c); got != "slot_one:true" {
		t.Fatalf("slots: %s", got)
	}
	run(t, s, `DROP MATERIALIZED VIEW mv`)
	self := `INSERT INTO hole SELECT a.id, a.k, b.v FROM s a JOIN s b ON a.id = b.id`
	if plan := strings.Join(lines(run(t, s, "EXPLAIN "+self)), "\n"); !strings.Contains(plan, "(shared, above)") {
		t.Fatalf("the self-join reads the stream twice:\n%s", plan)
	}
	run(t, s, self)
	waitSlotActive(t, c, "slot_one")
}

// DROP STREAM with the server down drops the stream and says, in a notice, which slot is left and how to drop it.
func TestEngineDropStreamServerDown(t *testing.T) {
	t.Parallel()
	pg, _ := startPG(t)
	s, _ := openEngine(t, t.TempDir())
	run(t, s, cdcStream(pg, "s", "slot_down", ""))
	pg.Kill()
	res := execResult(t, s, `DROP STREAM s`)
	t.Logf("notices: %q", res.Notices)
	if len(res.Notices) != 1 || !strings.Contains(res.Notices[0], `replication slot "slot_down"`) ||
		!strings.Contains(res.Notices[0], `pg_drop_replication_slot('slot_down')`) {
		t.Fatalf("notices %q", res.Notices)
	}
	if _, err := s.Execute(context.Background(), `DESCRIBE s`); err == nil {
		t.Fatal("the stream is still there")
	}
}

// A slot some other client holds is waited for, then reported, not taken from it.
func TestEngineDropStreamSlotInUse(t *testing.T) {
	t.Parallel() // own server and engine; the slot-in-use wait overlaps the others
	pg, c := startPG(t)
	s, _ := openEngine(t, t.TempDir())
	run(t, s, cdcStream(pg, "s", "slot_busy", ""))
	ctx := context.Background()
	repl, err := pgconn.Connect(ctx, pg.DSN()+"&replication=database")
	if err != nil {
		t.Fatal(err)
	}
	defer repl.Close(ctx)
	pgExec(t, c, `CREATE PUBLICATION slot_busy_pub FOR TABLE src`)
	if _, err := pglogrepl.CreateReplicationSlot(ctx, repl, "slot_busy", "pgoutput", pglogrepl.CreateReplicationSlotOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := pglogrepl.StartReplication(ctx, repl, "slot_busy", 0, pglogrepl.StartReplicationOptions{
		PluginArgs: []string{"proto_version '1'", "publication_names 'slot_busy_pub'"}}); err != nil {
		t.Fatal(err)
	}
	waitSlotActive(t, c, "slot_busy")
	res := execResult(t, s, `DROP STREAM s`)
	t.Logf("notices: %q", res.Notices)
	if len(res.Notices) != 1 || !strings.Contains(res.Notices[0], "in use by server process") {
		t.Fatalf("notices %q", res.Notices)
	}
	if got := slots(t, c); got != "slot_busy:true" {
		t.Fatalf("slots: %s", got)
	}
}

// DROP JOB while the server is down leaves the slot with a notice; the next open of the engine drops it.
func TestEngineReleaseRetriedAtOpen(t *testing.T) {
	t.Parallel()
	pg, c := startPG(t)
	dir := t.TempDir()
	s, closeEngine := openEngine(t, dir)
	run(t, s, `SET checkpoint.interval = '100ms'`)
	run(t, s, cdcStream(pg, "s", "slot_retry", ""))
	run(t, s, `CREATE SINK hole (id INT, k INT, v BIGINT) WITH (connector = 'blackhole')`)
	id := strings.TrimPrefix(execResult(t, s, `INSERT INTO hole SELECT * FROM s`).Notices[0], "started job ")
	waitSlotActive(t, c, "slot_retry")
	c.Close(context.Background())
	pg.Kill()
	res := execResult(t, s, `DROP JOB `+id)
	if len(res.Notices) != 1 || !strings.Contains(res.Notices[0], `pg_drop_replication_slot('slot_retry')`) {
		t.Fatalf("DROP JOB with the server down: notices %q", res.Notices)
	}
	closeEngine()
	if err := pg.Restart(context.Background()); err != nil {
		t.Fatal(err)
	}
	c = pg.ConnectT(t)
	if got := slots(t, c); got != "slot_retry:false" {
		t.Fatalf("slots after the restart: %s", got)
	}
	openEngine(t, dir)
	for end := time.Now().Add(time.Minute); slots(t, c) != ""; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("the reopened engine did not drop the slot: %s", slots(t, c))
		}
	}
}
