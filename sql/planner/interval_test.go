package planner

import "testing"

func TestParseInterval(t *testing.T) {
	cases := []struct {
		value, unit string
		us          int64
		ok          bool
	}{
		{"10", "second", 10e6, true},
		{"1.5", "second", 1.5e6, true},
		{"-5", "minute", -300e6, true},
		{"1", "day", 86400e6, true},
		{"250", "millisecond", 250e3, true},
		{"1:30", "minute to second", 90e6, true},     // MINUTE TO SECOND: 1 min 30 s
		{"1:30", "hour to minute", 5400e6, true},     // HOUR TO MINUTE: 1 h 30 min
		{"01:02:03", "hour to second", 3723e6, true}, // 3600 + 120 + 3
		{"10 seconds", "", 10e6, true},
		{"1 minute 30 seconds", "", 90e6, true},
		{"10ms", "", 10e3, true},
		{"1", "month", 0, false}, // months have no fixed length
		{"abc", "second", 0, false},
		{"1:30", "second to minute", 0, false},
	}
	for _, c := range cases {
		got, err := ParseInterval(c.value, c.unit)
		if (err == nil) != c.ok || got != c.us {
			t.Errorf("ParseInterval(%q, %q) = %d, %v; want %d ok=%v", c.value, c.unit, got, err, c.us, c.ok)
		}
	}
}
