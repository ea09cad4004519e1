package exec

import (
	"testing"
	"time"
)

// A slot is held only by slots that have a watermark, are not idle and are more than the drift behind it; a
// finished slot (+inf) holds nobody, and a change of another slot wakes the held one.
func TestAlignerHoldsOnlyBehindTheSlowestActiveSlot(t *testing.T) {
	a := newAligner(500*time.Microsecond, 3)
	if a.hold(0, 5000) != nil {
		t.Fatal("held with no other slot having a watermark")
	}
	a.update(1, 1000, false)
	if a.hold(0, 1500) != nil {
		t.Fatal("held at exactly the drift ahead")
	}
	held := a.hold(0, 1501)
	if held == nil {
		t.Fatal("not held 501 ahead of slot 1")
	}
	if a.hold(1, 1000) != nil || a.hold(0, MinWatermark) != nil {
		t.Fatal("the slowest slot, or one without a watermark, was held")
	}
	a.update(2, 1200, false)
	select {
	case <-held:
	default:
		t.Fatal("another slot's watermark changed and the held slot was not woken")
	}
	if a.hold(0, 1501) == nil {
		t.Fatal("slot 1 still at 1000: want slot 0 held again")
	}
	a.update(1, 1000, true) // slot 1 idle: slot 2 (1200) is the slowest
	if a.hold(0, 1700) != nil || a.hold(0, 1701) == nil {
		t.Fatal("idle slot 1 still held slot 0, or slot 2 did not")
	}
	a.update(1, 1000, false) // active again, at the same watermark
	if a.hold(0, 1600) == nil {
		t.Fatal("slot 1 active again at 1000: want slot 0 held at 1600")
	}
	a.update(1, MaxWatermark, false)
	a.update(2, MaxWatermark, false)
	if a.hold(0, 1<<60) != nil {
		t.Fatal("held by finished slots")
	}
}
