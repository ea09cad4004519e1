package difftest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clinksql/clinksql/engine"
	"github.com/clinksql/clinksql/tests/pgtest"
)

// viewBatch is how many materialized views are created before one FLUSH.
const viewBatch = 12

// queriesPerRound: a fresh set of tables every so many queries.
const queriesPerRound = 60

func envInt(t *testing.T, name string, def uint64) uint64 {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		t.Fatalf("%s=%q: %v", name, v, err)
	}
	return n
}

func TestDifferential(t *testing.T) {
	bin, err := pgtest.FindPostgres()
	if err != nil {
		if errors.Is(err, pgtest.ErrNoPostgres) && os.Getenv("CI") != "true" {
			t.Skipf("%v: the differential suite needs PostgreSQL 15 (make test-tools installs postgresql-15; "+
				"PGBIN names another directory). Under CI=true this fails instead.", err)
		}
		t.Fatal(err)
	}
	defN, defSeed := uint64(500), uint64(time.Now().UnixNano()%1_000_000_000)
	if testing.Short() {
		// make test: a fixed seed, so a run is deterministic; long runs explore new seeds.
		defN, defSeed = 200, 1 // about 40 s on 2 cores, Postgres' start included
	}
	n := int(envInt(t, "DIFF_N", defN))
	seed := envInt(t, "DIFF_SEED", defSeed)
	gaps := ActiveGaps()
	t.Logf("DIFF_SEED=%d DIFF_N=%d, known gaps avoided: %s", seed, n, gaps)

	ctx := context.Background()
	sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	pg, err := pgtest.StartPostgres(sctx, bin)
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pg.Stop)
	t.Logf("%s on port %d", pg.Version, pg.Port)
	conn, err := pg.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })

	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	e, err := engine.Open(engine.Config{DataDir: t.TempDir(), Alloc: mem})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := e.Close(cctx); err != nil {
			t.Errorf("close engine: %v", err)
		}
		mem.AssertSize(t, 0)
	})
	r := NewRunner(e.NewSession(), conn, gaps)
	if err := r.ExecPG(ctx, PGSetup+"; SET statement_timeout = '30s'"); err != nil {
		t.Fatal(err)
	}

	names := []string{"t0", "t1", "t2"}
	var failed []Case
	var failedTables [][]Table
	queries, cases, pgErrors := 0, 0, 0
	kinds := map[string]int{}
	for round := 0; queries < n; round++ {
		g := NewGen(seed*1000+uint64(round), gaps)
		tables := g.Tables(names, 20)
		if err := r.Load(ctx, tables); err != nil {
			t.Fatalf("DIFF_SEED=%d round %d: load: %v", seed, round, err)
		}
		var forViews []Query
		var pgOut []Outcome
		for i := 0; i < queriesPerRound && queries < n; i++ {
			q := g.Query(names)
			queries++
			kinds[q.Kind]++
			c := r.RunAdHoc(ctx, q)
			cases++
			if c.PG.Err != nil {
				pgErrors++
			}
			if c.Verdict != "" {
				failed, failedTables = append(failed, c), append(failedTables, tables)
			}
			if c.PG.Err == nil || strings.HasPrefix(c.PG.Code, "22") {
				forViews, pgOut = append(forViews, q), append(pgOut, c.PG)
			}
		}
		for i := 0; i < len(forViews); i += viewBatch {
			j := min(i+viewBatch, len(forViews))
			for _, c := range r.RunViews(ctx, forViews[i:j], pgOut[i:j]) {
				cases++
				if c.Verdict != "" {
					failed, failedTables = append(failed, c), append(failedTables, tables)
				}
			}
		}
	}
	t.Logf("%d queries %v, %d cases (ad hoc and view), %d with a Postgres data error, %d mismatches; tolerated by gaps: %v",
		queries, kinds, cases, pgErrors, len(failed), r.GapHits)
	for i, c := range failed {
		var sb strings.Builder
		fmt.Fprintf(&sb, "mismatch %d (DIFF_SEED=%d, %s, %s query): %s\n  clinksql: %s\n  Postgres: %s\n  result in Postgres: %s\n  result in clinksql: %s\n",
			i+1, seed, c.Mode, c.Q.Kind, c.Verdict, c.Q.CK, c.Q.PG, c.PG, c.CK)
		if i < 5 {
			small, mc := r.Minimize(ctx, c.Q, c.Mode, failedTables[i], 40)
			fmt.Fprintf(&sb, "  minimal repro (%s):\n%s", mc.Verdict, indent(Repro(Case{Q: c.Q, Mode: c.Mode}, small)))
		}
		t.Error(sb.String())
	}
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n    ") + "\n"
}
