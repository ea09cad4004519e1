package main

import (
	"bufio"
	"crypto/tls"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/clinksql/clinksql/internal/testcert"
)

// Users with an empty password, or named twice (in the flags, the file, or across both), are refused at start-up:
// an empty password would let a network client in without one, and a repeated name would silently keep one of
// the two passwords.
func TestLoadUsersRefusesEmptyPasswordAndDuplicates(t *testing.T) {
	file := filepath.Join(t.TempDir(), "users")
	if err := os.WriteFile(file, []byte("# users\ncarol:c\nalice:other\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		flags []string
		file  string
		want  string
	}{
		{[]string{"b:"}, "", `--user: user "b" has an empty password`},
		{[]string{"a:x", "a:y"}, "", `--user: user "a" is already given (--user)`},
		{[]string{"alice:pw"}, file, `:3: user "alice" is already given (--user)`},
		{nil, "", ""},
		{[]string{"a:pw:with:colons", "b:x"}, file, ""},
	} {
		users, err := loadUsers(tc.flags, tc.file)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v %q: %v", tc.flags, tc.file, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%v %q: got %v (users %v), want an error containing %q", tc.flags, tc.file, err, users, tc.want)
		}
	}
	users, err := loadUsers([]string{"a:pw:with:colons"}, file)
	if err != nil || users["a"] != "pw:with:colons" || users["carol"] != "c" || users["alice"] != "other" {
		t.Errorf("users %v, %v", users, err)
	}
}

// --log-level takes slog's level names; anything else is refused before the engine opens.
func TestServeLogLevel(t *testing.T) {
	var out strings.Builder
	err := runServe(&out, &out, serveOptions{dataDir: t.TempDir(), listen: "127.0.0.1:0", logLevel: "loud"})
	if err == nil || !strings.Contains(err.Error(), `--log-level "loud"`) {
		t.Fatalf("--log-level loud: %v", err)
	}
}

// serving is a runServe running in the test: its output lines, and its result once it returned.
type serving struct {
	lines chan string
	done  chan error
}

// startServe runs runServe with o, and returns once it printed the line starting with want.
func startServe(t *testing.T, o serveOptions, want string) (line string, s *serving) {
	t.Helper()
	pr, pw := io.Pipe()
	s = &serving{lines: make(chan string, 16), done: make(chan error, 1)}
	go func() {
		s.done <- runServe(pw, io.Discard, o)
		pw.Close()
	}()
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			s.lines <- sc.Text()
		}
		close(s.lines)
	}()
	for l := range s.lines {
		if strings.HasPrefix(l, want) {
			return l, s
		}
	}
	t.Fatalf("serve ended before printing %q: %v", want, <-s.done)
	return "", nil
}

// stop sends the process SIGINT, which runServe (having printed its addresses) has asked for, and waits for it
// to return.
func (s *serving) stop(t *testing.T) {
	t.Helper()
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if err := <-s.done; err != nil {
		t.Fatalf("serve: %v", err)
	}
}

// `serve --http` serves the probes, the metrics and the console, asking the pgwire users for basic auth, over TLS when pgwire
// has TLS (the certificate of --tls-cert); an empty --http serves no HTTP; a non-loopback --http without users is
// refused before the engine opens.
func TestServeHTTP(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, pool := testcert.Files(t, t.TempDir())
	o := serveOptions{dataDir: dir, listen: "127.0.0.1:0", http: "127.0.0.1:0", users: []string{"alice:pw"},
		tlsCert: certFile, tlsKey: keyFile}
	line, s := startServe(t, o, "clinksql: HTTP on ")
	url, _, _ := strings.Cut(strings.TrimPrefix(line, "clinksql: HTTP on "), " ")
	if !strings.HasPrefix(url, "https://127.0.0.1:") {
		t.Fatalf("HTTP line %q: want an https URL on 127.0.0.1", line)
	}
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	fetch := func(path, user, password string) (int, string) {
		req, err := http.NewRequest("GET", url+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if user != "" {
			req.SetBasicAuth(user, password)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if code, body := fetch("/healthz", "", ""); code != 200 || body != "ok\n" {
		t.Errorf("/healthz: %d %q", code, body)
	}
	if code, body := fetch("/readyz", "", ""); code != 200 {
		t.Errorf("/readyz once serving: %d %q", code, body)
	}
	if code, _ := fetch("/metrics", "", ""); code != http.StatusUnauthorized {
		t.Errorf("/metrics without credentials: %d, want 401", code)
	}
	if code, _ := fetch("/metrics", "alice", "nope"); code != http.StatusUnauthorized {
		t.Errorf("/metrics with a wrong password: %d, want 401", code)
	}
	if code, body := fetch("/metrics", "alice", "pw"); code != 200 || !strings.Contains(body, "clinksql_") {
		t.Errorf("/metrics as alice: %d, want 200 with clinksql_ metrics:\n%s", code, body)
	}
	if code, body := fetch("/", "alice", "pw"); code != 200 || !strings.Contains(body, "<html") {
		t.Errorf("/ as alice: %d, want the console:\n%s", code, body)
	}
	s.stop(t)

	// Off: only the pgwire line.
	o = serveOptions{dataDir: dir, listen: "127.0.0.1:0"}
	_, s = startServe(t, o, "clinksql: listening on ")
	s.stop(t)
	for l := range s.lines {
		if strings.Contains(l, "HTTP") {
			t.Errorf("--http '': printed %q", l)
		}
	}

	err := runServe(io.Discard, io.Discard, serveOptions{dataDir: dir, listen: "127.0.0.1:0", http: "0.0.0.0:4567"})
	if err == nil || !strings.Contains(err.Error(), "--http: refusing to listen on 0.0.0.0:4567 without users") {
		t.Errorf("--http 0.0.0.0:4567 without users: %v", err)
	}
}
