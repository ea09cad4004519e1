package agg

import (
	"math"

	"time"

	"fmt"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/exec/expr"
	"github.com/clinksql/clinksql/exec/rowcodec"
	"github.com/clinksql/clinksql/sqlerr"
)

// WindowAggregate: GROUP BY window_start, window_end[, keys] over one of Flink's window table functions.
//
// Contract (what the planner builds and what the operator promises):
//
//   - Input: one logical input of append-only rows (a batch's Kinds must be nil or all Insert). The planner puts a
//     projection before the operator, so keys, aggregate arguments, FILTER conditions and the event time are plain
//     columns of the input, named by index.
//   - Event time: TimeCol is an Arrow timestamp (any unit; converted to microseconds, which is what Size, Slide,
//     Step, Gap, Offset and the watermark are in). A row with a NULL event time is dropped and counted in
//     TaskContext.Errors.
//   - Windows are half-open [start, end):
//     Tumble: start = floor((ts - Offset) / Size) * Size + Offset (floor also for negative ts).
//     Hop: every [s, s+Size) with s = k*Slide + Offset and s <= ts < s+Size.
//     Cumulate: with p = floor((ts - Offset) / Size) * Size + Offset, the windows [p, p+Step), [p, p+2*Step), ...,
//     [p, p+Size) whose end > ts; Size must be a multiple of Step (as in Flink).
//     Session: per key, each row opens [ts, ts+Gap); sessions of the same key that overlap or touch (end == start)
//     merge, also when a row arrives out of order and bridges two. window_end is the last ts + Gap. With no Keys
//     the whole stream is one session sequence (the planner runs it at parallelism 1).
//   - Firing: OnWatermark(wm) emits every window with end <= wm, then forgets it. Output is ordered by window_end,
//     then window_start, then the key's canonical bytes (rowcodec.Encoding); batches hold at most windowEmitRows rows,
//     all inserts. A window exists, and fires, only if at least one row was assigned to it, even if every FILTER
//     rejected it (COUNT is then 0 and SUM NULL).
//   - Late rows: an assignment to a window whose end <= the watermark current when the row arrives is dropped; a
//     row all of whose assignments were dropped counts once in TaskContext.Late. For Session the row is merged
//     first and is late only if its resulting session has end <= wm (it touches no live session and ts+Gap <= wm),
//     as Flink's merging window operator decides.
//   - Keys: any hashable column types (exec.HashKeys); NULL is a valid key value and NULLs group together. A key's
//     key group is state.KeyGroupOf(exec.HashKeys(...), MaxKeyGroups), the one the hash exchange routes it with;
//     a row of a key group outside TaskContext.KeyGroups is a routing bug and fails the operator.
//   - State: the working set lives in memory; OnBarrier writes the (window, key) accumulators changed since the
//     last barrier, deletes the fired or merged-away ones, and stores the watermark; Open rebuilds the working set
//     with a Scan over the subtask's key groups, so a restore neither re-fires nor skips a window. It works on the
//     memory and the Pebble backend (mark the node WithKeyedState).
//
// Aggregates and their result types (Postgres' rules):
//
//	COUNT(x), COUNT(*), COUNT(DISTINCT x)   BIGINT, 0 for an empty window, never NULL
//	SUM(smallint|int)                       BIGINT; overflowing BIGINT fails with 22003 "bigint out of range"
//	SUM(bigint)                             DECIMAL(38,0)
//	SUM(decimal(p,s))                       DECIMAL(38,s); beyond 38 digits fails with 22003
//	SUM(real) / SUM(double)                 REAL / DOUBLE
//	AVG(smallint|int|bigint)                DECIMAL(38,16) (deviation: Postgres shows fewer fraction digits for
//	                                        results >= 10000, e.g. 15000.500000000000; we always show 16)
//	AVG(decimal(p,s))                       DECIMAL(38, max(s,16))
//	AVG(real|double)                        DOUBLE
//	MIN/MAX(x)                              the type of x (integers, floats, decimals, strings, binary,
//	                                        timestamps, dates, booleans)
//
// SUM, AVG, MIN and MAX skip NULLs and give NULL when they saw no value; FILTER (WHERE c) counts a row only where
// c is true (NULL is false). AVG rounds half away from zero, as numeric division does. MIN/MAX of floats order NaN
// above every other value, as Postgres does.

// WindowKind is the window table function.
type WindowKind uint8

const (
	WindowTumble WindowKind = iota
	WindowHop
	WindowCumulate
	WindowSession
)

func (k WindowKind) String() string {
	switch k {
	case WindowTumble:
		return "TUMBLE"
	case WindowHop:
		return "HOP"
	case WindowCumulate:
		return "CUMULATE"
	case WindowSession:
		return "SESSION"
	}
	return fmt.Sprintf("WindowKind(%d)", uint8(k))
}

// AggFunc is an aggregate function.
type AggFunc uint8

const (
	AggCount         AggFunc = iota // COUNT(x): rows where x is not NULL
	AggCountStar                    // COUNT(*)
	AggCountDistinct                // COUNT(DISTINCT x): distinct non-NULL values
	AggSum
	AggMin
	AggMax
	AggAvg
)

func (f AggFunc) String() string {
	switch f {
	case AggCount, AggCountStar:
		return "count"
	case AggCountDistinct:
		return "count_distinct"
	case AggSum:
		return "sum"
	case AggMin:
		return "min"
	case AggMax:
		return "max"
	case AggAvg:
		return "avg"
	}
	return fmt.Sprintf("AggFunc(%d)", uint8(f))
}

// AggSpec is one aggregate of the SELECT list.
type AggSpec struct {
	Func AggFunc
	// Arg is the input column aggregated; -1 for COUNT(*).
	Arg int
	// Filter is the input column of a boolean FILTER (WHERE ...) condition, -1 for none.
	Filter int
	// Name is the output column's name; "" means agg<i>.
	Name string
}

// WindowAggConfig describes a window aggregation. Durations are microseconds.
type WindowAggConfig struct {
	Kind    WindowKind
	TimeCol int
	// Size: Tumble, Hop, Cumulate. Slide: Hop. Step: Cumulate. Gap: Session. Offset shifts Tumble, Hop and
	// Cumulate window boundaries (Flink's offset); 0 aligns them to the epoch.
	Size, Slide, Step, Gap, Offset int64
	// Keys are the GROUP BY columns besides window_start and window_end (for Session, the PARTITION BY columns are
	// among them).
	Keys []int
	Aggs []AggSpec
	// Mode is what a float SUM or AVG that overflows does (aggOverflow): NULL and counted, or 22003.
	Mode expr.ErrorMode
	// Zone, for a TIMESTAMP WITH TIME ZONE time column, lays Tumble, Hop and Cumulate windows out on the wall clock
	// of that zone (a daily window is a local day, 23 or 25 hours long across a clock change): a row belongs to the
	// windows of its wall time, whose bounds are the instants at which the wall clock shows them (expr.FromLocal).
	// nil: on the epoch's clock (UTC). Sessions are gaps of time, the same in every zone.
	Zone *time.Location
	// ProcTime makes the windows processing-time windows (TimeCol a PROCTIME() attribute): a row belongs to the
	// windows of the subtask's processing time when it arrives (TaskContext.Clock), not to those of its
	// TimeCol value, and a window fires when that clock passes its end (exec.ProcessingTimer), not on the
	// watermark, which passes the operator untouched. At end of input every open window fires.
	ProcTime bool
}

// zoned reports whether windows are laid out on a zone's wall clock.
func (c *WindowAggConfig) zoned() bool {
	return c.Zone != nil && c.Zone != time.UTC && c.Kind != WindowSession
}

// instant maps a window bound computed on the wall clock back to an instant.
func (c *WindowAggConfig) instant(w int64) int64 {
	if w == math.MaxInt64 || w == math.MinInt64 {
		return w
	}
	return expr.FromLocal(c.Zone, w)
}

// windowEmitRows bounds the rows of one output batch.
const windowEmitRows = 4096

// NewWindowAggregate validates cfg against the input schema and returns the operator factory and the output
// schema: the key columns (names and types of the input), window_start and window_end (timestamp[us]), then one
// column per aggregate. Errors are sqlerr errors: 42883 for an aggregate over a type it does not take, 22023 for a
// bad window size, XX000 for a malformed config (a planner bug).
func NewWindowAggregate(cfg WindowAggConfig, inputSchema *arrow.Schema) (func(subtask int) exec.Operator, *arrow.Schema, error) {
	p, err := planWindowAgg(cfg, inputSchema)
	if err != nil {
		return nil, nil, err
	}
	if cfg.ProcTime {
		return func(int) exec.Operator { return &procWindowAgg{newWindowAgg(p)} }, p.out, nil
	}
	return func(int) exec.Operator { return newWindowAgg(p) }, p.out, nil
}

// windowPlan is the validated, immutable part of the operator, shared by its subtasks.
type windowPlan struct {
	cfg     WindowAggConfig
	in, out *arrow.Schema
	keyEnc  rowcodec.Encoding
	aggs    []aggKind
}

func windowInternalf(format string, args ...any) error {
	return sqlerr.New(sqlerr.InternalError, sqlerr.NoPos, "window aggregate: "+format, args...)
}

// checkColumn checks that the input has a column i; what names its role in the message of internalf (the
// operator's XX000 error).
func checkColumn(in *arrow.Schema, i int, what string, internalf func(format string, args ...any) error) error {
	if i < 0 || i >= in.NumFields() {
		return internalf("%s column %d out of range (input has %d)", what, i, in.NumFields())
	}
	return nil
}

// planKeys checks GROUP BY or PARTITION BY columns (role names them in messages, verb is "group by" or
// "partition by"): they exist and have a type exec.HashKeys hashes. It returns their types, and their output fields
// (nullable).
func planKeys(in *arrow.Schema, cols []int, role, verb string, internalf func(format string, args ...any) error) (
	[]arrow.DataType, []arrow.Field, error) {
	var types []arrow.DataType
	var fields []arrow.Field
	for _, k := range cols {
		if err := checkColumn(in, k, role, internalf); err != nil {
			return nil, nil, err
		}
		f := in.Field(k)
		if !rowcodec.GroupKeyType(f.Type) {
			return nil, nil, sqlerr.New(sqlerr.FeatureNotSupported, sqlerr.NoPos,
				"cannot %s %s column %q", verb, f.Type, f.Name)
		}
		types = append(types, f.Type)
		fields = append(fields, arrow.Field{Name: f.Name, Type: f.Type, Nullable: true})
	}
	return types, fields, nil
}

// planAggs checks the aggregates' columns and types them against their arguments (newAggKind). It returns them
// with their output fields (named agg<i> when unnamed).
func planAggs(in *arrow.Schema, aggs []AggSpec, internalf func(format string, args ...any) error) (
	[]aggKind, []arrow.Field, error) {
	var kinds []aggKind
	var fields []arrow.Field
	for i, a := range aggs {
		var argType arrow.DataType
		if a.Func == AggCountStar {
			if a.Arg != -1 {
				return nil, nil, internalf("COUNT(*) with an argument column %d", a.Arg)
			}
		} else {
			if err := checkColumn(in, a.Arg, "aggregate argument", internalf); err != nil {
				return nil, nil, err
			}
			argType = in.Field(a.Arg).Type
		}
		if a.Filter != -1 {
			if err := checkColumn(in, a.Filter, "FILTER", internalf); err != nil {
				return nil, nil, err
			}
			if in.Field(a.Filter).Type.ID() != arrow.BOOL {
				return nil, nil, sqlerr.New(sqlerr.DatatypeMismatch, sqlerr.NoPos,
					"argument of FILTER must be type boolean, not %s", in.Field(a.Filter).Type)
			}
		}
		k, err := newAggKind(a.Func, argType)
		if err != nil {
			return nil, nil, err
		}
		name := a.Name
		if name == "" {
			name = fmt.Sprintf("agg%d", i)
		}
		kinds = append(kinds, k)
		fields = append(fields, arrow.Field{Name: name, Type: k.out, Nullable: k.nullable})
	}
	return kinds, fields, nil
}

func planWindowAgg(cfg WindowAggConfig, in *arrow.Schema) (*windowPlan, error) {
	if err := checkColumn(in, cfg.TimeCol, "time", windowInternalf); err != nil {
		return nil, err
	}
	if _, ok := in.Field(cfg.TimeCol).Type.(*arrow.TimestampType); !ok {
		return nil, sqlerr.New(sqlerr.DatatypeMismatch, sqlerr.NoPos,
			"window time column %q must be a timestamp, not %s", in.Field(cfg.TimeCol).Name, in.Field(cfg.TimeCol).Type)
	}
	positive := func(v int64, what string) error {
		if v <= 0 {
			return sqlerr.New(sqlerr.InvalidParameter, sqlerr.NoPos, "%s window %s must be positive", cfg.Kind, what)
		}
		return nil
	}
	switch cfg.Kind {
	case WindowTumble:
		if err := positive(cfg.Size, "size"); err != nil {
			return nil, err
		}
	case WindowHop:
		if err := positive(cfg.Size, "size"); err != nil {
			return nil, err
		}
		if err := positive(cfg.Slide, "slide"); err != nil {
			return nil, err
		}
	case WindowCumulate:
		if err := positive(cfg.Size, "size"); err != nil {
			return nil, err
		}
		if err := positive(cfg.Step, "step"); err != nil {
			return nil, err
		}
		if cfg.Size%cfg.Step != 0 {
			return nil, sqlerr.New(sqlerr.InvalidParameter, sqlerr.NoPos,
				"CUMULATE window size must be a multiple of its step")
		}
	case WindowSession:
		if err := positive(cfg.Gap, "gap"); err != nil {
			return nil, err
		}
	default:
		return nil, windowInternalf("unknown window kind %d", cfg.Kind)
	}
	keyTypes, fields, err := planKeys(in, cfg.Keys, "key", "group by", windowInternalf)
	if err != nil {
		return nil, err
	}
	ts := &arrow.TimestampType{Unit: arrow.Microsecond}
	if expr.IsTimestampTZ(in.Field(cfg.TimeCol).Type) {
		ts = expr.TypeTimestampTZ // the windows' bounds are instants of the same kind
	}
	fields = append(fields, arrow.Field{Name: "window_start", Type: ts}, arrow.Field{Name: "window_end", Type: ts})
	p := &windowPlan{cfg: cfg, in: in, keyEnc: rowcodec.NewKeyEncoding(keyTypes)}
	aggs, aggFields, err := planAggs(in, cfg.Aggs, windowInternalf)
	if err != nil {
		return nil, err
	}
	p.aggs = aggs
	p.out = arrow.NewSchema(append(fields, aggFields...), nil)
	return p, nil
}
