package operators_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/exec/expr"
	"github.com/clinksql/clinksql/exec/operators"
)

// calcBidSchema is the bid shape the filter/project benchmark reads.
var calcBidSchema = arrow.NewSchema([]arrow.Field{
	{Name: "auction", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "bidder", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "price", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "channel", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "date_time", Type: expr.TypeTimestamp, Nullable: true},
}, nil)

var calcChannels = []string{"Google", "Facebook", "Baidu", "Apple", "channel-1234", "channel-77"}

// calcBidBatches pre-generates n batches of rows bids (seeded; no NULLs, as generated bids have none).
func calcBidBatches(mem memory.Allocator, n, rows int, seed uint64) []arrow.RecordBatch {
	r := rand.New(rand.NewPCG(seed, 1))
	out := make([]arrow.RecordBatch, n)
	ts := int64(1_767_225_600_000_000)
	for k := range out {
		b := array.NewRecordBuilder(mem, calcBidSchema)
		for i := 0; i < rows; i++ {
			b.Field(0).(*array.Int64Builder).Append(1000 + r.Int64N(10_000))
			b.Field(1).(*array.Int64Builder).Append(1 + r.Int64N(100_000))
			b.Field(2).(*array.Int64Builder).Append(1 + r.Int64N(1000))
			b.Field(3).(*array.StringBuilder).Append(calcChannels[r.IntN(len(calcChannels))])
			ts += r.Int64N(2000)
			b.Field(4).(*array.TimestampBuilder).Append(arrow.Timestamp(ts))
		}
		out[k] = b.NewRecordBatch()
		b.Release()
	}
	return out
}

// benchCalcConfig is `SELECT auction, price * 908 / 1000 AS dollars, channel, date_time FROM bid
// WHERE price > 500 AND auction % 7 <> 0`.
func benchCalcConfig(b testing.TB) operators.CalcConfig {
	col := func(i int) expr.Expr {
		f := calcBidSchema.Field(i)
		return expr.Column(i, f.Name, f.Type)
	}
	call := func(name string, args ...expr.Expr) expr.Expr {
		e, err := expr.Call(name, args...)
		if err != nil {
			b.Fatal(err)
		}
		return e
	}
	filter := call("and",
		call(">", col(2), expr.Int64(500)),
		call("<>", call("%", col(0), expr.Int64(7)), expr.Int64(0)))
	dollars := call("/", call("*", col(2), expr.Int64(908)), expr.Int64(1000))
	return operators.CalcConfig{
		Filter:  filter,
		Project: []expr.Expr{col(0), dollars, col(3), col(4)},
		Names:   []string{"auction", "dollars", "channel", "date_time"},
	}
}

// BenchmarkFilterProject measures the filter/project operator on one goroutine over pre-generated 8192-row
// bid batches.
func BenchmarkFilterProject(b *testing.B) {
	const batchRows = 8192
	mem := memory.NewGoAllocator()
	batches := calcBidBatches(mem, 16, batchRows, 42)
	defer func() {
		for _, r := range batches {
			r.Release()
		}
	}()
	op := operators.NewCalc(benchCalcConfig(b))(0)
	if err := op.Open(&exec.TaskContext{Alloc: mem, Errors: &exec.Counter{}}); err != nil {
		b.Fatal(err)
	}
	sink := &calcDiscard{}
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	rows := 0
	for i := 0; b.Loop(); i++ {
		r := batches[i%len(batches)]
		r.Retain()
		if err := op.Process(0, exec.Batch{Rec: r}, sink); err != nil {
			b.Fatal(err)
		}
		rows += batchRows
	}
	b.ReportMetric(float64(rows)/time.Since(start).Seconds(), "filter_project_rows_per_sec:rows/s")
	b.StopTimer()
	if sink.rows == 0 {
		b.Fatal("nothing passed the filter")
	}
}

type calcDiscard struct{ rows int }

func (d *calcDiscard) Emit(bt exec.Batch) error {
	d.rows += bt.Rows()
	bt.Release()
	return nil
}
