package pgwire

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/clinksql/clinksql/engine"
)

// DefaultMaxMessageSize is the largest frontend message a connection accepts unless Config says otherwise.
const DefaultMaxMessageSize = 64 << 20

// ErrServerClosed is what Serve returns once Shutdown has begun.
var ErrServerClosed = errors.New("pgwire: server closed")

// Config configures a Server.
type Config struct {
	// Users maps user names to passwords; clients authenticate with SCRAM-SHA-256. An empty map means trust
	// (every user name is accepted without a password), which Serve allows only on a loopback listener. No
	// password may be empty: Serve refuses such a configuration, as Postgres refuses empty passwords.
	Users map[string]string
	// TLS, when set, answers SSLRequest with 'S' and runs the TLS handshake; nil answers 'N'.
	TLS *tls.Config
	// MaxMessageSize bounds a frontend message's length; a longer one closes the connection with an error
	// before its body is read. 0 means DefaultMaxMessageSize.
	MaxMessageSize int
	// Logger receives connection-level events; nil discards them.
	Logger *slog.Logger
	// StartupTimeout bounds the time from accept to the end of authentication (0: one minute, as Postgres'
	// authentication_timeout).
	StartupTimeout time.Duration
	// Registerer receives the server's Prometheus metrics (clinksql_pgwire_connections_total,
	// clinksql_pgwire_connections_open, clinksql_pgwire_statements_total{outcome}); nil: not registered.
	Registerer prometheus.Registerer
}

// Server serves an engine over the Postgres wire protocol. Each connection gets its own engine.Session.
type Server struct {
	cfg       Config
	eng       *engine.Engine
	log       *slog.Logger
	metrics   *metrics
	verifiers map[string]scramVerifier
	mockKey   []byte // derives a stable fake SCRAM salt for unknown users, so their existence does not show

	// ctx is cancelled by Shutdown: every connection's statements run under it.
	ctx    context.Context
	cancel context.CancelFunc

	mu        sync.Mutex
	listeners map[net.Listener]struct{}
	conns     map[uint32]*conn // by process id (BackendKeyData), for CancelRequest
	netConns  map[net.Conn]struct{}
	nextPID   uint32
	closing   bool
	wg        sync.WaitGroup
}

// NewServer returns a server for eng. It computes the SCRAM verifiers of cfg.Users once, so passwords are not
// kept.
func NewServer(cfg Config, eng *engine.Engine) *Server {
	if cfg.MaxMessageSize <= 0 {
		cfg.MaxMessageSize = DefaultMaxMessageSize
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.StartupTimeout <= 0 {
		cfg.StartupTimeout = time.Minute
	}
	s := &Server{cfg: cfg, eng: eng, log: cfg.Logger, metrics: newMetrics(cfg.Registerer), verifiers: map[string]scramVerifier{},
		listeners: map[net.Listener]struct{}{}, conns: map[uint32]*conn{}, netConns: map[net.Conn]struct{}{}}
	for name, password := range cfg.Users {
		s.verifiers[name] = newScramVerifier(password, randomBytes(scramSaltLen), scramIterations)
	}
	s.mockKey = randomBytes(32)
	var b [4]byte
	copy(b[:], randomBytes(4))
	s.nextPID = 1000 + (uint32(b[0])<<16|uint32(b[1])<<8|uint32(b[2]))%(1<<22)
	s.ctx, s.cancel = context.WithCancel(context.Background())
	return s
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	rand.Read(b) // never fails (crypto/rand panics on its own failure)
	return b
}

// Serve accepts connections on l until Shutdown, serving each on its own goroutine. Without users it refuses a
// listener that is not loopback (or a Unix socket): trust auth must not reach the network.
func (s *Server) Serve(l net.Listener) error {
	if len(s.cfg.Users) == 0 && !isLocal(l.Addr()) {
		return fmt.Errorf("pgwire: refusing to serve %s without users: trust authentication is only allowed on a loopback address", l.Addr())
	}
	for name, password := range s.cfg.Users {
		if password == "" {
			return fmt.Errorf("pgwire: refusing to serve: user %q has an empty password", name)
		}
	}
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return ErrServerClosed
	}
	s.listeners[l] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.listeners, l)
		s.mu.Unlock()
	}()
	var backoff time.Duration
	for {
		nc, err := l.Accept()
		if err != nil {
			if s.isClosing() {
				return ErrServerClosed
			}
			if retryableAccept(err) {
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				s.log.Warn("accept failed; retrying", "err", err, "in", backoff)
				time.Sleep(backoff)
				continue
			}
			return err
		}
		backoff = 0
		if !s.track(nc) {
			nc.Close()
			return ErrServerClosed
		}
		go s.serveConn(nc)
	}
}

// retryableAccept reports the accept errors worth retrying (too many open files and the like), as net/http does.
func retryableAccept(err error) bool {
	type temporary interface{ Temporary() bool }
	var t temporary
	var ne net.Error
	return errors.As(err, &t) && t.Temporary() || errors.As(err, &ne) && ne.Timeout()
}

func isLocal(a net.Addr) bool {
	switch a := a.(type) {
	case *net.TCPAddr:
		return a.IP.IsLoopback()
	case *net.UnixAddr:
		return true
	}
	return false
}

func (s *Server) isClosing() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closing
}

// track registers a network connection so Shutdown can wait for it (and close it when the wait runs out).
func (s *Server) track(nc net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return false
	}
	s.netConns[nc] = struct{}{}
	s.wg.Add(1)
	return true
}

func (s *Server) untrack(nc net.Conn) {
	s.mu.Lock()
	delete(s.netConns, nc)
	s.mu.Unlock()
	s.wg.Done()
}

// Shutdown stops accepting, cancels every running statement, ends every session (idle clients get FATAL 57P01,
// as from a Postgres fast shutdown) and waits for the connections to close. When ctx ends first, it closes the
// remaining connections and returns ctx's error. The engine is the caller's to close afterwards.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closing = true
	for l := range s.listeners {
		l.Close()
	}
	s.mu.Unlock()
	s.cancel()
	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		s.mu.Lock()
		for nc := range s.netConns {
			nc.Close()
		}
		s.mu.Unlock()
		<-done
		return ctx.Err()
	}
}

// register gives a connection that finished its startup a process id for BackendKeyData.
func (s *Server) register(c *conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		s.nextPID++
		if s.nextPID == 0 || s.nextPID > 1<<30 {
			s.nextPID = 1000
		}
		if _, used := s.conns[s.nextPID]; !used {
			break
		}
	}
	c.pid = s.nextPID
	s.conns[c.pid] = c
}

func (s *Server) unregister(c *conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conns[c.pid] == c {
		delete(s.conns, c.pid)
	}
}

// cancelRequest cancels the statement running on the connection with process id pid, when key is its secret;
// anything else is ignored, as Postgres does, so a stranger learns nothing.
func (s *Server) cancelRequest(pid uint32, key []byte) {
	s.mu.Lock()
	c := s.conns[pid]
	s.mu.Unlock()
	if c == nil || subtle.ConstantTimeCompare(key, c.secret) != 1 {
		s.log.Debug("cancel request ignored: no such connection or wrong key", "pid", pid)
		return
	}
	c.cancelStatement()
}
