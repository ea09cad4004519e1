package exec

import (
	"math"
	"testing"
	"time"
)

// timerOp fires its timers in order: each call of OnProcessingTime takes every due one.
type timerOp struct {
	due   []int64 // ascending
	calls []int64 // the now of each call
}

func (o *timerOp) NextProcessingTime() (int64, bool) {
	if len(o.due) == 0 {
		return 0, false
	}
	return o.due[0], true
}

func (o *timerOp) OnProcessingTime(now int64, _ Emitter) error {
	o.calls = append(o.calls, now)
	for len(o.due) > 0 && o.due[0] <= now {
		o.due = o.due[1:]
	}
	return nil
}

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestManualClockUntil(t *testing.T) {
	t0 := time.Unix(100, 0)
	c := NewManualClock(t0)
	past, at, later := c.Until(t0.Add(-time.Second)), c.Until(t0.Add(time.Second)), c.Until(t0.Add(2*time.Second))
	if !closed(past) || closed(at) || closed(later) {
		t.Fatal("Until before the clock must be ready at once, after it not yet")
	}
	c.Advance(time.Second)
	if !closed(at) || closed(later) {
		t.Fatal("Advance to a waiter's time must wake it and no later one")
	}
	c.Set(t0) // back: ignored
	if !c.Now().Equal(t0.Add(time.Second)) {
		t.Fatalf("the clock went back to %s", c.Now())
	}
	c.Set(t0.Add(time.Hour))
	if !closed(later) || len(c.waiters) != 0 {
		t.Fatal("a waiter left after its time")
	}
}

// TestTimerService: the runner's side fires what is due by the clock, once per due point reached, and waits on
// the clock for the next one (the channel stays the same while the due time does).
func TestTimerService(t *testing.T) {
	sec := int64(time.Second / time.Microsecond)
	t0 := time.UnixMicro(10 * sec)
	c := NewManualClock(t0)
	op := &timerOp{due: []int64{20 * sec, 30 * sec, 30 * sec, 50 * sec}}
	ts := &timerService{op: op, clock: c}
	if err := ts.fire(); err != nil || len(op.calls) != 0 {
		t.Fatalf("fired before any timer was due: %v %v", op.calls, err)
	}
	w := ts.waitChan()
	if w == nil || closed(w) || ts.waitChan() != w {
		t.Fatal("the wait for the first timer is not one pending channel")
	}
	c.Set(time.UnixMicro(35 * sec)) // 20 and both 30s are due: one call takes them
	if !closed(w) {
		t.Fatal("the wait did not end at the timer's time")
	}
	if err := ts.fire(); err != nil {
		t.Fatal(err)
	}
	if len(op.calls) != 1 || op.calls[0] != 35*sec {
		t.Fatalf("calls %v, want one at 35 s", op.calls)
	}
	if w2 := ts.waitChan(); w2 == w || closed(w2) {
		t.Fatal("the wait for the 50 s timer is not a new pending channel")
	}
	c.Set(time.UnixMicro(math.MaxInt64 / 2))
	if err := ts.fire(); err != nil || len(op.calls) != 2 || ts.waitChan() != nil {
		t.Fatalf("calls %v, err %v; no timer must leave no wait", op.calls, err)
	}
	var none *timerService // an operator without timers
	if none.fire() != nil || none.waitChan() != nil {
		t.Fatal("a nil timer service must do nothing")
	}
}
