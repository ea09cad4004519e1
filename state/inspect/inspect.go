package inspect

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/clinksql/clinksql/catalog"
	"github.com/clinksql/clinksql/checkpoint"
	"github.com/clinksql/clinksql/engine"
	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/state"
)

// Options say what to read.
type Options struct {
	DataDir    string
	Job        string // "" lists the jobs
	Checkpoint uint64 // 0: the newest completed one
	Operator   string // "" every node; else only this node id's subtasks
}

// Report is what state-cat prints; its JSON field names are stable.
type Report struct {
	DataDir string       `json:"data_dir"`
	Catalog string       `json:"catalog_error,omitempty"` // why the catalog could not be read, when it could not
	Jobs    []JobSummary `json:"jobs,omitempty"`          // without a job: every job of the directory
	Job     *Job         `json:"job,omitempty"`
}

// JobSummary is one job of the data directory.
type JobSummary struct {
	ID        string   `json:"id"`
	State     string   `json:"state"` // from the catalog: running, finished, dropped, failed, or unknown
	Statement string   `json:"statement,omitempty"`
	Completed []uint64 `json:"completed_checkpoints"` // retained, oldest first
}

// Job is one job and one of its checkpoints.
type Job struct {
	JobSummary
	PlanError   string              `json:"plan_error,omitempty"` // why values are shown as hex
	HighWater   uint64              `json:"high_water"`
	Checkpoints []CheckpointListing `json:"checkpoints"`
	Checkpoint  *CheckpointSnapshot `json:"checkpoint,omitempty"`
	Receipts    []OperatorReceipts  `json:"receipts,omitempty"`
}

// CheckpointListing is one checkpoint the job directory knows of.
type CheckpointListing struct {
	ID uint64 `json:"id"`
	// Status: completed (a COMPLETED marker), abandoned (a restore fell back past it), incomplete (files and no
	// marker: in progress, or never completed).
	Status    string   `json:"status"`
	Confirmed bool     `json:"confirmed"` // a CONFIRMED marker (jobs with an in-doubt sink)
	Files     []string `json:"files"`     // under chk-<id>, relative to it
	Bytes     int64    `json:"bytes"`     // of those files
	// From the job's checkpoint history (empty when the history no longer holds it): the barrier's mode, when it
	// was triggered and how long it took to complete.
	Mode       string     `json:"mode,omitempty"`
	Trigger    *time.Time `json:"trigger,omitempty"`
	DurationMs *float64   `json:"duration_ms,omitempty"`
}

// CheckpointSnapshot is one completed checkpoint, decoded.
type CheckpointSnapshot struct {
	ID       uint64    `json:"id"`
	Marker   string    `json:"marker"`
	Subtasks []Subtask `json:"subtasks"`
}

// Subtask is one participant's snapshot.
type Subtask struct {
	Participant string `json:"participant"`
	Operator    string `json:"operator"`
	Subtask     int    `json:"subtask"`
	Label       string `json:"label,omitempty"`
	Keyed       bool   `json:"keyed"`
	File        string `json:"file"`
	Bytes       int64  `json:"bytes"`
	// KeyGroups is the range of key groups the subtask owns at the job's parallelism ([start, end)).
	KeyGroups *[2]int `json:"key_groups,omitempty"`

	Source          *SourceState     `json:"source,omitempty"`
	Counts          *Counts          `json:"counts,omitempty"`
	InputWatermarks *InputWatermarks `json:"input_watermarks,omitempty"`
	OperatorState   []OperatorEntry  `json:"operator_state,omitempty"`
	KeyedState      []KeyGroupState  `json:"keyed_state,omitempty"`
	KeyedEntries    int              `json:"keyed_entries"`
	Timers          []Timer          `json:"timers,omitempty"`
	Inflight        *Inflight        `json:"inflight,omitempty"`
	Handle          *Handle          `json:"staged_handle,omitempty"`
	Transactions    []Transaction    `json:"transactions,omitempty"`
}

// SourceState is what a source subtask recorded at the barrier.
type SourceState struct {
	Offset Bytes `json:"offset"` // the connector's encoding of its read position
	// Position is the offset decoded by its connector (exec.OffsetDecoder); empty when it has no decoder.
	Position    []exec.StateField `json:"position,omitempty"`
	DecodeError string            `json:"decode_error,omitempty"`
	Watermark   Watermark         `json:"watermark"`
}

// Bytes is an undecoded value: hex and length.
type Bytes struct {
	Hex string `json:"hex"`
	Len int    `json:"len"`
}

func bytesOf(b []byte) Bytes { return Bytes{Hex: fmt.Sprintf("%x", b), Len: len(b)} }

// Watermark is an event time in microseconds and its text ("" for none: the minimum; "end" for the maximum).
type Watermark struct {
	Micros int64  `json:"micros"`
	Text   string `json:"text"`
}

// Counts are a subtask's totals up to the checkpoint.
type Counts struct {
	RowsIn    int64 `json:"rows_in"` // taken from the inputs (0 for a source, and in checkpoints of older builds)
	Rows      int64 `json:"rows"`    // emitted (a source) or written (a sink)
	LateRows  int64 `json:"late_rows"`
	BadValues int64 `json:"bad_values"`
}

// InputWatermarks are an operator's or sink's combined input watermark and each input's.
type InputWatermarks struct {
	Combined Watermark   `json:"combined"`
	Inputs   []Watermark `json:"inputs"`
}

// OperatorEntry is operator (non-keyed) state: a name and its value.
type OperatorEntry struct {
	Name      string     `json:"name"`
	Watermark *Watermark `json:"watermark,omitempty"`
	Value     *Bytes     `json:"value,omitempty"`
}

// KeyGroupState is a key group's keyed state entries.
type KeyGroupState struct {
	KeyGroup int          `json:"key_group"`
	Entries  []KeyedEntry `json:"entries"`
}

// KeyedEntry is one keyed state entry: decoded (Kind, Key, Value) or raw.
type KeyedEntry struct {
	StateID  byte              `json:"state_id"`
	Kind     string            `json:"kind,omitempty"`
	Key      []exec.StateField `json:"key,omitempty"`
	Value    []exec.StateField `json:"value,omitempty"`
	RawKey   *Bytes            `json:"raw_key,omitempty"`
	RawValue *Bytes            `json:"raw_value,omitempty"`
	Error    string            `json:"decode_error,omitempty"` // the operator's decoder refused the entry
}

// Timer is an event-time timer.
type Timer struct {
	KeyGroup  int       `json:"key_group"`
	Timestamp Watermark `json:"timestamp"`
	Key       Bytes     `json:"key"`
}

// Inflight is the in-flight log of an unaligned checkpoint at one subtask: per input channel, what arrived
// before its barrier and was captured.
type Inflight struct {
	File     string            `json:"file"`
	Bytes    int64             `json:"bytes"`
	Channels []InflightChannel `json:"channels"`
}

// InflightChannel is one input channel's captured elements, in arrival order.
type InflightChannel struct {
	Input    int              `json:"input"`
	Rows     int              `json:"rows"`
	Elements []InflightRecord `json:"elements"`
}

// InflightRecord is a captured watermark or batch.
type InflightRecord struct {
	Watermark *Watermark  `json:"watermark,omitempty"`
	Columns   []string    `json:"columns,omitempty"`
	Rows      [][]*string `json:"rows,omitempty"`
	Kinds     []string    `json:"kinds,omitempty"`
}

// Handle is the resume handle a sink subtask whose commit is not recoverable staged at the barrier.
type Handle struct {
	File    string    `json:"file"`
	Horizon Watermark `json:"horizon"`
	Handle  Bytes     `json:"handle"`
	// Text is the handle itself when it is printable text (the Kafka sink's is JSON: transactional id, producer
	// id and epoch, and the offsets per partition).
	Text string `json:"text,omitempty"`
}

// Transaction is one transaction of a two-phase file sink subtask (the files of txnfile's layout).
type Transaction struct {
	Checkpoint uint64 `json:"checkpoint"`
	State      string `json:"state"` // staged (pending its checkpoint's completion and commit) or committed
	File       string `json:"file"`
	Bytes      int64  `json:"bytes"`
}

// OperatorReceipts are the commit receipts and unresolved markers of one sink subtask (jobs with an in-doubt
// sink).
type OperatorReceipts struct {
	Operator   string   `json:"operator"`
	Subtask    int      `json:"subtask"`
	Receipts   []uint64 `json:"receipts"`
	Unresolved []uint64 `json:"unresolved,omitempty"`
}

// Inspect reads what opts asks for.
func Inspect(opts Options) (*Report, error) {
	dir, err := filepath.Abs(opts.DataDir)
	if err != nil {
		return nil, err
	}
	if fi, err := os.Stat(dir); err != nil {
		return nil, err
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("%s is not a directory", dir)
	}
	r := &Report{DataDir: dir}
	cat, cerr := openCatalog(dir)
	if cerr != nil {
		if _, ok := state.IsCorrupt(cerr); ok {
			return nil, cerr
		}
		r.Catalog = cerr.Error()
	}
	ids, err := jobIDs(dir, cat)
	if err != nil {
		return nil, err
	}
	if opts.Job == "" {
		for _, id := range ids {
			s, err := summary(dir, cat, id)
			if err != nil {
				return nil, err
			}
			r.Jobs = append(r.Jobs, s)
		}
		return r, nil
	}
	if !slices.Contains(ids, opts.Job) {
		return nil, fmt.Errorf("no job %q in %s (jobs: %s)", opts.Job, dir, listOrNone(ids))
	}
	j, err := inspectJob(dir, cat, opts)
	if err != nil {
		return nil, err
	}
	r.Job = j
	return r, nil
}

func listOrNone(ids []string) string {
	if len(ids) == 0 {
		return "none"
	}
	return strings.Join(ids, ", ")
}

// openCatalog reads the catalog without creating anything: nil and no error when the directory has none.
func openCatalog(dir string) (*catalog.Catalog, error) {
	cdir := filepath.Join(dir, "catalog")
	if _, err := os.Stat(cdir); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	cat, err := catalog.Open(readOnlyFS{scratch: "\x00"}, cdir)
	if err != nil {
		return nil, err
	}
	if cat.Missing() {
		return nil, nil
	}
	return cat, nil
}

// jobIDs lists the jobs of dir: its jobs/ directories and the catalog's jobs, sorted as the catalog sorts them.
func jobIDs(dir string, cat *catalog.Catalog) ([]string, error) {
	var ids []string
	if cat != nil {
		for _, j := range cat.Jobs() {
			ids = append(ids, j.ID)
		}
	}
	entries, err := os.ReadDir(filepath.Join(dir, "jobs"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	for _, e := range entries {
		if e.IsDir() && !slices.Contains(ids, e.Name()) {
			ids = append(ids, e.Name())
		}
	}
	return ids, nil
}

func cpDir(dir, job string) string { return filepath.Join(dir, "jobs", job, "checkpoints") }

func summary(dir string, cat *catalog.Catalog, id string) (JobSummary, error) {
	s := JobSummary{ID: id, State: "unknown"}
	if cat != nil {
		if spec, ok := cat.Job(id); ok {
			s.Statement = spec.Statement
			switch {
			case spec.Dropped:
				s.State = "dropped"
			case spec.Stopped:
				s.State = "finished"
			case spec.Failed != "":
				s.State = "failed"
			default:
				s.State = "running"
			}
		} else {
			s.State = "not in the catalog"
		}
	}
	ids, err := checkpoint.CompletedIDs(state.OS, cpDir(dir, id))
	if err != nil {
		return s, err
	}
	s.Completed = ids
	if s.Completed == nil {
		s.Completed = []uint64{}
	}
	return s, nil
}

// listCheckpoints lists every checkpoint id the directory names: markers and chk-<id> directories.
func listCheckpoints(cp string, completed []uint64) ([]CheckpointListing, uint64, error) {
	confirmed, err := checkpoint.ConfirmedIDs(state.OS, cp)
	if err != nil {
		return nil, 0, err
	}
	abandoned, err := checkpoint.AbandonedIDs(state.OS, cp)
	if err != nil {
		return nil, 0, err
	}
	hw, err := checkpoint.NextID(state.OS, cp)
	if err != nil {
		return nil, 0, err
	}
	byID := map[uint64]*CheckpointListing{}
	get := func(id uint64) *CheckpointListing {
		if c, ok := byID[id]; ok {
			return c
		}
		c := &CheckpointListing{ID: id, Status: "incomplete", Files: []string{}}
		byID[id] = c
		return c
	}
	for _, id := range completed {
		get(id).Status = "completed"
	}
	for _, id := range abandoned {
		get(id).Status = "abandoned"
	}
	for _, id := range confirmed {
		get(id).Confirmed = true
	}
	entries, err := os.ReadDir(cp)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, 0, err
	}
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), "chk-")
		if !ok || !e.IsDir() {
			continue
		}
		id, err := strconv.ParseUint(rest, 10, 64)
		if err != nil {
			continue
		}
		c := get(id)
		root := filepath.Join(cp, e.Name())
		err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) { // retention removed it meanwhile
					return nil
				}
				return err
			}
			if d.IsDir() {
				return nil
			}
			fi, err := d.Info()
			if err != nil {
				return nil
			}
			rel, _ := filepath.Rel(root, p)
			c.Files = append(c.Files, rel)
			c.Bytes += fi.Size()
			return nil
		})
		if err != nil {
			return nil, 0, err
		}
	}
	history, _, err := checkpoint.ReadHistory(state.OS, cp)
	if err != nil {
		return nil, 0, err // damaged: an error naming the file
	}
	for _, r := range history {
		if c, ok := byID[r.ID]; ok {
			trigger, ms := r.Trigger, float64(r.Duration.Microseconds())/1000
			c.Mode, c.Trigger, c.DurationMs = r.Mode.String(), &trigger, &ms
		}
	}
	out := make([]CheckpointListing, 0, len(byID))
	for _, c := range byID {
		out = append(out, *c)
	}
	slices.SortFunc(out, func(a, b CheckpointListing) int {
		switch {
		case a.ID < b.ID:
			return -1
		case a.ID > b.ID:
			return 1
		}
		return 0
	})
	return out, hw - 1, nil
}

func idsText(ids []uint64) string {
	if len(ids) == 0 {
		return "none"
	}
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.FormatUint(id, 10)
	}
	return strings.Join(s, ", ")
}

func inspectJob(dir string, cat *catalog.Catalog, opts Options) (*Job, error) {
	s, err := summary(dir, cat, opts.Job)
	if err != nil {
		return nil, err
	}
	j := &Job{JobSummary: s}
	cp := cpDir(dir, opts.Job)
	if j.Checkpoints, j.HighWater, err = listCheckpoints(cp, s.Completed); err != nil {
		return nil, err
	}
	var g *exec.Graph
	if cat == nil {
		j.PlanError = "no readable catalog"
	} else if spec, ok := cat.Job(opts.Job); !ok {
		j.PlanError = "the catalog does not name the job"
	} else if p, err := engine.PlanJob(engine.PlanOnlyEnv{Dir: dir, Cat: cat}, spec); err != nil {
		j.PlanError = err.Error()
	} else if g, err = p.Graph(); err != nil {
		j.PlanError, g = err.Error(), nil
	}
	if opts.Operator != "" && g != nil && !slices.ContainsFunc(g.Nodes, func(n *exec.Node) bool { return n.ID == opts.Operator }) {
		ids := make([]string, len(g.Nodes))
		for i, n := range g.Nodes {
			ids[i] = n.ID
		}
		return nil, fmt.Errorf("job %s has no operator %q (operators: %s)", opts.Job, opts.Operator, strings.Join(ids, ", "))
	}
	id := opts.Checkpoint
	if len(s.Completed) == 0 {
		if id != 0 {
			return nil, fmt.Errorf("job %s has no completed checkpoint, so not %d", opts.Job, id)
		}
		return j, nil
	}
	if id == 0 {
		id = s.Completed[len(s.Completed)-1]
	} else if !slices.Contains(s.Completed, id) {
		why := "unknown"
		if i := slices.IndexFunc(j.Checkpoints, func(c CheckpointListing) bool { return c.ID == id }); i >= 0 {
			why = j.Checkpoints[i].Status + ": no COMPLETED marker"
		}
		return nil, fmt.Errorf("checkpoint %d of job %s is not a completed checkpoint (%s); completed checkpoints: %s",
			id, opts.Job, why, idsText(s.Completed))
	}
	snap, receipts, err := readCheckpoint(dir, opts.Job, cp, id, g, opts.Operator)
	if err != nil {
		if !checkpoint.IsCompleted(state.OS, cp, id) {
			return nil, fmt.Errorf("checkpoint %d of job %s was retired by the running server while it was read (run state-cat again): %w", id, opts.Job, err)
		}
		return nil, err
	}
	j.Checkpoint, j.Receipts = snap, receipts
	return j, nil
}
