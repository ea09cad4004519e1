package expr

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clinksql/clinksql/exec"
)

// TestExprNoPanic evaluates every function family over seeded random batches full of edge values (extreme
// integers, NaN, empty and invalid UTF-8 strings, NULLs) in both error modes: nothing may panic or leak, and
// every result has the batch's row count.
func TestExprNoPanic(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	ints := []any{int64(0), int64(1), int64(-1), int64(math.MaxInt64), int64(math.MinInt64), int64(7), int64(1 << 40), nil}
	floats := []any{0.0, -0.0, 1.5, math.NaN(), math.Inf(1), math.Inf(-1), 1e308, nil}
	strs := []any{"", "a", "héllo", "\xff\xfe", "%_\\", "(", "2026-01-01", "12", " 10 seconds", nil}
	decs := []any{"0.00", "-99999999.99", "99999999.99", "0.01", nil}
	n := 64
	pick := func(vals []any) []any {
		out := make([]any, n)
		for i := range out {
			out[i] = vals[r.IntN(len(vals))]
		}
		return out
	}
	mk := func(t *testing.T, mem memory.Allocator) arrow.RecordBatch {
		return batch(t, mem,
			col{"i", TypeBigint, pick(ints)}, col{"j", TypeBigint, pick(ints)},
			col{"f", TypeDouble, pick(floats)}, col{"s", TypeText, pick(strs)}, col{"u", TypeText, pick(strs)},
			col{"d", TypeDecimal(10, 2), pick(decs)}, col{"ts", TypeTimestamp, pick(ints)})
	}
	i, j := Column(0, "i", TypeBigint), Column(1, "j", TypeBigint)
	f, s, u := Column(2, "f", TypeDouble), Column(3, "s", TypeText), Column(4, "u", TypeText)
	d, ts := Column(5, "d", TypeDecimal(10, 2)), Column(6, "ts", TypeTimestamp)
	exprs := [][]Expr{
		{i, j}, {i, f}, {d, i}, {d, d}, {f, f},
	}
	var bound []Expr
	for _, op := range []string{"+", "-", "*", "/", "%", "=", "<", "greatest", "least", "coalesce", "nullif"} {
		for _, args := range exprs {
			if e, err := Call(op, args...); err == nil {
				bound = append(bound, e)
			}
		}
	}
	for _, c := range []struct {
		name string
		args []Expr
	}{
		{"neg", []Expr{i}}, {"abs", []Expr{i}}, {"abs", []Expr{d}}, {"round", []Expr{f}}, {"round", []Expr{d, Int64(-50)}},
		{"round", []Expr{d, Int64(40)}}, {"floor", []Expr{d}}, {"ceil", []Expr{f}}, {"sqrt", []Expr{f}}, {"power", []Expr{f, f}},
		{"substring", []Expr{s, i, j}}, {"substring", []Expr{s, i}}, {"left", []Expr{s, i}}, {"right", []Expr{s, i}},
		{"lpad", []Expr{s, i, u}}, {"upper", []Expr{s}}, {"char_length", []Expr{s}}, {"split_index", []Expr{s, u, i}},
		{"regexp_extract", []Expr{s, u, i}}, {"regexp_like", []Expr{s, u}}, {"like", []Expr{s, u}}, {"ilike", []Expr{s, u, String("")}},
		{"like", []Expr{s, u, u}}, {"trim", []Expr{s, u}}, {"replace", []Expr{s, u, s}}, {"position", []Expr{u, s}},
		{"||", []Expr{s, i}}, {"concat", []Expr{s, f, d, ts}}, {"md5", []Expr{s}}, {"to_timestamp", []Expr{s, u}},
		{"to_timestamp", []Expr{f}}, {"date_format", []Expr{ts, s}}, {"date_trunc", []Expr{String("week"), ts}},
		{"extract", []Expr{String("epoch"), ts}}, {"extract", []Expr{String("century"), ts}}, {"dayofweek", []Expr{ts}},
		{"+", []Expr{ts, Interval(math.MaxInt64)}}, {"-", []Expr{ts, ts}}, {"*", []Expr{Interval(1 << 62), f}},
		{"in", []Expr{i, Int64(1), Null()}}, {"case", []Expr{Call2("<", i, j), Call2("/", i, j), Call2("%", j, i)}},
		{"and", []Expr{Call2(">", Call2("/", i, j), Int64(0)), Call2("<", Call2("%", j, i), Int64(1))}},
	} {
		e, err := Call(c.name, c.args...)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		bound = append(bound, e)
	}
	for _, to := range []arrow.DataType{TypeBigint, TypeInt, TypeSmallint, TypeDouble, TypeReal, TypeDecimal(5, 2), TypeBool, TypeTimestamp, TypeDate, TypeInterval, TypeText, TypeBytea} {
		for _, x := range []Expr{i, f, s, d, ts} {
			if e, err := Cast(x, to); err == nil {
				bound = append(bound, e)
			}
		}
	}
	for round := 0; round < 3; round++ {
		for _, e := range bound {
			for _, mode := range []ErrorMode{ErrorsNull, ErrorsFail} {
				func() {
					defer func() {
						if p := recover(); p != nil {
							t.Fatalf("%s panicked: %v", e, p)
						}
					}()
					mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
					rec := mk(t, mem)
					arr, err := e.Eval(&Context{Alloc: mem, Mode: mode, BadValues: &exec.Counter{}}, rec)
					if err == nil {
						if arr.Len() != n {
							t.Errorf("%s: %d rows", e, arr.Len())
						}
						arr.Release()
					} else if mode == ErrorsNull {
						t.Errorf("%s in null mode: %v", e, err)
					}
					rec.Release()
					mem.AssertSize(t, 0)
				}()
			}
		}
	}
}

// Call2 binds or panics (test tables).
func Call2(name string, args ...Expr) Expr { return mustCallF(name, args...) }
