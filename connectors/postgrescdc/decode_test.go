package postgrescdc

import "testing"

// The text-form parsers: exact or refused, never rounded or guessed.
func TestParsers(t *testing.T) {
	for _, tc := range []struct {
		in   string
		tz   bool
		want int64
		ok   bool
	}{
		{"1970-01-01 00:00:00", false, 0, true},
		{"2026-03-01 12:00:00.5+01", true, 1772362800500000, true},
		{"2026-03-01 12:00:00+05:30", true, 1772346600000000, true},
		{"1969-12-31 23:59:59.999999", false, -1, true},
		{"2026-03-01 12:00:00", true, 0, false},
		{"infinity", false, 0, false},
		{"0044-03-15 00:00:00 BC", false, 0, false},
	} {
		got, err := parseTimestamp([]byte(tc.in), tc.tz)
		if (err == nil) != tc.ok || (tc.ok && got != tc.want) {
			t.Errorf("parseTimestamp(%q): %d, %v; want %d ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"1 day -02:03:04.5", 86400_000_000 - 7384_500_000, true},
		{"-00:00:01", -1_000_000, true},
		{"3 days", 3 * 86400_000_000, true},
		{"1 mon", 0, false},
		{"1 year 2 days", 0, false},
		{"00:00:00.000001", 1, true},
	} {
		got, err := parseInterval([]byte(tc.in))
		if (err == nil) != tc.ok || (tc.ok && got != tc.want) {
			t.Errorf("parseInterval(%q): %d, %v; want %d ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
	for _, tc := range []struct {
		in       string
		prec, sc int32
		want     string
		ok       bool
	}{
		{"-12.5", 10, 2, "-12.50", true},
		{"12.500", 10, 2, "12.50", true},
		{"12.501", 10, 2, "", false},
		{"123456789.12", 10, 2, "", false},
		{"0.05", 3, 2, "0.05", true},
		{"NaN", 10, 2, "", false},
		{"12345678901234567890.0123456789", 38, 10, "12345678901234567890.0123456789", true},
	} {
		got, err := parseDecimal([]byte(tc.in), tc.prec, tc.sc)
		if (err == nil) != tc.ok || (tc.ok && got.ToString(tc.sc) != tc.want) {
			t.Errorf("parseDecimal(%q, %d, %d): %s, %v; want %s ok=%v", tc.in, tc.prec, tc.sc, got.ToString(tc.sc), err, tc.want, tc.ok)
		}
	}
	for _, tc := range []struct {
		in string
		ok bool
	}{{"9223372036854775807", true}, {"9223372036854775808", false}, {"-9223372036854775808", true}, {"1x", false}, {"-", false}} {
		if _, err := parseInt([]byte(tc.in), -1<<63, 1<<63-1); (err == nil) != tc.ok {
			t.Errorf("parseInt(%q): %v, want ok=%v", tc.in, err, tc.ok)
		}
	}
}

// tupleSize sizes appendTuple's buffer exactly, and parseTuple reads back what appendTuple wrote.
func TestTupleSize(t *testing.T) {
	cols := []tupleCol{{kind: 't', data: []byte("abc")}, {kind: 'n'}, {kind: 'u'}, {kind: 't', data: []byte{}},
		{kind: 'b', data: []byte{1, 2}}}
	for n := range len(cols) + 1 {
		enc := appendTuple(nil, cols[:n])
		if got := tupleSize(cols[:n]); got != len(enc) {
			t.Fatalf("tupleSize of %d columns = %d, appendTuple wrote %d bytes", n, got, len(enc))
		}
		back, used, err := parseTuple(enc, nil)
		if err != nil || used != len(enc) || len(back) != n {
			t.Fatalf("parseTuple of %d columns: %d columns, %d of %d bytes, %v", n, len(back), used, len(enc), err)
		}
		for i := range back {
			if back[i].kind != cols[i].kind || string(back[i].data) != string(cols[i].data) {
				t.Fatalf("column %d: %q %q, want %q %q", i, back[i].kind, back[i].data, cols[i].kind, cols[i].data)
			}
		}
	}
}
