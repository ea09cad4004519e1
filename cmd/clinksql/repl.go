package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/chzyer/readline"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/spf13/cobra"

	"github.com/clinksql/clinksql/catalog"
	"github.com/clinksql/clinksql/engine"
	"github.com/clinksql/clinksql/sql/parser"
	"github.com/clinksql/clinksql/sqlerr"
)

// The REPL: `clinksql` with no sub-command. It reads SQL line by line, runs every statement as soon as its
// terminating semicolon arrives (outside strings, quoted identifiers and comments), and prints results the way
// `clinksql exec` and psql do. Statements run on an embedded engine, or over the Postgres wire protocol on a
// `clinksql serve` given by --connect; both print through engine.WriteTable and engine.FormatError.
//
// On a terminal it has line editing, history (~/.clinksql_history), prompts and Ctrl-C handling. With piped
// stdin it reads the script without prompts and, like psql, reports an error and carries on with the next
// statement; --on-error-stop (or `\set ON_ERROR_STOP on`) makes the first error end the run with exit status 1.

const (
	promptFirst    = "clinksql=> "
	promptContinue = "clinksql-> "
	historyName    = ".clinksql_history"
)

// replOptions are the root command's flags.
type replOptions struct {
	dataDir     string
	allow       []string
	connect     string
	onErrorStop bool
}

// addREPLFlags makes the root command (no sub-command) open the REPL.
func addREPLFlags(root *cobra.Command) {
	var o replOptions
	root.Use = "clinksql [--data-dir DIR | --connect URL]"
	root.Long = `With no sub-command, clinksql opens an interactive SQL shell: on an embedded engine over --data-dir, or on a
running 'clinksql serve' given by --connect postgres://user:password@host:port/db. Statements end with ';' and
may span lines; \? lists the backslash commands. When stdin or stdout is not a terminal, statements are read from stdin
without prompts; an error is reported and the next statement runs (as psql does) unless --on-error-stop.`
	root.Args = cobra.NoArgs
	root.RunE = func(cmd *cobra.Command, args []string) error {
		return runREPLCommand(o, cmd.OutOrStdout(), cmd.ErrOrStderr())
	}
	f := root.Flags()
	f.StringVar(&o.dataDir, "data-dir", defaultDataDir, "the data directory of the embedded engine")
	f.StringSliceVar(&o.allow, "allow-path", nil, "a directory outside the data directory that connector paths may name (repeatable)")
	f.StringVar(&o.connect, "connect", "", "connect to a clinksql server (postgres://user:password@host:port/db) instead of embedding an engine")
	f.BoolVar(&o.onErrorStop, "on-error-stop", false, "with piped input, stop at the first error and exit 1 (psql's ON_ERROR_STOP)")
}

// runREPLCommand opens the backend, then runs the REPL on the terminal or on piped stdin.
func runREPLCommand(o replOptions, stdout, stderr io.Writer) (err error) {
	interactive := readline.IsTerminal(int(os.Stdin.Fd())) && readline.IsTerminal(int(os.Stdout.Fd()))

	// SIGTERM ends the session (the embedded engine still closes gracefully). SIGINT cancels the running
	// statement on a terminal; with piped input it cancels the statement and ends the run.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	var interrupts chan os.Signal
	if interactive {
		interrupts = make(chan os.Signal, 1)
		signal.Notify(interrupts, os.Interrupt)
		defer signal.Stop(interrupts)
	} else {
		var stopInt context.CancelFunc
		ctx, stopInt = signal.NotifyContext(ctx, os.Interrupt)
		defer stopInt()
	}

	r := &repl{out: stdout, errOut: stderr, interactive: interactive, onErrorStop: o.onErrorStop,
		interrupts: interrupts, source: "<stdin>"}
	var rl *readline.Instance
	if interactive {
		cfg := &readline.Config{Prompt: promptFirst, InterruptPrompt: "^C", EOFPrompt: "\\q", HistorySearchFold: true}
		if home := os.Getenv("HOME"); home != "" {
			cfg.HistoryFile = filepath.Join(home, historyName)
		}
		if rl, err = readline.NewEx(cfg); err != nil {
			return err
		}
		var closeOnce sync.Once
		closeRL := func() { closeOnce.Do(func() { rl.Close() }) }
		defer closeRL()
		stopWatch := make(chan struct{})
		defer close(stopWatch)
		go func() {
			select {
			case <-ctx.Done():
				closeRL() // SIGTERM while waiting for a line: Readline returns
			case <-stopWatch:
			}
		}()
	}

	var banner string
	if o.connect != "" {
		var askPassword func(user string) (string, error)
		if rl != nil {
			askPassword = func(user string) (string, error) {
				pw, err := rl.ReadPassword(fmt.Sprintf("Password for user %s: ", user))
				return string(pw), err
			}
		}
		rb, err := dialRemote(ctx, o.connect, func(severity, msg string) { r.notice(severity, msg) }, askPassword)
		if err != nil {
			return err
		}
		r.be = rb
		banner = fmt.Sprintf("connected to %s (server %s)", rb.addr, rb.conn.ParameterStatus("server_version"))
	} else {
		eb, err := openEmbedded(engine.Config{DataDir: o.dataDir, AllowPaths: o.allow})
		if err != nil {
			return err
		}
		eb.sess.SetNoticeHandler(func(msg string) { r.notice("NOTICE", msg) }) // FLUSH's progress, as it comes
		r.be = eb
		banner = "embedded engine on " + o.dataDir
	}
	defer func() {
		if cerr := r.be.close(); cerr != nil && err == nil {
			err = cerr
		}
	}()

	if rl == nil {
		return r.run(ctx, newPipedSource(ctx, os.Stdin))
	}
	fmt.Fprintf(stdout, "clinksql: %s\nType \"\\?\" for help.\n\n", banner)
	return r.run(ctx, terminalSource{rl})
}

// lineSource yields input lines without their newline: io.EOF at the end, errInterrupt for Ctrl-C.
type lineSource interface {
	readLine(prompt string) (string, error)
}

var errInterrupt = errors.New("interrupt")

// terminalSource reads lines with line editing and history.
type terminalSource struct{ rl *readline.Instance }

func (s terminalSource) readLine(prompt string) (string, error) {
	s.rl.SetPrompt(prompt)
	line, err := s.rl.Readline()
	if errors.Is(err, readline.ErrInterrupt) {
		return "", errInterrupt
	}
	return line, err
}

// pipedSource reads lines from a reader, whatever sizes its reads come in; it shows no prompts. A goroutine
// reads ahead one line, so that a signal (ctx) ends a session that waits for input from a pipe or a terminal.
type pipedSource struct {
	ctx   context.Context
	lines chan pipedLine
}

type pipedLine struct {
	text string
	err  error
}

func newPipedSource(ctx context.Context, r io.Reader) *pipedSource {
	s := &pipedSource{ctx: ctx, lines: make(chan pipedLine)}
	go func() {
		br := bufio.NewReader(r)
		for {
			line, err := br.ReadString('\n')
			if err == io.EOF && line != "" {
				err = nil // a last line without a newline
			}
			select {
			case s.lines <- pipedLine{strings.TrimSuffix(line, "\n"), err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	return s
}

func (s *pipedSource) readLine(string) (string, error) {
	select {
	case l := <-s.lines:
		return l.text, l.err
	case <-s.ctx.Done():
		return "", s.ctx.Err()
	}
}

// backend runs SQL text: the embedded engine or a remote server.
type backend interface {
	// run executes sql (one statement, or several): each statement's Result goes to done as it ends, a streaming
	// SELECT's rows to w as they arrive (w nil: into the Result). The error is the first one, as a *sqlerr.Error
	// whose position is a byte offset into sql.
	run(ctx context.Context, sql string, w engine.RowWriter, done func(*engine.Result)) error
	// lost reports a remote connection that is gone.
	lost() bool
	close() error
}

// embeddedBackend is an engine in this process, like `clinksql exec`'s.
type embeddedBackend struct {
	e    *engine.Engine
	sess *engine.Session
}

func openEmbedded(cfg engine.Config) (*embeddedBackend, error) {
	e, err := engine.Open(cfg)
	if err != nil {
		return nil, err
	}
	return &embeddedBackend{e: e, sess: e.NewSession()}, nil
}

func (b *embeddedBackend) run(ctx context.Context, sql string, w engine.RowWriter, done func(*engine.Result)) error {
	return b.sess.Run(ctx, sql, w, done)
}

func (b *embeddedBackend) lost() bool { return false }

// close stops the jobs gracefully (a final checkpoint); they resume when the data directory opens again.
func (b *embeddedBackend) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return b.e.Close(ctx)
}

// remoteBackend is a connection to `clinksql serve` (or any Postgres server). Every statement goes with the
// simple query protocol, so whatever the server accepts works, and comes back in text form.
type remoteBackend struct {
	conn *pgconn.PgConn
	addr string
}

// dialRemote connects to url; notices (NoticeResponse) go to notice as they arrive. When the server wants a
// password the URL (or PGPASSWORD, ~/.pgpass) did not give, askPassword (if not nil) asks the user, as psql does.
func dialRemote(ctx context.Context, url string, notice func(severity, msg string), askPassword func(user string) (string, error)) (*remoteBackend, error) {
	cfg, err := pgconn.ParseConfig(url)
	if err != nil {
		return nil, err
	}
	cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) { notice(n.Severity, n.Message) }
	// Canceling a statement's context sends a CancelRequest and waits for the server to end the statement,
	// rather than pgconn's default of breaking the connection at a deadline.
	cfg.BuildContextWatcherHandler = func(c *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.CancelRequestContextWatcherHandler{Conn: c, DeadlineDelay: time.Minute}
	}
	conn, err := pgconn.ConnectConfig(ctx, cfg)
	var pe *pgconn.PgError
	if err != nil && cfg.Password == "" && askPassword != nil && errors.As(err, &pe) && pe.Code == "28P01" {
		if cfg.Password, err = askPassword(cfg.User); err != nil {
			return nil, err
		}
		conn, err = pgconn.ConnectConfig(ctx, cfg)
	}
	if err != nil {
		return nil, err
	}
	return &remoteBackend{conn: conn, addr: fmt.Sprintf("%s:%d", cfg.Host, cfg.Port)}, nil
}

func (b *remoteBackend) run(ctx context.Context, sql string, w engine.RowWriter, done func(*engine.Result)) error {
	// Read result by result rather than with ReadAll, whose results lose their columns when they have no rows.
	mrr := b.conn.Exec(ctx, sql)
	var werr error
	for mrr.NextResult() && werr == nil {
		rr := mrr.ResultReader()
		res := wireResult(rr.FieldDescriptions())
		var batch [][]*string
		size := remoteBatch
		if w != nil && res.Columns != nil {
			res.Streamed = true
			werr = w.Columns(res.Columns)
			if liveResult(res.Columns) && werr == nil {
				// A SUBSCRIBE: its header at once, then every change as it comes.
				size, werr = 1, w.Rows(nil)
			}
		}
		for werr == nil && rr.NextRow() {
			if !res.Streamed {
				res.Rows = append(res.Rows, textValues(rr.Values()))
				continue
			}
			// Rows print as they arrive, a batch at a time (the server flushes a batch at once).
			if batch = append(batch, textValues(rr.Values())); len(batch) == size {
				werr, batch = w.Rows(batch), nil
			}
		}
		if werr == nil && len(batch) > 0 {
			werr = w.Rows(batch)
		}
		tag, err := rr.Close()
		if err != nil || werr != nil {
			break // mrr.Close reports it
		}
		res.Tag = tag.String()
		done(res)
	}
	if err := mrr.Close(); err != nil {
		return remoteError(ctx, sql, err)
	}
	return werr
}

// remoteBatch is how many rows of a remote result the REPL prints at a time.
const remoteBatch = 1024

func (b *remoteBackend) lost() bool { return b.conn.IsClosed() }

func (b *remoteBackend) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return b.conn.Close(ctx)
}

// wireResult starts an engine.Result for a wire result: the column names and type OIDs of its RowDescription
// (none for a statement that returns no rows).
func wireResult(fds []pgconn.FieldDescription) *engine.Result {
	res := &engine.Result{}
	if fds == nil {
		return res
	}
	res.Columns = make([]engine.Column, len(fds))
	for i, fd := range fds {
		res.Columns[i] = engine.Column{Name: fd.Name, OID: fd.DataTypeOID}
	}
	return res
}

// textValues copies a DataRow's text values (nil is NULL).
func textValues(row [][]byte) []*string {
	vals := make([]*string, len(row))
	for i, v := range row {
		if v != nil {
			s := string(v)
			vals[i] = &s
		}
	}
	return vals
}

// remoteError turns a server's ErrorResponse into the *sqlerr.Error the engine would have returned: its
// 1-based character position becomes a byte offset into sql.
func remoteError(ctx context.Context, sql string, err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		pos := sqlerr.NoPos
		if pe.Position > 0 {
			pos = byteOffset(sql, int(pe.Position))
		}
		return &sqlerr.Error{Code: pe.Code, Msg: pe.Message, Pos: pos, Detail: pe.Detail, Hint: pe.Hint, Err: err}
	}
	if ctx.Err() != nil {
		return sqlerr.New(sqlerr.QueryCanceled, sqlerr.NoPos, "canceling statement due to user request")
	}
	return &sqlerr.Error{Code: "08006", Msg: err.Error(), Pos: sqlerr.NoPos, Err: err} // connection_failure
}

// byteOffset converts a 1-based character position of s to a byte offset.
func byteOffset(s string, char int) int {
	n := 1
	for i := range s {
		if n == char {
			return i
		}
		n++
	}
	return len(s)
}

// repl is one session's state: the pending input and the settings the backslash commands change.
type repl struct {
	be          backend
	out, errOut io.Writer
	interactive bool
	onErrorStop bool
	timing      bool
	// interrupts delivers SIGINT on a terminal; it cancels the running statement (nil: no terminal).
	interrupts <-chan os.Signal
	// source names the input in piped errors, as a file name does for `clinksql exec -f`.
	source string

	// buf is the input not yet run, from the start of the line where it begins: whole lines, each ended by
	// "\n"; skip is where in buf the unconsumed text starts, and line the number of input lines before buf.
	buf  string
	skip int
	line int

	failed bool // an error stopped the run (--on-error-stop)
}

// run reads lines until the end of input or \q. Piped input runs an unterminated last statement at the end, as
// psql does.
func (r *repl) run(ctx context.Context, src lineSource) error {
	for ctx.Err() == nil && !r.failed {
		prompt := promptFirst
		if r.pending() {
			prompt = promptContinue
		}
		line, err := src.readLine(prompt)
		if errors.Is(err, errInterrupt) {
			r.reset() // Ctrl-C at the prompt clears the statement being typed
			continue
		}
		if err == io.EOF {
			if !r.interactive {
				r.runRest(ctx)
			}
			break
		}
		if ctx.Err() != nil {
			break // a signal ended the session
		}
		if err != nil {
			return err
		}
		if quit := r.feed(ctx, line); quit {
			break
		}
	}
	if r.failed || !r.interactive && ctx.Err() != nil {
		return exitError{}
	}
	return nil
}

// pending reports whether an unfinished statement is waiting for more lines.
func (r *repl) pending() bool { return r.buf != "" }

// reset drops the pending input.
func (r *repl) reset() {
	r.line += strings.Count(r.buf, "\n")
	r.buf, r.skip = "", 0
}

// feed takes one input line: a backslash command, or SQL that is added to the pending input, whose complete
// statements then run in order. It reports whether the session ends.
func (r *repl) feed(ctx context.Context, line string) (quit bool) {
	if trimmed := strings.TrimSpace(line); strings.HasPrefix(trimmed, `\`) && !r.insideLiteral() {
		// The command's line stays out of the statement, but counts for the line numbers of piped errors.
		if r.buf == "" {
			r.line++
		} else {
			r.buf += "\n"
		}
		return r.meta(ctx, trimmed)
	}
	if r.buf != "" && !strings.Contains(line, ";") {
		// No semicolon, no new complete statement: the unfinished one just grows (no rescan per line).
		r.buf += line + "\n"
		return false
	}
	r.buf += line + "\n"
	sc := scanStatements(r.buf, r.skip)
	for _, st := range sc.stmts {
		ok, interrupted := r.statement(ctx, st.start, st.end)
		if !ok && r.onErrorStop && !r.interactive {
			r.failed = true
			r.reset()
			return true
		}
		if interrupted {
			r.reset() // Ctrl-C cancels the rest of the input too
			return false
		}
		if ctx.Err() != nil {
			return true // a signal ended the session: nothing more runs
		}
		if r.be.lost() {
			fmt.Fprintln(r.errOut, "connection to server was lost")
			r.failed = true
			return true
		}
	}
	if !sc.tail {
		r.reset()
		return false
	}
	// Keep the unfinished statement, from the start of its line.
	lineStart := strings.LastIndexByte(r.buf[:sc.cut], '\n') + 1
	r.line += strings.Count(r.buf[:lineStart], "\n")
	r.buf, r.skip = r.buf[lineStart:], sc.cut-lineStart
	return false
}

// insideLiteral reports whether the pending input ends inside a string, quoted identifier or comment, where a
// line starting with a backslash is data.
func (r *repl) insideLiteral() bool {
	return r.buf != "" && scanStatements(r.buf, r.skip).open
}

// runRest runs what is left at the end of piped input: a statement without its semicolon.
func (r *repl) runRest(ctx context.Context) {
	if r.buf == "" {
		return
	}
	rest := r.buf[r.skip:]
	start := r.skip + len(rest) - len(strings.TrimLeft(rest, " \t\r\n"))
	end := len(strings.TrimRight(r.buf, " \t\r\n"))
	if start < end {
		if ok, _ := r.statement(ctx, start, end); !ok && r.onErrorStop {
			r.failed = true
		}
	}
	r.reset()
}

// statement runs buf[start:end] and prints its results or its error. interrupted is a Ctrl-C that canceled it.
func (r *repl) statement(ctx context.Context, start, end int) (ok, interrupted bool) {
	text := r.buf[start:end]
	ctx, done, wasInterrupted := r.statementContext(ctx)
	began := time.Now()
	out := newChangelogPrinter(r.out) // a table, or a SUBSCRIBE's changes as they come (subscribe.go)
	err := r.be.run(ctx, text, out, func(res *engine.Result) {
		engine.WriteNotices(r.errOut, res)
		out.Result(res)
	})
	elapsed := time.Since(began)
	done()
	if err != nil {
		r.printError(start, end, err)
	}
	if r.timing {
		fmt.Fprintf(r.out, "Time: %.3f ms\n", float64(elapsed.Microseconds())/1000)
	}
	return err == nil, wasInterrupted()
}

// statementContext is the context one statement runs with: on a terminal, Ctrl-C cancels it.
func (r *repl) statementContext(ctx context.Context) (context.Context, func(), func() bool) {
	ctx, cancel := context.WithCancel(ctx)
	if r.interrupts == nil {
		return ctx, cancel, func() bool { return false }
	}
	for drained := false; !drained; {
		select {
		case <-r.interrupts: // a Ctrl-C from before this statement
		default:
			drained = true
		}
	}
	var hit atomic.Bool
	stop := make(chan struct{})
	go func() {
		select {
		case <-r.interrupts:
			hit.Store(true)
			cancel()
		case <-stop:
		}
	}()
	return ctx, func() { close(stop); cancel() }, hit.Load
}

func (r *repl) printResults(results []*engine.Result) {
	for _, res := range results {
		engine.WriteNotices(r.errOut, res)
		engine.WriteTable(r.out, res)
	}
}

func (r *repl) notice(severity, msg string) {
	fmt.Fprintf(r.errOut, "%s:  %s\n", severity, msg)
}

// printError prints a statement's error with engine.FormatError. On a terminal the excerpt is the statement's
// own lines (psql's "LINE 1:"); with piped input the line and column are those of the input, as `clinksql exec
// -f` reports them for a file.
func (r *repl) printError(start, end int, err error) {
	if !r.interactive {
		e := sqlerr.As(err).Shift(r.line + start)
		text := strings.Repeat("\n", r.line) + r.buf
		fmt.Fprint(r.errOut, engine.FormatError(r.source, text, e))
		return
	}
	fmt.Fprint(r.errOut, stripSource(engine.FormatError("", r.buf[start:end], err)))
}

// stripSource removes FormatError's "source:line:col: " before "ERROR:", which means nothing at a prompt.
func stripSource(msg string) string {
	if i := strings.Index(msg, "ERROR:  "); i >= 0 && !strings.Contains(msg[:i], "\n") {
		return msg[i:]
	}
	return msg
}

// span is one statement of the pending input: buf[start:end], without its semicolon.
type span struct{ start, end int }

// scanResult is what the pending input holds.
type scanResult struct {
	stmts []span // the complete statements, in order
	cut   int    // where the rest (after the last complete statement) begins
	tail  bool   // the rest holds an unfinished statement
	open  bool   // the rest ends inside a string, quoted identifier or comment
}

// scanStatements finds the complete statements of src[from:] with the dialect's lexer: a statement ends at a
// semicolon outside strings, quoted identifiers and comments. Input that ends inside one of those is unfinished.
// Input with another lexical error (a bad escape, a stray character) cannot be tokenized past it; the text from
// the last complete statement is then one statement once a line ends with a semicolon, and the engine reports
// the error with its position.
func scanStatements(src string, from int) scanResult {
	res := scanResult{cut: from}
	text := src[from:]
	// Lex the longest prefix that lexes: the whole text, or up to where its first error starts.
	end := len(text)
	var firstErr *parser.SyntaxError
	var toks []parser.Token
	for {
		var err error
		toks, err = parser.Lex(text[:end])
		if err == nil {
			break
		}
		var se *parser.SyntaxError
		if !errors.As(err, &se) || se.Pos >= end {
			toks, end = nil, 0
			break
		}
		if firstErr == nil {
			firstErr = se
		}
		end = se.Pos
	}
	start := -1
	for _, t := range toks {
		if t.Kind == parser.EOF {
			break
		}
		if t.Kind == parser.Op && t.Text == ";" {
			if start >= 0 {
				res.stmts = append(res.stmts, span{from + start, from + t.Pos})
			}
			start = -1
			res.cut = from + t.End
			continue
		}
		if start < 0 {
			start = t.Pos
		}
	}
	if firstErr == nil {
		res.tail = start >= 0
		return res
	}
	res.tail = true
	if strings.HasPrefix(firstErr.Msg, "unterminated") && end == firstErr.Pos {
		res.open = true
		return res
	}
	rest := src[res.cut:]
	trimmed := strings.TrimRight(rest, " \t\r\n")
	if strings.HasSuffix(trimmed, ";") {
		lead := len(rest) - len(strings.TrimLeft(rest, " \t\r\n"))
		res.stmts = append(res.stmts, span{res.cut + lead, res.cut + len(trimmed) - 1})
		res.cut += len(trimmed)
		res.tail = false
	}
	return res
}

// meta runs a backslash command. It reports whether the session ends.
func (r *repl) meta(ctx context.Context, cmdline string) (quit bool) {
	fields := strings.Fields(cmdline)
	name, args := fields[0], fields[1:]
	ok := true
	switch name {
	case `\q`, `\quit`:
		return true
	case `\?`, `\h`, `\help`:
		io.WriteString(r.out, replHelp)
	case `\r`, `\reset`:
		r.reset()
		fmt.Fprintln(r.out, "Query buffer reset (cleared).")
	case `\timing`:
		on := !r.timing
		if len(args) > 0 {
			var valid bool
			on, valid = parseBool(args[0])
			if !valid {
				fmt.Fprintf(r.errOut, "\\timing: unrecognized value %q: on or off expected\n", args[0])
				ok = false
				break
			}
		}
		r.timing = on
		fmt.Fprintf(r.out, "Timing is %s.\n", onOff(on))
	case `\set`:
		ok = r.set(args)
	case `\d`:
		if len(args) > 0 {
			ok = r.describe(ctx, args)
		} else {
			ok = r.listRelations(ctx, relStreams, relSinks, relViews, relMaterialized)
		}
	case `\dt`:
		ok = r.listRelations(ctx, relStreams, relSinks)
	case `\dv`:
		ok = r.listRelations(ctx, relViews)
	case `\dm`:
		ok = r.listRelations(ctx, relMaterialized)
	case `\j`, `\jobs`:
		ok = r.metaQuery(ctx, "SHOW JOBS")
	default:
		fmt.Fprintf(r.errOut, "invalid command %s\nTry \\? for help.\n", name)
		ok = false
	}
	if !ok && r.onErrorStop && !r.interactive {
		r.failed = true
		return true
	}
	if r.be.lost() {
		fmt.Fprintln(r.errOut, "connection to server was lost")
		r.failed = true
		return true
	}
	return false
}

const replHelp = `General
  \q                 quit (Ctrl-D too)
  \? or \help        this help
  \r                 clear the statement being typed (Ctrl-C too)
  \timing [on|off]   print how long each statement took
  \set ON_ERROR_STOP on|off
                     with piped input, stop at the first error

Catalog
  \d                 list streams, sinks, views and materialized views
  \d NAME            describe a stream, sink or view (DESCRIBE NAME)
  \dt                list streams and sinks
  \dv                list views
  \dm                list materialized views
  \j or \jobs        list jobs (SHOW JOBS)

SQL statements end with ';' and may span lines; Ctrl-C cancels a running statement.
`

func parseBool(s string) (value, ok bool) {
	switch strings.ToLower(s) {
	case "on", "true", "1", "yes":
		return true, true
	case "off", "false", "0", "no":
		return false, true
	}
	return false, false
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// set is \set, for the one variable the REPL has: ON_ERROR_STOP.
func (r *repl) set(args []string) bool {
	if len(args) == 0 {
		fmt.Fprintf(r.out, "ON_ERROR_STOP = '%s'\n", onOff(r.onErrorStop))
		return true
	}
	if !strings.EqualFold(args[0], "ON_ERROR_STOP") {
		fmt.Fprintf(r.errOut, "\\set: unknown variable %q (only ON_ERROR_STOP)\n", args[0])
		return false
	}
	on := true // psql: \set NAME with no value sets it to the empty string, which counts as on
	if len(args) > 1 {
		var valid bool
		if on, valid = parseBool(args[1]); !valid {
			fmt.Fprintf(r.errOut, "\\set: unrecognized value %q for ON_ERROR_STOP: on or off expected\n", args[1])
			return false
		}
	}
	r.onErrorStop = on
	return true
}

// metaQuery runs the SQL a backslash command stands for and prints its result. An error prints without a
// source excerpt: the user did not type that SQL.
func (r *repl) metaQuery(ctx context.Context, sql string) bool {
	results, err := r.query(ctx, sql)
	if err != nil {
		return false
	}
	r.printResults(results)
	return true
}

func (r *repl) query(ctx context.Context, sql string) ([]*engine.Result, error) {
	ctx, done, _ := r.statementContext(ctx)
	defer done()
	var results []*engine.Result
	err := r.be.run(ctx, sql, nil, func(res *engine.Result) { results = append(results, res) })
	if err != nil {
		e := *sqlerr.As(err)
		e.Pos = sqlerr.NoPos
		fmt.Fprint(r.errOut, stripSource(engine.FormatError("", "", &e)))
	}
	return results, err
}

// describe is `\d name`: DESCRIBE name. The name is an identifier as SQL writes it (quoted to keep case).
func (r *repl) describe(ctx context.Context, args []string) bool {
	name := strings.Join(args, " ")
	toks, err := parser.Lex(name)
	valid := err == nil && len(toks) == 2 && (toks[0].Kind == parser.Ident || toks[0].Kind == parser.QuotedIdent)
	if !valid {
		fmt.Fprintf(r.errOut, "\\d: %q is not a name\n", name)
		return false
	}
	return r.metaQuery(ctx, "DESCRIBE "+name)
}

// relKind is one kind of catalog object \d lists: the SHOW statement that lists it, and the column of that
// statement's result shown as Connector/Job.
type relKind struct {
	show, kind, extra string
}

var (
	relStreams      = relKind{"SHOW STREAMS", "stream", "connector"}
	relSinks        = relKind{"SHOW SINKS", "sink", "connector"}
	relViews        = relKind{"SHOW VIEWS", "view", ""}
	relMaterialized = relKind{"SHOW MATERIALIZED VIEWS", "materialized view", "job_id"}
)

// listRelations prints one table of the objects of the given kinds, by name: Name | Kind | Connector/Job.
func (r *repl) listRelations(ctx context.Context, kinds ...relKind) bool {
	type rel struct{ name, kind, extra string }
	var rels []rel
	for _, k := range kinds {
		results, err := r.query(ctx, k.show)
		if err != nil {
			return false
		}
		if len(results) != 1 {
			fmt.Fprintf(r.errOut, "ERROR:  %s returned %d results\n", k.show, len(results))
			return false
		}
		res := results[0]
		nameCol, extraCol := columnIndex(res, "name"), columnIndex(res, k.extra)
		if nameCol < 0 {
			fmt.Fprintf(r.errOut, "ERROR:  %s returned no name column\n", k.show)
			return false
		}
		for _, row := range res.Rows {
			x := rel{name: value(row, nameCol), kind: k.kind, extra: value(row, extraCol)}
			rels = append(rels, x)
		}
	}
	if len(rels) == 0 {
		fmt.Fprintln(r.out, "Did not find any relations.")
		return true
	}
	sort.SliceStable(rels, func(i, j int) bool { return rels[i].name < rels[j].name })
	res := &engine.Result{Tag: "SELECT", Columns: []engine.Column{textCol("Name"), textCol("Kind"), textCol("Connector/Job")}}
	for _, x := range rels {
		res.Rows = append(res.Rows, []*string{&x.name, &x.kind, &x.extra})
	}
	writeTitled(r.out, "List of relations", res)
	return true
}

func textCol(name string) engine.Column { return engine.Column{Name: name, OID: catalog.OIDText} }

func columnIndex(res *engine.Result, name string) int {
	if name == "" {
		return -1
	}
	for i, c := range res.Columns {
		if c.Name == name {
			return i
		}
	}
	return -1
}

func value(row []*string, i int) string {
	if i < 0 || i >= len(row) || row[i] == nil {
		return ""
	}
	return *row[i]
}

// writeTitled writes a table under a title centred over it, as psql titles its \d lists.
func writeTitled(w io.Writer, title string, res *engine.Result) {
	var b bytes.Buffer
	engine.WriteTable(&b, res)
	header, _, _ := strings.Cut(b.String(), "\n")
	pad := max(0, (utf8.RuneCountInString(header)-utf8.RuneCountInString(title))/2)
	fmt.Fprintf(w, "%s%s\n", strings.Repeat(" ", pad), title)
	w.Write(b.Bytes())
}
