package exec_test

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/exec/join"
)

// The regular join in the runtime: two generator sources hashed on their key into a FULL OUTER join, whose
// changelog goes to a two-phase-commit sink. A committed row is "<kind> lkey|lts|lval|rkey|rts|rval", NULL for the
// side an outer row lacks.

// rjChangelogSink is memSink writing changelog rows (with their kinds) instead of window results.
type rjChangelogSink struct{ *memSink }

func (s rjChangelogSink) Write(b exec.Batch) error {
	defer b.Release()
	cols := make([]arrow.Array, b.Rec.NumCols())
	for i := range cols {
		cols[i] = b.Rec.Column(i)
	}
	for r := range b.Rows() {
		var sb strings.Builder
		sb.WriteString(b.Kind(r).String())
		for i, c := range cols {
			sb.WriteByte(" |"[min(i, 1)])
			switch {
			case c.IsNull(r):
				sb.WriteString("NULL")
			case c.DataType().ID() == arrow.TIMESTAMP:
				sb.WriteString(strconv.FormatInt(int64(c.(*array.Timestamp).Value(r)), 10))
			default:
				sb.WriteString(strconv.FormatInt(c.(*array.Int64).Value(r), 10))
			}
		}
		s.open = append(s.open, sb.String())
	}
	return nil
}

// rjJoinOp is the FULL OUTER regular join of two eventSchema inputs on their key.
func rjJoinOp(t testing.TB) func(int) exec.Operator {
	t.Helper()
	join, _, err := join.NewJoin(join.RegularJoinConfig{JoinSpec: join.JoinSpec{
		Type: join.JoinFull, Left: eventSchema, Right: eventSchema, LeftKeys: []int{0}, RightKeys: []int{0}}})
	if err != nil {
		t.Fatal(err)
	}
	return join
}

// rjPipeline is gen-a and gen-b hashed on their key into join, then the sink; g, when set, holds the join's
// input 1.
func rjPipeline(a, b seqConfig, join func(int) exec.Operator, store *txnStore, g *gate) *exec.Graph {
	gr := exec.NewGraph()
	sa := gr.AddSource("gen-a", 1, newSeqSource(a))
	sb := gr.AddSource("gen-b", 1, newSeqSource(b))
	j := gr.AddOperator("join", 1, g.wrap(join), exec.From(sa, exec.HashExchange(0)), exec.From(sb, exec.HashExchange(0))).WithKeyedState()
	gr.AddSink("sink", 1, func(sub int) exec.Sink { return rjChangelogSink{&memSink{store: store, sub: sub}} },
		exec.From(j, exec.ForwardExchange()))
	return gr
}

// rjExpected is the FULL OUTER join of a's and b's rows on key: what the committed changelog must consolidate to.
func rjExpected(a, b []event) []string {
	row := func(e event) string { return fmt.Sprintf("%d|%d|%d", e.key, e.ts, e.val) }
	byKey := map[int64][]event{}
	for _, e := range b {
		byKey[e.key] = append(byKey[e.key], e)
	}
	matched := map[int64]bool{}
	var out []string
	for _, l := range a {
		if len(byKey[l.key]) == 0 {
			out = append(out, row(l)+"|NULL|NULL|NULL")
		}
		for _, r := range byKey[l.key] {
			out = append(out, row(l)+"|"+row(r))
		}
		matched[l.key] = true
	}
	for _, r := range b {
		if !matched[r.key] {
			out = append(out, "NULL|NULL|NULL|"+row(r))
		}
	}
	sort.Strings(out)
	return out
}

// rjConsolidated applies the committed transactions in checkpoint order and returns the rows they leave, sorted;
// it fails the test if a transaction retracts a row that is not there.
func rjConsolidated(t testing.TB, store *txnStore) []string {
	t.Helper()
	store.mu.Lock()
	type txn struct {
		id   uint64
		rows []string
	}
	var txns []txn
	for name, rows := range store.committed {
		_, id := parseTxnName(name)
		txns = append(txns, txn{id, rows})
	}
	store.mu.Unlock()
	sort.Slice(txns, func(i, j int) bool { return txns[i].id < txns[j].id })
	set := map[string]int{}
	for _, tx := range txns {
		for _, line := range tx.rows {
			kind, row, _ := strings.Cut(line, " ")
			switch kind {
			case "+I", "+U":
				set[row]++
			default:
				if set[row] == 0 {
					t.Fatalf("transaction %d retracts %q, which is not in the result", tx.id, row)
				}
				set[row]--
			}
		}
	}
	var out []string
	for row, n := range set {
		for range n {
			out = append(out, row)
		}
	}
	sort.Strings(out)
	return out
}

// The regular join under the runtime (issue 5's multi-input rule): with its input 1 held behind a gate, an
// unaligned checkpoint completes while an aligned one still waits behind the queued batches, and a restore from
// the unaligned checkpoint (its captured in-flight batches replayed, its keyed state restored) commits a changelog
// that is valid and consolidates to the join of all input rows: the output of a run without failure.
func TestRegularJoinUnalignedCheckpointUnderBackpressure(t *testing.T) {
	a := seqConfig{seed: 31, rows: 50, batchRows: 50, keys: 12, tsStep: 40}
	b := seqConfig{seed: 32, rows: 2000, batchRows: 10, keys: 10, tsStep: 1}
	want := rjExpected(a.all(1), b.all(1))
	join := rjJoinOp(t)
	gatedCase{
		graph:     func(g *gate, store *txnStore) *exec.Graph { return rjPipeline(a, b, join, store, g) },
		op:        "join-0",
		rows:      a.rows + b.rows,
		want:      want,
		committed: rjConsolidated,
	}.run(t)

	t.Run("run without failure", func(t *testing.T) {
		store := newTxnStore()
		runToEnd(t, rjPipeline(a, b, join, store, nil), jobConfig(t, t.TempDir()))
		checkRows(t, rjConsolidated(t, store), want)
	})
}
