package exec_test

import (
	"testing"

	"github.com/clinksql/clinksql/exec"
)

// A subtask's share of its operator's working set bound is the bound over the parallelism, never below the floor
// nor above the bound.
func TestWorkingSetShare(t *testing.T) {
	for _, c := range []struct{ bound, floor, par, want int }{
		{1 << 19, 4096, 1, 1 << 19},
		{1 << 19, 4096, 2, 1 << 18},
		{1 << 19, 4096, 3, (1 << 19) / 3},
		{1 << 19, 4096, 256, 4096},
		{2, 4096, 2, 2}, // a bound below the floor (a test's) stays whole
		{1 << 19, 4096, 0, 1 << 19},
	} {
		if got := exec.WorkingSetShare(&exec.TaskContext{Parallelism: c.par}, c.bound, c.floor); got != c.want {
			t.Errorf("share of %d (floor %d) at parallelism %d = %d, want %d", c.bound, c.floor, c.par, got, c.want)
		}
	}
}
