package sqllogic

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/clinksql/clinksql/tests/clients/testserver"
)

// The pgwire mode runs each file against a real `clinksql serve` on the file's data directory, through pgx's
// simple protocol (every value arrives in text form, as in-process results are). `restart` stops the server with
// SIGTERM (it must exit 0) and starts it again on the same directory; `wait` polls SHOW JOBS.

var (
	binDir   string
	binPath  string
	buildErr error
	built    = make(chan struct{})
)

// serverBinary waits for the build of cmd/clinksql that TestMain started.
func serverBinary(t *testing.T) string {
	<-built
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// TestMain builds the binary for the pgwire mode in the background (linking takes seconds; the in-process mode
// runs meanwhile), and removes it at the end.
func TestMain(m *testing.M) {
	go func() {
		defer close(built)
		for _, mode := range modes() {
			if mode == modePgwire {
				binDir, buildErr = os.MkdirTemp("", "clinksql-sqllogic")
				if buildErr == nil {
					binPath, buildErr = testserver.Build(binDir)
				}
				return
			}
		}
	}()
	code := m.Run()
	<-built
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

type pgwireTarget struct {
	t    *testing.T
	bin  string
	dir  string
	srv  *testserver.Server
	conn *pgconn.PgConn
	// bounded caches, per job id, whether the job's sources all end (see wait).
	bounded map[string]bool
	// notices collects the NoticeResponses of the statement running.
	notices []string
}

func newPgwireTarget(t *testing.T, bin, dir string) target {
	p := &pgwireTarget{t: t, bin: bin, dir: dir, bounded: map[string]bool{}}
	p.start()
	return p
}

func (p *pgwireTarget) start() {
	srv, err := testserver.Start(p.bin, p.dir, "--testing")
	if err != nil {
		p.t.Fatal(err)
	}
	p.srv = srv
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg, err := pgconn.ParseConfig(srv.URL() + "&sslmode=disable")
	if err != nil {
		srv.Kill()
		p.t.Fatal(err)
	}
	cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) { p.notices = append(p.notices, n.Message) }
	conn, err := pgconn.ConnectConfig(ctx, cfg)
	if err != nil {
		srv.Kill()
		p.t.Fatalf("connect to %s: %v\n%s", srv.Addr(), err, srv.Output())
	}
	p.conn = conn
}

// stop closes the connection and stops the server with SIGTERM; a non-zero exit fails the test.
func (p *pgwireTarget) stop() {
	if p.conn != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		p.conn.Close(ctx)
		cancel()
		p.conn = nil
	}
	if p.srv != nil {
		if err := p.srv.Stop(); err != nil {
			p.t.Errorf("stop the server: %v", err)
		} else if p.t.Failed() {
			p.t.Logf("server output:\n%s", p.srv.Output())
		}
		p.srv = nil
	}
}

func (p *pgwireTarget) exec(ctx context.Context, sql string) ([]result, error) {
	// Not MultiResultReader.ReadAll: its results carry the columns only when there is a row.
	out, err := p.execConn(ctx, sql)
	if err != nil && p.conn.IsClosed() {
		// The server went away (or the statement's deadline closed the connection): nothing after this can run.
		p.t.Fatalf("connection lost running %s: %v\nserver output:\n%s", sql, err, p.srv.Output())
	}
	return out, err
}

func (p *pgwireTarget) execConn(ctx context.Context, sql string) ([]result, error) {
	p.notices = nil
	out, err := execText(ctx, p.conn, sql)
	if err == nil && len(out) > 0 {
		out[len(out)-1].notices = p.notices // the notices of the script (one statement here)
	}
	return out, err
}

// execText runs sql through the simple protocol and returns each statement's result, values in text form.
func execText(ctx context.Context, conn *pgconn.PgConn, sql string) ([]result, error) {
	mrr := conn.Exec(ctx, sql)
	var out []result
	for mrr.NextResult() {
		rr := mrr.ResultReader()
		var res result
		for _, fd := range rr.FieldDescriptions() {
			res.names = append(res.names, fd.Name)
			res.oids = append(res.oids, fd.DataTypeOID)
		}
		for rr.NextRow() {
			vals := make([]*string, len(rr.Values()))
			for j, v := range rr.Values() {
				if v != nil {
					s := string(v)
					vals[j] = &s
				}
			}
			res.rows = append(res.rows, vals)
		}
		if _, err := rr.Close(); err != nil {
			mrr.Close()
			return nil, err
		}
		out = append(out, res)
	}
	if err := mrr.Close(); err != nil {
		return nil, err
	}
	return out, nil
}

// errorText rebuilds "<SQLSTATE> <line>:<col> <message>" from an ErrorResponse: its position is a 1-based
// character offset into the query string.
func (p *pgwireTarget) errorText(sql string, err error) string {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return "(not a server error) " + err.Error()
	}
	if pe.Position <= 0 {
		return pe.Code + " " + pe.Message
	}
	line, col := lineCol(sql, int(pe.Position))
	return fmt.Sprintf("%s %d:%d %s", pe.Code, line, col, pe.Message)
}

// lineCol turns a 1-based character offset into a 1-based line and column (in characters).
func lineCol(sql string, pos int) (int, int) {
	line, col := 1, 1
	for i, n := 0, 1; i < len(sql) && n < pos; n++ {
		r, size := utf8.DecodeRuneInString(sql[i:])
		i += size
		if r == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return line, col
}

func (p *pgwireTarget) describe(where, sql string, err error) string {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return fmt.Sprintf("%s: %v", where, err)
	}
	s := where + ": " + p.errorText(sql, err)
	if pe.Detail != "" {
		s += "\nDETAIL:  " + pe.Detail
	}
	if pe.Hint != "" {
		s += "\nHINT:  " + pe.Hint
	}
	return s
}

func (p *pgwireTarget) restart() {
	p.stop()
	if p.t.Failed() {
		p.t.FailNow()
	}
	p.bounded = map[string]bool{}
	p.start()
}

// wait polls SHOW JOBS until no job over bounded inputs is RUNNING or RESTARTING. Whether a job's sources all
// end is read from the plan of its statement (EXPLAIN): a source that follows new rows (an internal stream or a
// view's changelog) or an unbounded generator says so in its details. A bounded job that FAILED is an error, as
// in process.
func (p *pgwireTarget) wait(ctx context.Context) error {
	for {
		rs, err := p.exec(ctx, "SHOW JOBS")
		if err != nil {
			return fmt.Errorf("SHOW JOBS: %w", err)
		}
		if len(rs) != 1 {
			return fmt.Errorf("SHOW JOBS gave %d results", len(rs))
		}
		col := map[string]int{}
		for i, n := range rs[0].names {
			col[n] = i
		}
		for _, n := range []string{"id", "query", "state", "error"} {
			if _, ok := col[n]; !ok {
				return fmt.Errorf("SHOW JOBS has no column %q (columns %v)", n, rs[0].names)
			}
		}
		get := func(row []*string, name string) string {
			if v := row[col[name]]; v != nil {
				return *v
			}
			return ""
		}
		pending := ""
		for _, row := range rs[0].rows {
			id, state := get(row, "id"), get(row, "state")
			if state != "RUNNING" && state != "RESTARTING" && state != "FAILED" {
				continue
			}
			bounded, ok := p.bounded[id]
			if !ok {
				bounded, err = p.isBounded(ctx, row, col)
				if err != nil {
					return fmt.Errorf("job %s: %w", id, err)
				}
				p.bounded[id] = bounded
			}
			if !bounded {
				continue
			}
			if state == "FAILED" {
				return fmt.Errorf("job %s: FAILED: %s", id, get(row, "error"))
			}
			pending = id + " " + state
		}
		if pending == "" {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("job %s: %w", pending, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// isBounded tells whether a job of SHOW JOBS reads only sources that end: from a "bounded" column if SHOW JOBS
// has one, else from EXPLAIN of the job's statement.
func (p *pgwireTarget) isBounded(ctx context.Context, row []*string, col map[string]int) (bool, error) {
	if i, ok := col["bounded"]; ok && row[i] != nil {
		return *row[i] == "t" || *row[i] == "true", nil
	}
	q := row[col["query"]]
	if q == nil {
		return false, fmt.Errorf("SHOW JOBS gives no query")
	}
	rs, err := p.exec(ctx, "EXPLAIN "+*q)
	if err != nil {
		return false, fmt.Errorf("EXPLAIN %s: %w", *q, err)
	}
	if len(rs) != 1 {
		return false, fmt.Errorf("EXPLAIN gave %d results", len(rs))
	}
	var plan strings.Builder
	for _, r := range rs[0].rows {
		for _, v := range r {
			if v != nil {
				plan.WriteString(*v + "\n")
			}
		}
	}
	text := plan.String()
	return !strings.Contains(text, "rows: unbounded") && !strings.Contains(text, "follows new rows"), nil
}

func (p *pgwireTarget) close() { p.stop() }
