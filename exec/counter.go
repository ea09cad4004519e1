package exec

import "sync/atomic"

// Counter is a monotonically increasing count read by other goroutines (rows in/out, late rows, bad values).
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
