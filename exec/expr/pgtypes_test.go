package expr

import "testing"

// format_type names types as Postgres' format_type does, typmod included (psql's \gdesc asks for them).
func TestFormatType(t *testing.T) {
	cases := []struct {
		oid, mod int64
		hasMod   bool
		want     string
	}{
		{20, -1, false, "bigint"},
		{1043, -1, false, "character varying"},
		{1043, 24, true, "character varying(20)"}, // typmod = n + 4
		{1700, 655366, true, "numeric(10,2)"},     // ((10 << 16) | 2) + 4
		{1114, 3, true, "timestamp(3) without time zone"},
		{1114, 0, false, "timestamp without time zone"},
		{1186, -1, false, "interval"},
		{99999, -1, false, "???"},
	}
	for _, c := range cases {
		if got := string(formatType(nil, c.oid, c.mod, c.hasMod)); got != c.want {
			t.Errorf("formatType(%d, %d) = %q, want %q", c.oid, c.mod, got, c.want)
		}
	}
}
