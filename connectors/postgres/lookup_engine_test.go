package postgres_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/clinksql/clinksql/connectors/connectortest"
	"github.com/clinksql/clinksql/engine"
	"github.com/clinksql/clinksql/internal/enginetest"
	"github.com/clinksql/clinksql/sqlerr"
	"github.com/clinksql/clinksql/tests/pgtest"
)

func resultRows(res []*engine.Result) []string {
	var rows [][]*string
	for _, r := range res {
		rows = append(rows, r.Rows...)
	}
	return connectortest.SortedLines(rows)
}

// A lookup join through the engine against Postgres 15: a materialized view joins each order with the row of the
// Postgres table its key has when the order is looked up (processing time: rows already emitted keep what they
// found; later ones see the table's changes), LEFT pads a key the table does not hold, across a restart of the
// engine; and what is refused.
func TestEngineLookupJoin(t *testing.T) {
	pg := pgtest.StartT(t, pgtest.Options{})
	db := pg.ConnectT(t)
	pgExec(t, db, `CREATE TABLE dim (id int PRIMARY KEY, name text, price numeric(6,2))`)
	pgExec(t, db, `INSERT INTO dim VALUES (1, 'one', 1.50), (2, 'two', NULL)`)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	e := enginetest.Open(t, dir)
	run := runner(t, ctx, e.NewSession())
	run(`SET parallelism = 2`)
	run(`CREATE STREAM orders_in (id INT, k BIGINT)`)
	run(`CREATE VIEW orders AS SELECT id, k, PROCTIME() AS p FROM orders_in`)
	run(fmt.Sprintf(`CREATE STREAM dim (id INT, name VARCHAR, price DECIMAL(6,2)) WITH (connector = 'postgres',
		url = 'postgres://postgres@127.0.0.1:%d/postgres', 'table-name' = 'dim')`, pg.Port))
	// k is BIGINT, dim.id INT: the order's key is cast to the table's type.
	run(`CREATE MATERIALIZED VIEW lj AS SELECT o.id, d.name, d.price FROM orders o
		LEFT JOIN dim FOR SYSTEM_TIME AS OF o.p AS d ON o.k = d.id`)
	run(`CREATE MATERIALIZED VIEW ij AS SELECT o.id, d.name FROM orders AS o
		JOIN dim FOR SYSTEM_TIME AS OF o.p AS d ON d.id = o.k AND d.name <> 'two'`)
	run(`INSERT INTO orders_in VALUES (1, 1), (2, 2), (3, 3), (4, NULL)`)
	run(`FLUSH`)
	if got, want := resultRows(run(`SELECT * FROM lj`)), []string{"1|one|1.50", "2|two|NULL", "3|NULL|NULL", "4|NULL|NULL"}; !slices.Equal(got, want) {
		t.Fatalf("lj: %q, want %q", got, want)
	}
	if got, want := resultRows(run(`SELECT * FROM ij`)), []string{"1|one"}; !slices.Equal(got, want) {
		t.Fatalf("ij: %q, want %q", got, want)
	}
	explain := strings.Join(resultRows(run(`EXPLAIN SELECT o.id, d.name FROM orders o JOIN dim FOR SYSTEM_TIME AS OF o.p d ON o.k = d.id`)), "\n")
	if !strings.Contains(explain, "LookupJoin: INNER") || !strings.Contains(explain, "lookup: table dim") {
		t.Fatalf("EXPLAIN:\n%s", explain)
	}

	// The table changes; the engine restarts. Orders joined before keep what they found, new ones see the change.
	pgExec(t, db, `UPDATE dim SET name = 'uno' WHERE id = 1`)
	pgExec(t, db, `INSERT INTO dim VALUES (3, 'three', 3.00)`)
	if err := e.Close(ctx); err != nil {
		t.Fatal(err)
	}
	e = enginetest.Open(t, dir)
	run = runner(t, ctx, e.NewSession())
	run(`INSERT INTO orders_in VALUES (5, 1), (6, 3)`)
	run(`FLUSH`)
	if got, want := resultRows(run(`SELECT * FROM lj`)), []string{"1|one|1.50", "2|two|NULL", "3|NULL|NULL", "4|NULL|NULL",
		"5|uno|1.50", "6|three|3.00"}; !slices.Equal(got, want) {
		t.Fatalf("lj after the change and a restart: %q, want %q", got, want)
	}

	s := e.NewSession()
	for _, tc := range []struct{ sql, code, msg string }{
		{`SELECT * FROM dim`, sqlerr.FeatureNotSupported, "read only by key"},
		{`SELECT o.id FROM orders o JOIN dim FOR SYSTEM_TIME AS OF o.id AS d ON o.k = d.id`, sqlerr.FeatureNotSupported, "processing-time attribute"},
		{`SELECT o.id FROM orders o JOIN dim FOR SYSTEM_TIME AS OF o.p AS d ON o.k + 1 = d.id + 1`, sqlerr.FeatureNotSupported, "columns of \"dim\" as they are"},
		{fmt.Sprintf(`CREATE STREAM d2 (id INT) WITH (connector = 'postgres', url = 'postgres://postgres@127.0.0.1:%d/postgres',
			'table-name' = 'dim', 'lookup.cache.ttl' = 'x')`, pg.Port), sqlerr.InvalidParameter, "lookup.cache.ttl"},
		{fmt.Sprintf(`CREATE STREAM d2 (id INT, nope INT) WITH (connector = 'postgres', url = 'postgres://postgres@127.0.0.1:%d/postgres',
			'table-name' = 'dim')`, pg.Port), sqlerr.UndefinedColumn, "no column nope"},
	} {
		_, err := s.Execute(ctx, tc.sql)
		if sqlerr.Code(err) != tc.code || !strings.Contains(fmt.Sprint(err), tc.msg) {
			t.Errorf("%s: %v, want %s %q", tc.sql, err, tc.code, tc.msg)
		}
	}
}
