package file

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/clinksql/clinksql/connectors"
	"github.com/clinksql/clinksql/connectors/connectortest"
	"github.com/clinksql/clinksql/connectors/parquet"
	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/sqlerr"
)

// refuseGuard refuses every path once set: a link swapped in after the statement was checked.
func refuseGuard(refuse *atomic.Bool) connectors.PathGuard {
	return func(p string) error {
		if refuse.Load() {
			return sqlerr.New(sqlerr.InsufficientPriv, sqlerr.NoPos, "path %q refused", p)
		}
		return nil
	}
}

// Pins (issue 11, item 3): the file connectors consult their guard when they open a file or create one, not only
// when the statement was checked: a sink's next file and its commit, a source's next file.
func TestConnectorGuardAtOpenTime(t *testing.T) {
	mem := connectortest.CheckedAlloc(t)
	var refuse atomic.Bool

	dir := t.TempDir()
	sink := NewSink(SinkConfig{Path: dir, Format: "csv", Schema: connectortest.KVSchema, Guard: refuseGuard(&refuse)})
	connectortest.Must(t, sink.Open(connectortest.NewTask(mem, connectortest.TaskOpts{})))
	connectortest.Must(t, sink.Write(connectortest.KVBatch(mem, 1)))
	connectortest.Must(t, sink.PreCommit(1))
	refuse.Store(true)
	if err := sink.Commit(1); sqlerr.Code(err) != sqlerr.InsufficientPriv {
		t.Errorf("commit through a refused path: %v", err)
	}
	if got := connectortest.CommittedFiles(t, dir); len(got) != 0 {
		t.Errorf("committed %v through a refused path", got)
	}
	if err := sink.Write(connectortest.KVBatch(mem, 2)); sqlerr.Code(err) != sqlerr.InsufficientPriv {
		t.Errorf("a new file under a refused path: %v", err)
	}
	connectortest.Must(t, sink.Close())
	if err := parquet.NewSink(parquet.SinkConfig{Path: dir, Schema: connectortest.KVSchema, Guard: refuseGuard(&refuse)}).
		Open(connectortest.NewTask(mem, connectortest.TaskOpts{})); sqlerr.Code(err) != sqlerr.InsufficientPriv {
		t.Errorf("parquet sink Open under a refused path: %v", err)
	}

	refuse.Store(false)
	src := t.TempDir()
	writeFile(t, filepath.Join(src, "a.csv"), "1\n")
	writeFile(t, filepath.Join(src, "b.csv"), "2\n")
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)
	cfg := SourceConfig{Path: src, Format: "csv", Schema: schema, Guard: refuseGuard(&refuse)}
	s := openFS(t, cfg, newFSTask(mem, 0, 1), nil)
	res, err := s.Produce(context.Background())
	connectortest.Must(t, err)
	if res.Status != exec.Produced {
		t.Fatalf("status %d", res.Status)
	}
	res.Batch.Release()
	refuse.Store(true) // b.csv was listed; it is refused when it is opened
	for {
		res, err = s.Produce(context.Background())
		if err != nil || res.Status != exec.Produced {
			break
		}
		res.Batch.Release()
	}
	if sqlerr.Code(err) != sqlerr.InsufficientPriv {
		t.Errorf("source: status %d, %v", res.Status, err)
	}
	connectortest.Must(t, s.Close())
}
