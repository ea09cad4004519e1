package expr

import (
	"testing"
	"time"
)

// Expected values were computed by PostgreSQL 15 with SET timezone = 'Europe/Berlin' (the query is in each case).
func TestTimeZones(t *testing.T) {
	berlin, err := LoadZone("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	us := func(s string) int64 {
		v, err := ParseTimestamp(s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	out := func(loc *time.Location, v int64) string { return string(AppendTimestampTZ(nil, loc, v)) }
	for _, c := range []struct{ sql, in, want string }{
		// TIMESTAMP '...'::timestamptz: a wall clock in the session's zone
		{"a wall time in the spring gap: the offset before the change", "2026-03-29 02:30:00", "2026-03-29 03:30:00+02"},
		{"a wall time that occurs twice: the offset after the change", "2026-10-25 02:30:00", "2026-10-25 02:30:00+01"},
		{"1900, after Berlin's LMT", "1900-01-01 00:00:00", "1900-01-01 00:00:00+01"},
		{"summer", "2026-06-01 00:00:00", "2026-06-01 00:00:00+02"},
	} {
		if got := out(berlin, FromLocal(berlin, us(c.in))); got != c.want {
			t.Errorf("%s: %s -> %s, want %s", c.sql, c.in, got, c.want)
		}
	}
	for _, c := range []struct{ in, want string }{
		// TIMESTAMPTZ '...' read and printed in Europe/Berlin
		{"2026-10-25 00:30:00+00", "2026-10-25 02:30:00+02"},
		{"2026-10-25 01:30:00+00", "2026-10-25 02:30:00+01"},
		{"2026-01-01 12:00:00+05:30", "2026-01-01 07:30:00+01"},
		{"2026-01-01 12:00:00Z", "2026-01-01 13:00:00+01"},
		{"2026-01-01 12:00:00 UTC", "2026-01-01 13:00:00+01"},
		{"2026-01-01 12:00:00 America/New_York", "2026-01-01 18:00:00+01"},
		{"2026-01-01 12:00:00", "2026-01-01 12:00:00+01"},
		{"2026-01-01 12:00:00.25-03", "2026-01-01 16:00:00.25+01"},
	} {
		v, e := TimestampTZIn(berlin, c.in)
		if e != nil {
			t.Fatalf("%s: %v", c.in, e)
		}
		if got := out(berlin, v); got != c.want {
			t.Errorf("TIMESTAMPTZ %q -> %s, want %s", c.in, got, c.want)
		}
	}
	// (TIMESTAMPTZ '2026-03-29 01:30:00+00') AT TIME ZONE 'America/New_York' = 2026-03-28 21:30:00
	ny, _ := LoadZone("America/New_York")
	v, _ := TimestampTZIn(time.UTC, "2026-03-29 01:30:00+00")
	if got := string(AppendTimestamp(nil, ToLocal(ny, v), false)); got != "2026-03-28 21:30:00" {
		t.Errorf("AT TIME ZONE New York: %s", got)
	}
	// TIMESTAMP '2026-07-01 12:00' AT TIME ZONE 'Asia/Kolkata' = 2026-07-01 08:30:00+02 (in Berlin)
	kolkata, _ := LoadZone("Asia/Kolkata")
	if got := out(berlin, FromLocal(kolkata, us("2026-07-01 12:00"))); got != "2026-07-01 08:30:00+02" {
		t.Errorf("AT TIME ZONE Kolkata: %s", got)
	}
	if got := out(kolkata, us("2026-01-01 00:00:00")); got != "2026-01-01 05:30:00+05:30" {
		t.Errorf("an offset with minutes: %s", got)
	}
	for _, bad := range []string{"Mars/Olympus", "", "+25", "local"} {
		if _, err := LoadZone(bad); err == nil {
			t.Errorf("zone %q accepted", bad)
		}
	}
	for _, good := range []string{"utc", "GMT", "+02", "-05:30", "Asia/Tokyo"} {
		if _, err := LoadZone(good); err != nil {
			t.Errorf("zone %q: %v", good, err)
		}
	}
	if _, e := TimestampTZIn(berlin, "2026-01-01 12:00:00 Nowhere/Land"); e == nil {
		t.Error("an unknown zone in a timestamptz was accepted")
	}
	// Casts between TIMESTAMP and TIMESTAMPTZ need a zone.
	if _, err := Cast(Timestamp(0), TypeTimestampTZ); err == nil {
		t.Error("a cast from TIMESTAMP to TIMESTAMPTZ without a zone was accepted")
	}
}
