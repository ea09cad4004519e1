package pgwire

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"log/slog"
	"net"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/clinksql/clinksql/catalog"
	"github.com/clinksql/clinksql/engine"
)

// The fuzz targets feed arbitrary bytes as a connection's input to the real connection handler over a real
// engine, and check that the handler neither panics nor hangs, and that memory stays bounded: MaxMessageSize
// (1 MiB here) must hold whatever length a message claims. `make fuzz` runs each for FUZZTIME; `go test` runs
// the seeds.

const fuzzMaxMessage = 1 << 20

// memConn is a connection whose input is a fixed byte string (then EOF: the client hangs up) and whose output
// is counted and dropped.
type memConn struct {
	mu      sync.Mutex
	in      *bytes.Reader
	written int64
	closed  bool
}

func newMemConn(input []byte) *memConn { return &memConn{in: bytes.NewReader(input)} }

func (c *memConn) Read(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return 0, net.ErrClosed
	}
	return c.in.Read(p)
}

func (c *memConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return 0, net.ErrClosed
	}
	c.written += int64(len(p))
	return len(p), nil
}

func (c *memConn) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	return nil
}

type memAddr struct{}

func (memAddr) Network() string { return "mem" }
func (memAddr) String() string  { return "mem" }

func (c *memConn) LocalAddr() net.Addr                { return memAddr{} }
func (c *memConn) RemoteAddr() net.Addr               { return memAddr{} }
func (c *memConn) SetDeadline(t time.Time) error      { return nil }
func (c *memConn) SetReadDeadline(t time.Time) error  { return nil }
func (c *memConn) SetWriteDeadline(t time.Time) error { return nil }

// panicWatch is a slog handler that remembers whether a connection recovered from a panic: serveConn logs and
// survives one, the fuzzer must see it as a failure.
type panicWatch struct {
	slog.Handler
	panicked *atomic.Value // string: the panic message
}

func (h panicWatch) Handle(ctx context.Context, r slog.Record) error {
	if strings.Contains(r.Message, "panic") {
		var sb strings.Builder
		sb.WriteString(r.Message)
		r.Attrs(func(a slog.Attr) bool {
			sb.WriteString(" " + a.Key + "=" + a.Value.String())
			return true
		})
		h.panicked.Store(sb.String())
	}
	return nil
}

func (h panicWatch) Enabled(context.Context, slog.Level) bool { return true }
func (h panicWatch) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h panicWatch) WithGroup(string) slog.Handler            { return h }

type fuzzHarness struct {
	srv      *Server
	panicked *atomic.Value
}

// newFuzzHarness opens an engine in a fresh directory: each input gets its own, so jobs one input starts cannot
// slow or disturb the next.
func newFuzzHarness(t *testing.T, users map[string]string) *fuzzHarness {
	eng, err := engine.Open(engine.Config{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	h := &fuzzHarness{panicked: &atomic.Value{}}
	h.srv = NewServer(Config{Users: users, MaxMessageSize: fuzzMaxMessage, StartupTimeout: 5 * time.Second,
		Logger: slog.New(panicWatch{panicked: h.panicked})}, eng)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		h.srv.Shutdown(ctx)
		eng.Close(ctx)
	})
	return h
}

// run serves one connection with input as everything the client sends, then checks the handler's end.
func (h *fuzzHarness) run(t *testing.T, input []byte) {
	nc := newMemConn(input)
	if !h.srv.track(nc) {
		t.Fatal("server closed")
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	done := make(chan struct{})
	go func() {
		h.srv.serveConn(nc)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("the connection handler did not end for input %q", input)
	}
	runtime.ReadMemStats(&after)
	if p := h.panicked.Load(); p != nil {
		t.Fatalf("panic for input %q: %s", input, p)
	}
	// Everything one connection allocates, engine included: far below what an unchecked length prefix (up to
	// 2 GiB) would take.
	if d := after.TotalAlloc - before.TotalAlloc; d > 256<<20 {
		t.Fatalf("handling %d input bytes allocated %d MiB", len(input), d>>20)
	}
}

func encode(msgs ...pgproto3.FrontendMessage) []byte {
	var out []byte
	for _, m := range msgs {
		var err error
		out, err = m.Encode(out)
		if err != nil {
			panic(err)
		}
	}
	return out
}

func startupBytes(user string) []byte {
	return encode(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersion30,
		Parameters: map[string]string{"user": user, "database": "fuzz", "application_name": "fuzz", "options": "-c extra_float_digits=3"}})
}

func be32(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }

func FuzzStartup(f *testing.F) {
	startup := startupBytes("fuzz")
	terminate := encode(&pgproto3.Terminate{})
	ssl := encode(&pgproto3.SSLRequest{})
	gss := encode(&pgproto3.GSSEncRequest{})
	seeds := [][]byte{
		append(append([]byte{}, startup...), terminate...),
		append(append(append([]byte{}, ssl...), startup...), terminate...),
		append(append(append(append([]byte{}, gss...), ssl...), startup...), terminate...),
		encode(&pgproto3.CancelRequest{ProcessID: 1001, SecretKey: []byte{1, 2, 3, 4}}), // no such process
		encode(&pgproto3.CancelRequest{ProcessID: 1, SecretKey: make([]byte, 200)}),
		{0, 0, 0, 2},             // length < 4
		{0, 0, 0, 8, 0, 3},       // truncated
		{0, 0, 0x30, 0, 0, 3, 0}, // over 10000 bytes
		{0xff, 0xff, 0xff, 0xff},
		append(be32(8), be32(2<<16)...),       // protocol 2.0
		append(be32(12), be32(0x12345678)...), // unknown request code
		encode(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersion32,
			Parameters: map[string]string{"user": "x", "_pq_.opt": "1"}}),
		encode(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersion30, Parameters: map[string]string{"database": "x"}}),
		encode(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersion30,
			Parameters: map[string]string{"user": "x", "replication": "database"}}),
		append(startup[:len(startup)-3:len(startup)-3], 0, 0, 0),
	}
	// SCRAM exchanges, for the server with users: a right-looking one with a wrong proof, and broken ones.
	scram := func(first, final string) []byte {
		return append(append([]byte{}, startupBytes("alice")...), encode(
			&pgproto3.SASLInitialResponse{AuthMechanism: scramMechanism, Data: []byte(first)},
			&pgproto3.SASLResponse{Data: []byte(final)})...)
	}
	scramSeeds := [][]byte{
		scram("n,,n=,r=rOprNGfwEbeRWgbNEkqO", "c=biws,r=rOprNGfwEbeRWgbNEkqO,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="),
		scram("y,,n=alice,r=abc", "c=eSws,r=abc,p="),
		scram("p=tls-server-end-point,,n=,r=x", ""),
		scram("n,,", "p="),
		append(startupBytes("alice"), terminate...),
	}
	for _, s := range seeds {
		f.Add(false, s)
	}
	for _, s := range scramSeeds {
		f.Add(true, s)
	}
	f.Fuzz(func(t *testing.T, withUsers bool, data []byte) {
		var users map[string]string
		if withUsers {
			users = map[string]string{"alice": "pw"}
		}
		newFuzzHarness(t, users).run(t, data)
	})
}

func FuzzMessages(f *testing.F) {
	int8Param := binary.BigEndian.AppendUint64(nil, 42)
	numericParam := []byte{0, 2, 0, 0, 0, 0, 0, 2, 0, 12, 0x13, 0x88} // 12.50
	seeds := [][]byte{
		encode(&pgproto3.Query{String: "SELECT 1"}),
		encode(&pgproto3.Query{String: "SELECT 1; SELEC 2"}, &pgproto3.Query{String: ""}),
		encode(&pgproto3.Query{String: "CREATE STREAM s (k BIGINT, v VARCHAR, d DECIMAL(10,2), ts TIMESTAMP(3))"},
			&pgproto3.Query{String: "INSERT INTO s VALUES (1, 'a', 1.5, TIMESTAMP '2026-01-01 00:00:01')"},
			&pgproto3.Parse{Name: "ins", Query: "INSERT INTO s VALUES ($1, $2, $3, $4)"},
			&pgproto3.Bind{PreparedStatement: "ins", ParameterFormatCodes: []int16{1, 0, 1, 0},
				Parameters: [][]byte{int8Param, []byte("b"), numericParam, nil}},
			&pgproto3.Execute{}, &pgproto3.Sync{},
			&pgproto3.Parse{Name: "q", Query: "SELECT * FROM s WHERE k > $1 ORDER BY k"},
			&pgproto3.Describe{ObjectType: 'S', Name: "q"},
			&pgproto3.Bind{DestinationPortal: "p", PreparedStatement: "q", ParameterFormatCodes: []int16{1},
				Parameters: [][]byte{binary.BigEndian.AppendUint64(nil, 0)}, ResultFormatCodes: []int16{1}},
			&pgproto3.Describe{ObjectType: 'P', Name: "p"},
			&pgproto3.Execute{Portal: "p", MaxRows: 1}, &pgproto3.Execute{Portal: "p", MaxRows: 1},
			&pgproto3.Close{ObjectType: 'P', Name: "p"}, &pgproto3.Close{ObjectType: 'S', Name: "q"},
			&pgproto3.Sync{}),
		encode(&pgproto3.Parse{Query: "SELECT $1 AS x", ParameterOIDs: []uint32{catalog.OIDInterval}},
			&pgproto3.Bind{ParameterFormatCodes: []int16{1}, Parameters: [][]byte{make([]byte, 16)}, ResultFormatCodes: []int16{1}},
			&pgproto3.Execute{}, &pgproto3.Flush{}, &pgproto3.Sync{}),
		encode(&pgproto3.Parse{Query: "SELEC"}, &pgproto3.Bind{}, &pgproto3.Execute{}, &pgproto3.Sync{}),
		encode(&pgproto3.Query{String: "BEGIN"}, &pgproto3.Query{String: "SHOW STREAMS"}, &pgproto3.Query{String: "COMMIT"}),
		encode(&pgproto3.FunctionCall{Function: 1}, &pgproto3.CopyData{Data: []byte("x")}, &pgproto3.CopyDone{}, &pgproto3.Sync{}),
		encode(&pgproto3.PasswordMessage{Password: "late"}),
		{'Q', 0x7f, 0xff, 0xff, 0xff}, // oversized
		{'Q', 0, 0x10, 0, 1},          // just over the limit
		{'Q', 0, 0, 0, 2},             // length < 4
		{'Q', 0, 0, 0, 20, 'S', 'E'},  // truncated
		{'z', 0, 0, 0, 4},             // unknown type
		{'B', 0, 0, 0, 6, 0, 0},       // malformed Bind
		{'D', 0, 0, 0, 6, 'X', 0},     // bad Describe kind
	}
	for _, s := range seeds {
		f.Add(s)
	}
	startup := startupBytes("fuzz")
	terminate := encode(&pgproto3.Terminate{})
	f.Fuzz(func(t *testing.T, data []byte) {
		input := make([]byte, 0, len(startup)+len(data)+len(terminate))
		input = append(append(append(input, startup...), data...), terminate...)
		newFuzzHarness(t, nil).run(t, input)
	})
}

// A sanity check of the harness itself: a valid session's output is what a client expects.
func TestFuzzHarnessServesASession(t *testing.T) {
	h := newFuzzHarness(t, nil)
	nc := newMemConn(append(append(startupBytes("fuzz"), encode(&pgproto3.Query{String: "SELECT 1"})...), encode(&pgproto3.Terminate{})...))
	out := &bytes.Buffer{}
	w := &teeConn{memConn: nc, out: out}
	h.srv.track(w)
	h.srv.serveConn(w)
	fe := pgproto3.NewFrontend(bytes.NewReader(out.Bytes()), io.Discard)
	var got []string
	for {
		m, err := fe.Receive()
		if err != nil {
			break
		}
		got = append(got, jsonOf(m))
	}
	if !strings.Contains(types(got), "ReadyForQuery RowDescription DataRow CommandComplete ReadyForQuery") {
		t.Errorf("session: %v", types(got))
	}
}

type teeConn struct {
	*memConn
	out *bytes.Buffer
}

func (c *teeConn) Write(p []byte) (int, error) {
	c.memConn.mu.Lock()
	c.out.Write(p)
	c.memConn.mu.Unlock()
	return c.memConn.Write(p)
}
