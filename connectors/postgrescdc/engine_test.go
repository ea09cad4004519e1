package postgrescdc_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/jackc/pgx/v5"

	"github.com/clinksql/clinksql/engine"
	"github.com/clinksql/clinksql/tests/pgtest"
)

func pgExec(t testing.TB, c *pgx.Conn, sql string, args ...any) {
	t.Helper()
	if _, err := c.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// openEngine opens an engine on dir with a checked allocator; close closes it and checks for leaks.
func openEngine(t *testing.T, dir string) (*engine.Session, func()) {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	e, err := engine.Open(engine.Config{DataDir: dir, Alloc: mem})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	closeFn := func() {
		if closed {
			return
		}
		closed = true
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := e.Close(ctx); err != nil {
			t.Errorf("close: %v", err)
		}
		mem.AssertSize(t, 0)
	}
	t.Cleanup(closeFn)
	return e.NewSession(), closeFn
}

func run(t testing.TB, s *engine.Session, sql string) [][]*string {
	t.Helper()
	res, err := s.Execute(context.Background(), sql)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return res[len(res)-1].Rows
}

func lines(rows [][]*string) []string {
	var out []string
	for _, r := range rows {
		parts := make([]string, len(r))
		for i, v := range r {
			if v != nil {
				parts[i] = *v
			}
		}
		out = append(out, strings.Join(parts, "|"))
	}
	return out
}

const pgGroupBy = `SELECT k::text || '|' || count(*) || '|' || sum(v) FROM src GROUP BY k ORDER BY k`

// waitView polls the view until it equals Postgres' own GROUP BY over the table (a minute at most).
func waitView(t testing.TB, s *engine.Session, c *pgx.Conn, what string) {
	t.Helper()
	want := strings.Join(pgtest.Lines(t, c, pgGroupBy), "\n")
	var got string
	for end := time.Now().Add(time.Minute); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		got = strings.Join(lines(run(t, s, `SELECT k, n, sv FROM mv ORDER BY k`)), "\n")
		if got == want {
			return
		}
	}
	t.Fatalf("%s: the view\n%s\nwant Postgres' GROUP BY\n%s", what, got, want)
}

func streamDDL(pg *pgtest.Postgres, slot string, pk ...string) string {
	cols := "id INT, k INT, v BIGINT"
	if len(pk) > 0 {
		cols += ", PRIMARY KEY (" + pk[0] + ") NOT ENFORCED"
	}
	return fmt.Sprintf(`CREATE STREAM s (`+cols+`) WITH (connector = 'postgres-cdc',
		hostname = '127.0.0.1', port = '%d', username = 'postgres', 'database-name' = 'postgres',
		'table-name' = 'src', 'slot.name' = '%s', sslmode = 'disable')`, pg.Port, slot)
}

// mutate runs one random transaction of inserts, updates (of the value, the group and, with a primary key
// identity, the key) and deletes.
func mutate(t testing.TB, c *pgx.Conn, rng *rand.Rand, next *int) {
	t.Helper()
	ctx := context.Background()
	tx, err := c.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for range 1 + rng.IntN(20) {
		var sql string
		switch rng.IntN(5) {
		case 0, 1:
			*next++
			sql = fmt.Sprintf(`INSERT INTO src VALUES (%d, %d, %d)`, *next, rng.IntN(10), rng.IntN(1000)-200)
		case 2:
			sql = fmt.Sprintf(`UPDATE src SET v = v + %d WHERE id %% 17 = %d`, rng.IntN(50), rng.IntN(17))
		case 3:
			sql = fmt.Sprintf(`UPDATE src SET k = %d WHERE id = (SELECT id FROM src ORDER BY id OFFSET %d LIMIT 1)`, rng.IntN(12), rng.IntN(50))
		case 4:
			sql = fmt.Sprintf(`DELETE FROM src WHERE id %% 23 = %d`, rng.IntN(23))
		}
		if _, err := tx.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	if rng.IntN(3) == 0 {
		*next++
		if _, err := tx.Exec(ctx, `UPDATE src SET id = $1 WHERE id = (SELECT min(id) FROM src)`, *next); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
}

// The initial snapshot and then streamed INSERT, UPDATE (value, group, primary key) and DELETE, through the real
// engine into a materialized GROUP BY: the view equals Postgres' own GROUP BY over the table, with REPLICA
// IDENTITY FULL (old rows from the WAL) and DEFAULT (old rows from the source's state).
func TestEngineGroupByMatchesPostgres(t *testing.T) {
	for _, ident := range []string{"FULL", "DEFAULT"} {
		t.Run(ident, func(t *testing.T) {
			pg := pgtest.StartT(t, pgtest.Options{Logical: true})
			c := pg.ConnectT(t)
			pgExec(t, c, `CREATE TABLE src (id INT PRIMARY KEY, k INT, v BIGINT)`)
			pgExec(t, c, `ALTER TABLE src REPLICA IDENTITY `+ident)
			pgExec(t, c, `INSERT INTO src SELECT g, g % 10, (g * 7919) % 1000 FROM generate_series(1, 5000) g`)
			next := 5000
			s, _ := openEngine(t, t.TempDir())
			run(t, s, `SET checkpoint.interval = '200ms'`)
			// DEFAULT declares the table's key as Flink CDC users do; FULL does not.
			var pk []string
			if ident == "DEFAULT" {
				pk = []string{"id"}
			}
			run(t, s, streamDDL(pg, "slot_"+strings.ToLower(ident), pk...))
			run(t, s, `CREATE MATERIALIZED VIEW mv AS SELECT k, COUNT(*) AS n, SUM(v) AS sv FROM s GROUP BY k`)
			waitView(t, s, c, "after the snapshot")
			rng := rand.New(rand.NewPCG(14, uint64(len(ident))))
			for round := range 8 {
				for range 5 {
					mutate(t, c, rng, &next)
				}
				waitView(t, s, c, fmt.Sprintf("round %d", round))
			}
			pgExec(t, c, `DELETE FROM src WHERE k = 3`)
			waitView(t, s, c, "a whole group deleted")
		})
	}
}

// The engine closes with WAL written after its last checkpoint and more written while it is down: reopened, the
// job restores from its checkpoint and the view equals Postgres' GROUP BY (nothing lost, nothing twice).
func TestEngineRestartResumes(t *testing.T) {
	pg := pgtest.StartT(t, pgtest.Options{Logical: true})
	c := pg.ConnectT(t)
	pgExec(t, c, `CREATE TABLE src (id INT PRIMARY KEY, k INT, v BIGINT)`)
	pgExec(t, c, `INSERT INTO src SELECT g, g % 10, g FROM generate_series(1, 2000) g`)
	next := 2000
	dir := t.TempDir()
	s, closeEngine := openEngine(t, dir)
	run(t, s, `SET checkpoint.interval = '100ms'`)
	run(t, s, streamDDL(pg, "slot_restart"))
	run(t, s, `CREATE MATERIALIZED VIEW mv AS SELECT k, COUNT(*) AS n, SUM(v) AS sv FROM s GROUP BY k`)
	waitView(t, s, c, "after the snapshot")
	rng := rand.New(rand.NewPCG(14, 15))
	for round := range 3 {
		for range 10 {
			mutate(t, c, rng, &next)
		}
		if round < 2 {
			waitView(t, s, c, fmt.Sprintf("round %d", round))
		}
	}
	closeEngine()
	for range 10 {
		mutate(t, c, rng, &next)
	}
	s, _ = openEngine(t, dir)
	waitView(t, s, c, "after the restart")
	for range 10 {
		mutate(t, c, rng, &next)
	}
	waitView(t, s, c, "streaming after the restart")
}
