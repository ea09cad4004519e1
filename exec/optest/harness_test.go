package optest

import (
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/exec/rowcodec"
	"github.com/clinksql/clinksql/state"
)

// harnessCounter is the harness's own test operator: it counts the rows it saw per value of column 0 (an
// int64), keeps the counts in memory, writes them to state at barriers, and emits them at the final watermark.
type harnessCounter struct {
	ctx    *exec.TaskContext
	counts map[int64]int64
}

func (o *harnessCounter) Open(ctx *exec.TaskContext) error {
	o.ctx, o.counts = ctx, map[int64]int64{}
	prefix := state.KeyedKey(0, 9, nil)
	return ctx.State.Scan(prefix, func(k, v []byte) error {
		o.counts[rowcodec.OrderedInt(k[len(prefix):])] = rowcodec.OrderedInt(v)
		return nil
	})
}

func (o *harnessCounter) Process(_ int, b exec.Batch, _ exec.Emitter) error {
	defer b.Release()
	for _, v := range b.Rec.Column(0).(*array.Int64).Int64Values() {
		o.counts[v]++
	}
	return nil
}

func (o *harnessCounter) OnWatermark(wm int64, out exec.Emitter) error {
	if wm != exec.MaxWatermark {
		return nil
	}
	keys := slices.Sorted(func(yield func(int64) bool) {
		for k := range o.counts {
			if !yield(k) {
				return
			}
		}
	})
	bld := array.NewRecordBuilder(o.ctx.Alloc, arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.PrimitiveTypes.Int64}, {Name: "n", Type: arrow.PrimitiveTypes.Int64}}, nil))
	defer bld.Release()
	for _, k := range keys {
		bld.Field(0).(*array.Int64Builder).Append(k)
		bld.Field(1).(*array.Int64Builder).Append(o.counts[k])
	}
	return out.Emit(exec.Batch{Rec: bld.NewRecordBatch()})
}

func (o *harnessCounter) OnBarrier(uint64) error {
	for k, n := range o.counts {
		o.ctx.State.Put(state.KeyedKey(0, 9, rowcodec.AppendOrderedInt(nil, k)), rowcodec.AppendOrderedInt(nil, n))
	}
	return nil
}

func (o *harnessCounter) Close() error { return nil }

// TestHarnessRestores checks the harness itself: a counter that only keeps its counts across restores through
// its state yields the same totals in every shape.
func TestHarnessRestores(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)
	var input []any
	for i := 0; i < 10; i++ {
		input = append(input, []any{i % 3})
	}
	RunCase(t, Case{
		Name: "counter", Schema: schema, Input: input, TimeCol: -1,
		Op:   func(int) exec.Operator { return &harnessCounter{} },
		Want: []string{"0|4", "1|3", "2|3"},
	})
	if got := len(CutScript(inputScript(append([]any{WM(5)}, input...)), 3)); got != 5 {
		t.Fatalf("10 rows after a watermark in batches of 3: %d steps, want 5", got)
	}
}
