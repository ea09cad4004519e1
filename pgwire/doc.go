// Package pgwire serves the engine over the Postgres wire protocol (version 3.0), on jackc/pgx/v5/pgproto3, so
// psql, drivers (pgx, psycopg2, JDBC) and the REPL's --connect reach clinksql as they reach Postgres.
//
// It owns:
//   - the startup phase: SSLRequest ('S' and a TLS handshake when Config.TLS is set, else 'N'), GSSENCRequest
//     ('N'), CancelRequest, the StartupMessage (3.0; a 3.2 client is answered NegotiateProtocolVersion, other
//     versions and packets over 10000 bytes get an error and the connection closes), the startup parameters
//     (applied as SET; a value the engine refuses, such as a TimeZone other than UTC, is logged and ignored);
//   - authentication: trust when Config.Users is empty (Serve allows that only on a loopback listener, and
//     refuses a user with an empty password), else
//     SCRAM-SHA-256 as Postgres does it (4096 iterations; verifiers computed once, passwords not kept; an unknown
//     user runs the exchange against a mock verifier and fails like a wrong password: 28P01);
//   - the simple and extended query protocols: prepared statements and portals (named and unnamed, with
//     Postgres' lifetimes), Describe, Execute with a row limit (PortalSuspended), Close, Sync, Flush, and
//     skipping to Sync after an error;
//   - value formats: results leave the engine as Postgres text (engine.Result), which is sent as is or, when the
//     client asks for binary, parsed back by the column's OID and encoded as Postgres' send functions do (bool,
//     int2/4/8, float4/8, numeric in base 10000, text/varchar, bytea, date and timestamp from 2000-01-01,
//     interval; nested.go: an ARRAY as array_send, a ROW as record_send, parsed back guided by the column's Arrow
//     type); binary parameters are decoded to text for ExecutePrepared;
//   - errors: every *sqlerr.Error becomes an ErrorResponse with its SQLSTATE, detail, hint and position (a
//     character position into the statement text, as Postgres counts it); connection-level failures are FATAL;
//   - cancellation: each session has a process id and a random secret key (BackendKeyData); a CancelRequest
//     with both (compared in constant time; anything else is ignored) cancels the running statement's context.
//     A client that goes away cancels its running statement too, and Shutdown cancels every statement.
//
// Decisions:
//   - Our INTERVAL is a duration in microseconds; its text form splits off whole days ("1 day 02:00:00"), and
//     the binary form carries the same split (days, microseconds, months = 0), so text and binary decode to the
//     same value in a client.
//   - A message longer than Config.MaxMessageSize (default 64 MiB) closes the connection with an error before
//     its body is read or allocated.
//   - Each connection has two goroutines: one reads and decodes messages (one message of read-ahead), the other
//     runs them against the session and writes the answers. Execution never happens on the reading goroutine,
//     so the reader notices a client that vanished and cancels what it was running; CancelRequest comes on a
//     connection of its own, as the protocol has it. The reader goes on reading after Terminate, so a client
//     that pipelines Terminate behind a long statement and hangs up cancels that statement too.
//   - Shutdown answers every session with FATAL 57P01 only (a statement it interrupted reports no error of its
//     own), as a Postgres fast shutdown does.
//   - A SELECT's rows stream: DataRows go out as the engine produces each batch, and each batch is flushed, so
//     the first rows arrive at once and the server holds no more than a batch. An Execute with a row limit keeps
//     the result for the Executes that follow (PortalSuspended) instead. A SELECT that fails after rows went out
//     ends with an ErrorResponse after them, as in Postgres.
//   - Text forms are parsed and printed with exec/expr's functions, the one definition of them.
//   - With Config.Registerer it counts sessions (clinksql_pgwire_connections_total, _open) and statements by
//     outcome (clinksql_pgwire_statements_total{outcome="ok"|"error"}: each statement of a simple query, each
//     portal run of the extended protocol).
//   - COPY (<query>) TO STDOUT answers CopyOutResponse, a CopyData per row (text format, flushed per batch) and
//     CopyDone before CommandComplete; COPY (SUBSCRIBE ...) streams until a CancelRequest. A SUBSCRIBE streamed as
//     DataRows likewise. A SUBSCRIBE cut off for lag (engine.RowAborter) gets a write deadline of 2 s, so a client
//     that stopped reading is disconnected. The session's cursors (DECLARE) close when the connection ends.
//   - Notices the session gives while a statement runs (FLUSH's progress) go out as NoticeResponses at once,
//     flushed, from the goroutine running the statement; a statement's own notices precede its CommandComplete.
//
// It must never execute anything itself: every statement goes through engine.Session (Execute, Prepare,
// ExecutePrepared), so pgwire, the REPL and `clinksql exec` behave alike. It must never hold a session across
// connections, and never let a client's input panic the server: a panic is recovered per connection, logged,
// and ends only that connection (and is a bug to fix).
package pgwire
