// Package testserver builds the clinksql binary and runs `clinksql serve` as a real process for tests that talk
// to it over the Postgres wire protocol (tests/clients, the pgwire mode of tests/sqllogic).
//
// A server listens on a free loopback port; Start returns once it printed its ready line
// ("clinksql: listening on HOST:PORT (...)"), Stop sends SIGTERM and reports a non-zero exit as an error.
package testserver

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Build compiles cmd/clinksql into dir and returns the binary's path. It runs from anywhere inside the module.
//
// It also makes the module's sources inputs of the calling test: go test caches a package's result until its test
// binary or the files and variables the test read change, and the server is a separate build that the test
// binary does not include, so without this a change to pgwire/ or cmd/clinksql/ alone would replay a cached pass.
func Build(dir string) (string, error) {
	bin := filepath.Join(dir, "clinksql")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/clinksql/clinksql/cmd/clinksql")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build ./cmd/clinksql: %v\n%s", err, out.String())
	}
	if err := StatSources(); err != nil {
		return "", err
	}
	return bin, nil
}

// Main is the TestMain of a package that drives the binary: it builds it into a temporary directory, sets *bin
// to its path, runs the tests, removes the directory and runs cleanups (such as kafkatest.RemoveBinary); a failed
// build exits 1 before any test runs.
func Main(m *testing.M, bin *string, cleanups ...func()) {
	dir, err := os.MkdirTemp("", "clinksql-test-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if *bin, err = Build(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	for _, c := range cleanups {
		c()
	}
	os.Exit(code)
}

// StatSources stats every non-test Go file of the module (and go.mod, go.sum): go test records each as an input
// of the test's result.
func StatSources() error {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return fmt.Errorf("go env GOMOD: %v", err)
	}
	root := filepath.Dir(strings.TrimSpace(string(out)))
	for _, f := range []string{"go.mod", "go.sum"} {
		if _, err := os.Stat(filepath.Join(root, f)); err != nil {
			return err
		}
	}
	return filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "bin") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go") {
			_, err := os.Stat(path)
			return err
		}
		return nil
	})
}

// ReadyTimeout bounds how long Start waits for the ready line (opening a data directory re-deploys its jobs).
var ReadyTimeout = 60 * time.Second

// StopTimeout bounds how long Stop waits for a graceful exit after SIGTERM.
var StopTimeout = 60 * time.Second

// Server is one running `clinksql serve`.
type Server struct {
	Bin     string
	DataDir string
	Args    []string // extra flags given to Start
	Host    string   // from the ready line
	Port    int

	cmd     *exec.Cmd
	out     *SyncBuffer
	done    chan struct{}
	waitErr error
	stopped bool
}

var readyRE = regexp.MustCompile(`clinksql: listening on (\S+)`)

// Start runs `bin serve --data-dir dataDir --listen 127.0.0.1:<free port> args...` and waits for its ready line.
// A port taken between choosing and binding it is retried with another.
func Start(bin, dataDir string, args ...string) (*Server, error) {
	var err error
	for try := 0; try < 3; try++ {
		var s *Server
		s, err = start(bin, dataDir, args)
		if err == nil {
			return s, nil
		}
		if !strings.Contains(err.Error(), "address already in use") {
			return nil, err
		}
	}
	return nil, err
}

func start(bin, dataDir string, args []string) (*Server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	s := &Server{Bin: bin, DataDir: dataDir, Args: args, out: &SyncBuffer{}, done: make(chan struct{})}
	argv := append([]string{"serve", "--data-dir", dataDir, "--listen", "127.0.0.1:" + strconv.Itoa(port), "--http", "127.0.0.1:0"}, args...)
	s.cmd = exec.Command(bin, argv...)
	s.cmd.Stdout, s.cmd.Stderr = s.out, s.out
	s.cmd.Env = os.Environ()
	s.cmd.SysProcAttr = ProcAttr()
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %v", bin, err)
	}
	go func() {
		s.waitErr = s.cmd.Wait()
		close(s.done)
	}()
	deadline := time.Now().Add(ReadyTimeout)
	for {
		if m := readyRE.FindStringSubmatch(s.out.String()); m != nil {
			host, p, err := net.SplitHostPort(strings.TrimRight(m[1], ".,;"))
			if err != nil {
				s.Kill()
				return nil, fmt.Errorf("ready line %q: %v", m[0], err)
			}
			s.Host = host
			s.Port, _ = strconv.Atoi(p)
			if s.Port != port {
				s.Kill()
				return nil, fmt.Errorf("asked to listen on port %d, the ready line says %q", port, m[0])
			}
			return s, nil
		}
		select {
		case <-s.done:
			return nil, fmt.Errorf("clinksql serve exited before it was ready (%v):\n%s", s.waitErr, s.out.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.Kill()
			return nil, fmt.Errorf("clinksql serve printed no ready line within %v:\n%s", ReadyTimeout, s.out.String())
		}
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Addr is host:port.
func (s *Server) Addr() string { return net.JoinHostPort(s.Host, strconv.Itoa(s.Port)) }

// URL is a connection string for pgx and other libpq-style clients (no users configured: any user is let in).
func (s *Server) URL() string {
	return fmt.Sprintf("postgres://clinksql@%s/clinksql?sslmode=disable&connect_timeout=10", s.Addr())
}

// Output is everything the server printed so far.
func (s *Server) Output() string { return s.out.String() }

// Stop sends SIGTERM and waits for the process to exit; an exit status other than 0, or no exit within
// StopTimeout (the process is then killed), is an error that carries the server's output.
func (s *Server) Stop() error {
	if s.stopped {
		return nil
	}
	s.stopped = true
	select {
	case <-s.done:
		return fmt.Errorf("clinksql serve had already exited (%v):\n%s", s.waitErr, s.out.String())
	default:
	}
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return fmt.Errorf("SIGTERM: %v", err)
	}
	select {
	case <-s.done:
	case <-time.After(StopTimeout):
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.done
		return fmt.Errorf("clinksql serve did not exit within %v of SIGTERM:\n%s", StopTimeout, s.out.String())
	}
	if s.waitErr != nil {
		var ee *exec.ExitError
		if errors.As(s.waitErr, &ee) {
			return fmt.Errorf("clinksql serve exited with %v after SIGTERM:\n%s", ee.ProcessState, s.out.String())
		}
		return s.waitErr
	}
	return nil
}

// Kill ends the server at once (SIGKILL to its process group) and waits for it; for clean-ups after a failure.
func (s *Server) Kill() {
	if s.stopped {
		return
	}
	s.stopped = true
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	<-s.done
}

// SyncBuffer collects a process's output from its copying goroutines.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
