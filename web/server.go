package web

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/clinksql/clinksql/engine"
)

// Config configures a Server.
type Config struct {
	// Addr is the HOST:PORT to listen on ("127.0.0.1:0" picks a free port; Server.Addr tells which).
	Addr string
	// Engine is what the server shows; it only reads from it. It may be nil at first (SetEngine gives it): the
	// server then answers the probes (/readyz 503) and the console, and 503 to the API and /metrics, so that a
	// server re-deploying many jobs at open is seen alive and not ready.
	Engine *engine.Engine
	// Users maps user names to passwords (pgwire.Config.Users). When set, every request but the probes needs HTTP
	// basic auth with one of them; when empty, only a loopback address may be listened on.
	Users map[string]string
	// TLS, when set, makes the server HTTPS only (pgwire's certificate). It is cloned, not modified.
	TLS *tls.Config
	// Console serves / and /static/ (web/console.Handler); nil answers 404 there.
	Console http.Handler
	// Logger receives the server's errors (a failed TLS handshake, a failed response); nil discards them.
	Logger *slog.Logger
}

// The server's limits: a client must send its headers within readHeaderTimeout and its whole request within
// readTimeout, gets writeTimeout to read the response, and an idle keep-alive connection is closed after
// idleTimeout. shutdownTimeout bounds how long Serve waits for requests in flight once its context is done.
const (
	readHeaderTimeout = 10 * time.Second
	readTimeout       = 30 * time.Second
	writeTimeout      = time.Minute
	idleTimeout       = 2 * time.Minute
	maxHeaderBytes    = 64 << 10
	shutdownTimeout   = 5 * time.Second
)

// Server is the HTTP endpoint of one engine. New listens; Serve serves until its context is done.
type Server struct {
	cfg  Config
	log  *slog.Logger
	ln   net.Listener
	http *http.Server

	eng     atomic.Pointer[engine.Engine] // nil until SetEngine
	metrics atomic.Pointer[http.Handler]  // promhttp on eng's registry
}

// New checks cfg and listens on cfg.Addr. It refuses a server without users on an address that is not loopback,
// and a user with an empty password.
func New(cfg Config) (*Server, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	auth, err := newBasicAuth(cfg.Users)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("web: %w", err)
	}
	// Judged on the address bound, so that "", 0.0.0.0, [::] and a host name resolving elsewhere are all caught.
	if auth == nil && !isLoopback(ln.Addr()) {
		ln.Close()
		return nil, fmt.Errorf("web: refusing to serve HTTP on %s without users: give the server users (--user or --users-file), or listen on a loopback address", cfg.Addr)
	}
	s := &Server{cfg: cfg, log: log, ln: ln}
	s.http = &http.Server{
		Handler:           s.routes(auth),
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	if cfg.TLS != nil {
		s.http.TLSConfig = cfg.TLS.Clone()
	}
	if auth != nil && cfg.TLS == nil && !isLoopback(ln.Addr()) {
		log.Warn("HTTP basic auth without TLS: passwords cross the network in clear text; give the server a TLS certificate", "addr", ln.Addr().String())
	}
	if cfg.Engine != nil {
		s.SetEngine(cfg.Engine)
	}
	return s, nil
}

// SetEngine gives a server made without Config.Engine its engine (once Open returned); it refuses a second one.
func (s *Server) SetEngine(e *engine.Engine) error {
	if e == nil {
		return errors.New("web: no engine")
	}
	var h http.Handler = promhttp.HandlerFor(e.Registry(), promhttp.HandlerOpts{
		ErrorLog:      slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		ErrorHandling: promhttp.ContinueOnError, // one failing collector does not hide the others
	})
	if !s.eng.CompareAndSwap(nil, e) {
		return errors.New("web: the server has an engine already")
	}
	s.metrics.Store(&h)
	return nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Serve serves until ctx is done, then stops accepting, lets the requests in flight finish (for a few seconds at
// most) and returns nil. It returns the error that stopped it otherwise.
func (s *Server) Serve(ctx context.Context) error {
	served := make(chan error, 1)
	go func() {
		if s.cfg.TLS != nil {
			served <- s.http.ServeTLS(s.ln, "", "")
		} else {
			served <- s.http.Serve(s.ln)
		}
	}()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if err := s.http.Shutdown(sctx); err != nil {
		s.log.Warn("HTTP requests did not end in time; closed them", "err", err)
		s.http.Close()
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func (s *Server) routes(auth *basicAuth) http.Handler {
	mux := http.NewServeMux()
	// The probes tell only up/ready, and are what load balancers call without credentials.
	probes := http.NewServeMux()
	probes.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { text(w, http.StatusOK, "ok") })
	probes.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		if e := s.eng.Load(); e == nil || !e.Ready() {
			text(w, http.StatusServiceUnavailable, "not ready")
			return
		}
		text(w, http.StatusOK, "ready")
	})
	mux.HandleFunc("GET /api/jobs", s.withEngine(apiJobs))
	mux.HandleFunc("GET /api/jobs/{id}", s.withEngine(apiJob))
	mux.HandleFunc("/api/", apiNotFound)
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) {
		if h := s.metrics.Load(); h != nil {
			(*h).ServeHTTP(w, r)
			return
		}
		text(w, http.StatusServiceUnavailable, starting)
	})
	if s.cfg.Console != nil {
		mux.Handle("/", s.cfg.Console)
		mux.Handle("/static/", s.cfg.Console)
	}
	var h http.Handler = mux
	if auth != nil {
		h = auth.require(mux)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, pattern := probes.Handler(r); pattern != "" {
			probes.ServeHTTP(w, r)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// starting is the 503 of what needs the engine before SetEngine.
const starting = "starting: the engine is opening its data directory"

func (s *Server) withEngine(h func(http.ResponseWriter, *http.Request, *engine.Engine)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		e := s.eng.Load()
		if e == nil {
			writeJSON(w, http.StatusServiceUnavailable, errorResponse{Error: starting})
			return
		}
		h(w, r, e)
	}
}

func text(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	fmt.Fprintln(w, body)
}

func isLoopback(a net.Addr) bool {
	ta, ok := a.(*net.TCPAddr)
	return ok && ta.IP.IsLoopback()
}
