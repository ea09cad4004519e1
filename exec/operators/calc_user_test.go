package operators_test

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/clinksql/clinksql/connectors/connectortest"
	"github.com/clinksql/clinksql/exec/expr"
	"github.com/clinksql/clinksql/exec/operators"
	"github.com/clinksql/clinksql/sqlerr"
)

// negate is a user function that counts its instances.
type negate struct{ opened, closed int }

func (f *negate) Name() string { return "negate" }
func (f *negate) Open() (expr.UserInstance, error) {
	f.opened++
	return &negateInst{f: f}, nil
}

type negateInst struct{ f *negate }

func (n *negateInst) Eval(args []arrow.Array, rows int, skip func(int) bool, out array.Builder, _ func(int, *sqlerr.Error) error) error {
	in, b := args[0].(*array.Int64), out.(*array.Int64Builder)
	for i := range rows {
		if skip(i) {
			b.AppendNull()
		} else {
			b.Append(-in.Value(i))
		}
	}
	return nil
}

func (n *negateInst) Close() error { n.f.closed++; return nil }

// pins: a calc subtask opens one instance of a user function for all its batches and releases it when it closes.
func TestCalcUserFunctionInstance(t *testing.T) {
	mem := connectortest.CheckedAlloc(t)
	fn := &negate{}
	call := expr.UserCall(fn, expr.TypeBigint, expr.Column(2, "price", expr.TypeBigint))
	op := operators.NewCalc(operators.CalcConfig{Project: []expr.Expr{call}})(0)
	if err := op.Open(connectortest.NewTask(mem, connectortest.TaskOpts{})); err != nil {
		t.Fatal(err)
	}
	for seed := range uint64(3) {
		out := &rowCollectorAny{}
		if err := op.Process(0, calcBatch(mem, calcRows(seed, 16), false), out); err != nil {
			t.Fatal(err)
		}
	}
	if fn.opened != 1 || fn.closed != 0 {
		t.Fatalf("before Close: %d opened, %d closed", fn.opened, fn.closed)
	}
	if err := op.Close(); err != nil {
		t.Fatal(err)
	}
	if fn.closed != 1 {
		t.Fatalf("after Close: %d closed", fn.closed)
	}
}
