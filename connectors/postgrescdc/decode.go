package postgrescdc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Postgres type OIDs the decoders know.
const (
	oidBool        = 16
	oidBytea       = 17
	oidInt8        = 20
	oidInt2        = 21
	oidInt4        = 23
	oidText        = 25
	oidJSON        = 114
	oidFloat4      = 700
	oidFloat8      = 701
	oidBpchar      = 1042
	oidVarchar     = 1043
	oidDate        = 1082
	oidTimestamp   = 1114
	oidTimestamptz = 1184
	oidInterval    = 1186
	oidNumeric     = 1700
	oidUUID        = 2950
	oidJSONB       = 3802
)

// pgColumn is one column of the table, as the catalog describes it.
type pgColumn struct {
	Name   string
	OID    uint32
	Typmod int32
	Type   string // format_type, for messages
}

// numericScale returns a numeric column's (precision, scale), ok false when it has none (unconstrained).
func (c pgColumn) numericScale() (p, s int, ok bool) {
	if c.Typmod < 4 {
		return 0, 0, false
	}
	m := c.Typmod - 4
	return int((m >> 16) & 0xffff), int(int16(m&0x7ff<<5) >> 5), true
}

// checkColumn says whether a stream column of type dt can carry the Postgres column exactly ("" if so, else why
// not). Every type reads into VARCHAR as its Postgres text form.
func checkColumn(pc pgColumn, dt arrow.DataType) string {
	if dt.ID() == arrow.STRING {
		return ""
	}
	ok := false
	switch pc.OID {
	case oidBool:
		ok = dt.ID() == arrow.BOOL
	case oidInt2:
		ok = dt.ID() == arrow.INT16 || dt.ID() == arrow.INT32 || dt.ID() == arrow.INT64
	case oidInt4:
		ok = dt.ID() == arrow.INT32 || dt.ID() == arrow.INT64
	case oidInt8:
		ok = dt.ID() == arrow.INT64
	case oidFloat4:
		ok = dt.ID() == arrow.FLOAT32 || dt.ID() == arrow.FLOAT64
	case oidFloat8:
		ok = dt.ID() == arrow.FLOAT64
	case oidNumeric:
		d, isDec := dt.(*arrow.Decimal128Type)
		if !isDec {
			break
		}
		p, s, fixed := pc.numericScale()
		if !fixed {
			return fmt.Sprintf("Postgres column %s is %s without a scale: no DECIMAL holds every value exactly; "+
				"declare the stream column VARCHAR or give the Postgres column a precision and scale", pc.Name, pc.Type)
		}
		if s < 0 || int(d.Scale) < s || int(d.Precision-d.Scale) < p-s {
			return fmt.Sprintf("Postgres column %s is %s: DECIMAL(%d,%d) cannot hold every value exactly "+
				"(needs scale >= %d and precision - scale >= %d)", pc.Name, pc.Type, d.Precision, d.Scale, s, p-s)
		}
		return ""
	case oidDate:
		ok = dt.ID() == arrow.DATE32
	case oidTimestamp, oidTimestamptz:
		ok = dt.ID() == arrow.TIMESTAMP
	case oidBytea:
		ok = dt.ID() == arrow.BINARY
	case oidInterval:
		ok = dt.ID() == arrow.DURATION
	}
	if ok {
		return ""
	}
	return fmt.Sprintf("Postgres column %s is %s, which does not read into %s (it reads into VARCHAR as text)",
		pc.Name, pc.Type, dt)
}

// tupleCol is one column of a pgoutput TupleData: kind 'n' null, 'u' unchanged TOAST (not sent), 't' text.
// data points into the message (or a stored row) and is valid only as long as it.
type tupleCol struct {
	kind byte
	data []byte
}

var errShortTuple = errors.New("postgres-cdc: truncated tuple data")

// parseTuple reads a TupleData (Int16 count, then per column a kind byte and for 't'/'b' an Int32 length and the
// bytes) into cols, reusing its capacity, without copying. It returns the columns and the bytes consumed.
func parseTuple(src []byte, cols []tupleCol) ([]tupleCol, int, error) {
	if len(src) < 2 {
		return cols, 0, errShortTuple
	}
	n := int(binary.BigEndian.Uint16(src))
	off := 2
	cols = cols[:0]
	for i := 0; i < n; i++ {
		if off >= len(src) {
			return cols, 0, errShortTuple
		}
		k := src[off]
		off++
		switch k {
		case 't', 'b':
			if off+4 > len(src) {
				return cols, 0, errShortTuple
			}
			l := int(binary.BigEndian.Uint32(src[off:]))
			off += 4
			if off+l > len(src) {
				return cols, 0, errShortTuple
			}
			cols = append(cols, tupleCol{kind: k, data: src[off : off+l : off+l]})
			off += l
		case 'n', 'u':
			cols = append(cols, tupleCol{kind: k})
		default:
			return cols, 0, fmt.Errorf("postgres-cdc: unknown tuple column kind %q", k)
		}
	}
	return cols, off, nil
}

// tupleSize is the length of appendTuple's encoding of cols.
func tupleSize(cols []tupleCol) int {
	n := 2
	for _, c := range cols {
		n++
		if c.kind == 't' || c.kind == 'b' {
			n += 4 + len(c.data)
		}
	}
	return n
}

// appendTuple encodes cols as a TupleData (what parseTuple reads): the form rows are kept in in state.
func appendTuple(dst []byte, cols []tupleCol) []byte {
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(cols)))
	for _, c := range cols {
		dst = append(dst, c.kind)
		if c.kind == 't' || c.kind == 'b' {
			dst = binary.BigEndian.AppendUint32(dst, uint32(len(c.data)))
			dst = append(dst, c.data...)
		}
	}
	return dst
}

// decoder appends Postgres text forms of one column to an Arrow builder, parsing without allocating.
type decoder struct {
	name    string
	dt      arrow.DataType
	oid     uint32
	b       array.Builder
	i16     *array.Int16Builder
	i32     *array.Int32Builder
	i64     *array.Int64Builder
	f32     *array.Float32Builder
	f64     *array.Float64Builder
	boolB   *array.BooleanBuilder
	str     *array.StringBuilder
	bin     *array.BinaryBuilder
	date    *array.Date32Builder
	ts      *array.TimestampBuilder
	dec     *array.Decimal128Builder
	dur     *array.DurationBuilder
	scale   int32
	prec    int32
	scratch []byte
}

func newDecoder(alloc memory.Allocator, name string, dt arrow.DataType, oid uint32) *decoder {
	d := &decoder{name: name, dt: dt, oid: oid, b: array.NewBuilder(alloc, dt)}
	switch b := d.b.(type) {
	case *array.Int16Builder:
		d.i16 = b
	case *array.Int32Builder:
		d.i32 = b
	case *array.Int64Builder:
		d.i64 = b
	case *array.Float32Builder:
		d.f32 = b
	case *array.Float64Builder:
		d.f64 = b
	case *array.BooleanBuilder:
		d.boolB = b
	case *array.StringBuilder:
		d.str = b
	case *array.BinaryBuilder:
		d.bin = b
	case *array.Date32Builder:
		d.date = b
	case *array.TimestampBuilder:
		d.ts = b
	case *array.DurationBuilder:
		d.dur = b
	case *array.Decimal128Builder:
		d.dec = b
		t := dt.(*arrow.Decimal128Type)
		d.scale, d.prec = t.Scale, t.Precision
	}
	return d
}

func unsafeString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// appendNull appends a NULL.
func (d *decoder) appendNull() { d.b.AppendNull() }

// appendText appends the value whose Postgres text form is v; an error leaves nothing appended.
func (d *decoder) appendText(v []byte) error {
	switch {
	case d.str != nil:
		d.str.BinaryBuilder.Append(v)
	case d.i64 != nil:
		n, err := parseInt(v, math.MinInt64, math.MaxInt64)
		if err != nil {
			return err
		}
		d.i64.Append(n)
	case d.i32 != nil:
		n, err := parseInt(v, math.MinInt32, math.MaxInt32)
		if err != nil {
			return err
		}
		d.i32.Append(int32(n))
	case d.i16 != nil:
		n, err := parseInt(v, math.MinInt16, math.MaxInt16)
		if err != nil {
			return err
		}
		d.i16.Append(int16(n))
	case d.f64 != nil:
		f, err := strconv.ParseFloat(unsafeString(v), 64)
		if err != nil {
			return fmt.Errorf("invalid double %q", v)
		}
		d.f64.Append(f)
	case d.f32 != nil:
		f, err := strconv.ParseFloat(unsafeString(v), 32)
		if err != nil {
			return fmt.Errorf("invalid real %q", v)
		}
		d.f32.Append(float32(f))
	case d.boolB != nil:
		if len(v) != 1 || (v[0] != 't' && v[0] != 'f') {
			return fmt.Errorf("invalid boolean %q", v)
		}
		d.boolB.Append(v[0] == 't')
	case d.date != nil:
		days, rest, err := parseDate(v)
		if err != nil || len(rest) != 0 {
			return fmt.Errorf("invalid or out of range date %q", v)
		}
		d.date.Append(arrow.Date32(days))
	case d.ts != nil:
		us, err := parseTimestamp(v, d.oid == oidTimestamptz)
		if err != nil {
			return err
		}
		d.ts.Append(arrow.Timestamp(us))
	case d.dec != nil:
		n, err := parseDecimal(v, d.prec, d.scale)
		if err != nil {
			return err
		}
		d.dec.Append(n)
	case d.dur != nil:
		us, err := parseInterval(v)
		if err != nil {
			return err
		}
		d.dur.Append(arrow.Duration(us))
	case d.bin != nil:
		if len(v) < 2 || v[0] != '\\' || v[1] != 'x' || len(v)%2 != 0 {
			return fmt.Errorf("invalid bytea text form (want hex, bytea_output = 'hex')")
		}
		d.scratch = d.scratch[:0]
		for i := 2; i < len(v); i += 2 {
			hi, lo := unhex(v[i]), unhex(v[i+1])
			if hi > 15 || lo > 15 {
				return fmt.Errorf("invalid hex digit in bytea")
			}
			d.scratch = append(d.scratch, hi<<4|lo)
		}
		d.bin.Append(d.scratch)
	default:
		return fmt.Errorf("no decoder for %s", d.dt)
	}
	return nil
}

func unhex(c byte) byte {
	switch {
	case c >= '0' && c <= '9':
		return c - '0'
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10
	}
	return 255
}

func parseInt(v []byte, lo, hi int64) (int64, error) {
	if len(v) == 0 || len(v) > 20 {
		return 0, fmt.Errorf("invalid integer %q", v)
	}
	neg := v[0] == '-'
	i := 0
	if neg {
		i = 1
	}
	if i == len(v) {
		return 0, fmt.Errorf("invalid integer %q", v)
	}
	var n uint64
	for ; i < len(v); i++ {
		c := v[i] - '0'
		if c > 9 {
			return 0, fmt.Errorf("invalid integer %q", v)
		}
		if n > (math.MaxUint64-9)/10 {
			return 0, fmt.Errorf("integer %q out of range", v)
		}
		n = n*10 + uint64(c)
	}
	var x int64
	if neg {
		if n > uint64(math.MaxInt64)+1 {
			return 0, fmt.Errorf("integer %q out of range", v)
		}
		x = -int64(n)
	} else {
		if n > math.MaxInt64 {
			return 0, fmt.Errorf("integer %q out of range", v)
		}
		x = int64(n)
	}
	if x < lo || x > hi {
		return 0, fmt.Errorf("integer %q out of range", v)
	}
	return x, nil
}

// digits reads exactly n decimal digits.
func digits(v []byte, n int) (int, bool) {
	if len(v) < n {
		return 0, false
	}
	x := 0
	for i := 0; i < n; i++ {
		c := v[i] - '0'
		if c > 9 {
			return 0, false
		}
		x = x*10 + int(c)
	}
	return x, true
}

// daysFromCivil is the days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
func daysFromCivil(y, m, d int) int64 {
	if m <= 2 {
		y--
	}
	era := y / 400
	if y < 0 && y%400 != 0 {
		era = (y - 399) / 400
	}
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return int64(era)*146097 + int64(doe) - 719468
}

// parseDate reads an ISO date "YYYY-MM-DD" (4 or more year digits) and returns the days and the rest of v. BC
// dates and infinity are refused.
func parseDate(v []byte) (int64, []byte, error) {
	i := 0
	for i < len(v) && v[i] >= '0' && v[i] <= '9' {
		i++
	}
	if i < 4 || i > 6 || len(v) < i+6 || v[i] != '-' || v[i+3] != '-' {
		return 0, nil, fmt.Errorf("invalid date %q", v)
	}
	y, _ := digits(v, i)
	m, ok1 := digits(v[i+1:], 2)
	d, ok2 := digits(v[i+4:], 2)
	if !ok1 || !ok2 || m < 1 || m > 12 || d < 1 || d > 31 {
		return 0, nil, fmt.Errorf("invalid date %q", v)
	}
	rest := v[i+6:]
	if len(rest) >= 3 && string(rest[len(rest)-3:]) == " BC" {
		return 0, nil, fmt.Errorf("BC dates are not supported: %q", v)
	}
	return daysFromCivil(y, m, d), rest, nil
}

// parseTimestamp reads "YYYY-MM-DD HH:MM:SS[.ffffff]" and, for timestamptz, the zone offset that follows
// ("+HH[:MM[:SS]]"), returning microseconds since the epoch in UTC.
func parseTimestamp(v []byte, tz bool) (int64, error) {
	days, rest, err := parseDate(v)
	if err != nil {
		return 0, fmt.Errorf("invalid or out of range timestamp %q", v)
	}
	bad := func() (int64, error) { return 0, fmt.Errorf("invalid timestamp %q", v) }
	if len(rest) < 9 || rest[0] != ' ' || rest[3] != ':' || rest[6] != ':' {
		return bad()
	}
	h, ok1 := digits(rest[1:], 2)
	mi, ok2 := digits(rest[4:], 2)
	s, ok3 := digits(rest[7:], 2)
	if !ok1 || !ok2 || !ok3 || h > 24 || mi > 59 || s > 60 {
		return bad()
	}
	rest = rest[9:]
	frac := int64(0)
	if len(rest) > 0 && rest[0] == '.' {
		rest = rest[1:]
		n := 0
		for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
			if n < 6 {
				frac = frac*10 + int64(rest[n]-'0')
			}
			n++
		}
		if n == 0 || n > 6 {
			return bad()
		}
		for k := n; k < 6; k++ {
			frac *= 10
		}
		rest = rest[n:]
	}
	us := days*86400_000_000 + int64(h*3600+mi*60+s)*1_000_000 + frac
	if tz {
		if len(rest) < 3 || (rest[0] != '+' && rest[0] != '-') {
			return bad()
		}
		sign := int64(1)
		if rest[0] == '-' {
			sign = -1
		}
		oh, ok := digits(rest[1:], 2)
		if !ok {
			return bad()
		}
		off := int64(oh) * 3600
		rest = rest[3:]
		if len(rest) >= 3 && rest[0] == ':' {
			om, ok := digits(rest[1:], 2)
			if !ok {
				return bad()
			}
			off += int64(om) * 60
			rest = rest[3:]
			if len(rest) >= 3 && rest[0] == ':' {
				os, ok := digits(rest[1:], 2)
				if !ok {
					return bad()
				}
				off += int64(os)
				rest = rest[3:]
			}
		}
		us -= sign * off * 1_000_000
	}
	if len(rest) != 0 {
		return bad()
	}
	return us, nil
}

var pow10 = func() [19]uint64 {
	var p [19]uint64
	p[0] = 1
	for i := 1; i < 19; i++ {
		p[i] = p[i-1] * 10
	}
	return p
}()

// parseDecimal reads a numeric's text form exactly at scale; a value with more nonzero fraction digits than the
// scale, or more integer digits than precision - scale, is refused (never rounded). NaN and infinities too.
func parseDecimal(v []byte, prec, scale int32) (decimal128.Num, error) {
	s := v
	neg := false
	if len(s) > 0 && (s[0] == '-' || s[0] == '+') {
		neg = s[0] == '-'
		s = s[1:]
	}
	intEnd := 0
	for intEnd < len(s) && s[intEnd] >= '0' && s[intEnd] <= '9' {
		intEnd++
	}
	intPart, frac := s[:intEnd], s[intEnd:]
	if len(frac) > 0 {
		if frac[0] != '.' {
			return decimal128.Num{}, fmt.Errorf("numeric %q does not fit a DECIMAL", v)
		}
		frac = frac[1:]
		for _, c := range frac {
			if c < '0' || c > '9' {
				return decimal128.Num{}, fmt.Errorf("invalid numeric %q", v)
			}
		}
	}
	if len(intPart)+len(frac) == 0 {
		return decimal128.Num{}, fmt.Errorf("invalid numeric %q", v)
	}
	for len(intPart) > 1 && intPart[0] == '0' {
		intPart = intPart[1:]
	}
	for len(frac) > int(scale) {
		if frac[len(frac)-1] != '0' {
			return decimal128.Num{}, fmt.Errorf("numeric %q has more than %d fraction digits", v, scale)
		}
		frac = frac[:len(frac)-1]
	}
	if !(len(intPart) == 1 && intPart[0] == '0') && len(intPart) > int(prec-scale) {
		return decimal128.Num{}, fmt.Errorf("numeric %q out of range for DECIMAL(%d,%d)", v, prec, scale)
	}
	pad := int(scale) - len(frac)
	total := len(intPart) + len(frac) + pad
	var n decimal128.Num
	if total <= 18 {
		var u uint64
		for _, c := range intPart {
			u = u*10 + uint64(c-'0')
		}
		for _, c := range frac {
			u = u*10 + uint64(c-'0')
		}
		u *= pow10[pad]
		n = decimal128.FromU64(u)
	} else {
		ten := decimal128.FromU64(10)
		for _, c := range intPart {
			n = n.Mul(ten).Add(decimal128.FromU64(uint64(c - '0')))
		}
		for _, c := range frac {
			n = n.Mul(ten).Add(decimal128.FromU64(uint64(c - '0')))
		}
		for i := 0; i < pad; i++ {
			n = n.Mul(ten)
		}
	}
	if neg {
		n = n.Negate()
	}
	return n, nil
}

// parseInterval reads an interval in IntervalStyle postgres ("1 day -02:03:04.5", "3 days", "-00:00:01") as
// microseconds, a day being 24 hours (INTERVAL is a duration here); years and months are refused: they have no
// fixed length.
func parseInterval(v []byte) (int64, error) {
	bad := func() (int64, error) { return 0, fmt.Errorf("invalid interval %q", v) }
	var us int64
	rest := v
	for len(rest) > 0 {
		for len(rest) > 0 && rest[0] == ' ' {
			rest = rest[1:]
		}
		if len(rest) == 0 {
			break
		}
		// A time part: [-+]HH:MM:SS[.ffffff]
		j := 0
		if rest[0] == '-' || rest[0] == '+' {
			j = 1
		}
		k := j
		for k < len(rest) && rest[k] >= '0' && rest[k] <= '9' {
			k++
		}
		if k == j {
			return bad()
		}
		if k < len(rest) && rest[k] == ':' {
			neg := rest[0] == '-'
			h, err := parseInt(rest[j:k], 0, math.MaxInt32)
			if err != nil {
				return bad()
			}
			t := rest[k+1:]
			if len(t) < 5 || t[2] != ':' {
				return bad()
			}
			mi, ok1 := digits(t, 2)
			sec, ok2 := digits(t[3:], 2)
			if !ok1 || !ok2 {
				return bad()
			}
			t = t[5:]
			frac := int64(0)
			if len(t) > 0 && t[0] == '.' {
				n := 1
				for n < len(t) && t[n] >= '0' && t[n] <= '9' {
					if n <= 6 {
						frac = frac*10 + int64(t[n]-'0')
					}
					n++
				}
				if n == 1 || n > 7 {
					return bad()
				}
				for m := n - 1; m < 6; m++ {
					frac *= 10
				}
				t = t[n:]
			}
			x := (h*3600+int64(mi)*60+int64(sec))*1_000_000 + frac
			if neg {
				x = -x
			}
			us += x
			rest = t
			continue
		}
		n, err := parseInt(rest[:k], math.MinInt32, math.MaxInt32)
		if err != nil || k >= len(rest) || rest[k] != ' ' {
			return bad()
		}
		unit := rest[k+1:]
		e := 0
		for e < len(unit) && unit[e] != ' ' {
			e++
		}
		switch string(unit[:e]) {
		case "day", "days":
			us += n * 86400_000_000
		case "year", "years", "mon", "mons":
			if n != 0 {
				return 0, fmt.Errorf("interval %q has years or months, which have no fixed length", v)
			}
		default:
			return bad()
		}
		rest = unit[e:]
	}
	return us, nil
}
