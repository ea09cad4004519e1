package pgwire

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/clinksql/clinksql/catalog"
	"github.com/clinksql/clinksql/exec/expr"
	"github.com/clinksql/clinksql/sqlerr"
)

// Values cross the engine boundary in Postgres text form (engine.Result rows, ExecutePrepared's parameters).
// This file converts between that form and the binary format of each type a client may ask for: a result value
// is parsed back from its text by the column's OID and encoded; a binary parameter is decoded and printed as
// text. Binary formats are Postgres' send/recv functions (src/backend/utils/adt/*.c).

// More OIDs than catalog names: types that introspection results or client-declared parameters can carry.
const (
	oidChar        = 18 // "char"
	oidName        = 19
	oidOID         = 26
	oidJSON        = 114
	oidBpchar      = 1042
	oidTimestamptz = 1184
)

const (
	// Postgres' epoch for dates and timestamps is 2000-01-01; ours (and Unix's) is 1970-01-01.
	pgEpochDays   = 10957
	pgEpochMicros = pgEpochDays * 86_400_000_000
	usPerDay      = 86_400_000_000
	// The range of a binary timestamp (microseconds since 2000-01-01) we accept: Postgres' lower bound (4713 BC),
	// and as upper bound what our epoch (1970) can hold, a few hundred years short of Postgres' 294276 AD.
	minTimestampUs = -211813488000000000
	maxTimestampUs = math.MaxInt64 - pgEpochMicros
)

// typeSize is RowDescription's type length (pg_type.typlen): -1 for variable-length types.
func typeSize(oid uint32) int16 {
	switch oid {
	case catalog.OIDBool, oidChar:
		return 1
	case catalog.OIDInt2:
		return 2
	case catalog.OIDInt4, catalog.OIDFloat4, catalog.OIDDate, oidOID:
		return 4
	case catalog.OIDInt8, catalog.OIDFloat8, catalog.OIDTimestamp, oidTimestamptz:
		return 8
	case catalog.OIDInterval:
		return 16
	case oidName:
		return 64
	}
	return -1
}

// hasBinary reports whether values of oid can be sent and received in binary format.
func hasBinary(oid uint32) bool {
	switch oid {
	case catalog.OIDBool, catalog.OIDInt2, catalog.OIDInt4, catalog.OIDInt8, catalog.OIDFloat4, catalog.OIDFloat8,
		catalog.OIDNumeric, catalog.OIDText, catalog.OIDVarchar, catalog.OIDUnknown, oidName, oidBpchar, oidJSON,
		oidChar, oidOID, catalog.OIDBytea, catalog.OIDDate, catalog.OIDTimestamp, oidTimestamptz, catalog.OIDInterval:
		return true
	}
	return false
}

// appendBinary appends the binary form of a value of type oid given in text form.
func appendBinary(dst []byte, oid uint32, text string) ([]byte, error) {
	switch oid {
	case catalog.OIDBool:
		switch text {
		case "t", "true":
			return append(dst, 1), nil
		case "f", "false":
			return append(dst, 0), nil
		}
	case catalog.OIDInt2:
		v, err := strconv.ParseInt(text, 10, 16)
		if err == nil {
			return binary.BigEndian.AppendUint16(dst, uint16(v)), nil
		}
	case catalog.OIDInt4:
		v, err := strconv.ParseInt(text, 10, 32)
		if err == nil {
			return binary.BigEndian.AppendUint32(dst, uint32(v)), nil
		}
	case catalog.OIDInt8:
		v, err := strconv.ParseInt(text, 10, 64)
		if err == nil {
			return binary.BigEndian.AppendUint64(dst, uint64(v)), nil
		}
	case oidOID:
		v, err := strconv.ParseUint(text, 10, 32)
		if err == nil {
			return binary.BigEndian.AppendUint32(dst, uint32(v)), nil
		}
	case catalog.OIDFloat4:
		v, err := strconv.ParseFloat(text, 32)
		if err == nil || isRangeErr(err) {
			return binary.BigEndian.AppendUint32(dst, math.Float32bits(float32(v))), nil
		}
	case catalog.OIDFloat8:
		v, err := strconv.ParseFloat(text, 64)
		if err == nil || isRangeErr(err) {
			return binary.BigEndian.AppendUint64(dst, math.Float64bits(v)), nil
		}
	case catalog.OIDNumeric:
		return appendNumeric(dst, text)
	case catalog.OIDText, catalog.OIDVarchar, catalog.OIDUnknown, oidName, oidBpchar, oidJSON:
		return append(dst, text...), nil
	case oidChar:
		if len(text) <= 1 {
			return append(dst, text...), nil
		}
	case catalog.OIDBytea:
		if h, ok := strings.CutPrefix(text, `\x`); ok {
			n := len(dst)
			dst = append(dst, make([]byte, hex.DecodedLen(len(h)))...)
			if _, err := hex.Decode(dst[n:], []byte(h)); err == nil {
				return dst, nil
			}
			dst = dst[:n]
		}
	case catalog.OIDDate:
		days, err := parseDate(text)
		if err == nil {
			return binary.BigEndian.AppendUint32(dst, uint32(days-pgEpochDays)), nil
		}
	case catalog.OIDTimestamp:
		us, err := parseTimestamp(text)
		if err == nil {
			return binary.BigEndian.AppendUint64(dst, uint64(us-pgEpochMicros)), nil
		}
	case oidTimestamptz:
		// The text carries its offset (the session's zone): the binary form is the instant.
		us, err := expr.TimestampTZIn(time.UTC, strings.TrimSuffix(text, " BC"))
		if err == nil && !strings.HasSuffix(text, " BC") {
			return binary.BigEndian.AppendUint64(dst, uint64(us-pgEpochMicros)), nil
		}
	case catalog.OIDInterval:
		months, days, us, err := parseInterval(text)
		if err == nil {
			dst = binary.BigEndian.AppendUint64(dst, uint64(us))
			dst = binary.BigEndian.AppendUint32(dst, uint32(days))
			return binary.BigEndian.AppendUint32(dst, uint32(months)), nil
		}
	default:
		return dst, fmt.Errorf("no binary output function available for type OID %d", oid)
	}
	return dst, fmt.Errorf("cannot encode %q as binary %s", text, typeName(oid))
}

func isRangeErr(err error) bool { return errors.Is(err, strconv.ErrRange) }

func typeName(oid uint32) string {
	switch oid {
	case catalog.OIDBool:
		return "boolean"
	case catalog.OIDInt2:
		return "smallint"
	case catalog.OIDInt4:
		return "integer"
	case catalog.OIDInt8:
		return "bigint"
	case catalog.OIDFloat4:
		return "real"
	case catalog.OIDFloat8:
		return "double precision"
	case catalog.OIDNumeric:
		return "numeric"
	case catalog.OIDText:
		return "text"
	case catalog.OIDVarchar:
		return "character varying"
	case catalog.OIDBytea:
		return "bytea"
	case catalog.OIDDate:
		return "date"
	case catalog.OIDTimestamp:
		return "timestamp without time zone"
	case oidTimestamptz:
		return "timestamp with time zone"
	case catalog.OIDInterval:
		return "interval"
	}
	return "type OID " + strconv.FormatUint(uint64(oid), 10)
}

// parseDate reads a date's text form and returns days since 1970-01-01.
func parseDate(text string) (int64, error) {
	us, err := parseTimestamp(text)
	if err != nil {
		return 0, err
	}
	return expr.FloorDiv(us, usPerDay), nil
}

// parseTimestamp reads a timestamp's (or a date's) text form, with Postgres' " BC" suffix, and returns
// microseconds since 1970-01-01.
func parseTimestamp(text string) (int64, error) {
	rest, bc := strings.CutSuffix(text, " BC")
	us, err := expr.ParseTimestamp(rest)
	if err != nil || !bc {
		return us, err
	}
	days := expr.FloorDiv(us, usPerDay)
	tod := us - days*usPerDay
	y, m, d := expr.CivilFromDays(days)
	return expr.DaysFromCivil(1-y, m, d)*usPerDay + tod, nil // year 1 BC is year 0
}

// parseInterval reads an interval in the postgres IntervalStyle that expr.AppendInterval prints ("1 year 2 mons
// 3 days -04:05:06.5"); other forms go through the engine's interval parser, as microseconds.
func parseInterval(text string) (months, days, us int64, err error) {
	fields := strings.Fields(text)
	ok := len(fields) > 0
	for i := 0; ok && i < len(fields); i++ {
		f := fields[i]
		if strings.Contains(f, ":") {
			t, good := parseClock(f)
			us, ok = us+t, good && i == len(fields)-1
			continue
		}
		n, perr := strconv.ParseInt(f, 10, 64)
		if perr != nil || i+1 >= len(fields) {
			ok = false
			break
		}
		i++
		switch strings.TrimSuffix(fields[i], "s") {
		case "year":
			months += 12 * n
		case "mon":
			months += n
		case "day":
			days += n
		default:
			ok = false
		}
	}
	if ok && months >= math.MinInt32 && months <= math.MaxInt32 && days >= math.MinInt32 && days <= math.MaxInt32 {
		return months, days, us, nil
	}
	v, perr := expr.ParseInterval(text)
	if perr != nil {
		return 0, 0, 0, perr
	}
	return 0, 0, v, nil
}

// parseClock reads [+-]HH:MM:SS[.ffffff] as microseconds.
func parseClock(s string) (int64, bool) {
	neg := false
	if s != "" && (s[0] == '-' || s[0] == '+') {
		neg, s = s[0] == '-', s[1:]
	}
	parts := strings.Split(s, ":")
	if len(parts) != 3 {
		return 0, false
	}
	h, err1 := strconv.ParseInt(parts[0], 10, 64)
	m, err2 := strconv.ParseInt(parts[1], 10, 64)
	secText, frac, _ := strings.Cut(parts[2], ".")
	sec, err3 := strconv.ParseInt(secText, 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || h < 0 || h > math.MaxInt64/3_600_000_000-1 || m < 0 || m > 59 ||
		sec < 0 || sec > 59 || len(frac) > 6 {
		return 0, false
	}
	var f int64
	for k := 0; k < 6; k++ {
		f *= 10
		if k < len(frac) {
			if frac[k] < '0' || frac[k] > '9' {
				return 0, false
			}
			f += int64(frac[k] - '0')
		}
	}
	v := h*3_600_000_000 + m*60_000_000 + sec*1_000_000 + f
	if neg {
		v = -v
	}
	return v, true
}

// Postgres' numeric sign words.
const (
	numericPos  = 0x0000
	numericNeg  = 0x4000
	numericNaN  = 0xC000
	numericPInf = 0xD000
	numericNInf = 0xF000
	// numericMaxDscale is NUMERIC_DSCALE_MAX.
	numericMaxDscale = 0x3FFF
	// numericMaxDigits bounds the integer and fraction digits of a binary numeric parameter (NUMERIC_MAX_PRECISION).
	numericMaxDigits = 1000
)

// appendNumeric encodes a numeric's text form ([-]digits[.digits], NaN, Infinity) as numeric_send does: ndigits,
// weight, sign, dscale, then base-10000 digits, the first of weight 10000^weight.
func appendNumeric(dst []byte, text string) ([]byte, error) {
	header := func(ndigits, weight int, sign uint16, dscale int) []byte {
		dst = binary.BigEndian.AppendUint16(dst, uint16(ndigits))
		dst = binary.BigEndian.AppendUint16(dst, uint16(int16(weight)))
		dst = binary.BigEndian.AppendUint16(dst, sign)
		return binary.BigEndian.AppendUint16(dst, uint16(dscale))
	}
	switch text {
	case "NaN":
		return header(0, 0, numericNaN, 0), nil
	case "Infinity":
		return header(0, 0, numericPInf, 0), nil
	case "-Infinity":
		return header(0, 0, numericNInf, 0), nil
	}
	s := text
	sign := uint16(numericPos)
	if strings.HasPrefix(s, "-") {
		sign, s = numericNeg, s[1:]
	}
	intPart, frac, _ := strings.Cut(s, ".")
	if intPart == "" && frac == "" || len(frac) > numericMaxDscale || !allDigits(intPart) || !allDigits(frac) {
		return dst, fmt.Errorf("cannot encode %q as binary numeric", text)
	}
	intPart = strings.TrimLeft(intPart, "0")
	dscale := len(frac)
	// Pad both parts to whole base-10000 digits: the integer part on the left, the fraction on the right.
	intPart = strings.Repeat("0", (4-len(intPart)%4)%4) + intPart
	frac += strings.Repeat("0", (4-len(frac)%4)%4)
	all := intPart + frac
	digits := make([]uint16, 0, len(all)/4)
	for k := 0; k < len(all); k += 4 {
		d, _ := strconv.Atoi(all[k : k+4])
		digits = append(digits, uint16(d))
	}
	weight := len(intPart)/4 - 1
	for len(digits) > 0 && digits[0] == 0 {
		digits = digits[1:]
		weight--
	}
	for len(digits) > 0 && digits[len(digits)-1] == 0 {
		digits = digits[:len(digits)-1]
	}
	if len(digits) == 0 {
		weight, sign = 0, numericPos // zero has no sign
	}
	if weight > math.MaxInt16 || weight < math.MinInt16 {
		return dst, fmt.Errorf("cannot encode %q as binary numeric: out of range", text)
	}
	dst = header(len(digits), weight, sign, dscale)
	for _, d := range digits {
		dst = binary.BigEndian.AppendUint16(dst, d)
	}
	return dst, nil
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// numericText decodes numeric_send's form to numeric's text form, as numeric_recv and numeric_out would.
func numericText(b []byte) (string, error) {
	if len(b) < 8 {
		return "", errBinaryLength
	}
	ndigits := int(binary.BigEndian.Uint16(b))
	weight := int(int16(binary.BigEndian.Uint16(b[2:])))
	sign := binary.BigEndian.Uint16(b[4:])
	dscale := int(binary.BigEndian.Uint16(b[6:]))
	if len(b) != 8+2*ndigits {
		return "", errBinaryLength
	}
	switch sign {
	case numericNaN:
		return "NaN", nil
	case numericPInf:
		return "Infinity", nil
	case numericNInf:
		return "-Infinity", nil
	case numericPos, numericNeg:
	default:
		return "", binaryError("invalid sign in external \"numeric\" value")
	}
	if dscale > numericMaxDscale {
		return "", binaryError("invalid scale in external \"numeric\" value")
	}
	// A few bytes can claim a weight of 10000^32767; as text that is 131 kB, and a Bind has up to 65535
	// parameters. Postgres' declared numerics stop at 1000 digits (and ours at 38): so do we.
	if weight > numericMaxDigits/4 || dscale > numericMaxDigits {
		return "", sqlerr.New(sqlerr.NumericOutOfRange, sqlerr.NoPos, "numeric parameter out of range: more than %d digits", numericMaxDigits)
	}
	digits := make([]int, ndigits)
	for i := range digits {
		d := int(binary.BigEndian.Uint16(b[8+2*i:]))
		if d > 9999 {
			return "", binaryError("invalid digit in external \"numeric\" value")
		}
		digits[i] = d
	}
	digit := func(i int) int { // base-10000 digit of weight `weight - i`
		if i >= 0 && i < len(digits) {
			return digits[i]
		}
		return 0
	}
	pad4 := func(d int) string { v := strconv.Itoa(d); return strings.Repeat("0", 4-len(v)) + v }
	// The integer digits (powers weight..0), then dscale+1 fraction digits; numeric_recv rounds to dscale.
	var all strings.Builder
	for i := 0; i <= weight; i++ {
		all.WriteString(pad4(digit(i)))
	}
	intLen := all.Len()
	var frac strings.Builder
	for i := weight + 1; frac.Len() < dscale+1; i++ {
		frac.WriteString(pad4(digit(i)))
	}
	all.WriteString(frac.String()[:dscale+1])
	ds := []byte(all.String())
	roundUp := ds[len(ds)-1] >= '5'
	ds = ds[:len(ds)-1]
	if roundUp {
		k := len(ds) - 1
		for ; k >= 0 && ds[k] == '9'; k-- {
			ds[k] = '0'
		}
		if k >= 0 {
			ds[k]++
		} else {
			ds = append([]byte{'1'}, ds...)
			intLen++
		}
	}
	var sb strings.Builder
	if sign == numericNeg && strings.Trim(string(ds), "0") != "" {
		sb.WriteByte('-') // a value that rounds to zero has no sign
	}
	if ip := strings.TrimLeft(string(ds[:intLen]), "0"); ip == "" {
		sb.WriteByte('0')
	} else {
		sb.WriteString(ip)
	}
	if dscale > 0 {
		sb.WriteByte('.')
		sb.Write(ds[intLen:])
	}
	return sb.String(), nil
}

var errBinaryLength = binaryError("incorrect binary data format")

func binaryError(msg string) *sqlerr.Error {
	return sqlerr.New(invalidBinaryRepresentation, sqlerr.NoPos, "%s", msg)
}

// invalidBinaryRepresentation is SQLSTATE 22P03.
const invalidBinaryRepresentation = "22P03"

// textOfBinary decodes a binary parameter value of type oid into the text form ExecutePrepared reads.
func textOfBinary(oid uint32, b []byte) (string, error) {
	fixed := func(n int) error {
		if len(b) != n {
			return binaryError(fmt.Sprintf("incorrect binary data format in bind parameter: %s takes %d bytes, got %d", typeName(oid), n, len(b)))
		}
		return nil
	}
	switch oid {
	case catalog.OIDBool:
		if err := fixed(1); err != nil {
			return "", err
		}
		if b[0] != 0 {
			return "t", nil
		}
		return "f", nil
	case catalog.OIDInt2:
		if err := fixed(2); err != nil {
			return "", err
		}
		return strconv.Itoa(int(int16(binary.BigEndian.Uint16(b)))), nil
	case catalog.OIDInt4:
		if err := fixed(4); err != nil {
			return "", err
		}
		return strconv.Itoa(int(int32(binary.BigEndian.Uint32(b)))), nil
	case catalog.OIDInt8:
		if err := fixed(8); err != nil {
			return "", err
		}
		return strconv.FormatInt(int64(binary.BigEndian.Uint64(b)), 10), nil
	case oidOID:
		if err := fixed(4); err != nil {
			return "", err
		}
		return strconv.FormatUint(uint64(binary.BigEndian.Uint32(b)), 10), nil
	case catalog.OIDFloat4:
		if err := fixed(4); err != nil {
			return "", err
		}
		return string(expr.AppendFloat4(nil, math.Float32frombits(binary.BigEndian.Uint32(b)))), nil
	case catalog.OIDFloat8:
		if err := fixed(8); err != nil {
			return "", err
		}
		return string(expr.AppendFloat8(nil, math.Float64frombits(binary.BigEndian.Uint64(b)))), nil
	case catalog.OIDNumeric:
		return numericText(b)
	case catalog.OIDText, catalog.OIDVarchar, catalog.OIDUnknown, oidName, oidBpchar, oidJSON, oidChar:
		if !utf8.Valid(b) {
			return "", invalidUTF8()
		}
		return string(b), nil
	case catalog.OIDBytea:
		return string(expr.AppendByteaHex(nil, b)), nil
	case catalog.OIDDate:
		if err := fixed(4); err != nil {
			return "", err
		}
		switch d := int32(binary.BigEndian.Uint32(b)); d {
		case math.MaxInt32:
			return "infinity", nil
		case math.MinInt32:
			return "-infinity", nil
		default:
			return string(expr.AppendDate(nil, int64(d)+pgEpochDays)), nil
		}
	case catalog.OIDTimestamp, oidTimestamptz:
		if err := fixed(8); err != nil {
			return "", err
		}
		tz := oid == oidTimestamptz
		switch us := int64(binary.BigEndian.Uint64(b)); {
		case us == math.MaxInt64:
			return "infinity", nil
		case us == math.MinInt64:
			return "-infinity", nil
		case us < minTimestampUs || us > maxTimestampUs:
			return "", sqlerr.New("22008", sqlerr.NoPos, "timestamp out of range")
		case tz:
			return string(expr.AppendTimestampTZ(nil, time.UTC, us+pgEpochMicros)), nil
		default:
			return string(expr.AppendTimestamp(nil, us+pgEpochMicros, false)), nil
		}
	case catalog.OIDInterval:
		if err := fixed(16); err != nil {
			return "", err
		}
		us := int64(binary.BigEndian.Uint64(b))
		days := int64(int32(binary.BigEndian.Uint32(b[8:])))
		months := int64(int32(binary.BigEndian.Uint32(b[12:])))
		return string(expr.AppendInterval(nil, months, days, us)), nil
	}
	return "", sqlerr.New(sqlerr.FeatureNotSupported, sqlerr.NoPos, "binary format for parameters of %s is not supported", typeName(oid))
}

func invalidUTF8() *sqlerr.Error {
	return sqlerr.New(codeCharNotInRepertoire, sqlerr.NoPos, "invalid byte sequence for encoding \"UTF8\"")
}
