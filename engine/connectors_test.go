package engine

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clinksql/clinksql/sqlerr"
)

// pins (issue 11, item 2): a connector option or column type no job could run with is refused by the CREATE
// statement, with its SQLSTATE and the position of the option or column at fault, instead of failing the job
// after its restarts; and by a later statement that plans a job over files that changed since.
func TestConnectorConfigRefusedAtCreate(t *testing.T) {
	dir := t.TempDir()
	_, s := testEngine(t, dir)
	// A Parquet file of (x BIGINT, ts TIMESTAMP(3)) to read back.
	mustExec(t, s, `CREATE SINK pq (x BIGINT, ts TIMESTAMP(3)) WITH (connector = 'parquet', path = 'pq', 'parquet.compression' = 'ZSTD')`)
	mustExec(t, s, `INSERT INTO pq VALUES (1, TIMESTAMP '2026-01-01 00:00:00')`)
	mustExec(t, s, `FLUSH`)
	mustExec(t, s, `CREATE STREAM pq_back (x BIGINT, ts TIMESTAMP(3)) WITH (connector = 'parquet', path = 'pq')`)
	equalLines(t, "pq_back", rows(t, s, `SELECT x FROM pq_back`), []string{"1"})

	for _, tc := range []struct {
		sql, code, at string // at: the text the error points at
	}{
		{`CREATE SINK s1 (x BIGINT) WITH (connector = 'parquet', path = 'o1', 'parquet.compression' = 'brotli')`,
			sqlerr.InvalidParameter, `'parquet.compression'`},
		{`CREATE SINK s2 (x BIGINT, d INTERVAL) WITH (connector = 'parquet', path = 'o2')`,
			sqlerr.DatatypeMismatch, `INTERVAL`},
		{`CREATE SINK s3 (x BIGINT) WITH (connector = 'file', format = 'csv', path = 'o3', 'csv.header' = 'yes')`,
			sqlerr.InvalidParameter, `'csv.header'`},
		{`CREATE SINK s4 (x BIGINT) WITH (connector = 'file', format = 'json', path = 'o4', 'csv.header' = 'true')`,
			sqlerr.InvalidParameter, `'csv.header'`},
		{`CREATE SINK s5 (x BIGINT) WITH (connector = 'file', format = 'json', path = 'o5', 'CSV.Header' = 'true')`,
			sqlerr.InvalidParameter, `'CSV.Header'`},
		{`CREATE STREAM f1 (x BIGINT) WITH (connector = 'file', format = 'csv', path = 'nowhere/in.csv')`,
			sqlerr.UndefinedFile, `path`},
		{`CREATE STREAM f2 (x BIGINT) WITH (connector = 'file', format = 'csv', path = 'nowhere/*.csv')`,
			sqlerr.UndefinedFile, `path`},
		{`CREATE STREAM f3 (x BIGINT) WITH (connector = 'file', format = 'csv', path = 'pq', 'source.monitor-interval' = '0s')`,
			sqlerr.InvalidParameter, `'source.monitor-interval'`},
		{`CREATE STREAM p1 (x BIGINT) WITH (connector = 'parquet', path = 'nowhere')`,
			sqlerr.UndefinedFile, `path`},
		{`CREATE STREAM p2 (x VARCHAR, ts TIMESTAMP(3)) WITH (connector = 'parquet', path = 'pq')`,
			sqlerr.DatatypeMismatch, `VARCHAR`},
		{`CREATE STREAM p3 (x BIGINT, ts INTERVAL) WITH (connector = 'parquet', path = 'pq')`,
			sqlerr.DatatypeMismatch, `INTERVAL`},
		{`CREATE STREAM g1 (x BIGINT) WITH (connector = 'datagen', 'rows-per-second' = 'NaN')`,
			sqlerr.InvalidParameter, `'rows-per-second'`},
		{`CREATE STREAM g2 (x BIGINT) WITH (connector = 'datagen', 'fields.y.kind' = 'random')`,
			sqlerr.InvalidParameter, `'fields.y.kind'`},
	} {
		_, err := s.Execute(context.Background(), tc.sql)
		e, ok := err.(*sqlerr.Error)
		if !ok || e.Code != tc.code || e.Pos != strings.Index(tc.sql, tc.at) {
			t.Errorf("%s:\n got %v (%#v)\nwant %s at %d", tc.sql, err, err, tc.code, strings.Index(tc.sql, tc.at))
		}
	}

	// The files changed since CREATE: a job over them is refused when it is planned, not 25 s later.
	mustExec(t, s, `CREATE SINK back (x BIGINT) WITH (connector = 'blackhole')`)
	if err := os.RemoveAll(filepath.Join(dir, "pq")); err != nil {
		t.Fatal(err)
	}
	for _, sql := range []string{`INSERT INTO back SELECT x FROM pq_back`, `SELECT x FROM pq_back`} {
		if _, err := s.Execute(context.Background(), sql); sqlerr.Code(err) != sqlerr.UndefinedFile {
			t.Errorf("%s: %v, want 58P01", sql, err)
		}
	}
}
