package gctune

import (
	"math"
	"runtime/debug"
	"testing"

	"github.com/clinksql/clinksql/internal/sysmem"
)

// restoreGC puts back the collector settings a test changed.
func restoreGC(t *testing.T) {
	percent, limit := debug.SetGCPercent(100), debug.SetMemoryLimit(math.MaxInt64)
	t.Cleanup(func() {
		debug.SetGCPercent(percent)
		debug.SetMemoryLimit(limit)
	})
}

func TestTuneGCSetsDefaults(t *testing.T) {
	restoreGC(t)
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	Apply()
	if got := debug.SetGCPercent(100); got != gcPercent {
		t.Errorf("GOGC after Apply = %d, want %d", got, gcPercent)
	}
	total := sysmem.Total()
	if total <= 0 {
		t.Fatal("sysmem.Total found no memory on this machine")
	}
	if got, want := debug.SetMemoryLimit(-1), int64(float64(total)*memoryLimitShare); got != want {
		t.Errorf("memory limit after Apply = %d, want %d (%.0f%% of %d)", got, want, memoryLimitShare*100, total)
	}
}

func TestTuneGCLeavesTheUsersChoice(t *testing.T) {
	restoreGC(t)
	t.Setenv("GOGC", "150")
	t.Setenv("GOMEMLIMIT", "1GiB")
	debug.SetGCPercent(150) // what the runtime did at start from the environment
	debug.SetMemoryLimit(1 << 30)
	Apply()
	if got := debug.SetGCPercent(100); got != 150 {
		t.Errorf("GOGC after Apply = %d, want the environment's 150", got)
	}
	if got := debug.SetMemoryLimit(-1); got != 1<<30 {
		t.Errorf("memory limit after Apply = %d, want the environment's 1GiB", got)
	}
}
