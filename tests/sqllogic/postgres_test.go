package sqllogic

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/clinksql/clinksql/tests/pgtest"
)

// The postgres mode replays a file against a throwaway PostgreSQL 15 cluster (package pgtest), so that the
// expected rows of the features Postgres has are Postgres' own. Only files with a line `# pg: check` run in it,
// translated where the dialects differ:
//
//   - CREATE STREAM / CREATE TABLE name (cols, WATERMARK FOR ...) WITH (...) is CREATE TABLE name (cols): the
//     WATERMARK clause, the WITH options and NOT ENFORCED go;
//   - CREATE MATERIALIZED VIEW is CREATE VIEW: Postgres evaluates it at each query over every row so far, which is
//     what a streaming view shows once FLUSH made everything visible (so a file checked here must not depend on
//     watermarks: a case that does is marked `# pg: skip <why>` on the line before it);
//   - a table (CREATE STREAM/TABLE with a PRIMARY KEY, no WITH) is Postgres' table with that key, and an INSERT
//     into it is INSERT ... ON CONFLICT (key) DO UPDATE SET every other column to EXCLUDED's (clinksql's INSERT
//     replaces the row of an existing key whole; Postgres errors on a second row of one statement with the same
//     key, so such a case is skipped);
//     DROP MATERIALIZED VIEW is DROP VIEW;
//   - flush, restart, wait and sleep do nothing; cases that expect an error are not run.
//
// SQLLOGIC_FILL=1 (with SQLLOGIC_MODES=postgres) writes Postgres' rows as the expected rows of every case it
// runs, for a new suite; the diff is then reviewed like any change.
const modePostgres = "postgres"

// pgChecked reports whether the file at path asks to be checked against Postgres.
func pgChecked(t *testing.T, path string) bool {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return regexp.MustCompile(`(?m)^# pg: check\b`).Match(b)
}

type postgresTarget struct {
	t    *testing.T
	conn *pgconn.PgConn
	// tables are the tables created so far by name: their columns and key (for the INSERTs into them).
	tables map[string]pgTable
}

type pgTable struct{ cols, key []string }

func newPostgresTarget(t *testing.T, _ string) target {
	pg := pgtest.StartT(t, pgtest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg, err := pgconn.ParseConfig(pg.DSN() + "&timezone=UTC")
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgconn.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &postgresTarget{t: t, conn: conn, tables: map[string]pgTable{}}
}

var (
	createStream = regexp.MustCompile(`(?is)^\s*CREATE\s+(?:STREAM|TABLE)\s+(IF\s+NOT\s+EXISTS\s+)?(\w+)\s*\((.*)\)\s*(?:WITH\s*\(.*\))?\s*;?\s*$`)
	watermarkFor = regexp.MustCompile(`(?is),\s*WATERMARK\s+FOR\s+.*$`)
	notEnforced  = regexp.MustCompile(`(?i)\s+NOT\s+ENFORCED`)
	createMV     = regexp.MustCompile(`(?i)^\s*CREATE\s+MATERIALIZED\s+VIEW`)
	dropMV       = regexp.MustCompile(`(?i)^\s*DROP\s+MATERIALIZED\s+VIEW`)
	insertInto   = regexp.MustCompile(`(?is)^\s*INSERT\s+INTO\s+(\w+)\s*(?:\([^)]*\))?\s*(?:VALUES|SELECT|WITH)\b.*$`)
	primaryKey   = regexp.MustCompile(`(?is)^(?:CONSTRAINT\s+\w+\s+)?PRIMARY\s+KEY\s*\(([^)]*)\)`)
)

// translate rewrites one statement of ours for Postgres; tables (by name) are the tables created so far, to
// which a CREATE of a table adds.
func translatePostgres(sql string, tables map[string]pgTable) string {
	if m := createStream.FindStringSubmatch(sql); m != nil {
		cols := notEnforced.ReplaceAllString(watermarkFor.ReplaceAllString(m[3], ""), "")
		if t, ok := tableOf(cols); ok && tables != nil && !regexp.MustCompile(`(?is)\bWITH\s*\(`).MatchString(sql) {
			tables[strings.ToLower(m[2])] = t
		}
		return fmt.Sprintf("CREATE TABLE %s%s (%s)", m[1], m[2], cols)
	}
	if m := insertInto.FindStringSubmatch(sql); m != nil {
		if t, ok := tables[strings.ToLower(m[1])]; ok {
			// Every other column, also those the INSERT leaves out (EXCLUDED's is their default, NULL): the new
			// row replaces the old one whole, as clinksql's upsert does.
			var set []string
			for _, c := range t.cols {
				if !slices.Contains(t.key, c) {
					set = append(set, c+" = EXCLUDED."+c)
				}
			}
			action := "DO NOTHING"
			if len(set) > 0 {
				action = "DO UPDATE SET " + strings.Join(set, ", ")
			}
			return fmt.Sprintf("%s ON CONFLICT (%s) %s", strings.TrimRight(strings.TrimSpace(sql), ";"), strings.Join(t.key, ", "), action)
		}
	}
	return dropMV.ReplaceAllString(createMV.ReplaceAllString(sql, "CREATE VIEW"), "DROP VIEW")
}

// tableOf reads the columns and the primary key of a column list; ok is false without a key.
func tableOf(list string) (pgTable, bool) {
	var t pgTable
	depth, start := 0, 0
	var items []string
	for i, c := range list {
		switch c {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				items = append(items, strings.TrimSpace(list[start:i]))
				start = i + 1
			}
		}
	}
	items = append(items, strings.TrimSpace(list[start:]))
	for _, it := range items {
		if m := primaryKey.FindStringSubmatch(it); m != nil {
			t.key = splitNames(m[1])
			continue
		}
		name := strings.ToLower(strings.Fields(it)[0])
		t.cols = append(t.cols, name)
		if regexp.MustCompile(`(?i)\bPRIMARY\s+KEY\b`).MatchString(it) {
			t.key = []string{name}
		}
	}
	return t, len(t.key) > 0
}

func splitNames(list string) []string {
	var out []string
	for _, n := range strings.Split(list, ",") {
		out = append(out, strings.ToLower(strings.TrimSpace(n)))
	}
	return out
}

func (p *postgresTarget) exec(ctx context.Context, sql string) ([]result, error) {
	if strings.EqualFold(strings.TrimSpace(sql), "FLUSH") {
		return nil, nil
	}
	return execText(ctx, p.conn, translatePostgres(sql, p.tables))
}

func (p *postgresTarget) errorText(_ string, err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code + " " + pe.Message
	}
	return err.Error()
}

func (p *postgresTarget) describe(_, sql string, err error) string {
	return fmt.Sprintf("Postgres: %v\n(translated: %s)", err, translatePostgres(sql, p.tables))
}

func (p *postgresTarget) restart()                   {}
func (p *postgresTarget) wait(context.Context) error { return nil }

func (p *postgresTarget) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p.conn.Close(ctx)
}

// fillExpected replaces the expected rows of the cases in fills (by record line) in the file at path.
func fillExpected(t *testing.T, path string, recs []record, fills map[int][]string) {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	for i := len(recs) - 1; i >= 0; i-- {
		r := recs[i]
		rows, ok := fills[r.line]
		if !ok {
			continue
		}
		lines = append(lines[:r.expFrom], append(append([]string{}, rows...), lines[r.expTo:]...)...)
	}
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %d cases filled from Postgres", path, len(fills))
}
