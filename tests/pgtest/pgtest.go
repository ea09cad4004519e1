package pgtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/clinksql/clinksql/internal/proclog"
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

// Options are what a test needs of its cluster beyond the defaults.
type Options struct {
	// Logical sets wal_level = logical (with replication slots and WAL senders for logical replication).
	Logical bool
	// MaxPreparedTransactions is max_prepared_transactions (0: Postgres' default, 0, which refuses PREPARE
	// TRANSACTION).
	MaxPreparedTransactions int
	// Durable keeps fsync on: a test that kills the server and reads what it committed needs it.
	Durable bool
}

// Postgres is a throwaway PostgreSQL cluster: initdb'd in a temporary directory (UTF8, locale C.UTF-8: text compares
// by code point (bytes) as in clinksql and case maps are Unicode; time zone UTC), listening on a free loopback port,
// with durability off unless Options.Durable. Started as root, it runs as the `postgres` user (Postgres refuses
// root).
type Postgres struct {
	Version string // `postgres --version`
	Port    int

	opts   Options
	binDir string
	cred   *syscall.Credential
	dir    string
	cmd    *exec.Cmd
	done   chan struct{}
	log    *proclog.Log
}

// StartT starts a cluster for a test and stops it when the test ends. Without PostgreSQL 15 binaries it skips the
// test, unless CI=true: there it fails (make test-tools installs postgresql-15).
func StartT(t testing.TB, opts Options) *Postgres {
	t.Helper()
	bin, err := FindPostgres()
	if err != nil {
		if errors.Is(err, ErrNoPostgres) && os.Getenv("CI") != "true" {
			t.Skipf("%v: this test needs PostgreSQL 15 (make test-tools installs postgresql-15; PGBIN names another "+
				"directory). Under CI=true this fails instead.", err)
		}
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pg, err := Start(ctx, bin, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pg.Stop)
	return pg
}

// StartPostgres initialises and starts a cluster with the binaries in binDir and the default options; Stop
// removes it.
func StartPostgres(ctx context.Context, binDir string) (*Postgres, error) {
	return Start(ctx, binDir, Options{})
}

// Start initialises and starts a cluster with the binaries in binDir; Stop removes it.
func Start(ctx context.Context, binDir string, opts Options) (*Postgres, error) {
	cred, err := credential()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		return nil, err
	}
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	p := &Postgres{dir: dir, opts: opts, binDir: binDir, cred: cred}
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
		err = p.start(ctx, 0)
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

// start runs the server on port (0: a free one).
func (p *Postgres) start(ctx context.Context, port int) error {
	if port == 0 {
		var err error
		if port, err = proclog.FreePort(); err != nil {
			return err
		}
	}
	p.Port = port
	args := []string{"-D", filepath.Join(p.dir, "data"), "-p", strconv.Itoa(p.Port),
		"-k", p.dir, "-c", "listen_addresses=127.0.0.1", "-c", "TimeZone=UTC", "-c", "extra_float_digits=1",
		"-c", "max_connections=40"}
	if !p.opts.Durable {
		args = append(args, "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off")
	}
	if p.opts.Logical {
		args = append(args, "-c", "wal_level=logical", "-c", "max_replication_slots=20", "-c", "max_wal_senders=20")
	}
	if p.opts.MaxPreparedTransactions > 0 {
		args = append(args, "-c", "max_prepared_transactions="+strconv.Itoa(p.opts.MaxPreparedTransactions))
	}
	p.cmd = exec.Command(filepath.Join(p.binDir, "postgres"), args...)
	p.cmd.SysProcAttr = procAttr(p.cred)
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		return err
	}
	p.log = proclog.New("ready to accept connections", 1000)
	p.done = make(chan struct{})
	if err := p.cmd.Start(); err != nil {
		return fmt.Errorf("start postgres: %v", err)
	}
	go func() {
		p.log.Read(stderr)
		p.cmd.Wait()
		close(p.done)
	}()
	select {
	case <-p.log.Ready():
		return nil
	case <-p.done:
		p.cmd = nil
		return fmt.Errorf("postgres exited before it was ready:\n%s", p.log.String())
	case <-ctx.Done():
		return fmt.Errorf("postgres not ready: %v\n%s", ctx.Err(), p.log.String())
	}
}

// DSN is the URL of database postgres as the superuser postgres (no password: trust authentication).
func (p *Postgres) DSN() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", p.Port)
}

// Connect opens a connection as the superuser postgres.
func (p *Postgres) Connect(ctx context.Context) (*pgx.Conn, error) {
	return pgx.Connect(ctx, p.DSN())
}

// ConnectT opens a connection for a test, closed when it ends.
func (p *Postgres) ConnectT(t testing.TB) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := p.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// Kill stops the server with SIGKILL (a crash: what it had not fsynced may be lost unless Options.Durable) and
// keeps its directory for Restart.
func (p *Postgres) Kill() {
	if p.cmd != nil && p.cmd.Process != nil {
		_ = p.cmd.Process.Kill()
		<-p.done
		p.cmd = nil
	}
}

// Restart starts a killed or stopped server again, on the same port and data directory (crash recovery runs).
func (p *Postgres) Restart(ctx context.Context) error {
	p.Kill()
	// The postmaster's children may outlive it for a moment and hold the port.
	var err error
	for try := 0; try < 50; try++ {
		if err = p.start(ctx, p.Port); err == nil || !strings.Contains(err.Error(), "already in use") {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
	return err
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
