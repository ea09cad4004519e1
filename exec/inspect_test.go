package exec_test

import (
	"encoding/binary"
	"encoding/hex"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/clinksql/clinksql/checkpoint"
	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/exec/expr"
	"github.com/clinksql/clinksql/state/inspect"
)

// pins: clinksql state-cat shows the records an unaligned checkpoint captured in flight, decoded with the
// restore's reader (DecodeInflightLog): on the slow input's channel, exactly the slow source's rows that preceded
// its barrier and that the operator had not consumed - contiguous, each the row the source generated at its index,
// the last one just below the offset the source recorded in the same checkpoint.
func TestStateCatShowsInflightRecords(t *testing.T) {
	a := seqConfig{seed: 11, rows: 50, batchRows: 50, keys: 10, tsStep: 40}
	b := seqConfig{seed: 12, rows: 2000, batchRows: 10, keys: 10, tsStep: 1}
	c := gatedCase{graph: func(g *gate, store *txnStore) *exec.Graph { return aggPipeline(a, b, store, g, true) }, op: "agg-0"}
	root := t.TempDir()
	j, g := c.start(t, filepath.Join(root, "jobs", "job-1"), checkpoint.Unaligned, newTxnStore())
	checkpointOvertakes(t, j, g, c.op)
	g.release()
	j.Cancel()

	r, err := inspect.Inspect(inspect.Options{DataDir: root, Job: "job-1"})
	if err != nil {
		t.Fatal(err)
	}
	if r.Job.Checkpoint == nil || r.Job.Checkpoint.ID != 1 {
		t.Fatalf("checkpoint %+v, want 1", r.Job.Checkpoint)
	}
	var next int64 = -1
	var in *inspect.Inflight
	for _, st := range r.Job.Checkpoint.Subtasks {
		switch st.Participant {
		case "gen-b-0":
			off, err := hex.DecodeString(st.Source.Offset.Hex)
			if err != nil || len(off) != 8 {
				t.Fatalf("gen-b offset %+v", st.Source.Offset)
			}
			next = int64(binary.BigEndian.Uint64(off))
		case "agg-0":
			in = st.Inflight
		}
	}
	if in == nil || next < 0 {
		t.Fatalf("no in-flight log at agg-0 (%v) or no offset of gen-b (%d)", in, next)
	}
	var vals []int64
	for _, ch := range in.Channels {
		for _, e := range ch.Elements {
			if e.Watermark != nil {
				continue
			}
			if ch.Input != 1 {
				t.Fatalf("rows captured on input %d, only input 1 was held back", ch.Input)
			}
			for _, row := range e.Rows {
				val, _ := strconv.ParseInt(*row[2], 10, 64)
				want := b.event(0, int(val))
				if *row[0] != strconv.FormatInt(want.key, 10) || *row[1] != string(expr.AppendTimestamp(nil, want.ts, false)) {
					t.Fatalf("captured row %v is not row %d of the slow source (%+v)", []string{*row[0], *row[1], *row[2]}, val, want)
				}
				vals = append(vals, val)
			}
		}
	}
	if len(vals) == 0 {
		t.Fatal("no rows captured")
	}
	for i := 1; i < len(vals); i++ {
		if vals[i] != vals[i-1]+1 {
			t.Fatalf("captured rows not contiguous: %d after %d", vals[i], vals[i-1])
		}
	}
	if last := vals[len(vals)-1]; last+1 != next {
		t.Fatalf("the last captured row is %d, the slow source's offset in the same checkpoint is %d", last, next)
	}
}
