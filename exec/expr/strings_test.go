package expr

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// strBatch: s text with ASCII, multibyte UTF-8, empty, NULL, commas and blanks
func strBatch(t *testing.T, mem memory.Allocator) arrow.RecordBatch {
	return batch(t, mem, col{"s", TypeText, []any{"hello", "héllo wörld", "", nil, "a,b,,c", "  pad  "}})
}

var cstr = Column(0, "s", TypeText)

func TestExprStrings(t *testing.T) {
	runCases(t, strBatch, []exprCase{
		{name: "upper", e: call("upper", cstr), want: "HELLO,HÉLLO WÖRLD,,NULL,A,B,,C,  PAD  "},
		{name: "lower", e: call("lower", String("ÀB")), want: "àb,àb,àb,àb,àb,àb"},
		{name: "char_length", e: call("char_length", cstr), want: "5,11,0,NULL,6,7"},
		{name: "octet_length", e: call("octet_length", cstr), want: "5,13,0,NULL,6,7"},
		{name: "substring", e: call("substring", cstr, Int64(2), Int64(3)), want: "ell,éll,,NULL,,b,, pa"},
		// from 0 for 3 covers positions 0..2, of which 1 and 2 exist (Postgres)
		{name: "substring from 0", e: call("substring", cstr, Int64(0), Int64(3)), want: "he,hé,,NULL,a,,  "},
		{name: "substring negative from", e: call("substring", cstr, Int64(-1)), want: "hello,héllo wörld,,NULL,a,b,,c,  pad  "},
		{name: "substring multibyte", e: call("substring", cstr, Int64(8)), want: ",örld,,NULL,,"},
		{name: "substring negative length", e: call("substring", cstr, Int64(1), Int64(-1)), want: "NULL,NULL,NULL,NULL,NULL,NULL", bad: 5, failErr: "22011"},
		{name: "concat op", e: call("||", cstr, String("!")), want: "hello!,héllo wörld!,!,NULL,a,b,,c!,  pad  !"},
		{name: "concat op number", e: call("||", Int64(1), cstr), want: "1hello,1héllo wörld,1,NULL,1a,b,,c,1  pad  "},
		{name: "concat", e: call("concat", cstr, Null(), Int64(1)), want: "hello1,héllo wörld1,1,1,a,b,,c1,  pad  1"},
		{name: "split_index 2", e: call("split_index", cstr, String(","), Int64(2)), want: "NULL,NULL,NULL,NULL,,NULL"},
		{name: "split_index 3", e: call("split_index", cstr, String(","), Int64(3)), want: "NULL,NULL,NULL,NULL,c,NULL"},
		{name: "split_index 0", e: call("split_index", cstr, String(","), Int64(0)), want: "hello,héllo wörld,NULL,NULL,a,  pad  "},
		{name: "split_index negative", e: call("split_index", cstr, String(","), Int64(-1)), want: "NULL,NULL,NULL,NULL,NULL,NULL"},
		{name: "regexp_extract whole", e: call("regexp_extract", cstr, String("l+(o)")), want: "llo,llo,NULL,NULL,NULL,NULL"},
		{name: "regexp_extract group", e: call("regexp_extract", cstr, String("l+(o)"), Int64(1)), want: "o,o,NULL,NULL,NULL,NULL"},
		{name: "regexp_extract group missing", e: call("regexp_extract", cstr, String("l+(o)"), Int64(2)), want: "NULL,NULL,NULL,NULL,NULL,NULL"},
		{name: "regexp_extract unmatched group", e: call("regexp_extract", cstr, String("(x)?l"), Int64(1)), want: "NULL,NULL,NULL,NULL,NULL,NULL"},
		// a pattern per row: only the empty one matches (an empty match)
		{name: "regexp_extract varying", e: call("regexp_extract", String("abc"), cstr), want: "NULL,NULL,,NULL,NULL,NULL"},
		{name: "regexp_like varying bad", e: call("regexp_like", String("x"), mustCallF("||", cstr, String("("))), want: "NULL,NULL,NULL,NULL,NULL,NULL", bad: 5, failErr: "2201B"},
		{name: "trim", e: call("trim", cstr), want: "hello,héllo wörld,,NULL,a,b,,c,pad"},
		{name: "ltrim", e: call("ltrim", cstr), want: "hello,héllo wörld,,NULL,a,b,,c,pad  "},
		{name: "rtrim", e: call("rtrim", cstr), want: "hello,héllo wörld,,NULL,a,b,,c,  pad"},
		{name: "btrim chars", e: call("btrim", cstr, String("ho")), want: "ell,éllo wörld,,NULL,a,b,,c,  pad  "},
		{name: "replace", e: call("replace", cstr, String("l"), String("L")), want: "heLLo,héLLo wörLd,,NULL,a,b,,c,  pad  "},
		{name: "replace empty", e: call("replace", cstr, String(""), String("x")), want: "hello,héllo wörld,,NULL,a,b,,c,  pad  "},
		{name: "position", e: call("position", String("l"), cstr), want: "3,3,0,NULL,0,0"},
		{name: "position multibyte", e: call("position", String("ö"), cstr), want: "0,8,0,NULL,0,0"},
		{name: "strpos", e: call("strpos", cstr, String("d")), want: "0,11,0,NULL,0,5"},
		{name: "left", e: call("left", cstr, Int64(2)), want: "he,hé,,NULL,a,,  "},
		{name: "left negative", e: call("left", cstr, Int64(-2)), want: "hel,héllo wör,,NULL,a,b,,  pad"},
		{name: "right", e: call("right", cstr, Int64(3)), want: "llo,rld,,NULL,,,c,d  "},
		{name: "right negative", e: call("right", cstr, Int64(-2)), want: "llo,llo wörld,,NULL,b,,c,pad  "},
		{name: "starts_with", e: call("starts_with", cstr, String("he")), want: "t,f,f,NULL,f,f"},
		{name: "lpad", e: call("lpad", cstr, Int64(7), String("*")), want: "**hello,héllo w,*******,NULL,*a,b,,c,  pad  "},
		{name: "rpad", e: call("rpad", cstr, Int64(6)), want: "hello ,héllo ,      ,NULL,a,b,,c,  pad "},
		{name: "md5", e: call("md5", String("abc")), want: "900150983cd24fb0d6963f7d28e17f72,900150983cd24fb0d6963f7d28e17f72,900150983cd24fb0d6963f7d28e17f72,900150983cd24fb0d6963f7d28e17f72,900150983cd24fb0d6963f7d28e17f72,900150983cd24fb0d6963f7d28e17f72"},
		{name: "like prefix suffix", e: call("like", cstr, String("h%o")), want: "t,f,f,NULL,f,f"},
		{name: "like underscore", e: call("like", cstr, String("%l_o%")), want: "t,t,f,NULL,f,f"},
		{name: "like exact", e: call("like", cstr, String("hello")), want: "t,f,f,NULL,f,f"},
		{name: "like all", e: call("like", cstr, String("%")), want: "t,t,t,NULL,t,t"},
		{name: "like contains", e: call("like", cstr, String("%,,%")), want: "f,f,f,NULL,t,f"},
		{name: "like multibyte underscore", e: call("like", cstr, String("h_llo%")), want: "t,t,f,NULL,f,f"},
		{name: "like escape", e: call("like", String("100%"), String(`100\%`)), want: "t,t,t,t,t,t"},
		{name: "like escape literal", e: call("like", String("1000"), String(`100\%`)), want: "f,f,f,f,f,f"},
		{name: "like custom escape", e: call("like", String("a_b"), String("a#_b"), String("#")), want: "t,t,t,t,t,t"},
		{name: "like varying pattern", e: call("like", cstr, cstr), want: "t,t,t,NULL,t,t"},
		{name: "ilike", e: call("ilike", cstr, String("HÉL%")), want: "f,t,f,NULL,f,f"},
		{name: "regexp_like", e: call("regexp_like", cstr, String("^h.llo")), want: "t,t,f,NULL,f,f"},
		{name: "regexp_like_ci", e: call("regexp_like_ci", cstr, String("WÖR")), want: "f,t,f,NULL,f,f"},
		{name: "not like", e: func() (Expr, error) { return Call("not", mustCallF("like", cstr, String("%l%"))) }, want: "f,f,t,NULL,t,t"},
	})
}
