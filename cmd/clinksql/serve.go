package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/clinksql/clinksql/engine"
	"github.com/clinksql/clinksql/pgwire"
	"github.com/clinksql/clinksql/web"
	"github.com/clinksql/clinksql/web/console"
)

// newServeCommand is `clinksql serve`: the engine over the Postgres wire protocol.
func newServeCommand() *cobra.Command {
	var o serveOptions
	cmd := &cobra.Command{
		Use:   "serve [--data-dir DIR] [--listen HOST:PORT] [--http HOST:PORT] [--user NAME:PASSWORD]... [--tls-cert FILE --tls-key FILE] [--log-level LEVEL]",
		Short: "Serve the engine over the Postgres wire protocol",
		Long: `Opens the engine on --data-dir (re-deploying the jobs that were running, each from its last completed
checkpoint) and serves it to Postgres clients on --listen. Without --user or --users-file every user name is
accepted without a password, which is allowed only on a loopback address; with users, clients authenticate with
SCRAM-SHA-256. --http serves Prometheus metrics (/metrics), probes (/healthz, /readyz), a JSON API and the
console over HTTP (--http '' turns it off); it asks the same users for HTTP basic auth, uses the same TLS
certificate, and without users may only listen on a loopback address too. SIGTERM or SIGINT stops accepting,
cancels running statements, stops the jobs with a final checkpoint and exits 0.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runServe(cmd.OutOrStdout(), cmd.ErrOrStderr(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.dataDir, "data-dir", defaultDataDir, "the data directory")
	f.StringVar(&o.listen, "listen", "127.0.0.1:4566", "the address to listen on")
	f.StringVar(&o.http, "http", "127.0.0.1:4567", "the HTTP address of metrics, probes, the JSON API and the console ('' turns it off)")
	f.StringSliceVar(&o.allow, "allow-path", nil, "a directory outside the data directory that connector paths may name (repeatable)")
	f.StringArrayVar(&o.users, "user", nil, "a user as name:password (repeatable); clients then authenticate with SCRAM-SHA-256")
	f.StringVar(&o.usersFile, "users-file", "", "a file of users, one name:password a line (# starts a comment)")
	f.StringVar(&o.tlsCert, "tls-cert", "", "a PEM certificate: clients may then use TLS (with --tls-key)")
	f.StringVar(&o.tlsKey, "tls-key", "", "the PEM private key of --tls-cert")
	f.StringVar(&o.logLevel, "log-level", "info", "the least severe log lines printed: debug, info, warn or error")
	f.BoolVar(&o.testing, "testing", false, "allow the settings only tests use (SET testing.processing_time)")
	_ = f.MarkHidden("testing")
	return cmd
}

type serveOptions struct {
	dataDir, listen   string
	http              string
	allow, users      []string
	usersFile         string
	logLevel          string
	testing           bool
	tlsCert, tlsKey   string
	shutdownTimeout   time.Duration
	engineCloseTimout time.Duration
}

func runServe(stdout, stderr io.Writer, o serveOptions) error {
	level := slog.LevelInfo
	if o.logLevel != "" {
		if err := level.UnmarshalText([]byte(o.logLevel)); err != nil {
			return fmt.Errorf("--log-level %q: want debug, info, warn or error", o.logLevel)
		}
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	slog.SetDefault(log) // what logs without an engine's logger (a Pebble store's failure) looks the same
	users, err := loadUsers(o.users, o.usersFile)
	if err != nil {
		return err
	}
	cfg := pgwire.Config{Users: users, Logger: log.With("component", "pgwire")}
	if o.tlsCert != "" || o.tlsKey != "" {
		if o.tlsCert == "" || o.tlsKey == "" {
			return errors.New("--tls-cert and --tls-key go together")
		}
		cert, err := tls.LoadX509KeyPair(o.tlsCert, o.tlsKey)
		if err != nil {
			return fmt.Errorf("loading the TLS certificate: %w", err)
		}
		cfg.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	// Refuse before opening anything: trust authentication must not reach the network.
	if len(users) == 0 {
		if err := checkLoopback("--listen", o.listen); err != nil {
			return err
		}
		if o.http != "" {
			if err := checkLoopback("--http", o.http); err != nil {
				return err
			}
		}
	}
	// HTTP first, so that the server is seen alive and not ready (/readyz 503) while the engine re-deploys the
	// jobs; it stops after pgwire's shutdown and before the engine closes (its handlers read the engine).
	httpStopped := make(chan struct{})
	stopHTTP := func() {}
	var hs *web.Server
	var httpURL string
	if o.http != "" {
		hs, err = web.New(web.Config{Addr: o.http, Users: users, TLS: cfg.TLS, Console: console.Handler(),
			Logger: log.With("component", "http")})
		if err != nil {
			return err
		}
		ctx, cancel := context.WithCancel(context.Background())
		stopHTTP = func() { cancel(); <-httpStopped }
		go func() {
			defer close(httpStopped)
			if err := hs.Serve(ctx); err != nil {
				log.Error("HTTP serving stopped", "err", err)
			}
		}()
		httpURL = "http://" + hs.Addr().String()
		if cfg.TLS != nil {
			httpURL = "https://" + hs.Addr().String()
		}
	}
	e, err := engine.Open(engine.Config{DataDir: o.dataDir, AllowPaths: o.allow, Logger: log.With("component", "engine"),
		Testing: o.testing})
	if err != nil {
		stopHTTP()
		return err
	}
	closeEngine := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), orDefault(o.engineCloseTimout, 2*time.Minute))
		defer cancel()
		return e.Close(ctx)
	}
	l, err := net.Listen("tcp", o.listen)
	if err != nil {
		stopHTTP()
		closeEngine()
		return err
	}
	if hs != nil {
		hs.SetEngine(e) // a fresh server: never refused
	}
	cfg.Registerer = e.Registry() // the pgwire metrics beside the engine's and its jobs'
	srv := pgwire.NewServer(cfg, e)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()

	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	fmt.Fprintf(stdout, "clinksql: listening on %s (%s)\n", l.Addr(), psqlCommand(l.Addr(), users))
	log.Info("serving", "listen", l.Addr().String(), "data_dir", o.dataDir, "tls", cfg.TLS != nil, "users", len(users))
	if httpURL != "" {
		fmt.Fprintf(stdout, "clinksql: HTTP on %s (the console; metrics at %s/metrics)\n", httpURL, httpURL)
		log.Info("serving HTTP", "url", httpURL, "auth", len(users) > 0)
	}

	var serveErr error
	select {
	case sig := <-sigs:
		log.Info("shutting down", "signal", sig.String())
	case serveErr = <-served:
		log.Error("serving stopped", "err", serveErr)
	}
	go func() {
		// A second signal does not wait for the graceful stop.
		if sig, ok := <-sigs; ok {
			log.Warn("second signal: exiting without a final checkpoint", "signal", sig.String())
			os.Exit(1)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), orDefault(o.shutdownTimeout, 30*time.Second))
	if err := srv.Shutdown(ctx); err != nil {
		log.Warn("connections did not end in time; closed them", "err", err)
	}
	cancel()
	stopHTTP()
	if err := closeEngine(); err != nil {
		log.Error("stopping the jobs", "err", err)
		return err
	}
	log.Info("stopped")
	if serveErr != nil && !errors.Is(serveErr, pgwire.ErrServerClosed) {
		return serveErr
	}
	return nil
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// checkLoopback refuses the address of a flag that is not a loopback one (or a host name resolving only to such).
func checkLoopback(flag, listen string) error {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return fmt.Errorf("%s %q: %w", flag, listen, err)
	}
	refuse := fmt.Errorf("%s: refusing to listen on %s without users: give --user name:password or --users-file (trust authentication is only allowed on a loopback address)", flag, listen)
	if host == "" {
		return refuse // all interfaces
	}
	if ip := net.ParseIP(host); ip != nil {
		if !ip.IsLoopback() {
			return refuse
		}
		return nil
	}
	addrs, err := net.LookupIP(host)
	if err != nil || len(addrs) == 0 {
		return fmt.Errorf("%s %q: cannot resolve %s", flag, listen, host)
	}
	for _, ip := range addrs {
		if !ip.IsLoopback() {
			return refuse
		}
	}
	return nil
}

// loadUsers reads --user values and --users-file lines (name:password; the password may contain colons). As
// Postgres does, an empty password is refused: it would let a network client in without one. A user named twice
// is refused too, rather than one of the two passwords silently winning.
func loadUsers(flags []string, file string) (map[string]string, error) {
	users := map[string]string{}
	where := map[string]string{}
	add := func(at, line string) error {
		name, password, ok := strings.Cut(line, ":")
		if !ok || name == "" {
			return fmt.Errorf("%s: want name:password, got %q", at, line)
		}
		if password == "" {
			return fmt.Errorf("%s: user %q has an empty password; every user needs one", at, name)
		}
		if first, dup := where[name]; dup {
			return fmt.Errorf("%s: user %q is already given (%s)", at, name, first)
		}
		users[name], where[name] = password, at
		return nil
	}
	for _, u := range flags {
		if err := add("--user", u); err != nil {
			return nil, err
		}
	}
	if file != "" {
		f, err := os.Open(file)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for n := 1; sc.Scan(); n++ {
			line := strings.TrimRight(sc.Text(), "\r")
			if strings.TrimSpace(line) == "" || strings.HasPrefix(strings.TrimSpace(line), "#") {
				continue
			}
			if err := add(fmt.Sprintf("%s:%d", file, n), line); err != nil {
				return nil, err
			}
		}
		if err := sc.Err(); err != nil {
			return nil, err
		}
	}
	return users, nil
}

// psqlCommand is the command that connects to addr.
func psqlCommand(addr net.Addr, users map[string]string) string {
	host, port := "127.0.0.1", "4566"
	if ta, ok := addr.(*net.TCPAddr); ok {
		port = fmt.Sprint(ta.Port)
		if !ta.IP.IsUnspecified() {
			host = ta.IP.String()
		}
	}
	user := "clinksql"
	if len(users) > 0 {
		names := make([]string, 0, len(users))
		for n := range users {
			names = append(names, n)
		}
		sort.Strings(names)
		user = names[0]
	}
	return fmt.Sprintf("psql -h %s -p %s -U %s", host, port, user)
}
