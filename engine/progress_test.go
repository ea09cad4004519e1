package engine

import (
	"testing"

	"github.com/clinksql/clinksql/exec"
)

// Pins: a progress line counting other nodes' rows as read, claiming a total or a lag that a source does not know,
// or leaving out the one every source knows.
func TestProgressLine(t *testing.T) {
	src := func(rows int64, rate float64, lag, total int64) exec.SubtaskStats {
		return exec.SubtaskStats{Kind: exec.SourceNode, RowsOut: rows, RowsOutPerSec: rate, LagRecords: lag, LagBytes: -1, Total: total}
	}
	op := exec.SubtaskStats{Kind: exec.OperatorNode, RowsIn: 900, RowsOut: 900, RowsOutPerSec: 1e6, LagRecords: -1, Total: -1}
	for _, tc := range []struct {
		subtasks []exec.SubtaskStats
		want     string
	}{
		{[]exec.SubtaskStats{src(600, 100, 400, 1000), src(500, 150.4, 500, 1000), op}, "job-3: 1100 rows read (250 rows/s) of 2000"},
		{[]exec.SubtaskStats{src(600, 100, 30, -1), src(500, 150, 0, -1), op}, "job-3: 1100 rows read (250 rows/s), 30 records behind"},
		{[]exec.SubtaskStats{src(600, 100, 30, 1000), src(500, 150, -1, -1), op}, "job-3: 1100 rows read (250 rows/s)"},
		{[]exec.SubtaskStats{op}, "job-3: 0 rows read (0 rows/s)"}, // no source figures: no "of 0"
	} {
		if got := Progress("job-3", tc.subtasks); got != tc.want {
			t.Errorf("Progress = %q, want %q", got, tc.want)
		}
	}
}
