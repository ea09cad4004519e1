package txnfile

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/clinksql/clinksql/connectors"
	"github.com/clinksql/clinksql/exec/expr"
)

// Trigger says when a partition is complete enough to commit (write its success file).
type Trigger uint8

const (
	// ProcessTime: at the first checkpoint completion at least Delay after the one that committed the partition's
	// files, by the wall clock.
	ProcessTime Trigger = iota
	// PartitionTime: once the watermark of the sink's node reached the partition's time (TimePattern) plus Delay.
	PartitionTime
)

func (t Trigger) String() string {
	if t == PartitionTime {
		return "partition-time"
	}
	return "process-time"
}

// DefaultPartitionName is the directory value of a NULL or empty partition value, as Hive and Spark write (and
// read back as NULL).
const DefaultPartitionName = "__HIVE_DEFAULT_PARTITION__"

// DefaultMaxOpenWriters bounds the partitions a subtask writes at once: past it, the least recently written one's
// file is finished into staging (several files per partition and checkpoint are fine).
const DefaultMaxOpenWriters = 128

// PartitionConfig is how a partitioned file or Parquet sink lays out and commits its partitions.
type PartitionConfig struct {
	// Keys are the PARTITIONED BY columns, in order: the directory levels key=value/...
	Keys []string
	// DefaultName is the directory value of NULL and '' ('partition.default-name').
	DefaultName string
	// MaxOpenWriters bounds the open partition files of a subtask ('sink.partition.max-open-writers').
	MaxOpenWriters int
	// SuccessFile writes an empty file named SuccessFileName into a partition once it is committed
	// ('sink.partition-commit.policy.kind' = 'success-file'); without it partitions are only written.
	SuccessFile     bool
	SuccessFileName string
	Trigger         Trigger
	Delay           time.Duration
	// TimePattern is 'partition.time-extractor.timestamp-pattern': $key stands for the key's value ('$dt $hm:00');
	// "" takes the first key's value. The result is read as a timestamp ('2026-01-01 10:30:00', '2026-01-01').
	TimePattern string
	// Now is the clock of the process-time trigger; nil is time.Now.
	Now func() time.Time
}

// Partition options: Flink's filesystem connector's names, plus the writer bound.
const (
	optTrigger        = "sink.partition-commit.trigger"
	optDelay          = "sink.partition-commit.delay"
	optPolicy         = "sink.partition-commit.policy.kind"
	optSuccessName    = "sink.partition-commit.success-file.name"
	optExtractorKind  = "partition.time-extractor.kind"
	optTimePattern    = "partition.time-extractor.timestamp-pattern"
	optDefaultName    = "partition.default-name"
	optMaxOpenWriters = "sink.partition.max-open-writers"
)

// PartitionOptionNames are the WITH options of a partitioned sink, for the connector's OptionNames.
var PartitionOptionNames = []string{optTrigger, optDelay, optPolicy, optSuccessName, optExtractorKind, optTimePattern,
	optDefaultName, optMaxOpenWriters}

// PartitionUnsupported are Flink filesystem options the sinks refuse as not supported (rather than as misspelt).
var PartitionUnsupported = []string{"sink.partition-commit.policy.class", "partition.time-extractor.class",
	"partition.time-extractor.timestamp-formatter", "sink.partition-commit.watermark-time-zone"}

// PartitionConfigFromOptions reads the partition options of a sink whose PARTITIONED BY columns are keys (none:
// an unpartitioned sink, which takes none of these options) and checks them against the sink's schema. A bad
// value is a *connectors.ConfigError at its option (22023), a key of a type without a directory form one at the
// column (42804).
func PartitionConfigFromOptions(schema *arrow.Schema, keys []string, opts map[string]string) (PartitionConfig, error) {
	cfg := PartitionConfig{Keys: keys, DefaultName: DefaultPartitionName, MaxOpenWriters: DefaultMaxOpenWriters,
		SuccessFileName: "_SUCCESS"}
	for key, val := range connectors.SortedOptions(opts) {
		key = strings.ToLower(key)
		if !slices.Contains(PartitionOptionNames, key) {
			continue
		}
		if len(keys) == 0 {
			return cfg, connectors.OptionError(key, "option '%s' applies to a partitioned sink (PARTITIONED BY)", key)
		}
		switch key {
		case optTrigger:
			switch strings.ToLower(val) {
			case "process-time":
				cfg.Trigger = ProcessTime
			case "partition-time":
				cfg.Trigger = PartitionTime
			default:
				return cfg, connectors.OptionError(key, "option '%s' = '%s': want 'process-time' or 'partition-time'", key, val)
			}
		case optDelay:
			d, err := connectors.DurationOption(key, val, true)
			if err != nil {
				return cfg, err
			}
			cfg.Delay = d
		case optPolicy:
			for _, kind := range strings.Split(val, ",") {
				switch strings.ToLower(strings.TrimSpace(kind)) {
				case "success-file":
					cfg.SuccessFile = true
				case "metastore":
					return cfg, &connectors.ConfigError{Code: "0A000", Option: key,
						Msg: fmt.Sprintf("option '%s': the 'metastore' policy is not supported: there is no metastore to add partitions to; 'success-file' marks a committed partition with a _SUCCESS file", key)}
				case "custom":
					return cfg, &connectors.ConfigError{Code: "0A000", Option: key,
						Msg: fmt.Sprintf("option '%s': custom commit policies are not supported ('success-file' is)", key)}
				default:
					return cfg, connectors.OptionError(key, "option '%s' = '%s': want 'success-file'", key, val)
				}
			}
		case optSuccessName:
			if val == "" || val == "." || val == ".." || strings.ContainsAny(val, `/\`) {
				return cfg, connectors.OptionError(key, "option '%s' = '%s': want a file name", key, val)
			}
			cfg.SuccessFileName = val
		case optExtractorKind:
			if !strings.EqualFold(val, "default") {
				return cfg, &connectors.ConfigError{Code: "0A000", Option: key,
					Msg: fmt.Sprintf("option '%s' = '%s': only the 'default' extractor (a timestamp pattern) is supported", key, val)}
			}
		case optTimePattern:
			if err := checkTimePattern(val, keys); err != nil {
				return cfg, connectors.OptionError(key, "option '%s' = '%s': %v", key, val, err)
			}
			cfg.TimePattern = val
		case optDefaultName:
			if val == "" {
				return cfg, connectors.OptionError(key, "option '%s' must not be empty", key)
			}
			cfg.DefaultName = val
		case optMaxOpenWriters:
			n, err := strconv.Atoi(val)
			if err != nil || n < 1 {
				return cfg, connectors.OptionError(key, "option '%s' = '%s': want a positive number of files", key, val)
			}
			cfg.MaxOpenWriters = n
		}
	}
	if len(keys) == 0 {
		return cfg, nil
	}
	for _, k := range keys {
		i := slices.IndexFunc(schema.Fields(), func(f arrow.Field) bool { return f.Name == k })
		if i < 0 {
			return cfg, connectors.ColumnError(k, "partition column %s is not a column of the sink", k)
		}
		if err := connectors.PartitionKeyType(schema.Field(i).Type); err != nil {
			return cfg, connectors.ColumnError(k, "partition column %s: %v", k, err)
		}
	}
	if len(keys) == schema.NumFields() {
		return cfg, connectors.OptionError("", "every column is a partition column: the files would hold no column")
	}
	return cfg, nil
}

// checkTimePattern refuses a timestamp pattern with a $ that names no partition key.
func checkTimePattern(pattern string, keys []string) error {
	for i := 0; i < len(pattern); i++ {
		if pattern[i] != '$' {
			continue
		}
		if k := longestKeyAt(pattern[i+1:], keys); k == "" {
			return fmt.Errorf("$ at %d names no partition column (%s)", i+1, strings.Join(keys, ", "))
		}
	}
	return nil
}

// longestKeyAt returns the longest key that s starts with, "" for none.
func longestKeyAt(s string, keys []string) string {
	best := ""
	for _, k := range keys {
		if len(k) > len(best) && strings.HasPrefix(s, k) {
			best = k
		}
	}
	return best
}

// partitionTime extracts a partition's time (microseconds) from its key values (nil: NULL), by the pattern: $key
// is replaced by the key's value, and the result read as a timestamp. ok is false when a value is NULL or the
// text is no timestamp.
func partitionTime(pattern string, keys []string, values []*string) (int64, bool) {
	if pattern == "" {
		pattern = "$" + keys[0]
	}
	var b strings.Builder
	for i := 0; i < len(pattern); i++ {
		if pattern[i] != '$' {
			b.WriteByte(pattern[i])
			continue
		}
		k := longestKeyAt(pattern[i+1:], keys)
		if k == "" {
			b.WriteByte('$')
			continue
		}
		v := values[slices.Index(keys, k)]
		if v == nil {
			return 0, false
		}
		b.WriteString(*v)
		i += len(k)
	}
	us, err := expr.ParseTimestamp(b.String())
	return us, err == nil
}

// hexUpper are the digits of a %XX escape, upper case as Hive writes them.
const hexUpper = "0123456789ABCDEF"

// needsEscape reports whether Hive escapes byte c in a partition directory name (FileUtils.escapePathName, as
// Flink's PartitionPathUtils and Spark's ExternalCatalogUtils): control characters, DEL, and "#%'*/:=?\{[]^.
// Bytes from 0x80 (UTF-8 beyond ASCII) pass as they are.
func needsEscape(c byte) bool {
	if c < 0x20 || c == 0x7F {
		return true
	}
	switch c {
	case '"', '#', '%', '\'', '*', '/', ':', '=', '?', '\\', '{', '[', ']', '^':
		return true
	}
	return false
}

// AppendEscaped appends s as Hive escapes a partition name or value: each byte needsEscape says as %XX.
func AppendEscaped(dst []byte, s []byte) []byte {
	for _, c := range s {
		if needsEscape(c) {
			dst = append(dst, '%', hexUpper[c>>4], hexUpper[c&15])
		} else {
			dst = append(dst, c)
		}
	}
	return dst
}

// partitionColumn renders one partition column's values of one batch as directory values.
type partitionColumn struct {
	arr  arrow.Array
	text func(dst []byte, i int) []byte // the unescaped text of a non-NULL value
}

func newPartitionColumn(arr arrow.Array) (partitionColumn, error) {
	c := partitionColumn{arr: arr}
	switch a := arr.(type) {
	case *array.String:
		c.text = func(dst []byte, i int) []byte { return append(dst, a.Value(i)...) }
	case *array.LargeString:
		c.text = func(dst []byte, i int) []byte { return append(dst, a.Value(i)...) }
	case *array.Int8:
		c.text = func(dst []byte, i int) []byte { return strconv.AppendInt(dst, int64(a.Value(i)), 10) }
	case *array.Int16:
		c.text = func(dst []byte, i int) []byte { return strconv.AppendInt(dst, int64(a.Value(i)), 10) }
	case *array.Int32:
		c.text = func(dst []byte, i int) []byte { return strconv.AppendInt(dst, int64(a.Value(i)), 10) }
	case *array.Int64:
		c.text = func(dst []byte, i int) []byte { return strconv.AppendInt(dst, a.Value(i), 10) }
	case *array.Uint8:
		c.text = func(dst []byte, i int) []byte { return strconv.AppendUint(dst, uint64(a.Value(i)), 10) }
	case *array.Uint16:
		c.text = func(dst []byte, i int) []byte { return strconv.AppendUint(dst, uint64(a.Value(i)), 10) }
	case *array.Uint32:
		c.text = func(dst []byte, i int) []byte { return strconv.AppendUint(dst, uint64(a.Value(i)), 10) }
	case *array.Uint64:
		c.text = func(dst []byte, i int) []byte { return strconv.AppendUint(dst, a.Value(i), 10) }
	case *array.Date32:
		c.text = func(dst []byte, i int) []byte { return expr.AppendDate(dst, int64(a.Value(i))) }
	case *array.Boolean:
		// Hive's and Flink's form (Java's Boolean.toString), not Postgres' t/f.
		c.text = func(dst []byte, i int) []byte { return strconv.AppendBool(dst, a.Value(i)) }
	case *array.Decimal128:
		scale := a.DataType().(*arrow.Decimal128Type).Scale
		c.text = func(dst []byte, i int) []byte { return expr.AppendDecimal128(dst, a.Value(i), scale) }
	default:
		return c, connectors.PartitionKeyType(arr.DataType())
	}
	return c, nil
}

// value returns row i's unescaped text, nil for NULL or ” (the default partition).
func (c *partitionColumn) value(scratch []byte, i int) []byte {
	if c.arr.IsNull(i) {
		return nil
	}
	v := c.text(scratch[:0], i)
	if len(v) == 0 {
		return nil
	}
	return v
}

// PartitionDir is the relative directory of a row whose key values are values (nil: NULL or ”):
// key1=value1/key2=value2, names and values escaped as Hive does, NULL and ” as defaultName.
func PartitionDir(keys []string, values []*string, defaultName string) string {
	var b []byte
	for i, k := range keys {
		if i > 0 {
			b = append(b, '/')
		}
		b = AppendEscaped(b, []byte(k))
		b = append(b, '=')
		if values[i] == nil || *values[i] == "" {
			b = AppendEscaped(b, []byte(defaultName))
		} else {
			b = AppendEscaped(b, []byte(*values[i]))
		}
	}
	return string(b)
}

// Describe is the EXPLAIN line of a partitioned sink's layout and commit.
func (c PartitionConfig) Describe() []string {
	dirs := make([]string, len(c.Keys))
	for i, k := range c.Keys {
		dirs[i] = k + "=<value>/"
	}
	lines := []string{"partitioned by: " + strings.Join(c.Keys, ", ") + " (directories " + strings.Join(dirs, "") + ")"}
	if !c.SuccessFile {
		return append(lines, "partition commit: none (no policy)")
	}
	when := c.Trigger.String()
	if c.Trigger == PartitionTime {
		pattern := c.TimePattern
		if pattern == "" {
			pattern = "$" + c.Keys[0]
		}
		when += " '" + pattern + "'"
	}
	if c.Delay > 0 {
		when += " + " + c.Delay.String()
	}
	return append(lines, fmt.Sprintf("partition commit: %s file once %s", c.SuccessFileName, when))
}
