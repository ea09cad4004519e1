package sqllogic

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
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
}

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
	return &postgresTarget{t: t, conn: conn}
}

var (
	createStream = regexp.MustCompile(`(?is)^\s*CREATE\s+(?:STREAM|TABLE)\s+(IF\s+NOT\s+EXISTS\s+)?(\w+)\s*\((.*)\)\s*(?:WITH\s*\(.*\))?\s*;?\s*$`)
	watermarkFor = regexp.MustCompile(`(?is),\s*WATERMARK\s+FOR\s+.*$`)
	notEnforced  = regexp.MustCompile(`(?i)\s+NOT\s+ENFORCED`)
	createMV     = regexp.MustCompile(`(?i)^\s*CREATE\s+MATERIALIZED\s+VIEW`)
)

// translate rewrites one statement of ours for Postgres.
func translatePostgres(sql string) string {
	if m := createStream.FindStringSubmatch(sql); m != nil {
		cols := notEnforced.ReplaceAllString(watermarkFor.ReplaceAllString(m[3], ""), "")
		return fmt.Sprintf("CREATE TABLE %s%s (%s)", m[1], m[2], cols)
	}
	return createMV.ReplaceAllString(sql, "CREATE VIEW")
}

func (p *postgresTarget) exec(ctx context.Context, sql string) ([]result, error) {
	if strings.EqualFold(strings.TrimSpace(sql), "FLUSH") {
		return nil, nil
	}
	return execText(ctx, p.conn, translatePostgres(sql))
}

func (p *postgresTarget) errorText(_ string, err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code + " " + pe.Message
	}
	return err.Error()
}

func (p *postgresTarget) describe(_, sql string, err error) string {
	return fmt.Sprintf("Postgres: %v\n(translated: %s)", err, translatePostgres(sql))
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
