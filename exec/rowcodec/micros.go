package rowcodec

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/clinksql/clinksql/exec/expr"
)

// Micros returns a timestamp column's values in microseconds (floor for nanoseconds); values under NULLs are
// unspecified. The result is the array's own buffer for microseconds, else scratch. The window aggregate and the
// time joins read their event times with it.
func Micros(col *array.Timestamp, scratch *[]int64) []int64 {
	raw := Int64Values(col, scratch)
	var mul, div int64 = 1, 1
	switch col.DataType().(*arrow.TimestampType).Unit {
	case arrow.Microsecond:
		return raw
	case arrow.Second:
		mul = 1_000_000
	case arrow.Millisecond:
		mul = 1000
	case arrow.Nanosecond:
		div = 1000
	}
	if cap(*scratch) < len(raw) {
		*scratch = make([]int64, len(raw))
	}
	out := (*scratch)[:len(raw)]
	for i, v := range raw {
		if div != 1 {
			out[i] = expr.FloorDiv(v, div)
		} else {
			out[i] = v * mul
		}
	}
	return out
}
