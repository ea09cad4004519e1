package pgwire

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// subscribeServer starts a server with a stream and a materialized view over it whose job checkpoints only at
// FLUSH, holding (1, 1); it returns a connection for writes.
func subscribeServer(t *testing.T) (*testServer, *pgx.Conn) {
	t.Helper()
	ts := startServer(t, Config{})
	w := ts.connect(t)
	exec(t, w, `SET checkpoint.interval = '0'`)
	exec(t, w, `CREATE STREAM clicks (user_id BIGINT, url VARCHAR)`)
	exec(t, w, `CREATE MATERIALIZED VIEW counts AS SELECT user_id, COUNT(*) AS n FROM clicks GROUP BY user_id`)
	exec(t, w, `INSERT INTO clicks VALUES (1, 'a')`)
	exec(t, w, `FLUSH`)
	return ts, w
}

// pins: SUBSCRIBE over the simple and the extended protocol streams DataRows as changes commit (the snapshot,
// then -1/+1 for an update), until the client cancels it (57014); the connection goes on after it.
func TestSubscribeStreamsUntilCancel(t *testing.T) {
	ts, w := subscribeServer(t)
	c := ts.connect(t)
	for i, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheStatement} {
		ctx, cancel := context.WithCancel(context.Background())
		rows, err := c.Query(ctx, "SUBSCRIBE TO counts", mode)
		if err != nil {
			t.Fatal(err)
		}
		if names := fieldNames(rows); names != "mz_timestamp mz_diff user_id n" {
			t.Fatalf("%v: columns %s", mode, names)
		}
		var got []string
		next := func(n int) {
			for len(got) < n && rows.Next() {
				var ts, diff, user, count int64
				if err := rows.Scan(&ts, &diff, &user, &count); err != nil {
					t.Fatal(err)
				}
				got = append(got, fmt.Sprintf("%d|%d|%d", diff, user, count))
			}
		}
		next(1)
		exec(t, w, fmt.Sprintf(`INSERT INTO clicks VALUES (1, 'u%d')`, i))
		exec(t, w, `FLUSH`)
		next(3)
		want := fmt.Sprintf("1|1|%d -1|1|%d 1|1|%d", i+1, i+1, i+2)
		if strings.Join(got, " ") != want {
			t.Fatalf("%v: rows %q, want %s (then %v)", mode, got, want, rows.Err())
		}
		cancel()
		rows.Close()
		var pe *pgconn.PgError
		if !errors.As(rows.Err(), &pe) || pe.Code != "57014" {
			t.Fatalf("%v: after cancel: %v", mode, rows.Err())
		}
		var one int32
		if err := c.QueryRow(context.Background(), "SELECT 1").Scan(&one); err != nil || one != 1 {
			t.Fatalf("%v: after the cancel: %v", mode, err)
		}
	}
}

func fieldNames(rows pgx.Rows) string {
	var names []string
	for _, f := range rows.FieldDescriptions() {
		names = append(names, f.Name)
	}
	return strings.Join(names, " ")
}

// lineWriter collects COPY output and says when it holds n lines.
type lineWriter struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	more chan struct{}
}

func (l *lineWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(p)
	select {
	case l.more <- struct{}{}:
	default:
	}
	return len(p), nil
}

func (l *lineWriter) lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Split(strings.TrimSuffix(l.buf.String(), "\n"), "\n")
}

func (l *lineWriter) waitLines(t *testing.T, n int) []string {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		if ls := l.lines(); len(ls) >= n && ls[0] != "" {
			return ls
		}
		select {
		case <-l.more:
		case <-deadline:
			t.Fatalf("waited 30 s for %d lines, have %q", n, l.lines())
		}
	}
}

// dropTime removes the first field (mz_timestamp) of COPY lines.
func dropTime(lines []string) string {
	var out []string
	for _, l := range lines {
		_, rest, _ := strings.Cut(l, "\t")
		out = append(out, rest)
	}
	return strings.Join(out, " | ")
}

// pins: COPY (SUBSCRIBE ...) TO STDOUT (psql's form) streams the changes as COPY text lines (tab-separated,
// NULL as \N) until the client cancels; COPY (SELECT ...) TO STDOUT ends with CopyDone and COPY <n>, with
// COPY's escapes.
func TestSubscribeCopyTo(t *testing.T) {
	ts, w := subscribeServer(t)
	c := ts.connect(t)
	out := &lineWriter{more: make(chan struct{}, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := c.PgConn().CopyTo(ctx, out, "COPY (SUBSCRIBE counts WITH (PROGRESS)) TO STDOUT")
		done <- err
	}()
	if got := dropTime(out.waitLines(t, 2)); got != `f	1	1	1 | t	\N	\N	\N` {
		t.Fatalf("snapshot and progress: %q", got)
	}
	exec(t, w, `INSERT INTO clicks VALUES (1, 'b')`)
	exec(t, w, `FLUSH`)
	if got := dropTime(out.waitLines(t, 5)[2:]); got != `f	-1	1	1 | f	1	1	2 | t	\N	\N	\N` {
		t.Fatalf("changes: %q", got)
	}
	cancel()
	select {
	case err := <-done:
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "57014" {
			t.Fatalf("COPY after cancel: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("COPY did not end after cancel")
	}

	var buf bytes.Buffer
	tag, err := c.PgConn().CopyTo(context.Background(), &buf, "COPY (SELECT 1 AS a, CAST(NULL AS VARCHAR) AS b, 'x\ty\\z' AS c) TO STDOUT")
	if err != nil {
		t.Fatal(err)
	}
	if tag.String() != "COPY 1" || buf.String() != "1\t\\N\tx\\ty\\\\z\n" {
		t.Fatalf("COPY (SELECT): %q, %q", tag, buf.String())
	}
	var one int32
	if err := c.QueryRow(context.Background(), "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("after COPY: %v", err)
	}
}

// pins: a cursor over SUBSCRIBE, over the extended protocol as pgx runs it: FETCH n returns the snapshot, FETCH
// ALL ... WITH (timeout) returns nothing when nothing came, and the changes once they committed; CLOSE ends it,
// and a FETCH after it is 34000; DECLARE outside BEGIN is 25P01.
func TestSubscribeCursor(t *testing.T) {
	ts, w := subscribeServer(t)
	c := ts.connect(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var pe *pgconn.PgError
	if _, err := c.Exec(ctx, "DECLARE c CURSOR FOR SUBSCRIBE counts"); !errors.As(err, &pe) || pe.Code != "25P01" {
		t.Fatalf("DECLARE outside a transaction: %v", err)
	}
	exec(t, c, "BEGIN")
	exec(t, c, "DECLARE c CURSOR FOR SUBSCRIBE counts")
	fetch := func(sql string) []string {
		t.Helper()
		rows, err := c.Query(ctx, sql)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for rows.Next() {
			var ts, diff, user, n int64
			if err := rows.Scan(&ts, &diff, &user, &n); err != nil {
				t.Fatal(err)
			}
			got = append(got, fmt.Sprintf("%d|%d|%d", diff, user, n))
		}
		if rows.Err() != nil {
			t.Fatalf("%s: %v", sql, rows.Err())
		}
		return got
	}
	if got := fetch("FETCH 10 c"); fmt.Sprint(got) != "[1|1|1]" {
		t.Fatalf("FETCH 10: %v", got)
	}
	if got := fetch("FETCH ALL c WITH (timeout = '50ms')"); len(got) != 0 {
		t.Fatalf("FETCH with a timeout, nothing new: %v", got)
	}
	exec(t, w, `INSERT INTO clicks VALUES (1, 'b'), (2, 'c')`)
	exec(t, w, `FLUSH`)
	got := fetch("FETCH ALL c")
	at := func(row string) int { return slices.Index(got, row) }
	if len(got) != 3 || at("1|2|1") < 0 || at("-1|1|1") < 0 || at("1|1|2") != at("-1|1|1")+1 {
		t.Fatalf("FETCH ALL after a change: %v", got)
	}
	exec(t, c, "CLOSE c")
	if _, err := c.Exec(ctx, "FETCH 1 c"); !errors.As(err, &pe) || pe.Code != "34000" {
		t.Fatalf("FETCH after CLOSE: %v", err)
	}
	exec(t, c, "ROLLBACK")
}
