package crash

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// proc is one run of the clinksql binary. Its stdout and stderr go, line by line, to a log file and to a watch
// function (readiness: the server's "listening on" line, or the job ids that `clinksql exec` prints).
type proc struct {
	cmd     *exec.Cmd
	log     string
	started time.Time
	exited  chan struct{}
	err     error // cmd.Wait's result, once exited is closed
	killed  atomic.Bool

	mu    sync.Mutex
	ready chan struct{} // closed by the watch function via markReady
	once  sync.Once
	addr  string // serve: the address it listens on
	jobs  int    // exec: job ids printed
}

func (p *proc) markReady() { p.once.Do(func() { close(p.ready) }) }

// startProc starts the binary with args; watch sees every output line (on the reader goroutine).
func startProc(logPath string, watch func(p *proc, line string), args ...string) (*proc, error) {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(logf, "### %s %s\n", time.Now().Format("15:04:05.000"), strings.Join(args, " "))
	pr, pw, err := os.Pipe()
	if err != nil {
		logf.Close()
		return nil, err
	}
	cmd := exec.Command(clinksqlBin, args...)
	cmd.Stdout, cmd.Stderr = pw, pw
	cmd.Env = append(os.Environ(), "GOTRACEBACK=all")
	p := &proc{cmd: cmd, log: logPath, exited: make(chan struct{}), ready: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		pr.Close()
		pw.Close()
		logf.Close()
		return nil, err
	}
	p.started = time.Now()
	pw.Close()
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(logf, line)
			if watch != nil {
				watch(p, line)
			}
		}
		pr.Close()
	}()
	go func() {
		p.err = cmd.Wait()
		<-copied
		fmt.Fprintf(logf, "### %s exit: %v (killed: %v)\n", time.Now().Format("15:04:05.000"), p.err, p.killed.Load())
		logf.Close()
		close(p.exited)
	}()
	return p, nil
}

// kill sends SIGKILL (a crash: no deferred code, no final checkpoint) and waits for the process to be gone.
func (p *proc) kill() {
	select {
	case <-p.exited:
		return
	default:
	}
	p.killed.Store(true)
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
}

// terminate sends SIGTERM (a graceful stop begins: a final checkpoint, then the commit) and SIGKILL grace later,
// unless the process exited by then.
func (p *proc) terminate(grace time.Duration) {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(grace):
		p.kill()
	}
}

// waitExit waits for the process to end by itself, up to timeout; then kills it and reports.
func (p *proc) waitExit(timeout time.Duration) error {
	select {
	case <-p.exited:
		return p.err
	case <-time.After(timeout):
		_ = p.cmd.Process.Signal(syscall.SIGQUIT) // goroutine dump into the log
		select {
		case <-p.exited:
		case <-time.After(5 * time.Second):
			p.kill()
		}
		return fmt.Errorf("did not exit within %s (stack dump in %s)", timeout, p.log)
	}
}

// waitReady waits until the process is ready, it exits, or timeout.
func (p *proc) waitReady(timeout time.Duration) error {
	select {
	case <-p.ready:
		return nil
	case <-p.exited:
		select {
		case <-p.ready:
			return nil
		default:
		}
		return fmt.Errorf("exited before it was ready: %v\n%s", p.err, tail(p.log, 30))
	case <-time.After(timeout):
		return fmt.Errorf("not ready within %s\n%s", timeout, tail(p.log, 30))
	}
}

// tail returns the last n lines of a file.
func tail(path string, n int) string {
	data, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "    " + strings.Join(lines, "\n    ")
}

// iteration is one iteration's directories and processes.
type iteration struct {
	cfg  *iterConfig
	dir  string // holds data/ and logs/; copied to /tmp/crash-<seed> on failure
	data string
	logs string
	runs int
	// readBack is "count|sum(n)" of the Parquet output read back through the engine (serve only).
	readBack string
	// procs are every process started, killed at cleanup if still running.
	procs []*proc
	// kafka and kafkaRef set up the Kafka pipeline of the crashed runs and of the reference (nil: none).
	kafka, kafkaRef *kafkaSetup
	// arm is the line trigger of the next process started (serve only), nil for none.
	arm *lineTrigger
}

// lineTrigger fires (closes hit) delay after the nth output line of a process that matches re.
type lineTrigger struct {
	re    *regexp.Regexp
	nth   int
	delay time.Duration
	seen  int // the reader goroutine's
	hit   chan struct{}
}

func newLineTrigger(k kill) *lineTrigger {
	return &lineTrigger{re: lineRe[k.On], nth: k.Nth, delay: k.Delay, hit: make(chan struct{})}
}

// see runs on the process's reader goroutine for each line.
func (lt *lineTrigger) see(line string) {
	if lt == nil || lt.seen >= lt.nth || !lt.re.MatchString(line) {
		return
	}
	if lt.seen++; lt.seen == lt.nth {
		if lt.delay == 0 {
			close(lt.hit)
		} else {
			time.AfterFunc(lt.delay, func() { close(lt.hit) })
		}
	}
}

// setup is the iteration's pipeline for the crashed runs.
func (it *iteration) setup() []string { return it.cfg.setup(true, it.kafka) }

func (it *iteration) logPath() string {
	it.runs++
	return filepath.Join(it.logs, fmt.Sprintf("run-%d.log", it.runs))
}

// driver starts runs of the binary on an iteration's data directory: `clinksql serve` driven over pgx, or
// `clinksql exec --wait` (the same engine, embedded; used until serve exists, or with CRASH_DRIVER=exec).
type driver interface {
	name() string
	// first starts the first run and sets the pipeline up; it returns once every job exists.
	first(ctx context.Context, it *iteration) (*proc, error)
	// restart starts a run on the existing data directory and returns at once: the engine re-deploys the jobs.
	restart(ctx context.Context, it *iteration) (*proc, error)
	// finish takes a run to the end: every job FINISHED, the process stopped gracefully.
	finish(ctx context.Context, it *iteration, p *proc) error
}

// --- clinksql serve over pgx ---

type serveDriver struct{}

func (serveDriver) name() string { return "serve" }

var listeningRe = regexp.MustCompile(`listening on (\S+)`)

// startServe starts `clinksql serve` on a port the kernel picks; the address comes from its "listening on" line.
// It logs at debug level (the checkpoint lines the kills aim at), and takes the iteration's armed line trigger.
func startServe(it *iteration) (*proc, error) {
	trig := it.arm
	it.arm = nil
	p, err := startProc(it.logPath(), func(p *proc, line string) {
		if m := listeningRe.FindStringSubmatch(line); m != nil {
			p.mu.Lock()
			p.addr = strings.TrimRight(m[1], ",;)")
			p.mu.Unlock()
			p.markReady()
		}
		trig.see(line)
	}, "serve", "--data-dir", it.data, "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0", "--log-level", "debug")
	if err == nil {
		it.procs = append(it.procs, p)
	}
	return p, err
}

func connect(ctx context.Context, p *proc) (*pgx.Conn, error) {
	if err := p.waitReady(60 * time.Second); err != nil {
		return nil, err
	}
	p.mu.Lock()
	addr := p.addr
	p.mu.Unlock()
	cfg, err := pgx.ParseConfig(fmt.Sprintf("postgres://crash@%s/clinksql?sslmode=disable&connect_timeout=10", addr))
	if err != nil {
		return nil, err
	}
	// The simple query protocol: the harness tests crashes, not the extended protocol (the client tests do).
	cfg.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	return pgx.ConnectConfig(ctx, cfg)
}

func (serveDriver) first(ctx context.Context, it *iteration) (*proc, error) {
	p, err := startServe(it)
	if err != nil {
		return nil, err
	}
	conn, err := connect(ctx, p)
	if err != nil {
		return p, err
	}
	defer conn.Close(context.Background())
	for _, stmt := range it.setup() {
		if _, err := conn.Exec(ctx, stmt); err != nil {
			return p, fmt.Errorf("%s: %w", firstLine(stmt), err)
		}
	}
	return p, nil
}

func (serveDriver) restart(ctx context.Context, it *iteration) (*proc, error) { return startServe(it) }

// jobRow is a row of SHOW JOBS.
type jobRow map[string]string

func showJobs(ctx context.Context, conn *pgx.Conn) (map[string]jobRow, error) {
	rows, err := conn.Query(ctx, "SHOW JOBS")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]jobRow{}
	fds := rows.FieldDescriptions()
	for rows.Next() {
		r := jobRow{}
		for i, raw := range rows.RawValues() {
			r[fds[i].Name] = string(raw)
		}
		out[r["id"]] = r
	}
	return out, rows.Err()
}

func (serveDriver) finish(ctx context.Context, it *iteration, p *proc) error {
	conn, err := connect(ctx, p)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	jobIDs := it.cfg.jobIDs()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		jobs, err := showJobs(ctx, conn)
		if err != nil {
			return fmt.Errorf("SHOW JOBS: %w", err)
		}
		done := 0
		var states []string
		for _, id := range jobIDs {
			j, ok := jobs[id]
			if !ok {
				return fmt.Errorf("SHOW JOBS has no %s: %v", id, jobs)
			}
			states = append(states, id+"="+j["state"])
			switch j["state"] {
			case "FINISHED":
				done++
			case "FAILED":
				return fmt.Errorf("%s FAILED: %s", id, j["error"])
			}
			if j["late_rows"] != "" && j["late_rows"] != "0" || j["bad_values"] != "" && j["bad_values"] != "0" {
				return fmt.Errorf("%s: late_rows=%s bad_values=%s", id, j["late_rows"], j["bad_values"])
			}
		}
		if done == len(jobIDs) {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("jobs not FINISHED after 2 minutes: %s", strings.Join(states, " "))
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Read the Parquet output back through the engine too: a parquet stream over the sink's directory.
	var n, sumN string
	if _, err := conn.Exec(ctx, `CREATE STREAM agg_back (k INT, window_start TIMESTAMP(3), window_end TIMESTAMP(3), n BIGINT,
  sum_id BIGINT, min_id BIGINT, max_id BIGINT, sum_v BIGINT, min_v BIGINT, max_v BIGINT)
  WITH (connector = 'parquet', path = 'out/agg')`); err != nil {
		return fmt.Errorf("CREATE STREAM agg_back: %w", err)
	}
	if err := conn.QueryRow(ctx, "SELECT COUNT(*), SUM(n) FROM agg_back").Scan(&n, &sumN); err != nil {
		return fmt.Errorf("SELECT FROM agg_back: %w", err)
	}
	it.readBack = n + "|" + sumN
	conn.Close(context.Background())
	if err := stopServe(p); err != nil {
		return err
	}
	// Once more: a server started after the end finds every job FINISHED, re-deploys nothing, and (checked by the
	// caller) adds no output.
	p, err = startServe(it)
	if err != nil {
		return err
	}
	conn2, err := connect(ctx, p)
	if err != nil {
		return fmt.Errorf("restart after the end: %w", err)
	}
	defer conn2.Close(context.Background())
	jobs, err := showJobs(ctx, conn2)
	if err != nil {
		return fmt.Errorf("restart after the end: SHOW JOBS: %w", err)
	}
	for _, id := range it.cfg.jobIDs() {
		if st := jobs[id]["state"]; st != "FINISHED" {
			return fmt.Errorf("restart after the end: %s is %s, not FINISHED", id, st)
		}
	}
	time.Sleep(3 * it.cfg.Interval)
	conn2.Close(context.Background())
	return stopServe(p)
}

// stopServe stops a server gracefully (SIGTERM) and expects it to exit 0.
func stopServe(p *proc) error {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	if err := p.waitExit(time.Minute); err != nil {
		return fmt.Errorf("after SIGTERM: %w\n%s", err, tail(p.log, 30))
	}
	return nil
}

// --- clinksql exec --wait ---

type execDriver struct{}

func (execDriver) name() string { return "exec" }

func (execDriver) first(ctx context.Context, it *iteration) (*proc, error) {
	script := filepath.Join(it.dir, "setup.sql")
	if err := os.WriteFile(script, []byte(strings.Join(it.setup(), ";\n")+";\n"), 0o644); err != nil {
		return nil, err
	}
	p, err := startProc(it.logPath(), func(p *proc, line string) {
		// Each INSERT's job id comes as a notice on stderr.
		if strings.HasPrefix(line, "NOTICE:  started job job-") {
			p.mu.Lock()
			p.jobs++
			n := p.jobs
			p.mu.Unlock()
			if n == len(it.cfg.jobIDs()) {
				p.markReady()
			}
		}
	}, "exec", "--data-dir", it.data, "--wait", "--format", "csv", "-f", script)
	if err != nil {
		return nil, err
	}
	it.procs = append(it.procs, p)
	return p, p.waitReady(60 * time.Second)
}

func (execDriver) restart(ctx context.Context, it *iteration) (*proc, error) {
	p, err := startProc(it.logPath(), nil, "exec", "--data-dir", it.data, "--wait", "--format", "csv", "-c", "SHOW JOBS")
	if err == nil {
		it.procs = append(it.procs, p)
	}
	return p, err
}

func (execDriver) finish(ctx context.Context, it *iteration, p *proc) error {
	if err := p.waitExit(2 * time.Minute); err != nil {
		return fmt.Errorf("last run: %w\n%s", err, tail(p.log, 30))
	}
	return nil
}

// runReference runs the pipeline without a throttle and without failures in a fresh data directory, with
// `clinksql exec --wait`.
func runReference(it *iteration, dir string) error {
	script := filepath.Join(it.dir, "reference.sql")
	if err := os.WriteFile(script, []byte(strings.Join(it.cfg.setup(false, it.kafkaRef), ";\n")+";\n"), 0o644); err != nil {
		return err
	}
	p, err := startProc(filepath.Join(it.logs, "reference.log"), nil, "exec", "--data-dir", dir, "--wait", "--format", "csv", "-f", script)
	if err != nil {
		return err
	}
	if err := p.waitExit(2 * time.Minute); err != nil {
		return fmt.Errorf("reference run: %w\n%s", err, tail(p.log, 30))
	}
	return nil
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
