package exec

import (
	"sync"
	"time"
)

// Processing time is the wall clock of the subtask that looks at a row, as opposed to event time, which the rows
// carry and watermarks advance. PROCTIME() reads it, and a processing-time window fires when it passes the
// window's end. A job reads it through one ProcessingClock (JobConfig.Clock): the real clock in production, a
// ManualClock that a test moves by hand. Results that depend on it are not deterministic on the real clock.
//
// Times are int64 microseconds since the epoch, as event times are.

// ProcessingClock is a job's processing-time clock. Now and Until may be called from any goroutine.
type ProcessingClock interface {
	// Now is the current processing time.
	Now() time.Time
	// Until returns a channel that is closed once the clock has reached t (at once when it already has).
	Until(t time.Time) <-chan struct{}
}

// WallClock is the real clock (time.Now, time.AfterFunc).
type WallClock struct{}

// Now is time.Now.
func (WallClock) Now() time.Time { return time.Now() }

// Until closes its channel after t on the wall clock.
func (WallClock) Until(t time.Time) <-chan struct{} {
	ch := make(chan struct{})
	d := time.Until(t)
	if d <= 0 {
		close(ch)
		return ch
	}
	time.AfterFunc(d, func() { close(ch) })
	return ch
}

// ManualClock is a processing-time clock that moves only when told (Set, Advance): tests drive processing-time
// windows with it, so their results are deterministic. It never goes back.
type ManualClock struct {
	mu      sync.Mutex
	now     time.Time
	waiters []clockWaiter
}

type clockWaiter struct {
	at time.Time
	ch chan struct{}
}

// NewManualClock returns a clock standing at start.
func NewManualClock(start time.Time) *ManualClock { return &ManualClock{now: start} }

// Now is the clock's time.
func (c *ManualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Until closes its channel once the clock is set to t or later.
func (c *ManualClock) Until(t time.Time) <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan struct{})
	if !c.now.Before(t) {
		close(ch)
		return ch
	}
	c.waiters = append(c.waiters, clockWaiter{at: t, ch: ch})
	return ch
}

// Set moves the clock to t; a t before the clock's time leaves it where it is.
func (c *ManualClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.After(c.now) {
		c.now = t
	}
	kept := c.waiters[:0]
	for _, w := range c.waiters {
		if c.now.Before(w.at) {
			kept = append(kept, w)
		} else {
			close(w.ch)
		}
	}
	clear(c.waiters[len(kept):])
	c.waiters = kept
}

// Advance moves the clock d forward.
func (c *ManualClock) Advance(d time.Duration) {
	c.mu.Lock()
	t := c.now.Add(d)
	c.mu.Unlock()
	c.Set(t)
}

// ProcessingTimer is implemented by operators that act when processing time passes a point (a processing-time
// window's end). The input runner asks NextProcessingTime before it handles each element and, while the operator
// waits for input, waits for that time too; once the job's clock has reached it, it calls OnProcessingTime with
// the clock's time (microseconds), on the subtask's goroutine like every other call. So an element that arrives
// after the clock passed a timer's time - a barrier injected after a test moved the clock - finds it fired. The operator fires what is due and may
// emit. The timers are the operator's own state: it keeps what they stand for (its open windows) in its
// checkpointed state, so after a restore NextProcessingTime gives them again, and those already due fire at once.
//
// A timer can fire between any two elements, also while a barrier's alignment pauses an input: what it emits
// then goes downstream before that barrier, and the state captured at the barrier no longer holds it.
type ProcessingTimer interface {
	// NextProcessingTime is the earliest processing time at which the operator has something to do; ok is false
	// when it has none.
	NextProcessingTime() (t int64, ok bool)
	OnProcessingTime(now int64, out Emitter) error
}

// timerService is an input runner's side of ProcessingTimer: the clock, and the wait for the next due time.
type timerService struct {
	op    ProcessingTimer
	clock ProcessingClock
	out   Emitter
	// waitAt and wait: the channel of the last Until asked, reused while the due time stays the same.
	waitAt int64
	wait   <-chan struct{}
}

// fire calls OnProcessingTime while the next timer is due.
func (t *timerService) fire() error {
	if t == nil {
		return nil
	}
	for {
		due, ok := t.op.NextProcessingTime()
		if !ok {
			return nil
		}
		now := t.clock.Now().UnixMicro()
		if now < due {
			return nil
		}
		if err := t.op.OnProcessingTime(now, t.out); err != nil {
			return err
		}
		if next, ok := t.op.NextProcessingTime(); !ok || next > now || next == due {
			return nil // nothing more due (or an operator that did not move on: the next loop asks again)
		}
	}
}

// waitChan is a channel closed once the next timer is due; nil (never ready) when there is none.
func (t *timerService) waitChan() <-chan struct{} {
	if t == nil {
		return nil
	}
	due, ok := t.op.NextProcessingTime()
	if !ok {
		return nil
	}
	if t.wait == nil || t.waitAt != due {
		t.waitAt, t.wait = due, t.clock.Until(time.UnixMicro(due))
	}
	return t.wait
}
