package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/clinksql/clinksql/tests/pgtest"
)

// q13's side input: Flink's is a bounded file table; ours is a PostgreSQL table that a lookup join reads by key
// (bench/nexmark/q13.sql, ${PG_URL}). The server is $NEXMARK_PG_URL when set, else one started once per run with
// the binaries tests/pgtest finds (and stopped at the end); without either q13 is skipped, saying why.

// skipError is a query that cannot run here (no Postgres for q13): reported as SKIP, not as a failure.
type skipError struct{ why string }

func (e skipError) Error() string { return e.why }

var sideInput struct {
	once sync.Once
	url  string
	err  error
	pg   *pgtest.Postgres
}

// sideInputURL returns the URL of a server holding nexmark_side_input (key 0..9999, value 'side-<key>').
func sideInputURL() (string, error) {
	sideInput.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		url := os.Getenv("NEXMARK_PG_URL")
		if url == "" {
			bin, err := pgtest.FindPostgres()
			if err != nil {
				sideInput.err = skipError{fmt.Sprintf("q13 needs PostgreSQL for its side input: set NEXMARK_PG_URL or install a Postgres that tests/pgtest finds (%v)", err)}
				return
			}
			pg, err := pgtest.StartPostgres(ctx, bin)
			if err != nil {
				sideInput.err = skipError{fmt.Sprintf("q13: starting PostgreSQL for its side input: %v", err)}
				return
			}
			sideInput.pg, url = pg, pg.DSN()
		}
		sideInput.url = url
		sideInput.err = loadSideInput(ctx)
	})
	return sideInput.url, sideInput.err
}

// loadSideInput (re)creates the side input table.
func loadSideInput(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, sideInput.url)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	for _, q := range []string{
		`DROP TABLE IF EXISTS nexmark_side_input`,
		`CREATE TABLE nexmark_side_input (key bigint PRIMARY KEY, value text)`,
		`INSERT INTO nexmark_side_input SELECT k, 'side-' || k FROM generate_series(0, 9999) AS k`,
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			return errors.Join(fmt.Errorf("q13 side input: %s", q), err)
		}
	}
	return nil
}

// stopSideInput stops the server sideInputURL started, if any.
func stopSideInput() {
	if sideInput.pg != nil {
		sideInput.pg.Stop()
	}
}
