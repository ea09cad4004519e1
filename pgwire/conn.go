package pgwire

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/clinksql/clinksql/engine"
	"github.com/clinksql/clinksql/sql/parser"
	"github.com/clinksql/clinksql/sqlerr"
)

// SQLSTATEs of the connection level (the statement-level ones live in sqlerr).
const (
	codeInvalidAuthSpec  = "28000"
	codeInvalidPassword  = "28P01"
	codeAdminShutdown    = "57P01"
	codeDuplicatePrepStm = "42P05"
	codeDuplicateCursor  = "42P03"
	codeUndefinedCursor  = "34000"
	// codeCharNotInRepertoire is an invalid UTF-8 byte sequence.
	codeCharNotInRepertoire = "22021"
)

// maxAuthMessage bounds a message during authentication, as Postgres' PG_MAX_AUTH_TOKEN_LENGTH does.
const maxAuthMessage = 65535

// flushThreshold is how much output a connection buffers before writing it while it streams rows.
const flushThreshold = 64 << 10

// conn is one client connection: its startup, its engine.Session and the protocol state around it (prepared
// statements, portals, skip-until-Sync). One goroutine (serve) runs everything that touches the session; a
// second one reads messages, so a client that goes away cancels what is running.
type conn struct {
	s   *Server
	nc  net.Conn // the TLS connection after an SSLRequest answered 'S'
	be  *pgproto3.Backend
	log *slog.Logger

	user   string
	sess   *engine.Session
	pid    uint32
	secret []byte

	// ctx ends when the client is gone or the server shuts down; statements run under a child of it.
	ctx        context.Context
	cancelConn context.CancelFunc

	mu           sync.Mutex
	cancelStmt   context.CancelFunc // the running statement's, nil when idle
	canceled     bool               // a CancelRequest hit the running statement
	abortedWrite bool               // a SUBSCRIBE cut off set a write deadline (subscribe.go)

	stmts          map[string]*preparedStmt
	portals        map[string]*portal
	ignoreTillSync bool
	reported       map[string]string // ParameterStatus values the client has
	buffered       int               // bytes sent since the last flush (roughly)
	broken         bool              // a write failed: the client is gone
}

// serveConn runs one connection to its end. Nothing a client sends may take the server down: a panic is logged
// and ends only this connection.
func (s *Server) serveConn(nc net.Conn) {
	defer s.untrack(nc)
	c := &conn{s: s, nc: nc, log: s.log.With("remote", nc.RemoteAddr().String()),
		stmts: map[string]*preparedStmt{}, portals: map[string]*portal{}, reported: map[string]string{}}
	defer func() { c.nc.Close() }()
	defer func() {
		if r := recover(); r != nil {
			c.log.Error("panic serving a connection; connection closed", "panic", r, "stack", string(debug.Stack()))
		}
	}()
	if !c.startup() {
		return
	}
	defer s.unregister(c)
	defer s.metrics.open.Dec() // counted by startup
	defer c.sess.Close()       // its cursors (and their subscriptions) end with the connection
	c.serve()
}

// ---- startup ----

// startup runs the startup phase: SSL/GSS negotiation, a cancel request, or a StartupMessage followed by
// authentication. It reports whether a session is ready.
func (c *conn) startup() bool {
	c.nc.SetDeadline(time.Now().Add(c.s.cfg.StartupTimeout))
	c.be = pgproto3.NewBackend(c.nc, c.nc)
	tlsDone := false
	for {
		m, err := c.be.ReceiveStartupMessage()
		if err != nil {
			if !isGone(err) {
				// Too short, too long (over 10000 bytes), an unknown request code or protocol version.
				c.fatal(sqlerr.ProtocolViolation, "%v", err)
			}
			return false
		}
		switch m := m.(type) {
		case *pgproto3.SSLRequest:
			if tlsDone {
				c.fatal(sqlerr.ProtocolViolation, "SSLRequest over an encrypted connection")
				return false
			}
			if c.s.cfg.TLS == nil {
				if _, err := c.nc.Write([]byte{'N'}); err != nil {
					return false
				}
				continue
			}
			if _, err := c.nc.Write([]byte{'S'}); err != nil {
				return false
			}
			// A new Backend: anything the client sent before the handshake stays unread in the old one's
			// buffer (Postgres refuses such plaintext; dropping it is as safe).
			tc := tls.Server(c.nc, c.s.cfg.TLS)
			if err := tc.Handshake(); err != nil {
				c.log.Info("TLS handshake failed", "err", err)
				return false
			}
			c.nc, c.be, tlsDone = tc, pgproto3.NewBackend(tc, tc), true
		case *pgproto3.GSSEncRequest:
			if _, err := c.nc.Write([]byte{'N'}); err != nil {
				return false
			}
		case *pgproto3.CancelRequest:
			c.s.cancelRequest(m.ProcessID, m.SecretKey)
			return false // a cancel connection gets no answer
		case *pgproto3.StartupMessage:
			return c.authenticate(m)
		default:
			return false
		}
	}
}

// authenticate checks the startup parameters and the password, starts the session and sends what a client
// expects before its first query: ParameterStatus, BackendKeyData, ReadyForQuery.
func (c *conn) authenticate(m *pgproto3.StartupMessage) bool {
	params := m.Parameters
	c.user = params["user"]
	if c.user == "" {
		c.fatal(codeInvalidAuthSpec, "no PostgreSQL user name specified in startup packet")
		return false
	}
	c.log = c.log.With("user", c.user)
	if r := strings.ToLower(params["replication"]); r != "" && r != "false" && r != "off" && r != "0" && r != "no" {
		c.fatal(sqlerr.FeatureNotSupported, "replication connections are not supported")
		return false
	}
	// We speak 3.0: a 3.2 client (or one asking for _pq_ protocol options) is told so, as Postgres does.
	var unknownOpts []string
	for k := range params {
		if strings.HasPrefix(k, "_pq_.") {
			unknownOpts = append(unknownOpts, k)
		}
	}
	if m.ProtocolVersion != pgproto3.ProtocolVersion30 || len(unknownOpts) > 0 {
		sort.Strings(unknownOpts)
		c.be.Send(&pgproto3.NegotiateProtocolVersion{NewestMinorProtocol: 0, UnrecognizedOptions: unknownOpts})
	}
	if len(c.s.verifiers) > 0 {
		if !c.scramAuth() {
			return false
		}
	}
	c.be.Send(&pgproto3.AuthenticationOk{})
	c.be.SetAuthType(pgproto3.AuthTypeOk)
	c.be.SetMaxBodyLen(c.s.cfg.MaxMessageSize)
	c.nc.SetDeadline(time.Time{})

	c.sess = c.s.eng.NewSession()
	// Notices given while a statement runs (FLUSH's progress) reach the client at once, on the statement's
	// goroutine, which is the one that writes to the connection meanwhile.
	c.sess.SetNoticeHandler(func(msg string) {
		c.be.Send(notice(msg))
		c.flush()
	})
	c.applyStartupParams(params)
	c.secret = randomBytes(4)
	c.s.register(c)
	c.reportParams()
	c.be.Send(&pgproto3.BackendKeyData{ProcessID: c.pid, SecretKey: c.secret})
	// Counted before ReadyForQuery leaves: a client that has connected is in the figures it can read next.
	c.s.metrics.connections.Inc()
	c.s.metrics.open.Inc()
	c.be.Send(&pgproto3.ReadyForQuery{TxStatus: 'I'})
	if err := c.be.Flush(); err != nil {
		c.s.metrics.open.Dec()
		c.s.unregister(c)
		return false
	}
	c.log.Debug("session started", "pid", c.pid, "database", params["database"], "application", params["application_name"])
	return true
}

// scramAuth runs SCRAM-SHA-256 for c.user. An unknown user goes through the same exchange against a mock
// verifier and fails at the proof, like a wrong password.
func (c *conn) scramAuth() bool {
	c.be.SetMaxBodyLen(maxAuthMessage)
	v, known := c.s.verifiers[c.user]
	if !known {
		v = c.s.mockVerifier(c.user)
	}
	x := &scramExchange{v: v}
	c.be.SetAuthType(pgproto3.AuthTypeSASL)
	c.be.Send(&pgproto3.AuthenticationSASL{AuthMechanisms: []string{scramMechanism}})
	if c.be.Flush() != nil {
		return false
	}
	m, err := c.be.Receive()
	if err != nil {
		// psql hangs up here to prompt for a password, then connects again.
		c.authReceiveFailed(err)
		return false
	}
	first, ok := m.(*pgproto3.SASLInitialResponse)
	if !c.saslMessage(m, ok) {
		return false
	}
	if first.AuthMechanism != scramMechanism {
		c.fatal(codeInvalidAuthSpec, "client selected an invalid SASL authentication mechanism")
		return false
	}
	if hasNUL(first.Data) {
		c.fatal(sqlerr.ProtocolViolation, "malformed SCRAM message")
		return false
	}
	serverFirst, err := x.clientFirst(first.Data, randomBytes(scramNonceLen))
	if err != nil {
		c.fatal(sqlerr.ProtocolViolation, "%v", err)
		return false
	}
	c.be.SetAuthType(pgproto3.AuthTypeSASLContinue)
	c.be.Send(&pgproto3.AuthenticationSASLContinue{Data: []byte(serverFirst)})
	if c.be.Flush() != nil {
		return false
	}
	m, err = c.be.Receive()
	if err != nil {
		c.authReceiveFailed(err)
		return false
	}
	final, ok := m.(*pgproto3.SASLResponse)
	if !c.saslMessage(m, ok) {
		return false
	}
	serverFinal, ok, err := x.clientFinal(final.Data)
	if err != nil {
		c.fatal(sqlerr.ProtocolViolation, "%v", err)
		return false
	}
	if !ok || !known {
		c.log.Info("password authentication failed", "known_user", known)
		c.fatal(codeInvalidPassword, "password authentication failed for user %q", c.user)
		return false
	}
	c.be.Send(&pgproto3.AuthenticationSASLFinal{Data: []byte(serverFinal)})
	return true
}

// saslMessage reports whether m is the SASL message expected; a client that terminates instead (psql hangs up
// to prompt for a password) leaves quietly.
func (c *conn) saslMessage(m pgproto3.FrontendMessage, ok bool) bool {
	if ok {
		return true
	}
	if _, bye := m.(*pgproto3.Terminate); !bye {
		c.fatal(sqlerr.ProtocolViolation, "expected SASL response, got message type %T", m)
	}
	return false
}

func (c *conn) authReceiveFailed(err error) {
	if !isGone(err) {
		c.fatal(sqlerr.ProtocolViolation, "%v", err)
	}
}

// applyStartupParams applies the startup packet's settings (application_name, DateStyle, -c options, ...) as
// SET statements. A setting the engine refuses (a TimeZone other than UTC from a JDBC driver, say) is logged and
// ignored rather than refusing the connection: the client learns the value in force from ParameterStatus.
func (c *conn) applyStartupParams(params map[string]string) {
	settings := map[string]string{}
	for k, v := range params {
		switch {
		case k == "user" || k == "database" || k == "replication" || strings.HasPrefix(k, "_pq_."):
		case k == "options":
			for name, value := range parseOptions(v) {
				settings[name] = value
			}
		default:
			settings[k] = v
		}
	}
	names := make([]string, 0, len(settings))
	for k := range settings {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, name := range names {
		stmt := "SET " + quoteIdent(name) + " = " + quoteLiteral(settings[name])
		if _, err := c.sess.Execute(c.s.ctx, stmt); err != nil {
			c.log.Info("startup parameter ignored", "name", name, "value", settings[name], "err", err)
		}
	}
}

// parseOptions reads the startup "options" parameter (PGOPTIONS): "-c name=value" and "--name=value" words,
// with backslash escaping spaces.
func parseOptions(s string) map[string]string {
	var words []string
	var w strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case ch == '\\' && i+1 < len(s):
			i++
			w.WriteByte(s[i])
			inWord = true
		case ch == ' ' || ch == '\t':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
		default:
			w.WriteByte(ch)
			inWord = true
		}
	}
	if inWord {
		words = append(words, w.String())
	}
	out := map[string]string{}
	for i := 0; i < len(words); i++ {
		var kv string
		switch {
		case words[i] == "-c" && i+1 < len(words):
			i++
			kv = words[i]
		case strings.HasPrefix(words[i], "-c"):
			kv = words[i][2:]
		case strings.HasPrefix(words[i], "--"):
			kv = words[i][2:]
		default:
			continue
		}
		if name, value, ok := strings.Cut(kv, "="); ok && name != "" {
			out[strings.ReplaceAll(name, "-", "_")] = value
		}
	}
	return out
}

func quoteIdent(s string) string   { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
func quoteLiteral(s string) string { return `'` + strings.ReplaceAll(s, `'`, `''`) + `'` }

// reportedParams are the parameters Postgres reports with ParameterStatus (GUC_REPORT), by their Postgres names,
// with the session variable each reads ("" for a fixed value).
var reportedParams = []struct{ name, key, fixed string }{
	{"application_name", "application_name", ""},
	{"client_encoding", "client_encoding", ""},
	{"DateStyle", "datestyle", ""},
	{"default_transaction_read_only", "", "off"},
	{"in_hot_standby", "", "off"},
	{"integer_datetimes", "integer_datetimes", ""},
	{"IntervalStyle", "intervalstyle", ""},
	{"is_superuser", "is_superuser", ""},
	{"server_encoding", "server_encoding", ""},
	{"server_version", "server_version", ""},
	{"session_authorization", "", ""},
	{"standard_conforming_strings", "standard_conforming_strings", ""},
	{"TimeZone", "timezone", ""},
}

// reportParams sends ParameterStatus for every reported parameter whose value the client does not have yet (all
// of them after authentication; those a SET changed later).
func (c *conn) reportParams() {
	for _, p := range reportedParams {
		v := p.fixed
		switch {
		case p.key != "":
			v = c.sess.Var(p.key)
		case p.name == "session_authorization":
			v = c.user
		}
		if old, ok := c.reported[p.name]; ok && old == v {
			continue
		}
		c.reported[p.name] = v
		c.be.Send(&pgproto3.ParameterStatus{Name: p.name, Value: v})
	}
}

// ---- the message loop ----

// serve reads and answers messages until the client terminates or goes away, a protocol error, or shutdown.
func (c *conn) serve() {
	c.ctx, c.cancelConn = context.WithCancel(c.s.ctx)
	defer c.cancelConn()
	msgs := make(chan pgproto3.FrontendMessage)
	var readErr error
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		defer close(msgs)
		defer func() {
			if r := recover(); r != nil {
				c.log.Error("panic decoding a message", "panic", r, "stack", string(debug.Stack()))
				readErr = fmt.Errorf("malformed message")
			}
		}()
		for {
			m, err := c.be.Receive()
			if err != nil {
				readErr = err
				if isGone(err) {
					c.cancelConn() // the client vanished: stop what it started
				}
				return
			}
			m = cloneMessage(m) // Receive's messages are overwritten by the next Receive
			// After Terminate too: the hang-up that follows it cancels a statement still running, like any
			// client that goes away.
			select {
			case msgs <- m:
			case <-c.ctx.Done():
				return
			}
		}
	}()
	defer func() {
		c.cancelConn() // unblocks a reader handing over a message
		c.nc.Close()   // unblocks a reader waiting for input
		<-readerDone
	}()
	for {
		var m pgproto3.FrontendMessage
		var ok bool
		select {
		case m, ok = <-msgs:
		case <-c.s.ctx.Done():
			c.fatal(codeAdminShutdown, "terminating connection due to administrator command")
			return
		}
		if !ok {
			if readErr != nil && !isGone(readErr) {
				var tooLong *pgproto3.ExceededMaxBodyLenErr
				if errors.As(readErr, &tooLong) {
					c.fatal(sqlerr.ProtocolViolation, "message of %d bytes exceeds the limit of %d bytes", tooLong.ActualBodyLen, tooLong.MaxExpectedBodyLen)
				} else {
					c.fatal(sqlerr.ProtocolViolation, "invalid frontend message: %v", readErr)
				}
			}
			return
		}
		if !c.handle(m) || c.broken {
			return
		}
		// Answers to a pipeline of small messages (ParseComplete, BindComplete, errors) queue up until Sync;
		// write them out now and then, so a client that sends without reading meets TCP backpressure instead
		// of growing our buffer.
		if c.buffered += 256; c.buffered >= flushThreshold {
			c.flush()
		}
		if c.s.ctx.Err() != nil {
			c.fatal(codeAdminShutdown, "terminating connection due to administrator command")
			return
		}
	}
}

// handle answers one message; false ends the connection.
func (c *conn) handle(m pgproto3.FrontendMessage) bool {
	switch m.(type) {
	case *pgproto3.Terminate:
		return false
	case *pgproto3.Sync:
		c.ignoreTillSync = false
		c.sync()
		return true
	}
	if c.ignoreTillSync {
		return true // after an error in an extended-protocol exchange, everything up to Sync is skipped
	}
	switch m := m.(type) {
	case *pgproto3.Query:
		c.simpleQuery(m.String)
	case *pgproto3.Parse:
		c.parse(m)
	case *pgproto3.Bind:
		c.bind(m)
	case *pgproto3.Describe:
		c.describe(m)
	case *pgproto3.Execute:
		c.execute(m)
	case *pgproto3.Close:
		c.close(m)
	case *pgproto3.Flush:
		c.flush()
	case *pgproto3.CopyData, *pgproto3.CopyDone, *pgproto3.CopyFail:
		// Outside COPY these are ignored, as Postgres does.
	case *pgproto3.FunctionCall:
		c.extendedError(sqlerr.New(sqlerr.FeatureNotSupported, sqlerr.NoPos, "function call messages are not supported"), "")
	default:
		c.fatal(sqlerr.ProtocolViolation, "unexpected message %T", m)
		return false
	}
	return true
}

// sync ends an extended-protocol exchange: outside BEGIN ... COMMIT the implicit transaction ends and with it
// every portal, as in Postgres.
func (c *conn) sync() {
	if !c.sess.InTransaction() {
		clear(c.portals)
	}
	c.readyForQuery()
}

func (c *conn) readyForQuery() {
	c.reportParams()
	status := byte('I')
	if c.sess.InTransaction() {
		status = 'T'
	}
	c.be.Send(&pgproto3.ReadyForQuery{TxStatus: status})
	c.flush()
}

func (c *conn) flush() {
	c.buffered = 0
	if err := c.be.Flush(); err != nil {
		c.broken = true
	}
}

// send queues a message, writing out the buffer once it holds flushThreshold bytes, so a large result streams
// instead of accumulating.
func (c *conn) send(m pgproto3.BackendMessage, size int) {
	c.be.Send(m)
	c.buffered += size
	if c.buffered >= flushThreshold {
		c.flush()
	}
}

// run runs one statement under a context that a CancelRequest, the client going away or shutdown cancels.
func (c *conn) run(f func(ctx context.Context) error) error {
	ctx, cancel := context.WithCancel(c.ctx)
	defer cancel()
	c.mu.Lock()
	c.cancelStmt, c.canceled = cancel, false
	c.mu.Unlock()
	err := f(ctx)
	c.mu.Lock()
	c.cancelStmt = nil
	canceled := c.canceled
	c.mu.Unlock()
	if err != nil && canceled && sqlerr.Code(err) != sqlerr.QueryCanceled {
		// However the engine reported the interruption, the client asked for it.
		err = sqlerr.New(sqlerr.QueryCanceled, sqlerr.NoPos, "canceling statement due to user request")
	}
	return err
}

// interruptedByShutdown reports a statement that failed because the server is shutting down: its error is not
// sent, the FATAL 57P01 that ends the connection says it all, as in Postgres.
func (c *conn) interruptedByShutdown(err error) bool { return err != nil && c.s.ctx.Err() != nil }

// cancelStatement cancels the running statement, if any (CancelRequest).
func (c *conn) cancelStatement() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cancelStmt != nil {
		c.canceled = true
		c.cancelStmt()
	}
}

// ---- simple query ----

func (c *conn) simpleQuery(sql string) {
	// A Query ends the unnamed statement and portal, as in Postgres.
	delete(c.stmts, "")
	delete(c.portals, "")
	results := 0
	rs := &rowStream{c: c, describe: true}
	err := c.run(func(ctx context.Context) error {
		if !utf8.ValidString(sql) {
			return invalidUTF8()
		}
		return c.sess.Run(ctx, sql, rs, func(r *engine.Result) {
			results++
			c.s.metrics.statement(nil)
			if rs.err != nil {
				return
			}
			c.sendNotices(r)
			rs.endStatement(true) // COPY's CopyDone
			if r.Columns != nil && !r.Streamed {
				c.be.Send(rowDescription(r.Columns, nil))
				if rs.err = c.sendRows(r.Columns, nil, r.Rows); rs.err != nil {
					return
				}
			}
			c.be.Send(&pgproto3.CommandComplete{CommandTag: []byte(r.Tag)})
		})
	})
	if c.interruptedByShutdown(err) {
		return
	}
	if rs.err != nil {
		err = rs.err
	}
	rs.endStatement(false)
	switch {
	case err != nil:
		c.s.metrics.statement(err)
		c.sendError(err, sql)
	case results == 0:
		c.be.Send(&pgproto3.EmptyQueryResponse{})
	}
	if !c.sess.InTransaction() {
		clear(c.portals)
	}
	c.readyForQuery()
}

func (c *conn) sendNotices(r *engine.Result) {
	for _, n := range r.Notices {
		c.be.Send(notice(n))
	}
}

func notice(msg string) *pgproto3.NoticeResponse {
	return &pgproto3.NoticeResponse{Severity: "NOTICE", SeverityUnlocalized: "NOTICE", Code: "00000", Message: msg}
}

// rowDescription describes columns; formats are per column (nil: all text).
func rowDescription(cols []engine.Column, formats []int16) *pgproto3.RowDescription {
	rd := &pgproto3.RowDescription{Fields: make([]pgproto3.FieldDescription, len(cols))}
	for i, col := range cols {
		f := pgproto3.FieldDescription{Name: []byte(col.Name), DataTypeOID: col.OID, DataTypeSize: typeSize(col.OID),
			TypeModifier: -1}
		if formats != nil {
			f.Format = formats[i]
		}
		rd.Fields[i] = f
	}
	return rd
}

// sendRows sends rows in the given formats (nil: text). A value that cannot be encoded in binary is an error;
// the rows before it went out.
func (c *conn) sendRows(cols []engine.Column, formats []int16, rows [][]*string) error {
	for _, row := range rows {
		values := make([][]byte, len(row))
		size := 5
		for j, v := range row {
			size += 4
			if v == nil {
				continue
			}
			if formats != nil && j < len(formats) && formats[j] == 1 {
				// Never nil: an empty value is not NULL.
				var b []byte
				var err error
				if nestedBinary(cols[j].Type) {
					b, err = appendNestedBinary(make([]byte, 0, 64), cols[j].Type, *v)
				} else {
					b, err = appendBinary(make([]byte, 0, 8), cols[j].OID, *v)
				}
				if err != nil {
					return sqlerr.New(sqlerr.InternalError, sqlerr.NoPos, "column %q: %v", cols[j].Name, err)
				}
				values[j] = b
			} else {
				values[j] = []byte(*v)
			}
			size += len(values[j])
		}
		c.send(&pgproto3.DataRow{Values: values}, size)
	}
	return nil
}

// rowStream sends a SELECT's rows as the engine produces them (engine.RowWriter): DataRows batch by batch, each
// batch flushed, so the client sees the first rows at once and the server holds no more than a batch.
type rowStream struct {
	c *conn
	// describe: Columns sends the RowDescription (simple protocol); otherwise Describe sent it and formats
	// (resolved by resolve when the columns changed since) say how each column goes.
	describe bool
	formats  []int16
	resolve  func(cols []engine.Column) ([]int16, error)
	cols     []engine.Column
	// err is a failure to send a result (a value with no binary form): the statement's error.
	err error
	// copying: COPY ... TO STDOUT sent CopyOutResponse; CopyDone is owed when the statement ends well.
	copying bool
}

func (s *rowStream) Columns(cols []engine.Column) error {
	s.cols = cols
	if s.describe {
		s.c.be.Send(rowDescription(cols, nil))
		return nil
	}
	if s.resolve != nil {
		var err error
		s.formats, err = s.resolve(cols)
		return err
	}
	return nil
}

func (s *rowStream) Rows(rows [][]*string) error {
	if err := s.c.sendRows(s.cols, s.formats, rows); err != nil {
		return err
	}
	s.c.flush()
	if s.c.broken {
		// The client is gone: end the statement (nothing reaches the client any more).
		return sqlerr.New(sqlerr.ConnectionFailure, sqlerr.NoPos, "could not send data to client")
	}
	return nil
}

// ---- errors ----

// sendError sends a statement error. sql is the text its position points into.
func (c *conn) sendError(err error, sql string) {
	e := sqlerr.As(err)
	er := &pgproto3.ErrorResponse{Severity: "ERROR", SeverityUnlocalized: "ERROR", Code: e.Code, Message: e.Msg,
		Detail: e.Detail, Hint: e.Hint}
	if e.Pos != sqlerr.NoPos && sql != "" {
		er.Position = int32(parser.CharOffset(sql, e.Pos))
	}
	if e.Code == sqlerr.InternalError {
		c.log.Warn("internal error", "err", err)
	}
	c.be.Send(er)
}

// extendedError reports an error inside an extended-protocol exchange: the rest of it, up to Sync, is skipped.
func (c *conn) extendedError(err error, sql string) {
	c.sendError(err, sql)
	c.ignoreTillSync = true
}

// fatal sends a FATAL error; the caller closes the connection.
func (c *conn) fatal(code, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	c.log.Debug("closing connection", "code", code, "msg", msg)
	c.be.Send(&pgproto3.ErrorResponse{Severity: "FATAL", SeverityUnlocalized: "FATAL", Code: code, Message: msg})
	c.flush()
}

// isGone reports an error that means the client's connection is gone rather than a malformed message.
func isGone(err error) bool {
	var ne *net.OpError
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, &ne)
}

// cloneMessage copies a message out of the Backend's buffers, which the next Receive reuses.
func cloneMessage(m pgproto3.FrontendMessage) pgproto3.FrontendMessage {
	switch m := m.(type) {
	case *pgproto3.Query:
		c := *m
		return &c
	case *pgproto3.Parse:
		c := *m
		c.ParameterOIDs = slices.Clone(m.ParameterOIDs)
		return &c
	case *pgproto3.Bind:
		c := *m
		c.ParameterFormatCodes = slices.Clone(m.ParameterFormatCodes)
		c.ResultFormatCodes = slices.Clone(m.ResultFormatCodes)
		c.Parameters = make([][]byte, len(m.Parameters))
		for i, p := range m.Parameters {
			c.Parameters[i] = bytes.Clone(p) // nil (NULL) stays nil
		}
		return &c
	case *pgproto3.Describe:
		c := *m
		return &c
	case *pgproto3.Execute:
		c := *m
		return &c
	case *pgproto3.Close:
		c := *m
		return &c
	case *pgproto3.Sync:
		return &pgproto3.Sync{}
	case *pgproto3.Flush:
		return &pgproto3.Flush{}
	case *pgproto3.Terminate:
		return &pgproto3.Terminate{}
	case *pgproto3.CopyData:
		return &pgproto3.CopyData{}
	case *pgproto3.CopyDone:
		return &pgproto3.CopyDone{}
	case *pgproto3.CopyFail:
		return &pgproto3.CopyFail{}
	case *pgproto3.FunctionCall:
		return &pgproto3.FunctionCall{}
	}
	return m // authentication messages, which are only ever rejected here
}
