package expr

import (
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/scalar"
)

// ProcTime is PROCTIME(): the processing time at which the batch is evaluated, read from Context.Clock once per
// batch (every row of a batch gets the same instant), a TIMESTAMP WITH TIME ZONE as Flink's TIMESTAMP_LTZ(3) is
// (microseconds here). It is built here rather than through Call, since a call without arguments would be folded
// to the time of planning; it is never folded.
func ProcTime() Expr {
	return &callExpr{name: "proctime", typ: TypeTimestampTZ,
		render: func([]string) string { return "PROCTIME()" },
		kern: func(ec *evalCtx, _ []value) (value, error) {
			now := time.Now()
			if ec.Clock != nil {
				now = ec.Clock.Now()
			}
			return value{sc: scalar.NewTimestampScalar(arrow.Timestamp(now.UnixMicro()), TypeTimestampTZ)}, nil
		}}
}

// IsProcTime reports whether e is PROCTIME() itself.
func IsProcTime(e Expr) bool {
	c, ok := e.(*callExpr)
	return ok && c.name == "proctime" && len(c.args) == 0
}
