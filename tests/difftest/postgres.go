package difftest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// DefaultPGBin is where Debian's postgresql-15 puts initdb and postgres; PGBIN overrides it.
const DefaultPGBin = "/usr/lib/postgresql/15/bin"

// ErrNoPostgres is returned by FindPostgres when neither $PGBIN, DefaultPGBin nor PATH has initdb and postgres.
var ErrNoPostgres = errors.New("PostgreSQL server binaries (initdb, postgres) not found")

// FindPostgres returns the directory holding initdb and postgres: $PGBIN, else DefaultPGBin, else the directory
// of initdb on PATH.
func FindPostgres() (string, error) {
	has := func(dir string) bool {
		for _, b := range []string{"initdb", "postgres"} {
			if fi, err := os.Stat(filepath.Join(dir, b)); err != nil || fi.IsDir() {
				return false
			}
		}
		return true
	}
	if d := os.Getenv("PGBIN"); d != "" {
		if has(d) {
			return d, nil
		}
		return "", fmt.Errorf("%w in PGBIN=%s", ErrNoPostgres, d)
	}
	if has(DefaultPGBin) {
		return DefaultPGBin, nil
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		if r, err := filepath.EvalSymlinks(p); err == nil && has(filepath.Dir(r)) {
			return filepath.Dir(r), nil
		}
	}
	return "", fmt.Errorf("%w (looked in $PGBIN, %s and PATH)", ErrNoPostgres, DefaultPGBin)
}

// Postgres is a throwaway PostgreSQL cluster: initdb'd in a temporary directory (UTF8, locale C.UTF-8: text compares
// by code point (bytes) as in clinksql and case maps are Unicode; time zone UTC), listening on a free loopback port, with durability off. Started as root,
// it runs as the `postgres` user (Postgres refuses root).
type Postgres struct {
	Version string // `postgres --version`
	Port    int

	dir  string
	cmd  *exec.Cmd
	done chan struct{}
	log  *lineLog
}

// StartPostgres initialises and starts a cluster with the binaries in binDir; Stop removes it.
func StartPostgres(ctx context.Context, binDir string) (*Postgres, error) {
	cred, err := credential()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "difftest-pg-")
	if err != nil {
		return nil, err
	}
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	p := &Postgres{dir: dir}
	ver, err := exec.CommandContext(ctx, filepath.Join(binDir, "postgres"), "--version").Output()
	if err != nil {
		p.Stop()
		return nil, fmt.Errorf("postgres --version: %v", err)
	}
	p.Version = strings.TrimSpace(string(ver))
	data := filepath.Join(dir, "data")
	initdb := exec.CommandContext(ctx, filepath.Join(binDir, "initdb"), "-D", data, "-U", "postgres", "--auth=trust",
		"-E", "UTF8", "--locale=C.UTF-8", "--no-sync")
	initdb.SysProcAttr = procAttr(cred)
	if out, err := initdb.CombinedOutput(); err != nil {
		p.Stop()
		return nil, fmt.Errorf("initdb: %v\n%s", err, out)
	}
	for try := 0; ; try++ {
		err = p.start(ctx, binDir, data, cred)
		if err == nil || try == 2 || !strings.Contains(err.Error(), "Address already in use") {
			break
		}
	}
	if err != nil {
		p.Stop()
		return nil, err
	}
	return p, nil
}

func (p *Postgres) start(ctx context.Context, binDir, data string, cred *syscall.Credential) error {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	p.Port = l.Addr().(*net.TCPAddr).Port
	l.Close()
	p.cmd = exec.Command(filepath.Join(binDir, "postgres"), "-D", data, "-p", strconv.Itoa(p.Port),
		"-k", p.dir, "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "synchronous_commit=off",
		"-c", "full_page_writes=off", "-c", "TimeZone=UTC", "-c", "extra_float_digits=1", "-c", "max_connections=20")
	p.cmd.SysProcAttr = procAttr(cred)
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		return err
	}
	p.log = &lineLog{ready: make(chan struct{})}
	p.done = make(chan struct{})
	if err := p.cmd.Start(); err != nil {
		return fmt.Errorf("start postgres: %v", err)
	}
	go func() {
		p.log.read(stderr)
		p.cmd.Wait()
		close(p.done)
	}()
	select {
	case <-p.log.ready:
		return nil
	case <-p.done:
		p.cmd = nil
		return fmt.Errorf("postgres exited before it was ready:\n%s", p.log.String())
	case <-ctx.Done():
		return fmt.Errorf("postgres not ready: %v\n%s", ctx.Err(), p.log.String())
	}
}

// Connect opens a connection as the superuser postgres.
func (p *Postgres) Connect(ctx context.Context) (*pgx.Conn, error) {
	return pgx.Connect(ctx, fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", p.Port))
}

// Stop stops the server (fast shutdown, then SIGKILL after 30 s) and removes its directory.
func (p *Postgres) Stop() {
	if p.cmd != nil && p.cmd.Process != nil {
		_ = p.cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-p.done:
		case <-time.After(30 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		p.cmd = nil
	}
	os.RemoveAll(p.dir)
}

// credential is the postgres user's when running as root (initdb and postgres refuse root), else nil.
func credential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root, and Postgres refuses root: %v (postgresql-15 creates the user)", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// lineLog keeps the server's log and closes ready at its "ready to accept connections" line.
type lineLog struct {
	mu    sync.Mutex
	lines []string
	ready chan struct{}
}

func (l *lineLog) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	readySeen := false
	for sc.Scan() {
		line := sc.Text()
		l.mu.Lock()
		if len(l.lines) < 1000 {
			l.lines = append(l.lines, line)
		}
		l.mu.Unlock()
		if !readySeen && strings.Contains(line, "ready to accept connections") {
			readySeen = true
			close(l.ready)
		}
	}
}

func (l *lineLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}
