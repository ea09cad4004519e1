package expr

import (
	"math/big"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/clinksql/clinksql/sqlerr"
)

// DECIMAL arithmetic is exact, on decimal128 with at most 38 digits. Result types (p1,s1 op p2,s2), integers
// taking part as DECIMAL(19,0) (BIGINT), (10,0) (INT) or (5,0) (SMALLINT):
//
//	+ -  scale max(s1,s2); precision max(p1-s1, p2-s2) + scale + 1
//	*    scale s1+s2; precision p1+p2+1
//	/    scale max(16, s1, s2), reduced (not below 6) so that the p1-s1+s2 integer digits fit in 38; for two
//	     constants, Postgres' own scale for those values (select_div_scale: at least 16 significant digits);
//	     the quotient is rounded half away from zero, as Postgres rounds numeric division
//	%    scale max(s1,s2) (the remainder has the dividend's sign, as Postgres' numeric mod)
//
// every precision capped at 38 (and a scale above it at 38). A result that does not fit its precision is
// 22003 "numeric field overflow". Postgres' numeric is unbounded and picks the division scale per value (at
// least 16 significant digits); a column needs one type, hence the fixed rule above, which gives Postgres'
// digits for quotients from 1 to 9999 and constants exactly.

var pow10Big [77]*big.Int

func init() {
	p := big.NewInt(1)
	for i := range pow10Big {
		pow10Big[i] = new(big.Int).Set(p)
		p.Mul(p, big.NewInt(10))
	}
}

func decResultType(op string, a, b *arrow.Decimal128Type) *arrow.Decimal128Type {
	p1, s1, p2, s2 := a.Precision, a.Scale, b.Precision, b.Scale
	var p, s int32
	switch op {
	case "+", "-":
		s = max(s1, s2)
		p = max(p1-s1, p2-s2) + s + 1
	case "*":
		s = s1 + s2
		p = p1 + p2 + 1
	case "/":
		// Postgres' select_div_scale gives at least 16 significant digits; with one scale per column, 16 places
		// (at least the operands'), which 38 digits always hold: the integer digits give way, and a quotient whose
		// integer part then does not fit is 22003, never a shorter scale.
		intDig := p1 - s1 + s2
		s = max(16, s1, s2)
		p = min(intDig+s, 38)
	default:
		s = max(s1, s2)
		p = max(p1-s1, p2-s2) + s
	}
	p = min(max(p, 1), 38)
	s = min(s, 38)
	if s > p {
		p = min(38, s)
	}
	return &arrow.Decimal128Type{Precision: p, Scale: s}
}

func bindDecimalArith(op string, a, b Expr) (Expr, error) {
	var err error
	da, db := asDecimal(a.Type()), asDecimal(b.Type())
	if a, err = coerce(a, da); err != nil {
		return nil, err
	}
	if b, err = coerce(b, db); err != nil {
		return nil, err
	}
	rt := decResultType(op, da, db)
	if op == "/" {
		if rs, ok := pgDivScale(a, b, da, db); ok {
			intDig := rt.Precision - rt.Scale
			rt = &arrow.Decimal128Type{Precision: min(38, intDig+rs), Scale: rs}
		}
	}
	return &callExpr{name: op, args: []Expr{a, b}, typ: rt, strict: true, canFail: true, render: infix(op),
		kern: decimalKernel(op, da, db, rt)}, nil
}

// decimalKernel computes one operator row by row through math/big (exact; DECIMAL is not the hot path of the
// benchmarks). The temporaries are reused across rows.
func decimalKernel(op string, da, db, rt *arrow.Decimal128Type) kernel {
	limit := pow10Big[rt.Precision]
	return func(ec *evalCtx, args []value) (value, error) {
		pa, pb := primOf[decimal128.Num](args[0]), primOf[decimal128.Num](args[1])
		out := newPrimOut[decimal128.Num](ec, rt)
		out.initValidity(args[0], args[1])
		var x, y, r, q, m big.Int
		for i := range out.vals {
			if out.isNull(i) {
				continue
			}
			setBig(&x, pa.at(i))
			setBig(&y, pb.at(i))
			var bad *sqlerr.Error
			switch op {
			case "+", "-":
				scaleBig(&x, rt.Scale-da.Scale)
				scaleBig(&y, rt.Scale-db.Scale)
				if op == "+" {
					r.Add(&x, &y)
				} else {
					r.Sub(&x, &y)
				}
			case "*":
				r.Mul(&x, &y)
				roundBig(&r, da.Scale+db.Scale-rt.Scale, &q, &m)
			case "/":
				if y.Sign() == 0 {
					bad = divZeroErr()
					break
				}
				// x/10^s1 / (y/10^s2) * 10^s = x * 10^(s+s2-s1) / y
				shift := rt.Scale + db.Scale - da.Scale
				if shift >= 0 {
					x.Mul(&x, pow10Big[shift])
				} else {
					y.Mul(&y, pow10Big[-shift])
				}
				divRound(&r, &x, &y, &m)
			default:
				if y.Sign() == 0 {
					bad = divZeroErr()
					break
				}
				scaleBig(&x, rt.Scale-da.Scale)
				scaleBig(&y, rt.Scale-db.Scale)
				r.Rem(&x, &y)
			}
			if bad == nil && r.CmpAbs(limit) >= 0 {
				bad = rangeErr(rt)
			}
			if bad != nil {
				if err := ec.bad(bad, i); err != nil {
					out.release()
					return value{}, err
				}
				out.setNull(i)
				continue
			}
			out.vals[i] = decimal128.FromBigInt(&r)
		}
		return out.finish(), nil
	}
}

func setBig(z *big.Int, n decimal128.Num) {
	hi, lo := n.HighBits(), n.LowBits()
	if (hi == 0 && lo < 1<<63) || (hi == -1 && lo >= 1<<63) {
		z.SetInt64(int64(lo))
		return
	}
	z.Set(n.BigInt())
}

func scaleBig(z *big.Int, up int32) {
	if up > 0 {
		z.Mul(z, pow10Big[up])
	}
}

// roundBig divides z by 10^down rounding half away from zero (down <= 0: nothing).
func roundBig(z *big.Int, down int32, q, m *big.Int) {
	if down <= 0 {
		return
	}
	divRound(q, z, pow10Big[down], m)
	z.Set(q)
}

// divRound sets z = x / y rounded half away from zero.
func divRound(z, x, y, m *big.Int) {
	z.QuoRem(x, y, m)
	m.Abs(m)
	m.Lsh(m, 1)
	if m.CmpAbs(y) >= 0 {
		if (x.Sign() < 0) != (y.Sign() < 0) {
			z.Sub(z, big.NewInt(1))
		} else {
			z.Add(z, big.NewInt(1))
		}
	}
}

func decimalNegKernel(t *arrow.Decimal128Type) kernel {
	return func(ec *evalCtx, args []value) (value, error) {
		pa := primOf[decimal128.Num](args[0])
		out := newPrimOut[decimal128.Num](ec, t)
		out.initValidity(args[0])
		for i := range out.vals {
			out.vals[i] = pa.at(i).Negate()
		}
		return out.finish(), nil
	}
}

// parseDecimal reads a numeric text ("  -12.50 ", "1e3", ".5"). With scale < 0 it keeps the text's own scale and
// returns the precision it needs (trailing zeros past 38 places dropped; a value that needs more than 38 places
// is 22003, never rounded to another value); otherwise it rounds (half away from zero) to scale.
func parseDecimal(text string, scale int32) (n decimal128.Num, prec, sc int32, err error) {
	s := strings.TrimSpace(text)
	bad := func() (decimal128.Num, int32, int32, error) {
		return decimal128.Num{}, 0, 0, sqlerr.New(sqlerr.InvalidTextRep, sqlerr.NoPos, "invalid input syntax for type numeric: %q", text)
	}
	if s == "" {
		return bad()
	}
	neg := false
	switch s[0] {
	case '+', '-':
		neg = s[0] == '-'
		s = s[1:]
	}
	mant, exp := s, int64(0)
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		mant = s[:i]
		e, ok := parseInt64(s[i+1:])
		if !ok || e > 1000 || e < -1000 {
			return bad()
		}
		exp = e
	}
	digits := make([]byte, 0, len(mant))
	frac := int64(0)
	seenDot, seenDigit := false, false
	for i := 0; i < len(mant); i++ {
		c := mant[i]
		switch {
		case c >= '0' && c <= '9':
			digits = append(digits, c)
			seenDigit = true
			if seenDot {
				frac++
			}
		case c == '.' && !seenDot:
			seenDot = true
		default:
			return bad()
		}
	}
	if !seenDigit {
		return bad()
	}
	var v big.Int
	v.SetString(string(digits), 10)
	own := frac - exp // the scale of v
	if own < 0 {
		v.Mul(&v, new(big.Int).Exp(big.NewInt(10), big.NewInt(-own), nil))
		own = 0
	}
	target := int64(scale)
	if scale < 0 {
		for own > 38 && v.Sign() != 0 { // 0.1000...0 (zeros past 38 places) holds; 1e-300 does not
			var q, m big.Int
			if q.QuoRem(&v, pow10Big[1], &m); m.Sign() != 0 {
				return decimal128.Num{}, 0, 0, sqlerr.New(sqlerr.NumericOutOfRange, sqlerr.NoPos,
					"value %s does not fit NUMERIC: it needs %d decimal places, at most 38 are held", strings.TrimSpace(text), own)
			}
			v.Set(&q)
			own--
		}
		target = min(own, 38)
	}
	if own > target {
		var q, m big.Int
		divRound(&q, &v, new(big.Int).Exp(big.NewInt(10), big.NewInt(own-target), nil), &m)
		v.Set(&q)
	} else if own < target {
		v.Mul(&v, pow10Big[target-own])
	}
	if neg {
		v.Neg(&v)
	}
	if v.CmpAbs(pow10Big[38]) >= 0 {
		return decimal128.Num{}, 0, 0, sqlerr.New(sqlerr.NumericOutOfRange, sqlerr.NoPos, "numeric field overflow")
	}
	nd := int32(len(new(big.Int).Abs(&v).String()))
	prec = max(nd, int32(target), 1)
	return decimal128.FromBigInt(&v), prec, int32(target), nil
}

func parseInt64(s string) (int64, bool) {
	if s == "" {
		return 0, false
	}
	neg := false
	if s[0] == '+' || s[0] == '-' {
		neg = s[0] == '-'
		s = s[1:]
		if s == "" {
			return 0, false
		}
	}
	var v uint64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		if v > (1<<63)/10 {
			return 0, false
		}
		v = v*10 + uint64(c-'0')
		if v > 1<<63 {
			return 0, false
		}
	}
	if neg {
		return -int64(v), true
	}
	if v > 1<<63-1 {
		return 0, false
	}
	return int64(v), true
}

// rescaleDecimal converts n from scale `from` to `to` (rounding half away from zero when reducing) and checks it
// fits precision prec.
func rescaleDecimal(n decimal128.Num, from, to, prec int32) (decimal128.Num, bool) {
	if from == to {
		return n, n.FitsInPrecision(prec)
	}
	var z, q, m big.Int
	setBig(&z, n)
	if to > from {
		z.Mul(&z, pow10Big[to-from])
	} else {
		divRound(&q, &z, pow10Big[from-to], &m)
		z.Set(&q)
	}
	if z.CmpAbs(pow10Big[prec]) >= 0 {
		return decimal128.Num{}, false
	}
	return decimal128.FromBigInt(&z), true
}

func zeroScalar(t arrow.DataType) scalar.Scalar {
	switch t.ID() {
	case arrow.INT8:
		return scalar.NewInt8Scalar(0)
	case arrow.INT16:
		return scalar.NewInt16Scalar(0)
	case arrow.INT32:
		return scalar.NewInt32Scalar(0)
	case arrow.DURATION:
		return scalar.NewDurationScalar(0, t)
	}
	return scalar.NewInt64Scalar(0)
}

// pgDivScale is the scale Postgres gives the quotient of two constants (numeric.c's select_div_scale): enough
// fraction digits for at least 16 significant digits, judged by the base-10000 weights and first digits of the
// operands, and never fewer than either operand's scale. ok is false unless both are non-NULL constants.
func pgDivScale(a, b Expr, da, db *arrow.Decimal128Type) (int32, bool) {
	va, okA := decimalConstant(a)
	vb, okB := decimalConstant(b)
	if !okA || !okB {
		return 0, false
	}
	w1, f1 := base10000Lead(va, da.Scale)
	w2, f2 := base10000Lead(vb, db.Scale)
	q := w1 - w2
	if f1 <= f2 {
		q--
	}
	rs := int32(16 - q*4)
	rs = max(rs, da.Scale, db.Scale, 0)
	return min(rs, 38), true
}

func decimalConstant(e Expr) (*big.Int, bool) {
	sc, ok := ConstantValue(e)
	if !ok || !sc.IsValid() {
		return nil, false
	}
	d, ok := sc.(*scalar.Decimal128)
	if !ok {
		return nil, false
	}
	var x big.Int
	setBig(&x, d.Value)
	return &x, true
}

// base10000Lead returns the weight and value of the first non-zero base-10000 digit of unscaled/10^scale, as
// Postgres' numeric stores it (weight 0 is the units group, -1 the first four fraction digits); 0, 0 for zero.
func base10000Lead(unscaled *big.Int, scale int32) (weight, first int) {
	if unscaled.Sign() == 0 {
		return 0, 0
	}
	digits := new(big.Int).Abs(unscaled).String()
	var intPart, frac string
	if int(scale) >= len(digits) {
		intPart, frac = "", strings.Repeat("0", int(scale)-len(digits))+digits
	} else {
		intPart, frac = digits[:len(digits)-int(scale)], digits[len(digits)-int(scale):]
	}
	if strings.TrimLeft(intPart, "0") != "" {
		intPart = strings.TrimLeft(intPart, "0")
		weight = (len(intPart) - 1) / 4
		lead := len(intPart) - weight*4
		first, _ = strconv.Atoi(intPart[:lead])
		return weight, first
	}
	for len(frac)%4 != 0 {
		frac += "0"
	}
	for g := 0; g*4 < len(frac); g++ {
		if v, _ := strconv.Atoi(frac[g*4 : g*4+4]); v != 0 {
			return -(g + 1), v
		}
	}
	return 0, 0
}
