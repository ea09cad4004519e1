package difftest

import (
	"math/big"
	"slices"
	"strconv"
	"strings"
)

// Rows is a result in Postgres text form: nil is NULL.
type Rows [][]*string

// SigDigits is how many significant digits of an approximate value (a float, a NUMERIC quotient or average) the
// comparison keeps: both sides are rounded to it; RealDigits for a REAL column (float4 keeps about 7, and
// Postgres sums REALs in float4). Exact values (integers, text, NUMERIC sums and products, timestamps, booleans)
// compare as their Postgres text forms, byte for byte.
const (
	SigDigits  = 12
	RealDigits = 6
)

// ColumnRules says how to compare a result's columns.
type ColumnRules struct {
	Approx  []bool // rounded to SigDigits
	Real    []bool // REAL: rounded to RealDigits
	Numeric []bool // NUMERIC: with TrimNumeric, trailing fractional zeros are removed
	// NegZero: a float -0 reads as 0 (GapNegativeZero); TrimNumeric: see GapNumericScaleMix.
	NegZero, TrimNumeric bool
}

// Normalize renders each row as one comparable line: values separated by " | ", NULL as NULL, approximate
// columns rounded to SigDigits. The lines come back sorted, so two results are equal as multisets when their
// lines are equal.
func Normalize(rows Rows, c ColumnRules) []string {
	out := make([]string, 0, len(rows))
	for _, r := range rows {
		vals := make([]string, len(r))
		for i, v := range r {
			switch {
			case v == nil:
				vals[i] = "NULL"
			case i < len(c.Real) && c.Real[i]:
				vals[i] = round(*v, RealDigits, c.NegZero)
			case i < len(c.Approx) && c.Approx[i]:
				vals[i] = round(*v, SigDigits, c.NegZero)
			case c.TrimNumeric && i < len(c.Numeric) && c.Numeric[i] && strings.Contains(*v, "."):
				vals[i] = strconv.Quote(strings.TrimSuffix(strings.TrimRight(*v, "0"), "."))
			default:
				vals[i] = strconv.Quote(*v)
			}
		}
		out = append(out, strings.Join(vals, " | "))
	}
	slices.Sort(out)
	return out
}

// round is a number's text rounded to digits significant digits ("NaN", "Infinity", "-Infinity" as they are);
// text that is not a number is returned quoted.
func round(s string, digits int, negZero bool) string {
	switch s {
	case "NaN", "Infinity", "-Infinity":
		return s
	}
	f, ok := new(big.Float).SetPrec(256).SetString(s)
	if !ok {
		return strconv.Quote(s)
	}
	if f.Sign() == 0 {
		if strings.HasPrefix(s, "-") && !negZero {
			return "-0"
		}
		return "0"
	}
	return f.Text('e', digits-1)
}

// Diff is the lines only in a and only in b (multisets of sorted lines).
func Diff(a, b []string) (onlyA, onlyB []string) {
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case j == len(b) || (i < len(a) && a[i] < b[j]):
			onlyA = append(onlyA, a[i])
			i++
		case i == len(a) || b[j] < a[i]:
			onlyB = append(onlyB, b[j])
			j++
		default:
			i++
			j++
		}
	}
	return onlyA, onlyB
}
