package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/clinksql/clinksql/engine"
	"github.com/clinksql/clinksql/pgwire"
)

// syncOutput is a terminal's output that tests can watch while the REPL writes to it.
type syncOutput struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (o *syncOutput) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.Write(p)
}

func (o *syncOutput) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}

// waitLines waits until the output has n lines.
func (o *syncOutput) waitLines(t *testing.T, n int) {
	deadline := time.Now().Add(30 * time.Second)
	for strings.Count(o.String(), "\n") < n {
		if time.Now().After(deadline) {
			t.Errorf("waited 30 s for %d lines of output:\n%s", n, o.String())
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// pins: SUBSCRIBE at the REPL's terminal shows the header and the view's rows at once, then each change as it
// commits, as a changelog (op "+" or "-", an update as - then +), and runs until Ctrl-C, on the embedded engine
// and over --connect alike; COPY (...) TO STDOUT prints COPY's lines.
func TestREPLSubscribeShowsChanges(t *testing.T) {
	s := newREPLSession(t, t.TempDir())
	eng := s.r.be.(*embeddedBackend).e
	subscribeAtTerminal(t, s.r, eng)
	s.r.out, s.r.errOut, s.r.interactive, s.r.interrupts = &s.out, &s.out, false, nil
	got := s.pipeString("COPY (SELECT user_id, n FROM counts) TO STDOUT;\n")
	if got != "1\t2\nCOPY 1\n" {
		t.Fatalf("COPY: %q", got)
	}

	// The same over the wire.
	eng2, err := engine.Open(engine.Config{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := pgwire.NewServer(pgwire.Config{}, eng2)
	go srv.Serve(l)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		srv.Shutdown(ctx)
		eng2.Close(ctx)
	})
	rb, err := dialRemote(context.Background(), "postgres://tester@"+l.Addr().String()+"/clinksql?sslmode=disable", func(string, string) {}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rb.close()
	subscribeAtTerminal(t, &repl{be: rb, source: "<stdin>"}, eng2)
}

// subscribeAtTerminal makes a view on r's engine (eng), runs SUBSCRIBE at r's terminal, makes a change when the
// view's row shows, presses Ctrl-C when the change shows, and checks what r printed.
func subscribeAtTerminal(t *testing.T, r *repl, eng *engine.Engine) {
	t.Helper()
	var setup bytes.Buffer
	r.out, r.errOut = &setup, &setup
	r.run(context.Background(), newPipedSource(context.Background(), strings.NewReader(`SET checkpoint.interval = '0';
CREATE STREAM clicks (user_id BIGINT, url VARCHAR);
CREATE MATERIALIZED VIEW counts AS SELECT user_id, COUNT(*) AS n FROM clicks GROUP BY user_id;
INSERT INTO clicks VALUES (1, 'a');
FLUSH;
`)))
	if strings.Contains(setup.String(), "ERROR") {
		t.Fatalf("setup:\n%s", setup.String())
	}
	out := &syncOutput{}
	ctrlC := make(chan os.Signal, 1)
	r.out, r.errOut, r.interactive, r.interrupts = out, out, true, ctrlC
	go func() {
		out.waitLines(t, 3) // header, rule, the snapshot's row
		w := eng.NewSession()
		for _, sql := range []string{`INSERT INTO clicks VALUES (1, 'b')`, `FLUSH`} {
			if _, err := w.Execute(context.Background(), sql); err != nil {
				t.Errorf("%s: %v", sql, err)
			}
		}
		out.waitLines(t, 5)
		ctrlC <- syscall.SIGINT
	}()
	term := &scriptedTerminal{lines: []string{"SUBSCRIBE counts;"}}
	if err := r.run(context.Background(), term); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(out.String(), "\n")
	if len(lines) != 7 || strings.Join(strings.Fields(lines[0]), " ") != "op | mz_timestamp | user_id | n" ||
		lines[6] != "" || lines[5] != "ERROR:  canceling statement due to user request (SQLSTATE 57014)" {
		t.Fatalf("output:\n%s", out.String())
	}
	var ops []string
	for _, l := range lines[2:5] {
		f := strings.Split(l, "|")
		ops = append(ops, strings.TrimSpace(f[0])+strings.TrimSpace(f[2])+":"+strings.TrimSpace(f[3]))
	}
	if strings.Join(ops, " ") != "+1:1 -1:1 +1:2" {
		t.Fatalf("changes %q in:\n%s", ops, out.String())
	}
}
