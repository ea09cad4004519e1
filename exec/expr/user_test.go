package expr

import (
	"errors"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/sqlerr"
)

// strlen is a user function in Go: the byte length of its argument; "boom" is a bad value, "hang" a hard error.
type strlen struct{ opened, closed atomic.Int32 }

func (f *strlen) Name() string { return "strlen" }
func (f *strlen) Open() (UserInstance, error) {
	f.opened.Add(1)
	return &strlenInst{f: f}, nil
}

type strlenInst struct{ f *strlen }

func (s *strlenInst) Eval(args []arrow.Array, n int, skip func(int) bool, out array.Builder, bad func(int, *sqlerr.Error) error) error {
	in, b := args[0].(*array.String), out.(*array.Int64Builder)
	for i := range n {
		switch {
		case skip(i):
			b.AppendNull()
		case in.Value(i) == "hang":
			return sqlerr.New(sqlerr.QueryCanceled, sqlerr.NoPos, "strlen did not return in time")
		case in.Value(i) == "boom":
			if err := bad(i, sqlerr.New(sqlerr.DataException, sqlerr.NoPos, "strlen trapped")); err != nil {
				return err
			}
			b.AppendNull()
		default:
			b.Append(int64(len(in.Value(i))))
		}
	}
	return nil
}

func (s *strlenInst) Close() error { s.f.closed.Add(1); return nil }

// pins: a user call evaluates over whole batches with one instance per Context, is strict (NULL in, NULL out, no
// call), takes constants, follows the error mode for bad values (NULL and counted, or the error; silent on rows a
// CASE does not select), fails the batch on other errors, renders in EXPLAIN, and Close releases the instance.
func TestUserCall(t *testing.T) {
	mem := checked(t)
	fn := &strlen{}
	s := Column(0, "s", TypeText)
	call := UserCall(fn, TypeBigint, s)
	if got := call.String(); got != "strlen(s)" {
		t.Fatalf("String = %s", got)
	}
	rec := batch(t, mem, col{"s", TypeText, []any{"abc", nil, "héllo", ""}})
	defer rec.Release()
	ctx := &Context{Alloc: mem}
	for range 2 {
		arr, err := call.Eval(ctx, rec)
		if err != nil {
			t.Fatal(err)
		}
		if got := join(texts(t, arr)); got != "3,NULL,6,0" {
			t.Fatalf("got %s", got)
		}
		arr.Release()
	}
	if fn.opened.Load() != 1 {
		t.Fatalf("opened %d instances for one Context", fn.opened.Load())
	}
	ctx.Close()
	if fn.closed.Load() != 1 {
		t.Fatalf("closed %d", fn.closed.Load())
	}

	// Constants, and a constant NULL (no call at all).
	if got, _ := evalTexts(t, mem, UserCall(fn, TypeBigint, String("four")), rec, ErrorsFail, nil); join(got) != "4,4,4,4" {
		t.Fatalf("constant: %s", join(got))
	}
	if IsConstant(UserCall(fn, TypeBigint, String("four"))) {
		t.Fatal("a user call over constants was folded")
	}
	if got, _ := evalTexts(t, mem, UserCall(fn, TypeBigint, NullOf(TypeText)), rec, ErrorsFail, nil); join(got) != "NULL,NULL,NULL,NULL" {
		t.Fatalf("NULL: %s", join(got))
	}

	bad := batch(t, mem, col{"s", TypeText, []any{"ab", "boom", nil}})
	defer bad.Release()
	var n exec.Counter
	got, err := evalTexts(t, mem, call, bad, ErrorsNull, &n)
	if err != nil || join(got) != "2,NULL,NULL" || n.Load() != 1 {
		t.Fatalf("null mode: %v %v, %d bad", got, err, n.Load())
	}
	if _, err := evalTexts(t, mem, call, bad, ErrorsFail, nil); sqlerr.Code(err) != sqlerr.DataException {
		t.Fatalf("fail mode: %v", err)
	}
	// CASE WHEN s <> 'boom' THEN strlen(s) END: the bad row is not the branch's, so it is neither counted nor an error.
	guarded := mustCall(t, "case", mustCall(t, "<>", s, String("boom")), call)
	if got, err := evalTexts(t, mem, guarded, bad, ErrorsFail, nil); err != nil || join(got) != "2,NULL,NULL" {
		t.Fatalf("guarded: %v %v", got, err)
	}

	hang := batch(t, mem, col{"s", TypeText, []any{"ab", "hang"}})
	defer hang.Release()
	var n2 exec.Counter
	if _, err := evalTexts(t, mem, call, hang, ErrorsNull, &n2); sqlerr.Code(err) != sqlerr.QueryCanceled || n2.Load() != 0 {
		t.Fatalf("hard error: %v, %d bad", err, n2.Load())
	}

	// Column remapping (operators evaluate over the columns an expression reads) keeps the call.
	two := batch(t, mem, col{"x", TypeBigint, []any{1}}, col{"s", TypeText, []any{"xyz"}})
	defer two.Release()
	moved := RemapColumns(UserCall(fn, TypeBigint, Column(0, "s", TypeText)), func(int) int { return 1 })
	if got, err := evalTexts(t, mem, moved, two, ErrorsFail, nil); err != nil || join(got) != "3" {
		t.Fatalf("remapped: %v %v", got, err)
	}
	if !Equal(call, UserCall(fn, TypeBigint, Column(0, "s", TypeText))) {
		t.Fatal("equal calls not Equal")
	}
}

type failingOpen struct{}

func (failingOpen) Name() string                { return "nope" }
func (failingOpen) Open() (UserInstance, error) { return nil, errors.New("cannot instantiate") }

func TestUserCallOpenError(t *testing.T) {
	mem := checked(t)
	rec := batch(t, mem, col{"s", TypeText, []any{"a"}})
	defer rec.Release()
	if _, err := evalTexts(t, mem, UserCall(failingOpen{}, TypeBigint, Column(0, "s", TypeText)), rec, ErrorsNull, nil); err == nil {
		t.Fatal("no error")
	}
}
