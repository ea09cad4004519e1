// Package gen holds what the generating sources (datagen, nexmark) share: the splitmix64 hash every value they
// make is a pure function of, the throttle's wait, and how they report their progress. It keeps no state.
package gen

import (
	"context"
	"math"
	"time"

	"github.com/clinksql/clinksql/connectors"
)

// The generators' hash: splitmix64. Row r of a column with key k hashes to Mix64(k + r*Gamma), the r-th output of
// a splitmix64 stream seeded with k, computed directly instead of by stepping a state.
const (
	Gamma  = 0x9E3779B97F4A7C15
	Gamma2 = 0xD1B54A32D192ED03 // a second odd constant, for the extra words of long strings
)

// Mix64 is splitmix64's finalizer.
func Mix64(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
	z = (z ^ (z >> 27)) * 0x94D049BB133111EB
	return z ^ (z >> 31)
}

// MaxThrottleWait bounds one Produce call's sleep, so that a slow rate still lets the runtime inject barriers
// between Produce calls.
const MaxThrottleWait = 100 * time.Millisecond

// Sleep sleeps for d and reports whether it was not interrupted by ctx.
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// Report sets a generator's progress: of its localRows rows (math.MaxUint64 when unbounded: nothing known), next
// were produced.
func Report(p *connectors.ReadProgress, next, localRows uint64) {
	if localRows == math.MaxUint64 {
		p.Set(-1, -1, -1)
		return
	}
	p.Set(int64(localRows-min(next, localRows)), -1, int64(localRows))
}
