package checkpoint

import "time"

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
	// Bytes are the bytes the participants persisted for it; InflightBytes those of captured in-flight records
	// (unaligned).
	Bytes, InflightBytes int64
	Outcome              Outcome
	Reason               string // why it failed or was aborted
}
