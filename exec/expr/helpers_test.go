package expr

import (
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/sqlerr"
)

// checked returns an allocator that fails the test if anything allocated through it is still live at the end.
func checked(t testing.TB) *memory.CheckedAllocator {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	return mem
}

// col is one column of a test batch: its type and values (nil for NULL).
type col struct {
	name string
	typ  arrow.DataType
	vals []any
}

// batch builds a record batch from columns of Go values (int64 for integer, timestamp, interval and date
// columns; float64; string; bool; string text for decimals).
func batch(t testing.TB, mem memory.Allocator, cols ...col) arrow.RecordBatch {
	t.Helper()
	fields := make([]arrow.Field, len(cols))
	arrs := make([]arrow.Array, len(cols))
	n := 0
	for i, c := range cols {
		fields[i] = arrow.Field{Name: c.name, Type: c.typ, Nullable: true}
		b := array.NewBuilder(mem, c.typ)
		for _, v := range c.vals {
			if v == nil {
				b.AppendNull()
				continue
			}
			switch bb := b.(type) {
			case *array.Int16Builder:
				bb.Append(int16(v.(int)))
			case *array.Int32Builder:
				bb.Append(int32(v.(int)))
			case *array.Int64Builder:
				switch x := v.(type) {
				case int:
					bb.Append(int64(x))
				case int64:
					bb.Append(x)
				}
			case *array.Float64Builder:
				bb.Append(v.(float64))
			case *array.Float32Builder:
				bb.Append(float32(v.(float64)))
			case *array.StringBuilder:
				bb.Append(v.(string))
			case *array.BinaryBuilder:
				bb.Append([]byte(v.(string)))
			case *array.BooleanBuilder:
				bb.Append(v.(bool))
			case *array.TimestampBuilder:
				bb.Append(arrow.Timestamp(toI64(v)))
			case *array.DurationBuilder:
				bb.Append(arrow.Duration(toI64(v)))
			case *array.Date32Builder:
				bb.Append(arrow.Date32(toI64(v)))
			case *array.Decimal128Builder:
				dt := c.typ.(*arrow.Decimal128Type)
				num, _, _, err := parseDecimal(v.(string), dt.Scale)
				if err != nil {
					t.Fatal(err)
				}
				bb.Append(num)
			default:
				t.Fatalf("no builder for %s", c.typ)
			}
		}
		arrs[i] = b.NewArray()
		b.Release()
		n = len(c.vals)
	}
	rec := array.NewRecordBatch(arrow.NewSchema(fields, nil), arrs, int64(n))
	for _, a := range arrs {
		a.Release()
	}
	return rec
}

func toI64(v any) int64 {
	switch x := v.(type) {
	case int:
		return int64(x)
	case int64:
		return x
	}
	panic(fmt.Sprintf("not an int: %T", v))
}

// texts renders an array as Postgres text forms, NULL as "NULL".
func texts(t testing.TB, a arrow.Array) []string {
	t.Helper()
	out := make([]string, a.Len())
	app, err := textAppender(a)
	if a.DataType().ID() == arrow.NULL {
		for i := range out {
			out[i] = "NULL"
		}
		return out
	}
	if err != nil {
		t.Fatal(err)
	}
	for i := range out {
		if a.IsNull(i) {
			out[i] = "NULL"
			continue
		}
		out[i] = string(app(nil, i))
	}
	return out
}

// evalTexts evaluates e over rec and returns the text forms.
func evalTexts(t testing.TB, mem memory.Allocator, e Expr, rec arrow.RecordBatch, mode ErrorMode, bad *exec.Counter) ([]string, error) {
	t.Helper()
	ctx := &Context{Alloc: mem, Mode: mode, BadValues: bad}
	arr, err := e.Eval(ctx, rec)
	if err != nil {
		return nil, err
	}
	defer arr.Release()
	if arr.Len() != int(rec.NumRows()) {
		t.Fatalf("%s: %d rows, want %d", e, arr.Len(), rec.NumRows())
	}
	return texts(t, arr), nil
}

func mustCall(t testing.TB, name string, args ...Expr) Expr {
	t.Helper()
	e, err := Call(name, args...)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return e
}

func join(s []string) string { return strings.Join(s, ",") }

func codeOf(err error) string { return sqlerr.Code(err) }
