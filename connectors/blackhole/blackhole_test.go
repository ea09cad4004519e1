package blackhole

import (
	"testing"

	"github.com/clinksql/clinksql/connectors/connectortest"
	"github.com/clinksql/clinksql/exec"
)

// Pins: the blackhole sink holding on to batches (a leak under the checked allocator) or miscounting.
func TestBlackhole(t *testing.T) {
	mem := connectortest.CheckedAlloc(t)
	must := connectortest.Must
	var s exec.Sink = New()
	must(t, s.Open(connectortest.NewTask(mem, connectortest.TaskOpts{})))
	must(t, s.Write(connectortest.KVBatch(mem, 1, 2, 3)))
	must(t, s.PreCommit(1))
	must(t, s.Commit(1))
	must(t, s.Abort(2))
	must(t, s.Close())
	if n := s.(*Sink).Rows(); n != 3 {
		t.Fatalf("%d rows", n)
	}
}
