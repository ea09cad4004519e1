package planner

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/clinksql/clinksql/exec/expr"
)

// unitMicros are the interval units an INTERVAL literal may use, in microseconds. Months and years have no fixed
// length in microseconds; INTERVAL is a duration here, so they are refused.
var unitMicros = map[string]int64{
	"microsecond": 1, "microseconds": 1, "us": 1, "usec": 1, "usecs": 1,
	"millisecond": 1000, "milliseconds": 1000, "ms": 1000, "msec": 1000, "msecs": 1000,
	"second": 1e6, "seconds": 1e6, "s": 1e6, "sec": 1e6, "secs": 1e6,
	"minute": 60e6, "minutes": 60e6, "m": 60e6, "min": 60e6, "mins": 60e6,
	"hour": 3600e6, "hours": 3600e6, "h": 3600e6, "hr": 3600e6, "hrs": 3600e6,
	"day": 86400e6, "days": 86400e6, "d": 86400e6,
	"week": 7 * 86400e6, "weeks": 7 * 86400e6,
}

// ParseInterval reads an interval literal: INTERVAL '10' SECOND (value "10", unit "second"), INTERVAL '1:30'
// MINUTE TO SECOND, and the unit-less forms expr.ParseInterval reads ('10 seconds', '1 minute 30 seconds',
// '10ms', '01:02:03'). It returns microseconds.
func ParseInterval(value, unit string) (int64, error) {
	v := strings.TrimSpace(value)
	unit = strings.ToLower(strings.TrimSpace(unit))
	if unit == "" {
		return expr.ParseInterval(v)
	}
	if from, to, ok := strings.Cut(unit, " to "); ok {
		return parseClock(v, from, to)
	}
	mul, ok := unitMicros[unit]
	if !ok {
		return 0, fmt.Errorf("interval unit %q is not supported (use microseconds to weeks)", unit)
	}
	if f, err := strconv.ParseFloat(v, 64); err == nil {
		return scale(f, mul, value)
	}
	// INTERVAL '10 seconds' SECOND is odd but legal in Postgres: a unit inside the value wins.
	return expr.ParseInterval(v)
}

func scale(f float64, mul int64, orig string) (int64, error) {
	r := math.Round(f * float64(mul))
	if math.IsNaN(r) || math.Abs(r) > math.MaxInt64/2 {
		return 0, fmt.Errorf("interval out of range: %q", orig)
	}
	return int64(r), nil
}

// parseClock reads '1:30' as MINUTE TO SECOND, '01:02:03' as HOUR TO SECOND, '1:30' HOUR TO MINUTE.
func parseClock(v, from, to string) (int64, error) {
	neg := strings.HasPrefix(v, "-")
	v = strings.TrimPrefix(v, "-")
	parts := strings.Split(v, ":")
	order := []string{"day", "hour", "minute", "second"}
	start, end := -1, -1
	for i, u := range order {
		if u == from {
			start = i
		}
		if u == to {
			end = i
		}
	}
	if start < 0 || end < start || len(parts) != end-start+1 {
		return 0, fmt.Errorf("invalid input syntax for type interval: %q %s to %s", v, from, to)
	}
	var total int64
	for k, p := range parts {
		f, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil {
			return 0, fmt.Errorf("invalid input syntax for type interval: %q", v)
		}
		us, err := scale(f, unitMicros[order[start+k]], v)
		if err != nil {
			return 0, err
		}
		total += us
	}
	if neg {
		total = -total
	}
	return total, nil
}
