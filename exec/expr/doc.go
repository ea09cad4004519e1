// Package expr is clinksql's one expression package: bound, typed scalar expressions evaluated vectorized over
// Arrow record batches. The planner binds SQL expressions to it; operators (filter/project, join conditions,
// window arguments, sinks) evaluate them.
//
// # Contract
//
//	type Expr interface {
//	    Type() arrow.DataType
//	    Eval(ctx *Context, rec arrow.RecordBatch) (arrow.Array, error) // rec.NumRows() rows; the caller releases
//	    String() string                                                // EXPLAIN text: "(price > 10)", "upper(channel)"
//	}
//	func Column(index int, name string, t arrow.DataType) Expr
//	func Literal(sc scalar.Scalar) Expr; Null(); NullOf(t); Int64(v); Int32(v); Float64(v); Bool(v); String(v);
//	     Decimal(text) (Expr, error); DecimalOf(n, t); Timestamp(us); Interval(us); Date(days)
//	func Call(name string, args ...Expr) (Expr, error) // binds through the function registry
//	func Cast(x Expr, to arrow.DataType) (Expr, error)  // explicit CAST / ::
//	func UserCall(fn UserFunction, ret arrow.DataType, args ...Expr) Expr // a user function's call (user.go)
//	func IsConstant(e) bool; ConstantValue(e) (scalar.Scalar, bool); ConstantInt64(e); ConstantString(e)
//	func Columns(es ...Expr) []int; RemapColumns(e, f) Expr; Children(e) []Expr; Equal(a, b) bool; CanFail(e) bool
//	func TypeName(t) string  // Postgres' name of a type, for messages
//	func CommonNumeric(a, b arrow.DataType) arrow.DataType // the type two numeric types combine in (nil: not both numeric)
//
// Context carries the allocator, the ErrorMode and the BadValues counter. One Context belongs to one goroutine;
// a bound Expr is immutable and may be shared. A user function (a WebAssembly module, exec/wasm) is a call like
// the others, its kernel an instance the Context opens at its first batch and keeps (one per subtask, reused
// across batches; Context.Close releases it): strict, never folded, a trap a bad value like any other.
//
// Binding errors are *sqlerr.Error without a position (the planner adds it): 42883 when no function or
// operator takes the argument types (Postgres' wording: "operator does not exist: text + bigint", "function
// upper(bigint) does not exist"); 42804 for an argument of the wrong type where one type is required (CASE
// branches that cannot be unified, LIKE on a number, a non-boolean AND operand); 42846 for an impossible cast;
// 2201B for a bad constant regular expression; a bad constant in a cast ('12x'::bigint) is its 22xxx error at
// bind time, as in Postgres.
//
// Run-time data errors (22012 division by zero, 22003 out of range, 22P02 bad number text, 22007 bad
// date/time text, 2201B bad regular expression, 2201F bad power/sqrt argument, 22011 negative substring length)
// follow Context.Mode: with ErrorsNull (the default of a running job) the value becomes NULL and BadValues is
// incremented once per bad value; with ErrorsFail Eval returns the *sqlerr.Error. Nothing panics on any input.
//
// # Types
//
// BOOLEAN bool, SMALLINT int16, INT int32, BIGINT int64, REAL float32, DOUBLE float64, DECIMAL(p,s)
// decimal128(p,s), TEXT string, BYTEA binary, DATE date32, TIMESTAMP timestamp[us] without zone, INTERVAL
// duration[us]; the NULL literal is arrow.Null until it meets another type. Implicit coercion follows Postgres:
// int16 < int32 < int64 < decimal < double for arithmetic and comparison (REAL with REAL stays REAL; a float with
// anything else is DOUBLE); DATE widens to TIMESTAMP; an untyped NULL or a string constant adopts the other
// operand's type ("ts > '2026-01-01'" compares timestamps, '1' + 2 is 3).
//
// # Functions and operators (Call names)
//
//	arithmetic   "+" "-" "*" "/" "%": integer division truncates (5/2 = 2); integer overflow is 22003;
//	             DECIMAL scales: see decimal.go (+,- max scale; * s1+s2; / max(6, s1+p2+1); % max scale);
//	             timestamp ± interval and interval + timestamp -> timestamp; timestamp - timestamp -> interval;
//	             interval ± interval; interval * or / number; date ± integer -> date; date - date -> integer;
//	             date ± interval -> timestamp
//	             "neg" (unary minus), "mod"(a, b) (% for integers and decimals)
//	comparison   "=" "<>" "!=" "<" "<=" ">" ">=" over one type family (strings by bytes)
//	logic        "and", "or" (Kleene three-valued, two or more arguments; when the right side can fail it is
//	             evaluated quietly on the rows the left side decides), "not",
//	             "is_null" "is_not_null" "is_true" "is_not_true" "is_false" "is_not_false",
//	             "in"(x, v1, v2, ...) (constants: arrow is_in with SQL NULL rules; otherwise x = v1 OR ...),
//	             "between"(x, lo, hi) (x >= lo AND x <= hi)
//	matching     "like"(s, p [, esc]), "ilike"(...): % and _, default escape backslash (Postgres); NOT LIKE is
//	             not(like(...)); "regexp_like"(s, re), "regexp_like_ci"(s, re): Postgres ~ and ~* (Go RE2 syntax,
//	             unanchored)
//	conditional  "case"(w1, t1, w2, t2, ..., [else]): searched CASE, an odd argument count has an ELSE (the
//	             planner rewrites a simple CASE to comparisons); a branch is only evaluated for its rows;
//	             "coalesce"(...), "nullif"(a, b), "greatest"(...), "least"(...) (these two ignore NULLs)
//	strings      "substring"/"substr"(s, from [, count]), "lower", "upper", "||", "concat"(...),
//	             "char_length"/"length"/"character_length", "octet_length",
//	             "split_index"(s, delim, idx) (Flink: 0-based, NULL out of range),
//	             "regexp_extract"(s, re [, group]) (Flink: group 0, the whole match, by default; NULL without a
//	             match), "trim"/"btrim"/"ltrim"/"rtrim"(s [, chars]), "replace"(s, from, to),
//	             "position"(sub, s), "strpos"(s, sub), "left"(s, n), "right"(s, n), "starts_with"(s, prefix),
//	             "md5"(s), "lpad"/"rpad"(s, n [, fill])
//	math         "abs", "round"(x [, d]), "floor", "ceil"/"ceiling", "sqrt", "power"/"pow"
//	temporal     "extract"/"date_part"(field, x) with a constant field: year quarter month week day dow isodow
//	             doy hour minute microsecond isoyear decade century millennium -> BIGINT; second ->
//	             DECIMAL(8,6); millisecond -> DECIMAL(8,3); epoch -> DECIMAL(19,6) (Postgres 14+); also on
//	             intervals; Flink's "year" "quarter" "month" "week" "dayofmonth" "dayofweek" "dayofyear" "hour"
//	             "minute" "second"(ts) -> BIGINT; "date_format"(ts, pattern) with Java/Flink letters
//	             (yyyy-MM-dd HH:mm:ss.SSS) or MySQL's (%Y-%m-%d %H:%i:%s); "date_trunc"(unit, ts);
//	             "to_timestamp"(text [, pattern]) and "to_timestamp"(epoch seconds)
//	cast         "cast"(x, NULL of the target type), the same as Cast
//	time         ProcTime() (not a Call name: PROCTIME(), TIMESTAMPTZ, the Context's Clock once per batch,
//	             never folded; IsProcTime tells it)
//
// Text forms (CAST to TEXT, ||) are Postgres' (textform.go, shared with exec/textform's CSV/JSON output),
// except that a BOOLEAN cast to text is 'true'/'false' as in Postgres.
//
// # How evaluation works
//
// Every node evaluates to a value that is a whole array or a constant (a scalar standing for every row), so
// `price > 10` never builds an array of tens. Arithmetic on floats, comparisons, boolean logic, IS NULL, IN,
// casts between numeric widths, filter and take are arrow-go compute kernels; what arrow-go lacks (strings,
// LIKE/regex, CASE/COALESCE, temporal fields, text parsing and printing, exact DECIMAL arithmetic) is a kernel
// here: a tight loop over one argument's buffers per call. Integer arithmetic is a loop here too, because
// arrow-go v18.8.0's checked kernels miss signed overflow toward the negative side (MinInt64 + -1 passes).
// Calls whose arguments are all constants are folded at bind time.
//
// A constant regular expression is compiled once, at bind time, with a literal prefilter (regex.go): when every
// match must contain a fixed string (a literal of the pattern's top-level concatenation), a text without it is no
// match without running the matcher, and when what precedes the literal is bounded the search starts just before
// its first occurrence (^ and \A, impossible there, are rewritten to never match; patterns with (?m)^, \b or \B
// are searched from the start). Results are re's own, bit for bit (regex_test.go compares them on random patterns
// and texts). Equal(a, b) tells a planner when two bound expressions are the same, so it can compute one once;
// CanFail(e) whether e can meet a bad value.
//
// # What this package must never do
//
//   - Interpret the expression tree per row: a node is visited once per batch, kernels loop over arrays.
//   - Box values per row (no any, no scalar.Scalar per row); constants are unpacked once per batch.
//   - Panic on data: every bad value is a NULL or a *sqlerr.Error per the Context's mode.
//   - Allocate Arrow memory anywhere but Context.Alloc (tests assert zero bytes leaked), or keep references to
//     a batch after Eval returns.
//   - Know about operators, state, the planner's AST or time zones (TIMESTAMP has none; everything is UTC).
package expr
