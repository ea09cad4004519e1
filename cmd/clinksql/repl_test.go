package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/clinksql/clinksql/engine"
	"github.com/clinksql/clinksql/sqlerr"
)

// replSession is a REPL on an embedded engine in a fresh data directory, writing results and errors to one
// buffer (so that their order shows).
type replSession struct {
	t   *testing.T
	r   *repl
	out bytes.Buffer
}

func newREPLSession(t *testing.T, dir string) *replSession {
	t.Helper()
	be, err := openEmbedded(engine.Config{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	s := &replSession{t: t}
	s.r = &repl{be: be, out: &s.out, errOut: &s.out, source: "<stdin>"}
	t.Cleanup(func() {
		if err := be.close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return s
}

// pipe runs the REPL over piped input and returns what it printed since the last call.
func (s *replSession) pipe(in io.Reader) (string, error) {
	s.t.Helper()
	err := s.r.run(context.Background(), newPipedSource(context.Background(), in))
	out := s.out.String()
	s.out.Reset()
	return out, err
}

func (s *replSession) pipeString(in string) string {
	s.t.Helper()
	out, err := s.pipe(strings.NewReader(in))
	if err != nil {
		s.t.Fatalf("run: %v\noutput:\n%s", err, out)
	}
	return out
}

func expectOutput(t *testing.T, got, want string) {
	t.Helper()
	if got != want {
		t.Fatalf("output:\n%s\nwant:\n%s\n(%q)", got, want, got)
	}
}

// pins: a statement may span lines and ends at the first semicolon outside strings, dollar quotes, quoted
// identifiers and comments; two statements on one line run in order; each prints its command tag or its rows as
// an aligned table.
func TestREPLMultiLineAndOneLine(t *testing.T) {
	s := newREPLSession(t, t.TempDir())
	out := s.pipeString(`CREATE STREAM s (a INT, -- a comment; not the end
  "B;" VARCHAR
);
INSERT INTO s VALUES (1, 'x;y'); INSERT INTO s VALUES (22, $$z;$$) /* ; */ ;
SELECT a,
       "B;" AS b
FROM s
ORDER BY a;
`)
	expectOutput(t, out, `CREATE STREAM
INSERT 0 1
INSERT 0 1
 a  |  b  
----+-----
  1 | x;y 
 22 | z;  
(2 rows)

`)
}

// chunkReader returns its input in the given pieces, one per Read.
type chunkReader struct{ pieces []string }

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.pieces) == 0 {
		return 0, io.EOF
	}
	n := copy(p, c.pieces[0])
	c.pieces[0] = c.pieces[0][n:]
	if c.pieces[0] == "" {
		c.pieces = c.pieces[1:]
	}
	return n, nil
}

// pins: how the input arrives in reads does not matter: a statement split across reads, even inside a string or
// a keyword, runs once it is complete; a string literal may hold newlines and semicolons; a line starting with a
// backslash inside a string is data, not a command.
func TestREPLStatementSplitAcrossReads(t *testing.T) {
	s := newREPLSession(t, t.TempDir())
	out, err := s.pipe(&chunkReader{pieces: []string{"SELECT 'ab", "c' AS x; SEL", "ECT 2 AS y", ";\nSELECT 'p;\n", `\d`, "\nq' AS z;\n"}})
	if err != nil {
		t.Fatal(err)
	}
	expectOutput(t, out, "  x  \n-----\n abc \n(1 row)\n\n y \n---\n 2 \n(1 row)\n\n    z    \n---------\n p;\n\\d\nq \n(1 row)\n\n")
}

// pins: what a chunk reader gives a byte at a time runs as the whole does.
func TestREPLOneByteReads(t *testing.T) {
	s := newREPLSession(t, t.TempDir())
	in := "SELECT 1 AS a;\nSELECT 'x' AS b; SELECT 2\n  AS c;"
	var pieces []string
	for i := range len(in) {
		pieces = append(pieces, in[i:i+1])
	}
	out, err := s.pipe(&chunkReader{pieces: pieces})
	if err != nil {
		t.Fatal(err)
	}
	expectOutput(t, out, " a \n---\n 1 \n(1 row)\n\n b \n---\n x \n(1 row)\n\n c \n---\n 2 \n(1 row)\n\n")
}

// pins: piped input that ends without a semicolon runs its last statement, as psql does.
func TestREPLLastStatementWithoutSemicolon(t *testing.T) {
	s := newREPLSession(t, t.TempDir())
	expectOutput(t, s.pipeString("SELECT 1 AS a;\nSELECT 2\n  AS b\n"), " a \n---\n 1 \n(1 row)\n\n b \n---\n 2 \n(1 row)\n\n")
}

// pins: \d lists streams, sinks, views and materialized views in one table by name (Name | Kind | Connector/Job);
// \dt, \dv and \dm list one kind each; an empty list says so.
func TestREPLListRelations(t *testing.T) {
	s := newREPLSession(t, t.TempDir())
	expectOutput(t, s.pipeString(`\d`), "Did not find any relations.\n")
	s.pipeString(`CREATE STREAM clicks (user_id BIGINT, url VARCHAR, ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '1' SECOND);
CREATE SINK out_csv (id BIGINT, name VARCHAR) WITH (connector = 'file', format = 'csv', path = 'out/csv');
CREATE VIEW v AS SELECT user_id, url FROM clicks;
CREATE MATERIALIZED VIEW mv AS SELECT user_id FROM clicks;
`)
	expectOutput(t, s.pipeString(`\d`), `              List of relations
  Name   |       Kind        | Connector/Job 
---------+-------------------+---------------
 clicks  | stream            | (internal)    
 mv      | materialized view | job-1         
 out_csv | sink              | file          
 v       | view              |               
(4 rows)

`)
	expectOutput(t, s.pipeString(`\dt`), `        List of relations
  Name   |  Kind  | Connector/Job 
---------+--------+---------------
 clicks  | stream | (internal)    
 out_csv | sink   | file          
(2 rows)

`)
	expectOutput(t, s.pipeString(`\dv`), `      List of relations
 Name | Kind | Connector/Job 
------+------+---------------
 v    | view |               
(1 row)

`)
	if out := s.pipeString(`\dm`); !strings.Contains(out, " mv   | materialized view | job-1 ") || strings.Contains(out, "clicks") {
		t.Fatalf("\\dm:\n%s", out)
	}
	if out := s.pipeString(`\jobs`); !strings.Contains(out, "job-1 | CREATE MATERIALIZED VIEW mv") {
		t.Fatalf("\\jobs:\n%s", out)
	}
}

// pins: \d name describes it (DESCRIBE name); a quoted name keeps its case; an unknown name is an error without
// a source excerpt (the user did not type the DESCRIBE); something that is not a name is refused.
func TestREPLDescribe(t *testing.T) {
	s := newREPLSession(t, t.TempDir())
	s.pipeString(`CREATE STREAM clicks (user_id BIGINT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '1' SECOND);
CREATE STREAM "Mixed" (x INT);`)
	expectOutput(t, s.pipeString(`\d clicks`), ` column_name |  data_type   | is_nullable |                 extra                 
-------------+--------------+-------------+---------------------------------------
 user_id     | BIGINT       | YES         |                                       
 ts          | TIMESTAMP(3) | YES         | WATERMARK AS ts - INTERVAL '1' SECOND 
(2 rows)

`)
	if out := s.pipeString(`\d "Mixed"`); !strings.Contains(out, " x           | INT ") {
		t.Fatalf("\\d \"Mixed\":\n%s", out)
	}
	expectOutput(t, s.pipeString(`\d nope`), "ERROR:  relation \"nope\" does not exist (SQLSTATE 42P01)\n")
	expectOutput(t, s.pipeString(`\d a; drop stream clicks`), "\\d: \"a; drop stream clicks\" is not a name\n")
}

// pins: with piped input an error prints as `clinksql exec -f` prints one for a file (the line and column in the
// input, the input's line with a caret) and the next statements still run, as in psql; the exit status is 0.
func TestREPLPipedErrorContinues(t *testing.T) {
	s := newREPLSession(t, t.TempDir())
	out := s.pipeString("CREATE STREAM s (a INT);\n\\timing off\nSELECT a,\n       nope FROM s; SELECT 1 AS one;\nSELECT 12abc; SELECT 2 AS two;\n")
	expectOutput(t, out, `CREATE STREAM
Timing is off.
<stdin>:4:8: ERROR:  column "nope" does not exist (SQLSTATE 42703)
LINE 4:        nope FROM s; SELECT 1 AS one;
               ^
 one 
-----
   1 
(1 row)

<stdin>:5:8: ERROR:  trailing junk after numeric literal at or near "12a" (SQLSTATE 42601)
LINE 5: SELECT 12abc; SELECT 2 AS two;
               ^
`)
}

// pins: --on-error-stop (or \set ON_ERROR_STOP on) ends piped input at the first error with a non-zero exit;
// nothing after it runs. An invalid backslash command is an error too.
func TestREPLOnErrorStop(t *testing.T) {
	s := newREPLSession(t, t.TempDir())
	out, err := s.pipe(strings.NewReader("\\set ON_ERROR_STOP on\nSELECT 1 AS a; SELECT nope; SELECT 2 AS b;\nSELECT 3 AS c;\n"))
	if !errors.As(err, new(exitError)) {
		t.Fatalf("err = %v, want exitError", err)
	}
	expectOutput(t, out, " a \n---\n 1 \n(1 row)\n\n<stdin>:2:23: ERROR:  column \"nope\" does not exist (SQLSTATE 42703)\nLINE 2: SELECT 1 AS a; SELECT nope; SELECT 2 AS b;\n                              ^\n")

	s = newREPLSession(t, t.TempDir())
	s.r.onErrorStop = true
	out, err = s.pipe(strings.NewReader("\\nonsense\nSELECT 1 AS a;\n"))
	if !errors.As(err, new(exitError)) || out != "invalid command \\nonsense\nTry \\? for help.\n" {
		t.Fatalf("err = %v, output:\n%s", err, out)
	}
}

// pins: \q ends the session; what follows is not read.
func TestREPLQuit(t *testing.T) {
	s := newREPLSession(t, t.TempDir())
	expectOutput(t, s.pipeString("SELECT 1 AS a;\n\\q\nSELECT 2 AS b;\n"), " a \n---\n 1 \n(1 row)\n\n")
}

// scriptedTerminal plays lines as a terminal user types them and records the prompts it was shown.
type scriptedTerminal struct {
	lines   []string
	prompts []string
}

func (s *scriptedTerminal) readLine(prompt string) (string, error) {
	s.prompts = append(s.prompts, prompt)
	if len(s.lines) == 0 {
		return "", io.EOF
	}
	line := s.lines[0]
	s.lines = s.lines[1:]
	if line == "^C" {
		return "", errInterrupt
	}
	return line, nil
}

// pins: at a terminal the prompt is "clinksql=> " and "clinksql-> " while a statement continues; Ctrl-C clears
// the statement being typed; an error shows psql's excerpt of the statement (LINE n of the statement, a caret)
// and the session goes on; Ctrl-D (end of input) does not run an unfinished statement.
func TestREPLTerminalPromptsAndErrors(t *testing.T) {
	s := newREPLSession(t, t.TempDir())
	s.r.interactive = true
	term := &scriptedTerminal{lines: []string{"SELECT 1", "  AS a;", "SELECT 'never", "^C", "SELECT 2 AS b,", "  nope;", "SELECT", "3"}}
	if err := s.r.run(context.Background(), term); err != nil {
		t.Fatal(err)
	}
	wantPrompts := []string{promptFirst, promptContinue, promptFirst, promptContinue, promptFirst, promptContinue, promptFirst, promptContinue, promptContinue}
	if strings.Join(term.prompts, "|") != strings.Join(wantPrompts, "|") {
		t.Fatalf("prompts %q, want %q", term.prompts, wantPrompts)
	}
	expectOutput(t, s.out.String(), ` a 
---
 1 
(1 row)

ERROR:  column "nope" does not exist (SQLSTATE 42703)
LINE 2:   nope
          ^
`)
}

// pins: a notice (CREATE ... IF NOT EXISTS of an existing name) prints as psql prints it, before the tag;
// \timing prints each statement's duration.
func TestREPLNoticeAndTiming(t *testing.T) {
	s := newREPLSession(t, t.TempDir())
	out := s.pipeString("CREATE STREAM s (a INT);\nCREATE STREAM IF NOT EXISTS s (a INT);\n\\timing\nSELECT 1 AS a;\n")
	if !strings.HasPrefix(out, "CREATE STREAM\nNOTICE:  relation \"s\" already exists, skipping\nCREATE STREAM\nTiming is on.\n a \n---\n 1 \n(1 row)\n\nTime: ") {
		t.Fatalf("output:\n%s", out)
	}
}

// pins: the scanner that decides when the REPL runs statements: statements end at semicolons outside literals
// and comments; an unterminated literal or comment keeps the input open (even with semicolons in it).
func TestScanStatements(t *testing.T) {
	for _, c := range []struct {
		src        string
		stmts      []string
		tail, open bool
	}{
		{src: "SELECT 1;", stmts: []string{"SELECT 1"}},
		{src: ";;  SELECT 1 ;SELECT 2;  \n", stmts: []string{"SELECT 1 ", "SELECT 2"}},
		{src: "SELECT 1; SELECT 2", stmts: []string{"SELECT 1"}, tail: true},
		{src: "SELECT 1; SELECT 'a;", stmts: []string{"SELECT 1"}, tail: true, open: true},
		{src: "SELECT \"a;", tail: true, open: true},
		{src: "SELECT $x$ ; $y$ ;", tail: true, open: true},
		{src: "SELECT 1 /* ; /* ; */ ;", tail: true, open: true},
		{src: "SELECT 1 /* ; /* ; */ ; */;", stmts: []string{"SELECT 1 /* ; /* ; */ ; */"}},
		{src: "-- only a comment; really\n"},
		{src: "SELECT 1; SELECT E'\\u12' ;  \n", stmts: []string{"SELECT 1", "SELECT E'\\u12' "}},
		{src: "SELECT 1; SELECT E'\\u12' ; SELECT", stmts: []string{"SELECT 1"}, tail: true},
	} {
		res := scanStatements(c.src, 0)
		var got []string
		for _, st := range res.stmts {
			got = append(got, c.src[st.start:st.end])
		}
		if strings.Join(got, "|") != strings.Join(c.stmts, "|") || res.tail != c.tail || res.open != c.open {
			t.Errorf("%q: statements %q tail %v open %v, want %q %v %v", c.src, got, res.tail, res.open, c.stmts, c.tail, c.open)
		}
	}
}

// pins: a server's ErrorResponse becomes the engine's error: the 1-based character position turns into a byte
// offset of the statement, so the caret lands where the engine's own would; a wire result keeps its columns'
// names and OIDs, NULLs and tag.
func TestRemoteConversions(t *testing.T) {
	sql := "SELECT 'é', nope"
	err := remoteError(context.Background(), sql, &pgconn.PgError{Code: "42703", Message: `column "nope" does not exist`, Position: 13})
	e := sqlerr.As(err)
	if e.Code != "42703" || sql[e.Pos:] != "nope" {
		t.Fatalf("error %+v (at %q)", e, sql[e.Pos:])
	}
	got := stripSource(engine.FormatError("", sql, err))
	want := "ERROR:  column \"nope\" does not exist (SQLSTATE 42703)\nLINE 1: SELECT 'é', nope\n                    ^\n"
	if got != want {
		t.Fatalf("formatted %q, want %q", got, want)
	}
	res := wireResult([]pgconn.FieldDescription{{Name: "n", DataTypeOID: 20}, {Name: "s", DataTypeOID: 25}})
	res.Rows = append(res.Rows, textValues([][]byte{[]byte("7"), nil}))
	res.Tag = "SELECT 1"
	var b bytes.Buffer
	engine.WriteTable(&b, res)
	if b.String() != " n | s \n---+---\n 7 |   \n(1 row)\n\n" {
		t.Fatalf("table %q", b.String())
	}
	b.Reset()
	engine.WriteTable(&b, wireResult(nil))
	if empty := wireResult(make([]pgconn.FieldDescription, 0)); empty.Columns == nil || b.String() != "\n" {
		t.Fatalf("no RowDescription: %q; an empty one: %+v", b.String(), empty)
	}
}

// pins: the binary with piped stdin: no prompts, results on stdout, errors on stderr; exit 0 after an error (as
// psql), exit 1 with --on-error-stop; the catalog persists in --data-dir.
func TestREPLBinaryPiped(t *testing.T) {
	dir := t.TempDir()
	pipeRun := func(input string, args ...string) (string, string, bool) {
		cmd := exec.Command(binary, append([]string{"--data-dir", dir}, args...)...)
		cmd.Stdin = strings.NewReader(input)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		if err != nil {
			if _, ok := err.(*exec.ExitError); !ok {
				t.Fatal(err)
			}
		}
		return out.String(), errb.String(), err == nil
	}
	out, errOut, ok := pipeRun("CREATE STREAM s (a INT);\nSELECT nope;\nINSERT INTO s VALUES (5);\n")
	if !ok || out != "CREATE STREAM\nINSERT 0 1\n" || !strings.Contains(errOut, "<stdin>:2:8: ERROR:  column \"nope\" does not exist") {
		t.Fatalf("ok %v stdout %q stderr %q", ok, out, errOut)
	}
	out, errOut, ok = pipeRun("SELECT nope;\nSELECT a FROM s;\n", "--on-error-stop")
	if ok || out != "" || !strings.Contains(errOut, "ERROR:") {
		t.Fatalf("--on-error-stop: ok %v stdout %q stderr %q", ok, out, errOut)
	}
	out, _, ok = pipeRun("SELECT a FROM s;")
	if !ok || out != " a \n---\n 5 \n(1 row)\n\n" {
		t.Fatalf("reopen: ok %v stdout %q", ok, out)
	}
	if _, errOut, ok := pipeRun("", "extra-arg"); ok || !strings.Contains(errOut, "unknown command") {
		t.Fatalf("an argument: ok %v stderr %q", ok, errOut)
	}
}

// parityScript exercises every kind of output: tags, notices, tables with NULLs and numbers, the backslash
// commands, errors with and without a position.
const parityScript = `CREATE STREAM clicks (user_id BIGINT, url VARCHAR, ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '1' SECOND);
CREATE STREAM IF NOT EXISTS clicks (a INT);
INSERT INTO clicks VALUES (1, 'a;b', TIMESTAMP '2026-01-01 00:00:01'); INSERT INTO clicks VALUES (2, NULL, TIMESTAMP '2026-01-01 00:00:20');
CREATE SINK out_csv (id BIGINT, name VARCHAR) WITH (connector = 'file', format = 'csv', path = 'out/csv');
CREATE VIEW v AS SELECT user_id, url FROM clicks;
CREATE MATERIALIZED VIEW mv AS SELECT user_id FROM clicks;
\d
\dt
\dv
\dm
\d clicks
\d nope
SELECT user_id, url, ts, 1.5 AS n, TRUE AS b
FROM clicks ORDER BY user_id;
SELECT * FROM v WHERE user_id > 5;
SELECT user_id,
   nope FROM clicks;
SELECT 12abc;
SET parallelism = 2;
SHOW parallelism;
`

// pins: --connect runs the REPL on a `clinksql serve` (here with a SCRAM user) and prints exactly what the
// embedded REPL prints for the same input; a wrong password fails at connect with a non-zero exit.
func TestREPLConnect(t *testing.T) {
	emb := newREPLSession(t, t.TempDir())
	want := emb.pipeString(parityScript)

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	srv := exec.Command(binary, "serve", "--data-dir", t.TempDir(), "--listen", addr, "--http", "127.0.0.1:0", "--user", "alice:s3cret")
	var srvLog bytes.Buffer
	srv.Stdout, srv.Stderr = &srvLog, &srvLog
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- srv.Wait() }()
	t.Cleanup(func() {
		srv.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(time.Minute):
			srv.Process.Kill()
			t.Errorf("serve did not stop on SIGTERM:\n%s", srvLog.String())
		}
	})
	for deadline := time.Now().Add(30 * time.Second); ; {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			break
		}
		select {
		case err := <-exited:
			t.Fatalf("serve exited: %v\n%s", err, srvLog.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve does not listen on %s:\n%s", addr, srvLog.String())
		}
	}

	connect := func(url, input string) (string, bool) {
		cmd := exec.Command(binary, "--connect", url)
		cmd.Stdin = strings.NewReader(input)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out // one pipe: the order of results and errors stays
		err := cmd.Run()
		if err != nil {
			if _, ok := err.(*exec.ExitError); !ok {
				t.Fatal(err)
			}
		}
		return out.String(), err == nil
	}
	got, ok := connect("postgres://alice:s3cret@"+addr+"/clinksql?sslmode=disable", parityScript)
	if !ok || got != want {
		t.Fatalf("--connect (exit 0: %v):\n%s\nembedded:\n%s", ok, got, want)
	}
	if out, ok := connect("postgres://alice:wrong@"+addr+"/clinksql?sslmode=disable", "SELECT 1;\n"); ok || !strings.Contains(out, "28P01") {
		t.Fatalf("wrong password: exit 0 %v, output %q", ok, out)
	}
}

// pins: with piped input, SIGINT cancels the running statement and ends the session (exit 1), and so does a
// SIGINT while it waits for input that has not come; the engine closes gracefully either way (the data directory
// opens again at once).
func TestREPLPipedInterrupt(t *testing.T) {
	dir := t.TempDir()
	for _, input := range []string{
		// 10 rows a second: the SELECT would take 100 s.
		"CREATE STREAM g (a BIGINT) WITH (connector = 'datagen', 'rows-per-second' = '10');\nSELECT a FROM g LIMIT 1000;\n",
		"SELECT 1 AS a;\n", // then nothing, with stdin still open
	} {
		cmd := exec.Command(binary, "--data-dir", dir)
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		io.WriteString(stdin, input)
		time.Sleep(1500 * time.Millisecond)
		cmd.Process.Signal(os.Interrupt)
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		select {
		case err = <-exited:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			t.Fatalf("still running 30 s after SIGINT:\n%s", out.String())
		}
		stdin.Close()
		if _, ok := err.(*exec.ExitError); !ok {
			t.Fatalf("exit: %v (want status 1)\n%s", err, out.String())
		}
		if strings.Contains(input, "LIMIT") && !strings.Contains(out.String(), "canceling statement due to user request (SQLSTATE 57014)") {
			t.Fatalf("output:\n%s", out.String())
		}
	}
}

// interruptOnOutput is a terminal's output: its first write (rows on the screen) presses Ctrl-C.
type interruptOnOutput struct {
	buf   bytes.Buffer
	ctrlC chan os.Signal
}

func (w *interruptOnOutput) Write(p []byte) (int, error) {
	select {
	case w.ctrlC <- syscall.SIGINT:
	default:
	}
	return w.buf.Write(p)
}

// pins: the REPL prints a SELECT's rows as they arrive (it used to print nothing before the end): a SELECT that
// never ends shows its header and first rows, and Ctrl-C then cancels it.
func TestREPLStreamsRows(t *testing.T) {
	s := newREPLSession(t, t.TempDir())
	s.pipeString(`CREATE STREAM endless (id BIGINT) WITH (connector = 'datagen', 'fields.id.kind' = 'sequence');`)
	out := &interruptOnOutput{ctrlC: make(chan os.Signal, 1)}
	s.r.out, s.r.errOut, s.r.interactive, s.r.interrupts = out, out, true, out.ctrlC
	term := &scriptedTerminal{lines: []string{"SELECT id FROM endless LIMIT 1000000000000;"}}
	if err := s.r.run(context.Background(), term); err != nil {
		t.Fatal(err)
	}
	got := out.buf.String()
	lines := strings.SplitN(got, "\n", 5)
	if len(lines) < 5 || strings.TrimSpace(lines[0]) != "id" || strings.TrimSpace(lines[2]) != "0" || strings.TrimSpace(lines[3]) != "1" ||
		!strings.HasSuffix(got, "ERROR:  canceling statement due to user request (SQLSTATE 57014)\n") {
		t.Fatalf("output:\n%.400s\n...\n%s", got, got[max(0, len(got)-200):])
	}
}
