package connectors

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/clinksql/clinksql/exec/expr"
)

// PartitionKeyType reports whether a column of type t can be a PARTITIONED BY column: its value names a
// directory (col=value), so it needs an exact text form that every reader parses back the same. Strings,
// integers, dates, booleans and decimals have one; floats (no exact text), bytes, timestamps (Flink, Hive and
// Postgres print them differently: format them with DATE_FORMAT into a string column, as Nexmark q10 does) and
// intervals do not.
func PartitionKeyType(t arrow.DataType) error {
	switch t.ID() {
	case arrow.STRING, arrow.LARGE_STRING, arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.UINT8,
		arrow.UINT16, arrow.UINT32, arrow.UINT64, arrow.DATE32, arrow.BOOL, arrow.DECIMAL128:
		return nil
	case arrow.TIMESTAMP:
		return fmt.Errorf("a %s has no directory form; partition by a string such as DATE_FORMAT(ts, 'yyyy-MM-dd')", expr.TypeName(t))
	}
	return fmt.Errorf("a %s has no exact text form for a directory name (strings, integers, dates, booleans and decimals have one)", expr.TypeName(t))
}
