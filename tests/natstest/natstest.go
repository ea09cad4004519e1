package natstest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/clinksql/clinksql/internal/proclog"
	"github.com/nats-io/nats.go/jetstream"
)

// Version is the nats-server module version in go.mod: the cached binary's name carries it.
const Version = "v2.15.3"

// Options are what a test needs of its server.
type Options struct {
	// User and Password, when set, require them of every client (--user, --pass).
	User, Password string
	// StoreDir is the JetStream store directory; "" makes a temporary one (removed at Stop).
	StoreDir string
}

// Server is one nats-server process.
type Server struct {
	Port int

	opts    Options
	bin     string
	dir     string
	ownsDir bool
	mu      sync.Mutex
	cmd     *exec.Cmd
	done    chan struct{}
	log     *proclog.Log
}

var buildMu sync.Mutex

// Binary returns the path of the nats-server binary, building it when missing (from the module: `go build
// github.com/nats-io/nats-server/v2`, run in the current directory, which must be inside the clinksql module, as a
// test's is). NATS_SERVER names another binary.
func Binary() (string, error) {
	if b := os.Getenv("NATS_SERVER"); b != "" {
		return b, nil
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "clinksql-natstest")
	bin := filepath.Join(dir, "nats-server-"+Version)
	if fi, err := os.Stat(bin); err == nil && !fi.IsDir() {
		return bin, nil
	}
	buildMu.Lock()
	defer buildMu.Unlock()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	lock, err := os.OpenFile(filepath.Join(dir, "build.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	if err := flock(lock); err != nil {
		return "", fmt.Errorf("natstest: lock %s: %v", lock.Name(), err)
	}
	defer funlock(lock)
	if fi, err := os.Stat(bin); err == nil && !fi.IsDir() {
		return bin, nil // another process built it while we waited
	}
	tmp := fmt.Sprintf("%s.tmp%d", bin, os.Getpid())
	cmd := exec.Command("go", "build", "-o", tmp, "github.com/nats-io/nats-server/v2")
	if out, err := cmd.CombinedOutput(); err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("natstest: go build nats-server: %v\n%s", err, out)
	}
	if err := os.Rename(tmp, bin); err != nil {
		return "", err
	}
	return bin, nil
}

// StartT starts a server for a test and stops it when the test ends.
func StartT(t testing.TB, opts Options) *Server {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	s, err := Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

// StartWithStream starts a server for a test, as StartT with no options, and creates one stream on it: the set-up
// most connector tests begin with.
func StartWithStream(t testing.TB, cfg jetstream.StreamConfig) *Server {
	t.Helper()
	s := StartT(t, Options{})
	s.CreateStream(t, cfg)
	return s
}

// Start builds (when missing) and starts a server; Stop stops it and removes its temporary store.
func Start(ctx context.Context, opts Options) (*Server, error) {
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	s := &Server{opts: opts, bin: bin, dir: opts.StoreDir}
	if s.dir == "" {
		if s.dir, err = os.MkdirTemp("", "natstest-"); err != nil {
			return nil, err
		}
		s.ownsDir = true
	}
	for try := 0; ; try++ {
		err = s.start(ctx, 0)
		if err == nil || try == 2 || !strings.Contains(err.Error(), "address already in use") {
			break
		}
	}
	if err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

func (s *Server) start(ctx context.Context, port int) error {
	if port == 0 {
		var err error
		if port, err = proclog.FreePort(); err != nil {
			return err
		}
	}
	s.Port = port
	args := []string{"-js", "-sd", s.dir, "-a", "127.0.0.1", "-p", strconv.Itoa(port)}
	if s.opts.User != "" {
		args = append(args, "--user", s.opts.User, "--pass", s.opts.Password)
	}
	cmd := exec.Command(s.bin, args...)
	cmd.SysProcAttr = procAttr()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	log := proclog.New("Server is ready", 2000)
	done := make(chan struct{})
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("natstest: start nats-server: %v", err)
	}
	go func() {
		log.Read(stderr)
		cmd.Wait()
		close(done)
	}()
	select {
	case <-log.Ready():
	case <-done:
		return fmt.Errorf("natstest: nats-server exited before it was ready:\n%s", log.String())
	case <-ctx.Done():
		_ = cmd.Process.Kill()
		<-done
		return fmt.Errorf("natstest: nats-server not ready: %v\n%s", ctx.Err(), log.String())
	}
	s.mu.Lock()
	s.cmd, s.done, s.log = cmd, done, log
	s.mu.Unlock()
	return nil
}

// URL is the server's client URL (with the user and password when the server requires them).
func (s *Server) URL() string {
	if s.opts.User != "" {
		return fmt.Sprintf("nats://%s:%s@127.0.0.1:%d", s.opts.User, s.opts.Password, s.Port)
	}
	return fmt.Sprintf("nats://127.0.0.1:%d", s.Port)
}

// Addr is the server's URL without credentials.
func (s *Server) Addr() string { return fmt.Sprintf("nats://127.0.0.1:%d", s.Port) }

// Log is what the server wrote so far (its first 2000 lines).
func (s *Server) Log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.log == nil {
		return ""
	}
	return s.log.String()
}

func (s *Server) signal(sig os.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Signal(sig)
	}
}

// Pid is the server process's id (0 when it is not running).
func (s *Server) Pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil || s.cmd.Process == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// Pause stops the process (SIGSTOP): connections stay open and nothing answers.
func (s *Server) Pause() { s.signal(syscall.SIGSTOP) }

// Resume continues a paused process (SIGCONT).
func (s *Server) Resume() { s.signal(syscall.SIGCONT) }

// Kill kills the server (SIGKILL) and keeps its store for Restart.
func (s *Server) Kill() {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.cmd = nil
	s.mu.Unlock()
	if cmd != nil && cmd.Process != nil {
		_ = cmd.Process.Kill()
		<-done
	}
}

// Restart starts a killed or stopped server again on the same port and store.
func (s *Server) Restart(ctx context.Context) error {
	s.Kill()
	var err error
	for try := 0; try < 50; try++ {
		if err = s.start(ctx, s.Port); err == nil || !strings.Contains(err.Error(), "address already in use") {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
	return err
}

// Stop stops the server (SIGTERM, SIGKILL after 10 s) and removes its temporary store.
func (s *Server) Stop() {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.cmd = nil
	s.mu.Unlock()
	if cmd != nil && cmd.Process != nil {
		_ = cmd.Process.Signal(syscall.SIGCONT)
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}
	if s.ownsDir {
		os.RemoveAll(s.dir)
	}
}

// Connect opens a client connection, closed when the test ends.
func (s *Server) Connect(t testing.TB) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(s.URL(), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// JetStream is a JetStream context over a new connection, closed when the test ends.
func (s *Server) JetStream(t testing.TB) jetstream.JetStream {
	t.Helper()
	js, err := jetstream.New(s.Connect(t))
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// CreateStream creates (or updates) a file-stored stream, failing the test on error.
func (s *Server) CreateStream(t testing.TB, cfg jetstream.StreamConfig) jetstream.Stream {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := s.JetStream(t).CreateOrUpdateStream(ctx, cfg)
	if err != nil {
		t.Fatalf("natstest: create stream %s: %v", cfg.Name, err)
	}
	return st
}

// Publish publishes payloads to subject and waits for every acknowledgement (asynchronously, many in flight).
func Publish(ctx context.Context, js jetstream.JetStream, subject string, payloads [][]byte) error {
	const window = 4096
	futs := make([]jetstream.PubAckFuture, 0, window)
	wait := func() error {
		for _, f := range futs {
			select {
			case <-f.Ok():
			case err := <-f.Err():
				return err
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		futs = futs[:0]
		return nil
	}
	for _, p := range payloads {
		f, err := js.PublishAsync(subject, p)
		if err != nil {
			return err
		}
		futs = append(futs, f)
		if len(futs) == window {
			if err := wait(); err != nil {
				return err
			}
		}
	}
	return wait()
}

// ReadAll reads every message of a stream (an ordered consumer from the first to the last sequence at the
// call), in order.
func ReadAll(ctx context.Context, js jetstream.JetStream, stream string) ([]jetstream.Msg, error) {
	st, err := js.Stream(ctx, stream)
	if err != nil {
		return nil, err
	}
	info, err := st.Info(ctx)
	if err != nil {
		return nil, err
	}
	last := info.State.LastSeq
	if info.State.Msgs == 0 {
		return nil, nil
	}
	c, err := st.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{})
	if err != nil {
		return nil, err
	}
	var out []jetstream.Msg
	for {
		b, err := c.Fetch(1000, jetstream.FetchMaxWait(2*time.Second))
		if err != nil {
			return nil, err
		}
		for m := range b.Messages() {
			out = append(out, m)
			md, err := m.Metadata()
			if err != nil {
				return nil, err
			}
			if md.Sequence.Stream >= last {
				return out, nil
			}
		}
		if err := b.Error(); err != nil && !errors.Is(err, jetstream.ErrNoHeartbeat) {
			return nil, err
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
}
