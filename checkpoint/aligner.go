package checkpoint

import (
	"slices"
	"time"
)

// Advance is what the runner must do after handing the Aligner a barrier or a closed input.
type Advance struct {
	// Forward: emit Barrier downstream now (and, for a stateful operator, capture state for it). Aligned: once
	// every alive input delivered it. Unaligned: on its first delivery.
	Forward bool
	// Barrier is the barrier to forward: as pinned by its first delivery, with the override applied (terminal
	// ones aligned). An operator that cannot unalign degrades only locally and keeps an Unaligned stamp, so
	// downstream operators that can capture still do; what this subtask does is in the flags, not Barrier.Mode.
	// Zero for a stale or ignored delivery.
	Barrier Barrier
	// UnalignedFirst: this is the first delivery of an unaligned checkpoint. The runner captures state now and
	// logs what arrives on PendingUnaligned inputs into the checkpoint until Complete.
	UnalignedFirst bool
	// Complete: every alive input is accounted for; the checkpoint's bookkeeping is dropped. For an unaligned
	// checkpoint this closes its in-flight logs (the runner can hand them to the snapshot).
	Complete bool
	// AlignWait is the time from the first delivery to completion, set when Complete.
	AlignWait time.Duration
}

// Aligner is the barrier alignment state machine of one multi-input subtask. It is pure logic: the runner calls it
// from the subtask goroutine, stops polling an input while Paused reports true, and acts on each Advance.
//
// The mode of checkpoint id is pinned by its first delivery: the delivered stamp, re-stamped by the override, and
// forced to Aligned for Terminal barriers (no more records are coming) and for operators that cannot capture
// in-flight records (degrading loses time, unaligning without capture would lose records). Later deliveries of id
// never change it, so aligned and unaligned semantics never mix within one checkpoint.
//
// Closed inputs satisfy every current and future barrier, so a finished input never wedges alignment. Several
// checkpoints can be open at once (unaligned N still owed by input 1 while N+1 first arrives on input 0).
//
// Not safe for concurrent use.
type Aligner struct {
	canUnalign  bool
	hasOverride bool
	override    Mode
	closed      []bool
	paused      []bool
	open        []*alignment // ascending id
	completed   uint64       // highest id completed here; lower or equal ids are stale
	now         func() time.Time
}

type alignment struct {
	b         Barrier // pinned
	unaligned bool    // local behaviour; b.Mode is the stamp forwarded downstream
	delivered []bool
	first     time.Time
}

// NewAligner aligns barriers over inputs channels. canUnalign false degrades unaligned barriers to aligned.
func NewAligner(inputs int, canUnalign bool) *Aligner {
	if inputs < 1 {
		panic("checkpoint: Aligner needs at least one input")
	}
	return &Aligner{
		canUnalign: canUnalign,
		closed:     make([]bool, inputs),
		paused:     make([]bool, inputs),
		now:        time.Now,
	}
}

// SetOverride re-stamps every barrier passing this operator with m (a per-operator mode override), from the next
// checkpoint that has not had a delivery yet.
func (a *Aligner) SetOverride(m Mode) { a.hasOverride, a.override = true, m }

// SetClock replaces time.Now (tests).
func (a *Aligner) SetClock(now func() time.Time) { a.now = now }

// Paused reports whether the runner must stop polling input: it delivered an aligned barrier that other inputs
// still owe.
func (a *Aligner) Paused(input int) bool { return a.paused[input] }

// OnBarrier handles barrier b arriving on input.
func (a *Aligner) OnBarrier(input int, b Barrier) Advance {
	if b.ID <= a.completed || a.closed[input] {
		return Advance{} // stale: a duplicate or an id older than one already completed here
	}
	al := a.find(b.ID)
	if al == nil {
		al = a.pin(b)
		al.delivered[input] = true
		if al.unaligned {
			adv := Advance{Forward: true, Barrier: al.b, UnalignedFirst: true}
			if a.allDelivered(al) {
				adv.Complete, adv.AlignWait = true, 0
				a.drop(al)
			}
			return adv
		}
		return a.afterAligned(al)
	}
	if al.delivered[input] {
		return Advance{} // a second delivery on one channel cannot happen in FIFO order; ignore it
	}
	al.delivered[input] = true
	if al.unaligned {
		return a.afterUnaligned(al)
	}
	return a.afterAligned(al)
}

// OnInputClosed marks input finished. A closed input satisfies every barrier, so this can complete (and, for
// aligned ones, forward) open checkpoints; the advances are in id order.
func (a *Aligner) OnInputClosed(input int) []Advance {
	if a.closed[input] {
		return nil
	}
	a.closed[input] = true
	var out []Advance
	for _, al := range slices.Clone(a.open) {
		if !a.allDelivered(al) {
			continue
		}
		if al.unaligned {
			out = append(out, a.afterUnaligned(al))
		} else {
			out = append(out, a.afterAligned(al))
		}
	}
	a.repause()
	return out
}

// PendingInputs lists the alive inputs that have not delivered checkpoint id yet: the channels whose in-flight
// records an unaligned capture must log.
func (a *Aligner) PendingInputs(id uint64) []int {
	if id <= a.completed {
		return nil
	}
	al := a.find(id)
	var out []int
	for i := range a.closed {
		if !a.closed[i] && (al == nil || !al.delivered[i]) {
			out = append(out, i)
		}
	}
	return out
}

// PendingUnaligned lists, ascending, the open unaligned checkpoints that input still owes a barrier: a record the
// runner receives on input belongs to each of their in-flight logs (it precedes their barrier on that channel
// but was overtaken by the forwarded barrier).
func (a *Aligner) PendingUnaligned(input int) []uint64 {
	if a.closed[input] {
		return nil
	}
	var out []uint64
	for _, al := range a.open {
		if al.unaligned && !al.delivered[input] {
			out = append(out, al.b.ID)
		}
	}
	return out
}

// Unaligns reports whether barrier b is handled unaligned here: as pinned when its checkpoint is open, else as
// its first delivery would pin it. The runner lets such a barrier overtake the records queued ahead of it.
func (a *Aligner) Unaligns(b Barrier) bool {
	if b.ID <= a.completed {
		return false
	}
	if al := a.find(b.ID); al != nil {
		return al.unaligned
	}
	return a.stamp(b).Mode == Unaligned && a.canUnalign
}

// CanUnalign reports whether this subtask can take any barrier unaligned (its operator captures in-flight
// records and no override forces it aligned).
func (a *Aligner) CanUnalign() bool {
	return a.canUnalign && (!a.hasOverride || a.override == Unaligned)
}

// stamp applies the per-operator override and the terminal rule to a delivered barrier.
func (a *Aligner) stamp(b Barrier) Barrier {
	if a.hasOverride {
		b.Mode = a.override
	}
	if b.Terminal {
		b.Mode = Aligned
	}
	return b
}

// pin opens checkpoint b.ID with the mode its first delivery decides.
func (a *Aligner) pin(b Barrier) *alignment {
	b = a.stamp(b)
	al := &alignment{
		b:         b,
		unaligned: b.Mode == Unaligned && a.canUnalign,
		delivered: make([]bool, len(a.closed)),
		first:     a.now(),
	}
	i, _ := slices.BinarySearchFunc(a.open, b.ID, func(x *alignment, id uint64) int {
		switch {
		case x.b.ID < id:
			return -1
		case x.b.ID > id:
			return 1
		}
		return 0
	})
	a.open = slices.Insert(a.open, i, al)
	return al
}

func (a *Aligner) afterAligned(al *alignment) Advance {
	if !a.allDelivered(al) {
		a.repause()
		return Advance{Barrier: al.b}
	}
	wait := a.now().Sub(al.first)
	a.drop(al)
	return Advance{Forward: true, Barrier: al.b, Complete: true, AlignWait: wait}
}

func (a *Aligner) afterUnaligned(al *alignment) Advance {
	if !a.allDelivered(al) {
		return Advance{Barrier: al.b}
	}
	wait := a.now().Sub(al.first)
	a.drop(al)
	return Advance{Barrier: al.b, Complete: true, AlignWait: wait}
}

func (a *Aligner) allDelivered(al *alignment) bool {
	for i, d := range al.delivered {
		if !d && !a.closed[i] {
			return false
		}
	}
	return true
}

func (a *Aligner) find(id uint64) *alignment {
	for _, al := range a.open {
		if al.b.ID == id {
			return al
		}
	}
	return nil
}

// drop forgets a completed checkpoint and everything older (which FIFO channels have necessarily completed).
func (a *Aligner) drop(al *alignment) {
	a.completed = max(a.completed, al.b.ID)
	a.open = slices.DeleteFunc(a.open, func(x *alignment) bool { return x.b.ID <= a.completed })
	a.repause()
}

// repause derives the paused set: an input is paused while it has delivered an open aligned checkpoint.
func (a *Aligner) repause() {
	clear(a.paused)
	for _, al := range a.open {
		if al.unaligned {
			continue
		}
		for i, d := range al.delivered {
			if d && !a.closed[i] {
				a.paused[i] = true
			}
		}
	}
}
