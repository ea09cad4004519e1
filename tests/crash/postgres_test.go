package crash

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/clinksql/clinksql/tests/pgtest"
)

// pgSource is the input of the Postgres crash job: a stream src (k BIGINT, v BIGINT) and the expected result of
// the job's GROUP BY over it. It is one value so that the bounded datagen source can give way to the Postgres
// CDC source (whose rows the test changes in Postgres during the run, and whose expected result is Postgres'
// own GROUP BY over the source table) without touching the harness.
type pgSource interface {
	// ddl returns the statements that create the stream src (and what it needs), given the cluster and the
	// iteration's seeded random source.
	ddl(ctx context.Context, pg *pgtest.Postgres, db *pgx.Conn, rng *rand.Rand) ([]string, error)
	// drive runs while clinksql runs and is killed (a CDC source changes its table); it returns when its input is
	// complete.
	drive(ctx context.Context, db *pgx.Conn) error
	// expected returns the GROUP BY k result the sink table must end up holding, rows as "k|n|sum|min|max".
	expected(ctx context.Context, db *pgx.Conn) ([]string, error)
}

// datagenSource is a bounded, throttled datagen stream: ids 1..rows, k = id % keys, v a fixed function of id
// (both over a view), so the expected result is computed in Go.
type datagenSource struct {
	rows, keys, perSec int64
}

func (d *datagenSource) ddl(_ context.Context, _ *pgtest.Postgres, _ *pgx.Conn, rng *rand.Rand) ([]string, error) {
	d.keys = 5 + rng.Int64N(60)
	d.perSec = 1000 + rng.Int64N(1500)
	d.rows = d.perSec * (4 + rng.Int64N(5)) // 4 to 8 s at parallelism 1, half that at 2
	return []string{
		fmt.Sprintf(`CREATE STREAM gen (id BIGINT) WITH (connector = 'datagen', 'number-of-rows' = '%d',
  'rows-per-second' = '%d', 'fields.id.kind' = 'sequence', 'fields.id.start' = '1')`, d.rows, d.perSec),
		fmt.Sprintf(`CREATE VIEW src AS SELECT id %% %d AS k, (id * 7919) %% 1000 - 500 AS v FROM gen`, d.keys),
	}, nil
}

func (d *datagenSource) drive(context.Context, *pgx.Conn) error { return nil }

func (d *datagenSource) expected(context.Context, *pgx.Conn) ([]string, error) {
	type acc struct{ n, sum, lo, hi int64 }
	groups := map[int64]*acc{}
	for id := int64(1); id <= d.rows; id++ {
		k, v := id%d.keys, (id*7919)%1000-500
		a := groups[k]
		if a == nil {
			a = &acc{lo: v, hi: v}
			groups[k] = a
		}
		a.n, a.sum, a.lo, a.hi = a.n+1, a.sum+v, min(a.lo, v), max(a.hi, v)
	}
	var out []string
	for k, a := range groups {
		out = append(out, fmt.Sprintf("%d|%d|%d|%d|%d", k, a.n, a.sum, a.lo, a.hi))
	}
	slices.Sort(out)
	return out, nil
}

func (d *datagenSource) String() string {
	return fmt.Sprintf("datagen %d rows over %d keys at %d rows/s per subtask", d.rows, d.keys, d.perSec)
}

// cdcSource is the Postgres CDC source over a table src (id, k, v) that the test changes during the run:
// rows inserted before the stream exists (the initial snapshot), then transactions of inserts, updates (of v,
// of the group k, of both) and deletes while clinksql runs and is killed. Groups can empty out, so the sink sees
// deletes. The expected result is Postgres' own GROUP BY over the table at the end.
type cdcSource struct {
	rng      *rand.Rand
	next     int64 // the next id to insert
	initial  int
	duration time.Duration
	full     bool // REPLICA IDENTITY FULL (else DEFAULT: the primary key, and the source keeps the rows)
	keys     int64
	txns     int
}

func (c *cdcSource) ddl(ctx context.Context, pg *pgtest.Postgres, db *pgx.Conn, rng *rand.Rand) ([]string, error) {
	c.rng = rand.New(rand.NewPCG(rng.Uint64(), rng.Uint64()))
	c.keys = 5 + rng.Int64N(40)
	c.initial = rng.IntN(2000)
	c.duration = time.Duration(3000+rng.IntN(4000)) * time.Millisecond
	c.full = rng.IntN(2) == 0
	stmts := []string{`CREATE TABLE src (id bigint PRIMARY KEY, k bigint NOT NULL, v bigint NOT NULL)`}
	if c.full {
		stmts = append(stmts, `ALTER TABLE src REPLICA IDENTITY FULL`)
	}
	for _, s := range stmts {
		if _, err := db.Exec(ctx, s); err != nil {
			return nil, fmt.Errorf("%s: %w", s, err)
		}
	}
	for range c.initial {
		if err := c.insert(ctx, db); err != nil {
			return nil, err
		}
	}
	return []string{fmt.Sprintf(`CREATE STREAM src (id BIGINT, k BIGINT, v BIGINT, PRIMARY KEY (id) NOT ENFORCED)
  WITH (connector = 'postgres-cdc', hostname = '127.0.0.1', port = '%d', username = 'postgres',
  'database-name' = 'postgres', 'schema-name' = 'public', 'table-name' = 'src', 'slot.name' = 'clink_src',
  sslmode = 'disable')`, pg.Port)}, nil
}

func (c *cdcSource) insert(ctx context.Context, db *pgx.Conn) error {
	c.next++
	_, err := db.Exec(ctx, `INSERT INTO src VALUES ($1, $2, $3)`, c.next, c.rng.Int64N(c.keys), c.rng.Int64N(2001)-1000)
	return err
}

// drive runs random transactions for the source's duration: each of 1 to 20 changes, mostly inserts, some
// updates (v, k or both), deletes of random ids and, rarely, of a whole group.
func (c *cdcSource) drive(ctx context.Context, db *pgx.Conn) error {
	end := time.Now().Add(c.duration)
	for time.Now().Before(end) {
		tx, err := db.Begin(ctx)
		if err != nil {
			return err
		}
		for range 1 + c.rng.IntN(20) {
			id := 1 + c.rng.Int64N(max(c.next, 1))
			switch r := c.rng.IntN(100); {
			case r < 2: // a whole group: the sink deletes its row
				_, err = tx.Exec(ctx, `DELETE FROM src WHERE k = $1`, c.rng.Int64N(c.keys))
			case r < 50 || c.next == 0:
				c.next++
				_, err = tx.Exec(ctx, `INSERT INTO src VALUES ($1, $2, $3)`, c.next, c.rng.Int64N(c.keys), c.rng.Int64N(2001)-1000)
			case r < 60:
				_, err = tx.Exec(ctx, `UPDATE src SET v = v + $2 WHERE id = $1`, id, c.rng.Int64N(21)-10)
			case r < 70:
				_, err = tx.Exec(ctx, `UPDATE src SET k = $2 WHERE id = $1`, id, c.rng.Int64N(c.keys))
			case r < 80:
				_, err = tx.Exec(ctx, `UPDATE src SET k = $2, v = $3 WHERE id = $1`, id, c.rng.Int64N(c.keys), c.rng.Int64N(2001)-1000)
			default:
				_, err = tx.Exec(ctx, `DELETE FROM src WHERE id = $1 OR (k = $2 AND id % 3 = 0)`, id, c.rng.Int64N(c.keys))
			}
			if err != nil {
				tx.Rollback(ctx)
				return err
			}
		}
		if err := tx.Commit(ctx); err != nil {
			return err
		}
		c.txns++
		time.Sleep(time.Duration(2+c.rng.IntN(15)) * time.Millisecond)
	}
	return nil
}

func (c *cdcSource) expected(ctx context.Context, db *pgx.Conn) ([]string, error) {
	rows, err := db.Query(ctx, `SELECT k || '|' || count(*) || '|' || sum(v) || '|' || min(v) || '|' || max(v) FROM src GROUP BY k`)
	if err != nil {
		return nil, err
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	slices.Sort(out)
	return out, err
}

func (c *cdcSource) String() string {
	identity := "DEFAULT"
	if c.full {
		identity = "FULL"
	}
	return fmt.Sprintf("postgres-cdc over %d keys (REPLICA IDENTITY %s), %d rows in the snapshot, changes for %s",
		c.keys, identity, c.initial, c.duration)
}

// completedRe is the coordinator's "checkpoint completed" (debug) line: the sinks' commits follow it.
var completedRe = regexp.MustCompile(`msg="checkpoint completed"`)

// newPGSource is the crash job's input: the Postgres CDC source, or with CRASH_PG_SOURCE=datagen a bounded
// datagen stream (the harness without the CDC source).
func newPGSource() pgSource {
	if os.Getenv("CRASH_PG_SOURCE") == "datagen" {
		return &datagenSource{}
	}
	return &cdcSource{}
}

// TestCrashKill9Postgres is the crash harness of Postgres in and out: per seeded iteration, a PostgreSQL cluster
// (durable, logical replication, prepared transactions) outlives `clinksql serve`, which runs a postgres-cdc
// stream over table src -> an updating GROUP BY k (COUNT, SUM, MIN, MAX) -> a Postgres upsert sink, while the
// test inserts, updates and deletes src's rows; clinksql is killed with SIGKILL at seeded random moments (1 to 3
// times, half of them right after a "checkpoint completed" line, before the sink's COMMIT PREPARED) and restarted
// on the same data directory each time. The sink table must end up equal to Postgres' own GROUP BY over src
// (polled, with the difference on timeout), and no prepared transaction may be left once the server stopped.
//
// CRASH_N iterations (2 with -short, 200 otherwise), seeds from CRASH_SEED (default 1). A failing iteration keeps
// its data directory and logs in /tmp/crash-pg-<seed>.
func TestCrashKill9Postgres(t *testing.T) {
	if _, err := pgtest.FindPostgres(); err != nil && os.Getenv("CI") != "true" {
		t.Skipf("%v: this test needs PostgreSQL 15", err)
	}
	ss := seeds(t)
	if testing.Short() && os.Getenv("CRASH_N") == "" && os.Getenv("CRASH_SEED") == "" {
		ss = ss[:2]
	}
	start := time.Now()
	kills := 0
	for _, seed := range ss {
		t.Run(fmt.Sprintf("seed-%d", seed), func(t *testing.T) { kills += runPostgresIteration(t, seed) })
	}
	t.Logf("%d iterations, %d kill -9s, wall time %s", len(ss), kills, time.Since(start).Round(time.Second))
}

// runPostgresIteration runs one iteration and returns the kills that hit a running process.
func runPostgresIteration(t *testing.T, seed int64) int {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x9e3779b97f4a7c15))
	pg := pgtest.StartT(t, pgtest.Options{Durable: true, Logical: true, MaxPreparedTransactions: 20})
	db := pg.ConnectT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dir := t.TempDir()
	it := &iteration{dir: dir, data: filepath.Join(dir, "data"), logs: filepath.Join(dir, "logs")}
	if err := os.MkdirAll(it.logs, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, p := range it.procs {
			p.kill()
		}
		if t.Failed() || os.Getenv("CRASH_KEEP") == "1" {
			keep := fmt.Sprintf("/tmp/crash-pg-%d", seed)
			os.RemoveAll(keep)
			if out, err := exec.Command("cp", "-a", dir, keep).CombinedOutput(); err != nil {
				t.Logf("keeping %s: %v %s", dir, err, out)
			} else if t.Failed() {
				t.Logf("FAILED seed %d: data directory and logs kept in %s; replay with CRASH_SEED=%d go test -run TestCrashKill9Postgres -v ./tests/crash/", seed, keep, seed)
			}
		}
	})
	if _, err := db.Exec(ctx, `CREATE TABLE agg (k bigint PRIMARY KEY, n bigint NOT NULL, s bigint, lo bigint, hi bigint)`); err != nil {
		t.Fatal(err)
	}
	src := newPGSource()
	srcDDL, err := src.ddl(ctx, pg, db, rng)
	if err != nil {
		t.Fatal(err)
	}
	parallelism := 1 + rng.IntN(2)
	interval := time.Duration(100+rng.IntN(400)) * time.Millisecond
	nkills := 1 + rng.IntN(3)
	t.Logf("seed %d: %v, parallelism %d, checkpoint interval %s, %d kills", seed, src, parallelism, interval, nkills)
	stmts := append([]string{
		fmt.Sprintf("SET checkpoint.interval = '%dms'", interval.Milliseconds()),
		fmt.Sprintf("SET parallelism = %d", parallelism),
	}, srcDDL...)
	stmts = append(stmts,
		fmt.Sprintf(`CREATE SINK agg (k BIGINT, n BIGINT, s BIGINT, lo BIGINT, hi BIGINT, PRIMARY KEY (k) NOT ENFORCED)
  WITH (connector = 'postgres', url = '%s', 'table-name' = 'public.agg')`, pg.DSN()),
		`INSERT INTO agg SELECT k, COUNT(*), SUM(v), MIN(v), MAX(v) FROM src GROUP BY k`)

	// Each kill comes at a random moment of its run, or (half of them) right after the nth "checkpoint
	// completed" line: between a checkpoint's completion and its sink's COMMIT PREPARED, when the line comes early
	// enough.
	type pgKill struct {
		after time.Duration
		nth   int // 0: not aimed
	}
	plan := make([]pgKill, nkills)
	for i := range plan {
		plan[i].after = time.Duration(200+rng.IntN(3800)) * time.Millisecond
		if rng.IntN(2) == 0 {
			plan[i].nth = 1 + rng.IntN(6)
		}
	}
	var hit chan struct{}
	arm := func(i int) {
		hit = nil
		if i < len(plan) && plan[i].nth > 0 {
			hit = make(chan struct{})
			it.arm = &lineTrigger{re: completedRe, nth: plan[i].nth, hit: hit}
		}
	}
	arm(0)
	p, err := startServe(it)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := connect(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range stmts {
		if _, err := conn.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", firstLine(s), err)
		}
	}
	conn.Close(context.Background())
	driven := make(chan error, 1)
	driver := pg.ConnectT(t) // its own connection: the harness reads pg_prepared_xacts meanwhile
	go func() { driven <- src.drive(ctx, driver) }()

	kills := 0
	var at []string
	for i, k := range plan {
		from := p.started
		if i == 0 {
			from = time.Now()
		}
		how := "moment"
		select {
		case <-p.exited:
			t.Fatalf("run %d exited by itself: %v\n%s", it.runs, p.err, tail(p.log, 30))
		case <-hit:
			how = fmt.Sprintf("completed#%d", k.nth)
		case <-time.After(time.Until(from.Add(k.after))):
		}
		p.kill()
		if p.killed.Load() {
			kills++
		}
		var prepared int
		_ = db.QueryRow(ctx, `SELECT count(*) FROM pg_prepared_xacts`).Scan(&prepared)
		at = append(at, fmt.Sprintf("%s(%s, %d prepared)", time.Since(p.started).Round(time.Millisecond), how, prepared))
		arm(i + 1)
		if p, err = startServe(it); err != nil {
			t.Fatal(err)
		}
	}
	if err := <-driven; err != nil {
		t.Fatalf("driving the source: %v", err)
	}
	want, err := src.expected(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if err := waitTable(ctx, db, p, want, 2*time.Minute); err != nil {
		t.Fatalf("after %d kills at %v: %v", kills, at, err)
	}
	if err := p.waitReady(time.Minute); err != nil { // a SIGTERM before the server's handler would kill it
		t.Fatal(err)
	}
	if err := stopServe(p); err != nil {
		t.Fatal(err)
	}
	var left []string
	rows, err := db.Query(ctx, `SELECT gid FROM pg_prepared_xacts`)
	if err == nil {
		left, err = pgx.CollectRows(rows, pgx.RowTo[string])
	}
	if err != nil {
		t.Fatal(err)
	}
	if len(left) > 0 {
		t.Errorf("prepared transactions left after the server stopped: %v", left)
	}
	if got, err := aggRows(ctx, db); err != nil || !slices.Equal(got, want) {
		t.Errorf("after the server stopped the table changed: %v", diffRows(got, want))
	}
	if c, ok := src.(*cdcSource); ok {
		t.Logf("ok: %d runs, killed at %v; %d transactions on the source, %d rows and %d groups at the end", it.runs, at, c.txns, c.next, len(want))
	} else {
		t.Logf("ok: %d runs, killed at %v", it.runs, at)
	}
	return kills
}

// aggRows reads the sink table, rows as "k|n|s|lo|hi", sorted.
func aggRows(ctx context.Context, db *pgx.Conn) ([]string, error) {
	rows, err := db.Query(ctx, `SELECT k::text || '|' || n || '|' || coalesce(s::text, 'NULL') || '|' ||
		coalesce(lo::text, 'NULL') || '|' || coalesce(hi::text, 'NULL') FROM agg`)
	if err != nil {
		return nil, err
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	slices.Sort(out)
	return out, err
}

// waitTable polls the sink table until it equals want, failing early when the job FAILED; on timeout the error
// holds the difference.
func waitTable(ctx context.Context, db *pgx.Conn, p *proc, want []string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var got []string
	var err error
	for time.Now().Before(deadline) {
		if got, err = aggRows(ctx, db); err == nil && slices.Equal(got, want) {
			return nil
		}
		select {
		case <-p.exited:
			return fmt.Errorf("the server exited: %v\n%s", p.err, tail(p.log, 30))
		case <-time.After(200 * time.Millisecond):
		}
		if c, cerr := connect(ctx, p); cerr == nil {
			jobs, jerr := showJobs(ctx, c)
			c.Close(context.Background())
			for id, j := range jobs {
				if jerr == nil && j["state"] == "FAILED" {
					return fmt.Errorf("%s FAILED: %s", id, j["error"])
				}
			}
		}
	}
	if err != nil {
		return fmt.Errorf("reading the sink table: %v", err)
	}
	return fmt.Errorf("the sink table does not equal the GROUP BY over the source after %s: %s", timeout, diffRows(got, want))
}

// diffRows says which keys' rows are missing, extra or different.
func diffRows(got, want []string) string {
	byKey := func(rows []string) map[string]string {
		m := map[string]string{}
		for _, r := range rows {
			k, _, _ := strings.Cut(r, "|")
			m[k] = r
		}
		return m
	}
	g, w := byKey(got), byKey(want)
	var lines []string
	for k, r := range w {
		switch gr, ok := g[k]; {
		case !ok:
			lines = append(lines, "missing "+r)
		case gr != r:
			lines = append(lines, "got "+gr+", want "+r)
		}
	}
	for k, r := range g {
		if _, ok := w[k]; !ok {
			lines = append(lines, "extra "+r)
		}
	}
	slices.Sort(lines)
	if len(lines) > 20 {
		lines = append(lines[:20], fmt.Sprintf("... %d more", len(lines)-20))
	}
	return fmt.Sprintf("%d rows, want %d: %s", len(got), len(want), strings.Join(lines, "; "))
}
