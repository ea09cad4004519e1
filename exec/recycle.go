package exec

import (
	"math/bits"
	"sync"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// InputCopier is implemented by an operator whose Process copies whatever it keeps of an input batch: once
// Process has returned and the batch is released, nothing of the operator refers to the batch's buffers (no
// string from a String array's Value, no slice of a value buffer). A hash exchange into it recycles the buffers of
// the parts it gathers (partPool). An operator that may keep such a reference must not implement it: a recycled
// buffer is overwritten by the next part.
type InputCopier interface {
	CopiesInput()
}

// partPool recycles the buffers of the parts a hash exchange gathers for one downstream subtask (one channel):
// the producer allocates them (exec.TakeRows' gathers), the consumer's release of the part hands them back
// (memory.Buffer.Release calls Free), and the producer's next part takes them again. Without it, every part was
// new memory: at parallelism 2 the Top-N queries (Nexmark q18, q19) gathered their whole input again, the heap
// grew by as much, and faulting those pages in cost more than the copies (q18: 0.4 of 5.6 CPU-seconds).
//
// Buffers are power-of-two classes from 64 bytes to 16 MiB, uncleared (the gathers write every byte; newBuf
// clears the bitmaps that need it), taken from the job's allocator (from Go's without its clearing, as newBuf
// does). It holds at most partPoolMaxBytes of free buffers, hands the rest back to that allocator, and all of them
// when the job's incarnation ends (drain), so a counting allocator's books balance. On a counting allocator (the
// tests') it fills each buffer it takes back with 0x5a: a consumer that read a part after releasing it reads
// garbage, and its test fails. Free may run on any goroutine.
type partPool struct {
	base   memory.Allocator
	poison bool
	mu     sync.Mutex
	free   [partPoolClasses][][]byte
	bytes  int // held in free
}

func newPartPool(base memory.Allocator) *partPool {
	_, goAlloc := base.(*memory.GoAllocator)
	return &partPool{base: base, poison: !goAlloc}
}

// fresh is n bytes the pool has not had before.
func (p *partPool) fresh(n int) []byte {
	if !p.poison {
		return noZeroAlloc{}.Allocate(n)
	}
	return p.base.Allocate(n)
}

const (
	partPoolMinClass = 6  // 64 bytes
	partPoolClasses  = 25 // up to 16 MiB
	partPoolMaxBytes = 16 << 20
)

func partClass(n int) int { return max(bits.Len(uint(n-1)), partPoolMinClass) }

func (p *partPool) Allocate(size int) []byte {
	c := partClass(max(size, 1))
	if c >= partPoolClasses {
		return p.fresh(size)
	}
	p.mu.Lock()
	if l := len(p.free[c]); l > 0 {
		b := p.free[c][l-1]
		p.free[c][l-1] = nil
		p.free[c] = p.free[c][:l-1]
		p.bytes -= len(b)
		p.mu.Unlock()
		return b[:size]
	}
	p.mu.Unlock()
	return p.fresh(1 << c)[:size]
}

func (p *partPool) Reallocate(size int, b []byte) []byte {
	if cap(b) >= size {
		return b[:size]
	}
	nb := p.Allocate(size)
	copy(nb, b)
	p.Free(b)
	return nb
}

// Free takes back a buffer of Allocate; one over the pool's budget, or of no class, goes back to the allocator.
func (p *partPool) Free(b []byte) {
	n := cap(b)
	c := partClass(max(n, 1))
	if n != 1<<c || c >= partPoolClasses {
		p.base.Free(b)
		return
	}
	b = b[:n]
	if p.poison {
		for i := range b {
			b[i] = 0x5a
		}
	}
	p.mu.Lock()
	if p.bytes+n > partPoolMaxBytes {
		p.mu.Unlock()
		p.base.Free(b)
		return
	}
	p.free[c] = append(p.free[c], b)
	p.bytes += n
	p.mu.Unlock()
}

// drain hands every free buffer back to the allocator (the incarnation ended: no part is left to release).
func (p *partPool) drain() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.free {
		for _, b := range p.free[c] {
			p.base.Free(b)
		}
		p.free[c] = nil
	}
	p.bytes = 0
}

var _ memory.Allocator = (*partPool)(nil)
