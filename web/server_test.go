package web

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/clinksql/clinksql/engine"
	"github.com/clinksql/clinksql/internal/enginetest"
	"github.com/clinksql/clinksql/internal/testcert"
)

// openEngine opens an engine on a fresh directory (enginetest.Open: the cleanup closes it and checks for leaks).
func openEngine(t *testing.T) *engine.Engine {
	t.Helper()
	return enginetest.Open(t, t.TempDir())
}

// startServer serves cfg until the test ends, and checks that Serve then returns nil.
func startServer(t *testing.T, cfg Config) *Server {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return s
}

type response struct {
	status int
	header http.Header
	body   string
}

func get(t *testing.T, c *http.Client, url string, setAuth func(*http.Request)) response {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if setAuth != nil {
		setAuth(req)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return response{resp.StatusCode, resp.Header, string(body)}
}

func basic(user, password string) func(*http.Request) {
	return func(r *http.Request) { r.SetBasicAuth(user, password) }
}

// /healthz answers while the server serves; /readyz while the engine is open (Engine.Ready), 503 once it closes;
// /metrics is the engine registry in Prometheus' text format; Serve returns nil when its context ends, and the
// port is closed after.
func TestHealthzMetricsAndShutdown(t *testing.T) {
	e := openEngine(t)
	s, err := New(Config{Addr: "127.0.0.1:0", Engine: e})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx) }()
	base := "http://" + s.Addr().String()
	if r := get(t, http.DefaultClient, base+"/healthz", nil); r.status != 200 || r.body != "ok\n" {
		t.Errorf("/healthz: %d %q", r.status, r.body)
	}
	r := get(t, http.DefaultClient, base+"/metrics", nil)
	if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/plain") {
		t.Errorf("/metrics: %d %q", r.status, r.header.Get("Content-Type"))
	}
	if r := get(t, http.DefaultClient, base+"/readyz", nil); r.status != 200 {
		t.Errorf("/readyz on an open engine: %d %q", r.status, r.body)
	}
	if err := e.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if r := get(t, http.DefaultClient, base+"/readyz", nil); r.status != http.StatusServiceUnavailable {
		t.Errorf("/readyz on a closed engine: %d %q, want 503", r.status, r.body)
	}
	if r := get(t, http.DefaultClient, base+"/healthz", nil); r.status != 200 {
		t.Errorf("/healthz on a closed engine: %d %q", r.status, r.body)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Serve after cancel: %v", err)
	}
	if c, err := net.Dial("tcp", s.Addr().String()); err == nil {
		c.Close()
		t.Fatalf("%s still accepts after Serve returned", s.Addr())
	}
}

// Without users only a loopback address may be listened on, whatever way the address is spelled; with users
// any address is served.
func TestRefusesNonLoopbackWithoutUsers(t *testing.T) {
	e := openEngine(t)
	for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0"} {
		s, err := New(Config{Addr: addr, Engine: e})
		if err == nil {
			s.ln.Close()
			t.Errorf("%s without users: served on %s", addr, s.Addr())
		} else if !strings.Contains(err.Error(), "without users") {
			t.Errorf("%s without users: %v", addr, err)
		}
	}
	for _, addr := range []string{"127.0.0.1:0", "localhost:0"} {
		s, err := New(Config{Addr: addr, Engine: e})
		if err != nil {
			t.Errorf("%s: %v", addr, err)
			continue
		}
		s.ln.Close()
	}
	s, err := New(Config{Addr: "0.0.0.0:0", Engine: e, Users: map[string]string{"alice": "pw"}})
	if err != nil {
		t.Fatalf("0.0.0.0 with users: %v", err)
	}
	s.ln.Close()
	if _, err := New(Config{Addr: "127.0.0.1:0", Engine: e, Users: map[string]string{"alice": ""}}); err == nil ||
		!strings.Contains(err.Error(), `user "alice" has an empty password`) {
		t.Errorf("an empty password: %v", err)
	}
}

// A server with users asks every request but the probes for basic auth with one of them (on any address, a
// loopback one included), and says so with WWW-Authenticate; a wrong password, an unknown user and no
// credentials are all refused alike.
func TestBasicAuth(t *testing.T) {
	e := openEngine(t)
	s := startServer(t, Config{Addr: "127.0.0.1:0", Engine: e, Users: map[string]string{"alice": "s3cret", "bob": "pw:x"},
		Console: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "console") })})
	base := "http://" + s.Addr().String()
	for _, path := range []string{"/metrics", "/", "/static/app.js"} {
		for _, auth := range []func(*http.Request){nil, basic("alice", "wrong"), basic("alice", "s3cre"),
			basic("alice", "s3cret2"), basic("carol", "s3cret"), basic("bob", "s3cret"), basic("", "")} {
			r := get(t, http.DefaultClient, base+path, auth)
			if r.status != http.StatusUnauthorized || !strings.HasPrefix(r.header.Get("WWW-Authenticate"), `Basic realm="clinksql"`) {
				t.Errorf("%s: %d %q, want 401 with a Basic challenge", path, r.status, r.header.Get("WWW-Authenticate"))
			}
		}
		for _, auth := range []func(*http.Request){basic("alice", "s3cret"), basic("bob", "pw:x")} {
			if r := get(t, http.DefaultClient, base+path, auth); r.status != 200 {
				t.Errorf("%s with the right password: %d %q", path, r.status, r.body)
			}
		}
	}
	if r := get(t, http.DefaultClient, base+"/", basic("alice", "s3cret")); r.body != "console" {
		t.Errorf("/: %q, want the console", r.body)
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		if r := get(t, http.DefaultClient, base+path, nil); r.status != 200 {
			t.Errorf("%s without credentials: %d", path, r.status)
		}
	}
	// Paths that only look like a probe's are not let through (the client follows the mux's redirects).
	for _, path := range []string{"/healthz/../metrics", "/healthz/", "/readyz/x", "//metrics", "/healthz%2F..%2Fmetrics"} {
		if r := get(t, http.DefaultClient, base+path, nil); r.status != http.StatusUnauthorized {
			t.Errorf("%s without credentials: %d %q, want 401", path, r.status, r.body)
		}
	}
}

// With a TLS configuration the server speaks HTTPS only, with that certificate.
func TestTLS(t *testing.T) {
	e := openEngine(t)
	cert, pool := testcert.New(t)
	s := startServer(t, Config{Addr: "127.0.0.1:0", Engine: e, TLS: &tls.Config{Certificates: []tls.Certificate{cert}}})
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	if r := get(t, c, "https://"+s.Addr().String()+"/healthz", nil); r.status != 200 {
		t.Errorf("https /healthz: %d", r.status)
	}
	if r := get(t, http.DefaultClient, "http://"+s.Addr().String()+"/healthz", nil); r.status != http.StatusBadRequest {
		t.Errorf("plain http to the TLS server: %d %q, want 400", r.status, r.body)
	}
}

// A server made before its engine (serve opens the data directory, re-deploying jobs, after it listens) is alive
// and not ready: /healthz 200, /readyz 503, 503 for what needs the engine; SetEngine makes it ready, once.
func TestServerBeforeEngine(t *testing.T) {
	s := startServer(t, Config{Addr: "127.0.0.1:0"})
	base := "http://" + s.Addr().String()
	for path, want := range map[string]int{"/healthz": 200, "/readyz": 503, "/metrics": 503, "/api/jobs": 503, "/api/jobs/job-1": 503} {
		if r := get(t, http.DefaultClient, base+path, nil); r.status != want {
			t.Errorf("%s before the engine: %d %q, want %d", path, r.status, r.body, want)
		}
	}
	e := openEngine(t)
	if err := s.SetEngine(e); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]int{"/healthz": 200, "/readyz": 200, "/metrics": 200, "/api/jobs": 200, "/api/jobs/job-1": 404} {
		if r := get(t, http.DefaultClient, base+path, nil); r.status != want {
			t.Errorf("%s with the engine: %d %q, want %d", path, r.status, r.body, want)
		}
	}
	if err := s.SetEngine(e); err == nil {
		t.Error("a second SetEngine was accepted")
	}
}
