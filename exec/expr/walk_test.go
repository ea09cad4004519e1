package expr

import "testing"

// TestEqual: Equal holds between separate bindings of one expression and fails on any difference of column,
// constant, function, type or shape; CanFail follows the fallible parts.
func TestEqual(t *testing.T) {
	a := Column(0, "a", TypeBigint)
	a2 := Column(0, "a", TypeBigint)
	b := Column(1, "a", TypeBigint) // another column of the same name
	s := Column(2, "s", TypeText)
	build := func(x, y Expr, k int64) []Expr {
		return []Expr{
			mustCall(t, "<", x, Int64(k)),
			mustCall(t, "and", mustCall(t, ">=", x, Int64(k)), mustCall(t, "<", y, Int64(k*100))),
			mustCall(t, "case", mustCall(t, "<", x, Int64(k)), y),
			mustCall(t, "-", x, mustCall(t, "*", y, Int64(k))),
			mustCall(t, "in", x, Int64(k), Int64(2)),
			mustCall(t, "coalesce", x, y, Int64(k)),
			mustCall(t, "regexp_extract", s, String("(&|^)c=([^&]*)"), mustCall(t, "+", x, Int64(k))),
		}
	}
	one, same := build(a, b, 1), build(a2, b, 1)
	for i := range one {
		if !Equal(one[i], same[i]) {
			t.Errorf("%s: not Equal to its second binding", one[i])
		}
		for j := range one {
			if i != j && Equal(one[i], one[j]) {
				t.Errorf("%s Equal to %s", one[i], one[j])
			}
		}
	}
	for _, other := range [][]Expr{build(b, a, 1), build(a, b, 2)} {
		for i := range one {
			if Equal(one[i], other[i]) {
				t.Errorf("%s Equal to %s (another column or constant)", one[i], other[i])
			}
		}
	}
	if Equal(Int64(1), Int32(1)) || !Equal(NullOf(TypeBigint), NullOf(TypeBigint)) || Equal(NullOf(TypeBigint), Int64(0)) {
		t.Error("literal Equal: types or NULLs not told apart")
	}
	if CanFail(a) || CanFail(one[0]) || !CanFail(mustCall(t, "/", Int64(1), a)) {
		t.Error("CanFail: wrong for a column, a comparison or a division")
	}
}
