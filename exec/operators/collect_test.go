package operators_test

import (
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"

	"github.com/clinksql/clinksql/connectors/connectortest"
	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/exec/operators"
)

func ids(rows []operators.Row) []int64 {
	var out []int64
	for _, r := range rows {
		out = append(out, r.Values[0].(int64))
	}
	return out
}

// Pins: the collect sink showing rows before their checkpoint committed, committing aborted or later
// transactions, or committing twice.
func TestCollectSinkTwoPhase(t *testing.T) {
	mem := connectortest.CheckedAlloc(t)
	c := operators.NewCollector()
	s := operators.NewCollectSink(c)
	connectortest.Must(t, s.Open(connectortest.NewTask(mem, connectortest.TaskOpts{})))
	connectortest.Must(t, s.Write(connectortest.KVBatch(mem, 1, 2)))
	connectortest.Must(t, s.PreCommit(1))
	if len(c.Rows()) != 0 || c.Staged() != 1 {
		t.Fatalf("after PreCommit: %d rows visible, %d staged", len(c.Rows()), c.Staged())
	}
	connectortest.Must(t, s.Write(connectortest.KVBatch(mem, 3)))
	connectortest.Must(t, s.PreCommit(2))
	connectortest.Must(t, s.Write(connectortest.KVBatch(mem, 4)))
	connectortest.Must(t, s.PreCommit(3))
	connectortest.Must(t, s.Abort(2))
	connectortest.Must(t, s.Abort(2))
	connectortest.Must(t, s.Commit(2)) // commits 1; 2 was aborted; 3 is later
	connectortest.Must(t, s.Commit(2))
	if got := ids(c.Rows()); !reflect.DeepEqual(got, []int64{1, 2}) {
		t.Fatalf("committed %v, want [1 2]", got)
	}
	connectortest.Must(t, s.Commit(3))
	if got := ids(c.RowsAt(3)); !reflect.DeepEqual(got, []int64{4}) {
		t.Fatalf("checkpoint 3 holds %v", got)
	}
	if c.Commits() != 2 || c.Staged() != 0 {
		t.Fatalf("%d commits, %d staged", c.Commits(), c.Staged())
	}
	if !reflect.DeepEqual(c.Checkpoints(), []uint64{1, 3}) {
		t.Fatalf("checkpoints %v", c.Checkpoints())
	}
	connectortest.Must(t, s.Close())
}

// Pins: a restarted job's collect sink losing a transaction whose checkpoint completed before the crash, or
// publishing one whose checkpoint did not.
func TestCollectSinkRecoveryAtOpen(t *testing.T) {
	mem := connectortest.CheckedAlloc(t)
	c := operators.NewCollector()
	a := operators.NewCollectSink(c)
	connectortest.Must(t, a.Open(connectortest.NewTask(mem, connectortest.TaskOpts{})))
	for id := uint64(1); id <= 3; id++ {
		connectortest.Must(t, a.Write(connectortest.KVBatch(mem, int64(id))))
		connectortest.Must(t, a.PreCommit(id))
	}
	connectortest.Must(t, a.Write(connectortest.KVBatch(mem, 99))) // open transaction: lost with the process
	b := operators.NewCollectSink(c)
	connectortest.Must(t, b.Open(connectortest.NewTask(mem, connectortest.TaskOpts{Completed: map[uint64]bool{2: true}})))
	if got := ids(c.Rows()); !reflect.DeepEqual(got, []int64{2}) || c.Staged() != 0 {
		t.Fatalf("after recovery: %v committed, %d staged", got, c.Staged())
	}
	connectortest.Must(t, b.Close())
}

// Pins: rows converted to the wrong Go values, or row kinds lost (the collect sink serves updating queries).
func TestCollectSinkValuesAndKinds(t *testing.T) {
	mem := connectortest.CheckedAlloc(t)
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Millisecond}, Nullable: true},
		{Name: "d", Type: &arrow.Decimal128Type{Precision: 4, Scale: 1}, Nullable: true},
		{Name: "b", Type: arrow.BinaryTypes.Binary, Nullable: true},
	}, nil)
	bld := array.NewRecordBuilder(mem, schema)
	bld.Field(0).(*array.TimestampBuilder).Append(1500)
	bld.Field(0).AppendNull()
	bld.Field(1).(*array.Decimal128Builder).AppendNull()
	bld.Field(1).(*array.Decimal128Builder).Append(decimal128.FromI64(-15))
	bld.Field(2).(*array.BinaryBuilder).Append([]byte{1, 2})
	bld.Field(2).AppendNull()
	rec := bld.NewRecordBatch()
	bld.Release()
	c := operators.NewCollector()
	s := operators.NewCollectSink(c)
	connectortest.Must(t, s.Open(connectortest.NewTask(mem, connectortest.TaskOpts{})))
	connectortest.Must(t, s.Write(exec.Batch{Rec: rec, Kinds: []exec.RowKind{exec.UpdateBefore, exec.Delete}}))
	connectortest.Must(t, s.PreCommit(1))
	connectortest.Must(t, s.Commit(1))
	want := []operators.Row{
		{Kind: exec.UpdateBefore, Values: []any{time.UnixMilli(1500).UTC(), nil, []byte{1, 2}}},
		{Kind: exec.Delete, Values: []any{nil, "-1.5", nil}},
	}
	if got := c.Rows(); !reflect.DeepEqual(got, want) {
		t.Fatalf("rows %v, want %v", got, want)
	}
	connectortest.Must(t, s.Close())
}

// Pins: collect-sink commits from the coordinator goroutine racing with writes (run with -race).
func TestCollectSinkConcurrentCommit(t *testing.T) {
	mem := connectortest.CheckedAlloc(t)
	c := operators.NewCollector()
	s := operators.NewCollectSink(c)
	connectortest.Must(t, s.Open(connectortest.NewTask(mem, connectortest.TaskOpts{})))
	ids := make(chan uint64, 8)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for id := range ids {
			connectortest.Must(t, s.Commit(id))
		}
	}()
	for id := uint64(1); id <= 50; id++ {
		connectortest.Must(t, s.Write(connectortest.KVBatch(mem, int64(id))))
		connectortest.Must(t, s.PreCommit(id))
		ids <- id
	}
	close(ids)
	wg.Wait()
	if n := len(c.Rows()); n != 50 {
		t.Fatalf("%d rows committed, want 50", n)
	}
}
