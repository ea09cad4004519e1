package web

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/clinksql/clinksql/engine"
)

// Config configures a Server.
type Config struct {
	// Addr is the HOST:PORT to listen on ("127.0.0.1:0" picks a free port; Server.Addr tells which).
	Addr string
	// Engine is what the server shows; it only reads from it.
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
}

// New checks cfg and listens on cfg.Addr. It refuses a server without users on an address that is not loopback,
// and a user with an empty password.
func New(cfg Config) (*Server, error) {
	if cfg.Engine == nil {
		return nil, errors.New("web: no engine")
	}
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
	return s, nil
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
	e := s.cfg.Engine
	// The probes tell only up/ready, and are what load balancers call without credentials.
	probes := http.NewServeMux()
	probes.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { text(w, http.StatusOK, "ok") })
	probes.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		if !e.Ready() {
			text(w, http.StatusServiceUnavailable, "not ready")
			return
		}
		text(w, http.StatusOK, "ready")
	})
	mux.HandleFunc("GET /api/jobs", s.apiJobs)
	mux.HandleFunc("GET /api/jobs/{id}", s.apiJob)
	mux.HandleFunc("/api/", apiNotFound)
	mux.Handle("GET /metrics", promhttp.HandlerFor(e.Registry(), promhttp.HandlerOpts{
		ErrorLog:      slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		ErrorHandling: promhttp.ContinueOnError, // one failing collector does not hide the others
	}))
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

func text(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	fmt.Fprintln(w, body)
}

func isLoopback(a net.Addr) bool {
	ta, ok := a.(*net.TCPAddr)
	return ok && ta.IP.IsLoopback()
}
