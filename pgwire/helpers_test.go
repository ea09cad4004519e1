package pgwire

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/clinksql/clinksql/engine"
)

// testServer is a Server on 127.0.0.1:0 over a real engine in a temporary directory.
type testServer struct {
	*Server
	eng  *engine.Engine
	addr string
}

func startServer(t testing.TB, cfg Config) *testServer {
	t.Helper()
	return startServerEngine(t, cfg, engine.Config{DataDir: t.TempDir()})
}

// startServerEngine is startServer over an engine of ecfg.
func startServerEngine(t testing.TB, cfg Config, ecfg engine.Config) *testServer {
	t.Helper()
	eng, err := engine.Open(ecfg)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Logger == nil && os.Getenv("PGWIRE_TEST_LOG") != "" {
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := NewServer(cfg, eng)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(l) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		if err := <-done; err != ErrServerClosed {
			t.Errorf("Serve returned %v, want ErrServerClosed", err)
		}
		if err := eng.Close(ctx); err != nil {
			t.Errorf("engine close: %v", err)
		}
	})
	return &testServer{Server: srv, eng: eng, addr: l.Addr().String()}
}

// pgxConfig is a pgx configuration for ts; a cancelled context sends a CancelRequest (pgx's default closes the
// connection instead).
func (ts *testServer) pgxConfig(t testing.TB, userinfo string) *pgx.ConnConfig {
	t.Helper()
	if userinfo == "" {
		userinfo = "tester"
	}
	cfg, err := pgx.ParseConfig(fmt.Sprintf("postgres://%s@%s/clink?sslmode=disable&connect_timeout=5", userinfo, ts.addr))
	if err != nil {
		t.Fatal(err)
	}
	cfg.BuildContextWatcherHandler = func(pc *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.CancelRequestContextWatcherHandler{Conn: pc, DeadlineDelay: 5 * time.Second}
	}
	return cfg
}

func (ts *testServer) connect(t testing.TB) *pgx.Conn {
	t.Helper()
	return connectWith(t, ts.pgxConfig(t, ""))
}

func connectWith(t testing.TB, cfg *pgx.ConnConfig) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

func exec(t testing.TB, c *pgx.Conn, sql string, args ...any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := c.Exec(ctx, sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// rawClient speaks the protocol message by message, for what drivers do not let a test do (row limits,
// malformed input).
type rawClient struct {
	t  testing.TB
	nc net.Conn
	fe *pgproto3.Frontend
}

func dialRaw(t testing.TB, addr string) *rawClient {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	nc.SetDeadline(time.Now().Add(20 * time.Second))
	return &rawClient{t: t, nc: nc, fe: pgproto3.NewFrontend(nc, nc)}
}

// startup sends a StartupMessage (trust auth) and returns the messages up to ReadyForQuery.
func (c *rawClient) startup() []string {
	c.t.Helper()
	c.send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersion30,
		Parameters: map[string]string{"user": "raw", "database": "clink"}})
	return c.untilReady()
}

func (c *rawClient) send(msgs ...pgproto3.FrontendMessage) {
	c.t.Helper()
	for _, m := range msgs {
		c.fe.Send(m)
	}
	if err := c.fe.Flush(); err != nil {
		c.t.Fatal(err)
	}
}

// untilReady returns the messages up to and including ReadyForQuery, each as its JSON form.
func (c *rawClient) untilReady() []string {
	c.t.Helper()
	var out []string
	for {
		m, err := c.fe.Receive()
		if err != nil {
			c.t.Fatalf("receive after %v: %v", out, err)
		}
		out = append(out, jsonOf(m))
		if _, ok := m.(*pgproto3.ReadyForQuery); ok {
			return out
		}
	}
}

// untilEOF returns the messages until the server closes the connection.
func (c *rawClient) untilEOF() []string {
	c.t.Helper()
	var out []string
	for {
		m, err := c.fe.Receive()
		if err != nil {
			return out
		}
		out = append(out, jsonOf(m))
	}
}

// jsonOf renders a message as its type name and JSON form: "DataRow {...}".
func jsonOf(m pgproto3.BackendMessage) string {
	name := strings.TrimPrefix(fmt.Sprintf("%T", m), "*pgproto3.")
	b, err := json.Marshal(m)
	if err != nil {
		return name + " (unmarshalable)"
	}
	return name + " " + string(b)
}

// types returns the message types of msgs, one word each.
func types(msgs []string) string {
	var ts []string
	for _, m := range msgs {
		name, _, _ := strings.Cut(m, " ")
		ts = append(ts, name)
	}
	return strings.Join(ts, " ")
}
