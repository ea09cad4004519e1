package join

import (
	"context"
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clinksql/clinksql/exec/expr"
	"github.com/clinksql/clinksql/exec/rowcodec"
	"github.com/clinksql/clinksql/sqlerr"
)

// JoinType is the kind of a two-input join.
type JoinType uint8

const (
	JoinInner JoinType = iota
	JoinLeft           // every left row, padded with NULLs when nothing on the right matches
	JoinRight          // every right row, padded with NULLs when nothing on the left matches
	JoinFull           // both
	// JoinSemi emits a left row (its right columns NULL) while at least one right row matches it: EXISTS and IN.
	// Only the regular join runs it.
	JoinSemi
	// JoinAnti emits a left row (its right columns NULL) while no right row matches it: NOT EXISTS. A left row
	// with a NULL key matches nothing, so it is emitted. Only the regular join runs it.
	JoinAnti
)

func (t JoinType) String() string {
	switch t {
	case JoinInner:
		return "INNER"
	case JoinLeft:
		return "LEFT OUTER"
	case JoinRight:
		return "RIGHT OUTER"
	case JoinFull:
		return "FULL OUTER"
	case JoinSemi:
		return "SEMI"
	case JoinAnti:
		return "ANTI"
	}
	return fmt.Sprintf("JoinType(%d)", uint8(t))
}

// JoinSpec is what every join operator shares: input 0 is the left side and input 1 the right.
//
//   - Two rows match when every LeftKeys[i] column equals RightKeys[i] (SQL equality: a NULL key never matches)
//     and Residual, evaluated over the joined row, is TRUE.
//   - The output row is the left columns then the right columns, every field nullable (JoinOutputSchema); an
//     outer row has NULLs for the side that did not match.
type JoinSpec struct {
	Type        JoinType
	Left, Right *arrow.Schema
	// LeftKeys and RightKeys have the same length and pairwise comparable types (the planner casts both sides
	// to a common type first). At least one pair.
	LeftKeys, RightKeys []int
	// Residual is an extra condition over the joined row's columns (left then right), nil for none. For an
	// outer join it decides what matches, so it is part of the join, not a filter after it.
	Residual expr.Expr
	// Mode is the bad-value policy of Residual's evaluation.
	Mode expr.ErrorMode
}

// JoinOutputSchema is the left fields then the right fields, all nullable.
func JoinOutputSchema(left, right *arrow.Schema) *arrow.Schema {
	fields := make([]arrow.Field, 0, left.NumFields()+right.NumFields())
	for _, s := range []*arrow.Schema{left, right} {
		for _, f := range s.Fields() {
			f.Nullable = true
			fields = append(fields, f)
		}
	}
	return arrow.NewSchema(fields, nil)
}

// rowEncoding is the canonical encoding of a join input's rows (rowcodec.RowEncoding) and its columns; what names the
// operator in the 0A000 error of a column it cannot keep.
func rowEncoding(sc *arrow.Schema, what string) (rowcodec.Encoding, []int, error) {
	return rowcodec.RowEncoding(sc, func(f arrow.Field) error {
		return sqlerr.New(sqlerr.FeatureNotSupported, sqlerr.NoPos, "%s cannot keep column %q of type %s in its state",
			what, f.Name, f.Type)
	})
}

// computeCtx is arrow compute's context (take, filter) for a join subtask: its allocator, and one goroutine per
// subtask (arrow must not fan out over columns).
func computeCtx(alloc memory.Allocator) context.Context {
	ectx := compute.DefaultExecCtx()
	ectx.NumParallel = 1
	return compute.WithAllocator(compute.SetExecCtx(context.Background(), ectx), alloc)
}

// IntervalJoinConfig is a join whose right rows match a left row only within a time interval around it:
// LeftTime and RightTime are timestamp columns of the two inputs and a pair matches only when
// left.ts + Lower <= right.ts <= left.ts + Upper (microseconds, both bounds inclusive, Lower <= Upper).
type IntervalJoinConfig struct {
	JoinSpec
	LeftTime, RightTime int
	Lower, Upper        int64
}

// WindowJoinConfig joins two windowed inputs (each row has the window_start and window_end of the window it
// belongs to): rows match only within the same window (equal start and end), besides the keys.
type WindowJoinConfig struct {
	JoinSpec
	LeftStart, LeftEnd, RightStart, RightEnd int
}

// RegularJoinConfig is a join without a time bound: every row of each side is kept in keyed state.
type RegularJoinConfig struct {
	JoinSpec
	// TTL, when positive, is how long (processing time, microseconds) a row is kept after it was last written;
	// an expired row no longer matches and its state is dropped. 0 keeps state forever.
	TTL int64
	// LeftUpdating and RightUpdating say whether an input is a changelog (has retractions); an append-only input
	// receiving one fails the operator.
	LeftUpdating, RightUpdating bool
	// Now is the processing-time clock TTL reads (once per batch and per barrier); nil means time.Now. Tests inject
	// one.
	Now func() time.Time
	// CacheBytes bounds the working set of rows the operator keeps in memory; past it the working set is written
	// back to the state backend and keys are dropped from memory (first those not touched since the previous
	// eviction) down to half of it. 0 means a default (256 MiB).
	CacheBytes int64
}

// internalf is the XX000 error of a malformed config (a planner bug); what names the operator.
func internalf(what, format string, args ...any) error {
	return sqlerr.New(sqlerr.InternalError, sqlerr.NoPos, what+": "+format, args...)
}
