package engine

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sys/unix"

	"github.com/clinksql/clinksql/catalog"
	"github.com/clinksql/clinksql/checkpoint"
	"github.com/clinksql/clinksql/connectors/filelist"
	"github.com/clinksql/clinksql/connectors/streamlog"
	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/sql/parser"
	"github.com/clinksql/clinksql/sql/planner"
	"github.com/clinksql/clinksql/sqlerr"
	"github.com/clinksql/clinksql/state"
)

// Config opens an engine.
type Config struct {
	// DataDir holds the catalog, the jobs' checkpoints and state, and the internal streams.
	DataDir string
	// AllowPaths are directories outside DataDir that connector paths may name.
	AllowPaths []string
	Logger     *slog.Logger
	// Alloc is the Arrow allocator of every job; nil: memory.DefaultAllocator.
	Alloc memory.Allocator
	// Registry receives the engine's and its jobs' Prometheus collectors; nil: a registry of the engine's own
	// (Engine.Registry), so that two engines in one process never mix their figures.
	Registry *prometheus.Registry
	// ProgressInterval is how long FLUSH and WaitBounded wait before they report a job's progress, and how often
	// after that; 0: DefaultProgressInterval.
	ProgressInterval time.Duration
	// LatencyMarkerInterval, when positive, has the sources of every job this engine starts emit latency markers
	// this often (exec.JobConfig.LatencyMarkerInterval); the sinks' clinksql_sink_latency_seconds histograms then
	// show the time from a row leaving its source to its result reaching the sink. 0: off.
	LatencyMarkerInterval time.Duration
	// Testing allows the settings only tests may use (SET testing.processing_time, which stops the wall clock of
	// every processing-time window); `clinksql serve --testing` sets it. Without it the
	// setting is refused, and a data directory left on a test clock does not open.
	Testing bool
}

// Engine runs statements against one data directory. It owns the catalog, the internal streams' logs and the
// running jobs. One engine process owns a data directory at a time (a lock file says so).
type Engine struct {
	cfg Config
	dir string
	// realDir is dir with its symbolic links resolved, what connector paths are confined to.
	realDir string
	cat     *catalog.Catalog
	lock    *os.File
	log     *slog.Logger
	// selectLog is the log of ad-hoc SELECTs' dataflows: errors only (errorsOnly).
	selectLog *slog.Logger

	ctx    context.Context
	cancel context.CancelFunc

	// deployMu makes a new job's single-reader check and its start one step, and keeps new jobs out while a DROP
	// releases what the dropped jobs' sources held (release.go). Never held while waiting on a job.
	deployMu sync.Mutex
	// sweep is the open's retry of failed releases (releaseDropped), waited for by Close.
	sweep sync.WaitGroup

	mu      sync.Mutex
	logs    map[string]*streamlog.Log
	jobs    map[string]*runningJob
	selects int
	closed  bool
	// ready is set once Open re-deployed the catalog's jobs (Ready).
	ready bool
	// jobsMetric is clinksql_jobs, registered from Open to Close.
	jobsMetric *jobsCollector
	// subscriptions are the running SUBSCRIBEs (subscribe.go).
	subscriptions subscriptions
	// tables are the current rows of the tables read so far (table.go).
	tables tables
	// clock is every job's processing-time clock: the wall clock unless a test set it (testclock.go).
	clock       engineClock
	testClockMu sync.Mutex
}

// runningJob is a deployed continuous job.
type runningJob struct {
	spec *catalog.JobSpec
	job  *exec.Job
	plan *planner.Physical
	// settled is closed once the job ended and, if it finished, the catalog says so (so that neither Close nor
	// WaitBounded returns while a finished job could still be re-deployed at the next open).
	settled chan struct{}
}

// Open opens (creating) the data directory and re-deploys every job that was running, each restored from its
// last completed checkpoint.
func Open(cfg Config) (*Engine, error) {
	if cfg.DataDir == "" {
		return nil, errors.New("engine: no data directory")
	}
	dir, err := filepath.Abs(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	if cfg.Registry == nil {
		cfg.Registry = prometheus.NewRegistry()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	lock, err := os.OpenFile(filepath.Join(dir, "LOCK"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		lock.Close()
		return nil, fmt.Errorf("data directory %s is in use by another clinksql process", dir)
	}
	realDir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		lock.Close()
		return nil, err
	}
	cat, err := catalog.Open(state.OS, filepath.Join(dir, "catalog"))
	if err == nil {
		err = checkLayout(dir, cat)
	}
	if err != nil {
		lock.Close()
		return nil, err
	}
	cleanFunctionFiles(dir, cat)
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Alloc == nil {
		cfg.Alloc = memory.DefaultAllocator
	}
	ctx, cancel := context.WithCancel(context.Background())
	e := &Engine{cfg: cfg, dir: dir, realDir: realDir, cat: cat, lock: lock, log: cfg.Logger, ctx: ctx, cancel: cancel,
		selectLog: slog.New(errorsOnly{cfg.Logger.Handler()}),
		logs:      map[string]*streamlog.Log{}, jobs: map[string]*runningJob{}}
	_ = os.RemoveAll(filepath.Join(dir, "tmp")) // ad-hoc SELECTs of an earlier process
	if err := e.clock.open(dir, cfg.Testing); err != nil {
		cancel()
		lock.Close()
		return nil, err
	}
	e.jobsMetric = newJobsCollector(e)
	if err := cfg.Registry.Register(e.jobsMetric); err != nil {
		e.log.Warn("engine metrics not registered (a registry shared with another engine?)", "err", err)
	}
	for _, spec := range cat.Jobs() {
		if spec.Stopped {
			continue
		}
		if spec.Failed != "" { // it would only fail again, at every open: ALTER JOB ... RESUME restarts it
			e.log.Warn("job stays FAILED until ALTER JOB "+spec.ID+" RESUME", "job", spec.ID, "failure", spec.Failed)
			continue
		}
		if err := e.redeploy(spec); err != nil {
			// It would fail again at every open: FAILED until ALTER JOB ... RESUME, like a job that failed running.
			e.log.Warn("job failed: cannot re-deploy it", "job", spec.ID, "err", err)
			if ferr := cat.FailJob(spec.ID, "deploy: "+err.Error(), sqlerr.As(err).Code); ferr != nil {
				e.log.Error("recording a failed job", "job", spec.ID, "err", ferr)
			}
		}
	}
	e.mu.Lock()
	e.ready = true
	e.mu.Unlock()
	e.releaseDropped()
	return e, nil
}

// Catalog returns the engine's catalog (planner.Env).
func (e *Engine) Catalog() *catalog.Catalog { return e.cat }

// Registry is where the engine's and its jobs' metrics are registered (what /metrics serves).
func (e *Engine) Registry() *prometheus.Registry { return e.cfg.Registry }

// Log returns the log of an internal stream or materialized view (planner.Env); createLog made it.
func (e *Engine) Log(obj *catalog.Object) (*streamlog.Log, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if l, ok := e.logs[obj.Storage]; ok {
		return l, nil
	}
	schema, err := schemaOfObject(obj)
	if err != nil {
		return nil, err
	}
	if obj.Storage == "" { // an object the catalog does not hold: EXPLAIN CREATE MATERIALIZED VIEW's
		return streamlog.Unstored(schema), nil
	}
	l, err := streamlog.Open(state.OS, e.storageDir(obj), schema)
	if err != nil {
		return nil, err
	}
	e.logs[obj.Storage] = l
	return l, nil
}

// createLog reserves a storage name for obj (an internal stream or a materialized view) and creates its empty
// log, before the catalog names obj: a log the catalog names always exists.
func (e *Engine) createLog(obj *catalog.Object) error {
	st, err := e.cat.NewStorage(obj.Name)
	if err != nil {
		return err
	}
	obj.Storage = st
	schema, err := schemaOfObject(obj)
	if err != nil {
		return err
	}
	l, err := streamlog.Create(state.OS, e.storageDir(obj), schema)
	if err != nil {
		return err
	}
	e.mu.Lock()
	e.logs[obj.Storage] = l
	e.mu.Unlock()
	return nil
}

// storageDir is where obj's log lives: streams/<storage> or views/<storage>.
func (e *Engine) storageDir(obj *catalog.Object) string { return logDir(e.dir, obj) }

// logDir is where obj's log lives under the data directory dir.
func logDir(dir string, obj *catalog.Object) string {
	sub := "streams"
	if obj.Kind == catalog.MaterializedView {
		sub = "views"
	}
	return filepath.Join(dir, sub, obj.Storage)
}

// checkLayout refuses a data directory whose contents contradict its catalog, before anything reads or writes
// them: a missing catalog beside jobs or logs (an empty catalog would reuse their ids and storage names), a job
// directory or log the catalog does not name, or a log the catalog names that is gone. A log of a dropped object
// (DROP deletes it after the catalog forgot it, so a crash can leave it) is deleted. A new directory gets its
// empty catalog written, so that a catalog missing later is known to be lost.
func checkLayout(dir string, cat *catalog.Catalog) error {
	var found, unknown []string
	jobs, _ := os.ReadDir(filepath.Join(dir, "jobs"))
	for _, j := range jobs {
		rel := filepath.Join("jobs", j.Name())
		found = append(found, rel)
		if _, ok := cat.Job(j.Name()); !ok {
			unknown = append(unknown, rel)
		}
	}
	for _, sub := range []string{"streams", "views"} {
		logs, _ := os.ReadDir(filepath.Join(dir, sub))
		for _, l := range logs {
			rel := filepath.Join(sub, l.Name())
			found = append(found, rel)
			named, reserved := cat.HasStorage(l.Name())
			switch {
			case named:
			case reserved:
				_ = os.RemoveAll(filepath.Join(dir, rel))
			default:
				unknown = append(unknown, rel)
			}
		}
	}
	if cat.Missing() {
		if len(found) > 0 {
			return state.Corrupt(cat.Path(), nil, "missing, but the data directory %s holds %s: an empty catalog "+
				"would reuse their job ids and storage; restore the catalog from a backup, or move them away",
				dir, strings.Join(found, ", "))
		}
		return cat.Init()
	}
	if len(unknown) > 0 {
		return state.Corrupt(cat.Path(), nil, "does not name %s of the data directory %s (a catalog from an "+
			"older backup, or files from another data directory)", strings.Join(unknown, ", "), dir)
	}
	for _, o := range cat.Objects(catalog.Stream, catalog.MaterializedView) {
		if o.Storage == "" {
			continue // a stream with a connector
		}
		p := logDir(dir, o)
		if _, err := os.Stat(p); err != nil {
			return state.Corrupt(p, err, "the storage of %s %s is missing", strings.ToLower(string(o.Kind)), o.Name)
		}
	}
	return nil
}

// Path resolves a connector path (planner.Env): relative paths are under the data directory. The path, or for a
// glob the directory it is listed from, must lead into the data directory (but none of the engine's own
// directories) or into an allowed directory once every symbolic link is resolved; the files a glob or directory
// names are each checked by Confine when they are listed and again when they are opened.
func (e *Engine) Path(p string) (string, error) {
	if p == "" {
		return "", sqlerr.New(sqlerr.InvalidParameter, sqlerr.NoPos, "empty path")
	}
	abs := p
	if !filepath.IsAbs(p) {
		abs = filepath.Join(e.dir, p)
	}
	abs = filepath.Clean(abs)
	if base, ok := filelist.GlobBase(abs); ok {
		return abs, e.confine(p, base, true)
	}
	return abs, e.confine(p, abs, false)
}

// Confine checks one file or directory a connector reads or creates (planner.Env; the connectors' PathGuard).
func (e *Engine) Confine(p string) error { return e.confine(p, p, false) }

// internalDirs are the entries of the data directory that belong to the engine; no connector may name them.
var internalDirs = []string{"catalog", "jobs", "streams", "views", "tmp", "LOCK", functionsDir}

// confine refuses (42501) abs unless, its symbolic links resolved, it is inside the data directory but none of
// the engine's own entries, or inside an allowed directory. The data directory itself is allowed only as the
// directory a glob is listed from (globBase). p is the path as the user gave it, for the message.
func (e *Engine) confine(p, abs string, globBase bool) error {
	real, err := resolvePath(abs)
	if err == nil {
		if under(real, e.realDir) {
			internal := real == e.realDir && !globBase
			for _, d := range internalDirs {
				internal = internal || under(real, filepath.Join(e.realDir, d))
			}
			if !internal {
				return nil
			}
		} else {
			for _, root := range e.cfg.AllowPaths {
				if r, err := filepath.Abs(root); err == nil {
					if r, err = resolvePath(r); err == nil && under(real, r) {
						return nil
					}
				}
			}
		}
	}
	e2 := sqlerr.New(sqlerr.InsufficientPriv, sqlerr.NoPos,
		"path %q is outside the data directory and the allowed paths, or is one of the engine's own directories", p)
	switch {
	case err != nil:
		e2.Msg = fmt.Sprintf("path %q cannot be resolved: %v", p, err)
	case real != filepath.Clean(abs):
		e2.Detail = fmt.Sprintf("With its symbolic links resolved, it is %s.", real)
	}
	e2.Hint = "Use a path relative to the data directory, or start the server with --allow-path."
	return e2
}

// resolvePath resolves the symbolic links of the longest prefix of abs that exists; the rest, which does not
// exist yet (a sink's directory before it is created), is kept as it is. A dangling or looping link is an error:
// creating through it would create its target, wherever that is.
func resolvePath(abs string) (string, error) {
	p, rest := filepath.Clean(abs), ""
	for {
		real, err := filepath.EvalSymlinks(p)
		if err == nil {
			return filepath.Join(real, rest), nil
		}
		st, lerr := os.Lstat(p)
		switch {
		case lerr == nil && st.Mode()&os.ModeSymlink != 0:
			return "", fmt.Errorf("%s is a symbolic link that leads nowhere", p)
		case lerr == nil:
			return "", err
		}
		parent := filepath.Dir(p)
		if parent == p {
			return filepath.Join(p, rest), nil
		}
		rest, p = filepath.Join(filepath.Base(p), rest), parent
	}
}

func under(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, string(filepath.Separator))+string(filepath.Separator))
}

// Close stops every job gracefully (a final checkpoint, so the next open resumes exactly) and releases the data
// directory.
func (e *Engine) Close(ctx context.Context) error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	e.mu.Unlock()
	e.closeSubscriptions() // they end with 57P01; their temporary jobs stop
	e.mu.Lock()
	jobs := make([]*runningJob, 0, len(e.jobs))
	for _, j := range e.jobs {
		jobs = append(jobs, j)
	}
	e.mu.Unlock()
	e.log.Info("engine closing: stopping the jobs with a final checkpoint", "jobs", len(jobs))
	var errs []error
	for _, j := range jobs {
		select {
		case <-j.job.Done():
			continue
		default:
		}
		if err := j.job.Stop(ctx); err != nil && !errors.Is(err, context.Canceled) {
			errs = append(errs, fmt.Errorf("stop %s: %w", j.spec.ID, err))
		}
	}
	e.cancel()
	e.sweep.Wait()
	for _, j := range jobs {
		<-j.settled
		e.unregisterJob(j.job)
	}
	e.cfg.Registry.Unregister(e.jobsMetric)
	e.closeTables()
	e.lock.Close()
	return errors.Join(errs...)
}

// WaitBounded waits until every job whose sources all end has finished (clinksql exec --wait).
func (e *Engine) WaitBounded(ctx context.Context, notify func(string)) error {
	e.mu.Lock()
	var waits []*runningJob
	for _, j := range e.jobs {
		if j.plan.Bounded {
			waits = append(waits, j)
		}
	}
	e.mu.Unlock()
	for _, j := range waits {
		if err := e.waitReporting(j, notify, func() error { return j.job.Wait(ctx) }); err != nil {
			return fmt.Errorf("job %s: %w", j.spec.ID, err)
		}
		select {
		case <-j.settled:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// jobDir is where a job keeps its checkpoints and state.
func (e *Engine) jobDir(id string) string { return filepath.Join(e.dir, "jobs", id) }

// startJob deploys a planned job.
func (e *Engine) startJob(spec *catalog.JobSpec, p *planner.Physical) error {
	g, err := p.Graph()
	if err != nil {
		return err
	}
	s, err := settingsFrom(spec.Settings)
	if err != nil {
		return err
	}
	cfg := exec.JobConfig{
		Name: spec.ID, Dir: e.jobDir(spec.ID), Alloc: e.cfg.Alloc,
		Logger:             e.log, // the job adds its "job" attribute itself
		CheckpointInterval: s.interval,
		CheckpointMode:     s.mode,
		HistorySize:        s.history,
		Committed:          func(chk uint64) error { return e.cat.RecordCheckpoint(spec.ID, chk) },
		Checkpointed:       spec.Checkpointed,

		StateCacheBytes:       s.stateCache,
		LatencyMarkerInterval: cmp.Or(s.latency, e.cfg.LatencyMarkerInterval),
		WatermarkMaxDrift:     s.maxDrift,
		AfterCommit:           e.viewCommitted(spec), // a view's subscribers' frontier
		Clock:                 &e.clock,
	}
	if s.adaptive {
		cfg.Adaptive = &checkpoint.AdaptiveConfig{}
	}
	job, err := exec.NewJob(g, cfg)
	if err != nil {
		return err
	}
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return sqlerr.New(sqlerr.InvalidJobState, sqlerr.NoPos, "the engine is shutting down")
	}
	rj := &runningJob{spec: spec, job: job, plan: p, settled: make(chan struct{})}
	e.jobs[spec.ID] = rj
	e.mu.Unlock()
	e.registerJob(job, spec.ID)
	job.Start(e.ctx)
	go func() {
		defer close(rj.settled)
		<-job.Done()
		switch st := job.Status(); st.State {
		case exec.JobFinished:
			// A bounded job committed its last rows; it is not re-deployed.
			if err := e.cat.FinishJob(spec.ID); err != nil {
				e.log.Error("marking a finished job", "job", spec.ID, "err", err)
			}
			e.unregisterJob(job)
		case exec.JobFailed:
			e.recordFailure(spec.ID, st)
		}
	}()
	return nil
}

// redeploy plans a job again from its statement and starts it; it restores from its last completed checkpoint.
func (e *Engine) redeploy(spec *catalog.JobSpec) error {
	p, err := PlanJob(e, spec)
	if err != nil {
		return err
	}
	if spec.PlanDigest != "" && spec.Checkpointed > 0 && planDigest(p) != spec.PlanDigest {
		return sqlerr.New(sqlerr.InvalidJobState, sqlerr.NoPos,
			"job %s: its statement plans differently than when the job started (another version of clinksql?), so "+
				"its checkpointed state does not fit the new plan's operators; DROP JOB %s and start it again", spec.ID, spec.ID)
	}
	return e.startJob(spec, p)
}

// planDigest is JobSpec.PlanDigest of a plan: a SHA-256 of its EXPLAIN, which names every operator with its
// inputs, keys, columns and state.
func planDigest(p *planner.Physical) string {
	sum := sha256.Sum256([]byte(p.Explain()))
	return hex.EncodeToString(sum[:])
}

// flush checkpoints every running job, upstream jobs first, and waits until each committed. A FAILED job (failed
// before, or while FLUSH waits for it) fails FLUSH with its id and error: what was inserted cannot reach its target.
func (e *Engine) flush(ctx context.Context, notify func(string)) error {
	e.mu.Lock()
	var jobs []*runningJob
	for _, j := range e.jobs {
		if err := j.failed(); err != nil {
			e.mu.Unlock()
			return err
		}
		select {
		case <-j.job.Done():
			continue
		default:
		}
		jobs = append(jobs, j)
	}
	e.mu.Unlock()
	for _, spec := range e.cat.Jobs() { // failed in an earlier process: not deployed
		if spec.Failed != "" && !spec.Stopped {
			return failedJobError(spec.ID, spec.Failed, spec.FailedCode)
		}
	}
	// Upstream first: a job whose target another job reads goes before the reader. Repeated passes settle chains.
	order := topoOrder(jobs)
	for _, j := range order {
		if j.plan.Bounded && len(j.plan.Reads) == 0 {
			// Its rows came with its statement (INSERT INTO a sink VALUES ...): inserted before FLUSH, so FLUSH
			// waits for the job to finish with them. A checkpoint now could pass the source before its rows.
			err := e.waitReporting(j, notify, func() error {
				select {
				case <-j.job.Done():
					return nil
				case <-ctx.Done():
					return sqlerr.New(sqlerr.QueryCanceled, sqlerr.NoPos, "canceling statement due to user request")
				}
			})
			if err != nil {
				return err
			}
			if err := j.failed(); err != nil {
				return err
			}
			continue
		}
		var running bool
		err := e.waitReporting(j, notify, func() (err error) {
			running, err = catchUp(ctx, j)
			return err
		})
		if err != nil {
			return err
		}
		if !running {
			if err := j.failed(); err != nil {
				return err
			}
			continue // finished meanwhile: nothing to flush
		}
		if err := e.waitReporting(j, notify, func() error { _, err := j.job.Flush(ctx); return err }); err != nil {
			if ctx.Err() != nil {
				return sqlerr.New(sqlerr.QueryCanceled, sqlerr.NoPos, "canceling statement due to user request")
			}
			select {
			case <-j.job.Done():
				if err := j.failed(); err != nil {
					return err
				}
				continue // finished meanwhile: nothing to flush
			default:
			}
			return sqlerr.New(sqlerr.InvalidJobState, sqlerr.NoPos, "FLUSH: job %s: %v", j.spec.ID, err)
		}
	}
	return e.flushSubscriptions(ctx) // the temporary views of SUBSCRIBE over queries read the jobs' targets
}

// catchUp waits until job j has read everything committed to its input logs so far, so that a checkpoint
// triggered next has its barrier after those rows. It reports false when the job ended meanwhile.
func catchUp(ctx context.Context, j *runningJob) (bool, error) {
	for _, r := range j.plan.LogReads {
		end := r.Log.Next()
		for r.Progress.Load() < end {
			select {
			case <-j.job.Done():
				return false, nil
			case <-ctx.Done():
				return false, sqlerr.New(sqlerr.QueryCanceled, sqlerr.NoPos, "canceling statement due to user request")
			case <-time.After(time.Millisecond):
			}
		}
	}
	return true, nil
}

func topoOrder(jobs []*runningJob) []*runningJob {
	var out []*runningJob
	done := map[string]bool{}
	for len(out) < len(jobs) {
		progress := false
		for _, j := range jobs {
			if done[j.spec.ID] {
				continue
			}
			ready := true
			for _, o := range jobs {
				if o != j && !done[o.spec.ID] && slices.ContainsFunc(j.spec.Reads, o.spec.Writes) {
					ready = false
				}
			}
			if ready {
				done[j.spec.ID] = true
				out = append(out, j)
				progress = true
			}
		}
		if !progress { // a cycle cannot happen (a job cannot read what it writes), but never spin
			for _, j := range jobs {
				if !done[j.spec.ID] {
					done[j.spec.ID] = true
					out = append(out, j)
				}
			}
		}
	}
	return out
}

// stopJobs cancels jobs (DROP): they are not resumed.
func (e *Engine) stopJobs(ids []string) {
	for _, id := range ids {
		e.mu.Lock()
		j := e.jobs[id]
		delete(e.jobs, id)
		e.mu.Unlock()
		if j != nil {
			j.job.Cancel()
			e.unregisterJob(j.job)
			e.log.Info("job dropped", "job", id)
		}
	}
}

// dropStorage deletes what a dropped object kept on disk: an internal stream's or materialized view's log. Its
// storage name is never used again, so a crash before this leaves a leftover that the next open deletes.
func (e *Engine) dropStorage(o *catalog.Object) {
	if o.Storage == "" {
		return
	}
	e.endSubscriptions(o.Storage, fmt.Sprintf("%s %q", strings.ToLower(string(o.Kind)), o.Name))
	e.closeTable(o.Storage)
	e.mu.Lock()
	if l := e.logs[o.Storage]; l != nil {
		l.Drop()
	}
	delete(e.logs, o.Storage)
	e.mu.Unlock()
	_ = os.RemoveAll(e.storageDir(o))
}

// newSelectDir returns a scratch directory for an ad-hoc SELECT's dataflow.
func (e *Engine) newSelectDir() string {
	e.mu.Lock()
	e.selects++
	n := e.selects
	e.mu.Unlock()
	return filepath.Join(e.dir, "tmp", fmt.Sprintf("select-%d-%d", os.Getpid(), n))
}

var _ planner.Env = (*Engine)(nil)

// schemaOfObject is the Arrow schema of a catalog object's rows.
func schemaOfObject(obj *catalog.Object) (*arrow.Schema, error) {
	fields := make([]arrow.Field, len(obj.Columns))
	for i, c := range obj.Columns {
		t, err := c.Type.Arrow()
		if err != nil {
			return nil, fmt.Errorf("%s.%s: %w", obj.Name, c.Name, err)
		}
		fields[i] = arrow.Field{Name: c.Name, Type: t, Nullable: true}
	}
	return arrow.NewSchema(fields, nil), nil
}

// statementSet reads the stored text of a statement-set job: BEGIN STATEMENT SET, the INSERTs, END.
func statementSet(stmts []parser.Stmt) ([]*parser.Insert, bool) {
	if len(stmts) < 3 {
		return nil, false
	}
	if b, ok := stmts[0].(*parser.Txn); !ok || !b.StatementSet {
		return nil, false
	}
	var inserts []*parser.Insert
	for _, st := range stmts[1 : len(stmts)-1] {
		ins, ok := st.(*parser.Insert)
		if !ok {
			return nil, false
		}
		inserts = append(inserts, ins)
	}
	return inserts, true
}
