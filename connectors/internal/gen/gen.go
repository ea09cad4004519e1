// Package gen holds what the generating sources (datagen, nexmark) share: the splitmix64 hash every value they
// make is a pure function of, the throttle, and how they report their progress. It keeps no state.
package gen

import (
	"math"
	"time"

	"github.com/clinksql/clinksql/connectors"
)

// The generators' hash: splitmix64. Row r of a column with key k hashes to Mix64(k + r*Gamma), the r-th output of
// a splitmix64 stream seeded with k, computed directly instead of by stepping a state.
const (
	Gamma  = 0x9E3779B97F4A7C15
	Gamma2 = 0xD1B54A32D192ED03 // a second odd constant, for the extra words of long strings
)

// Mix64 is splitmix64's finalizer.
func Mix64(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
	z = (z ^ (z >> 27)) * 0x94D049BB133111EB
	return z ^ (z >> 31)
}

// Throttle paces a generator to a wall-clock rate without sleeping in Produce: when the next rows are not due yet,
// the source returns Idle and hands the runtime Throttle's wake-up channel (exec.IdleWaiter), closed when they are
// due. The wait is then idle time, not busy time (a throttled source is not a busy one in clink_catalog.operators
// and the console), and barriers pass while it lasts. Only the source's goroutine calls it.
type Throttle struct {
	start   time.Time
	emitted int64
	wake    chan struct{} // closed by a timer when the rows it waits for are due
}

// Reset starts the pacing over from now (at Open).
func (t *Throttle) Reset() { t.start, t.emitted, t.wake = time.Now(), 0, nil }

// Due reports whether the rows emitted so far leave room at rate rows/s for more now. When not, it arms the wake-up
// channel for the instant they are due (once per wait).
func (t *Throttle) Due(rate float64) bool {
	wait := time.Until(t.start.Add(time.Duration(float64(t.emitted) / rate * float64(time.Second))))
	if wait <= 0 {
		return true
	}
	if t.wake == nil || closed(t.wake) {
		ch := make(chan struct{})
		time.AfterFunc(wait, func() { close(ch) })
		t.wake = ch
	}
	return false
}

func closed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// Emitted counts n rows produced.
func (t *Throttle) Emitted(n int64) { t.emitted += n }

// IdleWait implements exec.IdleWaiter: nil when unthrottled (the runtime then polls).
func (t *Throttle) IdleWait() <-chan struct{} {
	if t.wake == nil {
		return nil
	}
	return t.wake
}

// Report sets a generator's progress: of its localRows rows (math.MaxUint64 when unbounded: nothing known), next
// were produced.
func Report(p *connectors.ReadProgress, next, localRows uint64) {
	if localRows == math.MaxUint64 {
		p.Set(-1, -1, -1)
		return
	}
	p.Set(int64(localRows-min(next, localRows)), -1, int64(localRows))
}
