package difftest

import (
	"slices"
	"testing"
)

func strs(vs ...any) []*string {
	out := make([]*string, len(vs))
	for i, v := range vs {
		if s, ok := v.(string); ok {
			out[i] = &s
		}
	}
	return out
}

// The comparison rules: approximate columns agree to SigDigits, exact ones byte for byte, multisets count
// duplicates.
func TestNormalize(t *testing.T) {
	rules := ColumnRules{Approx: []bool{true, false}, Numeric: []bool{false, true}}
	a := Normalize(Rows{strs("0.1", "1.50"), strs("0.30000000000000004", nil), strs("-0", "2")}, rules)
	b := Normalize(Rows{strs("0.3", nil), strs("1.0000000000000000e-01", "1.50"), strs("0", "2")}, rules)
	onlyA, onlyB := Diff(a, b)
	if want := []string{`-0 | "2"`}; !slices.Equal(onlyA, want) {
		t.Errorf("only in a: %q, want %q (-0 is not 0 unless NegZero)", onlyA, want)
	}
	if want := []string{`0 | "2"`}; !slices.Equal(onlyB, want) {
		t.Errorf("only in b: %q, want %q", onlyB, want)
	}
	rules.NegZero = true
	if onlyA, onlyB := Diff(Normalize(Rows{strs("-0", "2")}, rules), Normalize(Rows{strs("0", "2")}, rules)); len(onlyA)+len(onlyB) != 0 {
		t.Errorf("NegZero: %q / %q", onlyA, onlyB)
	}
	// exact NUMERIC: scale matters, unless TrimNumeric
	x, y := Normalize(Rows{strs(nil, "-0.500")}, rules), Normalize(Rows{strs(nil, "-0.50")}, rules)
	if slices.Equal(x, y) {
		t.Errorf("-0.500 and -0.50 compare equal without TrimNumeric")
	}
	rules.TrimNumeric = true
	x, y = Normalize(Rows{strs(nil, "-0.500"), strs(nil, "10")}, rules), Normalize(Rows{strs(nil, "-0.5"), strs(nil, "10")}, rules)
	if !slices.Equal(x, y) {
		t.Errorf("TrimNumeric: %q vs %q", x, y)
	}
	// 12 significant digits: a difference in the 13th is none, in the 11th is one
	if round("1.0000000000001", SigDigits, false) != round("1", SigDigits, false) || round("1.00000000001", SigDigits, false) == round("1", SigDigits, false) {
		t.Errorf("rounding to %d digits: %s %s", SigDigits, round("1.0000000000001", SigDigits, false), round("1.00000000001", SigDigits, false))
	}
	// REAL columns: 6 digits
	realRules := ColumnRules{Real: []bool{true}}
	if !slices.Equal(Normalize(Rows{strs("1.0000038e+07")}, realRules), Normalize(Rows{strs("1.0000039e+07")}, realRules)) {
		t.Errorf("REAL values equal to %d digits differ", RealDigits)
	}
	// duplicates count
	if onlyA, onlyB := Diff([]string{"a", "a", "b"}, []string{"a", "b", "b"}); !slices.Equal(onlyA, []string{"a"}) || !slices.Equal(onlyB, []string{"b"}) {
		t.Errorf("multiset diff: %q %q", onlyA, onlyB)
	}
}

// The same seed gives the same tables and queries (a reported DIFF_SEED replays the run).
func TestGenDeterministic(t *testing.T) {
	run := func() []string {
		g := NewGen(42, ActiveGaps())
		var out []string
		for _, tb := range g.Tables([]string{"t0", "t1"}, 10) {
			out = append(out, InsertSQL(tb.Name, tb.Rows))
		}
		for i := 0; i < 50; i++ {
			q := g.Query([]string{"t0", "t1", "t2"})
			out = append(out, q.CK, q.PG)
		}
		return out
	}
	if a, b := run(), run(); !slices.Equal(a, b) {
		t.Fatal("two generators with seed 42 differ")
	}
}
