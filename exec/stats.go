package exec

import (
	"time"

	"github.com/clinksql/clinksql/checkpoint"
)

// SubtaskStats is what one subtask of a running job has done: Job.Subtasks returns one per subtask of every node,
// in graph order. Counts are totals of the job (restored with each checkpoint, like JobStatus' counts); times and
// ratios are of the current process.
type SubtaskStats struct {
	Node        string // Node.ID
	Label       string // Node.Label (what EXPLAIN calls the operator)
	Kind        NodeKind
	Subtask     int
	Parallelism int

	// RowsIn counts rows taken from the inputs (0 for a source); RowsOut rows emitted (a source's rows read, a
	// sink's rows written).
	RowsIn, RowsOut int64
	// Rates over the last few seconds.
	RowsInPerSec, RowsOutPerSec float64
	// Busy is time spent in the operator's code, Backpressured time blocked on a full output channel, both since
	// the subtask started; the ratios are their shares of the last few seconds (Flink's busyTimeMsPerSecond and
	// backPressuredTimeMsPerSecond, divided by 1000).
	Busy, Backpressured          time.Duration
	BusyRatio, BackpressureRatio float64
	// Watermark is the last watermark the subtask emitted (a sink: its input watermark), MinWatermark for none.
	Watermark int64
	// StateBytes approximates the subtask's state: the size of its last persisted snapshot.
	StateBytes int64
	LateRows   int64
	BadValues  int64

	// Sources (SourceProgress): how far behind the end of its input the source is, and the rows a bounded input
	// holds; -1 where unknown or not a source.
	LagRecords, LagBytes, Total int64

	// Sinks: the duration of the last commit and the bytes committed (SinkProgress), 0 otherwise.
	LastCommit     time.Duration
	CommittedBytes int64
}

// SourceProgress is implemented by sources that know how far they are from the end of their input. It is called
// from other goroutines while Produce runs, so it must be safe for that (atomics).
type SourceProgress interface {
	// Progress returns the records and bytes behind the end of the input the source knows of (Kafka: the high
	// watermarks minus the positions; a file: the bytes not read yet) and, for a bounded input that knows it, the
	// rows it holds in total; -1 for what it does not know.
	Progress() (lagRecords, lagBytes, total int64)
}

// SinkProgress is implemented by sinks that count what their commits published. Called from other goroutines.
type SinkProgress interface {
	CommittedBytes() int64
}

// CheckpointHistory is the record of a job's recent checkpoints, newest last (see checkpoint.Record).
type CheckpointHistory = []checkpoint.Record
