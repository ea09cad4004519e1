package planner

import (
	"strings"
	"testing"

	"github.com/clinksql/clinksql/exec"
)

// TestDeliveryNotices checks the delivery-guarantee analysis on plan shapes: one transactional sink over
// replayable sources says nothing; two transactional sinks, or a source without offset replay, get a notice
// that names them.
func TestDeliveryNotices(t *testing.T) {
	src := &PNode{Kind: exec.SourceNode, Label: "Source: stream bid"}
	sink := func(name string, txn bool) *PNode {
		return &PNode{Kind: exec.SinkNode, Label: "Sink: sink " + name, transactional: txn}
	}
	if got := deliveryNotices([]*PNode{src, sink("a", true)}); len(got) != 0 {
		t.Fatalf("one transactional sink: %q", got)
	}
	if got := deliveryNotices([]*PNode{src, sink("a", true), sink("b", false)}); len(got) != 0 {
		t.Fatalf("a transactional sink and a blackhole: %q", got)
	}
	got := deliveryNotices([]*PNode{src, sink("a", true), sink("b", true)})
	if len(got) != 1 || !strings.Contains(got[0], "sink a, sink b") || !strings.Contains(got[0], "not atomically") ||
		!strings.Contains(got[0], "no commit group") {
		t.Fatalf("two transactional sinks: %q", got)
	}
	noReplay := &PNode{Kind: exec.SourceNode, Label: "Source: stream feed", noReplay: true}
	got = deliveryNotices([]*PNode{src, noReplay, sink("a", true)})
	if len(got) != 1 || !strings.Contains(got[0], "at-least-once") || !strings.Contains(got[0], "stream feed") {
		t.Fatalf("a source without replay: %q", got)
	}
}
