package engine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// tag runs one statement and returns its command tag.
func tag(t *testing.T, s *Session, sql string) string {
	t.Helper()
	res, err := s.Execute(context.Background(), sql)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return res[len(res)-1].Tag
}

// segments counts the segment files of the one stream's log under dir.
func segments(t *testing.T, dir string) int {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(onlyDir(t, filepath.Join(dir, "streams")), "seg-*"))
	if err != nil {
		t.Fatal(err)
	}
	return len(files)
}

// pins: a table's statements answer Postgres' command tags with their row counts; its rows and a view over it
// survive a restart of the engine, and statements after the restart continue from the rows before it; a failed
// statement changes nothing (no segment, same rows); a prepared UPDATE and DELETE take typed parameters.
func TestTableStatementsAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	e, s := testEngine(t, dir)
	if got := tag(t, s, `CREATE TABLE t (k INT PRIMARY KEY, v VARCHAR, n BIGINT)`); got != "CREATE TABLE" {
		t.Fatalf("create: %q", got)
	}
	equalLines(t, "describe", rows(t, s, `DESCRIBE t`), []string{"k|INT|NO|PRIMARY KEY", "v|VARCHAR|YES|", "n|BIGINT|YES|"})
	mustExec(t, s, `CREATE MATERIALIZED VIEW per_v AS SELECT v, COUNT(*) AS c, SUM(n) AS total FROM t GROUP BY v`)
	for _, c := range []struct{ sql, tag string }{
		{`INSERT INTO t VALUES (1, 'a', 10), (2, 'a', 20), (3, 'b', 30)`, "INSERT 0 3"},
		{`INSERT INTO t VALUES (3, 'a', 31), (4, 'b', 40)`, "INSERT 0 2"},
		{`UPDATE t SET n = n + 1 WHERE v = 'a'`, "UPDATE 3"},
		{`UPDATE t SET v = 'c' WHERE k = 99`, "UPDATE 0"},
		{`DELETE FROM t WHERE k = 1`, "DELETE 1"},
	} {
		if got := tag(t, s, c.sql); got != c.tag {
			t.Fatalf("%s: tag %q, want %q", c.sql, got, c.tag)
		}
	}
	mustExec(t, s, `FLUSH`)
	// 1 deleted; 2 a 21; 3 a 32; 4 b 40.
	want := []string{"2|a|21", "3|a|32", "4|b|40"}
	equalLines(t, "rows", rows(t, s, `SELECT * FROM t ORDER BY k`), want)
	equalLines(t, "view", rows(t, s, `SELECT * FROM per_v ORDER BY v`), []string{"a|2|53", "b|1|40"})
	closeEngine(t, e)

	e, s = testEngine(t, dir)
	equalLines(t, "rows after restart", rows(t, s, `SELECT * FROM t ORDER BY k`), want)
	n := segments(t, dir)
	if got := execErr(t, s, `UPDATE t SET n = 100 / (n - 40)`); got[:5] != "22012" {
		t.Fatalf("division by zero: %s", got)
	}
	if got := execErr(t, s, `INSERT INTO t VALUES (5, 'x', 1), (NULL, 'y', 2)`); got != `23502 at 1:15: null value in column "k" of relation "t" violates not-null constraint` {
		t.Fatalf("NULL key: %s", got)
	}
	if segments(t, dir) != n {
		t.Fatal("a failed statement appended a segment")
	}
	equalLines(t, "rows after failed statements", rows(t, s, `SELECT * FROM t ORDER BY k`), want)

	ctx := context.Background()
	p, err := s.Prepare(ctx, `UPDATE t SET n = $1 WHERE k = $2`, nil)
	if err != nil {
		t.Fatal(err)
	}
	one, two := "7", "2"
	if res, err := s.ExecutePrepared(ctx, p, []*string{&one, &two}); err != nil || res.Tag != "UPDATE 1" {
		t.Fatalf("prepared UPDATE: %v %v", res, err)
	}
	p, err = s.Prepare(ctx, `DELETE FROM t WHERE n > $1`, nil)
	if err != nil {
		t.Fatal(err)
	}
	lim := "35"
	if res, err := s.ExecutePrepared(ctx, p, []*string{&lim}); err != nil || res.Tag != "DELETE 1" {
		t.Fatalf("prepared DELETE: %v %v", res, err)
	}
	mustExec(t, s, `FLUSH`)
	equalLines(t, "rows at the end", rows(t, s, `SELECT * FROM t ORDER BY k`), []string{"2|a|7", "3|a|32"})
	equalLines(t, "view at the end", rows(t, s, `SELECT * FROM per_v ORDER BY v`), []string{"a|2|39"})

	// DROP removes the table's storage.
	mustExec(t, s, `DROP MATERIALIZED VIEW per_v`)
	mustExec(t, s, `DROP TABLE t`)
	if es, _ := os.ReadDir(filepath.Join(dir, "streams")); len(es) != 0 {
		t.Fatalf("streams/ after DROP TABLE: %v", es)
	}
}

// pins: SUBSCRIBE follows a table's changes: its rows, then an upsert as -1 old / +1 new, a DELETE as -1.
func TestTableSubscribe(t *testing.T) {
	_, s := testEngine(t, t.TempDir())
	mustExec(t, s, `CREATE TABLE t (k INT PRIMARY KEY, v VARCHAR)`)
	mustExec(t, s, `INSERT INTO t VALUES (1, 'a'), (2, 'b')`)
	mustExec(t, s, `BEGIN`)
	mustExec(t, s, `DECLARE c CURSOR FOR SUBSCRIBE TO t`)
	_, rest := oneTime(t, "snapshot", splitSubRows(t, sortedLines(rows(t, s, `FETCH ALL c`))), 0)
	equalLines(t, "snapshot", rest, []string{"1|1|a", "1|2|b"})
	mustExec(t, s, `INSERT INTO t VALUES (1, 'z')`)
	mustExec(t, s, `DELETE FROM t WHERE k = 2`)
	mustExec(t, s, `FLUSH`)
	var got []string
	for len(got) < 3 {
		more := rows(t, s, `FETCH ALL c WITH (timeout = '5s')`)
		if len(more) == 0 {
			t.Fatalf("changes so far %q", got)
		}
		got = append(got, more...)
	}
	var changes []string
	for _, r := range splitSubRows(t, got) {
		changes = append(changes, r.rest)
	}
	equalLines(t, "changes", sortedLines(changes), []string{"-1|1|a", "-1|2|b", "1|1|z"})
	mustExec(t, s, `COMMIT`)
}

func sortedLines(ls []string) []string {
	ls = slices.Clone(ls)
	slices.Sort(ls)
	return ls
}

// pins: statements on one table from several sessions are serialized: each UPDATE reads the rows the last one
// left, so no increment is lost, and the changelog stays consistent (the view agrees).
func TestTableConcurrentStatements(t *testing.T) {
	e, s := testEngine(t, t.TempDir())
	mustExec(t, s, `CREATE TABLE c (k INT PRIMARY KEY, n BIGINT)`)
	mustExec(t, s, `INSERT INTO c VALUES (1, 0), (2, 0)`)
	mustExec(t, s, `CREATE MATERIALIZED VIEW total AS SELECT SUM(n) AS n FROM c`)
	const sessions, each = 4, 15
	errs := make(chan error, sessions)
	for i := range sessions {
		go func() {
			ss := e.NewSession()
			for j := range each {
				sql := `UPDATE c SET n = n + 1 WHERE k = 1`
				if j%3 == 0 {
					sql = fmt.Sprintf(`INSERT INTO c VALUES (%d, %d)`, 100+i*each+j, 1)
				}
				if _, err := ss.Execute(context.Background(), sql); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range sessions {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	mustExec(t, s, `FLUSH`)
	// Per session: 5 INSERTs of n = 1 (j = 0, 3, 6, 9, 12) and 10 UPDATEs of key 1.
	equalLines(t, "key 1", rows(t, s, `SELECT n FROM c WHERE k = 1`), []string{"40"})
	equalLines(t, "rows", rows(t, s, `SELECT COUNT(*), SUM(n) FROM c`), []string{"22|60"})
	equalLines(t, "view", rows(t, s, `SELECT * FROM total`), []string{"60"})
}

// pins: INSERT INTO table SELECT ... is one statement: its tag counts the rows, a failure anywhere in the query
// (a division by zero) inserts nothing, and a self-read sees the rows before the statement.
func TestTableInsertSelect(t *testing.T) {
	dir := t.TempDir()
	_, s := testEngine(t, dir)
	mustExec(t, s, `CREATE TABLE t (k INT PRIMARY KEY, n BIGINT)`)
	mustExec(t, s, `INSERT INTO t VALUES (1, 1), (2, 2)`)
	n := segments(t, dir)
	if got := execErr(t, s, `INSERT INTO t SELECT k + 10, 10 / (n - 2) FROM t`); got[:5] != "22012" {
		t.Fatalf("division by zero: %s", got)
	}
	if segments(t, dir) != n {
		t.Fatal("a failed INSERT ... SELECT appended a segment")
	}
	// Key 2's old row (n = 2) is replaced, not gone from memory yet: the UPDATE must not divide by its n - 2.
	mustExec(t, s, `INSERT INTO t VALUES (2, 12)`)
	if got := tag(t, s, `UPDATE t SET n = 100 / (n - 2) WHERE k = 2`); got != "UPDATE 1" {
		t.Fatalf("tag %q", got)
	}
	mustExec(t, s, `INSERT INTO t VALUES (2, 2)`)
	if got := tag(t, s, `INSERT INTO t SELECT k + 1, n * 10 FROM t`); got != "INSERT 0 2" {
		t.Fatalf("tag %q", got)
	}
	equalLines(t, "rows", rows(t, s, `SELECT * FROM t ORDER BY k`), []string{"1|1", "2|10", "3|20"})
	if plan := strings.Join(rows(t, s, `EXPLAIN INSERT INTO t SELECT k, n FROM t`), "\n"); !strings.Contains(plan, "Result: upserted into table t") ||
		!strings.Contains(plan, "reads: the table's current rows") {
		t.Fatalf("EXPLAIN:\n%s", plan)
	}
}

// pins: psql's \d shows a table's key columns NOT NULL (pg_attribute.attnotnull), the others nullable.
func TestTablePsqlDescribeNotNull(t *testing.T) {
	_, s := testEngine(t, t.TempDir())
	mustExec(t, s, `CREATE TABLE clicks (user_id BIGINT, url VARCHAR, ts TIMESTAMP(3), PRIMARY KEY (user_id))`)
	_, details := describe(t, s, "d-clicks.sql")
	equalLines(t, "columns", resultLines(details[1]), []string{
		"user_id|bigint|NULL|t|NULL||",
		"url|character varying|NULL|f|NULL||",
		"ts|timestamp(3) without time zone|NULL|f|NULL||"})
}
