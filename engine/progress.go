package engine

import (
	"fmt"
	"strings"
	"time"

	"github.com/clinksql/clinksql/exec"
)

// DefaultProgressInterval is how long FLUSH and WaitBounded wait before their first progress notice, and between
// notices (Config.ProgressInterval).
const DefaultProgressInterval = 5 * time.Second

func (e *Engine) progressInterval() time.Duration {
	if e.cfg.ProgressInterval > 0 {
		return e.cfg.ProgressInterval
	}
	return DefaultProgressInterval
}

// SetNoticeHandler has the session hand the notices it gives while a statement runs (FLUSH's progress) to h as
// they come, from the statement's goroutine (pgwire sends each as a NoticeResponse at once; the REPL and exec print
// them). Without a handler there are none: a statement's own notices are in its Result.Notices either way.
func (s *Session) SetNoticeHandler(h func(msg string)) { s.notice = h }

// Progress describes how far a job's sources are: "job-3: 1200000 rows read (250000 rows/s) of 5000000" where the
// sources know their total, ", 3000 records behind" where they know their lag.
func Progress(id string, subtasks []exec.SubtaskStats) string {
	var read, total, lag int64
	var rate float64
	sources := 0
	knowTotal, knowLag := true, true
	for _, st := range subtasks {
		if st.Kind != exec.SourceNode {
			continue
		}
		sources++
		read += st.RowsOut
		rate += st.RowsOutPerSec
		if st.Total < 0 {
			knowTotal = false
		}
		total += st.Total
		if st.LagRecords < 0 {
			knowLag = false
		}
		lag += st.LagRecords
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d rows read (%.0f rows/s)", id, read, rate)
	switch {
	case sources == 0: // no figures yet (a job between deployments): neither a total nor a lag is known
	case knowTotal:
		fmt.Fprintf(&b, " of %d", total)
	case knowLag:
		fmt.Fprintf(&b, ", %d records behind", lag)
	}
	return b.String()
}

// waitReporting runs wait (a wait for job j) and, every progress interval until it returns, notifies j's progress
// from the calling goroutine. A nil notify just waits.
func (e *Engine) waitReporting(j *runningJob, notify func(string), wait func() error) error {
	if notify == nil {
		return wait()
	}
	done := make(chan error, 1)
	go func() { done <- wait() }()
	t := time.NewTicker(e.progressInterval())
	defer t.Stop()
	for {
		select {
		case err := <-done:
			return err
		case <-t.C:
			notify(Progress(j.spec.ID, j.job.Subtasks()))
		}
	}
}
