package pgwire

import (
	"fmt"
	"math/big"
	"reflect"
	"testing"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/clinksql/clinksql/catalog"
)

// codecCases are values in the engine's text form, each of which must survive text -> binary -> text unchanged
// and decode in pgx to the same value from either form.
var codecCases = []struct {
	oid  uint32
	text string
}{
	{catalog.OIDBool, "t"}, {catalog.OIDBool, "f"},
	{catalog.OIDInt2, "-32768"}, {catalog.OIDInt2, "32767"}, {catalog.OIDInt2, "0"},
	{catalog.OIDInt4, "-2147483648"}, {catalog.OIDInt4, "123456"},
	{catalog.OIDInt8, "-9223372036854775808"}, {catalog.OIDInt8, "9223372036854775807"},
	{catalog.OIDFloat4, "1.5"}, {catalog.OIDFloat4, "-3.4028235e+38"}, {catalog.OIDFloat4, "NaN"},
	{catalog.OIDFloat4, "Infinity"}, {catalog.OIDFloat4, "1e-45"},
	{catalog.OIDFloat8, "0.1"}, {catalog.OIDFloat8, "-2.5e-05"}, {catalog.OIDFloat8, "1.7976931348623157e+308"},
	{catalog.OIDFloat8, "-Infinity"}, {catalog.OIDFloat8, "123456789012345"},
	{catalog.OIDNumeric, "0"}, {catalog.OIDNumeric, "0.000"}, {catalog.OIDNumeric, "1.50"},
	{catalog.OIDNumeric, "-0.05"}, {catalog.OIDNumeric, "-12345.678"}, {catalog.OIDNumeric, "10000"},
	{catalog.OIDNumeric, "99999999999999999999999999.999999999999"}, {catalog.OIDNumeric, "0.0001"},
	{catalog.OIDNumeric, "0.00001"}, {catalog.OIDNumeric, "1234.5678"}, {catalog.OIDNumeric, "100000000.00000001"},
	{catalog.OIDNumeric, "NaN"},
	{catalog.OIDText, "héllo"}, {catalog.OIDText, ""}, {catalog.OIDVarchar, "a'b"},
	{catalog.OIDBytea, `\x`}, {catalog.OIDBytea, `\x00ff10`},
	{catalog.OIDDate, "2000-01-01"}, {catalog.OIDDate, "1999-12-31"}, {catalog.OIDDate, "2026-02-28"},
	{catalog.OIDDate, "0001-01-01"}, {catalog.OIDDate, "0044-03-15 BC"},
	{catalog.OIDTimestamp, "2026-01-01 00:00:01.5"}, {catalog.OIDTimestamp, "1970-01-01 00:00:00"},
	{catalog.OIDTimestamp, "1969-12-31 23:59:59.999999"}, {catalog.OIDTimestamp, "2000-01-01 00:00:00.000001"},
	{catalog.OIDInterval, "00:00:00"}, {catalog.OIDInterval, "1 day 02:00:00"}, {catalog.OIDInterval, "-00:00:01.5"},
	{catalog.OIDInterval, "-3 days -04:05:06.000007"}, {catalog.OIDInterval, "106751991 days 04:00:54.775807"}, {catalog.OIDInterval, "1 year 2 mons 3 days 04:05:06"},
}

func TestCodecRoundTrip(t *testing.T) {
	m := pgtype.NewMap()
	for _, c := range codecCases {
		name := fmt.Sprintf("%d/%s", c.oid, c.text)
		bin, err := appendBinary([]byte{}, c.oid, c.text)
		if err != nil {
			t.Errorf("%s: encode: %v", name, err)
			continue
		}
		back, err := textOfBinary(c.oid, bin)
		if err != nil || back != c.text {
			t.Errorf("%s: binary %x decodes to %q, %v", name, bin, back, err)
		}
		// pgx reads both forms as the same value.
		var fromText, fromBin any
		if err := m.Scan(c.oid, pgtype.TextFormatCode, []byte(c.text), &fromText); err != nil {
			t.Errorf("%s: pgx text scan: %v", name, err)
			continue
		}
		if err := m.Scan(c.oid, pgtype.BinaryFormatCode, bin, &fromBin); err != nil {
			t.Errorf("%s: pgx binary scan: %v", name, err)
			continue
		}
		if n1, ok := fromText.(pgtype.Numeric); ok {
			if !sameNumeric(n1, fromBin.(pgtype.Numeric)) {
				t.Errorf("%s: pgx numeric text %+v, binary %+v", name, n1, fromBin)
			}
			continue
		}
		if f, ok := fromText.(float64); ok && f != f {
			continue // NaN
		}
		if f, ok := fromText.(float32); ok && f != f {
			continue
		}
		if !reflect.DeepEqual(fromText, fromBin) {
			t.Errorf("%s: pgx reads text as %#v, binary as %#v", name, fromText, fromBin)
		}
	}
}

// TestBinaryParametersFromPgx encodes Go values the way pgx sends them and checks the text the engine gets.
func TestBinaryParametersFromPgx(t *testing.T) {
	m := pgtype.NewMap()
	cases := []struct {
		oid  uint32
		v    any
		want string
	}{
		{catalog.OIDNumeric, num("-12345.678"), "-12345.678"},
		{catalog.OIDNumeric, num("0.001"), "0.001"},
		{catalog.OIDNumeric, num("100000000000000000.000"), "100000000000000000.000"},
		{catalog.OIDNumeric, pgtype.Numeric{Int: big.NewInt(1), Exp: 20, Valid: true}, "100000000000000000000"},
		{catalog.OIDNumeric, pgtype.Numeric{Int: big.NewInt(-15), Exp: -1, Valid: true}, "-1.5"},
		{catalog.OIDNumeric, num("0"), "0"},
		{catalog.OIDNumeric, 2.5, "2.5"},
		{catalog.OIDInterval, pgtype.Interval{Days: 1, Microseconds: 7_200_000_000, Valid: true}, "1 day 02:00:00"},
		{catalog.OIDFloat4, float32(1.25), "1.25"},
		{catalog.OIDBytea, []byte{1, 2}, `\x0102`},
	}
	for _, c := range cases {
		bin, err := m.Encode(c.oid, pgtype.BinaryFormatCode, c.v, nil)
		if err != nil {
			t.Fatalf("%v: %v", c.v, err)
		}
		got, err := textOfBinary(c.oid, bin)
		if err != nil || got != c.want {
			t.Errorf("%d %v (binary %x): %q %v, want %q", c.oid, c.v, bin, got, err, c.want)
		}
	}
}

func TestMalformedBinaryParameters(t *testing.T) {
	for _, c := range []struct {
		oid uint32
		b   []byte
	}{
		{catalog.OIDInt4, []byte{1, 2}},
		{catalog.OIDNumeric, []byte{0, 1, 0, 0, 0, 0, 0, 0}},             // one digit announced, none sent
		{catalog.OIDNumeric, []byte{0, 1, 0, 0, 0, 0, 0, 0, 0x27, 0x10}}, // digit 10000
		{catalog.OIDNumeric, []byte{0, 0, 0, 0, 0x12, 0x34, 0, 0}},       // bad sign
		{catalog.OIDText, []byte{0xff}},
		{catalog.OIDTimestamp, []byte{0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe}},
		{catalog.OIDInterval, make([]byte, 15)},
		{999, []byte{1}},
	} {
		if s, err := textOfBinary(c.oid, c.b); err == nil {
			t.Errorf("%d %x: accepted as %q", c.oid, c.b, s)
		}
	}
}

// FuzzBinaryValues decodes arbitrary bytes as a binary parameter of every type: never a panic, and what decodes
// encodes back to the same bytes' meaning (text -> binary -> text is stable).
func FuzzBinaryValues(f *testing.F) {
	oids := []uint32{catalog.OIDBool, catalog.OIDInt2, catalog.OIDInt4, catalog.OIDInt8, catalog.OIDFloat4,
		catalog.OIDFloat8, catalog.OIDNumeric, catalog.OIDText, catalog.OIDBytea, catalog.OIDDate,
		catalog.OIDTimestamp, catalog.OIDInterval}
	for _, c := range codecCases {
		if b, err := appendBinary([]byte{}, c.oid, c.text); err == nil {
			for i, oid := range oids {
				if oid == c.oid {
					f.Add(uint8(i), b)
				}
			}
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, data []byte) {
		oid := oids[int(which)%len(oids)]
		text, err := textOfBinary(oid, data)
		if err != nil {
			return
		}
		bin, err := appendBinary([]byte{}, oid, text)
		if err != nil {
			if oid == catalog.OIDDate || oid == catalog.OIDTimestamp || oid == catalog.OIDInterval {
				return // infinities and out-of-range values the engine refuses too
			}
			t.Fatalf("%d: %x decodes to %q, which does not encode: %v", oid, data, text, err)
		}
		again, err := textOfBinary(oid, bin)
		if err != nil || again != text {
			t.Fatalf("%d: %x -> %q -> %x -> %q (%v)", oid, data, text, bin, again, err)
		}
	})
}

func TestBinaryNumericBounded(t *testing.T) {
	huge := []byte{0, 1, 0x7f, 0xff, 0, 0, 0, 0, 0, 1} // 1 * 10000^32767
	if s, err := textOfBinary(catalog.OIDNumeric, huge); err == nil {
		t.Errorf("accepted a numeric of %d characters", len(s))
	}
	if s, err := textOfBinary(catalog.OIDNumeric, []byte{0, 1, 0, 0, 0x40, 0, 0, 2, 0, 12}); err != nil || s != "-12.00" {
		t.Errorf("-12.00: %q %v", s, err)
	}
}
