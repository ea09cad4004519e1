package expr

import (
	"strconv"
	"strings"
	"sync"
	"time"
	_ "time/tzdata" // the IANA database inside the binary: a machine without zoneinfo resolves zones the same

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/clinksql/clinksql/sqlerr"
)

// TIMESTAMP WITH TIME ZONE (Postgres' timestamptz, Flink's TIMESTAMP_LTZ) is an instant: microseconds since the
// epoch in UTC, an Arrow timestamp whose TimeZone is "UTC". A time zone matters only where an instant meets a
// calendar: its text form, casts to and from TIMESTAMP, DATE and text, EXTRACT, date_trunc, AT TIME ZONE. Those
// are the functions below, each with its zone as an argument (the planner passes the session's, SET timezone),
// so an expression never depends on a setting read at run time: a job keeps the zone it was planned with.
// A cast that would need a zone without one (expr.Cast between TIMESTAMP and TIMESTAMPTZ) is refused rather than
// read in UTC.

// TypeTimestampTZ is TIMESTAMP WITH TIME ZONE.
var TypeTimestampTZ = &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}

// IsTimestampTZ reports whether t is TIMESTAMP WITH TIME ZONE (a zoned Arrow timestamp).
func IsTimestampTZ(t arrow.DataType) bool {
	tt, ok := t.(*arrow.TimestampType)
	return ok && tt.TimeZone != ""
}

func init() {
	register(bindTimezone, "timezone")
	register(bindTZIn, "timestamptz_in")
	register(bindTZOut, "timestamptz_out")
}

var zones sync.Map // name -> *time.Location

// LoadZone resolves a time zone name as Postgres does for SET timezone and AT TIME ZONE: an IANA name
// ('Europe/Berlin', case as in the database), 'UTC' / 'GMT' / 'Z' in any case, or an ISO offset '+02', '-05:30'
// (east of Greenwich positive, unlike POSIX zone strings). An unknown name is 22023.
func LoadZone(name string) (*time.Location, error) {
	if l, ok := zones.Load(name); ok {
		return l.(*time.Location), nil
	}
	n := strings.TrimSpace(name)
	var loc *time.Location
	switch u := strings.ToUpper(n); {
	case u == "UTC" || u == "GMT" || u == "Z" || u == "ZULU" || u == "ETC/UTC":
		loc = time.UTC
	case n != "" && (n[0] == '+' || n[0] == '-'):
		off, ok := parseOffset(n)
		if !ok {
			return nil, badZone(name)
		}
		loc = time.FixedZone(n, off)
	default:
		l, err := time.LoadLocation(n)
		if err != nil || n == "" || strings.EqualFold(n, "local") {
			return nil, badZone(name)
		}
		loc = l
	}
	zones.Store(name, loc)
	return loc, nil
}

func badZone(name string) error {
	return sqlerr.New(sqlerr.InvalidParameter, sqlerr.NoPos, "time zone %q not recognized", name)
}

// parseOffset reads +HH, +HHMM, +HH:MM[:SS] (and -) as seconds east of UTC.
func parseOffset(s string) (int, bool) {
	if len(s) < 2 || (s[0] != '+' && s[0] != '-') {
		return 0, false
	}
	sign := 1
	if s[0] == '-' {
		sign = -1
	}
	body := strings.ReplaceAll(s[1:], ":", "")
	if len(body) != 2 && len(body) != 4 && len(body) != 6 {
		if len(body) == 1 {
			body = "0" + body
		} else {
			return 0, false
		}
	}
	secs := 0
	for k, mul := range []int{3600, 60, 1} {
		if 2*k >= len(body) {
			break
		}
		v, err := strconv.Atoi(body[2*k : 2*k+2])
		if err != nil || (k > 0 && v > 59) || (k == 0 && v > 15) {
			return 0, false
		}
		secs += v * mul
	}
	return sign * secs, true
}

// offsetAt is loc's UTC offset (seconds east) at instant us.
func offsetAt(loc *time.Location, us int64) int64 {
	_, off := time.UnixMicro(us).In(loc).Zone()
	return int64(off)
}

// ToLocal is the wall clock of instant us in loc, as microseconds of a TIMESTAMP.
func ToLocal(loc *time.Location, us int64) int64 { return us + offsetAt(loc, us)*usPerSec }

// FromLocal is the instant of wall clock w in loc. Postgres' rules where the clock jumps: a wall time that occurs
// twice (the clock went back) is read with the offset after the change, one that never occurs (the clock went
// forward) with the offset before it.
func FromLocal(loc *time.Location, w int64) int64 {
	const day = 24 * 3600 * usPerSec
	before, after := offsetAt(loc, w-day)*usPerSec, offsetAt(loc, w+day)*usPerSec
	if before == after {
		if o := offsetAt(loc, w-before) * usPerSec; o != before {
			// a change within the day that both ends agree on (rare: two changes); take the offset at the instant
			return w - o
		}
		return w - before
	}
	i1, i2 := w-before, w-after
	ok1, ok2 := offsetAt(loc, i1)*usPerSec == before, offsetAt(loc, i2)*usPerSec == after
	switch {
	case ok2:
		return i2 // the only reading, or the later one of two
	case ok1:
		return i1
	}
	return i1 // in the gap: the offset before the change
}

// zoneArg resolves a zone argument: a constant once, or per row through LoadZone's cache.
func zoneArg(e Expr) (fixed *time.Location, perRow bool, err error) {
	name, null, ok := ConstantString(e)
	if !ok {
		return nil, true, nil
	}
	if null {
		return nil, false, nil
	}
	loc, err := LoadZone(name)
	return loc, false, err
}

func (z zoneOf) at(ec *evalCtx, i int) (*time.Location, *sqlerr.Error) {
	if z.fixed != nil {
		return z.fixed, nil
	}
	loc, err := LoadZone(z.names.at(i))
	if err != nil {
		return nil, err.(*sqlerr.Error)
	}
	return loc, nil
}

type zoneOf struct {
	fixed *time.Location
	names strs
}

// bindTimezone binds timezone(zone, x), x AT TIME ZONE zone: a TIMESTAMPTZ's wall clock in zone (a TIMESTAMP), or
// the instant a TIMESTAMP's wall clock is in zone (a TIMESTAMPTZ).
func bindTimezone(name string, args []Expr) (Expr, error) {
	if len(args) != 2 || !(isString(args[0].Type()) || isNull(args[0].Type())) {
		return nil, fnNotExist(name, args)
	}
	fixed, perRow, err := zoneArg(args[0])
	if err != nil {
		return nil, err
	}
	x := args[1]
	var toTZ bool
	switch t := x.Type(); {
	case isNull(t):
		return NullOf(TypeTimestamp), nil
	case IsTimestampTZ(t):
	case isTimestamp(t):
		toTZ = true
	case isDate(t):
		if x, err = Cast(x, TypeTimestamp); err != nil {
			return nil, err
		}
		toTZ = true
	default:
		return nil, fnNotExist(name, args)
	}
	out := TypeTimestamp
	if toTZ {
		out = TypeTimestampTZ
	}
	if !perRow && fixed == nil {
		return NullOf(out), nil
	}
	return &callExpr{name: name, args: []Expr{args[0], x}, typ: out, strict: true, canFail: perRow,
		render: func(a []string) string { return "(" + a[1] + " AT TIME ZONE " + a[0] + ")" },
		kern: func(ec *evalCtx, args []value) (value, error) {
			z := zoneOf{fixed: fixed}
			if perRow {
				z.names = strsOf(args[0])
			}
			in := primOf[int64](args[1])
			return mapLoopWith(ec, args, out, func(i int) (int64, *sqlerr.Error) {
				loc, err := z.at(ec, i)
				if err != nil {
					return 0, err
				}
				if toTZ {
					return FromLocal(loc, in.at(i)), nil
				}
				return ToLocal(loc, in.at(i)), nil
			})
		}}, nil
}

// bindTZIn binds timestamptz_in(zone, text): text with an offset (Z, +hh, +hh:mm) names its instant; without one
// it is a wall clock in zone.
func bindTZIn(name string, args []Expr) (Expr, error) {
	if len(args) != 2 || !isString(args[1].Type()) && !isNull(args[1].Type()) {
		return nil, fnNotExist(name, args)
	}
	fixed, perRow, err := zoneArg(args[0])
	if err != nil {
		return nil, err
	}
	if perRow || fixed == nil {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, sqlerr.NoPos, "timestamptz_in needs a constant zone")
	}
	return &callExpr{name: name, args: args, typ: TypeTimestampTZ, strict: true, canFail: true,
		render: func(a []string) string { return "CAST(" + a[1] + " AS TIMESTAMP WITH TIME ZONE)" },
		kern: func(ec *evalCtx, args []value) (value, error) {
			s := strsOf(args[1])
			return mapLoopWith(ec, args[1:], TypeTimestampTZ, func(i int) (int64, *sqlerr.Error) { return TimestampTZIn(fixed, s.at(i)) })
		}}, nil
}

// TimestampTZIn reads a timestamptz's text: a timestamp, then an optional offset or zone name ('Z', '+02',
// '-05:30', ' UTC', ' Europe/Berlin'); without one, the wall clock is in loc.
func TimestampTZIn(loc *time.Location, text string) (int64, *sqlerr.Error) {
	t := strings.TrimSpace(text)
	bad := func() (int64, *sqlerr.Error) {
		return 0, sqlerr.New(sqlerr.InvalidDatetime, sqlerr.NoPos, "invalid input syntax for type timestamp with time zone: %q", text)
	}
	// Split off a zone: the last +/- after the time, a trailing Z, or a trailing word with a letter.
	body, zone := t, ""
	if k := strings.LastIndexAny(t, "+-"); k > 10 {
		body, zone = strings.TrimSpace(t[:k]), t[k:]
	} else if sp := strings.LastIndex(t, " "); sp > 10 && strings.ContainsAny(t[sp+1:], "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ") &&
		!strings.EqualFold(t[sp+1:], "BC") && !strings.EqualFold(t[sp+1:], "AD") {
		body, zone = t[:sp], t[sp+1:]
	} else if strings.HasSuffix(t, "Z") || strings.HasSuffix(t, "z") {
		body, zone = t[:len(t)-1], "Z"
	}
	w, ok := parseTimestamp(body)
	if !ok {
		return bad()
	}
	if zone == "" {
		return FromLocal(loc, w), nil
	}
	if zone[0] == '+' || zone[0] == '-' {
		off, ok := parseOffset(zone)
		if !ok {
			return bad()
		}
		return w - int64(off)*usPerSec, nil
	}
	l, err := LoadZone(zone)
	if err != nil {
		return bad()
	}
	return FromLocal(l, w), nil
}

// bindTZOut binds timestamptz_out(zone, x): x's text in zone, as Postgres prints a timestamptz
// ('2026-03-29 03:00:00+02', '2026-01-01 05:30:00+05:30').
func bindTZOut(name string, args []Expr) (Expr, error) {
	if len(args) != 2 || !IsTimestampTZ(args[1].Type()) {
		return nil, fnNotExist(name, args)
	}
	fixed, perRow, err := zoneArg(args[0])
	if err != nil {
		return nil, err
	}
	if perRow || fixed == nil {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, sqlerr.NoPos, "timestamptz_out needs a constant zone")
	}
	return &callExpr{name: name, args: args, typ: TypeText, strict: true,
		render: func(a []string) string { return "CAST(" + a[1] + " AS TEXT)" },
		kern: func(ec *evalCtx, args []value) (value, error) {
			in := primOf[int64](args[1])
			return textLoop(ec, args[1:], 25, func(dst []byte, i int) ([]byte, bool) {
				return AppendTimestampTZ(dst, fixed, in.at(i)), false
			})
		}}, nil
}

// AppendTimestampTZ prints instant us in loc as Postgres prints a timestamptz: the wall clock, then the offset as
// +hh, +hh:mm or +hh:mm:ss.
func AppendTimestampTZ(dst []byte, loc *time.Location, us int64) []byte {
	off := offsetAt(loc, us)
	dst = AppendTimestamp(dst, us+off*usPerSec, false)
	bc := len(dst) > 3 && string(dst[len(dst)-3:]) == " BC"
	if bc {
		dst = dst[:len(dst)-3]
	}
	dst = AppendOffset(dst, off)
	if bc {
		dst = append(dst, " BC"...)
	}
	return dst
}

// AppendOffset prints a UTC offset (seconds east) as Postgres does: +02, -05:30, +00:19:32.
func AppendOffset(dst []byte, off int64) []byte {
	if off < 0 {
		dst, off = append(dst, '-'), -off
	} else {
		dst = append(dst, '+')
	}
	dst = append2(dst, int(off/3600))
	if m, s := off/60%60, off%60; m != 0 || s != 0 {
		dst = append(append(dst, ':'), byte('0'+m/10), byte('0'+m%10))
		if s != 0 {
			dst = append(append(dst, ':'), byte('0'+s/10), byte('0'+s%10))
		}
	}
	return dst
}

// TimestampTZ is a TIMESTAMP WITH TIME ZONE constant (microseconds since the epoch, UTC).
func TimestampTZ(us int64) Expr {
	return &literal{sc: scalar.NewTimestampScalar(arrow.Timestamp(us), TypeTimestampTZ)}
}
