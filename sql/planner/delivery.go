package planner

import (
	"fmt"
	"strings"

	"github.com/clinksql/clinksql/exec"
)

// deliveryNotices is the delivery-guarantee analysis of a job's plan (the seed's commit-group paragraph): what a
// job really guarantees end to end, said as NOTICEs when it is less than one exactly-once result.
//
//   - A source that cannot replay from a checkpoint's offset makes the job at-least-once: after a restart it
//     starts over (or loses what it had read), whatever the sinks do.
//   - Two or more transactional sinks are each exactly-once, but nothing commits them together: every sink
//     commits checkpoint N on its own once N completed, so a reader can see N's rows in one sink before the
//     other, and a crash between the two commits leaves one of them behind until recovery commits it. There is
//     no commit group that would change this, so the notice is given whatever the sinks are.
func deliveryNotices(nodes []*PNode) []string {
	var sinks, noReplay, noRowTime []string
	for _, n := range nodes {
		if n.Kind == exec.SinkNode && n.commitNotRecoverable && !n.hasRowTime {
			noRowTime = append(noRowTime, strings.TrimPrefix(n.Label, "Sink: "))
		}
		switch {
		case n.Kind == exec.SinkNode && n.transactional:
			sinks = append(sinks, strings.TrimPrefix(n.Label, "Sink: "))
		case n.Kind == exec.SourceNode && n.noReplay:
			noReplay = append(noReplay, strings.TrimPrefix(n.Label, "Source: "))
		}
	}
	var out []string
	if len(noReplay) > 0 {
		out = append(out, fmt.Sprintf("delivery guarantee: at-least-once, not exactly-once: %s cannot replay from a checkpoint's offset, so after a failure the job reads it again from the start",
			strings.Join(noReplay, ", ")))
	}
	if len(noRowTime) > 0 {
		out = append(out, fmt.Sprintf("replay suppression: the rows %s receives are not fired by the watermark (no window_end of a window aggregate or window join reaches it as a plain column), so a restore that must fall back below a checkpoint another subtask already committed (a transaction the broker aborted) fails instead of writing rows twice (docs/checkpointing.md)",
			strings.Join(noRowTime, ", ")))
	}
	if len(sinks) > 1 {
		out = append(out, fmt.Sprintf("delivery guarantee: each of the %d transactional sinks (%s) is exactly-once, but they commit one after another, not atomically: a reader can see a checkpoint's rows in one before the others (there is no commit group that would change this)",
			len(sinks), strings.Join(sinks, ", ")))
	}
	return out
}
