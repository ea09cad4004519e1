package expr

import (
	"testing"
)

func TestExprSmoke(t *testing.T) {
	mem := checked(t)
	rec := batch(t, mem, col{"a", TypeBigint, []any{1, 2, nil, 4}}, col{"s", TypeText, []any{"x", "héllo", "z", nil}})
	defer rec.Release()
	a := Column(0, "a", TypeBigint)
	s := Column(1, "s", TypeText)
	for _, c := range []struct {
		e    Expr
		want string
	}{
		{mustCall(t, "+", a, Int64(10)), "11,12,NULL,14"},
		{mustCall(t, ">", a, Int64(1)), "f,t,NULL,t"},
		{mustCall(t, "upper", s), "X,HÉLLO,Z,NULL"},
		{mustCall(t, "case", mustCall(t, ">", a, Int64(1)), String("big"), String("small")), "small,big,small,big"},
		{mustCall(t, "coalesce", a, Int64(0)), "1,2,0,4"},
		{mustCall(t, "/", Int64(10), a), "10,5,NULL,2"},
	} {
		got, err := evalTexts(t, mem, c.e, rec, ErrorsFail, nil)
		if err != nil {
			t.Fatalf("%s: %v", c.e, err)
		}
		if join(got) != c.want {
			t.Errorf("%s = %s, want %s", c.e, join(got), c.want)
		}
	}
}
