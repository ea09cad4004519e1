package expr

import (
	"crypto/md5"
	"encoding/hex"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow/bitutil"

	"github.com/clinksql/clinksql/sqlerr"
)

// String functions. Lengths and positions count characters (UTF-8 code points), as Postgres does with a UTF8
// database; comparisons are by bytes.

func init() {
	register(bindSubstring, "substring", "substr")
	register(bindCaseMap, "lower", "upper")
	register(bindConcatOp, "||")
	register(bindConcat, "concat")
	register(bindCharLength, "char_length", "length", "character_length")
	register(bindOctetLength, "octet_length")
	register(bindSplitIndex, "split_index")
	register(bindRegexpExtract, "regexp_extract")
	register(bindTrim, "trim", "btrim", "ltrim", "rtrim")
	register(bindReplace, "replace")
	register(bindPosition, "position", "strpos")
	register(bindLeftRight, "left", "right")
	register(bindStartsWith, "starts_with")
	register(bindMD5, "md5")
	register(bindPad, "lpad", "rpad")
}

// textArgs checks that every argument is text (a NULL literal becomes a text NULL), or reports 42883.
func textArgs(name string, args []Expr, n ...int) ([]Expr, error) {
	if len(n) > 0 {
		ok := false
		for _, k := range n {
			ok = ok || len(args) == k
		}
		if !ok {
			return nil, fnNotExist(name, args)
		}
	}
	out := make([]Expr, len(args))
	for i, a := range args {
		switch {
		case isString(a.Type()):
			out[i] = a
		case isNull(a.Type()):
			out[i] = NullOf(TypeText)
		default:
			return nil, fnNotExist(name, args)
		}
	}
	return out, nil
}

func intArg(name string, all []Expr, a Expr) (Expr, error) {
	switch {
	case isInteger(a.Type()):
		return coerce(a, TypeBigint)
	case isNull(a.Type()):
		return NullOf(TypeBigint), nil
	}
	return nil, fnNotExist(name, all)
}

// validity is the combined validity of the arguments of a strict kernel.
type validity struct{ bits []byte }

func validityOf(ec *evalCtx, args []value) (validity, func()) {
	buf, bits := andValidity(ec.mem, ec.n, args...)
	if buf == nil {
		return validity{}, func() {}
	}
	return validity{bits: bits}, buf.Release
}

func (v validity) null(i int) bool { return v.bits != nil && !bitutil.BitIsSet(v.bits, i) }

// textLoop builds a TEXT result: f appends row i's value to dst (null=true for NULL). Rows where an argument
// is NULL are NULL without calling f.
func textLoop(ec *evalCtx, args []value, hint int, f func(dst []byte, i int) ([]byte, bool)) (value, error) {
	vd, done := validityOf(ec, args)
	defer done()
	out := newStringOut(ec, TypeText, hint)
	var buf []byte
	for i := 0; i < ec.n; i++ {
		if vd.null(i) {
			out.b.AppendNull()
			continue
		}
		var null bool
		buf, null = f(buf[:0], i)
		if null {
			out.b.AppendNull()
		} else {
			out.b.Append(buf)
		}
	}
	return out.finish(), nil
}

func textHint(args []value) int {
	if len(args) > 0 && args[0].arr != nil {
		return len(args[0].arr.Data().Buffers()[2].Bytes())
	}
	return 0
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// runeSlice returns the characters [from, from+count) of s (0-based; count < 0: to the end).
func runeSlice(s string, from, count int64) string {
	if from < 0 {
		if count >= 0 {
			count += from
			if count < 0 {
				count = 0
			}
		}
		from = 0
	}
	if isASCII(s) {
		n := int64(len(s))
		if from >= n {
			return ""
		}
		end := n
		if count >= 0 && count < n-from {
			end = from + count
		}
		return s[from:end]
	}
	start := -1
	var k int64
	for i := range s {
		if k == from {
			start = i
		}
		if start >= 0 && count >= 0 && k-from == count {
			return s[start:i]
		}
		k++
	}
	if start < 0 {
		return ""
	}
	return s[start:]
}

// ---- substring ----

// bindSubstring: SUBSTRING(s, from [, count]) with Postgres' rules: characters from position `from` (1-based;
// positions before 1 count but yield nothing) for `count` characters; a negative count is 22011.
func bindSubstring(name string, args []Expr) (Expr, error) {
	if len(args) != 2 && len(args) != 3 {
		return nil, fnNotExist(name, args)
	}
	s, err := textArgs(name, args[:1])
	if err != nil {
		return nil, fnNotExist(name, args)
	}
	out := []Expr{s[0]}
	for _, a := range args[1:] {
		c, err := intArg(name, args, a)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	withLen := len(out) == 3
	return &callExpr{name: name, args: out, typ: TypeText, strict: true, canFail: withLen,
		kern: func(ec *evalCtx, args []value) (value, error) {
			ss, from := strsOf(args[0]), primOf[int64](args[1])
			var cnt prim[int64]
			if withLen {
				cnt = primOf[int64](args[2])
			}
			var failure error
			v, err := textLoop(ec, args, textHint(args), func(dst []byte, i int) ([]byte, bool) {
				start := from.at(i) - 1
				count := int64(-1)
				if withLen {
					count = cnt.at(i)
					if count < 0 {
						if failure == nil {
							failure = ec.bad(sqlerr.New("22011", sqlerr.NoPos, "negative substring length not allowed"), i)
						}
						return dst, true
					}
				}
				return append(dst, runeSlice(ss.at(i), start, count)...), false
			})
			if err == nil && failure != nil {
				v.release()
				return value{}, failure
			}
			return v, err
		}}, nil
}

// ---- lower / upper ----

func bindCaseMap(name string, args []Expr) (Expr, error) {
	a, err := textArgs(name, args, 1)
	if err != nil {
		return nil, err
	}
	upper := name == "upper"
	return &callExpr{name: name, args: a, typ: TypeText, strict: true,
		kern: func(ec *evalCtx, args []value) (value, error) {
			ss := strsOf(args[0])
			return textLoop(ec, args, textHint(args), func(dst []byte, i int) ([]byte, bool) {
				s := ss.at(i)
				if !isASCII(s) {
					if upper {
						return append(dst, strings.ToUpper(s)...), false
					}
					return append(dst, strings.ToLower(s)...), false
				}
				for k := 0; k < len(s); k++ {
					c := s[k]
					if upper && c >= 'a' && c <= 'z' {
						c -= 'a' - 'A'
					} else if !upper && c >= 'A' && c <= 'Z' {
						c += 'a' - 'A'
					}
					dst = append(dst, c)
				}
				return dst, false
			})
		}}, nil
}

// ---- || and concat ----

// asText casts a non-text argument to text (Postgres' anynonarray || text).
func asText(e Expr) (Expr, error) {
	switch {
	case isString(e.Type()):
		return e, nil
	case isNull(e.Type()):
		return NullOf(TypeText), nil
	}
	return Cast(e, TypeText)
}

func bindConcatOp(name string, args []Expr) (Expr, error) {
	if len(args) != 2 {
		return nil, fnNotExist(name, args)
	}
	a, b := args[0], args[1]
	if !isString(a.Type()) && !isString(b.Type()) && !isNull(a.Type()) && !isNull(b.Type()) {
		return nil, opNotExist("||", a.Type(), b.Type())
	}
	var err error
	if a, err = asText(a); err != nil {
		return nil, err
	}
	if b, err = asText(b); err != nil {
		return nil, err
	}
	return &callExpr{name: name, args: []Expr{a, b}, typ: TypeText, strict: true, render: infix("||"),
		kern: func(ec *evalCtx, args []value) (value, error) {
			x, y := strsOf(args[0]), strsOf(args[1])
			return textLoop(ec, args, textHint(args)+textHint(args[1:]), func(dst []byte, i int) ([]byte, bool) {
				return append(append(dst, x.at(i)...), y.at(i)...), false
			})
		}}, nil
}

// bindConcat: CONCAT(a, b, ...) casts every argument to text and skips NULLs; the result is never NULL.
func bindConcat(name string, args []Expr) (Expr, error) {
	out := make([]Expr, 0, len(args))
	for _, a := range args {
		t, err := asText(a)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return &callExpr{name: name, args: out, typ: TypeText,
		kern: func(ec *evalCtx, args []value) (value, error) {
			ss := make([]strs, len(args))
			for k, a := range args {
				ss[k] = strsOf(a)
			}
			return textLoop(ec, nil, 0, func(dst []byte, i int) ([]byte, bool) {
				for k := range ss {
					if !ss[k].null(i) {
						dst = append(dst, ss[k].at(i)...)
					}
				}
				return dst, false
			})
		}}, nil
}

// ---- lengths ----

func bindCharLength(name string, args []Expr) (Expr, error) {
	a, err := textArgs(name, args, 1)
	if err != nil {
		return nil, err
	}
	return &callExpr{name: name, args: a, typ: TypeInt, strict: true,
		kern: func(ec *evalCtx, args []value) (value, error) {
			ss := strsOf(args[0])
			return mapLoopWith(ec, args[:1], TypeInt, func(i int) (int32, *sqlerr.Error) {
				return int32(utf8.RuneCountInString(ss.at(i))), nil
			})
		}}, nil
}

func bindOctetLength(name string, args []Expr) (Expr, error) {
	if len(args) != 1 || !(isString(args[0].Type()) || isBytea(args[0].Type())) {
		return nil, fnNotExist(name, args)
	}
	return &callExpr{name: name, args: args, typ: TypeInt, strict: true,
		kern: func(ec *evalCtx, args []value) (value, error) {
			ss := strsOf(args[0])
			return mapLoopWith(ec, args[:1], TypeInt, func(i int) (int32, *sqlerr.Error) { return int32(len(ss.at(i))), nil })
		}}, nil
}

// ---- split_index ----

// bindSplitIndex: Flink's SPLIT_INDEX(s, delimiter, index): the index-th (0-based) field of s split at every
// occurrence of delimiter (empty fields kept); NULL when index is out of range or negative, or s is empty.
func bindSplitIndex(name string, args []Expr) (Expr, error) {
	if len(args) != 3 {
		return nil, fnNotExist(name, args)
	}
	sd, err := textArgs(name, args[:2])
	if err != nil {
		return nil, fnNotExist(name, args)
	}
	idx, err := intArg(name, args, args[2])
	if err != nil {
		return nil, err
	}
	return &callExpr{name: name, args: []Expr{sd[0], sd[1], idx}, typ: TypeText, strict: true,
		kern: func(ec *evalCtx, args []value) (value, error) {
			ss, ds, is := strsOf(args[0]), strsOf(args[1]), primOf[int64](args[2])
			return textLoop(ec, args, 0, func(dst []byte, i int) ([]byte, bool) {
				s, d, k := ss.at(i), ds.at(i), is.at(i)
				if k < 0 || s == "" {
					return dst, true
				}
				if d == "" { // commons-lang splits at whitespace then
					f := strings.Fields(s)
					if k >= int64(len(f)) {
						return dst, true
					}
					return append(dst, f[k]...), false
				}
				for ; k > 0; k-- {
					j := strings.Index(s, d)
					if j < 0 {
						return dst, true
					}
					s = s[j+len(d):]
				}
				if j := strings.Index(s, d); j >= 0 {
					s = s[:j]
				}
				return append(dst, s...), false
			})
		}}, nil
}

// ---- regexp_extract ----

// regexCache compiles patterns: a constant one once at bind time, others per distinct value as rows bring them.
type regexCache struct {
	fixed *regex
	last  string
	re    *regex
	err   *sqlerr.Error
	ci    bool
}

func compileRegex(p string, ci bool) (*regex, *sqlerr.Error) {
	if ci {
		p = "(?i)" + p
	}
	re, err := regexp.Compile(p)
	if err != nil {
		return nil, sqlerr.New(sqlerr.InvalidRegex, sqlerr.NoPos, "invalid regular expression: %v", err)
	}
	return newRegex(re), nil
}

func newRegexCache(pattern Expr, ci bool) (*regexCache, error) {
	rc := &regexCache{ci: ci}
	if p, null, ok := ConstantString(pattern); ok && !null {
		re, err := compileRegex(p, ci)
		if err != nil {
			return nil, err
		}
		rc.fixed = re
	}
	return rc, nil
}

// forCall copies the cache for one kernel call: a bound expression may be evaluated by several goroutines.
func (rc *regexCache) forCall() *regexCache { c := *rc; return &c }

// get returns the compiled pattern for row text p.
func (rc *regexCache) get(p string) (*regex, *sqlerr.Error) {
	if rc.fixed != nil {
		return rc.fixed, nil
	}
	if rc.re == nil && rc.err == nil || p != rc.last {
		rc.last = p
		rc.re, rc.err = compileRegex(p, rc.ci)
	}
	return rc.re, rc.err
}

// bindRegexpExtract: Flink's REGEXP_EXTRACT(s, pattern [, group]): the given group (default 0, the whole
// match) of the first match; NULL when nothing matches, the group does not exist or did not take part. The
// pattern is Go's RE2 syntax (Java's without backreferences and lookaround).
func bindRegexpExtract(name string, args []Expr) (Expr, error) {
	if len(args) != 2 && len(args) != 3 {
		return nil, fnNotExist(name, args)
	}
	sp, err := textArgs(name, args[:2])
	if err != nil {
		return nil, fnNotExist(name, args)
	}
	all := sp
	if len(args) == 3 {
		g, err := intArg(name, args, args[2])
		if err != nil {
			return nil, err
		}
		all = append(all, g)
	}
	rc, err := newRegexCache(sp[1], false)
	if err != nil {
		return nil, err
	}
	return &callExpr{name: name, args: all, typ: TypeText, strict: true, canFail: rc.fixed == nil,
		kern: func(ec *evalCtx, args []value) (value, error) {
			rc := rc.forCall()
			ss, ps := strsOf(args[0]), strsOf(args[1])
			var gs prim[int64]
			if len(args) == 3 {
				gs = primOf[int64](args[2])
			}
			var failure error
			v, err := textLoop(ec, args, 0, func(dst []byte, i int) ([]byte, bool) {
				re, e := rc.get(ps.at(i))
				if e != nil {
					if failure == nil {
						failure = ec.bad(e, i)
					}
					return dst, true
				}
				g := int64(0)
				if len(args) == 3 {
					g = gs.at(i)
				}
				if g < 0 || g > int64(re.NumSubexp()) {
					return dst, true
				}
				m := re.FindStringSubmatchIndex(ss.at(i))
				if m == nil || m[2*g] < 0 {
					return dst, true
				}
				return append(dst, ss.at(i)[m[2*g]:m[2*g+1]]...), false
			})
			if err == nil && failure != nil {
				v.release()
				return value{}, failure
			}
			return v, err
		}}, nil
}

// ---- trim ----

// bindTrim: TRIM/BTRIM(s [, chars]), LTRIM, RTRIM: remove any of the characters in chars (default a space) from
// both ends, the start or the end.
func bindTrim(name string, args []Expr) (Expr, error) {
	a, err := textArgs(name, args, 1, 2)
	if err != nil {
		return nil, err
	}
	return &callExpr{name: name, args: a, typ: TypeText, strict: true,
		kern: func(ec *evalCtx, args []value) (value, error) {
			ss := strsOf(args[0])
			var cs strs
			if len(args) == 2 {
				cs = strsOf(args[1])
			}
			return textLoop(ec, args, textHint(args), func(dst []byte, i int) ([]byte, bool) {
				cut := " "
				if len(args) == 2 {
					cut = cs.at(i)
				}
				s := ss.at(i)
				switch name {
				case "ltrim":
					s = strings.TrimLeft(s, cut)
				case "rtrim":
					s = strings.TrimRight(s, cut)
				default:
					s = strings.Trim(s, cut)
				}
				return append(dst, s...), false
			})
		}}, nil
}

// ---- replace ----

func bindReplace(name string, args []Expr) (Expr, error) {
	a, err := textArgs(name, args, 3)
	if err != nil {
		return nil, err
	}
	return &callExpr{name: name, args: a, typ: TypeText, strict: true,
		kern: func(ec *evalCtx, args []value) (value, error) {
			ss, fs, ts := strsOf(args[0]), strsOf(args[1]), strsOf(args[2])
			return textLoop(ec, args, textHint(args), func(dst []byte, i int) ([]byte, bool) {
				s, from := ss.at(i), fs.at(i)
				if from == "" {
					return append(dst, s...), false
				}
				return append(dst, strings.ReplaceAll(s, from, ts.at(i))...), false
			})
		}}, nil
}

// ---- position ----

// bindPosition: POSITION(sub, s) (the planner passes POSITION(sub IN s) in this order) and STRPOS(s, sub):
// the 1-based character position of the first occurrence, 0 when absent.
func bindPosition(name string, args []Expr) (Expr, error) {
	a, err := textArgs(name, args, 2)
	if err != nil {
		return nil, err
	}
	if name == "strpos" {
		a[0], a[1] = a[1], a[0]
	}
	return &callExpr{name: name, args: a, typ: TypeInt, strict: true,
		kern: func(ec *evalCtx, args []value) (value, error) {
			sub, ss := strsOf(args[0]), strsOf(args[1])
			vd, done := validityOf(ec, args)
			defer done()
			out := newPrimOut[int32](ec, TypeInt)
			out.initValidity(args...)
			for i := range out.vals {
				if vd.null(i) {
					continue
				}
				s := ss.at(i)
				j := strings.Index(s, sub.at(i))
				if j < 0 {
					continue
				}
				out.vals[i] = int32(utf8.RuneCountInString(s[:j]) + 1)
			}
			return out.finish(), nil
		}}, nil
}

// ---- left / right ----

// bindLeftRight: LEFT(s, n) the first n characters (n < 0: all but the last -n); RIGHT(s, n) the last n (n < 0:
// all but the first -n).
func bindLeftRight(name string, args []Expr) (Expr, error) {
	if len(args) != 2 {
		return nil, fnNotExist(name, args)
	}
	s, err := textArgs(name, args[:1])
	if err != nil {
		return nil, fnNotExist(name, args)
	}
	n, err := intArg(name, args, args[1])
	if err != nil {
		return nil, err
	}
	left := name == "left"
	return &callExpr{name: name, args: []Expr{s[0], n}, typ: TypeText, strict: true,
		kern: func(ec *evalCtx, args []value) (value, error) {
			ss, ns := strsOf(args[0]), primOf[int64](args[1])
			return textLoop(ec, args, textHint(args), func(dst []byte, i int) ([]byte, bool) {
				s, k := ss.at(i), ns.at(i)
				total := int64(utf8.RuneCountInString(s))
				var from, count int64
				switch {
				case left && k >= 0:
					from, count = 0, k
				case left:
					from, count = 0, max(total+k, 0)
				case k >= 0:
					from, count = max(total-k, 0), -1
				default:
					from, count = min(-k, total), -1
				}
				return append(dst, runeSlice(s, from, count)...), false
			})
		}}, nil
}

// ---- starts_with, md5, lpad/rpad ----

func bindStartsWith(name string, args []Expr) (Expr, error) {
	a, err := textArgs(name, args, 2)
	if err != nil {
		return nil, err
	}
	return &callExpr{name: name, args: a, typ: TypeBool, strict: true,
		kern: func(ec *evalCtx, args []value) (value, error) {
			ss, ps := strsOf(args[0]), strsOf(args[1])
			return boolLoop(ec, args, func(i int) bool { return strings.HasPrefix(ss.at(i), ps.at(i)) })
		}}, nil
}

// boolLoop builds a BOOLEAN result of a strict predicate.
func boolLoop(ec *evalCtx, args []value, f func(i int) bool) (value, error) {
	vd, done := validityOf(ec, args)
	defer done()
	out := newBoolOut(ec)
	for i := 0; i < ec.n; i++ {
		if vd.null(i) {
			out.setNull(i)
			continue
		}
		out.set(i, f(i))
	}
	return out.finish(), nil
}

func bindMD5(name string, args []Expr) (Expr, error) {
	a, err := textArgs(name, args, 1)
	if err != nil {
		return nil, err
	}
	return &callExpr{name: name, args: a, typ: TypeText, strict: true,
		kern: func(ec *evalCtx, args []value) (value, error) {
			ss := strsOf(args[0])
			return textLoop(ec, args, ec.n*32, func(dst []byte, i int) ([]byte, bool) {
				sum := md5.Sum([]byte(ss.at(i)))
				return hex.AppendEncode(dst, sum[:]), false
			})
		}}, nil
}

// maxPad is the longest LPAD/RPAD result, in characters: more is 54000 "requested length too large" (Postgres
// allows up to 1 GB; a streaming job should not build such values row after row).
const maxPad = 1 << 20

// bindPad: LPAD/RPAD(s, n [, fill]) to n characters (fill defaults to a space; a longer s is cut to n).
func bindPad(name string, args []Expr) (Expr, error) {
	if len(args) != 2 && len(args) != 3 {
		return nil, fnNotExist(name, args)
	}
	s, err := textArgs(name, args[:1])
	if err != nil {
		return nil, fnNotExist(name, args)
	}
	n, err := intArg(name, args, args[1])
	if err != nil {
		return nil, err
	}
	all := []Expr{s[0], n}
	if len(args) == 3 {
		f, err := textArgs(name, args[2:])
		if err != nil {
			return nil, fnNotExist(name, args)
		}
		all = append(all, f[0])
	}
	left := name == "lpad"
	return &callExpr{name: name, args: all, typ: TypeText, strict: true, canFail: true,
		kern: func(ec *evalCtx, args []value) (value, error) {
			ss, ns := strsOf(args[0]), primOf[int64](args[1])
			var fs strs
			if len(args) == 3 {
				fs = strsOf(args[2])
			}
			var failure error
			v, err := textLoop(ec, args, 0, func(dst []byte, i int) ([]byte, bool) {
				s, k := ss.at(i), ns.at(i)
				if k > maxPad {
					if failure == nil {
						failure = ec.bad(sqlerr.New("54000", sqlerr.NoPos, "requested length too large"), i)
					}
					return dst, true
				}
				fill := " "
				if len(args) == 3 {
					fill = fs.at(i)
				}
				have := int64(utf8.RuneCountInString(s))
				if k <= have || fill == "" {
					return append(dst, runeSlice(s, 0, max(min(k, have), 0))...), false
				}
				fr := []rune(fill)
				if !left {
					dst = append(dst, s...)
				}
				for j := int64(0); j < k-have; j++ {
					dst = utf8.AppendRune(dst, fr[j%int64(len(fr))])
				}
				if left {
					dst = append(dst, s...)
				}
				return dst, false
			})
			if err == nil && failure != nil {
				v.release()
				return value{}, failure
			}
			return v, err
		}}, nil
}

func init() {
	register(bindVarcharFit, "varchar_check", "varchar_truncate")
}

// bindVarcharFit binds varchar_check(s, n) and varchar_truncate(s, n): a value stored into VARCHAR(n) (the
// assignment: longer than n characters is 22001 "value too long for type character varying(n)", unless the excess
// is spaces, which are cut, as Postgres does), and an explicit cast to VARCHAR(n) (cut to n characters).
func bindVarcharFit(name string, args []Expr) (Expr, error) {
	if len(args) != 2 {
		return nil, fnNotExist(name, args)
	}
	a, err := textArgs(name, args[:1], 1)
	if err != nil {
		return nil, err
	}
	n, null, ok := ConstantInt64(args[1])
	if !ok || null || n < 0 {
		return nil, sqlerr.New(sqlerr.DatatypeMismatch, sqlerr.NoPos, "%s needs a constant length", name)
	}
	check := name == "varchar_check"
	return &callExpr{name: name, args: []Expr{a[0], args[1]}, typ: TypeText, strict: true, canFail: check,
		kern: func(ec *evalCtx, vals []value) (value, error) {
			ss := strsOf(vals[0])
			var failed error
			v, err := textLoop(ec, vals[:1], textHint(vals), func(dst []byte, i int) ([]byte, bool) {
				s := ss.at(i)
				if int64(utf8.RuneCountInString(s)) <= n {
					return append(dst, s...), false
				}
				cut, k := 0, int64(0)
				for cut < len(s) && k < n {
					_, size := utf8.DecodeRuneInString(s[cut:])
					cut += size
					k++
				}
				if check && strings.TrimRight(s[cut:], " ") != "" {
					if err := ec.bad(sqlerr.New(sqlerr.StringTooLong, sqlerr.NoPos, "value too long for type character varying(%d)", n), i); err != nil {
						failed = err
					}
					return dst, true
				}
				return append(dst, s[:cut]...), false
			})
			if failed != nil {
				v.release()
				return value{}, failed
			}
			return v, err
		}}, nil
}
