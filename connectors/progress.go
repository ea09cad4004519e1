package connectors

import "sync/atomic"

// ReadProgress holds what a source reports as exec.SourceProgress: the source's goroutine sets it (Set) as it reads,
// other goroutines read it (Progress). Its zero value reports everything unknown (-1), so a source that embeds it
// reports nothing until it knows. Values are kept plus one so that the zero value means -1.
type ReadProgress struct{ lag, lagBytes, total atomic.Int64 }

// Set records the records and bytes behind the end of the input and the input's total rows, -1 for unknown.
func (p *ReadProgress) Set(lagRecords, lagBytes, total int64) {
	p.lag.Store(max(lagRecords, -1) + 1)
	p.lagBytes.Store(max(lagBytes, -1) + 1)
	p.total.Store(max(total, -1) + 1)
}

// Progress implements exec.SourceProgress.
func (p *ReadProgress) Progress() (lagRecords, lagBytes, total int64) {
	return p.lag.Load() - 1, p.lagBytes.Load() - 1, p.total.Load() - 1
}

// Committed counts the bytes a sink's commits published (exec.SinkProgress): Add from the committing goroutine,
// CommittedBytes from any.
type Committed struct{ n atomic.Int64 }

// Add counts n more bytes published.
func (c *Committed) Add(n int64) { c.n.Add(n) }

// CommittedBytes implements exec.SinkProgress.
func (c *Committed) CommittedBytes() int64 { return c.n.Load() }

// StridedRest sums what is left of a subtask's share of n items when it takes items i, i+stride, ... (the file
// sources' split): rest[i] is the sum of size(j) over j = i, i+stride, ... below n, -1 when one of them is (not
// known). rest has n+stride elements, those from n on 0, so rest[next] is what is left when next has run past n.
func StridedRest(n, stride int, size func(i int) int64) []int64 {
	rest := make([]int64, n+stride)
	for i := n - 1; i >= 0; i-- {
		if sz, after := size(i), rest[i+stride]; sz < 0 || after < 0 {
			rest[i] = -1
		} else {
			rest[i] = sz + after
		}
	}
	return rest
}
