package datagen

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/clinksql/clinksql/connectors"
	"github.com/clinksql/clinksql/exec/expr"
)

// ConfigFromOptions reads the WITH options of connector = 'datagen', Flink's names:
//
//	'number-of-rows'        rows over all subtasks (absent or 0: unbounded)
//	'rows-per-second'       throttle per subtask (absent or 0: unthrottled)
//	'seed'                  integer, default 0
//	'fields.<col>.kind'     'sequence' or 'random' (default)
//	'fields.<col>.start'    sequence start; '.end' its inclusive end (absent: no end); '.step' its step
//	'fields.<col>.min'      random minimum; '.max' random maximum (inclusive; exclusive for REAL/DOUBLE)
//	'fields.<col>.length'   random string/bytea length (default 100)
//	'fields.<col>.null-rate' fraction of NULLs in a nullable column
//
// Values are written as SQL literals of the column's type: 12, 1.50, '2026-01-01', '2026-01-01 00:00:00.5';
// a TIMESTAMP step is an interval such as '10 ms', '1 second' or '10ms'. 'connector' is ignored; any other key is
// an error, so a misspelt option does not silently change the data. The event time and watermark bound are not
// options: they come from the stream's WATERMARK clause.
func ConfigFromOptions(schema *arrow.Schema, opts map[string]string) (Config, error) {
	cfg := Config{Schema: schema, Fields: make([]Field, schema.NumFields())}
	byName := map[string]int{}
	for i, f := range schema.Fields() {
		byName[strings.ToLower(f.Name)] = i
		cfg.Fields[i].End = math.MaxInt64
	}
	for key, val := range connectors.SortedOptions(opts) {
		var err error
		switch key {
		case "connector":
		case "number-of-rows":
			cfg.Rows, err = strconv.ParseInt(val, 10, 64)
		case "rows-per-second":
			cfg.RowsPerSecond, err = strconv.ParseFloat(val, 64)
			if err == nil && (cfg.RowsPerSecond < 0 || math.IsInf(cfg.RowsPerSecond, 0) || math.IsNaN(cfg.RowsPerSecond)) {
				err = errors.New("not a rate >= 0")
			}
		case "seed":
			cfg.Seed, err = strconv.ParseInt(val, 10, 64)
		default:
			rest, ok := strings.CutPrefix(key, "fields.")
			dot := strings.LastIndexByte(rest, '.')
			if !ok || dot < 0 {
				return cfg, connectors.OptionError(key, "datagen: unknown option '%s'", key)
			}
			col, ok := byName[strings.ToLower(rest[:dot])]
			if !ok {
				return cfg, connectors.OptionError(key, "datagen: option '%s' names no column", key)
			}
			err = setGenOption(&cfg.Fields[col], schema.Field(col).Type, rest[dot+1:], val)
		}
		if err != nil {
			return cfg, connectors.OptionError(key, "datagen: option '%s' = '%s': %v", key, val, err)
		}
	}
	if cfg.Rows < 0 || cfg.RowsPerSecond < 0 {
		return cfg, fmt.Errorf("datagen: negative 'number-of-rows' or 'rows-per-second'")
	}
	return cfg, nil
}

func setGenOption(f *Field, t arrow.DataType, prop, val string) error {
	var err error
	switch prop {
	case "kind":
		switch strings.ToLower(val) {
		case "sequence":
			f.Kind = Sequence
		case "random":
			f.Kind = Random
		default:
			return fmt.Errorf("kind is 'sequence' or 'random'")
		}
	case "start":
		f.Start, err = parseGenLiteral(t, val)
	case "end":
		f.End, err = parseGenLiteral(t, val)
	case "step":
		if tt, ok := t.(*arrow.TimestampType); ok {
			f.Step, err = parseGenInterval(val, tt.Unit)
		} else {
			f.Step, err = strconv.ParseInt(val, 10, 64)
		}
	case "min", "max":
		switch t.ID() {
		case arrow.FLOAT32, arrow.FLOAT64:
			var v float64
			if v, err = strconv.ParseFloat(val, 64); prop == "min" {
				f.MinF = v
			} else {
				f.MaxF = v
			}
		default:
			var v int64
			if v, err = parseGenLiteral(t, val); prop == "min" {
				f.Min = v
			} else {
				f.Max = v
			}
		}
	case "length":
		f.Length, err = strconv.Atoi(val)
	case "null-rate":
		f.NullRate, err = strconv.ParseFloat(val, 64)
	default:
		return fmt.Errorf("unknown property '%s'", prop)
	}
	return err
}

// parseGenLiteral reads a value of an integer-like column in the units Field uses.
func parseGenLiteral(t arrow.DataType, s string) (int64, error) {
	switch t := t.(type) {
	case *arrow.Decimal128Type:
		n, err := decimal128.FromString(s, t.Precision, t.Scale)
		if err != nil {
			return 0, err
		}
		if !n.FitsInPrecision(18) {
			return 0, fmt.Errorf("more than 18 digits")
		}
		return int64(n.LowBits()), nil
	case *arrow.Date32Type:
		d, err := time.Parse("2006-01-02", s)
		if err != nil {
			return 0, err
		}
		return expr.FloorDiv(d.Unix(), 86400), nil
	case *arrow.TimestampType:
		ts, err := time.Parse("2006-01-02 15:04:05.999999999", strings.Replace(s, "T", " ", 1))
		if err != nil {
			return 0, err
		}
		switch t.Unit {
		case arrow.Second:
			return ts.Unix(), nil
		case arrow.Millisecond:
			return ts.UnixMilli(), nil
		case arrow.Microsecond:
			return ts.UnixMicro(), nil
		}
		return ts.UnixNano(), nil
	}
	return strconv.ParseInt(s, 10, 64)
}

// parseGenInterval reads a step such as '10 ms', '1 second', '10ms' or '1.5s' in the given unit.
func parseGenInterval(s string, unit arrow.TimeUnit) (int64, error) {
	s = strings.TrimSpace(s)
	split := strings.IndexFunc(s, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	if split <= 0 {
		return 0, fmt.Errorf("not an interval")
	}
	num, err := strconv.ParseFloat(s[:split], 64)
	if err != nil {
		return 0, err
	}
	var per time.Duration
	switch strings.ToLower(strings.TrimSpace(s[split:])) {
	case "ns", "nanosecond", "nanoseconds":
		per = time.Nanosecond
	case "us", "microsecond", "microseconds":
		per = time.Microsecond
	case "ms", "millisecond", "milliseconds":
		per = time.Millisecond
	case "s", "sec", "second", "seconds":
		per = time.Second
	case "m", "min", "minute", "minutes":
		per = time.Minute
	case "h", "hour", "hours":
		per = time.Hour
	case "d", "day", "days":
		per = 24 * time.Hour
	default:
		return 0, fmt.Errorf("unknown interval unit in '%s'", s)
	}
	ns := num * float64(per)
	unitNs := float64(time.Second) / float64(timeUnitPerSecond(unit))
	steps := ns / unitNs
	if steps != math.Trunc(steps) || steps <= 0 || steps > math.MaxInt64/2 {
		return 0, fmt.Errorf("'%s' is not a positive whole number of the column's %s", s, unit)
	}
	return int64(steps), nil
}
