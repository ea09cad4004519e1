package parquet

import (
	"errors"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/parquet-go/parquet-go"

	"github.com/clinksql/clinksql/connectors/connectortest"
	"github.com/clinksql/clinksql/connectors/txnfile"
	"github.com/clinksql/clinksql/exec"
)

// (id BIGINT, dt DATE, s VARCHAR) partitioned by dt: the files hold id and s.
var partSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "dt", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

func partBatch(mem memory.Allocator, days []arrow.Date32, ids ...int64) exec.Batch {
	b := array.NewRecordBuilder(mem, partSchema)
	defer b.Release()
	for i, id := range ids {
		b.Field(0).(*array.Int64Builder).Append(id)
		b.Field(1).(*array.Date32Builder).Append(days[i])
		b.Field(2).(*array.StringBuilder).Append("v" + string(rune('a'+id)))
	}
	return exec.Batch{Rec: b.NewRecordBatch()}
}

// readIDs opens a committed file with parquet-go, checks its columns are id and s (no partition column), and
// returns its ids.
func readIDs(t *testing.T, path string) []int64 {
	t.Helper()
	pf := openPQFile(t, path)
	var names []string
	for _, fl := range pf.Schema().Fields() {
		names = append(names, fl.Name())
	}
	if !slices.Equal(names, []string{"id", "s"}) {
		t.Fatalf("%s: columns %v, want [id s]", path, names)
	}
	var ids []int64
	for _, rg := range pf.RowGroups() {
		rr := parquet.NewRowGroupReader(rg)
		buf := make([]parquet.Row, 16)
		for {
			n, err := rr.ReadRows(buf)
			for _, row := range buf[:n] {
				id := row[0].Int64()
				if want := "v" + string(rune('a'+id)); row[1].String() != want {
					t.Fatalf("%s: row %d has s %q, want %q", path, id, row[1].String(), want)
				}
				ids = append(ids, id)
			}
			if errors.Is(err, io.EOF) {
				break
			}
			connectortest.Must(t, err)
		}
		rr.Close()
	}
	return ids
}

// Pins: partitioned Parquet files that parquet-go cannot read (a file finished early, when the bound on open
// partitions closed it, without its footer), files holding the partition column, rows in the wrong partition,
// or a DATE partition not named in its text form.
func TestPartitionedParquetFilesReadable(t *testing.T) {
	mem := connectortest.CheckedAlloc(t)
	dir := t.TempDir()
	s := NewSink(SinkConfig{Path: dir, Schema: partSchema,
		Partition: txnfile.PartitionConfig{Keys: []string{"dt"}, MaxOpenWriters: 1}})
	connectortest.Must(t, s.Open(connectortest.NewTask(mem, connectortest.TaskOpts{})))
	jan1, jan2 := arrow.Date32(20454), arrow.Date32(20455)
	connectortest.Must(t, s.Write(partBatch(mem, []arrow.Date32{jan1, jan2, jan1}, 1, 2, 3)))
	connectortest.Must(t, s.Write(partBatch(mem, []arrow.Date32{jan2, jan2}, 4, 5)))
	connectortest.Must(t, s.PreCommit(1))
	connectortest.Must(t, s.Commit(1))
	connectortest.Must(t, s.Close())
	// One open file at a time: the first batch's rows go to 2026-01-01 (file 0, rows 1 and 3 taken together),
	// then 2026-01-02 (file 1, finishing file 0); the second batch continues file 1.
	want := map[string][]int64{
		"dt=2026-01-01/j1-sink-0-1-0.parquet": {1, 3},
		"dt=2026-01-02/j1-sink-0-1-1.parquet": {2, 4, 5},
	}
	var files []string
	for _, f := range connectortest.ListFiles(t, dir) {
		if !strings.HasPrefix(f, "_staging/") {
			files = append(files, f)
		}
	}
	if len(files) != len(want) {
		t.Fatalf("files %v", files)
	}
	for f, ids := range want {
		if got := readIDs(t, filepath.Join(dir, f)); !slices.Equal(got, ids) {
			t.Errorf("%s: ids %v, want %v", f, got, ids)
		}
	}
}
