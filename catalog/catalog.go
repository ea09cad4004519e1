package catalog

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/clinksql/clinksql/sqlerr"
	"github.com/clinksql/clinksql/state"
)

// Kind is what a catalog object is.
type Kind string

const (
	Stream           Kind = "STREAM"
	Sink             Kind = "SINK"
	View             Kind = "VIEW"
	MaterializedView Kind = "MATERIALIZED VIEW"
)

// Column is a named, typed column of a stream, sink or view.
type Column struct {
	Name string `json:"name"`
	Type Type   `json:"type"`
	// MetadataKey is set for a metadata column (METADATA [FROM 'key']): the connector's record attribute it
	// carries (a Kafka record's timestamp, partition, offset), the column's name when FROM is not given.
	MetadataKey string `json:"metadata_key,omitempty"`
	// Virtual marks a read-only metadata column (METADATA ... VIRTUAL).
	Virtual bool `json:"virtual,omitempty"`
	// Computed is a computed column's expression (Flink's `name AS expr`), as SQL over the stream's other columns:
	// the connector does not produce it, a projection after the source does.
	Computed string `json:"computed,omitempty"`
}

// Definition is the column's declaration after its type as SQL (`METADATA FROM 'timestamp' VIRTUAL`), "" for a
// column of the data.
func (c Column) Definition() string {
	if c.Computed != "" {
		return "AS " + c.Computed
	}
	if c.MetadataKey == "" {
		return ""
	}
	d := "METADATA FROM '" + strings.ReplaceAll(c.MetadataKey, "'", "''") + "'"
	if c.Virtual {
		d += " VIRTUAL"
	}
	return d
}

// Watermark is a stream's `WATERMARK FOR Column AS Expr`; Expr is canonical SQL text.
type Watermark struct {
	Column string `json:"column"`
	Expr   string `json:"expr"`
}

// Object is a stream, sink, view or materialized view.
type Object struct {
	Kind    Kind     `json:"kind"`
	Name    string   `json:"name"`
	Columns []Column `json:"columns"`
	// Watermark is a stream's event-time declaration, nil when it has none.
	Watermark *Watermark `json:"watermark,omitempty"`
	// PrimaryKey names a stream's or sink's PRIMARY KEY columns (upsert-kafka's message key; a table's key, see
	// IsTable), nil when it has none.
	PrimaryKey []string `json:"primary_key,omitempty"`
	// PartitionKeys name a sink's PARTITIONED BY columns, in order: the Hive-style directories (col=value/...) its
	// rows are written into. nil when it has none.
	PartitionKeys []string `json:"partition_keys,omitempty"`
	// Options are the WITH options, keys as written; an internal stream (no connector) has none.
	Options map[string]string `json:"options,omitempty"`
	// Query is a view's canonical query text, re-parsed where the view is used.
	Query string `json:"query,omitempty"`
	// Reads names the objects a view reads.
	Reads []string `json:"reads,omitempty"`
	// Functions names the user-defined functions a view's query calls (function.go), directly or through
	// another function or view.
	Functions []string `json:"functions,omitempty"`
	// Job is the id of the job that maintains a materialized view.
	Job string `json:"job,omitempty"`
	// Storage names the directory of an internal stream's or materialized view's log (under streams/ or views/):
	// <name>-<n>, n from a counter that never goes back, so a dropped object's leftover log is never read as a
	// new object's of the same name.
	Storage string    `json:"storage,omitempty"`
	Created time.Time `json:"created"`
}

// Connector returns the object's connector option, "" for an internal stream.
func (o *Object) Connector() string { return o.Options["connector"] }

// IsTable reports whether o is a table: a stream without a connector that has a primary key. Its log holds a
// changelog (INSERT upserts by the key, UPDATE and DELETE retract), not appended rows.
func (o *Object) IsTable() bool {
	return o.Kind == Stream && o.Connector() == "" && len(o.PrimaryKey) > 0
}

// JobSpec is a continuous job: the statement that started it and the session settings it runs with.
type JobSpec struct {
	ID string `json:"id"`
	// Statement is the canonical text of the INSERT ... SELECT or CREATE MATERIALIZED VIEW that started the job.
	Statement string `json:"statement"`
	// Target is the stream, sink or materialized view the job writes; Targets lists every object a statement set
	// writes (Target is its first).
	Target  string   `json:"target"`
	Targets []string `json:"targets,omitempty"`
	// Reads names the objects the job reads (after view expansion: streams and materialized views).
	Reads []string `json:"reads"`
	// Views names the views the job's statement expanded: its re-deployment plans the statement again and needs
	// them, so they cannot be dropped while it runs.
	Views []string `json:"views,omitempty"`
	// Functions names the user-defined functions the job's plan inlined or calls: its re-deployment plans the
	// statement again and needs them.
	Functions []string `json:"functions,omitempty"`
	// Settings are the session settings (checkpoint.interval, checkpoint.mode, parallelism, errors.mode) in force
	// when the job started.
	Settings map[string]string `json:"settings"`
	// Stopped is set when the job finished (a bounded job committed its last rows) or was dropped; a stopped job
	// is not re-deployed. Dropped tells the two apart.
	Stopped bool `json:"stopped,omitempty"`
	Dropped bool `json:"dropped,omitempty"`
	// Failed is set when the job exhausted its restart budget or hit an error no restart cures: the operator and
	// the error, as SHOW JOBS prints them. A failed job is not re-deployed at the next open (it would only fail
	// again, and flood the log doing so); ALTER JOB <id> RESUME clears it and restarts the job from its last
	// completed checkpoint. FailedCode is the error's SQLSTATE, for FLUSH to report.
	Failed     string `json:"failed,omitempty"`
	FailedCode string `json:"failed_code,omitempty"`
	// Checkpointed is the first checkpoint the job completed (0: none yet), recorded before any of its output was
	// published: a job that has one never starts from scratch (its checkpoints gone would mean publishing twice).
	Checkpointed uint64    `json:"checkpointed,omitempty"`
	Created      time.Time `json:"created"`
	// PlanDigest is a SHA-256 of the job's plan (its EXPLAIN) when it started. A re-deploy plans the statement
	// again and restores the operators' state from the last checkpoint; a different plan (another binary's planner
	// narrowed an operator's input, changed its keys or state layout) would read state written for other columns,
	// so the re-deploy is refused. Empty in jobs recorded before it existed: not checked.
	PlanDigest string `json:"plan_digest,omitempty"`
}

// Catalog is the set of objects and jobs of one data directory. Methods are safe for concurrent use; every change
// is durable (fsync + rename of the catalog file) before the method returns.
type Catalog struct {
	mu      sync.Mutex
	fs      state.FS
	path    string
	objects map[string]*Object
	jobs    map[string]*JobSpec
	// functions are the user-defined functions, a namespace of their own (function.go).
	functions map[string]*Function
	nextJob   int
	// nextStorage numbers storage names (Object.Storage); like nextJob it only grows.
	nextStorage int
	missing     bool
}

type file struct {
	Version     int         `json:"version"`
	Objects     []*Object   `json:"objects"`
	Jobs        []*JobSpec  `json:"jobs"`
	Functions   []*Function `json:"functions,omitempty"`
	NextJob     int         `json:"next_job"`
	NextStorage int         `json:"next_storage"`
}

// fileVersion 2: the file is framed (state.Frame: checksum and length) and objects name their storage.
const fileVersion = 2

// Open loads the catalog of dir (the data directory's catalog/ subdirectory). A missing file gives an empty
// catalog that reports Missing and is not written until Init: the caller decides whether absence is a fresh
// directory or a lost catalog. A damaged file is a *state.CorruptError naming it.
func Open(fsys state.FS, dir string) (*Catalog, error) {
	if fsys == nil {
		fsys = state.OS
	}
	if err := fsys.MkdirAll(dir); err != nil {
		return nil, err
	}
	c := &Catalog{fs: fsys, path: filepath.Join(dir, "catalog.json"), objects: map[string]*Object{},
		jobs: map[string]*JobSpec{}, functions: map[string]*Function{}, nextJob: 1, nextStorage: 1}
	data, err := state.ReadFramed(fsys, c.path)
	if errors.Is(err, fs.ErrNotExist) {
		c.missing = true
		return c, nil
	}
	if err != nil {
		return nil, err
	}
	var f file
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, state.Corrupt(c.path, err, "%v", err)
	}
	if f.Version != fileVersion {
		return nil, fmt.Errorf("catalog %s: version %d, this build reads %d", c.path, f.Version, fileVersion)
	}
	for _, o := range f.Objects {
		c.objects[o.Name] = o
	}
	for _, j := range f.Jobs {
		c.jobs[j.ID] = j
	}
	for _, fn := range f.Functions {
		c.functions[fn.Name] = fn
	}
	c.nextJob = max(f.NextJob, 1)
	c.nextStorage = max(f.NextStorage, 1)
	return c, nil
}

// Path is the catalog file.
func (c *Catalog) Path() string { return c.path }

// Missing reports that Open found no catalog file and Init has not written one yet.
func (c *Catalog) Missing() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.missing
}

// Init writes the (empty) catalog of a new data directory, so that a catalog missing later is known to be lost.
func (c *Catalog) Init() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.save(); err != nil {
		return err
	}
	c.missing = false
	return nil
}

// HasStorage reports whether an object or a name reserved earlier owns storage name s: one the catalog names,
// or <name>-<n> with n below the counter (a dropped object's leftover, or a reservation never used).
func (c *Catalog) HasStorage(s string) (named, reserved bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, o := range c.objects {
		if o.Storage == s {
			return true, true
		}
	}
	i := strings.LastIndexByte(s, '-')
	if i < 0 {
		return false, false
	}
	n, err := strconv.Atoi(s[i+1:])
	return false, err == nil && n > 0 && n < c.nextStorage
}

// NewStorage reserves a storage name for an object called name (Object.Storage); names are never reused.
func (c *Catalog) NewStorage(name string) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := fmt.Sprintf("%s-%d", name, c.nextStorage)
	c.nextStorage++
	return s, c.save()
}

func (c *Catalog) save() error {
	f := file{Version: fileVersion, NextJob: c.nextJob, NextStorage: c.nextStorage}
	for _, o := range c.objects {
		f.Objects = append(f.Objects, o)
	}
	for _, j := range c.jobs {
		f.Jobs = append(f.Jobs, j)
	}
	for _, fn := range c.functions {
		f.Functions = append(f.Functions, fn)
	}
	sort.Slice(f.Functions, func(a, b int) bool { return f.Functions[a].Name < f.Functions[b].Name })
	sort.Slice(f.Objects, func(a, b int) bool { return f.Objects[a].Name < f.Objects[b].Name })
	sort.Slice(f.Jobs, func(a, b int) bool { return jobLess(f.Jobs[a].ID, f.Jobs[b].ID) })
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	return state.WriteFramed(c.fs, c.path, data)
}

// jobLess orders job ids job-2 before job-10.
func jobLess(a, b string) bool {
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}

// Get returns the object named name.
func (c *Catalog) Get(name string) (*Object, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	o, ok := c.objects[name]
	return o, ok
}

// Objects returns the objects of the given kinds (all when none), by name.
func (c *Catalog) Objects(kinds ...Kind) []*Object {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*Object
	for _, o := range c.objects {
		if len(kinds) == 0 || slices.Contains(kinds, o.Kind) {
			out = append(out, o)
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Name < out[b].Name })
	return out
}

// Create adds o. An existing object of that name is an error (42P07) unless ifNotExists, which makes it a no-op
// reported by the false result.
func (c *Catalog) Create(o *Object, ifNotExists bool) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.objects[o.Name]; ok {
		if ifNotExists {
			return false, nil
		}
		return false, sqlerr.New(sqlerr.DuplicateTable, sqlerr.NoPos, "%s %q already exists", strings.ToLower(string(old.Kind)), o.Name)
	}
	if o.Created.IsZero() {
		o.Created = time.Now().UTC()
	}
	c.objects[o.Name] = o
	if err := c.save(); err != nil {
		delete(c.objects, o.Name)
		return false, err
	}
	return true, nil
}

// Replace swaps the object of o's name for o (CREATE OR REPLACE VIEW).
func (c *Catalog) Replace(o *Object) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.objects[o.Name]
	c.objects[o.Name] = o
	if err := c.save(); err != nil {
		if old != nil {
			c.objects[o.Name] = old
		} else {
			delete(c.objects, o.Name)
		}
		return err
	}
	return nil
}

// Update changes object name in place under the catalog's lock and saves it (e.g. a materialized view's job id).
func (c *Catalog) Update(name string, fn func(o *Object)) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	o, ok := c.objects[name]
	if !ok {
		return sqlerr.New(sqlerr.UndefinedTable, sqlerr.NoPos, "relation %q does not exist", name)
	}
	fn(o)
	return c.save()
}

// Dependents is what reads an object: views and materialized views (by name) and running jobs (by id).
type Dependents struct {
	Objects []string
	Jobs    []string
}

func (d Dependents) empty() bool { return len(d.Objects) == 0 && len(d.Jobs) == 0 }

func (d Dependents) String() string {
	var parts []string
	for _, o := range d.Objects {
		parts = append(parts, o)
	}
	for _, j := range d.Jobs {
		parts = append(parts, "job "+j)
	}
	return strings.Join(parts, ", ")
}

// dependents lists what reads or writes name, directly. Caller holds mu.
func (c *Catalog) dependents(name string) Dependents {
	var d Dependents
	for _, o := range c.objects {
		if o.Name != name && slices.Contains(o.Reads, name) {
			d.Objects = append(d.Objects, o.Name)
		}
	}
	for _, j := range c.jobs {
		if j.Stopped {
			continue
		}
		if o := c.objects[name]; o != nil && o.Kind == MaterializedView && o.Job == j.ID {
			continue // the view's own job goes with the view
		}
		if slices.Contains(j.Reads, name) || slices.Contains(j.Views, name) || j.Writes(name) {
			d.Jobs = append(d.Jobs, j.ID)
		}
	}
	sort.Strings(d.Objects)
	sort.Slice(d.Jobs, func(a, b int) bool { return jobLess(d.Jobs[a], d.Jobs[b]) })
	return d
}

// DropPlan is what a DROP removes: the objects (dependents first, the named object last), the jobs to stop, and
// for DROP FUNCTION the function.
type DropPlan struct {
	Objects   []*Object
	Jobs      []string
	Functions []*Function
}

// PlanDrop works out what dropping name takes. Without cascade, anything that still reads name is an error
// (2BP01) that names the readers; with cascade, the readers come too, recursively. kind, when not "", must match
// the object's kind (DROP SINK of a stream is 42809-like, reported as 42P01 with a hint, as Postgres does for
// DROP VIEW of a table).
func (c *Catalog) PlanDrop(name string, kind Kind, cascade bool) (DropPlan, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	o, ok := c.objects[name]
	if !ok {
		return DropPlan{}, sqlerr.New(sqlerr.UndefinedTable, sqlerr.NoPos, "%s %q does not exist", strings.ToLower(string(kind)), name)
	}
	if kind != "" && o.Kind != kind {
		e := sqlerr.New(sqlerr.UndefinedTable, sqlerr.NoPos, "%q is not a %s", name, strings.ToLower(string(kind)))
		e.Hint = fmt.Sprintf("Use DROP %s to remove a %s.", o.Kind, strings.ToLower(string(o.Kind)))
		return DropPlan{}, e
	}
	var plan DropPlan
	if err := c.planDrop(name, cascade, &plan, map[string]bool{}, map[string]bool{}); err != nil {
		return DropPlan{}, err
	}
	return plan, nil
}

// planDrop adds object n and, with cascade, what reads it (recursively) to plan. Caller holds mu.
func (c *Catalog) planDrop(n string, cascade bool, plan *DropPlan, seenObj, seenJob map[string]bool) error {
	if seenObj[n] {
		return nil
	}
	seenObj[n] = true
	d := c.dependents(n)
	if !d.empty() && !cascade {
		e := sqlerr.New(sqlerr.DependentObjects, sqlerr.NoPos, "cannot drop %s %q because other objects depend on it: %s",
			strings.ToLower(string(c.objects[n].Kind)), n, d)
		e.Hint = "Use DROP ... CASCADE to drop the dependent objects too."
		return e
	}
	for _, j := range d.Jobs {
		if !seenJob[j] {
			seenJob[j] = true
			plan.Jobs = append(plan.Jobs, j)
		}
	}
	for _, dep := range d.Objects {
		if err := c.planDrop(dep, cascade, plan, seenObj, seenJob); err != nil {
			return err
		}
	}
	obj := c.objects[n]
	if obj.Kind == MaterializedView && obj.Job != "" && !seenJob[obj.Job] {
		seenJob[obj.Job] = true
		plan.Jobs = append(plan.Jobs, obj.Job)
	}
	plan.Objects = append(plan.Objects, obj)
	return nil
}

// Remove deletes the objects and marks the jobs of a plan stopped, in one durable write.
func (c *Catalog) Remove(plan DropPlan) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, o := range plan.Objects {
		delete(c.objects, o.Name)
	}
	for _, f := range plan.Functions {
		delete(c.functions, f.Name)
	}
	for _, id := range plan.Jobs {
		if j := c.jobs[id]; j != nil {
			j.Stopped, j.Dropped = true, true
		}
	}
	return c.save()
}

// NewJobID reserves the next job id ("job-1", "job-2", ...); ids are never reused.
func (c *Catalog) NewJobID() (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	id := fmt.Sprintf("job-%d", c.nextJob)
	c.nextJob++
	return id, c.save()
}

// AddJob records a job that is about to start.
func (c *Catalog) AddJob(j *JobSpec) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if j.Created.IsZero() {
		j.Created = time.Now().UTC()
	}
	c.jobs[j.ID] = j
	if err := c.save(); err != nil {
		delete(c.jobs, j.ID)
		return err
	}
	return nil
}

// FinishJob records that a job finished: it is not re-deployed at the next open.
func (c *Catalog) FinishJob(id string) error { return c.stopJob(id, false) }

// DropJob records that a job was dropped: it is not re-deployed at the next open.
func (c *Catalog) DropJob(id string) error { return c.stopJob(id, true) }

func (c *Catalog) stopJob(id string, dropped bool) error {
	return c.changeJob(id, func(j *JobSpec) bool {
		j.Stopped = true
		j.Dropped = j.Dropped || dropped
		return true
	})
}

// FailJob records that a job failed for good (see JobSpec.Failed): it is not re-deployed at the next open.
func (c *Catalog) FailJob(id, reason, code string) error {
	return c.changeJob(id, func(j *JobSpec) bool {
		j.Failed, j.FailedCode = reason, code
		return true
	})
}

// ResumeJob clears a job's failure (ALTER JOB <id> RESUME): it is deployed again, now and at every open.
func (c *Catalog) ResumeJob(id string) error {
	return c.changeJob(id, func(j *JobSpec) bool {
		j.Failed, j.FailedCode = "", ""
		return true
	})
}

// RecordCheckpoint records, once, that job id completed checkpoint chk (JobSpec.Checkpointed).
func (c *Catalog) RecordCheckpoint(id string, chk uint64) error {
	return c.changeJob(id, func(j *JobSpec) bool {
		if j.Checkpointed != 0 {
			return false
		}
		j.Checkpointed = chk
		return true
	})
}

// changeJob applies change to job id and saves the catalog, unless change reports that nothing changed; a failed
// save puts the job back as it was, so memory never says what the file does not.
func (c *Catalog) changeJob(id string, change func(j *JobSpec) bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	j, ok := c.jobs[id]
	if !ok {
		return sqlerr.New(sqlerr.UndefinedObject, sqlerr.NoPos, "job %q does not exist", id)
	}
	before := *j
	if !change(j) {
		return nil
	}
	if err := c.save(); err != nil {
		*j = before
		return err
	}
	return nil
}

// Job returns (a copy of) the job with id.
func (c *Catalog) Job(id string) (*JobSpec, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	j, ok := c.jobs[id]
	if !ok {
		return nil, false
	}
	cp := *j // a copy: the catalog changes its own under its lock (FailJob, stopJob)
	return &cp, true
}

// Jobs returns (copies of) every job, stopped ones included, in id order.
func (c *Catalog) Jobs() []*JobSpec {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*JobSpec
	for _, j := range c.jobs {
		cp := *j // a copy, as Job returns
		out = append(out, &cp)
	}
	sort.Slice(out, func(a, b int) bool { return jobLess(out[a].ID, out[b].ID) })
	return out
}

// Writes reports whether the job writes the named object.
func (j *JobSpec) Writes(name string) bool {
	return j.Target == name || slices.Contains(j.Targets, name)
}
