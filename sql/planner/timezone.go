package planner

import (
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/clinksql/clinksql/exec/expr"
	"github.com/clinksql/clinksql/sql/parser"
	"github.com/clinksql/clinksql/sqlerr"
)

// TIMESTAMP WITH TIME ZONE in the planner: every conversion between an instant and a calendar value is bound with
// the session's zone as a constant argument (exec/expr/timezone.go), so a plan never reads the zone at run time
// and a job keeps the zone it started with (its settings persist it, so a restart plans it again the same way).
//
//   - casts (castIn): TIMESTAMP or DATE to TIMESTAMPTZ and back go through timezone(zone, x), text through
//     timestamptz_in / timestamptz_out;
//   - x AT TIME ZONE z is timezone(z, x), both ways, as in Postgres;
//   - calendar functions of a TIMESTAMPTZ (EXTRACT but its epoch, HOUR(), DATE_FORMAT, ...) read its wall clock
//     in the zone; date_trunc(unit, x [, zone]) truncates the wall clock and returns the instant it starts;
//   - comparing or subtracting a TIMESTAMP and a TIMESTAMPTZ reads the TIMESTAMP in the zone (Postgres' implicit
//     cast).

// zoneName is the name of loc that expr.LoadZone reads back (UTC for nil).
func zoneName(loc *time.Location) string {
	if loc == nil {
		return "UTC"
	}
	return loc.String()
}

// castIn is CAST(x AS to) (TRY_CAST with try) in the zone loc.
func castIn(loc *time.Location, x expr.Expr, to arrow.DataType, try bool) (expr.Expr, error) {
	cast := expr.Cast
	if try {
		cast = expr.TryCast
	}
	from := x.Type()
	fromTZ, toTZ := expr.IsTimestampTZ(from), expr.IsTimestampTZ(to)
	if fromTZ == toTZ || from.ID() == arrow.NULL {
		if from.ID() == arrow.NULL {
			return expr.NullOf(to), nil
		}
		return cast(x, to)
	}
	z := expr.String(zoneName(loc))
	switch {
	case toTZ && (from.ID() == arrow.TIMESTAMP || from.ID() == arrow.DATE32):
		return expr.Call("timezone", z, x)
	case toTZ && (from.ID() == arrow.STRING || from.ID() == arrow.LARGE_STRING):
		if try {
			return nil, sqlerr.New(sqlerr.FeatureNotSupported, sqlerr.NoPos, "TRY_CAST from text to TIMESTAMP WITH TIME ZONE is not supported")
		}
		return expr.Call("timestamptz_in", z, x)
	case fromTZ && to.ID() == arrow.TIMESTAMP:
		return expr.Call("timezone", z, x)
	case fromTZ && to.ID() == arrow.DATE32:
		local, err := expr.Call("timezone", z, x)
		if err != nil {
			return nil, err
		}
		return cast(local, to)
	case fromTZ && (to.ID() == arrow.STRING || to.ID() == arrow.LARGE_STRING):
		return expr.Call("timestamptz_out", z, x)
	}
	return cast(x, to) // refused: no conversion
}

// localArgs replaces the TIMESTAMPTZ arguments of a calendar function by their wall clocks in the zone.
func (b *exprBinder) localArgs(args []expr.Expr) ([]expr.Expr, error) {
	out := args
	for i, a := range args {
		if !expr.IsTimestampTZ(a.Type()) {
			continue
		}
		if &out[0] == &args[0] {
			out = append([]expr.Expr{}, args...)
		}
		l, err := expr.Call("timezone", expr.String(zoneName(b.tz)), a)
		if err != nil {
			return nil, err
		}
		out[i] = l
	}
	return out, nil
}

// calendarFuncs read a timestamp's wall clock: a TIMESTAMPTZ argument is read in the session's zone.
var calendarFuncs = map[string]bool{"year": true, "quarter": true, "month": true, "week": true, "dayofmonth": true,
	"dayofweek": true, "dayofyear": true, "hour": true, "minute": true, "second": true, "date_format": true}

// bindZoned binds the functions whose meaning over a TIMESTAMPTZ depends on a zone (ok false: not one of them, or
// no TIMESTAMPTZ argument).
func (b *exprBinder) bindZoned(e *parser.Func, args []expr.Expr) (expr.Expr, bool, error) {
	hasTZ := false
	for _, a := range args {
		hasTZ = hasTZ || expr.IsTimestampTZ(a.Type())
	}
	switch {
	case e.Name == "date_trunc" && (len(args) == 3 || len(args) == 2 && hasTZ):
		// date_trunc(unit, x [, zone]): truncate the wall clock in zone, return that instant.
		zone := expr.String(zoneName(b.tz))
		if len(args) == 3 {
			zone = args[2]
		}
		x := args[1]
		if !expr.IsTimestampTZ(x.Type()) {
			var err error
			if x, err = castIn(b.tz, x, expr.TypeTimestampTZ, false); err != nil {
				return nil, true, posErr(err, e.P)
			}
		}
		local, err := b.call(e.P, "timezone", zone, x)
		if err != nil {
			return nil, true, err
		}
		tr, err := b.call(e.P, "date_trunc", args[0], local)
		if err != nil {
			return nil, true, err
		}
		r, err := b.call(e.P, "timezone", zone, tr)
		return r, true, err
	case !hasTZ:
		return nil, false, nil
	case e.Name == "extract" || e.Name == "date_part":
		if f, _, ok := expr.ConstantString(args[0]); ok && f == "epoch" {
			return nil, false, nil // the instant's
		}
		fallthrough
	case calendarFuncs[e.Name]:
		local, err := b.localArgs(args)
		if err != nil {
			return nil, true, posErr(err, e.P)
		}
		r, err := b.call(e.P, e.Name, local...)
		return r, true, err
	}
	return nil, false, nil
}

// mixedTimestamps reads a TIMESTAMP operand met with a TIMESTAMPTZ one in the zone (Postgres' implicit cast).
func (b *exprBinder) mixedTimestamps(l, r expr.Expr) (expr.Expr, expr.Expr, error) {
	lt, rt := l.Type(), r.Type()
	if lt.ID() != arrow.TIMESTAMP || rt.ID() != arrow.TIMESTAMP || expr.IsTimestampTZ(lt) == expr.IsTimestampTZ(rt) {
		return l, r, nil
	}
	var err error
	if expr.IsTimestampTZ(lt) {
		r, err = castIn(b.tz, r, expr.TypeTimestampTZ, false)
	} else {
		l, err = castIn(b.tz, l, expr.TypeTimestampTZ, false)
	}
	return l, r, err
}

// timestampTZLiteral is TIMESTAMPTZ '...' read in the zone.
func timestampTZLiteral(loc *time.Location, l *parser.Literal) (expr.Expr, error) {
	if loc == nil {
		loc = time.UTC
	}
	us, err := expr.TimestampTZIn(loc, l.Text)
	if err != nil {
		return nil, posErr(err, l.P)
	}
	return expr.TimestampTZ(us), nil
}
