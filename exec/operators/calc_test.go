package operators_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clinksql/clinksql/connectors/connectortest"
	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/exec/expr"
	"github.com/clinksql/clinksql/exec/operators"
	"github.com/clinksql/clinksql/sqlerr"
)

// calcRow is one bid of the calc tests; nil pointers are NULLs.
type calcRow struct {
	auction, price *int64
	channel        *string
	kind           exec.RowKind
}

func calcRows(seed uint64, n int) []calcRow {
	r := rand.New(rand.NewPCG(seed, 7))
	rows := make([]calcRow, n)
	for i := range rows {
		if r.IntN(10) > 0 {
			v := r.Int64N(100)
			rows[i].auction = &v
		}
		if r.IntN(10) > 0 {
			v := r.Int64N(1000)
			rows[i].price = &v
		}
		if r.IntN(10) > 0 {
			v := calcChannels[r.IntN(len(calcChannels))]
			if r.IntN(5) == 0 {
				v = "çanal-" + v // multibyte
			}
			rows[i].channel = &v
		}
		rows[i].kind = exec.RowKind(r.IntN(4))
	}
	return rows
}

func calcBatch(mem memory.Allocator, rows []calcRow, withKinds bool) exec.Batch {
	b := array.NewRecordBuilder(mem, calcBidSchema)
	defer b.Release()
	var kinds []exec.RowKind
	for i, row := range rows {
		for c, v := range []*int64{row.auction, nil, row.price} {
			fb := b.Field(c).(*array.Int64Builder)
			switch {
			case c == 1:
				fb.Append(int64(i))
			case v == nil:
				fb.AppendNull()
			default:
				fb.Append(*v)
			}
		}
		if row.channel == nil {
			b.Field(3).(*array.StringBuilder).AppendNull()
		} else {
			b.Field(3).(*array.StringBuilder).Append(*row.channel)
		}
		b.Field(4).(*array.TimestampBuilder).Append(arrow.Timestamp(1_767_225_600_000_000 + int64(i)))
		kinds = append(kinds, row.kind)
	}
	if !withKinds {
		kinds = nil
	}
	return exec.Batch{Rec: b.NewRecordBatch(), Kinds: kinds}
}

// calcReference is the query, row by row: WHERE price > 500 AND auction % 7 <> 0,
// SELECT auction, price * 908 / 1000, upper(channel), date_time.
func calcReference(rows []calcRow, withKinds bool) []string {
	var out []string
	for i, row := range rows {
		if row.price == nil || *row.price <= 500 || row.auction == nil || *row.auction%7 == 0 {
			continue
		}
		ch := "NULL"
		if row.channel != nil {
			ch = strings.ToUpper(*row.channel)
		}
		kind := exec.Insert
		if withKinds {
			kind = row.kind
		}
		ts := expr.AppendTimestamp(nil, 1_767_225_600_000_000+int64(i), false)
		out = append(out, fmt.Sprintf("%s %d %d %s %s", kind, *row.auction, *row.price*908/1000, ch, ts))
	}
	return out
}

func calcTestConfig(t *testing.T, mode expr.ErrorMode) operators.CalcConfig {
	cfg := benchCalcConfig(t)
	up, err := expr.Call("upper", expr.Column(3, "channel", expr.TypeText))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Project[2] = up
	cfg.Mode = mode
	return cfg
}

// collectRows renders emitted batches as "kind auction dollars channel date_time" lines.
type rowCollector struct {
	t    *testing.T
	rows []string
	n    int
}

func (c *rowCollector) Emit(b exec.Batch) error {
	defer b.Release()
	c.n++
	if b.Rows() == 0 {
		c.t.Errorf("empty batch emitted")
	}
	if b.Kinds != nil && len(b.Kinds) != b.Rows() {
		c.t.Fatalf("%d kinds for %d rows", len(b.Kinds), b.Rows())
	}
	rec := b.Rec
	text := func(col, i int) string {
		a := rec.Column(col)
		if a.IsNull(i) {
			return "NULL"
		}
		switch a := a.(type) {
		case *array.Int64:
			return fmt.Sprint(a.Value(i))
		case *array.String:
			return a.Value(i)
		case *array.Timestamp:
			return string(expr.AppendTimestamp(nil, int64(a.Value(i)), false))
		}
		return "?"
	}
	for i := 0; i < b.Rows(); i++ {
		c.rows = append(c.rows, fmt.Sprintf("%s %s %s %s %s", b.Kind(i), text(0, i), text(1, i), text(2, i), text(3, i)))
	}
	return nil
}

func TestCalcFilterProject(t *testing.T) {
	rows := calcRows(1, 500)
	for _, size := range []int{1, 7, len(rows)} {
		for _, withKinds := range []bool{false, true} {
			t.Run(fmt.Sprintf("batch%d/kinds=%v", size, withKinds), func(t *testing.T) {
				mem := connectortest.CheckedAlloc(t)
				op := operators.NewCalc(calcTestConfig(t, expr.ErrorsFail))(0)
				task := connectortest.NewTask(mem, connectortest.TaskOpts{})
				task.Errors = &exec.Counter{}
				if err := op.Open(task); err != nil {
					t.Fatal(err)
				}
				out := &rowCollector{t: t}
				for lo := 0; lo < len(rows); lo += size {
					hi := min(lo+size, len(rows))
					if err := op.Process(0, calcBatch(mem, rows[lo:hi], withKinds), out); err != nil {
						t.Fatal(err)
					}
				}
				if err := op.OnBarrier(1); err != nil {
					t.Fatal(err)
				}
				if err := op.Close(); err != nil {
					t.Fatal(err)
				}
				// the reference numbers date_time by the row's index within its batch
				var want []string
				for lo := 0; lo < len(rows); lo += size {
					hi := min(lo+size, len(rows))
					want = append(want, calcReference(rows[lo:hi], withKinds)...)
				}
				if len(want) == 0 || len(want) == len(rows) {
					t.Fatalf("the filter should keep some rows and drop some: %d of %d", len(want), len(rows))
				}
				if strings.Join(out.rows, "\n") != strings.Join(want, "\n") {
					t.Errorf("got %d rows, want %d\ngot:  %v\nwant: %v", len(out.rows), len(want), head(out.rows), head(want))
				}
				if task.Errors.Load() != 0 {
					t.Errorf("%d bad values", task.Errors.Load())
				}
			})
		}
	}
}

func head(s []string) []string { return s[:min(len(s), 5)] }

func TestCalcErrorModes(t *testing.T) {
	rows := calcRows(2, 64)
	price := expr.Column(2, "price", expr.TypeBigint)
	auction := expr.Column(0, "auction", expr.TypeBigint)
	zero, err := expr.Call("-", auction, auction)
	if err != nil {
		t.Fatal(err)
	}
	div, err := expr.Call("/", price, zero) // NULL when either is NULL, division by zero otherwise
	if err != nil {
		t.Fatal(err)
	}
	wantBad := 0
	for _, r := range rows {
		if r.price != nil && r.auction != nil {
			wantBad++
		}
	}
	t.Run("null", func(t *testing.T) {
		mem := connectortest.CheckedAlloc(t)
		op := operators.NewCalc(operators.CalcConfig{Project: []expr.Expr{div}, Mode: expr.ErrorsNull})(0)
		task := connectortest.NewTask(mem, connectortest.TaskOpts{})
		task.Errors = &exec.Counter{}
		if err := op.Open(task); err != nil {
			t.Fatal(err)
		}
		out := &rowCollectorAny{}
		if err := op.Process(0, calcBatch(mem, rows, false), out); err != nil {
			t.Fatal(err)
		}
		if out.rows != len(rows) || out.nonNull != 0 {
			t.Errorf("%d rows, %d not null; want %d rows all NULL", out.rows, out.nonNull, len(rows))
		}
		if got := task.Errors.Load(); got != int64(wantBad) {
			t.Errorf("%d bad values counted, want %d", got, wantBad)
		}
	})
	t.Run("fail", func(t *testing.T) {
		mem := connectortest.CheckedAlloc(t)
		op := operators.NewCalc(operators.CalcConfig{Project: []expr.Expr{div}, Mode: expr.ErrorsFail})(0)
		task := connectortest.NewTask(mem, connectortest.TaskOpts{})
		if err := op.Open(task); err != nil {
			t.Fatal(err)
		}
		err := op.Process(0, calcBatch(mem, rows, false), &rowCollectorAny{})
		if sqlerr.Code(err) != sqlerr.DivisionByZero {
			t.Fatalf("error %v, want 22012", err)
		}
	})
	t.Run("filter drops everything", func(t *testing.T) {
		mem := connectortest.CheckedAlloc(t)
		never, _ := expr.Call(">", price, expr.Int64(10_000))
		op := operators.NewCalc(operators.CalcConfig{Filter: never})(0)
		if err := op.Open(connectortest.NewTask(mem, connectortest.TaskOpts{})); err != nil {
			t.Fatal(err)
		}
		out := &rowCollectorAny{}
		if err := op.Process(0, calcBatch(mem, rows, true), out); err != nil {
			t.Fatal(err)
		}
		if out.batches != 0 {
			t.Errorf("%d batches emitted for no rows", out.batches)
		}
	})
	t.Run("pass-through", func(t *testing.T) {
		mem := connectortest.CheckedAlloc(t)
		isNull, _ := expr.Call("is_null", price)
		op := operators.NewCalc(operators.CalcConfig{Filter: isNull})(0)
		if err := op.Open(connectortest.NewTask(mem, connectortest.TaskOpts{})); err != nil {
			t.Fatal(err)
		}
		out := &rowCollectorAny{}
		if err := op.Process(0, calcBatch(mem, rows, true), out); err != nil {
			t.Fatal(err)
		}
		want := 0
		for _, r := range rows {
			if r.price == nil {
				want++
			}
		}
		if out.rows != want || out.cols != len(calcBidSchema.Fields()) {
			t.Errorf("%d rows of %d columns, want %d of %d", out.rows, out.cols, want, len(calcBidSchema.Fields()))
		}
	})
}

type rowCollectorAny struct{ batches, rows, nonNull, cols int }

func (c *rowCollectorAny) Emit(b exec.Batch) error {
	defer b.Release()
	c.batches++
	c.rows += b.Rows()
	c.cols = int(b.Rec.NumCols())
	for i := 0; i < int(b.Rec.NumCols()); i++ {
		c.nonNull += b.Rec.Column(i).Len() - b.Rec.Column(i).NullN()
	}
	return nil
}
