package exec

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clinksql/clinksql/checkpoint"
	"github.com/clinksql/clinksql/state"
)

// channel is one producer-consumer pair's bounded queue: its own alignment input at the consumer. Its fill level
// (len/cap) is the backpressure signal the adaptive checkpoint mode reads.
type channel struct {
	c chan Element
	// announced is the id of the newest unaligned barrier the producer is sending on this channel. The consumer
	// reads it between elements and, when it has not delivered that barrier yet, takes everything buffered in
	// front of it at once: an unaligned barrier overtakes the records queued ahead of it, on its own channel as
	// on the others, instead of waiting for them to be processed.
	announced atomic.Uint64
	// parts, when the consumer copies what it keeps of its input (InputCopier), recycles the buffers of the parts
	// a hash exchange gathers for it. Set before the subtasks start.
	parts *partPool
}

func newChannel(capacity int) *channel { return &channel{c: make(chan Element, capacity)} }

func (ch *channel) fill() float64 { return float64(len(ch.c)) / float64(cap(ch.c)) }

// outEdge routes one upstream subtask's output over one downstream edge.
type outEdge struct {
	exchange  Exchange
	chans     []*channel // Forward: one; otherwise one per downstream subtask
	keyGroups int
	rr        int
	hashes    []uint64
	kgs       []uint16 // the key group of each row of the batch being routed
	targets   [][]int32
	// markerRR picks the channel of the next latency marker (not Forward): round robin, from the sending
	// subtask's index, so that the subtasks of a node start on different channels.
	markerRR int
	// owner maps a key group to the downstream subtask that owns it (Hash with several subtasks): a table lookup
	// per row instead of a modulo and a division.
	owner []uint16
}

// output is an upstream subtask's Emitter: it partitions batches over its edges and broadcasts watermarks,
// barriers and end of input to every channel.
type output struct {
	ctx   context.Context
	edges []*outEdge
	alloc memory.Allocator
	st    *subStats // the sending subtask's figures: rows out, time blocked on full channels
}

var _ Emitter = (*output)(nil)

func (o *output) send(ch *channel, e Element) error {
	if e.Kind == KindBarrier && e.Barrier.Mode == checkpoint.Unaligned && !e.Barrier.Terminal {
		ch.announced.Store(e.Barrier.ID) // before the send, which may block on a full channel
	}
	select {
	case ch.c <- e:
		return nil
	default:
	}
	// The channel is full: backpressure, timed (only here, so an unblocked send reads no clock).
	start := o.st.blockedFrom()
	defer o.st.blockedFor(start)
	select {
	case ch.c <- e:
		return nil
	case <-o.ctx.Done():
		if e.Kind == KindBatch {
			e.Batch.Release()
		}
		return o.ctx.Err()
	}
}

// broadcast sends a non-data element to every channel.
func (o *output) broadcast(e Element) error {
	for _, ed := range o.edges {
		for _, ch := range ed.chans {
			if err := o.send(ch, e); err != nil {
				return err
			}
		}
	}
	return nil
}

// marker sends a latency marker on one channel of each edge: round robin over a hash, rebalance or broadcast
// edge's channels, as Flink sends its markers to one channel. Copies on every channel would multiply at every
// exchange (p^k markers behind k exchanges) and time the same path over and over; round robin times every path
// in turn.
func (o *output) marker(e Element) error {
	for _, ed := range o.edges {
		ch := ed.chans[0]
		if len(ed.chans) > 1 {
			ch = ed.chans[ed.markerRR%len(ed.chans)]
			ed.markerRR++
		}
		if err := o.send(ch, e); err != nil {
			return err
		}
	}
	return nil
}

// Emit routes a batch; it takes over b's reference.
func (o *output) Emit(b Batch) error {
	n := b.Rows()
	if n == 0 {
		b.Release()
		return nil
	}
	o.st.rowsOut.Add(int64(n))
	for i, ed := range o.edges {
		eb := b
		if i < len(o.edges)-1 {
			eb.Rec.Retain() // every edge but the last takes its own reference
		}
		if err := o.emitEdge(ed, eb); err != nil {
			return err
		}
	}
	return nil
}

func (o *output) emitEdge(ed *outEdge, b Batch) error {
	switch ed.exchange.Kind {
	case Forward:
		return o.send(ed.chans[0], BatchElement(b))
	case Rebalance:
		ch := ed.chans[ed.rr%len(ed.chans)]
		ed.rr++
		return o.send(ch, BatchElement(b))
	case Broadcast:
		for i, ch := range ed.chans {
			if i < len(ed.chans)-1 {
				b.Rec.Retain()
			}
			if err := o.send(ch, BatchElement(b)); err != nil {
				return err
			}
		}
		return nil
	case Hash:
		return o.emitHash(ed, b)
	}
	b.Release()
	return fmt.Errorf("unknown exchange %v", ed.exchange)
}

func (o *output) emitHash(ed *outEdge, b Batch) error {
	p := len(ed.chans)
	if p == 1 {
		return o.send(ed.chans[0], BatchElement(b))
	}
	var err error
	ed.hashes, err = HashKeys(b.Rec, ed.exchange.Keys, ed.hashes)
	if err != nil {
		b.Release()
		return err
	}
	if ed.targets == nil {
		ed.targets = make([][]int32, p)
		ed.owner = make([]uint16, ed.keyGroups)
		for kg := range ed.owner {
			ed.owner[kg] = uint16(state.SubtaskOf(kg, ed.keyGroups, p))
		}
	}
	n := b.Rows()
	if n > 0 && allEqual(ed.hashes) {
		// One key over the whole batch (a day, a window): one key group, the whole batch to its owner.
		kg := state.KeyGroupOf(ed.hashes[0], ed.keyGroups)
		kgs := make([]uint16, n)
		for i := range kgs {
			kgs[i] = uint16(kg)
		}
		return o.send(ed.chans[ed.owner[kg]], BatchElement(b.WithKeyGroups(kgs, ed.exchange.Keys)))
	}
	for t := range ed.targets {
		if cap(ed.targets[t]) < n { // room for every row: the loop below never grows a vector
			ed.targets[t] = make([]int32, 0, n)
		}
		ed.targets[t] = ed.targets[t][:0]
	}
	if cap(ed.kgs) < n {
		ed.kgs = make([]uint16, n)
	}
	kgs := ed.kgs[:n]
	if g := ed.keyGroups; g&(g-1) == 0 {
		// A power of two (the default 128): the key group is the hash's low bits, as state.KeyGroupOf's modulo
		// gives them, without a division per row.
		mask := uint64(g - 1)
		owner := ed.owner[:mask+1]
		for row, h := range ed.hashes {
			kg := h & mask
			kgs[row] = uint16(kg)
			t := owner[kg]
			ed.targets[t] = append(ed.targets[t], int32(row))
		}
	} else {
		for row, h := range ed.hashes {
			kg := state.KeyGroupOf(h, ed.keyGroups)
			kgs[row] = uint16(kg)
			t := ed.owner[kg]
			ed.targets[t] = append(ed.targets[t], int32(row))
		}
	}
	// Each part carries its rows' key groups: the keyed operator it goes to takes them (BatchKeyGroups) instead
	// of hashing the same keys again.
	for t, rows := range ed.targets {
		if len(rows) == n { // the whole batch goes to one subtask: no copy
			return o.send(ed.chans[t], BatchElement(b.WithKeyGroups(slices.Clone(kgs), ed.exchange.Keys)))
		}
	}
	defer b.Release()
	for t, rows := range ed.targets {
		if len(rows) == 0 {
			continue
		}
		alloc := o.alloc
		if pool := ed.chans[t].parts; pool != nil {
			alloc = pool
		}
		part, err := TakeRows(o.ctx, alloc, b, rows)
		if err != nil {
			return err
		}
		pk := make([]uint16, len(rows))
		for i, r := range rows {
			pk[i] = kgs[r]
		}
		if err := o.send(ed.chans[t], BatchElement(part.WithKeyGroups(pk, ed.exchange.Keys))); err != nil {
			return err
		}
	}
	return nil
}

// allEqual reports whether every hash of hs is hs[0].
func allEqual(hs []uint64) bool {
	for _, h := range hs[1:] {
		if h != hs[0] {
			return false
		}
	}
	return true
}
