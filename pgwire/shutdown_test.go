package pgwire

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// running reports whether some connection of s has a statement running.
func (s *Server) running() bool {
	s.mu.Lock()
	conns := make([]*conn, 0, len(s.conns))
	for _, c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, c := range conns {
		c.mu.Lock()
		r := c.cancelStmt != nil
		c.mu.Unlock()
		if r {
			return true
		}
	}
	return false
}

// Pins what a client sees when the server stops (SIGTERM): FATAL 57P01 admin_shutdown, as from a Postgres fast
// shutdown, whether it was running a statement (simple or extended protocol) or idle - never a connection that
// just drops.
func TestShutdownSendsAdminShutdown(t *testing.T) {
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheStatement} {
		t.Run(mode.String(), func(t *testing.T) {
			ts := startServer(t, Config{})
			c := ts.connect(t)
			unboundedStream(t, c)
			idle := ts.connect(t)
			done := make(chan error, 1)
			go func() {
				_, err := c.Exec(context.Background(), longQuery, mode)
				done <- err
			}()
			deadline := time.Now().Add(10 * time.Second)
			for !ts.running() { // wait for the statement to be under way
				if time.Now().After(deadline) {
					t.Fatal("the query never started")
				}
				time.Sleep(time.Millisecond)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := ts.Shutdown(ctx); err != nil {
				t.Fatal(err)
			}
			var pe *pgconn.PgError
			if err := <-done; !errors.As(err, &pe) || pe.Code != "57P01" || pe.Severity != "FATAL" {
				t.Errorf("running query at shutdown: %v, want FATAL 57P01", err)
			}
			if err := idle.Ping(context.Background()); !errors.As(err, &pe) || pe.Code != "57P01" {
				t.Errorf("idle connection at shutdown: %v, want FATAL 57P01", err)
			}
		})
	}
}
