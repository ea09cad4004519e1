package exec

import "sync/atomic"

// Counter is a count read by other goroutines (rows in/out, late rows, bad values); it only grows, except that a
// job rewinds its counts to the restored checkpoint's at each deploy (Store). A subtask's counter has its job's
// as parent, so the job's total follows and the subtask can stage its own share with each checkpoint.
type Counter struct {
	n      atomic.Int64
	parent *Counter
}

// Add adds d, to the parent too.
func (c *Counter) Add(d int64) {
	for ; c != nil; c = c.parent {
		c.n.Add(d)
	}
}

// Load returns the count.
func (c *Counter) Load() int64 {
	if c == nil {
		return 0
	}
	return c.n.Load()
}

// Store sets the count.
func (c *Counter) Store(v int64) { c.n.Store(v) }
