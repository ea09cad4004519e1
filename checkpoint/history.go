package checkpoint

import (
	"encoding/json"
	"errors"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/clinksql/clinksql/state"
)

// Outcome is how a checkpoint ended.
type Outcome uint8

const (
	InProgress Outcome = iota
	Completed
	Failed  // a participant failed, the timeout passed, or the marker could not be written
	Aborted // discarded: the job stopped or rewound before it completed
)

func (o Outcome) String() string {
	return [...]string{"IN_PROGRESS", "COMPLETED", "FAILED", "ABORTED"}[o]
}

// Record is one checkpoint as the history keeps it (SHOW CHECKPOINTS, clink_catalog.checkpoints, the console).
type Record struct {
	ID      uint64
	Mode    Mode
	Trigger time.Time
	// Duration is from the trigger to the durable COMPLETED marker, or to the failure.
	Duration time.Duration
	// AlignWait is the longest time a subtask held an input paused for this checkpoint's alignment.
	AlignWait time.Duration
	// Bytes are the bytes the participants persisted for it (what each snapshot added, in-flight logs included);
	// InflightBytes the part that is captured in-flight records (unaligned).
	Bytes, InflightBytes int64
	Outcome              Outcome
	Reason               string // why it failed or was aborted
}

// HistoryFile is the name of the checkpoint history in a job's checkpoint directory.
const HistoryFile = "history"

// DefaultHistorySize is how many records a History keeps when its size is not set.
const DefaultHistorySize = 100

// Bucket bounds of the histograms a History keeps (Totals): checkpoint durations and align waits in seconds,
// sizes in bytes. Fixed, so that counts persisted by one build are read by the next.
var (
	DurationBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300}
	SizeBuckets     = []float64{1 << 10, 16 << 10, 256 << 10, 1 << 20, 16 << 20, 256 << 20, 1 << 30, 16 << 30}
)

// Histogram is a cumulative Prometheus-style histogram: Buckets[i] counts the observations <= Bounds[i]
// (cumulative, as prometheus.NewConstHistogram wants them), Count all of them.
type Histogram struct {
	Count   uint64
	Sum     float64
	Buckets []uint64
}

// Observe counts v.
func (h *Histogram) Observe(bounds []float64, v float64) {
	if len(h.Buckets) != len(bounds) {
		h.Buckets = make([]uint64, len(bounds))
	}
	h.Count++
	h.Sum += v
	for i, b := range bounds {
		if v <= b {
			h.Buckets[i]++
		}
	}
}

// Clone returns a copy of h that shares nothing with it.
func (h Histogram) Clone() Histogram {
	h.Buckets = slices.Clone(h.Buckets)
	return h
}

// Map returns the buckets keyed by upper bound (prometheus.NewConstHistogram's form).
func (h Histogram) Map(bounds []float64) map[float64]uint64 {
	m := make(map[float64]uint64, len(bounds))
	for i, b := range bounds {
		if i < len(h.Buckets) {
			m[b] = h.Buckets[i]
		} else {
			m[b] = 0
		}
	}
	return m
}

// Totals are a job's figures that survive its restarts and the process's: they are persisted with its history.
type Totals struct {
	// StartedAt is when the job was first deployed in this data directory.
	StartedAt time.Time
	// Restarts counts the job's restarts by cause (exec documents the causes).
	Restarts map[string]int64
	// Checkpoints counts finished checkpoints by mode and outcome: Checkpoints[mode][outcome].
	Checkpoints [2][4]int64
	// AdaptiveSwitches counts the adaptive mode's flips.
	AdaptiveSwitches int64
	// InflightBytes sums the in-flight bytes captured by completed checkpoints.
	InflightBytes int64
	// Duration, Size and AlignWait are histograms over completed checkpoints (DurationBuckets, SizeBuckets).
	Duration, Size, AlignWait Histogram
}

// Outcomes sums Checkpoints over the modes for outcome o.
func (t Totals) Outcomes(o Outcome) int64 {
	return t.Checkpoints[Aligned][o] + t.Checkpoints[Unaligned][o]
}

// RestartCount sums Restarts over the causes.
func (t Totals) RestartCount() int64 {
	var n int64
	for _, v := range t.Restarts {
		n += v
	}
	return n
}

func (t Totals) clone() Totals {
	t.Restarts = maps.Clone(t.Restarts)
	t.Duration, t.Size, t.AlignWait = t.Duration.Clone(), t.Size.Clone(), t.AlignWait.Clone()
	return t
}

// historyFile is the persisted form (JSON inside a checksummed frame).
type historyFile struct {
	Records []Record
	Totals  Totals
}

// History keeps a job's last N checkpoint records and its Totals, persisted at Dir/history (framed, checksummed,
// written with fsync and rename) after every change, so both survive a restart of the job and of the process.
// Safe for concurrent use.
type History struct {
	mu      sync.Mutex
	fs      state.FS
	path    string
	size    int
	records []Record
	totals  Totals
}

// ReadHistory reads the history persisted in checkpoint directory dir, read-only (a job that is not running):
// nothing and no error when there is none. A damaged file is a *state.CorruptError naming it (XX001).
func ReadHistory(fsys state.FS, dir string) ([]Record, Totals, error) {
	path := filepath.Join(dir, HistoryFile)
	data, err := state.ReadFramed(fsOrOS(fsys), path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, Totals{}, nil
	}
	if err != nil {
		return nil, Totals{}, err
	}
	var f historyFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, Totals{}, state.Corrupt(path, err, "not a checkpoint history")
	}
	for _, r := range f.Records {
		if r.Mode > Unaligned || r.Outcome > Aborted {
			return nil, Totals{}, state.Corrupt(path, nil, "checkpoint %d: mode %d or outcome %d out of range", r.ID, r.Mode, r.Outcome)
		}
	}
	return f.Records, f.Totals, nil
}

// OpenHistory reads the history of checkpoint directory dir (ReadHistory) and keeps the newest size records
// (size <= 0: DefaultHistorySize) from now on.
func OpenHistory(fsys state.FS, dir string, size int) (*History, error) {
	if size <= 0 {
		size = DefaultHistorySize
	}
	recs, totals, err := ReadHistory(fsys, dir)
	if err != nil {
		return nil, err
	}
	h := &History{fs: fsOrOS(fsys), path: filepath.Join(dir, HistoryFile), size: size, totals: totals}
	h.records = trimRecords(recs, size)
	return h, nil
}

func trimRecords(recs []Record, size int) []Record {
	if len(recs) > size {
		recs = slices.Clone(recs[len(recs)-size:])
	}
	return recs
}

// Records returns the kept records, oldest first.
func (h *History) Records() []Record {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.records)
}

// Totals returns a copy of the job's totals.
func (h *History) Totals() Totals {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.totals.clone()
}

// Add records a finished checkpoint: it is kept (the oldest beyond the size go), counted in the totals, and the
// history persisted. The error is the write's; the record is kept in memory either way.
func (h *History) Add(r Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.records = trimRecords(append(h.records, r), h.size)
	t := &h.totals
	if r.Mode <= Unaligned && r.Outcome <= Aborted {
		t.Checkpoints[r.Mode][r.Outcome]++
	}
	if r.Outcome == Completed {
		t.InflightBytes += r.InflightBytes
		t.Duration.Observe(DurationBuckets, r.Duration.Seconds())
		t.AlignWait.Observe(DurationBuckets, r.AlignWait.Seconds())
		t.Size.Observe(SizeBuckets, float64(r.Bytes))
	}
	return h.persistLocked()
}

// Update changes the totals with fn and persists the history.
func (h *History) Update(fn func(*Totals)) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	fn(&h.totals)
	return h.persistLocked()
}

func (h *History) persistLocked() error {
	data, err := json.Marshal(historyFile{Records: h.records, Totals: h.totals})
	if err != nil {
		return err
	}
	if err := h.fs.MkdirAll(filepath.Dir(h.path)); err != nil {
		return err
	}
	return state.WriteFramed(h.fs, h.path, data)
}
