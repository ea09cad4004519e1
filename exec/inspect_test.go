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
// restore's reader (DecodeInflightLog): on each input channel that had not delivered the barrier, exactly its
// source's rows that preceded the barrier and that the operator had not consumed - contiguous, each the row the
// source generated at its index, the last one just below the offset the source recorded in the same checkpoint.
// (Usually the held-back input 1; when the fast input's batch was still queued as the barrier came first on
// input 1, that batch.)
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
	next := map[string]int64{}
	var in *inspect.Inflight
	for _, st := range r.Job.Checkpoint.Subtasks {
		switch st.Participant {
		case "gen-a-0", "gen-b-0":
			off, err := hex.DecodeString(st.Source.Offset.Hex)
			if err != nil || len(off) != 8 {
				t.Fatalf("%s offset %+v", st.Participant, st.Source.Offset)
			}
			next[st.Participant] = int64(binary.BigEndian.Uint64(off))
		case "agg-0":
			in = st.Inflight
		}
	}
	if in == nil || len(next) != 2 {
		t.Fatalf("no in-flight log at agg-0 (%v) or no offsets of the sources (%v)", in, next)
	}
	sources := []struct {
		c   seqConfig
		pid string
	}{{a, "gen-a-0"}, {b, "gen-b-0"}}
	captured := 0
	for _, ch := range in.Channels {
		src := sources[ch.Input]
		var vals []int64
		for _, e := range ch.Elements {
			for _, row := range e.Rows {
				val, _ := strconv.ParseInt(*row[2], 10, 64)
				want := src.c.event(0, int(val))
				if *row[0] != strconv.FormatInt(want.key, 10) || *row[1] != string(expr.AppendTimestamp(nil, want.ts, false)) {
					t.Fatalf("captured row %v on input %d is not row %d of %s (%+v)", []string{*row[0], *row[1], *row[2]}, ch.Input, val, src.pid, want)
				}
				vals = append(vals, val)
			}
		}
		if len(vals) == 0 {
			continue
		}
		captured += len(vals)
		for i := 1; i < len(vals); i++ {
			if vals[i] != vals[i-1]+1 {
				t.Fatalf("captured rows of input %d not contiguous: %d after %d", ch.Input, vals[i], vals[i-1])
			}
		}
		if last := vals[len(vals)-1]; last+1 != next[src.pid] {
			t.Fatalf("the last row captured on input %d is %d, %s's offset in the same checkpoint is %d", ch.Input, last, src.pid, next[src.pid])
		}
	}
	if captured == 0 {
		t.Fatal("no rows captured")
	}
}
