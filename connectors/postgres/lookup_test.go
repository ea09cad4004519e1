package postgres

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clinksql/clinksql/connectors"
	"github.com/clinksql/clinksql/connectors/connectortest"
	"github.com/clinksql/clinksql/exec/optest"
	"github.com/clinksql/clinksql/exec/textform"
	"github.com/clinksql/clinksql/sqlerr"
	"github.com/clinksql/clinksql/tests/pgtest"
)

var dimSchema = optest.NullableSchema("id", arrow.PrimitiveTypes.Int64, "region", arrow.BinaryTypes.String,
	"name", arrow.BinaryTypes.String, "price", &arrow.Decimal128Type{Precision: 10, Scale: 2},
	"at", &arrow.TimestampType{Unit: arrow.Microsecond}, "ok", arrow.FixedWidthTypes.Boolean)

func lookupRows(t *testing.T, rec arrow.RecordBatch) []string {
	t.Helper()
	rows, err := textform.Rows(rec)
	if err != nil {
		t.Fatal(err)
	}
	return connectortest.SortedLines(rows)
}

// A lookup against a real Postgres 15: one key column and two, values of every supported type read back
// exactly, NULLs, keys the table does not hold, and a reconnect after the server dropped the connection.
func TestLookupTable(t *testing.T) {
	pg := pgtest.StartT(t, pgtest.Options{})
	db := pg.ConnectT(t)
	ctx := context.Background()
	for _, q := range []string{
		`CREATE TABLE dim (id bigint, region varchar(8), name text, price numeric(10,2), at timestamp, ok boolean, extra int,
			PRIMARY KEY (id, region))`,
		`INSERT INTO dim VALUES (1, 'eu', 'one', 1.50, '2026-01-01 00:00:01.25', true, 7),
			(1, 'us', 'uno', NULL, NULL, false, 8), (2, 'eu', 'it''s', 99999999.99, '1999-12-31 23:59:59', NULL, 9)`,
	} {
		if _, err := db.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	opts := map[string]string{"url": pg.DSN(), "table-name": "dim", "lookup.cache.max-rows": "100",
		"lookup.cache.ttl": "10 s", "lookup.max-retries": "2"}
	spec := connectors.Spec{Object: "dim", Schema: dimSchema}
	c := lookupConnector{}
	if err := c.Validate(spec, opts, connectors.Env{}); err != nil {
		t.Fatal(err)
	}
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	lookup := func(keys []int, keySchema *arrow.Schema, rows ...[]any) []string {
		t.Helper()
		plan, err := c.BuildLookup(spec, opts, keys, connectors.Env{})
		if err != nil {
			t.Fatal(err)
		}
		if plan.CacheRows != 100 || plan.CacheTTL != 10*time.Second || plan.MaxRetries != 2 {
			t.Fatalf("plan %+v", plan)
		}
		tbl := plan.New(0)
		defer tbl.Close()
		kb := optest.BuildBatch(mem, keySchema, rows)
		defer kb.Release()
		res, err := tbl.Lookup(ctx, mem, kb.Rec)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Release()
		if !res.Schema().Equal(dimSchema) {
			t.Fatalf("schema %s", res.Schema())
		}
		return lookupRows(t, res)
	}
	one := optest.NullableSchema("id", arrow.PrimitiveTypes.Int64)
	got := lookup([]int{0}, one, []any{1}, []any{3})
	want := []string{"1|eu|one|1.50|2026-01-01 00:00:01.25|t", "1|us|uno|NULL|NULL|f"}
	if !slices.Equal(got, want) {
		t.Fatalf("by id: %q, want %q", got, want)
	}
	two := optest.NullableSchema("region", arrow.BinaryTypes.String, "id", arrow.PrimitiveTypes.Int64)
	got = lookup([]int{1, 0}, two, []any{"eu", 2}, []any{"us", 2}, []any{"us", 1})
	want = []string{"1|us|uno|NULL|NULL|f", "2|eu|it's|99999999.99|1999-12-31 23:59:59|NULL"}
	if !slices.Equal(got, want) {
		t.Fatalf("by (region, id): %q, want %q", got, want)
	}

	// The server drops the connection: the failed lookup reports it, the next one connects again.
	plan, err := c.BuildLookup(spec, opts, []int{0}, connectors.Env{})
	if err != nil {
		t.Fatal(err)
	}
	tbl := plan.New(0)
	defer tbl.Close()
	kb := optest.BuildBatch(mem, one, [][]any{{2}})
	defer kb.Release()
	res, err := tbl.Lookup(ctx, mem, kb.Rec)
	if err != nil {
		t.Fatal(err)
	}
	res.Release()
	if _, err := db.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND datname = 'postgres'`); err != nil {
		t.Fatal(err)
	}
	if res, err = tbl.Lookup(ctx, mem, kb.Rec); err == nil {
		res.Release()
		t.Fatal("a lookup over a terminated connection succeeded")
	}
	if res, err = tbl.Lookup(ctx, mem, kb.Rec); err != nil {
		t.Fatalf("no reconnect: %v", err)
	}
	if got := lookupRows(t, res); len(got) != 1 || !strings.HasPrefix(got[0], "2|eu|it's") {
		t.Fatalf("after reconnect: %q", got)
	}
	res.Release()
}

// CREATE STREAM's checks: options, column types, the table and its columns; and a scan is refused.
func TestLookupOptions(t *testing.T) {
	pg := pgtest.StartT(t, pgtest.Options{})
	db := pg.ConnectT(t)
	if _, err := db.Exec(context.Background(), `CREATE TABLE d2 (id int, name text)`); err != nil {
		t.Fatal(err)
	}
	ok := optest.NullableSchema("id", arrow.PrimitiveTypes.Int32, "name", arrow.BinaryTypes.String)
	c := lookupConnector{}
	for _, tc := range []struct {
		schema *arrow.Schema
		opts   map[string]string
		code   string
		msg    string
	}{
		{ok, map[string]string{"table-name": "d2"}, sqlerr.InvalidParameter, "needs 'url'"},
		{ok, map[string]string{"url": pg.DSN(), "table-name": "d2", "lookup.cache.max-rows": "-1"}, sqlerr.InvalidParameter, "lookup.cache.max-rows"},
		{ok, map[string]string{"url": pg.DSN(), "table-name": "d2", "lookup.cache.ttl": "soon"}, sqlerr.InvalidParameter, "lookup.cache.ttl"},
		{ok, map[string]string{"url": pg.DSN(), "table-name": "d2", "lookup.max-retries": "x"}, sqlerr.InvalidParameter, "lookup.max-retries"},
		{ok, map[string]string{"url": pg.DSN(), "table-name": "d2", "sink.buffer-flush.max-rows": "10"}, sqlerr.InvalidParameter, "option of a postgres sink"},
		{ok, map[string]string{"url": pg.DSN(), "table-name": "nope"}, sqlerr.UndefinedTable, "does not exist"},
		{optest.NullableSchema("id", arrow.PrimitiveTypes.Int32, "other", arrow.BinaryTypes.String),
			map[string]string{"url": pg.DSN(), "table-name": "d2"}, sqlerr.UndefinedColumn, "no column other"},
		{optest.NullableSchema("id", arrow.PrimitiveTypes.Int32, "name", arrow.BinaryTypes.Binary),
			map[string]string{"url": pg.DSN(), "table-name": "d2"}, sqlerr.DatatypeMismatch, "not supported"},
	} {
		err := c.Validate(connectors.Spec{Object: "d", Schema: tc.schema}, tc.opts, connectors.Env{})
		var ce *connectors.ConfigError
		if !errors.As(err, &ce) || ce.Code != tc.code || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%v: got %v, want %s %q", tc.opts, err, tc.code, tc.msg)
		}
	}
	_, err := c.Build(connectors.Spec{Object: "d", Schema: ok}, map[string]string{"url": pg.DSN(), "table-name": "d2"}, connectors.Env{})
	if sqlerr.Code(err) != sqlerr.FeatureNotSupported || !strings.Contains(err.Error(), "FOR SYSTEM_TIME AS OF") {
		t.Fatalf("a scan: %v", err)
	}
}
