package expr

import (
	"math"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

// This file holds the Postgres text forms of values (what psql, COPY and the pgwire text format show). They are
// the output of CAST(x AS TEXT) and of ||, and exec/textform's columns (CSV, JSON lines, the REPL) call them
// too, so a value prints the same everywhere.

// AppendFloat8 prints a float8 as Postgres 12+ does (float8out with extra_float_digits = 1): the shortest digits
// that read back to the same value, in fixed notation when the decimal exponent is in [-4, 15), otherwise as
// d.ddde+XX with at least two exponent digits; NaN, Infinity, -Infinity.
func AppendFloat8(dst []byte, f float64) []byte {
	if s, ok := floatSpecial(f); ok {
		return append(dst, s...)
	}
	start := len(dst)
	dst = strconv.AppendFloat(dst, f, 'e', -1, 64)
	e := start
	for dst[e] != 'e' {
		e++
	}
	exp, _ := strconv.Atoi(string(dst[e+1:]))
	if exp < -4 || exp >= 15 {
		return dst // Go's shortest 'e' form is exactly Postgres' scientific form
	}
	return strconv.AppendFloat(dst[:start], f, 'f', -1, 64)
}

// AppendFloat4 prints a float4 as Postgres 12+ does. float4out switches to scientific notation from exponent 6
// on, which is exactly Go's shortest %g for 32-bit floats.
func AppendFloat4(dst []byte, f float32) []byte {
	if s, ok := floatSpecial(float64(f)); ok {
		return append(dst, s...)
	}
	return strconv.AppendFloat(dst, float64(f), 'g', -1, 32)
}

func floatSpecial(f float64) (string, bool) {
	switch {
	case math.IsNaN(f):
		return "NaN", true
	case math.IsInf(f, 1):
		return "Infinity", true
	case math.IsInf(f, -1):
		return "-Infinity", true
	}
	return "", false
}

const hexDigits = "0123456789abcdef"

// AppendByteaHex prints bytea in Postgres' default hex output: \x followed by two lower-case digits per byte.
func AppendByteaHex(dst, b []byte) []byte {
	dst = append(dst, '\\', 'x')
	for _, c := range b {
		dst = append(dst, hexDigits[c>>4], hexDigits[c&15])
	}
	return dst
}

// FloorDiv divides rounding toward negative infinity (b > 0 for a meaningful result).
func FloorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// TimeUnitToMicros converts a time unit to microseconds, Postgres' precision. Nanoseconds are truncated toward
// negative infinity, so a value never prints as later than it is.
func TimeUnitToMicros(u arrow.TimeUnit) func(int64) int64 {
	switch u {
	case arrow.Second:
		return func(v int64) int64 { return v * 1_000_000 }
	case arrow.Millisecond:
		return func(v int64) int64 { return v * 1000 }
	case arrow.Nanosecond:
		return func(v int64) int64 { return FloorDiv(v, 1000) }
	}
	return func(v int64) int64 { return v }
}

// CivilFromDays converts days since 1970-01-01 to a proleptic Gregorian date (year 0 is 1 BC); Howard Hinnant's
// days_from_civil inverse, valid over the whole int64 range Arrow dates can hold in practice.
func CivilFromDays(days int64) (y int64, m, d int) {
	z := days + 719468
	era := FloorDiv(z, 146097)
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	y = yoe + era*400
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d = int(doy - (153*mp+2)/5 + 1)
	if mp < 10 {
		m = int(mp + 3)
	} else {
		m = int(mp - 9)
	}
	if m <= 2 {
		y++
	}
	return y, m, d
}

func append2(dst []byte, v int) []byte {
	return append(dst, byte('0'+v/10), byte('0'+v%10))
}

// appendYMD prints yyyy-mm-dd; years before 1 AD are reported as BC by the caller (Postgres has no year 0).
func appendYMD(dst []byte, y int64, m, d int) (_ []byte, bc bool) {
	if y <= 0 {
		y, bc = 1-y, true
	}
	for p := int64(1000); p > 1 && y < p; p /= 10 {
		dst = append(dst, '0')
	}
	dst = strconv.AppendInt(dst, y, 10)
	dst = append(dst, '-')
	dst = append2(dst, m)
	dst = append(dst, '-')
	return append2(dst, d), bc
}

// AppendDate prints a date as Postgres' ISO DateStyle does: 2026-01-01, or 0044-03-15 BC.
func AppendDate(dst []byte, days int64) []byte {
	y, m, d := CivilFromDays(days)
	dst, bc := appendYMD(dst, y, m, d)
	if bc {
		dst = append(dst, " BC"...)
	}
	return dst
}

// appendFraction prints .ffffff for a non-zero microsecond count, without trailing zeros.
func appendFraction(dst []byte, us int64) []byte {
	if us == 0 {
		return dst
	}
	var digits [6]byte
	for k := 5; k >= 0; k-- {
		digits[k] = byte('0' + us%10)
		us /= 10
	}
	n := 6
	for digits[n-1] == '0' {
		n--
	}
	dst = append(dst, '.')
	return append(dst, digits[:n]...)
}

// AppendTimestamp prints microseconds since the epoch as Postgres prints a timestamp in ISO DateStyle:
// 2026-01-01 00:00:01.5 (a space, no T, no trailing zeros). A zoned Arrow timestamp prints as timestamptz in UTC
// (+00).
func AppendTimestamp(dst []byte, us int64, withZone bool) []byte {
	days := FloorDiv(us, 86_400_000_000)
	rem := us - days*86_400_000_000
	y, m, d := CivilFromDays(days)
	dst, bc := appendYMD(dst, y, m, d)
	secs := rem / 1_000_000
	dst = append(dst, ' ')
	dst = append2(dst, int(secs/3600))
	dst = append(dst, ':')
	dst = append2(dst, int(secs/60%60))
	dst = append(dst, ':')
	dst = append2(dst, int(secs%60))
	dst = appendFraction(dst, rem%1_000_000)
	if withZone {
		dst = append(dst, "+00"...)
	}
	if bc {
		dst = append(dst, " BC"...)
	}
	return dst
}

// AppendDecimal128 prints an unscaled decimal with exactly scale fraction digits, as numeric_out does for a
// NUMERIC(p,s) value (1.50, -0.05).
func AppendDecimal128(dst []byte, n decimal128.Num, scale int32) []byte {
	hi, lo := n.HighBits(), n.LowBits()
	if scale < 0 || !(hi == 0 && lo < 1<<63 || hi == -1 && lo >= 1<<63) {
		return append(dst, n.ToString(scale)...) // rare: beyond int64 or a negative scale
	}
	v := int64(lo)
	neg := v < 0
	var mag uint64
	if neg {
		mag = uint64(-v) // two's complement: also right for math.MinInt64
		dst = append(dst, '-')
	} else {
		mag = uint64(v)
	}
	var digits [24]byte
	ds := strconv.AppendUint(digits[:0], mag, 10)
	if int(scale) >= len(ds) {
		dst = append(dst, '0', '.')
		for k := len(ds); k < int(scale); k++ {
			dst = append(dst, '0')
		}
		return append(dst, ds...)
	}
	at := len(ds) - int(scale)
	dst = append(dst, ds[:at]...)
	if scale > 0 {
		dst = append(dst, '.')
		dst = append(dst, ds[at:]...)
	}
	return dst
}

// AppendInterval prints an interval in Postgres' default IntervalStyle (postgres): "1 year 2 mons 3 days
// 04:05:06.5", "-1 days", "00:00:00"; a time part of another sign than the date part before it gets an explicit
// sign. This follows EncodeInterval's INTSTYLE_POSTGRES branch.
func AppendInterval(dst []byte, months, days, us int64) []byte {
	isZero, isBefore := true, false
	part := func(v int64, unit string) {
		if v == 0 {
			return
		}
		if !isZero {
			dst = append(dst, ' ')
		}
		if isBefore && v > 0 {
			dst = append(dst, '+')
		}
		dst = strconv.AppendInt(dst, v, 10)
		dst = append(dst, ' ')
		dst = append(dst, unit...)
		if v != 1 {
			dst = append(dst, 's')
		}
		isBefore, isZero = v < 0, false
	}
	part(months/12, "year")
	part(months%12, "mon")
	part(days, "day")
	hour := us / 3_600_000_000
	us -= hour * 3_600_000_000
	minute := us / 60_000_000
	us -= minute * 60_000_000
	sec := us / 1_000_000
	fsec := us - sec*1_000_000
	if isZero || hour != 0 || minute != 0 || sec != 0 || fsec != 0 {
		minus := hour < 0 || minute < 0 || sec < 0 || fsec < 0
		if !isZero {
			dst = append(dst, ' ')
		}
		if minus {
			dst = append(dst, '-')
		} else if isBefore {
			dst = append(dst, '+')
		}
		if hour < 0 {
			hour = -hour
		}
		if hour < 10 {
			dst = append(dst, '0')
		}
		dst = strconv.AppendInt(dst, hour, 10)
		dst = append(dst, ':')
		dst = append2(dst, int(abs64(minute)))
		dst = append(dst, ':')
		dst = append2(dst, int(abs64(sec)))
		dst = appendFraction(dst, abs64(fsec))
	}
	return dst
}

func abs64(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

// AppendDuration appends a duration of microseconds (our INTERVAL) the way Postgres prints the justified
// interval: whole days as days, the rest as a time (26 hours is "1 day 02:00:00", as ts - ts shows it).
func AppendDuration(dst []byte, us int64) []byte {
	const day = 86_400_000_000
	return AppendInterval(dst, 0, us/day, us%day)
}
