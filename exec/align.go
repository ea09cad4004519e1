package exec

import (
	"slices"
	"sync"
	"time"
)

// Watermark alignment (JobConfig.WatermarkMaxDrift, Node.AlignWatermark; Flink's source watermark alignment): a
// source subtask whose watermark is more than the drift ahead of the slowest of the job's aligned source subtasks
// does not produce its next batch until that one catches up.
//
// Without it nothing keeps the sources of a job together in event time: each runs as fast as the scheduler lets it,
// and the downstream operators take the min of their inputs' watermarks, so every row of the leading sources waits in
// their state (open windows, join buffers) for the slowest. With two Nexmark bid subtasks feeding a HOP window
// aggregate (q5 at parallelism 2), the two drifted 90 s of event time apart (170 s at most) over a 20M-event run:
// the aggregate kept about 45 more panes open than at parallelism 1, 8 times the groups, and its extra memory cost
// page faults and cache misses on every row.
//
// A subtask takes part once it has a watermark: one that never reports one (its rows have no event time) must not
// stop the others forever. An idle subtask (its Produce returned Idle) and a finished one (+inf) hold nobody back.
// A held subtask still takes barriers, so a checkpoint never waits for the slowest source to catch up.

// alignWarnAfter is how long a source subtask is held before it logs a warning naming how far behind the slowest is:
// a source whose event time stays behind for good (old timestamps in a live feed) stops the others, and that must
// not pass unseen.
var alignWarnAfter = 30 * time.Second

// aligner is one incarnation's alignment of its aligned source subtasks.
type aligner struct {
	drift int64 // microseconds

	mu      sync.Mutex
	wms     []int64 // per slot; MinWatermark: none yet
	idle    []bool
	changed chan struct{} // closed (and replaced) when a slot's watermark advances or it goes idle
}

func newAligner(drift time.Duration, slots int) *aligner {
	return &aligner{drift: drift.Microseconds(), wms: slices.Repeat([]int64{MinWatermark}, slots),
		idle: make([]bool, slots), changed: make(chan struct{})}
}

// update records slot's watermark and whether it is idle, waking the held subtasks when either changed.
func (a *aligner) update(slot int, wm int64, idle bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if wm <= a.wms[slot] && idle == a.idle[slot] {
		return
	}
	a.wms[slot] = max(a.wms[slot], wm)
	a.idle[slot] = idle
	close(a.changed)
	a.changed = make(chan struct{})
}

// hold returns nil when slot, at watermark wm, may produce; else a channel closed when the other slots' watermarks
// change, after which the caller asks again.
func (a *aligner) hold(slot int, wm int64) <-chan struct{} {
	if wm == MinWatermark {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if s := a.slowestLocked(slot); s == MaxWatermark || wm-s <= a.drift {
		return nil
	}
	return a.changed
}

// slowest is the least watermark of the slots that hold slot back (MaxWatermark: none).
func (a *aligner) slowest(slot int) int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.slowestLocked(slot)
}

func (a *aligner) slowestLocked(slot int) int64 {
	s := int64(MaxWatermark)
	for i, w := range a.wms {
		if i != slot && w != MinWatermark && !a.idle[i] {
			s = min(s, w)
		}
	}
	return s
}
