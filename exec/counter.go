package exec

import "sync/atomic"

// Counter is a count read by other goroutines (rows in/out, late rows, bad values); it only grows, except that a
// job rewinds its row counts to the restored checkpoint's at each deploy (Store).
type Counter struct{ n atomic.Int64 }

// Add adds d.
func (c *Counter) Add(d int64) {
	if c != nil {
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
