package pgwire

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/clinksql/clinksql/engine"
	"github.com/clinksql/clinksql/internal/testcert"
)

func TestSCRAM(t *testing.T) {
	ts := startServer(t, Config{Users: map[string]string{"alice": "s3cret", "bob": "pässwörd:with colon"}})
	ctx := context.Background()
	for _, ok := range []string{"alice:s3cret", "bob:pässwörd:with colon"} {
		user, password, _ := strings.Cut(ok, ":")
		cfg := ts.pgxConfig(t, user)
		cfg.Password = password
		c := connectWith(t, cfg)
		var one int32
		if err := c.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil {
			t.Fatal(err)
		}
		if got := c.PgConn().ParameterStatus("session_authorization"); got != strings.Split(ok, ":")[0] {
			t.Errorf("session_authorization %q", got)
		}
	}
	for _, bad := range []string{"alice:wrong", "alice", "mallory:s3cret", "bob:s3cret"} {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err := pgx.ConnectConfig(cctx, ts.pgxConfig(t, bad))
		cancel()
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "28P01" || pe.Severity != "FATAL" ||
			pe.Message != fmt.Sprintf("password authentication failed for user %q", strings.Split(bad, ":")[0]) {
			t.Errorf("%s: %v", bad, err)
		}
	}
}

func TestSCRAMMalformed(t *testing.T) {
	ts := startServer(t, Config{Users: map[string]string{"alice": "pw"}})
	for name, first := range map[string]*pgproto3.SASLInitialResponse{
		"other mechanism": {AuthMechanism: "SCRAM-SHA-1", Data: []byte("n,,n=,r=abc")},
		"channel binding": {AuthMechanism: scramMechanism, Data: []byte("p=tls-server-end-point,,n=,r=abc")},
		"garbage":         {AuthMechanism: scramMechanism, Data: []byte("xyz")},
		"no nonce":        {AuthMechanism: scramMechanism, Data: []byte("n,,n=,")},
		"authzid":         {AuthMechanism: scramMechanism, Data: []byte("n,a=bob,n=,r=abc")},
	} {
		rc := dialRaw(t, ts.addr)
		rc.send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersion30, Parameters: map[string]string{"user": "alice"}})
		rc.fe.Receive() // AuthenticationSASL
		rc.send(first)
		if got := rc.untilEOF(); len(got) != 1 || !strings.Contains(got[0], "FATAL") {
			t.Errorf("%s: %v", name, got)
		}
	}
	// A wrong final message: bad proof length, wrong nonce.
	for name, final := range map[string]string{
		"short proof": "c=biws,r=abcSERVER,p=AAAA",
		"wrong nonce": "c=biws,r=other,p=" + strings.Repeat("A", 43) + "=",
		"no proof":    "c=biws,r=abc",
	} {
		rc := dialRaw(t, ts.addr)
		rc.send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersion30, Parameters: map[string]string{"user": "alice"}})
		rc.fe.Receive()
		rc.send(&pgproto3.SASLInitialResponse{AuthMechanism: scramMechanism, Data: []byte("n,,n=,r=abc")})
		if m, err := rc.fe.Receive(); err != nil {
			t.Fatal(err)
		} else if _, ok := m.(*pgproto3.AuthenticationSASLContinue); !ok {
			t.Fatalf("%s: got %T", name, m)
		}
		rc.send(&pgproto3.SASLResponse{Data: []byte(final)})
		if got := rc.untilEOF(); len(got) != 1 || !strings.Contains(got[0], "FATAL") {
			t.Errorf("%s: %v", name, got)
		}
	}
}
func TestTLS(t *testing.T) {
	cert, pool := testcert.New(t)
	ts := startServer(t, Config{Users: map[string]string{"alice": "pw"},
		TLS: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}})
	cfg := ts.pgxConfig(t, "alice:pw")
	cfg.TLSConfig = &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}
	c := connectWith(t, cfg)
	if _, ok := c.PgConn().Conn().(*tls.Conn); !ok {
		t.Fatalf("connection is %T, not TLS", c.PgConn().Conn())
	}
	var s string
	if err := c.QueryRow(context.Background(), "SELECT 'over tls'").Scan(&s); err != nil || s != "over tls" {
		t.Fatalf("%q %v", s, err)
	}
	// Plaintext stays allowed when the client does not ask for TLS.
	plain := connectWith(t, ts.pgxConfig(t, "alice:pw"))
	if _, ok := plain.PgConn().Conn().(*tls.Conn); ok {
		t.Error("sslmode=disable got TLS")
	}
}

func TestNoTLSConfigured(t *testing.T) {
	ts := startServer(t, Config{})
	cfg, err := pgx.ParseConfig(fmt.Sprintf("postgres://u@%s/db?sslmode=require&connect_timeout=5", ts.addr))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pgx.ConnectConfig(context.Background(), cfg); err == nil {
		t.Error("sslmode=require connected to a server without TLS")
	}
	cfg, err = pgx.ParseConfig(fmt.Sprintf("postgres://u@%s/db?sslmode=prefer&connect_timeout=5", ts.addr))
	if err != nil {
		t.Fatal(err)
	}
	connectWith(t, cfg) // 'N', then plaintext
}

// An empty password is refused before anything is served: SCRAM over an empty password would let any network
// client in as that user (Postgres refuses empty passwords too).
func TestServeRefusesEmptyPassword(t *testing.T) {
	eng, err := engine.Open(engine.Config{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close(context.Background())
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	srv := NewServer(Config{Users: map[string]string{"a": "pw", "b": ""}}, eng)
	done := make(chan error, 1)
	go func() {
		err := srv.Serve(l)
		l.Close() // a refusing Serve leaves the listener open: closing it turns the client away at once
		done <- err
	}()
	cfg, err := pgx.ParseConfig(fmt.Sprintf("postgres://b@%s/clinksql?sslmode=disable&connect_timeout=5", l.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	if c, err := pgx.ConnectConfig(context.Background(), cfg); err == nil {
		c.Close(context.Background())
		t.Fatal("a client got in as user b without a password")
	}
	srv.Shutdown(context.Background())
	if err := <-done; err == nil || !strings.Contains(err.Error(), `user "b" has an empty password`) {
		t.Fatalf("Serve: %v", err)
	}
}
