// Package gctune sets the Go collector for a process that runs the engine (the clinksql binary, and benchmark
// drivers that run the engine in their own process, so that their figures are the binary's). It owns the two
// defaults below and must never override what the environment sets (GOGC, GOMEMLIMIT).
package gctune

import (
	"os"
	"runtime/debug"

	"github.com/clinksql/clinksql/internal/sysmem"
)

// gcPercent is the Go collector's GOGC for the engine's process when the environment does not set one. A streaming
// job allocates a batch's buffers, builders and state entries at a high rate and keeps a small live heap beside
// them, so at Go's default of 100 the collector runs every few megabytes of allocation: in the Nexmark runs it was
// 15-22% of all CPU (q18, q19). 400 lets the heap grow to five times what is live between collections: q4 and q5
// used 5-10% less CPU per event, q18 15% less (measured back to back, 1M and 5M events). The soft memory limit
// below keeps that growth from taking the machine.
const gcPercent = 400

// memoryLimitShare is the part of the machine's memory the Go heap may grow to before the collector runs regardless
// of gcPercent (Go's soft limit, GOMEMLIMIT). The rest is for Pebble's caches outside the Go heap, the page cache
// and other processes.
const memoryLimitShare = 0.6

// Apply sets the collector for a streaming engine unless the user chose: GOGC and GOMEMLIMIT in the environment
// win (Go has applied them already), so an operator can always go back to Go's defaults with GOGC=100 GOMEMLIMIT=off.
func Apply() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		if total := sysmem.Total(); total > 0 {
			debug.SetMemoryLimit(int64(float64(total) * memoryLimitShare))
		}
	}
}
