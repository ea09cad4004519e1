package state

import (
	"encoding/binary"
	"fmt"
)

// timerPrefix is where TimerService.Flush keeps timers in a backend: operator state under a name reserved for this
// package, then per timer the key group (2 bytes), the timestamp (8 bytes, sign bit flipped so bytes sort like
// int64s) and the key. The key group comes first so a rescaling restore can split timers by key-group range.
var timerPrefix = OperatorKey("\x00timers/")

// timerID is a timer's identity: its timestamp (8 bytes, big endian, sign bit flipped) then its key, so that byte
// order is (ts, key) order and a lookup can build it in a reused buffer without allocating.
type timerID string

func appendTimerID(buf []byte, ts int64, key []byte) []byte {
	return append(binary.BigEndian.AppendUint64(buf, uint64(ts)^(1<<63)), key...)
}

func (id timerID) ts() int64 {
	var u uint64
	for i := 0; i < 8; i++ {
		u = u<<8 | uint64(id[i])
	}
	return int64(u ^ (1 << 63))
}

// timerChange is what Flush must do for a timer: put (registered since the last Flush, not in the backend yet) or
// delete (fired or deleted since the last Flush, still in the backend).
type timerChange struct {
	kg  uint16
	put bool
}

// TimerService holds a subtask's event-time timers: at most one per (key, timestamp). Timers live in memory (a
// min-heap with lazy deletion); Flush writes what changed since the previous Flush into the backend, so a
// snapshot captured after Flush holds exactly the timers that had not fired at the barrier, and a restore neither
// fires a timer again nor loses one. One TimerService per backend. Not safe for concurrent use: it belongs to the
// operator goroutine, like the Backend.
type TimerService struct {
	b       Backend
	live    map[timerID]uint16 // timer -> key group
	heap    []timerID          // ordered by (ts, key); may hold timers no longer live
	changed map[timerID]timerChange
	buf     []byte
}

// LoadTimers returns the timer service of b with the timers of its last Flush (none for a fresh backend).
func LoadTimers(b Backend) (*TimerService, error) {
	t := &TimerService{b: b, live: make(map[timerID]uint16), changed: make(map[timerID]timerChange)}
	err := b.Scan(timerPrefix, func(k, _ []byte) error {
		r := k[len(timerPrefix):]
		if len(r) < 10 {
			return fmt.Errorf("state: malformed timer key %x", k)
		}
		id := timerID(r[2:])
		t.live[id] = binary.BigEndian.Uint16(r)
		t.heap = append(t.heap, id)
		return nil
	})
	if err != nil {
		return nil, err
	}
	t.heapify()
	return t, nil
}

// Len is the number of timers not yet fired or deleted.
func (t *TimerService) Len() int { return len(t.live) }

// Register sets a timer for key at ts; registering an existing timer is a no-op. keyGroup must be key's key group.
func (t *TimerService) Register(keyGroup int, key []byte, ts int64) {
	if keyGroup < 0 || keyGroup >= 0xFFFF {
		panic(fmt.Sprintf("state: key group %d out of range", keyGroup))
	}
	t.buf = appendTimerID(t.buf[:0], ts, key)
	if _, ok := t.live[timerID(t.buf)]; ok { // the common case (one timer per key and window): no allocation
		return
	}
	t.add(uint16(keyGroup), timerID(t.buf))
}

// Delete removes the timer for key at ts, if any. The timer keeps the key group it was registered with.
func (t *TimerService) Delete(keyGroup int, key []byte, ts int64) {
	t.buf = appendTimerID(t.buf[:0], ts, key)
	if _, ok := t.live[timerID(t.buf)]; ok {
		t.remove(timerID(t.buf))
	}
}

// AdvanceTo fires, in (ts, key) order, every timer with ts <= wm, each exactly once, including timers that fire
// registers on the way. The key passed to fire is valid only during the call. If fire fails, that timer stays
// registered and AdvanceTo returns the error.
func (t *TimerService) AdvanceTo(wm int64, fire func(key []byte, ts int64) error) error {
	for len(t.heap) > 0 && t.heap[0].ts() <= wm {
		id := t.pop()
		kg, ok := t.live[id]
		if !ok {
			continue // deleted after it was pushed
		}
		t.remove(id)
		if err := fire([]byte(id[8:]), id.ts()); err != nil {
			t.add(kg, id)
			return err
		}
	}
	if len(t.heap) > 2*len(t.live)+64 { // too many deleted timers left in the heap
		t.heap = t.heap[:0]
		for id := range t.live {
			t.heap = append(t.heap, id)
		}
		t.heapify()
	}
	return nil
}

// Flush writes the timer changes since the previous Flush into the backend. Operators call it at each barrier,
// before Capture.
func (t *TimerService) Flush() {
	for id, c := range t.changed {
		if c.put {
			t.b.Put(storageKey(id, c.kg), nil)
		} else {
			t.b.Delete(storageKey(id, c.kg))
		}
	}
	clear(t.changed)
}

func storageKey(id timerID, kg uint16) []byte {
	k := make([]byte, 0, len(timerPrefix)+2+len(id))
	k = append(k, timerPrefix...)
	k = binary.BigEndian.AppendUint16(k, kg)
	return append(k, id...)
}

// add and remove keep changed minimal: a timer added and removed between two Flushes never reaches the backend.
func (t *TimerService) add(kg uint16, id timerID) {
	t.live[id] = kg
	t.push(id)
	if c, ok := t.changed[id]; ok && !c.put {
		delete(t.changed, id) // removed and re-added: the backend already has it
	} else {
		t.changed[id] = timerChange{kg: kg, put: true}
	}
}

func (t *TimerService) remove(id timerID) {
	kg := t.live[id]
	delete(t.live, id)
	if c, ok := t.changed[id]; ok && c.put {
		delete(t.changed, id) // added since the last Flush: the backend never saw it
	} else {
		t.changed[id] = timerChange{kg: kg}
	}
}

func (t *TimerService) push(id timerID) {
	t.heap = append(t.heap, id)
	t.up(len(t.heap) - 1)
}

func (t *TimerService) pop() timerID {
	h := t.heap
	top := h[0]
	n := len(h) - 1
	h[0] = h[n]
	t.heap = h[:n]
	if n > 0 {
		t.down(0)
	}
	return top
}

func (t *TimerService) heapify() {
	for i := len(t.heap)/2 - 1; i >= 0; i-- {
		t.down(i)
	}
}

func (t *TimerService) up(i int) {
	h := t.heap
	for i > 0 {
		p := (i - 1) / 2
		if h[i] >= h[p] {
			return
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

func (t *TimerService) down(i int) {
	h := t.heap
	for {
		c := 2*i + 1
		if c >= len(h) {
			return
		}
		if c+1 < len(h) && h[c+1] < h[c] {
			c++
		}
		if h[c] >= h[i] {
			return
		}
		h[i], h[c] = h[c], h[i]
		i = c
	}
}
