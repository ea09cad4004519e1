package expr

import (
	"math"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"

	"github.com/clinksql/clinksql/sqlerr"
)

// Temporal functions over TIMESTAMP (microseconds since the epoch, no zone: every calendar computation is UTC),
// DATE (days) and INTERVAL (a duration in microseconds), and the text input forms of the three.

func init() {
	register(bindExtract, "extract", "date_part")
	register(bindShorthand, "year", "quarter", "month", "week", "dayofmonth", "dayofweek", "dayofyear", "hour", "minute", "second")
	register(bindDateFormat, "date_format")
	register(bindDateTrunc, "date_trunc")
	register(bindToTimestamp, "to_timestamp")
}

const (
	usPerSec  = 1_000_000
	usPerMin  = 60 * usPerSec
	usPerHour = 60 * usPerMin
)

// DaysFromCivil is days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
func DaysFromCivil(y int64, m, d int) int64 {
	if m <= 2 {
		y--
	}
	era := FloorDiv(y, 400)
	yoe := y - era*400
	mp := int64(m+9) % 12
	doy := (153*mp+2)/5 + int64(d) - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}

func isLeap(y int64) bool { return y%4 == 0 && (y%100 != 0 || y%400 == 0) }

func daysIn(y int64, m int) int {
	switch m {
	case 2:
		if isLeap(y) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// ---- text input ----

// ParseTimestamp, ParseDate and ParseInterval read the text forms below for the planner (literals) and sources;
// a bad text is a *sqlerr.Error (22007).
func ParseTimestamp(s string) (int64, error) { return noTypedNil(timestampIn(s)) }

// ParseDate returns days since 1970-01-01.
func ParseDate(s string) (int32, error) {
	d, err := dateIn(s)
	if err != nil {
		return 0, err
	}
	return d, nil
}

// ParseInterval returns microseconds.
func ParseInterval(s string) (int64, error) { return noTypedNil(intervalIn(s)) }

func noTypedNil(v int64, err *sqlerr.Error) (int64, error) {
	if err != nil {
		return 0, err
	}
	return v, nil
}

// timestampIn reads a timestamp in the forms Postgres accepts for timestamp without time zone:
// '2026-01-01', '2026-01-01 00:00:01', '2026-01-01 00:00:01.5', '2026-01-01T00:00:01', with an optional
// trailing zone (Z, +hh, +hh:mm) that is ignored as Postgres ignores it for this type. Fractions beyond
// microseconds are rounded.
func timestampIn(s string) (int64, *sqlerr.Error) {
	us, ok := parseTimestamp(strings.TrimSpace(s))
	if !ok {
		return 0, invalidText(TypeTimestamp, s)
	}
	return us, nil
}

// dateIn reads a date ('2026-01-01'; a time part is accepted and dropped, as Postgres does).
func dateIn(s string) (int32, *sqlerr.Error) {
	us, ok := parseTimestamp(strings.TrimSpace(s))
	if !ok {
		return 0, invalidText(TypeDate, s)
	}
	return int32(FloorDiv(us, usPerDay)), nil
}

// parseTimestamp reads the forms of timestampIn; a trailing BC (as Postgres prints years before 1 AD) or AD
// names the era: year 1 BC is year 0.
func parseTimestamp(t string) (int64, bool) {
	bc := false
	if n := len(t); n > 3 && t[n-3] == ' ' && (strings.EqualFold(t[n-2:], "BC") || strings.EqualFold(t[n-2:], "AD")) {
		bc = strings.EqualFold(t[n-2:], "BC")
		t = strings.TrimRight(t[:n-3], " ")
	}
	y, n, ok := digits(t, 1, 7)
	if !ok || n >= len(t) || t[n] != '-' {
		return 0, false
	}
	if bc {
		if y < 1 {
			return 0, false
		}
		y = 1 - y
	}
	t = t[n+1:]
	m, n, ok := digits(t, 1, 2)
	if !ok || n >= len(t) || t[n] != '-' {
		return 0, false
	}
	t = t[n+1:]
	d, n, ok := digits(t, 1, 2)
	if !ok || m < 1 || m > 12 || d < 1 || d > int64(daysIn(y, int(m))) {
		return 0, false
	}
	t = t[n:]
	days := DaysFromCivil(y, int(m), int(d))
	var tod int64
	if t != "" {
		if t[0] != ' ' && t[0] != 'T' && t[0] != 't' {
			return 0, false
		}
		t = strings.TrimLeft(t[1:], " ")
		var rest string
		tod, rest, ok = parseTime(t)
		if !ok {
			return 0, false
		}
		if !zoneSuffix(strings.TrimSpace(rest)) {
			return 0, false
		}
	}
	if days > maxDateDays || days < -maxDateDays {
		return 0, false
	}
	return days*usPerDay + tod, true
}

// parseTime reads HH:MM[:SS[.ffffff]] and returns microseconds of the day and the rest of the text.
func parseTime(t string) (int64, string, bool) {
	h, n, ok := digits(t, 1, 2)
	if !ok || n >= len(t) || t[n] != ':' {
		return 0, "", false
	}
	t = t[n+1:]
	mi, n, ok := digits(t, 2, 2)
	if !ok {
		return 0, "", false
	}
	t = t[n:]
	var sec, frac int64
	if t != "" && t[0] == ':' {
		t = t[1:]
		if sec, n, ok = digits(t, 2, 2); !ok {
			return 0, "", false
		}
		t = t[n:]
		if t != "" && t[0] == '.' {
			t = t[1:]
			k := 0
			for k < len(t) && t[k] >= '0' && t[k] <= '9' {
				k++
			}
			if k == 0 {
				return 0, "", false
			}
			fs := t[:k]
			t = t[k:]
			round := len(fs) > 6 && fs[6] >= '5'
			if len(fs) > 6 {
				fs = fs[:6]
			}
			f, _ := strconv.ParseInt(fs, 10, 64)
			for i := len(fs); i < 6; i++ {
				f *= 10
			}
			if round {
				f++
			}
			frac = f
		}
	}
	if h > 24 || mi > 59 || sec > 60 || (h == 24 && (mi != 0 || sec != 0 || frac != 0)) {
		return 0, "", false
	}
	return h*usPerHour + mi*usPerMin + sec*usPerSec + frac, t, true
}

func zoneSuffix(z string) bool {
	if z == "" || z == "Z" || z == "z" || strings.EqualFold(z, "UTC") {
		return true
	}
	if z[0] != '+' && z[0] != '-' {
		return false
	}
	z = z[1:]
	_, n, ok := digits(z, 1, 4)
	if !ok {
		return false
	}
	z = z[n:]
	if z == "" {
		return true
	}
	if z[0] != ':' {
		return false
	}
	_, n, ok = digits(z[1:], 2, 2)
	return ok && n == len(z)-1
}

// digits reads between lo and hi decimal digits at the start of s.
func digits(s string, lo, hi int) (int64, int, bool) {
	n := 0
	var v int64
	for n < len(s) && n < hi && s[n] >= '0' && s[n] <= '9' {
		v = v*10 + int64(s[n]-'0')
		n++
	}
	return v, n, n >= lo
}

var intervalUnits = map[string]int64{
	"microsecond": 1, "microseconds": 1, "us": 1, "usec": 1, "usecs": 1,
	"millisecond": 1000, "milliseconds": 1000, "ms": 1000, "msec": 1000, "msecs": 1000,
	"second": usPerSec, "seconds": usPerSec, "s": usPerSec, "sec": usPerSec, "secs": usPerSec,
	"minute": usPerMin, "minutes": usPerMin, "m": usPerMin, "min": usPerMin, "mins": usPerMin,
	"hour": usPerHour, "hours": usPerHour, "h": usPerHour, "hr": usPerHour, "hrs": usPerHour,
	"day": usPerDay, "days": usPerDay, "d": usPerDay,
	"week": 7 * usPerDay, "weeks": 7 * usPerDay, "w": 7 * usPerDay,
}

// intervalIn reads an interval as Postgres writes and reads them: '10 seconds', '1 day 02:00:00', '-1 hours',
// '00:00:01.5', '1.5 minutes', '500 ms', '10' (seconds). Months and years have no fixed length, and INTERVAL is
// a duration here, so they are refused.
func intervalIn(s string) (int64, *sqlerr.Error) {
	bad := func() (int64, *sqlerr.Error) { return 0, invalidText(TypeInterval, s) }
	t := strings.ToLower(strings.TrimSpace(s))
	t = strings.TrimPrefix(t, "@")
	ago := false
	if strings.HasSuffix(t, " ago") {
		ago, t = true, strings.TrimSuffix(t, " ago")
	}
	fields := strings.Fields(t)
	if len(fields) == 0 {
		return bad()
	}
	var total float64
	var exact int64
	for i := 0; i < len(fields); i++ {
		f := fields[i]
		if strings.Contains(f, ":") {
			neg := strings.HasPrefix(f, "-")
			tod, rest, ok := parseTime(strings.TrimLeft(f, "+-"))
			if !ok || rest != "" {
				// mm:ss.f is not a Postgres form either; hh:mm:ss with hours beyond 24 is
				h, n, ok2 := digits(strings.TrimLeft(f, "+-"), 1, 9)
				if !ok2 {
					return bad()
				}
				tod2, rest2, ok3 := parseTime("00" + strings.TrimLeft(f, "+-")[n:])
				if !ok3 || rest2 != "" {
					return bad()
				}
				tod = h*usPerHour + tod2
			}
			if neg {
				tod = -tod
			}
			exact += tod
			continue
		}
		// a number, with its unit glued on or in the next field
		k := 0
		for k < len(f) && (f[k] == '-' || f[k] == '+' || f[k] == '.' || (f[k] >= '0' && f[k] <= '9')) {
			k++
		}
		num, unit := f[:k], f[k:]
		if num == "" {
			return bad()
		}
		if unit == "" && i+1 < len(fields) {
			if _, isUnit := intervalUnits[fields[i+1]]; isUnit || strings.HasPrefix(fields[i+1], "mon") || strings.HasPrefix(fields[i+1], "year") || fields[i+1] == "y" {
				unit = fields[i+1]
				i++
			}
		}
		if unit == "" {
			unit = "second"
		}
		mult, ok := intervalUnits[unit]
		if !ok {
			if strings.HasPrefix(unit, "mon") || strings.HasPrefix(unit, "year") || unit == "y" || unit == "yr" || unit == "yrs" {
				return 0, sqlerr.New(sqlerr.InvalidDatetime, sqlerr.NoPos, "interval %q has months or years, which have no fixed length; use days", s)
			}
			return bad()
		}
		if iv, ok := parseInt64(num); ok {
			p := iv * mult
			if mult != 0 && p/mult != iv {
				return 0, rangeErr(TypeInterval)
			}
			exact += p
			continue
		}
		fv, err := strconv.ParseFloat(num, 64)
		if err != nil {
			return bad()
		}
		total += fv * float64(mult)
	}
	r := float64(exact) + math.Round(total)
	if math.Abs(r) >= 9.2e18 {
		return 0, rangeErr(TypeInterval)
	}
	us := exact + int64(math.Round(total))
	if ago {
		us = -us
	}
	return us, nil
}

// ---- EXTRACT ----

type fieldKind uint8

const (
	fieldInt fieldKind = iota // BIGINT
	fieldSecond
	fieldMilli
	fieldEpoch
)

// extract fields, their result kind
var extractFields = map[string]fieldKind{
	"year": fieldInt, "quarter": fieldInt, "month": fieldInt, "week": fieldInt, "day": fieldInt, "dow": fieldInt,
	"isodow": fieldInt, "doy": fieldInt, "hour": fieldInt, "minute": fieldInt, "microsecond": fieldInt,
	"microseconds": fieldInt, "isoyear": fieldInt, "decade": fieldInt, "century": fieldInt, "millennium": fieldInt,
	"second": fieldSecond, "seconds": fieldSecond, "millisecond": fieldMilli, "milliseconds": fieldMilli,
	"epoch": fieldEpoch,
}

// The types EXTRACT returns: BIGINT for the integral fields; DECIMAL(8,6) for second (1.500000),
// DECIMAL(8,3) for millisecond (1500.000) and DECIMAL(19,6) for epoch (1767225601.500000), as Postgres 14+
// returns numeric with those scales.
var (
	typeSecond = &arrow.Decimal128Type{Precision: 8, Scale: 6}
	typeMilli  = &arrow.Decimal128Type{Precision: 8, Scale: 3}
	typeEpoch  = &arrow.Decimal128Type{Precision: 19, Scale: 6}
)

func bindExtract(name string, args []Expr) (Expr, error) {
	if len(args) != 2 {
		return nil, fnNotExist(name, args)
	}
	field, null, ok := ConstantString(args[0])
	if !ok || null {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, sqlerr.NoPos, "EXTRACT needs a constant field name")
	}
	field = strings.ToLower(field)
	kind, known := extractFields[field]
	if !known {
		return nil, sqlerr.New(sqlerr.InvalidParameter, sqlerr.NoPos, "unit %q not recognized for type %s", field, TypeName(args[1].Type()))
	}
	return bindField(name, field, kind, args[1], func(a []string) string {
		return "EXTRACT(" + strings.ToUpper(field) + " FROM " + a[0] + ")"
	})
}

var shorthandField = map[string]string{
	"year": "year", "quarter": "quarter", "month": "month", "week": "week", "dayofmonth": "day",
	"dayofweek": "flinkdow", "dayofyear": "doy", "hour": "hour", "minute": "minute", "second": "second",
}

// bindShorthand binds Flink's HOUR(ts), YEAR(ts), ... which return BIGINT (SECOND(ts) drops the fraction;
// DAYOFWEEK is 1 for Sunday to 7 for Saturday).
func bindShorthand(name string, args []Expr) (Expr, error) {
	if len(args) != 1 {
		return nil, fnNotExist(name, args)
	}
	return bindField(name, shorthandField[name], fieldInt, args[0], nil)
}

func bindField(name, field string, kind fieldKind, x Expr, render func([]string) string) (Expr, error) {
	var err error
	t := x.Type()
	switch {
	case isNull(t):
		x = NullOf(TypeTimestamp)
	case isDate(t), isString(t):
		if x, err = Cast(x, TypeTimestamp); err != nil {
			return nil, err
		}
	case isTimestamp(t):
	case isInterval(t):
		return bindIntervalField(name, field, kind, x, render)
	default:
		return nil, fnNotExist(name, []Expr{x})
	}
	out := TypeBigint
	switch kind {
	case fieldSecond:
		out = typeSecond
	case fieldMilli:
		out = typeMilli
	case fieldEpoch:
		out = typeEpoch
	}
	f := fieldFunc(field)
	var k kernel
	if kind == fieldInt {
		k = func(ec *evalCtx, args []value) (value, error) {
			return mapLoop(ec, args[0], TypeBigint, func(us int64) (int64, *sqlerr.Error) { return f(us), nil })
		}
	} else {
		k = func(ec *evalCtx, args []value) (value, error) {
			return mapLoop(ec, args[0], out, func(us int64) (decimal128.Num, *sqlerr.Error) {
				switch kind {
				case fieldSecond: // seconds with fraction, scale 6
					return decimal128.FromI64(us - FloorDiv(us, usPerMin)*usPerMin), nil
				case fieldMilli: // the same microseconds at scale 3 read as milliseconds with a fraction
					return decimal128.FromI64(us - FloorDiv(us, usPerMin)*usPerMin), nil
				}
				return decimal128.FromI64(us), nil // epoch: seconds, scale 6
			})
		}
	}
	return &callExpr{name: name, args: []Expr{x}, typ: out, kern: k, strict: true, render: render}, nil
}

// fieldFunc returns the integral field of a timestamp in microseconds.
func fieldFunc(field string) func(us int64) int64 {
	date := func(us int64) (int64, int, int, int64) {
		days := FloorDiv(us, usPerDay)
		y, m, d := CivilFromDays(days)
		return y, m, d, days
	}
	tod := func(us int64) int64 { return us - FloorDiv(us, usPerDay)*usPerDay }
	switch field {
	case "year":
		return func(us int64) int64 { y, _, _, _ := date(us); return y }
	case "isoyear":
		return func(us int64) int64 { y, _ := isoWeek(FloorDiv(us, usPerDay)); return y }
	case "quarter":
		return func(us int64) int64 { _, m, _, _ := date(us); return int64((m-1)/3 + 1) }
	case "month":
		return func(us int64) int64 { _, m, _, _ := date(us); return int64(m) }
	case "week":
		return func(us int64) int64 { _, w := isoWeek(FloorDiv(us, usPerDay)); return w }
	case "day":
		return func(us int64) int64 { _, _, d, _ := date(us); return int64(d) }
	case "dow": // 0 = Sunday
		return func(us int64) int64 { return dow(FloorDiv(us, usPerDay)) }
	case "isodow": // 7 = Sunday
		return func(us int64) int64 {
			d := dow(FloorDiv(us, usPerDay))
			if d == 0 {
				return 7
			}
			return d
		}
	case "flinkdow": // 1 = Sunday
		return func(us int64) int64 { return dow(FloorDiv(us, usPerDay)) + 1 }
	case "doy":
		return func(us int64) int64 {
			y, _, _, days := date(us)
			return days - DaysFromCivil(y, 1, 1) + 1
		}
	case "hour":
		return func(us int64) int64 { return tod(us) / usPerHour }
	case "minute":
		return func(us int64) int64 { return tod(us) / usPerMin % 60 }
	case "second":
		return func(us int64) int64 { return tod(us) / usPerSec % 60 }
	case "microsecond", "microseconds":
		return func(us int64) int64 { return tod(us) % usPerMin }
	case "decade":
		return func(us int64) int64 { y, _, _, _ := date(us); return FloorDiv(y, 10) }
	case "century":
		return func(us int64) int64 {
			y, _, _, _ := date(us)
			if y > 0 {
				return (y + 99) / 100
			}
			return -((99 - (y - 1)) / 100)
		}
	case "millennium":
		return func(us int64) int64 {
			y, _, _, _ := date(us)
			if y > 0 {
				return (y + 999) / 1000
			}
			return -((999 - (y - 1)) / 1000)
		}
	}
	return func(int64) int64 { return 0 }
}

// dow is the day of the week, 0 for Sunday (1970-01-01 was a Thursday, 4).
func dow(days int64) int64 { return (days%7 + 7 + 4) % 7 }

// isoWeek returns the ISO 8601 week-numbering year and week of a day.
func isoWeek(days int64) (int64, int64) {
	wd := dow(days)
	if wd == 0 {
		wd = 7
	}
	thursday := days - wd + 4
	y, _, _ := CivilFromDays(thursday)
	jan1 := DaysFromCivil(y, 1, 1)
	return y, (thursday-jan1)/7 + 1
}

func bindIntervalField(name, field string, kind fieldKind, x Expr, render func([]string) string) (Expr, error) {
	out := TypeBigint
	var f func(us int64) decimal128.Num
	var g func(us int64) int64
	switch field {
	case "epoch":
		out = typeEpoch
		f = func(us int64) decimal128.Num { return decimal128.FromI64(us) }
	case "second", "seconds":
		out = typeSecond
		f = func(us int64) decimal128.Num { return decimal128.FromI64(us % usPerMin) }
	case "millisecond", "milliseconds":
		out = typeMilli
		f = func(us int64) decimal128.Num { return decimal128.FromI64(us % usPerMin) }
	case "microsecond", "microseconds":
		g = func(us int64) int64 { return us % usPerMin }
	case "minute":
		g = func(us int64) int64 { return us / usPerMin % 60 }
	case "hour":
		g = func(us int64) int64 { return us / usPerHour }
	case "day":
		g = func(int64) int64 { return 0 } // a duration has no day field: '25 hours' is 25 hours, 0 days
	default:
		return nil, sqlerr.New(sqlerr.InvalidParameter, sqlerr.NoPos, "unit %q not supported for type interval", field)
	}
	var k kernel
	if f != nil {
		k = func(ec *evalCtx, args []value) (value, error) {
			return mapLoop(ec, args[0], out, func(us int64) (decimal128.Num, *sqlerr.Error) { return f(us), nil })
		}
	} else {
		k = func(ec *evalCtx, args []value) (value, error) {
			return mapLoop(ec, args[0], TypeBigint, func(us int64) (int64, *sqlerr.Error) { return g(us), nil })
		}
	}
	return &callExpr{name: name, args: []Expr{x}, typ: out, kern: k, strict: true, render: render}, nil
}

// ---- DATE_FORMAT ----

// bindDateFormat binds DATE_FORMAT(ts, pattern). A pattern with '%' is MySQL's (%Y-%m-%d %H:%i:%s), anything
// else Java's DateTimeFormatter letters as Flink uses them (yyyy-MM-dd HH:mm:ss.SSS, 'quoted text'). A TEXT
// first argument is read as a timestamp first, as Flink does.
func bindDateFormat(name string, args []Expr) (Expr, error) {
	if len(args) != 2 {
		return nil, fnNotExist(name, args)
	}
	x, p := args[0], args[1]
	var err error
	switch {
	case isNull(x.Type()):
		return NullOf(TypeText), nil
	case isString(x.Type()), isDate(x.Type()):
		if x, err = Cast(x, TypeTimestamp); err != nil {
			return nil, err
		}
	case !isTimestamp(x.Type()):
		return nil, fnNotExist(name, args)
	}
	if !isString(p.Type()) && !isNull(p.Type()) {
		return nil, fnNotExist(name, args)
	}
	if p, err = coerce(p, TypeText); err != nil {
		return nil, err
	}
	var fixed []fmtOp
	if pat, null, ok := ConstantString(p); ok && !null {
		fixed = compileFormat(pat)
	}
	return &callExpr{name: name, args: []Expr{x, p}, typ: TypeText, strict: true,
		kern: func(ec *evalCtx, args []value) (value, error) {
			ts, ps := primOf[int64](args[0]), strsOf(args[1])
			out := newStringOut(ec, TypeText, ec.n*20)
			var buf []byte
			ops := fixed
			lastPat := ""
			for i := 0; i < ec.n; i++ {
				if ts.null(i) || ps.null(i) {
					out.b.AppendNull()
					continue
				}
				if fixed == nil {
					if pat := ps.at(i); ops == nil || pat != lastPat {
						ops, lastPat = compileFormat(pat), pat
					}
				}
				buf = formatTimestamp(buf[:0], ts.at(i), ops)
				out.b.Append(buf)
			}
			return out.finish(), nil
		}}, nil
}

type fmtOp struct {
	kind  byte // 'L' literal, else a field letter
	width int
	lit   string
}

// compileFormat turns a Java or MySQL pattern into ops. Field letters: y year, M month, d day, H hour 0-23,
// h hour 1-12, m minute, s second, S fraction, a AM/PM, E day name, D day of year, B month name (internal).
func compileFormat(p string) []fmtOp {
	var ops []fmtOp
	lit := func(s string) {
		if n := len(ops); n > 0 && ops[n-1].kind == 'L' {
			ops[n-1].lit += s
			return
		}
		ops = append(ops, fmtOp{kind: 'L', lit: s})
	}
	if strings.Contains(p, "%") {
		mysql := map[byte]fmtOp{
			'Y': {kind: 'y', width: 4}, 'y': {kind: 'y', width: 2}, 'm': {kind: 'M', width: 2}, 'c': {kind: 'M', width: 1},
			'd': {kind: 'd', width: 2}, 'e': {kind: 'd', width: 1}, 'H': {kind: 'H', width: 2}, 'k': {kind: 'H', width: 1},
			'h': {kind: 'h', width: 2}, 'I': {kind: 'h', width: 2}, 'l': {kind: 'h', width: 1}, 'i': {kind: 'm', width: 2},
			's': {kind: 's', width: 2}, 'S': {kind: 's', width: 2}, 'f': {kind: 'S', width: 6}, 'p': {kind: 'a', width: 2},
			'M': {kind: 'B', width: 4}, 'b': {kind: 'B', width: 3}, 'W': {kind: 'E', width: 4}, 'a': {kind: 'E', width: 3},
			'j': {kind: 'D', width: 3},
		}
		for i := 0; i < len(p); i++ {
			if p[i] != '%' || i+1 == len(p) {
				lit(p[i : i+1])
				continue
			}
			i++
			if op, ok := mysql[p[i]]; ok {
				ops = append(ops, op)
			} else {
				lit(p[i : i+1]) // %% and unknown specifiers print the character
			}
		}
		return ops
	}
	for i := 0; i < len(p); {
		c := p[i]
		switch {
		case c == '\'':
			j := strings.IndexByte(p[i+1:], '\'')
			if j < 0 {
				lit(p[i+1:])
				return ops
			}
			if j == 0 {
				lit("'")
			} else {
				lit(p[i+1 : i+1+j])
			}
			i += j + 2
		case (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'):
			j := i
			for j < len(p) && p[j] == c {
				j++
			}
			w := j - i
			switch c {
			case 'y', 'u', 'Y':
				ops = append(ops, fmtOp{kind: 'y', width: w})
			case 'M', 'L':
				if w >= 3 {
					ops = append(ops, fmtOp{kind: 'B', width: w})
				} else {
					ops = append(ops, fmtOp{kind: 'M', width: w})
				}
			case 'd', 'H', 'h', 'm', 's', 'S', 'D':
				ops = append(ops, fmtOp{kind: c, width: w})
			case 'a':
				ops = append(ops, fmtOp{kind: 'a', width: 2})
			case 'E':
				ops = append(ops, fmtOp{kind: 'E', width: w})
			default:
				lit(p[i:j])
			}
			i = j
		default:
			lit(p[i : i+1])
			i++
		}
	}
	return ops
}

var monthNames = [...]string{"January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"}
var dayNames = [...]string{"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"}

func appendPadded(dst []byte, v int64, width int) []byte {
	if v < 0 {
		dst = append(dst, '-')
		v = -v
	}
	var tmp [20]byte
	s := strconv.AppendInt(tmp[:0], v, 10)
	for k := len(s); k < width; k++ {
		dst = append(dst, '0')
	}
	return append(dst, s...)
}

func formatTimestamp(dst []byte, us int64, ops []fmtOp) []byte {
	days := FloorDiv(us, usPerDay)
	tod := us - days*usPerDay
	y, m, d := CivilFromDays(days)
	h := tod / usPerHour
	for _, op := range ops {
		switch op.kind {
		case 'L':
			dst = append(dst, op.lit...)
		case 'y':
			if op.width == 2 {
				dst = appendPadded(dst, ((y%100)+100)%100, 2)
			} else {
				dst = appendPadded(dst, y, op.width)
			}
		case 'M':
			dst = appendPadded(dst, int64(m), op.width)
		case 'B':
			if op.width == 3 {
				dst = append(dst, monthNames[m-1][:3]...)
			} else {
				dst = append(dst, monthNames[m-1]...)
			}
		case 'd':
			dst = appendPadded(dst, int64(d), op.width)
		case 'D':
			dst = appendPadded(dst, days-DaysFromCivil(y, 1, 1)+1, op.width)
		case 'H':
			dst = appendPadded(dst, h, op.width)
		case 'h':
			h12 := h % 12
			if h12 == 0 {
				h12 = 12
			}
			dst = appendPadded(dst, h12, op.width)
		case 'm':
			dst = appendPadded(dst, tod/usPerMin%60, op.width)
		case 's':
			dst = appendPadded(dst, tod/usPerSec%60, op.width)
		case 'S':
			frac := tod % usPerSec // 6 digits; the pattern's width keeps the leading ones
			var tmp [6]byte
			for k := 5; k >= 0; k-- {
				tmp[k] = byte('0' + frac%10)
				frac /= 10
			}
			w := op.width
			for k := 0; k < w; k++ {
				if k < 6 {
					dst = append(dst, tmp[k])
				} else {
					dst = append(dst, '0')
				}
			}
		case 'a':
			if h < 12 {
				dst = append(dst, "AM"...)
			} else {
				dst = append(dst, "PM"...)
			}
		case 'E':
			name := dayNames[dow(days)]
			if op.width <= 3 {
				name = name[:3]
			}
			dst = append(dst, name...)
		}
	}
	return dst
}

// ---- DATE_TRUNC ----

var truncUnits = map[string]bool{
	"microseconds": true, "milliseconds": true, "second": true, "minute": true, "hour": true, "day": true,
	"week": true, "month": true, "quarter": true, "year": true, "decade": true, "century": true, "millennium": true,
}

// bindDateTrunc binds DATE_TRUNC('unit', ts) (units as Postgres: microseconds ... millennium; week starts on
// Monday). A DATE argument is truncated as a timestamp and returns one, as Postgres does.
func bindDateTrunc(name string, args []Expr) (Expr, error) {
	if len(args) != 2 {
		return nil, fnNotExist(name, args)
	}
	unit, null, ok := ConstantString(args[0])
	if !ok || null {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, sqlerr.NoPos, "DATE_TRUNC needs a constant unit")
	}
	unit = strings.ToLower(strings.TrimSpace(unit))
	switch unit {
	case "microsecond", "us":
		unit = "microseconds"
	case "millisecond", "ms":
		unit = "milliseconds"
	case "seconds", "minutes", "hours", "days", "weeks", "months", "quarters", "years":
		unit = strings.TrimSuffix(unit, "s")
	}
	if !truncUnits[unit] {
		return nil, sqlerr.New(sqlerr.InvalidParameter, sqlerr.NoPos, "unit %q not recognized for type timestamp without time zone", unit)
	}
	x := args[1]
	var err error
	switch {
	case isNull(x.Type()):
		return NullOf(TypeTimestamp), nil
	case isDate(x.Type()), isString(x.Type()):
		if x, err = Cast(x, TypeTimestamp); err != nil {
			return nil, err
		}
	case !isTimestamp(x.Type()):
		return nil, fnNotExist(name, args)
	}
	f := truncFunc(unit)
	return &callExpr{name: name, args: []Expr{args[0], x}, typ: TypeTimestamp, strict: true,
		kern: func(ec *evalCtx, args []value) (value, error) {
			return mapLoop(ec, args[1], TypeTimestamp, func(us int64) (int64, *sqlerr.Error) { return f(us), nil })
		}}, nil
}

func truncFunc(unit string) func(int64) int64 {
	step := func(n int64) func(int64) int64 { return func(us int64) int64 { return FloorDiv(us, n) * n } }
	ymd := func(f func(y int64, m int) (int64, int)) func(int64) int64 {
		return func(us int64) int64 {
			y, m, _ := CivilFromDays(FloorDiv(us, usPerDay))
			y, m = f(y, m)
			return DaysFromCivil(y, m, 1) * usPerDay
		}
	}
	switch unit {
	case "microseconds":
		return func(us int64) int64 { return us }
	case "milliseconds":
		return step(1000)
	case "second":
		return step(usPerSec)
	case "minute":
		return step(usPerMin)
	case "hour":
		return step(usPerHour)
	case "day":
		return step(usPerDay)
	case "week":
		return func(us int64) int64 {
			days := FloorDiv(us, usPerDay)
			wd := dow(days) // 0 Sunday
			back := (wd + 6) % 7
			return (days - back) * usPerDay
		}
	case "month":
		return ymd(func(y int64, m int) (int64, int) { return y, m })
	case "quarter":
		return ymd(func(y int64, m int) (int64, int) { return y, (m-1)/3*3 + 1 })
	case "year":
		return ymd(func(y int64, m int) (int64, int) { return y, 1 })
	case "decade":
		return ymd(func(y int64, m int) (int64, int) { return FloorDiv(y, 10) * 10, 1 })
	case "century":
		return ymd(func(y int64, m int) (int64, int) { return FloorDiv(y-1, 100)*100 + 1, 1 })
	}
	return ymd(func(y int64, m int) (int64, int) { return FloorDiv(y-1, 1000)*1000 + 1, 1 })
}

// ---- TO_TIMESTAMP ----

// bindToTimestamp binds TO_TIMESTAMP(text) (the timestamp input forms), TO_TIMESTAMP(text, pattern) (a Java
// pattern as Flink's, numeric fields only: yyyy MM dd HH mm ss SSS and literals) and TO_TIMESTAMP(number)
// (Unix epoch seconds, Postgres).
func bindToTimestamp(name string, args []Expr) (Expr, error) {
	if len(args) < 1 || len(args) > 2 {
		return nil, fnNotExist(name, args)
	}
	x := args[0]
	if isNull(x.Type()) {
		return NullOf(TypeTimestamp), nil
	}
	if len(args) == 1 {
		switch {
		case isString(x.Type()):
			return Cast(x, TypeTimestamp)
		case isNumeric(x.Type()):
			d, err := coerce(x, TypeDouble)
			if err != nil {
				return nil, err
			}
			return &callExpr{name: name, args: []Expr{d}, typ: TypeTimestamp, strict: true, canFail: true,
				kern: func(ec *evalCtx, args []value) (value, error) {
					return mapLoop(ec, args[0], TypeTimestamp, func(s float64) (int64, *sqlerr.Error) {
						us := math.Round(s * usPerSec)
						if math.IsNaN(us) || math.Abs(us) >= 9.2e18 {
							return 0, rangeErr(TypeTimestamp)
						}
						return int64(us), nil
					})
				}}, nil
		}
		return nil, fnNotExist(name, args)
	}
	if !isString(x.Type()) || !isString(args[1].Type()) {
		return nil, fnNotExist(name, args)
	}
	return &callExpr{name: name, args: []Expr{x, args[1]}, typ: TypeTimestamp, strict: true, canFail: true,
		kern: func(ec *evalCtx, args []value) (value, error) {
			s, p := strsOf(args[0]), strsOf(args[1])
			var ops []fmtOp
			last := ""
			return mapLoopWith(ec, args, TypeTimestamp, func(i int) (int64, *sqlerr.Error) {
				if pat := p.at(i); ops == nil || pat != last {
					ops, last = compileFormat(pat), pat
				}
				us, ok := parseWithFormat(s.at(i), ops)
				if !ok {
					return 0, invalidText(TypeTimestamp, s.at(i))
				}
				return us, nil
			})
		}}, nil
}

func parseWithFormat(s string, ops []fmtOp) (int64, bool) {
	y, m, d := int64(1970), int64(1), int64(1)
	var h, mi, sec, frac int64
	pm, hasAP := false, false
	for _, op := range ops {
		if op.kind == 'L' {
			if !strings.HasPrefix(s, op.lit) {
				return 0, false
			}
			s = s[len(op.lit):]
			continue
		}
		if op.kind == 'a' {
			switch {
			case strings.HasPrefix(strings.ToUpper(s), "AM"):
			case strings.HasPrefix(strings.ToUpper(s), "PM"):
				pm = true
			default:
				return 0, false
			}
			hasAP, s = true, s[2:]
			continue
		}
		maxw := op.width
		if maxw < 2 || op.kind == 'y' {
			maxw = max(op.width, 2)
			if op.kind == 'y' && op.width != 2 {
				maxw = 6
			}
		}
		v, n, ok := digits(s, 1, maxw)
		if !ok {
			return 0, false
		}
		field := s[:n]
		s = s[n:]
		switch op.kind {
		case 'y':
			y = v
			if op.width == 2 {
				y += 2000
			}
		case 'M':
			m = v
		case 'd':
			d = v
		case 'H', 'h':
			h = v
		case 'm':
			mi = v
		case 's':
			sec = v
		case 'S':
			for k := len(field); k < 6; k++ {
				v *= 10
			}
			for k := len(field); k > 6; k-- {
				v /= 10
			}
			frac = v
		default:
			return 0, false
		}
	}
	if s != "" {
		return 0, false
	}
	if hasAP {
		h %= 12
		if pm {
			h += 12
		}
	}
	if m < 1 || m > 12 || d < 1 || d > int64(daysIn(y, int(m))) || h > 23 || mi > 59 || sec > 59 {
		return 0, false
	}
	return DaysFromCivil(y, int(m), int(d))*usPerDay + h*usPerHour + mi*usPerMin + sec*usPerSec + frac, true
}
